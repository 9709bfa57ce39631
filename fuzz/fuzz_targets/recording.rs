//! `cargo fuzz run recording`: see fleetsim_fuzz::recording.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fleetsim_fuzz::recording(data));
