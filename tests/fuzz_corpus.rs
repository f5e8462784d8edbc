//! Replays the fuzzer's kept corpus (fuzz/corpus/scenario/) and every crash it ever found
//! (tests/fuzz_regressions/) through the scenario loader: errors are fine, panics and aborts are not.

include!("../fuzz/fuzz_targets/check.rs");

fn replay(dir: &str) -> usize {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_file() && path.file_name().is_some_and(|n| !n.to_string_lossy().starts_with('.')) {
            check_scenario_bytes(&std::fs::read(&path).unwrap());
            count += 1;
        }
    }
    count
}

#[test]
fn corpus_loads_or_errors() {
    assert!(replay("fuzz/corpus/scenario") >= 10);
}

#[test]
fn past_crashes_stay_fixed() {
    replay("tests/fuzz_regressions");
}

/// An .npy header that claims 10¹⁰ floats over 16 bytes of data must be refused, not allocated.
#[test]
fn huge_claimed_shape_is_an_error() {
    let mut header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }".to_vec();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header);
    bytes.extend([0u8; 16]);
    assert!(relattn::scenario::read_arrays(&bytes, "huge.npy").is_err());
    check_scenario_bytes(&bytes);
}
