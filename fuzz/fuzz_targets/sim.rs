//! `cargo fuzz run sim`: see fleetsim_fuzz::sim.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fleetsim_fuzz::sim(data));
