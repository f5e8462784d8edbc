//! Every way a request can be refused. Each message names the field, what was given and what is allowed.

/// relattn's one error type.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum Error {
    /// A parameter out of its range, or a name that is not one of the allowed ones.
    #[error("invalid {field}: got {given}; allowed: {allowed}")]
    Invalid { field: String, given: String, allowed: String },

    /// An array whose shape does not fit the others.
    #[error("shape mismatch in '{array}': got {given}; expected {expected}")]
    Shape { array: String, given: String, expected: String },

    /// NaN or ±Inf in an input array.
    #[error("non-finite value in '{array}': {value} at index {index:?}; every value must be finite")]
    NonFinite { array: String, index: Vec<usize>, value: f64 },

    /// A file that cannot be read or parsed.
    #[error("cannot read '{path}': {reason}")]
    File { path: String, reason: String },

    /// A request whose memory would exceed the budget.
    #[error("{what} needs about {estimate} but the limit is {limit}; use a smaller n, batch or fewer heads (or raise the limit)")]
    TooLarge { what: String, estimate: Bytes, limit: Bytes },

    /// The GPU backend could not run the request (no device, a size beyond the device's limits, a lost device).
    #[error("GPU: {0}")]
    Gpu(String),
}

impl Error {
    /// An out-of-range parameter.
    pub fn invalid(field: &str, given: impl ToString, allowed: impl ToString) -> Self {
        Error::Invalid { field: field.into(), given: given.to_string(), allowed: allowed.to_string() }
    }

    /// A shape that does not fit.
    pub fn shape(array: &str, given: &[usize], expected: impl ToString) -> Self {
        Error::Shape { array: array.into(), given: format!("{given:?}"), expected: expected.to_string() }
    }

    /// The field the error is about, for showing it next to its control.
    pub fn field(&self) -> &str {
        match self {
            Error::Invalid { field, .. } => field,
            Error::Shape { array, .. } | Error::NonFinite { array, .. } => array,
            Error::File { .. } => "file",
            Error::TooLarge { .. } => "n",
            Error::Gpu(_) => "backend",
        }
    }
}

/// A byte count printed in human units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.0 as f64;
        match self.0 {
            0..=1023 => write!(f, "{} B", self.0),
            1024..=1_048_575 => write!(f, "{:.1} KiB", b / 1024.0),
            1_048_576..=1_073_741_823 => write!(f, "{:.1} MiB", b / 1_048_576.0),
            _ => write!(f, "{:.2} GiB", b / 1_073_741_824.0),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
