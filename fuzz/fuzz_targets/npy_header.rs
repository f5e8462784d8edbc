//! libFuzzer target: .npy headers of any dtype and shape (zero-size and huge axes) with little or no data,
//! checked with wasm32's limits. See header.rs `check_npy_header`.
#![no_main]

include!("check.rs");
include!("header.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check_npy_header(data));
