//! The stages of a trace and everything said about each one: its name, title, formula (plain text and
//! TeX), axes, colour scale and what it depends on. This module is the one place these are spelled: the
//! page receives them with every stage ([`Stage::meta`], serialized), the CLI's figures read them, and
//! README.md's table of stages is [`markdown_table`] (a test keeps the two equal).

use crate::attention::Method;
use crate::error::{Error, Result};
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
pub enum Scale {
    /// Signed values, centred on 0.
    Diverging,
    /// Values from a minimum up (weights, indices).
    Sequential,
}

/// Everything the page and the CLI show about a stage besides its numbers (sent to the page as JSON).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageMeta {
    /// The array name in a trace .npz and on the command line.
    pub name: &'static str,
    pub title: &'static str,
    /// The formula in plain text (subtitles, tooltips, SVG).
    pub formula: &'static str,
    /// The same formula in TeX (presentation mode, rendered by KaTeX).
    pub tex: &'static str,
    /// Label of the columns (x) and of the rows (y).
    pub x_axis: &'static str,
    pub y_axis: &'static str,
    /// The cells are (query i, key j) pairs: the tooltip can split them into their parts and a pin lands on them.
    pub pairs: bool,
    /// The rows are the query positions (token labels fit them).
    pub rows_are_queries: bool,
    /// The values differ from one head to another (for tables: with one table per head).
    pub per_head: bool,
    /// The values differ from one batch element to another.
    pub per_batch: bool,
    pub scale: Scale,
}

/// The axis label of (query i, key j) stages.
const KEY_AXIS: &str = "key j";
const QUERY_AXIS: &str = "query i";

impl Stage {
    /// Every stage in pipeline order.
    pub const ALL: [Stage; 16] = [
        Stage::Distances,
        Stage::RelIndex,
        Stage::RelK,
        Stage::RelV,
        Stage::ContentLogits,
        Stage::RelativeLogits,
        Stage::SkewQer,
        Stage::SkewPadded,
        Stage::SkewReshaped,
        Stage::SkewSliced,
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

    /// The stage's title, formulas and axes for `method`; `per_head_tables`: the relative tables differ by head.
    pub fn meta(self, method: Method, per_head_tables: bool) -> StageMeta {
        let (title, formula, tex) = self.text(method);
        let (x_axis, y_axis) = self.axes();
        let head_independent = matches!(self, Stage::Distances | Stage::RelIndex | Stage::Output);
        let is_table = matches!(self, Stage::RelK | Stage::RelV);
        StageMeta {
            name: self.name(),
            title,
            formula,
            tex,
            x_axis,
            y_axis,
            pairs: x_axis == KEY_AXIS && y_axis == QUERY_AXIS,
            rows_are_queries: y_axis == QUERY_AXIS,
            per_head: if is_table { per_head_tables } else { !head_independent },
            per_batch: !is_table && !matches!(self, Stage::Distances | Stage::RelIndex),
            scale: self.scale(),
        }
    }

    /// Title, plain formula and TeX formula.
    fn text(self, method: Method) -> (&'static str, &'static str, &'static str) {
        use Method::{Music, Shaw};
        match (self, method) {
            (Stage::Distances, _) => ("Relative distance j − i", "d_ij = j − i", r"d_{ij} = j - i"),
            (Stage::RelIndex, Shaw) => (
                "Table row clip(j − i, k) + k",
                "max(−k, min(k, j − i)) + k",
                r"r_{ij} = \operatorname{clip}(j - i,\, k) + k = \max\bigl(-k, \min(k,\, j - i)\bigr) + k",
            ),
            (Stage::RelIndex, Music) => (
                "Table row of E_r (−1: zero vector)",
                "row of distance j − i in E_r",
                r"r_{ij} = \text{row of } E_r \text{ for distance } j - i \quad (-1\text{: zero vector})",
            ),
            (Stage::RelK, Shaw) => (
                "Relative key table w^K",
                "rows for distances −k … k",
                r"w^K = \bigl(w^K_{-k}, \dots, w^K_{k}\bigr), \qquad a^K_{ij} = w^K_{\operatorname{clip}(j - i,\, k)}",
            ),
            (Stage::RelK, Music) => {
                ("Relative embeddings E_r", "rows for distances −k … k", r"E_r \in \mathbb{R}^{L \times d_h}: \text{ one row per relative distance}")
            }
            (Stage::RelV, _) => ("Relative value table w^V", "a^V_ij = w^V[clip(j − i, k) + k]", r"a^V_{ij} = w^V_{\operatorname{clip}(j - i,\, k)}"),
            (Stage::ContentLogits, _) => ("Content logits QKᵀ", "q_i · k_j", r"q_i \cdot k_j = (x_i W^Q)\,(x_j W^K)^{\top}"),
            (Stage::RelativeLogits, Shaw) => (
                "Relative logits",
                "q_i · a^K_ij = (Q w^Kᵀ)[i, clip(j − i, k) + k]",
                r"q_i \cdot a^K_{ij} = \bigl(Q\, {w^K}^{\top}\bigr)\bigl[i,\ \operatorname{clip}(j - i,\, k) + k\bigr]",
            ),
            (Stage::RelativeLogits, Music) => (
                "Relative logits",
                "Skew(Q E_rᵀ)[i, j] = q_i · E_r[j − i]",
                r"S^{rel}_{ij} = \operatorname{Skew}\bigl(Q E_r^{\top}\bigr)[i, j] = q_i \cdot E_r[j - i]",
            ),
            (Stage::SkewQer, _) => (
                "Skew 1: Q E_rᵀ",
                "Q E_rᵀ, column c = distance c − (L − 1)",
                r"Q E_r^{\top} \in \mathbb{R}^{L \times L}, \quad \text{column } c \leftrightarrow \text{distance } c - (L - 1)",
            ),
            (Stage::SkewPadded, _) => ("Skew 2: padded", "one zero column added", r"\bigl[\, 0 \mid Q E_r^{\top} \,\bigr] \in \mathbb{R}^{L \times (L + 1)}"),
            (Stage::SkewReshaped, _) => (
                "Skew 3: reshaped",
                "same memory, rows of another length",
                r"\operatorname{reshape}: \ L \times (L + 1) \ \to\ (L + 1) \times L \quad \text{(same memory)}",
            ),
            (Stage::SkewSliced, _) => {
                ("Skew 4: sliced", "rows kept: absolute positions (i, j)", r"S^{rel} = \operatorname{reshaped}[1{:},\ :\,] \in \mathbb{R}^{L \times L}")
            }
            (Stage::Logits, Shaw) => (
                "Scaled, masked logits",
                "(q_i·k_j + relative_ij) / √d_head, −∞ where masked",
                r"e_{ij} = \frac{q_i \cdot k_j + q_i \cdot a^K_{ij}}{\sqrt{d_h}} \quad (-\infty \text{ where masked})",
            ),
            (Stage::Logits, Music) => (
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
            (Stage::Output, _) => (
                "Output",
                "concat_h(z_h) W_o + b_o",
                r"z = \operatorname{concat}_h\bigl(z^{h}\bigr)\, W^O + b^O, \qquad z^{h}_i = \sum_j \alpha_{ij}\,\bigl(v_j + a^V_{ij}\bigr)",
            ),
        }
    }

    /// (x, y) axis labels.
    fn axes(self) -> (&'static str, &'static str) {
        match self {
            Stage::RelK | Stage::RelV => ("component of the row (d_head)", "table row r"),
            Stage::SkewQer => ("column c (distance c − (n − 1))", QUERY_AXIS),
            Stage::SkewPadded => ("column (zero column first)", QUERY_AXIS),
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
            Stage::RelIndex | Stage::Weights | Stage::ValueBuckets => Scale::Sequential,
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

/// README.md's table of stages: name, title and formula of each, by method where they differ.
pub fn markdown_table() -> String {
    let mut out = String::from("| stage | title | formula | axes (x; y) |\n|---|---|---|---|\n");
    for stage in Stage::ALL {
        let (shaw, music) = (stage.meta(Method::Shaw, false), stage.meta(Method::Music, false));
        let (title, formula) = if (shaw.title, shaw.formula) == (music.title, music.formula) {
            (shaw.title.to_string(), shaw.formula.to_string())
        } else {
            (format!("Shaw: {}<br>Music: {}", shaw.title, music.title), format!("Shaw: {}<br>Music: {}", shaw.formula, music.formula))
        };
        let escape = |s: &str| s.replace('|', "\\|");
        out += &format!("| `{}` | {} | {} | {}; {} |\n", shaw.name, escape(&title), escape(&formula), shaw.x_axis, shaw.y_axis);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// README.md's table is this module's, between its two markers; run with `RELATTN_WRITE_README=1` to update it.
    #[test]
    fn readme_table_is_the_stage_metadata() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let (begin, end) = ("<!-- stages: generated by src/stage.rs -->\n", "<!-- /stages -->");
        let (Some(a), Some(b)) = (readme.find(begin), readme.find(end)) else { panic!("README.md has no '{begin}' … '{end}' block") };
        let table = markdown_table();
        if readme[a + begin.len()..b] != table {
            if std::env::var_os("RELATTN_WRITE_README").is_some() {
                std::fs::write(path, format!("{}{table}{}", &readme[..a + begin.len()], &readme[b..])).unwrap();
            } else {
                panic!("README.md's stage table differs from src/stage.rs; run with RELATTN_WRITE_README=1 to rewrite it:\n{table}");
            }
        }
    }

    #[test]
    fn names_parse_back_and_pairs_are_query_by_key() {
        for s in Stage::ALL {
            assert_eq!(s.name().parse::<Stage>().unwrap(), s);
        }
        let pairs: Vec<&str> = Stage::ALL.iter().filter(|s| s.meta(Method::Shaw, false).pairs).map(|s| s.name()).collect();
        assert_eq!(pairs, ["distances", "rel_index", "content_logits", "relative_logits", "skew_sliced", "logits", "weights"]);
        assert!(!Stage::Output.meta(Method::Shaw, false).per_head && Stage::Output.meta(Method::Shaw, false).per_batch);
        assert!(Stage::RelK.meta(Method::Music, true).per_head && !Stage::RelK.meta(Method::Music, false).per_head);
        assert!("attention".parse::<Stage>().is_err());
    }
}
