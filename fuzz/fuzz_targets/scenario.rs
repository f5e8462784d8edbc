//! libFuzzer target: scenario files (.npz/.npy bytes). See check.rs.
#![no_main]

include!("check.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check_scenario_bytes(data));
