// Strided, batched matrix product with an optional bias and an optional accumulate:
//
//     C[z][m, n] = (C[z][m, n] if ACCUMULATE) + Σ_k A[z][m, k] · B[z][k, n] + (bias[n] if BIAS)
//
// Every operand is addressed as `off + z·zs + row·rs + col·cs` (in f32 elements), so one kernel serves the
// projections x·W + b (z unused), the small relative product P = Q·Tᵀ (B read transposed: rs = 1, cs = d_head;
// a shared table has zs = 0), the weighted values α·V and Shaw's bucketed value term B·w^V (accumulated
// into the concatenated heads), and the output projection.
//
// Tiling: a 16×16 workgroup computes a 16×16 block of C; each step stages a 16×16 tile of A and of B in
// workgroup memory, so each input element is read from the storage buffer once per block, not 16 times.
// Grid: x = ceil(N / 16), y = ceil(M / 16), z = batch (heads of the chunk).

struct Params {
    m: u32, n: u32, k: u32, flags: u32,            // flags: 1 = add bias, 2 = accumulate into C
    a_off: u32, a_rs: u32, a_cs: u32, a_zs: u32,
    b_off: u32, b_rs: u32, b_cs: u32, b_zs: u32,
    c_off: u32, c_rs: u32, c_cs: u32, c_zs: u32,
    bias_off: u32, _pad0: u32, _pad1: u32, _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c: array<f32>;

const TILE: u32 = 16u;

var<workgroup> tile_a: array<array<f32, 16>, 16>;   // [row][k]
var<workgroup> tile_b: array<array<f32, 16>, 16>;   // [k][col]

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let row = wid.y * TILE + lid.y;
    let col = wid.x * TILE + lid.x;
    let a0 = p.a_off + wid.z * p.a_zs;
    let b0 = p.b_off + wid.z * p.b_zs;
    let c0 = p.c_off + wid.z * p.c_zs;

    var acc = 0.0;
    let steps = (p.k + TILE - 1u) / TILE;       // uniform: every invocation reaches the barriers
    for (var t = 0u; t < steps; t = t + 1u) {
        // Thread (y, x) loads A[row, t·16 + x] and B[t·16 + y, col]; zeros outside the matrices.
        let ka = t * TILE + lid.x;
        var va = 0.0;
        if (row < p.m && ka < p.k) {
            va = a[a0 + row * p.a_rs + ka * p.a_cs];
        }
        tile_a[lid.y][lid.x] = va;
        let kb = t * TILE + lid.y;
        var vb = 0.0;
        if (kb < p.k && col < p.n) {
            vb = b[b0 + kb * p.b_rs + col * p.b_cs];
        }
        tile_b[lid.y][lid.x] = vb;
        workgroupBarrier();
        for (var kk = 0u; kk < TILE; kk = kk + 1u) {
            acc = acc + tile_a[lid.y][kk] * tile_b[kk][lid.x];
        }
        workgroupBarrier();
    }

    if (row < p.m && col < p.n) {
        var v = acc;
        if ((p.flags & 1u) != 0u) {
            v = v + bias[p.bias_off + col];
        }
        let ci = c0 + row * p.c_rs + col * p.c_cs;
        if ((p.flags & 2u) != 0u) {
            v = c[ci] + v;
        }
        c[ci] = v;
    }
}
