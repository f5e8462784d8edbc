//! The matrix product behind every projection and attention product.
//!
//! Natively this is ndarray's `.dot()` (matrixmultiply, with AVX/FMA or NEON kernels). matrixmultiply has
//! no wasm32 SIMD kernel, so in the browser build (`target_feature = "simd128"`, set in
//! `.cargo/config.toml`) a register-tiled kernel written with `core::arch::wasm32` f32x4 intrinsics is used
//! instead.

use ndarray::{Array2, ArrayView2, ArrayViewMut2};

/// `C = A · B`, `C[i, j] = Σ_p A[i, p] · B[p, j]`: A (m, k), B (k, n) → C (m, n), in standard layout.
///
/// A and B may be any views (strided column slices, transposes such as `k.t()`); the wasm kernel packs them.
/// Panics when `a.ncols() != b.nrows()`, as `.dot()` does.
pub fn matmul(a: ArrayView2<f32>, b: ArrayView2<f32>) -> Array2<f32> {
    let mut c = Array2::zeros((a.nrows(), b.ncols()));
    matmul_add(a, b, c.view_mut());
    c
}

/// `C += A · B` into an existing C (m, n) whose rows are contiguous (column stride 1; any row stride, such
/// as a corner of a larger buffer): what lets a caller reuse one buffer for many products. Panics when the
/// shapes do not match or C's columns are strided.
pub fn matmul_add(a: ArrayView2<f32>, b: ArrayView2<f32>, c: ArrayViewMut2<f32>) {
    assert!(a.ncols() == b.nrows() && c.dim() == (a.nrows(), b.ncols()), "matmul: A is {:?}, B is {:?}, C is {:?}", a.dim(), b.dim(), c.dim());
    assert!(c.is_empty() || c.ncols() == 1 || c.strides()[1] == 1, "matmul: C's columns must be contiguous");
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        simd128::matmul_add(a, b, c)
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        let mut c = c;
        ndarray::linalg::general_mat_mul(1.0, &a, &b, 1.0, &mut c)
    }
}

/// [`matmul_add`] with A's and C's rows split across rayon's threads natively (one product per thread's band
/// of rows, at least 64 rows each): what the layer's projections use, since matrixmultiply computes one
/// product on one thread. The same as [`matmul_add`] in wasm (one thread). Panics as [`matmul_add`] does,
/// and when C is not in standard layout.
pub fn matmul_add_rows_parallel(a: ArrayView2<f32>, b: ArrayView2<f32>, c: ArrayViewMut2<f32>) {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let mut c = c;
        use ndarray::s;
        use rayon::prelude::*;
        let (m, n) = (a.nrows(), b.ncols());
        let band = m.div_ceil(rayon::current_num_threads()).max(64);
        if band >= m || n == 0 {
            return matmul_add(a, b, c);
        }
        assert_eq!(a.nrows(), c.nrows(), "matmul: A is {:?}, C is {:?}", a.dim(), c.dim());
        let bands = c.as_slice_mut().expect("matmul: C in standard layout").par_chunks_mut(band * n);
        bands.enumerate().for_each(|(k, c_k)| {
            let rows = k * band..k * band + c_k.len() / n;
            let c_k = ArrayViewMut2::from_shape((rows.len(), n), c_k).expect("a band of whole rows");
            matmul_add(a.slice(s![rows, ..]), b, c_k);
        });
    }
    #[cfg(target_arch = "wasm32")]
    {
        matmul_add(a, b, c)
    }
}

/// The wasm32 SIMD128 kernel: B packed in panels of `NR` columns, A in blocks of `MR` rows, both for a
/// depth block of `KC`; a 4 × 8 micro-tile of eight f32x4 accumulators (no FMA in baseline SIMD128:
/// `f32x4_mul` then `f32x4_add`). Edge tiles are zero-padded in the packs and written back partially.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128 {
    use core::arch::wasm32::*;
    use ndarray::{ArrayView2, ArrayViewMut2};

    const MR: usize = 4;
    const NR: usize = 8;
    const KC: usize = 256;

    /// `C += A · B`, C with contiguous rows (see [`super::matmul_add`]).
    pub fn matmul_add(a: ArrayView2<f32>, b: ArrayView2<f32>, mut c: ArrayViewMut2<f32>) {
        let (m, k) = a.dim();
        let n = b.ncols();
        if m == 0 || n == 0 || k == 0 {
            return;
        }
        let ldc = c.strides()[0] as usize;
        let (sa0, sa1) = (a.strides()[0], a.strides()[1]);
        let (sb0, sb1) = (b.strides()[0], b.strides()[1]);
        let (pa_ptr, pb_ptr) = (a.as_ptr(), b.as_ptr());
        let panels = n.div_ceil(NR);
        let blocks = m.div_ceil(MR);
        let kc_max = k.min(KC);
        let mut bp = vec![0.0f32; panels * NR * kc_max];
        let mut ap = vec![0.0f32; MR * kc_max];
        let cs = c.as_mut_ptr();

        let mut k0 = 0;
        while k0 < k {
            let kc = (k - k0).min(KC);
            // Pack B[k0..k0+kc, :] as panels: bp[jp][p][c] = B[k0 + p, jp·NR + c], zero past n.
            for jp in 0..panels {
                let panel = &mut bp[jp * NR * kc..(jp + 1) * NR * kc];
                let cols = (n - jp * NR).min(NR);
                for p in 0..kc {
                    let dst = &mut panel[p * NR..(p + 1) * NR];
                    for (cc, d) in dst.iter_mut().enumerate() {
                        *d = if cc < cols {
                            // SAFETY: (k0 + p, jp·NR + cc) is inside B's shape.
                            unsafe { *pb_ptr.offset((k0 + p) as isize * sb0 + (jp * NR + cc) as isize * sb1) }
                        } else {
                            0.0
                        };
                    }
                }
            }
            for ib in 0..blocks {
                let i0 = ib * MR;
                let rows = (m - i0).min(MR);
                // Pack A[i0..i0+MR, k0..k0+kc]: ap[p][r] = A[i0 + r, k0 + p], zero past m.
                for r in 0..MR {
                    if r < rows {
                        let row = unsafe { pa_ptr.offset((i0 + r) as isize * sa0 + k0 as isize * sa1) };
                        for p in 0..kc {
                            // SAFETY: (i0 + r, k0 + p) is inside A's shape.
                            ap[p * MR + r] = unsafe { *row.offset(p as isize * sa1) };
                        }
                    } else {
                        for p in 0..kc {
                            ap[p * MR + r] = 0.0;
                        }
                    }
                }
                for jp in 0..panels {
                    let j0 = jp * NR;
                    let cols = (n - j0).min(NR);
                    let panel = &bp[jp * NR * kc..(jp + 1) * NR * kc];
                    // SAFETY: the packs hold kc·MR and kc·NR values; C is (m, n) with row stride ldc and the
                    // tile (i0.., j0..) is written within rows × cols.
                    unsafe { kernel(kc, ap.as_ptr(), panel.as_ptr(), cs.add(i0 * ldc + j0), ldc, rows, cols) };
                }
            }
            k0 += kc;
        }
    }

    /// C[0..rows, 0..cols] += Ap (kc × MR) · Bp (kc × NR), C with row stride `ldc`.
    #[inline(always)]
    unsafe fn kernel(kc: usize, ap: *const f32, bp: *const f32, c: *mut f32, ldc: usize, rows: usize, cols: usize) {
        let z = f32x4_splat(0.0);
        let (mut c00, mut c01, mut c10, mut c11) = (z, z, z, z);
        let (mut c20, mut c21, mut c30, mut c31) = (z, z, z, z);
        let (mut a, mut b) = (ap, bp);
        for _ in 0..kc {
            let b0 = v128_load(b as *const v128);
            let b1 = v128_load(b.add(4) as *const v128);
            let a0 = f32x4_splat(*a);
            let a1 = f32x4_splat(*a.add(1));
            let a2 = f32x4_splat(*a.add(2));
            let a3 = f32x4_splat(*a.add(3));
            c00 = f32x4_add(c00, f32x4_mul(a0, b0));
            c01 = f32x4_add(c01, f32x4_mul(a0, b1));
            c10 = f32x4_add(c10, f32x4_mul(a1, b0));
            c11 = f32x4_add(c11, f32x4_mul(a1, b1));
            c20 = f32x4_add(c20, f32x4_mul(a2, b0));
            c21 = f32x4_add(c21, f32x4_mul(a2, b1));
            c30 = f32x4_add(c30, f32x4_mul(a3, b0));
            c31 = f32x4_add(c31, f32x4_mul(a3, b1));
            a = a.add(MR);
            b = b.add(NR);
        }
        let acc = [[c00, c01], [c10, c11], [c20, c21], [c30, c31]];
        if rows == MR && cols == NR {
            for (r, [lo, hi]) in acc.iter().enumerate() {
                let row = c.add(r * ldc);
                v128_store(row as *mut v128, f32x4_add(v128_load(row as *const v128), *lo));
                v128_store(row.add(4) as *mut v128, f32x4_add(v128_load(row.add(4) as *const v128), *hi));
            }
        } else {
            let mut tile = [0.0f32; MR * NR];
            for (r, [lo, hi]) in acc.iter().enumerate() {
                v128_store(tile.as_mut_ptr().add(r * NR) as *mut v128, *lo);
                v128_store(tile.as_mut_ptr().add(r * NR + 4) as *mut v128, *hi);
            }
            for r in 0..rows {
                for cc in 0..cols {
                    *c.add(r * ldc + cc) += tile[r * NR + cc];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::matmul;
    use ndarray::{s, Array2};

    fn ramp(rows: usize, cols: usize, seed: f32) -> Array2<f32> {
        Array2::from_shape_fn((rows, cols), |(i, j)| ((i * 31 + j * 17) as f32 * 0.37 + seed).sin())
    }

    fn naive(a: &ndarray::ArrayView2<f32>, b: &ndarray::ArrayView2<f32>) -> Array2<f32> {
        let (m, k) = a.dim();
        let n = b.ncols();
        Array2::from_shape_fn((m, n), |(i, j)| (0..k).map(|p| a[[i, p]] as f64 * b[[p, j]] as f64).sum::<f64>() as f32)
    }

    fn check(a: ndarray::ArrayView2<f32>, b: ndarray::ArrayView2<f32>, what: &str) {
        let got = matmul(a, b);
        let want = naive(&a, &b);
        assert_eq!(got.dim(), want.dim(), "{what}");
        let k = a.ncols().max(1) as f32;
        for ((i, j), w) in want.indexed_iter() {
            let g = got[[i, j]];
            assert!((g - w).abs() <= 1e-5 * k * (1.0 + w.abs()), "{what}: ({i},{j}) got {g}, want {w}");
        }
    }

    /// Shapes around the 4 × 8 tile and the 256 depth block, contiguous, strided and transposed.
    pub(super) fn all_shapes() {
        let dims = [1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 33];
        for &m in &dims {
            for &k in &dims {
                for &n in &dims {
                    let a = ramp(m, k, 0.1);
                    let b = ramp(k, n, 0.7);
                    check(a.view(), b.view(), &format!("contiguous {m}x{k} · {k}x{n}"));
                }
            }
        }
        for (m, k, n) in [(1, 1, 1), (0, 3, 4), (3, 0, 4), (3, 4, 0), (37, 300, 41), (64, 513, 19), (130, 64, 130)] {
            // Column slice of a wider array (strided rows), like a head's slice of (n, d_model).
            let wide = ramp(m, 3 * k + 1, 0.3);
            let a = wide.slice(s![.., k..2 * k]);
            // Transposed view, like k.t().
            let bt = ramp(n, k, 0.9);
            check(a, bt.t(), &format!("slice {m}x{k} · transposed {k}x{n}"));
            // Transposed A, stepped B.
            let at = ramp(k, m, 0.2);
            let b2 = ramp(2 * k, n, 0.5);
            check(at.t(), b2.slice(s![..;2, ..]), &format!("transposed {m}x{k} · stepped {k}x{n}"));
            // Reversed rows (negative stride).
            let b3 = ramp(k, n, 0.4);
            check(a, b3.slice(s![..;-1, ..]), &format!("slice {m}x{k} · reversed {k}x{n}"));
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn matches_naive_loop() {
        all_shapes();
    }

    #[cfg(target_arch = "wasm32")]
    #[wasm_bindgen_test::wasm_bindgen_test]
    fn matches_naive_loop_wasm() {
        all_shapes();
    }
}
