// Included, after check.rs, by the npy_header fuzz target and by tests/fuzz_corpus.rs: .npy headers built
// from fuzz bytes, checked with wasm32's limits.

/// The element types the header fuzzer picks from, with their item sizes: the six allowed and two refused.
const FUZZ_DTYPES: [(&str, u64); 8] = [("<f4", 4), ("<f8", 8), ("<i8", 8), ("<i4", 4), ("|b1", 1), ("|u1", 1), (">f4", 4), ("<c8", 8)];

/// An .npy built from fuzz bytes: `data[0]` picks the dtype, `data[1]` the number of axes (0..=4) and the
/// order, then each axis is 0, one byte, two, four or eight bytes (so 2¹⁶..2⁶⁴ sizes are common), and the
/// rest (at most 4 KiB) is the data: header-only files and huge claimed shapes above all.
pub fn fuzz_npy(data: &[u8]) -> Option<(Vec<u8>, u64)> {
    let (&dtype, rest) = data.split_first()?;
    let (&axes, mut rest) = rest.split_first()?;
    let (descr, item) = FUZZ_DTYPES[dtype as usize % FUZZ_DTYPES.len()];
    let mut shape = Vec::new();
    for _ in 0..axes % 5 {
        let (&class, tail) = rest.split_first()?;
        let width = [0usize, 1, 2, 4, 8][class as usize % 5];
        let bytes = tail.get(..width)?;
        shape.push(bytes.iter().rev().fold(0u64, |v, &b| v << 8 | b as u64));
        rest = &tail[width..];
    }
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let fortran = if axes & 0x80 != 0 { "True" } else { "False" };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape_text}, }}").into_bytes();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend((header.len() as u16).to_le_bytes());
    npy.extend(header);
    npy.extend(&rest[..rest.len().min(4096)]);
    let span = shape.iter().try_fold(item, |n, &d| n.checked_mul(d.max(1))).unwrap_or(u64::MAX);
    Some((npy, span))
}

/// Header-only and huge-shape .npy files, with 32-bit limits emulated: one that loads must have
/// ∏ max(dᵢ, 1) · itemsize below 2³¹ (ndarray's isize bound on wasm32, where a larger shape panicked
/// inside the page's worker), so what loads natively also loads in the browser; then the rest of the path.
pub fn check_npy_header(data: &[u8]) {
    let Some((npy, span)) = fuzz_npy(data) else { return };
    if relattn::files::read_arrays(&npy, "fuzz.npy", relattn::files::MAX_FILE_BYTES).is_ok() {
        assert!(span < 1 << 31, "an array of {span} bytes (∏ max(dᵢ, 1) · itemsize) loaded: wasm32 would panic on it");
    }
    check_scenario_bytes(&npy);
}
