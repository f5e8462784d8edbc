//! The stages of a trace and everything said about each one: its name, title, formula (plain text and
//! TeX), axes, colour scale and what it depends on. This module is the one place these are spelled: the
//! page receives them with every stage ([`Stage::meta`], serialized), the CLI's figures read them, and
//! README.md's table of stages is [`markdown_table`] (a test keeps the two equal).

use crate::attention::Config;

use crate::error::{Error, Result};
use crate::positions::Method;
use serde::{Deserialize, Serialize};
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
    Logits,
    Weights,
    ValueBuckets,
    OutputContent,
    OutputRelative,
    Output,
}

/// How a stage's values should be coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub enum Scale {
    /// Signed values, centred on 0.
    Diverging,
    /// Values from a minimum up (weights, indices).
    Sequential,
}

/// Everything the page and the CLI show about a stage besides its numbers (sent to the page as JSON).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct StageMeta {
    /// The array name in a trace .npz and on the command line.
    pub name: &'static str,
    pub title: &'static str,
    /// The formula in plain text (subtitles, tooltips, SVG).
    pub formula: &'static str,
    /// The same formula in TeX (presentation mode, rendered by KaTeX).
    pub tex: &'static str,
    /// What to notice in this view: two or three sentences for a student (on the page and in presentation).
    pub notice: &'static str,
    /// Label of the columns (x) and of the rows (y).
    pub x_axis: &'static str,
    pub y_axis: &'static str,
    /// The cells are (query i, key j) pairs: the tooltip can split them into their parts and a pin lands on them.
    pub pairs: bool,
    /// The rows are the query positions (token labels fit them).
    pub rows_are_queries: bool,
    /// The cells above the diagonal (j > i) are leftovers that the causal mask removes (the causal skew's
    /// last step): the page greys them.
    pub leftover_above: bool,
    /// The values differ from one head to another (for tables: with one table per head).
    pub per_head: bool,
    /// The values differ from one batch element to another.
    pub per_batch: bool,
    pub scale: Scale,
}

/// Which of the optional stages a layer's trace has: the scheme's own (its index and table, ALiBi's slopes,
/// RoPE's angles, kernel and rotated Q and K), w^V and the relative output with a^V, the value buckets (a^V,
/// efficient implementation), the skew's steps (the Music Transformer, efficient, Lq = Lk).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Present {
    pub method: Method,
    pub rel_v: bool,
    pub value_buckets: bool,
    pub skew: bool,
}

impl Present {
    pub fn has(&self, s: Stage) -> bool {
        let m = self.method;
        match s {
            Stage::RelIndex => m.has_index(),
            Stage::RelK => m.has_index(),
            Stage::Slopes => m.has_slopes(),
            Stage::RopeAngles | Stage::RopeKernel | Stage::RotatedQ | Stage::RotatedK => m.rotates(),
            Stage::Positions => m.adds_to_input(),
            Stage::RelativeLogits => m.has_relative_term(),
            Stage::RelV | Stage::OutputRelative => self.rel_v,
            Stage::ValueBuckets => self.value_buckets,
            Stage::SkewQer | Stage::SkewPadded | Stage::SkewReshaped | Stage::SkewSliced => self.skew,
            _ => true,
        }
    }

    /// The stages present, in pipeline order.
    pub fn stages(&self) -> Vec<Stage> {
        Stage::ALL.into_iter().filter(|s| self.has(*s)).collect()
    }

    /// Refuses a stage this trace does not have, saying why (field "stage").
    pub fn check(&self, stage: Stage) -> Result<()> {
        if self.has(stage) {
            return Ok(());
        }
        let why = match stage {
            Stage::SkewQer | Stage::SkewPadded | Stage::SkewReshaped | Stage::SkewSliced => "only the Music Transformer (efficient) has skew stages",
            Stage::RelIndex => "RoPE, ALiBi and absolute positions read no table rows",
            Stage::RelK => "RoPE and absolute positions have no table and ALiBi's slopes are the 'slopes' stage",
            Stage::Positions => "only absolute positions add vectors to x",
            Stage::Slopes => "only ALiBi has slopes",
            Stage::RopeAngles | Stage::RopeKernel | Stage::RotatedQ | Stage::RotatedK => "only RoPE rotates Q and K",
            Stage::RelativeLogits => "RoPE and absolute positions add no relative term (their positions are in the content logits)",
            _ => "only Shaw's method with a^V on has w^V stages",
        };
        Err(Error::invalid("stage", format!("'{stage}'"), why))
    }
}

/// The variants of a layer whose stages are described differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    /// Shaw without a^V.
    Shaw,
    /// Shaw with a^V (w^V, value buckets, the relative part of the output).
    ShawValues,
    /// The Music Transformer, masked: E_r for distances −k..=0, the skew with a zero column first.
    MusicCausal,
    /// Unmasked: E_r for −k..=k, tensor2tensor's skew with a zero column last.
    MusicBidirectional,
    /// RoPE: Q and K rotated, no relative term.
    Rope,
    /// ALiBi, masked: m_h·(j − i).
    AlibiCausal,
    /// ALiBi, unmasked: −m_h·|j − i|.
    AlibiBidirectional,
    /// T5's bias per bucket.
    T5,
    /// Sinusoids added to x.
    Absolute,
}

impl Variant {
    const ALL: [Variant; 9] = [
        Variant::Shaw,
        Variant::ShawValues,
        Variant::MusicCausal,
        Variant::MusicBidirectional,
        Variant::Rope,
        Variant::AlibiCausal,
        Variant::AlibiBidirectional,
        Variant::T5,
        Variant::Absolute,
    ];

    fn of(cfg: &Config) -> Variant {
        match (cfg.method, cfg.causal) {
            (Method::Shaw, _) if cfg.has_rel_v() => Variant::ShawValues,
            (Method::Shaw, _) => Variant::Shaw,
            (Method::Music, true) => Variant::MusicCausal,
            (Method::Music, false) => Variant::MusicBidirectional,
            (Method::Rope, _) => Variant::Rope,
            (Method::Alibi, true) => Variant::AlibiCausal,
            (Method::Alibi, false) => Variant::AlibiBidirectional,
            (Method::T5, _) => Variant::T5,
            (Method::Absolute, _) => Variant::Absolute,
        }
    }

    /// A layer of this variant.
    fn config(self) -> Config {
        let (method, causal, rel_v) = match self {
            Variant::Shaw => (Method::Shaw, false, false),
            Variant::ShawValues => (Method::Shaw, false, true),
            Variant::MusicCausal => (Method::Music, true, false),
            Variant::MusicBidirectional => (Method::Music, false, false),
            Variant::Rope => (Method::Rope, false, false),
            Variant::AlibiCausal => (Method::Alibi, true, false),
            Variant::AlibiBidirectional => (Method::Alibi, false, false),
            Variant::T5 => (Method::T5, false, false),
            Variant::Absolute => (Method::Absolute, false, false),
        };
        Config { method, causal, rel_v, ..Config::default() }
    }

    fn label(self) -> &'static str {
        match self {
            Variant::Shaw => "Shaw",
            Variant::ShawValues => "Shaw with a^V",
            Variant::MusicCausal => "Music, causal",
            Variant::MusicBidirectional => "Music, bidirectional",
            Variant::Rope => "RoPE",
            Variant::AlibiCausal => "ALiBi, causal",
            Variant::AlibiBidirectional => "ALiBi, bidirectional",
            Variant::T5 => "T5",
            Variant::Absolute => "absolute",
        }
    }
}

/// The axis label of (query i, key j) stages.
const KEY_AXIS: &str = "key j";
const QUERY_AXIS: &str = "query i";

impl Stage {
    /// Every stage in pipeline order (the skew's steps before the relative logits they produce).
    pub const ALL: [Stage; 22] = [
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
        Stage::RelativeLogits,
        Stage::Logits,
        Stage::Weights,
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
            Stage::Logits => "logits",
            Stage::Weights => "weights",
            Stage::ValueBuckets => "value_buckets",
            Stage::OutputContent => "output_content",
            Stage::OutputRelative => "output_relative",
            Stage::Output => "output",
        }
    }

    /// The stage's title, formulas and axes for a layer (its method, masking and a^V decide the text);
    /// `per_head_tables`: the relative tables differ by head.
    pub fn meta(self, cfg: &Config, per_head_tables: bool) -> StageMeta {
        let (title, formula, tex) = match (self, cfg.content) {
            (Stage::ContentLogits, false) => ("Content logits (off)", "0: the relative term only", r"q_i \cdot k_j \ \text{left out: } 0"),
            (Stage::Logits, false) if cfg.method.has_vector_table() => (
                "Scaled, masked logits",
                "relative_ij / √d_head, −∞ where masked (no content term)",
                r"e_{ij} = \frac{\text{relative}_{ij}}{\sqrt{d_h}} \quad (-\infty \text{ where masked; no content term})",
            ),
            _ => self.text(Variant::of(cfg)),
        };
        let (x_axis, y_axis) = self.axes(cfg);
        let head_independent =
            matches!(self, Stage::Distances | Stage::RelIndex | Stage::Output | Stage::Slopes | Stage::RopeAngles | Stage::RopeKernel | Stage::Positions);
        let is_table = matches!(self, Stage::RelK | Stage::RelV);
        StageMeta {
            name: self.name(),
            title,
            formula,
            tex,
            notice: self.notice(Variant::of(cfg), cfg.content),
            x_axis,
            y_axis,
            pairs: x_axis == KEY_AXIS && y_axis == QUERY_AXIS,
            rows_are_queries: y_axis == QUERY_AXIS,
            leftover_above: self == Stage::SkewSliced && Variant::of(cfg) == Variant::MusicCausal,
            per_head: if is_table { per_head_tables } else { !head_independent },
            per_batch: !is_table
                && !matches!(self, Stage::Distances | Stage::RelIndex | Stage::Slopes | Stage::RopeAngles | Stage::RopeKernel | Stage::Positions),
            scale: self.scale(),
        }
    }

    /// Title, plain formula and TeX formula.
    fn text(self, v: Variant) -> (&'static str, &'static str, &'static str) {
        use Variant::{Absolute, AlibiBidirectional, AlibiCausal, MusicBidirectional as Bi, MusicCausal as Causal, Rope, Shaw, ShawValues, T5};
        match (self, v) {
            (Stage::Distances, _) => ("Relative distance j − i", "d_ij = j − i", r"d_{ij} = j - i"),
            (Stage::Positions, _) => (
                "Absolute position vectors PE",
                "PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(…), added to x",
                r"PE_{p,2i} = \sin\bigl(p / 10000^{2i/d}\bigr),\ PE_{p,2i+1} = \cos\bigl(p / 10000^{2i/d}\bigr); \quad Q = (x + PE)\,W^Q",
            ),
            (Stage::RelIndex, T5) => (
                "Bucket of j − i",
                "bucket(j − i): exact up to B'/2, log-spaced to max_distance",
                r"r_{ij} = \operatorname{bucket}(j - i) = \begin{cases} n & n < E \\ E + \bigl\lfloor \frac{\ln(n / E)}{\ln(D / E)}\,(B' - E) \bigr\rfloor & n \ge E \end{cases}",
            ),
            (Stage::RelK, T5) => {
                ("Bias per bucket b_h", "one learned scalar per bucket (and head)", r"b_h \in \mathbb{R}^{B}: \text{ one learned scalar per bucket}")
            }
            (Stage::Slopes, _) => ("ALiBi slope per head m_h", "m_h = 2^(−8h/H), h = 1 … H", r"m_h = 2^{-8h/H}, \quad h = 1, \dots, H"),
            (Stage::RopeAngles, _) => (
                "Rotation angles φ",
                "φ_mp = (m / s) · base^(−2p / d_rot)",
                r"\varphi_{mp} = \frac{m}{s}\,\theta_p, \qquad \theta_p = \text{base}^{-2p / d_{rot}}",
            ),
            (Stage::RopeKernel, _) => (
                "RoPE's relative kernel",
                "κ(j − i): the logit of q = k = (1, …, 1) at that distance, (Σ_p 2 cos(d θ_p / s) + d_head − d_rot) / d_head",
                r"\kappa(j - i) = \frac{1}{d_h}\Bigl(\sum_p 2 \cos\bigl((j - i)\,\theta_p / s\bigr) + d_h - d_{rot}\Bigr), \quad q = k = \mathbf{1}",
            ),
            (Stage::RotatedQ, _) => ("Rotated queries q'", "q'_i = R(φ_i) q_i: each pair turned by its angle", r"q'_i = R(\varphi_i)\, q_i"),
            (Stage::RotatedK, _) => ("Rotated keys k'", "k'_j = R(φ_j) k_j: each pair turned by its angle", r"k'_j = R(\varphi_j)\, k_j"),
            (Stage::RelIndex, Shaw | ShawValues | Rope | AlibiCausal | AlibiBidirectional | Absolute) => (
                "Table row clip(j − i, k) + k",
                "max(−k, min(k, j − i)) + k",
                r"r_{ij} = \operatorname{clip}(j - i,\, k) + k = \max\bigl(-k, \min(k,\, j - i)\bigr) + k",
            ),
            (Stage::RelIndex, Causal | Bi) => (
                "Table row of E_r (−1: zero vector)",
                "row of distance j − i in E_r",
                r"r_{ij} = \text{row of } E_r \text{ for distance } j - i \quad (-1\text{: zero vector})",
            ),
            (Stage::RelK, Shaw | ShawValues | Rope | AlibiCausal | AlibiBidirectional | Absolute) => (
                "Relative key table w^K",
                "rows for distances −k … k",
                r"w^K = \bigl(w^K_{-k}, \dots, w^K_{k}\bigr), \qquad a^K_{ij} = w^K_{\operatorname{clip}(j - i,\, k)}",
            ),
            (Stage::RelK, Causal) => {
                ("Relative embeddings E_r", "rows for distances −k … 0", r"E_r \in \mathbb{R}^{(k + 1) \times d_h}: \text{ one row per distance } -k, \dots, 0")
            }
            (Stage::RelK, Bi) => (
                "Relative embeddings E_r",
                "rows for distances −k … k",
                r"E_r \in \mathbb{R}^{(2k + 1) \times d_h}: \text{ one row per distance } -k, \dots, k",
            ),
            (Stage::RelV, _) => ("Relative value table w^V", "a^V_ij = w^V[clip(j − i, k) + k]", r"a^V_{ij} = w^V_{\operatorname{clip}(j - i,\, k)}"),
            (Stage::ContentLogits, Rope) => {
                ("Logits of rotated Q and K", "q'_i · k'_j = q_i · R(φ_j − φ_i) k_j", r"q'_i \cdot k'_j = q_i^{\top} R(\varphi_j - \varphi_i)\, k_j")
            }
            (Stage::ContentLogits, Absolute) => (
                "Logits of x + PE",
                "q_i · k_j, q = (x + PE) W_q, k = (x + PE) W_k",
                r"q_i \cdot k_j = \bigl((x_i + PE_i) W^Q\bigr)\,\bigl((x_j + PE_j) W^K\bigr)^{\top}",
            ),
            (Stage::ContentLogits, _) => ("Content logits QKᵀ", "q_i · k_j", r"q_i \cdot k_j = (x_i W^Q)\,(x_j W^K)^{\top}"),
            (Stage::RelativeLogits, AlibiCausal) => ("ALiBi bias", "m_h · (j − i), added after the scale", r"b_{ij} = m_h\,(j - i)"),
            (Stage::RelativeLogits, AlibiBidirectional) => ("ALiBi bias", "−m_h · |j − i|, added after the scale", r"b_{ij} = -m_h\,\lvert j - i \rvert"),
            (Stage::RelativeLogits, T5) => ("T5 bias", "b_h[bucket(j − i)], added after the scale", r"b_{ij} = b_h\bigl[\operatorname{bucket}(j - i)\bigr]"),
            (Stage::RelativeLogits, Shaw | ShawValues | Rope | Absolute) => (
                "Relative logits",
                "q_i · a^K_ij = (Q w^Kᵀ)[i, clip(j − i, k) + k]",
                r"q_i \cdot a^K_{ij} = \bigl(Q\, {w^K}^{\top}\bigr)\bigl[i,\ \operatorname{clip}(j - i,\, k) + k\bigr]",
            ),
            (Stage::RelativeLogits, Causal | Bi) => (
                "Relative logits",
                "Skew(Q E_rᵀ)[i, j] = q_i · E_r[j − i]",
                r"S^{rel}_{ij} = \operatorname{Skew}\bigl(Q E_r^{\top}\bigr)[i, j] = q_i \cdot E_r[j - i]",
            ),
            (Stage::SkewQer, Bi) => (
                "Skew 1: Q E_rᵀ",
                "Q E_rᵀ (L × (2L − 1)), column c = distance c − (L − 1)",
                r"Q E_r^{\top} \in \mathbb{R}^{L \times (2L - 1)}, \quad \text{column } c \leftrightarrow \text{distance } c - (L - 1)",
            ),
            (Stage::SkewQer, _) => (
                "Skew 1: Q E_rᵀ",
                "Q E_rᵀ (L × L), column c = distance c − (L − 1)",
                r"Q E_r^{\top} \in \mathbb{R}^{L \times L}, \quad \text{column } c \leftrightarrow \text{distance } c - (L - 1)",
            ),
            (Stage::SkewPadded, Bi) => {
                ("Skew 2: padded", "[Q E_rᵀ | 0]: a zero column last, L × 2L", r"\bigl[\, Q E_r^{\top} \mid 0 \,\bigr] \in \mathbb{R}^{L \times 2L}")
            }
            (Stage::SkewPadded, _) => {
                ("Skew 2: padded", "[0 | Q E_rᵀ]: a zero column first, L × (L + 1)", r"\bigl[\, 0 \mid Q E_r^{\top} \,\bigr] \in \mathbb{R}^{L \times (L + 1)}")
            }
            (Stage::SkewReshaped, Bi) => (
                "Skew 3: reshaped",
                "flattened, L − 1 zeros appended, read as (L + 1) × (2L − 1)",
                r"\operatorname{reshape}: \ 2L^2 + (L - 1) \text{ values} \ \to\ (L + 1) \times (2L - 1) \quad \text{(same memory)}",
            ),
            (Stage::SkewReshaped, _) => (
                "Skew 3: reshaped",
                "the same memory read as (L + 1) × L",
                r"\operatorname{reshape}: \ L \times (L + 1) \ \to\ (L + 1) \times L \quad \text{(same memory)}",
            ),
            (Stage::SkewSliced, Bi) => (
                "Skew 4: sliced",
                "reshaped[:L, L − 1:]: absolute positions (i, j)",
                r"S^{rel} = \operatorname{reshaped}[\,{:}L,\ L - 1{:}\,] \in \mathbb{R}^{L \times L}",
            ),
            (Stage::SkewSliced, _) => {
                ("Skew 4: sliced", "reshaped[1:, :]: absolute positions (i, j)", r"S^{rel} = \operatorname{reshaped}[1{:},\ :\,] \in \mathbb{R}^{L \times L}")
            }
            (Stage::Logits, Shaw | ShawValues) => (
                "Scaled, masked logits",
                "(q_i·k_j + relative_ij) / √d_head, −∞ where masked",
                r"e_{ij} = \frac{q_i \cdot k_j + q_i \cdot a^K_{ij}}{\sqrt{d_h}} \quad (-\infty \text{ where masked})",
            ),
            (Stage::Logits, Absolute) => (
                "Scaled, masked logits",
                "q_i·k_j / √d_head, −∞ where masked",
                r"e_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_h}} \quad (-\infty \text{ where masked})",
            ),
            (Stage::Logits, Rope) => (
                "Scaled, masked logits",
                "q'_i·k'_j / √d_head, −∞ where masked",
                r"e_{ij} = \frac{q'_i \cdot k'_j}{\sqrt{d_h}} \quad (-\infty \text{ where masked})",
            ),
            (Stage::Logits, AlibiCausal | AlibiBidirectional | T5) => (
                "Scaled, masked logits",
                "q_i·k_j / √d_head + bias_ij, −∞ where masked",
                r"e_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_h}} + b_{ij} \quad (-\infty \text{ where masked})",
            ),
            (Stage::Logits, Causal | Bi) => (
                "Scaled, masked logits",
                "(q_i·k_j + relative_ij) / √d_head, −∞ where masked",
                r"e_{ij} = \frac{q_i \cdot k_j + S^{rel}_{ij}}{\sqrt{d_h}} \quad (-\infty \text{ where masked})",
            ),
            (Stage::Weights, _) => {
                ("Attention weights", "α_ij = softmax_j(e_ij)", r"\alpha_{ij} = \operatorname{softmax}_j(e_{ij}) = \frac{\exp e_{ij}}{\sum_{l} \exp e_{il}}")
            }
            (Stage::ValueBuckets, _) => (
                "Weight per w^V row",
                "B[i, r] = Σ_{j: clip(j−i,k)+k = r} α_ij",
                r"B_{ir} = \sum_{j:\ \operatorname{clip}(j - i,\, k) + k \,=\, r} \alpha_{ij}",
            ),
            (Stage::OutputContent, _) => ("Output, content part αV", "Σ_j α_ij v_j", r"\sum_j \alpha_{ij}\, v_j"),
            (Stage::OutputRelative, _) => ("Output, relative part", "Σ_j α_ij a^V_ij = B w^V", r"\sum_j \alpha_{ij}\, a^V_{ij} = (B\, w^V)_i"),
            (Stage::Output, ShawValues) => (
                "Output",
                "concat_h(z_h) W_o + b_o, z_h = Σ_j α_ij (v_j + a^V_ij)",
                r"z = \operatorname{concat}_h\bigl(z^{h}\bigr)\, W^O + b^O, \qquad z^{h}_i = \sum_j \alpha_{ij}\,\bigl(v_j + a^V_{ij}\bigr)",
            ),
            (Stage::Output, _) => (
                "Output",
                "concat_h(z_h) W_o + b_o, z_h = Σ_j α_ij v_j",
                r"z = \operatorname{concat}_h\bigl(z^{h}\bigr)\, W^O + b^O, \qquad z^{h}_i = \sum_j \alpha_{ij}\, v_j",
            ),
        }
    }

    /// What a student should see in the view.
    fn notice(self, v: Variant, content: bool) -> &'static str {
        use Variant::{Absolute, AlibiBidirectional, AlibiCausal, MusicBidirectional as Bi, MusicCausal as Causal, Rope, Shaw, ShawValues, T5};
        match (self, v) {
            (Stage::Positions, _) => "One vector per position, added to x before the projections: the first columns wave fast, the last slowly. Attention sees positions only through these sums, so nothing in it is relative by construction.",
            (Stage::ContentLogits, Absolute) => "Token and position mixed in one product: (x + PE) projected. A relative pattern can only appear here if the projections learn to read it out of the sums.",
            (Stage::Logits, Absolute) => "The products of x + PE scaled by 1/√d_head; masked cells are −∞ and get weight 0.",
            (Stage::RelIndex, T5) => "Small distances get a bucket each; beyond half the buckets, distances share log-spaced buckets up to max_distance, and everything farther reads the last one. Keys after the query use the other half (bidirectional) or bucket 0 (causal).",
            (Stage::RelK, T5) => "One learned number per bucket (per head): the whole of T5's position signal. A head that prefers nearby keys learns large values for the first buckets.",
            (Stage::Slopes, _) => "A geometric sequence: each head penalises distance at its own rate, from steep (short-range heads) to almost flat (long-range ones). Nothing here is learned.",
            (Stage::RopeAngles, _) => "Each column is one frequency: the first pairs turn fast with the position, the last ones barely move. A row is the rotation applied to that position's q and k.",
            (Stage::RopeKernel, _) => "The logit q = k = (1, …, 1) would give at each pair: 1 on the diagonal, oscillating and shrinking as |j − i| grows. Every diagonal holds one value: that is what makes RoPE relative.",
            (Stage::RotatedQ, _) => "Q after rotation: row i is q_i with each pair turned by position i's angles. The vectors keep their lengths; only their directions move.",
            (Stage::RotatedK, _) => "K after rotation by each key's position. Because both sides turn, q'_i · k'_j depends on the positions only through j − i.",
            (Stage::ContentLogits, Rope) => "Content and position in one product: the dot products of rotated vectors. Move both tokens by the same amount and this cell does not change.",
            (Stage::RelativeLogits, AlibiCausal) => "A penalty growing linearly with distance into the past, steeper for this head's larger slope. Added after the scale, it never depends on the tokens.",
            (Stage::RelativeLogits, AlibiBidirectional) => "−m_h·|j − i|: the same linear penalty both ways, zero on the diagonal. Added after the scale, it never depends on the tokens.",
            (Stage::RelativeLogits, T5) => "Each cell is this head's bias for the pair's bucket: constant along each diagonal near the middle, then in widening bands, then flat beyond max_distance.",
            (Stage::Logits, Rope) => "The rotated products scaled by 1/√d_head; masked cells are −∞ and get weight 0.",
            (Stage::Logits, AlibiCausal | AlibiBidirectional | T5) => "The content logits scaled by 1/√d_head plus the bias, which is not scaled; masked cells are −∞ and get weight 0.",
            (Stage::Distances, _) => "Every diagonal holds one distance: the key is that many positions after (right of) the query, or before it when negative. Everything relative attention adds is read along these diagonals.",
            (Stage::RelIndex, Shaw | ShawValues | Rope | AlibiCausal | AlibiBidirectional | Absolute) => "Distances beyond ±k are clipped to the table's edge rows, so the band of distinct colours is 2k + 1 diagonals wide and the corners are flat: far apart is just 'far'.",
            (Stage::RelIndex, Causal | Bi) => "Each diagonal reads one row of E_r; −1 marks pairs that read nothing (a zero vector): keys after the query when causal, and distances beyond the table.",
            (Stage::RelK, Shaw | ShawValues | Rope | AlibiCausal | AlibiBidirectional | Absolute) => "2k + 1 learned vectors, one per clipped distance. Row r serves every (i, j) with clip(j − i, k) + k = r: one row, a whole diagonal.",
            (Stage::RelK, Causal | Bi) => "One learned vector per distance. The skew never builds an (L, L, d) tensor of them: it multiplies Q by this small table once and moves the products into place.",
            (Stage::RelV, _) => "The value-side table: the relative part of the output adds row clip(j − i, k) + k of it, weighted by α_ij. Same rows, same diagonals as w^K.",
            (Stage::ContentLogits, _) if !content => "The content term is left out: these are zeros, so the weights below come from relative positions alone.",
            (Stage::ContentLogits, _) => "What the tokens say about each other, whatever their positions: with a sentence, a repeated word gives equal rows and columns here.",
            (Stage::RelativeLogits, Shaw | ShawValues | Rope | Absolute) => "Cell (i, j) is q_i · w^K[clip(j − i, k) + k]: in each row, keys beyond ±k all read an edge row, so both ends of every row are flat; only the 2k + 1 diagonals near the middle differ.",
            (Stage::RelativeLogits, Causal) => "q_i · E_r[j − i], produced by the skew from Q E_rᵀ without an (L, L, d) tensor. On and below the diagonal it is Skew 4; above it, Skew 4's leftovers are zeroed here (those keys are masked anyway).",
            (Stage::RelativeLogits, Bi) => "q_i · E_r[j − i], produced by the skew from Q E_rᵀ without an (L, L, d) tensor. Compare it with Skew 4: they are the same matrix.",
            (Stage::SkewQer, _) => "Column c holds distance c − (L − 1) for every query: the right numbers, in the wrong place. Row i's distance-0 cell is in the last column (causal) or the middle one (bidirectional).",
            (Stage::SkewPadded, Bi) => "A zero column is appended on the right. Nothing moves yet: the trick is in how the same memory will be read next.",
            (Stage::SkewPadded, _) => "A zero column is put in front. Nothing moves yet: the trick is in how the same memory will be read next.",
            (Stage::SkewReshaped, Bi) => "The flat buffer, with L − 1 zeros more, read with rows of 2L − 1: each row starts one cell further along, so every row's cells shift and distance j − i lands in column j + L − 1.",
            (Stage::SkewReshaped, _) => "The same numbers read with rows one shorter: each row slides one cell left of the row above, which moves every distance to its absolute key column. Row 0 is left over.",
            (Stage::SkewSliced, Bi) => "Rows 0..L and columns L − 1.. of the reshaped buffer: the relative logits at absolute positions (i, j), equal to the gather q_i · E_r[j − i].",
            (Stage::SkewSliced, _) => "Row 0 dropped: the relative logits at absolute positions. Cells above the diagonal hold leftovers of the next row; the causal mask removes them.",
            (Stage::Logits, _) if !content => "The relative term alone (the content term is left out), scaled by 1/√d_head; masked cells are −∞ and get weight 0.",
            (Stage::Logits, _) => "Content and relative terms added and scaled by 1/√d_head; masked cells are −∞ and get weight 0.",
            (Stage::Weights, _) => "Each row sums to 1. Look for diagonals: a head that has learned (or been built) to look a fixed distance back shows a bright stripe.",
            (Stage::ValueBuckets, _) => "Row i sums the weights of the keys that share a w^V row: the attention each distance (clipped) received from query i. Row sums are 1.",
            (Stage::OutputContent, _) => "The usual attention output, Σ α v: what the attended tokens carry.",
            (Stage::OutputRelative, _) => "Σ α a^V = B w^V: what the attended distances carry, computed from the small bucket matrix, not an (L, L, d) tensor.",
            (Stage::Output, _) => "Every head's output side by side, projected by W_o: the layer's answer for each position.",
        }
    }

    /// (x, y) axis labels.
    fn axes(self, cfg: &Config) -> (&'static str, &'static str) {
        let causal = cfg.causal;
        match self {
            Stage::RelK if cfg.method == Method::T5 => ("bias", "bucket r"),
            Stage::RelK | Stage::RelV => ("component of the row (d_head)", "table row r"),
            Stage::Slopes => ("slope m_h", "head h"),
            Stage::RopeAngles => ("pair p (frequency θ_p)", "position m"),
            Stage::RotatedQ => ("component (d_head)", QUERY_AXIS),
            Stage::RotatedK => ("component (d_head)", "key j"),
            Stage::Positions => ("feature (d_model)", "position p"),
            Stage::SkewQer => ("column c (distance c − (n − 1))", QUERY_AXIS),
            Stage::SkewPadded if causal => ("column (zero column first)", QUERY_AXIS),
            Stage::SkewPadded => ("column (zero column last)", QUERY_AXIS),
            Stage::SkewReshaped => ("column of the reshaped buffer", "row of the reshaped buffer"),
            Stage::ValueBuckets => ("w^V row r", QUERY_AXIS),
            Stage::OutputContent | Stage::OutputRelative => ("component (d_head)", QUERY_AXIS),
            Stage::Output => ("feature (d_model)", QUERY_AXIS),
            _ => (KEY_AXIS, QUERY_AXIS),
        }
    }

    /// The colour scale that fits the stage's values.
    pub fn scale(self) -> Scale {
        match self {
            Stage::RelIndex | Stage::Weights | Stage::ValueBuckets | Stage::Slopes | Stage::RopeAngles => Scale::Sequential,
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

/// README.md's table of stages: name, title, formula and axes of each, by variant where they differ (a
/// stage a variant does not have is left out of its line).
pub fn markdown_table() -> String {
    let mut out = String::from("| stage | title | formula | axes (x; y) |\n|---|---|---|---|\n");
    let escape = |s: &str| s.replace('|', "\\|");
    for stage in Stage::ALL {
        let metas: Vec<(Variant, StageMeta)> = Variant::ALL.into_iter().filter(|v| stage.exists_in(*v)).map(|v| (v, stage.meta(&v.config(), false))).collect();
        // One column: its text when every variant agrees, else each text after the variants that have it.
        let column = |f: &dyn Fn(&StageMeta) -> String| {
            let mut groups: Vec<(Vec<&str>, String)> = Vec::new();
            for (v, m) in &metas {
                let text = escape(&f(m));
                match groups.iter_mut().find(|(_, t)| *t == text) {
                    Some((labels, _)) => labels.push(v.label()),
                    None => groups.push((vec![v.label()], text)),
                }
            }
            match groups.as_slice() {
                [(_, text)] => text.clone(),
                _ => groups.iter().map(|(labels, text)| format!("{}: {text}", labels.join("; "))).collect::<Vec<_>>().join("<br>"),
            }
        };
        let (title, formula, axes) = (column(&|m| m.title.into()), column(&|m| m.formula.into()), column(&|m| format!("{}; {}", m.x_axis, m.y_axis)));
        out += &format!("| `{}` | {title} | {formula} | {axes} |\n", stage.name());
    }
    out
}

impl Stage {
    /// Whether a layer of this variant has the stage (skew steps: the Music Transformer; w^V stages: Shaw with a^V).
    fn exists_in(self, v: Variant) -> bool {
        let values = v == Variant::ShawValues;
        let skew = matches!(v, Variant::MusicCausal | Variant::MusicBidirectional);
        Present { method: v.config().method, rel_v: values, value_buckets: values, skew }.has(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// README.md's table is this module's, between its two markers; run with `RELATTN_WRITE_README=1` to update it.
    #[test]
    fn readme_table_is_the_stage_metadata() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let (begin, end) = ("<!-- stages: generated by src/layer/stage.rs -->\n", "<!-- /stages -->");
        let (Some(a), Some(b)) = (readme.find(begin), readme.find(end)) else { panic!("README.md has no '{begin}' … '{end}' block") };
        let table = markdown_table();
        if readme[a + begin.len()..b] != table {
            if std::env::var_os("RELATTN_WRITE_README").is_some() {
                std::fs::write(path, format!("{}{table}{}", &readme[..a + begin.len()], &readme[b..])).unwrap();
            } else {
                panic!("README.md's stage table differs from src/layer/stage.rs; run with RELATTN_WRITE_README=1 to rewrite it:\n{table}");
            }
        }
    }

    #[test]
    fn names_parse_back_and_pairs_are_query_by_key() {
        for s in Stage::ALL {
            assert_eq!(s.name().parse::<Stage>().unwrap(), s);
        }
        let (shaw, music) = (Variant::ShawValues.config(), Variant::MusicCausal.config());
        let pairs: Vec<&str> = Stage::ALL.iter().filter(|s| s.meta(&shaw, false).pairs).map(|s| s.name()).collect();
        assert_eq!(pairs, ["distances", "rel_index", "rope_kernel", "content_logits", "skew_sliced", "relative_logits", "logits", "weights"]);
        assert!(!Stage::Output.meta(&shaw, false).per_head && Stage::Output.meta(&shaw, false).per_batch);
        assert!(Stage::RelK.meta(&music, true).per_head && !Stage::RelK.meta(&music, false).per_head);
        assert!("attention".parse::<Stage>().is_err());
    }

    /// Every stage of every variant says what to notice, in a few sentences; leaving the content term out
    /// changes what the content logits say.
    #[test]
    fn every_stage_says_what_to_notice() {
        for v in Variant::ALL {
            for stage in Stage::ALL.into_iter().filter(|s| s.exists_in(v)) {
                let n = stage.meta(&v.config(), false).notice;
                assert!(n.len() > 60 && n.len() < 400 && n.ends_with('.'), "{} ({}): {n:?}", stage.name(), v.label());
            }
        }
        let off = Config { content: false, ..Variant::Shaw.config() };
        assert!(Stage::ContentLogits.meta(&off, false).notice.contains("left out"));
    }

    /// The shapes the skew's descriptions state are the shapes src/positions/music.rs produces, for both forms; the
    /// zero column is where the axis label says; a^V is in the output's formula only when the layer has it.
    #[test]
    fn skew_descriptions_state_the_real_shapes() {
        use crate::positions::music::skew;
        let l = 5;
        for causal in [true, false] {
            let cols = if causal { l } else { 2 * l - 1 };
            let qer = ndarray::Array2::from_shape_fn((l, cols), |(i, j)| (i * cols + j + 1) as f32);
            let steps = skew(qer.view(), causal);
            let cfg = Config { method: Method::Music, causal, ..Config::default() };
            let says = |st: Stage| st.meta(&cfg, false).formula;
            let dims = |a: &ndarray::Array2<f32>| a.dim();
            if causal {
                assert_eq!((dims(&steps.qer), dims(&steps.padded), dims(&steps.reshaped)), ((l, l), (l, l + 1), (l + 1, l)));
                assert!(
                    says(Stage::SkewQer).contains("L × L")
                        && says(Stage::SkewPadded).contains("L × (L + 1)")
                        && says(Stage::SkewReshaped).contains("(L + 1) × L")
                );
                assert!(steps.padded.column(0).iter().all(|v| *v == 0.0) && Stage::SkewPadded.meta(&cfg, false).x_axis.contains("first"));
                assert!(says(Stage::RelK).contains("−k … 0"));
            } else {
                assert_eq!((dims(&steps.qer), dims(&steps.padded), dims(&steps.reshaped)), ((l, 2 * l - 1), (l, 2 * l), (l + 1, 2 * l - 1)));
                assert!(
                    says(Stage::SkewQer).contains("L × (2L − 1)")
                        && says(Stage::SkewPadded).contains("L × 2L")
                        && says(Stage::SkewReshaped).contains("(L + 1) × (2L − 1)")
                );
                assert!(steps.padded.column(2 * l - 1).iter().all(|v| *v == 0.0) && Stage::SkewPadded.meta(&cfg, false).x_axis.contains("last"));
                assert!(says(Stage::RelK).contains("−k … k"));
            }
            assert_eq!(dims(&steps.sliced), (l, l));
            assert!(!says(Stage::Output).contains("a^V"));
        }
        assert!(Stage::Output.meta(&Variant::ShawValues.config(), false).formula.contains("a^V"));
        assert!(!Stage::Output.meta(&Variant::Shaw.config(), false).formula.contains("a^V"));
    }
}
