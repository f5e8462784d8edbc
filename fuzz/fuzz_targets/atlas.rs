//! libFuzzer target: head atlas files (.atlas.npz bytes). See check_atlas.rs.
#![no_main]

include!("check_atlas.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check_atlas_bytes(data));
