//! The views of a trace by name ([`Stage`]), the colour scale each wants ([`Scale`]), and what is said about one
//! ([`StageText`]: title, formula, TeX, what to notice, axes). It sits below the position schemes so that each
//! scheme's module describes the stages it shapes (`positions::<scheme>::describe`); layer/stage_meta.rs puts a
//! layer's descriptions together and says which stages a trace has.

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// One view of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Distances,
    RelIndex,
    RelK,
    RelV,
    Slopes,
    RopeAngles,
    RopeKernel,
    RotatedQ,
    RotatedK,
    Positions,
    ContentLogits,
    RelativeLogits,
    SkewQer,
    SkewPadded,
    SkewReshaped,
    SkewSliced,
    C2p,
    P2c,
    XlBdRelative,
    XlBd,
    XlEf,
    Logits,
    Weights,
    SinkShare,
    ValueBuckets,
    OutputContent,
    OutputRelative,
    Output,
}

/// How a stage's values should be coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "protocol.d.ts"))]
pub enum Scale {
    /// Signed values, centred on 0.
    Diverging,
    /// Values from a minimum up (weights, indices).
    Sequential,
}

/// The axis label of the keys j (columns of every (query i, key j) stage).
pub const KEY_AXIS: &str = "key j";
/// The axis label of the queries i (rows of every (query i, key j) stage).
pub const QUERY_AXIS: &str = "query i";
/// The title of the logits stage, whatever the scheme (its formula differs).
pub const LOGITS_TITLE: &str = "Scaled, masked logits";
/// The axis label of a head's query and key components (rotated q and k).
pub const COMPONENT_AXIS: &str = "component (d_head)";
/// The axis label of a head's value components (each head's output): d_v, d_head's unless a model has its own.
pub const VALUE_AXIS: &str = "component (d_v)";
/// The axis label of the model's features (the layer's output, vectors added to x).
pub const FEATURE_AXIS: &str = "feature (d_model)";

/// What is said about a stage of one kind of layer: its title, its formula in plain text (subtitles, tooltips,
/// SVG) and in TeX (presentation mode, KaTeX), what a student should notice, and its axes when they are not
/// the stage's usual ones.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageText {
    pub title: &'static str,
    pub formula: &'static str,
    pub tex: &'static str,
    pub notice: &'static str,
    /// (x, y) axis labels; `None`: the stage's usual ones (layer/stage_meta.rs).
    pub axes: Option<(&'static str, &'static str)>,
}

impl StageText {
    pub const fn new(title: &'static str, formula: &'static str, tex: &'static str, notice: &'static str) -> StageText {
        StageText { title, formula, tex, notice, axes: None }
    }

    /// The same text on other (x, y) axes.
    pub const fn on(self, x: &'static str, y: &'static str) -> StageText {
        StageText { axes: Some((x, y)), ..self }
    }
}

/// How the tooltip of a (query i, key j) cell names the pair's parts, each with `{}` where its value goes: the
/// content logit, the relative one, the table row read and what masking means (one per layer, in
/// `Info::pair`; each scheme's module writes its own: `positions::<scheme>::pair_labels`).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "protocol.d.ts"))]
pub struct PairLabels {
    /// "content term q·k = {}", or what the scheme's content logit is instead (RoPE's rotated vectors').
    pub content: &'static str,
    /// The relative term ("relative term = {}", or a bias added after the scale); `null`: the scheme adds none.
    pub relative: Option<&'static str>,
    /// The table row or bucket the pair reads; `null`: the scheme reads none. A row of −1 (none) is said by the
    /// page: a masked key's, or one beyond the table.
    pub row: Option<String>,
    /// What masking a pair (j > i, causal) does to it.
    pub masked: &'static str,
}

impl PairLabels {
    /// A scheme that adds a relative term and reads no row; each scheme changes what differs.
    pub fn plain() -> PairLabels {
        PairLabels { content: "content term q·k = {}", relative: Some("relative term = {}"), row: None, masked: "masked (j > i)" }
    }

    /// A scheme whose term is a bias of the distance, added after the scale (ALiBi, T5).
    pub fn bias() -> PairLabels {
        PairLabels { relative: Some("bias (added after the scale) = {}"), ..PairLabels::plain() }
    }
}

impl Stage {
    /// Every stage in pipeline order (the skew's steps, DeBERTa's and Transformer-XL's terms before the relative
    /// logits they produce).
    pub const ALL: [Stage; 28] = [
        Stage::Distances,
        Stage::RelIndex,
        Stage::RelK,
        Stage::RelV,
        Stage::Slopes,
        Stage::RopeAngles,
        Stage::RopeKernel,
        Stage::RotatedQ,
        Stage::RotatedK,
        Stage::Positions,
        Stage::ContentLogits,
        Stage::SkewQer,
        Stage::SkewPadded,
        Stage::SkewReshaped,
        Stage::SkewSliced,
        Stage::C2p,
        Stage::P2c,
        Stage::XlBdRelative,
        Stage::XlBd,
        Stage::XlEf,
        Stage::RelativeLogits,
        Stage::Logits,
        Stage::Weights,
        Stage::SinkShare,
        Stage::ValueBuckets,
        Stage::OutputContent,
        Stage::OutputRelative,
        Stage::Output,
    ];

    /// The array name in a trace .npz, and the stage's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Distances => "distances",
            Stage::RelIndex => "rel_index",
            Stage::RelK => "rel_k",
            Stage::RelV => "rel_v",
            Stage::Slopes => "slopes",
            Stage::RopeAngles => "rope_angles",
            Stage::RopeKernel => "rope_kernel",
            Stage::RotatedQ => "rotated_q",
            Stage::RotatedK => "rotated_k",
            Stage::Positions => "positions",
            Stage::ContentLogits => "content_logits",
            Stage::RelativeLogits => "relative_logits",
            Stage::SkewQer => "skew_qer",
            Stage::SkewPadded => "skew_padded",
            Stage::SkewReshaped => "skew_reshaped",
            Stage::SkewSliced => "skew_sliced",
            Stage::C2p => "c2p",
            Stage::P2c => "p2c",
            Stage::XlBdRelative => "bd_relative",
            Stage::XlBd => "bd",
            Stage::XlEf => "ef",
            Stage::Logits => "logits",
            Stage::Weights => "weights",
            Stage::SinkShare => "sink_share",
            Stage::ValueBuckets => "value_buckets",
            Stage::OutputContent => "output_content",
            Stage::OutputRelative => "output_relative",
            Stage::Output => "output",
        }
    }

    /// The colour scale that fits the stage's values.
    pub fn scale(self) -> Scale {
        match self {
            Stage::RelIndex | Stage::Weights | Stage::SinkShare | Stage::ValueBuckets | Stage::Slopes | Stage::RopeAngles => Scale::Sequential,
            _ => Scale::Diverging,
        }
    }
}

impl FromStr for Stage {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Stage::ALL.into_iter().find(|st| st.name() == s).ok_or_else(|| Error::invalid("stage", format!("'{s}'"), Stage::ALL.map(Stage::name).join(", ")))
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
