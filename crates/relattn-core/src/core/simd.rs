//! Vectors of f32 for the hand-written kernels ([`crate::attention::fused`]): one type per instruction set,
//! the kernels written once, generic over [`F32s`], and compiled once per instruction set inside a
//! `#[target_feature]` function, the one the CPU has chosen at run time by [`Isa::best`].
//!
//! | [`Isa`]      | type        | lanes | a · b + c                  |
//! |--------------|-------------|------:|----------------------------|
//! | Avx512       | `__m512`    | 16    | fused (`vfmadd`)           |
//! | Avx2         | `__m256`    | 8     | fused (`vfmadd`, FMA3)     |
//! | Simd128      | `v128`      | 4     | multiply, then add (wasm)  |
//! | Portable     | `[f32; 4]`  | 4     | multiply, then add         |

/// A vector of `LANES` f32. Every method is `unsafe`: the caller runs on a CPU with the type's instruction
/// set and passes pointers to `LANES` readable (or writable) floats, unaligned allowed.
pub(crate) trait F32s: Copy {
    const LANES: usize;
    /// Whether the instruction set fuses multiply-adds (and scalar code compiled beside it may use
    /// `f32::mul_add`, [`crate::core::softmax::madd`]).
    const FMA: bool;
    /// Every lane 0.
    unsafe fn zero() -> Self;
    /// Every lane `*p`.
    unsafe fn splat(p: *const f32) -> Self;
    /// Lanes `p[0..LANES]`.
    unsafe fn load(p: *const f32) -> Self;
    /// Writes the lanes to `p[0..LANES]`.
    unsafe fn store(self, p: *mut f32);
    /// `a · b + c` lane by lane (one rounding where the instruction set fuses it).
    unsafe fn mul_add(a: Self, b: Self, c: Self) -> Self;
}

/// The instruction sets a kernel is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// x86-64 with AVX-512F (and AVX2, FMA).
    Avx512,
    /// x86-64 with AVX2 and FMA.
    Avx2,
    /// wasm32 built with `simd128` (`.cargo/config.toml`).
    Simd128,
    /// Anything else: plain arrays the compiler vectorizes as it can.
    Portable,
}

impl Isa {
    /// Every instruction set, best first.
    pub const ALL: [Isa; 4] = [Isa::Avx512, Isa::Avx2, Isa::Simd128, Isa::Portable];

    /// The best instruction set this CPU has (detected once by std, then a cached load).
    pub fn best() -> Isa {
        Isa::ALL.into_iter().find(|isa| isa.available()).unwrap_or(Isa::Portable)
    }

    /// Whether this CPU (or this build, for wasm) can run kernels compiled for it.
    pub fn available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
            Isa::Simd128 => cfg!(all(target_arch = "wasm32", target_feature = "simd128")),
            Isa::Portable => true,
            #[cfg(not(target_arch = "x86_64"))]
            Isa::Avx512 | Isa::Avx2 => false,
        }
    }

    /// The name `relattn bench` reports.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Simd128 => "simd128",
            Isa::Portable => "portable",
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Avx512};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::F32s;
    use std::arch::x86_64::*;

    /// Eight lanes of AVX2, multiply-adds fused by FMA3.
    #[derive(Clone, Copy)]
    pub(crate) struct Avx2(__m256);

    impl F32s for Avx2 {
        const LANES: usize = 8;
        const FMA: bool = true;
        #[inline(always)]
        unsafe fn zero() -> Self {
            Avx2(_mm256_setzero_ps())
        }
        #[inline(always)]
        unsafe fn splat(p: *const f32) -> Self {
            Avx2(_mm256_broadcast_ss(&*p))
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Avx2(_mm256_loadu_ps(p))
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            _mm256_storeu_ps(p, self.0)
        }
        #[inline(always)]
        unsafe fn mul_add(a: Self, b: Self, c: Self) -> Self {
            Avx2(_mm256_fmadd_ps(a.0, b.0, c.0))
        }
    }

    /// Sixteen lanes of AVX-512F.
    #[derive(Clone, Copy)]
    pub(crate) struct Avx512(__m512);

    impl F32s for Avx512 {
        const LANES: usize = 16;
        const FMA: bool = true;
        #[inline(always)]
        unsafe fn zero() -> Self {
            Avx512(_mm512_setzero_ps())
        }
        #[inline(always)]
        unsafe fn splat(p: *const f32) -> Self {
            Avx512(_mm512_set1_ps(*p))
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Avx512(_mm512_loadu_ps(p))
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            _mm512_storeu_ps(p, self.0)
        }
        #[inline(always)]
        unsafe fn mul_add(a: Self, b: Self, c: Self) -> Self {
            Avx512(_mm512_fmadd_ps(a.0, b.0, c.0))
        }
    }
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(crate) use wasm::Simd128;

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod wasm {
    use super::F32s;
    use core::arch::wasm32::*;

    /// Four lanes of wasm SIMD128 (no fused multiply-add in the baseline proposal).
    #[derive(Clone, Copy)]
    pub(crate) struct Simd128(v128);

    impl F32s for Simd128 {
        const LANES: usize = 4;
        const FMA: bool = false;
        #[inline(always)]
        unsafe fn zero() -> Self {
            Simd128(f32x4_splat(0.0))
        }
        #[inline(always)]
        unsafe fn splat(p: *const f32) -> Self {
            Simd128(f32x4_splat(*p))
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Simd128(v128_load(p as *const v128))
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            v128_store(p as *mut v128, self.0)
        }
        #[inline(always)]
        unsafe fn mul_add(a: Self, b: Self, c: Self) -> Self {
            Simd128(f32x4_add(f32x4_mul(a.0, b.0), c.0))
        }
    }
}

/// Four lanes as a plain array: the fallback of any other CPU (the compiler vectorizes what it can).
#[derive(Clone, Copy)]
pub(crate) struct Portable([f32; 4]);

impl F32s for Portable {
    const LANES: usize = 4;
    const FMA: bool = false;
    #[inline(always)]
    unsafe fn zero() -> Self {
        Portable([0.0; 4])
    }
    #[inline(always)]
    unsafe fn splat(p: *const f32) -> Self {
        Portable([*p; 4])
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        Portable(std::ptr::read_unaligned(p as *const [f32; 4]))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        std::ptr::write_unaligned(p as *mut [f32; 4], self.0)
    }
    #[inline(always)]
    unsafe fn mul_add(a: Self, b: Self, c: Self) -> Self {
        Portable(std::array::from_fn(|k| a.0[k] * b.0[k] + c.0[k]))
    }
}
