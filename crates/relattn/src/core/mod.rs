//! The numeric core every position scheme and backend shares: matrix products ([`matmul`]), the row
//! softmax ([`softmax`]) and the checks for values that left float32's range ([`finite`]).

pub mod finite;
pub mod matmul;
pub mod softmax;
