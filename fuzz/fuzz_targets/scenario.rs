//! `cargo fuzz run scenario`: see fleetsim_fuzz::scenario.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fleetsim_fuzz::scenario(data));
