//! The trained chorale models: a decoder of relattn's layers loaded from a safetensors file, with a key/value
//! cache for sampling ([`transformer`]), and the Bach chorale data they were trained on, with MIDI
//! ([`chorales`]); what a head reads named as music, and a head's one-line description from its
//! attention by distance ([`heads`]); the figures that say whether four-part music holds together
//! ([`music_stats`]).

use relattn_core::positions::Method;

/// The shipped chorale models, one per position scheme (`models/chorales-NAME.safetensors`, NAME the scheme's
/// [`Method::name`]), in the order Model mode, docs/src/models.md and the comparisons list them: the Music
/// Transformer's first, the absolute baseline last. The page's worker (the wasm's `model_kinds()`), the
/// Python package (`relattn.MODELS`) and the tests read this list.
pub const MODELS: [Method; 6] = [Method::Music, Method::Shaw, Method::Rope, Method::Alibi, Method::T5, Method::Absolute];

pub mod chorales;
pub mod heads;
pub mod music_stats;
pub mod transformer;
