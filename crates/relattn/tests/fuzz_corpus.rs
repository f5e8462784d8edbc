//! Replays the fuzzers' kept corpora (fuzz/corpus/scenario/, fuzz/corpus/atlas/, fuzz/corpus/npy_header/,
//! fuzz/corpus/model/, fuzz/corpus/chorales/) and every crash they ever found (tests/fuzz_regressions/, named after their target)
//! through the scenario, model or chorale data loader: errors are fine, panics and aborts are not.

#[path = "../../relattn-core/tests/common/mod.rs"]
mod common;

include!("../../../fuzz/fuzz_targets/check.rs");
include!("../../../fuzz/fuzz_targets/header.rs");
include!("../../../fuzz/fuzz_targets/check_model.rs");
include!("../../../fuzz/fuzz_targets/check_chorales.rs");
include!("../../../fuzz/fuzz_targets/check_atlas.rs");

/// Replays every file of `dir` (relative to the repository) through the check of the target that made it.
fn replay(dir: &str) -> usize {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(dir);
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_file() && path.file_name().is_some_and(|n| !n.to_string_lossy().starts_with('.')) {
            let bytes = std::fs::read(&path).unwrap();
            let made_by = |target: &str| dir.ends_with(target) || path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&format!("{target}-")));
            if made_by("npy_header") {
                check_npy_header(&bytes)
            } else if made_by("model") {
                check_model_bytes(&bytes)
            } else if made_by("chorales") {
                check_chorales_bytes(&bytes)
            } else if made_by("atlas") {
                check_atlas_bytes(&bytes)
            } else {
                check_scenario_bytes(&bytes)
            }
            count += 1;
        }
    }
    count
}

#[test]
fn corpus_loads_or_errors() {
    assert!(replay("fuzz/corpus/scenario") >= 10);
    assert!(replay("fuzz/corpus/npy_header") >= 10);
    assert!(replay("fuzz/corpus/model") >= 9);
    assert!(replay("fuzz/corpus/chorales") >= 10);
    assert!(replay("fuzz/corpus/atlas") >= 2);
}

#[test]
fn past_crashes_stay_fixed() {
    replay("tests/fuzz_regressions");
}

/// An .npy header that claims 10¹⁰ floats over 16 bytes of data must be refused, not allocated.
#[test]
fn huge_claimed_shape_is_an_error() {
    let bytes = common::npy("<f4", "(100000, 100000)", &[0u8; 16]);
    assert!(relattn::files::read_arrays(&bytes, "huge.npy", relattn::files::MAX_FILE_BYTES).is_err());
    check_scenario_bytes(&bytes);
}

/// Header-only files with huge shapes, every dtype: refused unless they fit a 32-bit target. Shape
/// (0, 70000, 70000) loaded natively (0 elements) while ndarray on wasm32 panicked on it in the worker.
#[test]
fn header_only_and_huge_shapes_fit_32_bit_limits() {
    let shapes: [&[u64]; 9] =
        [&[0, 70000, 70000], &[70000, 70000], &[1 << 31], &[0, 1 << 32], &[1 << 16, 1 << 16], &[0], &[], &[4, 0, 1 << 40], &[u64::MAX, 0]];
    for dtype in 0..FUZZ_DTYPES.len() as u8 {
        for shape in shapes {
            let mut data = vec![dtype, shape.len() as u8];
            for d in shape {
                data.push(4);
                data.extend(d.to_le_bytes());
            }
            check_npy_header(&data);
        }
    }
    let (npy, _) = fuzz_npy(&[0, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 112, 17, 1, 0, 0, 0, 0, 0, 4, 112, 17, 1, 0, 0, 0, 0, 0]).unwrap();
    assert!(relattn::files::read_arrays(&npy, "empty.npy", relattn::files::MAX_FILE_BYTES).is_err(), "shape (0, 70000, 70000) loaded");
}

/// A header of nested brackets (the Python-literal parser is exponential in their depth) is refused at once.
#[test]
fn deeply_nested_header_is_refused_quickly() {
    let mut header = b"{'descr': ".to_vec();
    header.extend([b'{'; 40]);
    header.extend(b"'<f4', 'shape': (4,), }");
    header.push(b'\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header);
    let start = std::time::Instant::now();
    let e = relattn::files::read_arrays(&bytes, "deep.npy", relattn::files::MAX_FILE_BYTES).unwrap_err();
    assert!(e.to_string().contains("nests brackets 42 deep"), "{e}");
    assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
}

/// The atlas relattn.atlas made of a tiny random Llama reads, and the atlas check runs it whole (its grid, HTML,
/// charts and captured rows), as the fuzzer's seed.
#[test]
fn the_fixture_atlas_passes_the_atlas_check() {
    let bytes = std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/atlas-tiny-llama.atlas.npz")).unwrap();
    let atlas = relattn::files::atlas::Atlas::read(&bytes, "atlas-tiny-llama.atlas.npz", 64 << 20).unwrap();
    assert!(atlas.is_captured(1));
    check_atlas_bytes(&bytes);
}
