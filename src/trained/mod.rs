//! The trained chorale models: a decoder of relattn's layers loaded from a safetensors file, with a key/value
//! cache for sampling ([`transformer`]), and the Bach chorale data they were trained on, with MIDI
//! ([`chorales`]); what a head reads named as music, and a head's one-line description from its
//! attention by distance ([`heads`]); the figures that say whether four-part music holds together
//! ([`music_stats`]).

pub mod chorales;
pub mod heads;
pub mod music_stats;
pub mod transformer;
