//! libFuzzer target: model files (safetensors bytes). See check_model.rs.
#![no_main]

include!("check_model.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check_model_bytes(data));
