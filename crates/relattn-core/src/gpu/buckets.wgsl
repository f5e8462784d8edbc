// Shaw's value buckets: the weight each query gives each row r of the value table w^V,
//
//     B[i, r] = Σ_{j : row(j − i) = r} α_ij
//
// Inside the table a row is read by one key, j = i + min + r; with a clipped table the first row also
// collects every key further left (j ≤ i + min) and the last every key further right (j ≥ i + max);
// with a zero edge keys beyond the table give nothing. Then z = α·V + B·w^V (matmul.wgsl, accumulating).
// Grid: x = ceil(R / 16), y = ceil(rows / 16), z = heads in the chunk. weights (z, rows, n), B (z, rows, R).

struct Params {
    rows: u32, n: u32, i0: u32, r: u32,
    tmin: i32, flags: u32, _pad0: u32, _pad1: u32,   // flags: see below
}
// Mirrored in Rust by kernels.rs's BucketsParams, field by field (its tests compare the two).
// Flags tested here: ZERO_EDGE (kernels.rs's `flag` module, written ahead of this file as constants).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> weights: array<f32>;
@group(0) @binding(2) var<storage, read_write> buckets: array<f32>;

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r = gid.x;
    let i = gid.y;
    let z = gid.z;
    if (r >= p.r || i >= p.rows) {
        return;
    }
    let centre = i32(p.i0 + i) + p.tmin + i32(r);   // the key at distance min + r
    var lo = centre;
    var hi = centre;
    if ((p.flags & ZERO_EDGE) == 0u) {
        if (r == 0u) {
            lo = 0;
        }
        if (r == p.r - 1u) {
            hi = i32(p.n) - 1;
        }
    }
    lo = max(lo, 0);
    hi = min(hi, i32(p.n) - 1);
    let base = (z * p.rows + i) * p.n;
    var s = 0.0;
    for (var j = lo; j <= hi; j = j + 1) {
        s = s + weights[base + u32(j)];
    }
    buckets[(z * p.rows + i) * p.r + r] = s;
}
