//! A captured layer's description: what `relattn.capture(...).save(path)` writes beside the layer's arrays in
//! its .npz, as the member `capture.npy` (the UTF-8 bytes of a JSON object, uint8), so that the command line
//! and the page draw the layer as the model computes it without being told the options again.
//!
//! ```text
//! {"options": {"method": "rope", "heads": 32, "causal": true, "rope_layout": "half"},   LayerOptions
//!  "model": "meta-llama/Llama-3.2-1B", "family": "llama", "part": "decoder", "layer": 3,
//!  "tokens": [["<|begin_of_text|>", "The", …]],                                      one list per sequence
//!  "notes": ["Rotary in the half-split layout …"]}
//! ```
//!
//! The file's options are the layer's; an option given beside the file (a flag, a control) replaces the file's.

use crate::options::LayerOptions;
use relattn_core::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The member of a capture's .npz that holds its [`CaptureInfo`] (`capture.npy`).
pub const MEMBER: &str = "capture";

/// What a capture file says of its layer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct CaptureInfo {
    /// The layer's options as the model computes it.
    pub options: LayerOptions,
    /// The model's name (its `name_or_path`, or its class).
    pub model: String,
    /// Its `model_type` (t5, llama, gpt_neox, bloom, …).
    pub family: String,
    /// "encoder" or "decoder".
    pub part: String,
    /// The block's index.
    pub layer: u32,
    /// The tokens of each sequence of the batch, when the capture was given a tokenizer; else empty.
    #[serde(default)]
    pub tokens: Vec<Vec<String>>,
    /// What the family does that a reader should know (its form of the scheme, its quirks).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl CaptureInfo {
    /// Reads the JSON of a capture's `capture.npy` (its bytes: 1-D uint8, [`super::read_arrays`] checks that),
    /// in `file_name` for messages. Unknown keys are refused by name, in the options too.
    pub fn parse(bytes: &[u8], file_name: &str) -> Result<CaptureInfo> {
        let file_err = |reason: String| Error::File { path: file_name.into(), reason };
        let info: CaptureInfo = serde_json::from_slice(bytes).map_err(|e| file_err(format!("member '{MEMBER}' is not a capture's description: {e}")))?;
        if let Some(name) = info.options.unknown.keys().next() {
            return Err(Error::invalid("option", format!("'{name}' in {file_name}"), LayerOptions::names().join(", ")));
        }
        Ok(info)
    }

    /// A one-line title of the layer: "meta-llama/Llama-3.2-1B, decoder layer 3".
    pub fn title(&self) -> String {
        format!("{}, {} layer {}", self.model, self.part, self.layer)
    }
}

impl LayerOptions {
    /// These options, with each one not given taken from `file`'s (a capture's): what was given beside a file
    /// replaces the file's.
    pub fn over(&self, file: &LayerOptions) -> LayerOptions {
        let (given, mut merged) = (serde_json::to_value(self).expect("options serialize"), serde_json::to_value(file).expect("options serialize"));
        if let (serde_json::Value::Object(given), serde_json::Value::Object(merged)) = (given, &mut merged) {
            merged.extend(given);
        }
        serde_json::from_value(merged).expect("merged options deserialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relattn_core::positions::Method;

    #[test]
    fn given_options_replace_the_files() {
        let file = LayerOptions { method: Some(Method::Rope), heads: Some(4.0), causal: Some(true), ..LayerOptions::default() };
        let given = LayerOptions { heads: Some(2.0), ..LayerOptions::default() };
        let both = given.over(&file);
        assert_eq!((both.method, both.heads, both.causal), (Some(Method::Rope), Some(2.0), Some(true)));
    }

    #[test]
    fn a_description_is_json_bytes() {
        let json = br#"{"options": {"method": "t5", "logit_scale": "none"}, "model": "t5-small", "family": "t5", "part": "encoder", "layer": 1}"#;
        let info = CaptureInfo::parse(json, "c.npz").unwrap();
        assert_eq!((info.options.method, info.title()), (Some(Method::T5), "t5-small, encoder layer 1".to_string()));
        let bad = CaptureInfo::parse(&[0xff], "c.npz").unwrap_err();
        assert!(bad.to_string().contains("c.npz") && bad.to_string().contains("capture"), "{bad}");
        let unknown = CaptureInfo::parse(br#"{"options": {}, "model": "m", "family": "f", "part": "p", "layer": 0, "x": 1}"#, "c.npz");
        assert!(unknown.unwrap_err().to_string().contains("unknown field"));
    }

    #[test]
    fn an_unknown_option_is_refused_by_name() {
        let json = br#"{"options": {"method": "rope", "foo": 1}, "model": "m", "family": "f", "part": "p", "layer": 0}"#;
        let e = CaptureInfo::parse(json, "c.npz").unwrap_err();
        assert_eq!(e.field(), "option");
        assert!(e.to_string().contains("'foo'") && e.to_string().contains("rope_base"), "{e}");
    }
}
