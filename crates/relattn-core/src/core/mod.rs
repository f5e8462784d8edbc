//! The numeric core every position scheme and backend shares: matrix products ([`matmul`]), the row
//! softmax ([`softmax`]), the vectors of the hand-written kernels ([`simd`]), the checks for values that left float32's range ([`finite`]) and cooperative
//! interruption ([`cancel`]).

pub mod cancel;
pub mod finite;
pub mod matmul;
pub mod simd;
pub mod softmax;
