//! libFuzzer target: chorale data files (JSON, as `--data` and the page's Model mode read them). See
//! check_chorales.rs.
#![no_main]

include!("check_chorales.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check_chorales_bytes(data));
