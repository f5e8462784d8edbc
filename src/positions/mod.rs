//! Position schemes: which row of a relative table each (query, key) pair reads, one module per scheme.
//!
//! - [`table`]: distances j − i, the rows a table covers ([`RelTable`]) and what lies beyond them ([`Edge`]);
//! - [`shaw`]: Shaw et al. 2018's gather of `Q Tᵀ`, value buckets and the materialized (Lq, Lk, d_head) tensors;
//! - [`music`]: the Music Transformer's skew (Huang et al. 2018), masked and unmasked.
//!
//! [`Method`] names the schemes, and [`Method::table`] is the one place that says which distances each
//! scheme's table covers.

pub mod music;
pub mod shaw;
pub mod table;

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;
use table::{Edge, RelTable};

/// Which relative attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Shaw, Uszkoreit & Vaswani 2018: tables w^K, w^V of 2k+1 rows indexed by clip(j − i, k) + k.
    Shaw,
    /// Huang et al. 2018: a table E_r of relative embeddings, turned into absolute positions by the skew.
    Music,
}

impl Method {
    /// The relative table of this scheme with clipping distance k: Shaw's 2k+1 rows for −k..=k (clipped
    /// beyond); the Music Transformer's k+1 rows for −k..=0 (causal) or 2k+1 for −k..=k, `edge` beyond.
    pub fn table(self, clip: usize, causal: bool, edge: Edge) -> RelTable {
        match (self, causal) {
            (Method::Shaw, _) => RelTable::shaw(clip),
            (Method::Music, true) => RelTable::music_causal(clip + 1, edge),
            (Method::Music, false) => RelTable::music_bidirectional(2 * clip + 1, edge),
        }
    }
}

impl FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "shaw" => Ok(Method::Shaw),
            "music" => Ok(Method::Music),
            _ => Err(Error::invalid("method", format!("'{s}'"), "shaw, music")),
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Shaw => "shaw",
            Method::Music => "music",
        })
    }
}
