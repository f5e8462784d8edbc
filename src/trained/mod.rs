//! The trained chorale models: a decoder of relattn's layers loaded from a safetensors file, with a key/value
//! cache for sampling ([`transformer`]), and the Bach chorale data they were trained on, with MIDI
//! ([`chorales`]).

pub mod chorales;
pub mod transformer;
