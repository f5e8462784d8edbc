//! Every way a request can be refused. Each message names the field, what was given and what is allowed;
//! [`gpu`]: why the GPU backend could not run.

pub mod gpu;

use gpu::GpuError;

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

    /// A file (or stdout) that cannot be written.
    #[error("cannot write '{path}': {reason}")]
    Write { path: String, reason: String },

    /// A request whose memory would exceed the budget. `estimate` is `None` when the sizes overflow
    /// 64-bit arithmetic; `field` is the one size that, reduced to at most `fits`, brings the request
    /// within the limit (`fits` is `None` when no single size can).
    #[error("{what} needs {} but the limit is {limit}; allowed: {}", needs(.estimate), allowed(.field, .fits))]
    TooLarge { what: String, estimate: Option<Bytes>, limit: Bytes, field: String, fits: Option<u64> },

    /// A layer beyond what the page computes, in memory or in (query, key) pairs: `layer` its sizes, `needs`
    /// what it would take against the page's limit, `hint` what fits (field "n", the size to reduce).
    #[error("too large for the page: {layer} {needs}; {hint}")]
    TooLargeForPage { layer: String, needs: String, hint: String },

    /// Finite inputs whose computation left float32's range: the first array of the pipeline with a NaN or
    /// ±Inf (−∞ in masked logits excepted), and where.
    #[error("overflow in '{array}': {value} at index {index:?}; the inputs are finite but too large for float32 (scale them down)")]
    Overflow { array: String, index: Vec<usize>, value: f64 },

    /// The GPU backend could not run the request (no device, a size beyond the device's limits, a lost device).
    #[error("GPU: {0}")]
    Gpu(#[from] GpuError),

    /// Stopped on request ([`crate::core::cancel`]: Python's Ctrl-C) before it finished.
    #[error("interrupted")]
    Interrupted,
}

/// What an [`Error`] is about, for a caller (the page) that treats kinds differently; serialized in
/// snake_case ("invalid", "too_large", ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Invalid,
    Shape,
    NonFinite,
    File,
    Write,
    TooLarge,
    Overflow,
    Gpu,
    Interrupted,
}

impl ErrorKind {
    /// The kind's name as it is serialized ("invalid", "too_large", ...): what the page and Python read.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Invalid => "invalid",
            ErrorKind::Shape => "shape",
            ErrorKind::NonFinite => "non_finite",
            ErrorKind::File => "file",
            ErrorKind::Write => "write",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::Overflow => "overflow",
            ErrorKind::Gpu => "gpu",
            ErrorKind::Interrupted => "interrupted",
        }
    }
}

/// Serialized as its [`ErrorKind::name`].
#[cfg(feature = "serde")]
impl serde::Serialize for ErrorKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
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
            Error::Shape { array, .. } | Error::NonFinite { array, .. } | Error::Overflow { array, .. } => array,
            Error::File { .. } | Error::Write { .. } => "file",
            Error::TooLarge { field, .. } => field,
            Error::TooLargeForPage { .. } => "n",
            Error::Gpu(_) => "backend",
            Error::Interrupted => "interrupt",
        }
    }

    /// The error's kind (its variant, without the details).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Invalid { .. } => ErrorKind::Invalid,
            Error::Shape { .. } => ErrorKind::Shape,
            Error::NonFinite { .. } => ErrorKind::NonFinite,
            Error::File { .. } => ErrorKind::File,
            Error::Write { .. } => ErrorKind::Write,
            Error::TooLarge { .. } | Error::TooLargeForPage { .. } => ErrorKind::TooLarge,
            Error::Overflow { .. } => ErrorKind::Overflow,
            Error::Gpu(_) => ErrorKind::Gpu,
            Error::Interrupted => ErrorKind::Interrupted,
        }
    }
}

fn needs(estimate: &Option<Bytes>) -> String {
    match estimate {
        Some(b) => format!("about {b}"),
        None => "more than 16 EiB (its size overflows 64 bits)".into(),
    }
}

fn allowed(field: &str, fits: &Option<u64>) -> String {
    match fits {
        Some(v) => format!("{field} ≤ {v} with the other settings (or raise the limit)"),
        None => "no single size fits on its own: use a smaller n, batch, d_model or clip, or fewer heads (or raise the limit)".into(),
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
            1_073_741_824..=1_099_511_627_775 => write!(f, "{:.2} GiB", b / 1_073_741_824.0),
            _ => write!(f, "{:.2} TiB", b / 1_099_511_627_776.0),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Refuses an index `i` of `field` outside `0..count` ("0..=count−1" as the allowed range).
pub fn check_index(field: &str, i: usize, count: usize) -> Result<()> {
    if i >= count {
        return Err(Error::invalid(field, i, format!("0..={}", count.saturating_sub(1))));
    }
    Ok(())
}

impl Error {
    /// The error with its array named as a part of `stage` (an overflow in "logits" inside "layers.1.attn" →
    /// "layers.1.attn.logits"): a model's forward pass says which layer and stage left float32's range.
    pub fn in_stage(self, stage: &str) -> Self {
        match self {
            Error::Overflow { array, index, value } => Error::Overflow { array: format!("{stage}.{array}"), index, value },
            other => other,
        }
    }

    /// The error with `outer` put before its index (an overflow found in one head, placed in (b, h, ·, ·)).
    pub fn within(self, outer: &[usize]) -> Self {
        match self {
            Error::Overflow { array, index, value } => Error::Overflow { array, index: [outer, &index].concat(), value },
            other => other,
        }
    }
}

/// `value` as a size within `range`, or an error naming `field` with the range and `why` it is that range
/// ("0..=5 (the model's layers)"; an open-ended range reads "1 or more (…)").
pub fn in_range(field: &str, value: i64, range: std::ops::RangeInclusive<usize>, why: &str) -> Result<usize> {
    match usize::try_from(value) {
        Ok(v) if range.contains(&v) => Ok(v),
        _ if *range.end() == usize::MAX => Err(Error::invalid(field, value, format!("{} or more ({why})", range.start()))),
        _ => Err(Error::invalid(field, value, format!("{}..={} ({why})", range.start(), range.end()))),
    }
}
