//! The two products of one (query block, key block) step, register-tiled for one instruction set ([`F32s`]): `S = Q_blk K_blkᵀ` and `O += P V_blk`, each an
//! `MR × NR` tile of accumulators (`NR = NV · LANES` columns) held in vector registers over the whole depth, the operands packed once per head so that every
//! load is contiguous:
//!
//! ```text
//! qk:  S[r, c]  = Σ_{p < d_head} Q[i0 + r, p] · K[j0 + c, p]      depth d_head, S written
//! pv:  O[r, c] += Σ_{t < cols}   P[r, t] · V[j0 + t, c]            depth cols,   O read and written, c < d_v
//! ```
//!
//! Per step of the depth: NV loads of the packed operand, MR broadcasts of the other, MR·NV multiply-adds (AVX2: 6 × 16, 12 of 16 registers accumulate;
//! AVX-512: 6 × 64, 24 of 32, a head of 64 in one panel: 1–2% faster than 12 × 32 causal, equal bidirectional; SIMD128 and portable: 4 × 8).

use crate::core::simd::F32s;
use ndarray::ArrayView2;
use std::borrow::Cow;

/// A head's Q, K and V packed for kernels of `MR` rows and `NR` columns.
pub struct Packed {
    /// Q in blocks of MR queries: `q[(block·d_head + p)·MR + r] = Q[block·MR + r, p]`, zero past Lq.
    q: Vec<f32>,
    /// K in panels of NR keys: `k[(panel·d_head + p)·NR + c] = K[panel·NR + c, p]`, zero past Lk.
    k: Vec<f32>,
    /// V in panels of NR columns: `v[(panel·Lk + j)·NR + c] = V[j, panel·NR + c]`, zero past d_v.
    v: Vec<f32>,
    dh: usize,
    dv: usize,
    lk: usize,
    nr: usize,
}

impl Packed {
    /// Packs Q (Lq, d_head), K (Lk, d_head) and V (Lk, d_v), any strides.
    pub fn new(q: ArrayView2<f32>, k: ArrayView2<f32>, v: ArrayView2<f32>, mr: usize, nr: usize) -> Self {
        let (lq, dh) = q.dim();
        let dv = v.ncols();
        let lk = k.nrows();
        let mut qp = vec![0.0; lq.next_multiple_of(mr) * dh];
        for (i, r) in rows(&q).enumerate() {
            let block = &mut qp[(i / mr) * dh * mr + i % mr..];
            r.iter().enumerate().for_each(|(p, &x)| block[p * mr] = x);
        }
        let mut kp = vec![0.0; lk.next_multiple_of(nr) * dh];
        for (j, r) in rows(&k).enumerate() {
            let panel = &mut kp[(j / nr) * dh * nr + j % nr..];
            r.iter().enumerate().for_each(|(p, &x)| panel[p * nr] = x);
        }
        let mut vp = vec![0.0; dv.next_multiple_of(nr) * lk];
        for (j, r) in rows(&v).enumerate() {
            for (panel, chunk) in r.chunks(nr).enumerate() {
                vp[(panel * lk + j) * nr..][..chunk.len()].copy_from_slice(chunk);
            }
        }
        Packed { q: qp, k: kp, v: vp, dh, dv, lk, nr }
    }

    /// d_v rounded up to NR: the width of the output accumulator [`pv`] writes.
    pub fn dv_padded(&self) -> usize {
        self.dv.next_multiple_of(self.nr)
    }
}

/// The rows of `a` as slices: borrowed where contiguous (a head's views are column slices of the layer's
/// projections, each row contiguous), copied otherwise.
fn rows<'a>(a: &'a ArrayView2<'a, f32>) -> impl Iterator<Item = Cow<'a, [f32]>> {
    a.outer_iter().map(|row| match row.to_slice() {
        Some(r) => Cow::Borrowed(r),
        None => Cow::Owned(row.to_vec()),
    })
}

/// `S[r, c] = Σ_p Q[i0 + r, p] · K[j0 + c, p]` for r < `rows` (a multiple of MR) and, in the row block
/// from r0, c < `cols(r0)` rounded up to NR (`cols` non-decreasing: a causal block's staircase, its blocks
/// of keys past every query of a row block left out); S with row stride `lds` (≥ that width). `j0` is a
/// multiple of NR.
///
/// # Safety
/// The CPU runs `V`'s instructions; `i0 + rows` ≤ the packed Q's rows, `j0 + cols(r0)` ≤ Lk; S holds `rows`
/// rows of `lds` floats.
#[inline(always)]
pub unsafe fn qk<V: F32s, const MR: usize, const NV: usize>(
    pk: &Packed,
    i0: usize,
    rows: usize,
    j0: usize,
    cols: impl Fn(usize) -> usize,
    s: *mut f32,
    lds: usize,
) {
    let (nr, dh) = (pk.nr, pk.dh);
    let widest = cols(rows - MR);
    debug_assert!(nr == NV * V::LANES && rows.is_multiple_of(MR) && j0.is_multiple_of(nr) && widest.next_multiple_of(nr) <= lds);
    debug_assert!((i0 + rows) * dh <= pk.q.len() && (j0 + widest).next_multiple_of(nr) * dh <= pk.k.len());
    // Panels outside, rows inside: one panel of K (d_head × NR) stays in L1 for every row block.
    for panel in 0..widest.div_ceil(nr) {
        let b = pk.k.as_ptr().add((j0 / nr + panel) * dh * nr);
        for r0 in (0..rows).step_by(MR).filter(|&r0| cols(r0) > panel * nr) {
            let a = pk.q.as_ptr().add((i0 + r0) * dh);
            let mut acc = [[V::zero(); NV]; MR];
            for p in 0..dh {
                step(&mut acc, |r| a.add(p * MR + r), b.add(p * nr));
            }
            store(&acc, s.add(r0 * lds + panel * nr), lds);
        }
    }
}

/// `O[r, c] += Σ_{t < cols(r0)} P[r, t] · V[j0 + t, c]` for r < `rows` (a multiple of MR; r0 its row
/// block's first) and c < d_v rounded up to NR ([`Packed::dv_padded`]); P with row stride `ldp`, O with
/// rows of `dv_padded`.
///
/// # Safety
/// The CPU runs `V`'s instructions; `j0 + cols(r0)` ≤ Lk; P holds `rows` rows of ≥ `cols(r0)` floats, O
/// `rows` rows of `dv_padded` floats.
#[inline(always)]
pub unsafe fn pv<V: F32s, const MR: usize, const NV: usize>(
    pk: &Packed,
    p: *const f32,
    ldp: usize,
    rows: usize,
    j0: usize,
    cols: impl Fn(usize) -> usize,
    o: *mut f32,
) {
    let nr = pk.nr;
    debug_assert!(nr == NV * V::LANES && rows.is_multiple_of(MR) && j0 + cols(rows - MR) <= pk.lk);
    let ldo = pk.dv_padded();
    for panel in 0..pk.dv.div_ceil(nr) {
        let b = pk.v.as_ptr().add((panel * pk.lk + j0) * nr);
        for r0 in (0..rows).step_by(MR) {
            let out = o.add(r0 * ldo + panel * nr);
            let mut acc: [[V; NV]; MR] = std::array::from_fn(|r| std::array::from_fn(|x| V::load(out.add(r * ldo + x * V::LANES))));
            let a = p.add(r0 * ldp);
            for t in 0..cols(r0) {
                step(&mut acc, |r| a.add(r * ldp + t), b.add(t * nr));
            }
            store(&acc, out, ldo);
        }
    }
}

/// One step of the depth: `acc[r][x] += A[r] · B[x]` for the MR broadcast values at `a(r)` and the NV
/// vectors at `b`.
#[inline(always)]
unsafe fn step<V: F32s, const MR: usize, const NV: usize>(acc: &mut [[V; NV]; MR], a: impl Fn(usize) -> *const f32, b: *const f32) {
    let bv: [V; NV] = std::array::from_fn(|x| V::load(b.add(x * V::LANES)));
    for (r, acc_r) in acc.iter_mut().enumerate() {
        let ar = V::splat(a(r));
        for (acc_rx, &bx) in acc_r.iter_mut().zip(&bv) {
            *acc_rx = V::mul_add(ar, bx, *acc_rx);
        }
    }
}

/// Writes the MR × NV·LANES accumulators to `out`, rows `ld` floats apart.
#[inline(always)]
unsafe fn store<V: F32s, const MR: usize, const NV: usize>(acc: &[[V; NV]; MR], out: *mut f32, ld: usize) {
    for (r, acc_r) in acc.iter().enumerate() {
        for (x, acc_rx) in acc_r.iter().enumerate() {
            acc_rx.store(out.add(r * ld + x * V::LANES));
        }
    }
}
