//! `cargo fuzz run sweep`: see fleetsim_fuzz::sweep.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fleetsim_fuzz::sweep(data));
