//! Which stages a layer's trace has ([`Present`]) and everything shown about each one ([`Stage::meta`]: title,
//! formula in plain text and TeX, what to notice, axes, colour scale, what it depends on). A stage a scheme
//! shapes is described by the scheme's module (`positions::<scheme>::describe`); this module says what every
//! layer says (distances, content logits, weights, outputs) and what leaving the content term out changes.
//! The page receives the metadata with every stage (serialized), the CLI's figures read it, and the book's
//! table of stages is [`markdown_table`] (a test keeps the two equal).

use crate::attention::{Config, LogitScale};
use crate::error::{Error, Result};
use crate::positions::{absolute, rope, Method};
use crate::stage::{Scale, Stage, StageText, FEATURE_AXIS, KEY_AXIS, LOGITS_TITLE, QUERY_AXIS, VALUE_AXIS};

/// Everything the page and the CLI show about a stage besides its numbers (sent to the page as JSON).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "protocol.d.ts"))]
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
    /// The cells above the diagonal (j > i) get no weight: the causal mask removes them (in the logits and the
    /// weights, and the terms and skew leftovers that would have fed them). They are drawn grey ("no weight")
    /// and left out of the colour range, as padded keys are.
    pub masked_above: bool,
    /// The cells at |j − i| ≥ this get no weight: a sliding window masks them (drawn grey, left out of the colour
    /// range, as `masked_above`'s); `None` without a window or in a stage the mask does not touch.
    pub masked_window: Option<usize>,
    /// The cells outside the query's chunk of this many positions get no weight (Llama 4's chunked attention,
    /// drawn grey as `masked_window`'s); `None` without chunks or in a stage the mask does not touch.
    pub masked_chunk: Option<usize>,
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
    /// The layer has a sink logit per head (gpt-oss): the sink's share of each query's weight.
    pub sinks: bool,
    /// DeBERTa's terms the layer adds (its `deberta_terms`), each a stage; BERT's query term (`c2p`) and key term
    /// (`p2c`, with relative_key_query).
    pub c2p: bool,
    pub p2c: bool,
    /// Transformer-XL's segment term EF (a layer with segments).
    pub ef: bool,
}

impl Present {
    /// The fullest layer of a scheme: a^V on or off (`values`; the value buckets with it, the efficient
    /// implementation), the skew's steps when the scheme skews (as many queries as keys).
    fn fullest(method: Method, values: bool) -> Present {
        Present {
            method,
            rel_v: values,
            value_buckets: values,
            skew: method.skews(),
            sinks: false,
            c2p: method.has_term_stages(),
            p2c: method.has_term_stages(),
            ef: method.shifts(),
        }
    }

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
            Stage::SinkShare => self.sinks,
            Stage::SkewQer | Stage::SkewPadded | Stage::SkewReshaped | Stage::SkewSliced => self.skew,
            Stage::C2p => self.c2p,
            Stage::P2c => self.p2c,
            Stage::XlBdRelative | Stage::XlBd => m.shifts(),
            Stage::XlEf => self.ef,
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
        // The schemes whose layers can have it, and what else it needs.
        let having: Vec<&str> = Method::ALL.into_iter().filter(|m| Present::fullest(*m, m.has_value_term()).has(stage)).map(Method::label).collect();
        let needs = match stage {
            Stage::SkewQer | Stage::SkewPadded | Stage::SkewReshaped | Stage::SkewSliced => " (efficient, with as many queries as keys)",
            Stage::RelV | Stage::OutputRelative => " (with a^V on)",
            Stage::ValueBuckets => " (with a^V on, efficient)",
            Stage::C2p | Stage::P2c => " (with the term among its deberta_terms or bert_terms)",
            Stage::XlEf => " (with segments)",
            _ => "",
        };
        let schemes = match having.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => "no".into(),
        };
        let why =
            if stage == Stage::SinkShare { "only a layer given sinks (gpt-oss) has it".to_string() } else { format!("only {schemes} layers have it{needs}") };
        Err(Error::invalid("stage", format!("'{stage}'"), why))
    }
}

/// The kinds of layer whose stages are described differently: each scheme, masked or not when its texts
/// differ, and Shaw's with its value term.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Variant {
    method: Method,
    causal: bool,
    values: bool,
}

impl Variant {
    /// Every variant: a scheme once, or masked and unmasked when they are described differently, and with
    /// its value term when it has one.
    fn all() -> Vec<Variant> {
        let mut out = Vec::new();
        for method in Method::ALL {
            for causal in if Variant::by_masking(method) { vec![true, false] } else { vec![false] } {
                out.push(Variant { method, causal, values: false });
            }
            if method.has_value_term() {
                out.push(Variant { method, causal: false, values: true });
            }
        }
        out
    }

    /// A layer of this variant.
    fn config(self) -> Config {
        Config { method: self.method, causal: self.causal, rel_v: self.values, ..Config::default() }
    }

    /// Whether the scheme describes its stages differently masked and unmasked.
    fn by_masking(method: Method) -> bool {
        Stage::ALL.into_iter().any(|s| method.describe(s, true) != method.describe(s, false))
    }

    fn label(self) -> String {
        match (self.values, Variant::by_masking(self.method), self.causal) {
            (true, _, _) => format!("{} with a^V", self.method.label()),
            (false, true, true) => format!("{}, causal", self.method.label()),
            (false, true, false) => format!("{}, bidirectional", self.method.label()),
            (false, false, _) => self.method.label().to_string(),
        }
    }
}

/// What every layer says in a stage that is not its scheme's (`None`: a stage of some scheme's own).
fn common_text(stage: Stage, values: bool) -> Option<StageText> {
    Some(match stage {
        Stage::Distances => StageText::new(
            "Relative distance j − i",
            "d_ij = j − i",
            r"d_{ij} = j - i",
            "Every diagonal holds one distance: the key is that many positions after (right of) the query, or before it when negative. Everything relative attention adds is read along these diagonals.",
        ),
        Stage::Weights => StageText::new(
            "Attention weights",
            "α_ij = softmax_j(e_ij)",
            r"\alpha_{ij} = \operatorname{softmax}_j(e_{ij}) = \frac{\exp e_{ij}}{\sum_{l} \exp e_{il}}",
            "Each row sums to 1. Look for diagonals: a head that has learned (or been built) to look a fixed distance back shows a bright stripe.",
        ),
        Stage::SinkShare => StageText::new(
            "The sink's share",
            "1 − Σ_j α_ij = exp(s_h) / (exp(s_h) + Σ_j exp(e_ij))",
            r"1 - \sum_j \alpha_{ij} = \frac{\exp s_h}{\exp s_h + \sum_j \exp e_{ij}}",
            "What each query gives the head's sink (its learned logit s_h, a key with no value): the weight the keys do not get. A query whose keys all score low gives most of it to the sink and adds little to the output.",
        )
        .on("the sink", QUERY_AXIS),
        Stage::OutputContent => StageText::new(
            "Output, content part αV",
            "Σ_j α_ij v_j",
            r"\sum_j \alpha_{ij}\, v_j",
            "The usual attention output, Σ α v: what the attended tokens carry.",
        ),
        Stage::Output => StageText::new(
            "Output",
            if values { "concat_h(z_h) W_o + b_o, z_h = Σ_j α_ij (v_j + a^V_ij)" } else { "concat_h(z_h) W_o + b_o, z_h = Σ_j α_ij v_j" },
            if values {
                r"z = \operatorname{concat}_h\bigl(z^{h}\bigr)\, W^O + b^O, \qquad z^{h}_i = \sum_j \alpha_{ij}\,\bigl(v_j + a^V_{ij}\bigr)"
            } else {
                r"z = \operatorname{concat}_h\bigl(z^{h}\bigr)\, W^O + b^O, \qquad z^{h}_i = \sum_j \alpha_{ij}\, v_j"
            },
            "Every head's output side by side, projected by W_o: the layer's answer for each position.",
        ),
        Stage::ContentLogits => StageText::new(
            "Content logits QKᵀ",
            "q_i · k_j",
            r"q_i \cdot k_j = (x_i W^Q)\,(x_j W^K)^{\top}",
            "What the tokens say about each other, whatever their positions: with a sentence, a repeated word gives equal rows and columns here.",
        ),
        _ => return None,
    })
}

/// The content logits of a layer that leaves the content term out.
const CONTENT_OFF: StageText = StageText::new(
    "Content logits (off)",
    "0: the relative term only",
    r"q_i \cdot k_j \ \text{left out: } 0",
    "The content term is left out: these are zeros, so the weights below come from relative positions alone.",
);

/// The logits of a layer with a vector table that leaves the content term out.
const LOGITS_CONTENT_OFF: StageText = StageText::new(
    LOGITS_TITLE,
    "relative_ij / √d_head, −∞ where masked (no content term)",
    r"e_{ij} = \frac{\text{relative}_{ij}}{\sqrt{d_h}} \quad (-\infty \text{ where masked; no content term})",
    "The relative term alone (the content term is left out), scaled by 1/√d_head; masked cells are −∞ and get weight 0.",
);

/// The logits of a layer whose logits are not scaled ([`LogitScale::None`], as T5 computes them).
const LOGITS_UNSCALED: StageText = StageText::new(
    "Masked logits (not scaled)",
    "q_i·k_j + relative_ij (not scaled), −∞ where masked",
    r"e_{ij} = q_i \cdot k_j + \text{relative}_{ij} \quad (\text{no } 1/\sqrt{d_h}; -\infty \text{ where masked})",
    "Not scaled by 1/√d_head (logit scale none, as T5 computes its logits: the scale is folded into the initialisation of W_q): the content term and the scheme's relative term or bias added as they are; masked cells are −∞ and get weight 0.",
);

/// The logits of a layer scaled by a model's own factor or soft-capped (Gemma 2 and 3): the scale and cap are
/// stated with the layer's options.
const LOGITS_MODEL_SCALE: StageText = StageText::new(
    "Scaled, capped, masked logits",
    "cap(s · (q_i·k_j + relative_ij)), cap(e) = c·tanh(e / c) where capped, s the layer's scale; −∞ where masked",
    r"e_{ij} = c \tanh\!\left(\frac{s\,(q_i \cdot k_j + \text{relative}_{ij})}{c}\right) \quad (-\infty \text{ where masked})",
    "The products scaled by the layer's own factor s (its logit scale, stated with the layer: not always 1/√d_head) and, where the model caps them, squashed into (−c, c) by c·tanh(e / c), so that no key can take every weight; masked cells are −∞ and get weight 0.",
);

/// The weights of a layer with a sink per head (gpt-oss): the sink takes the rest of each row.
const WEIGHTS_WITH_SINKS: StageText = StageText::new(
    "Attention weights",
    "α_ij = exp(e_ij) / (exp(s_h) + Σ_l exp(e_il))",
    r"\alpha_{ij} = \frac{\exp e_{ij}}{\exp s_h + \sum_{l} \exp e_{il}}",
    "Each row sums to less than 1: the head's sink logit s_h joins the softmax and takes the rest (the sink's share). Look for diagonals: a head that looks a fixed distance back shows a bright stripe.",
);

/// What a layer says in a stage: its scheme's text, the content term's absence, the logits' missing scale, a
/// model's own scale or cap, or what every layer says.
fn text(stage: Stage, cfg: &Config) -> StageText {
    let in_x = (cfg.positions_in_x && cfg.method.adds_to_input()).then(|| absolute::describe_in_x(stage)).flatten();
    match stage {
        Stage::Logits if cfg.softcap.is_some() || matches!(cfg.logit_scale, LogitScale::Factor(_)) => LOGITS_MODEL_SCALE,
        Stage::Logits if cfg.logit_scale == LogitScale::None => LOGITS_UNSCALED,
        Stage::ContentLogits if !cfg.content => CONTENT_OFF,
        Stage::Logits if !cfg.content && cfg.method.has_vector_table() => LOGITS_CONTENT_OFF,
        _ if in_x.is_some() => in_x.expect("checked"),
        _ => cfg
            .method
            .describe(stage, cfg.causal)
            .or_else(|| common_text(stage, cfg.has_rel_v()))
            // A stage another scheme shapes, asked of a layer that does not have it: that scheme's text.
            .or_else(|| Method::ALL.into_iter().find_map(|m| m.describe(stage, cfg.causal)))
            .expect("every stage is every layer's or some scheme's (tests: every_stage_says_what_to_notice)"),
    }
}

/// The stage's usual (x, y) axis labels, where its scheme names none.
fn usual_axes(stage: Stage) -> (&'static str, &'static str) {
    match stage {
        Stage::RelK | Stage::RelV => ("component of the row (d_head)", "table row r"),
        Stage::OutputContent | Stage::OutputRelative => (VALUE_AXIS, QUERY_AXIS),
        Stage::Output => (FEATURE_AXIS, QUERY_AXIS),
        _ => (KEY_AXIS, QUERY_AXIS),
    }
}

impl Stage {
    /// The stage's title, formulas and axes for a layer (its method, masking, a^V and content term decide the
    /// text); `per_head_tables`: the relative tables differ by head.
    pub fn meta(self, cfg: &Config, per_head_tables: bool) -> StageMeta {
        self.meta_in(cfg, per_head_tables, false, false)
    }

    /// [`Stage::meta`] of a layer whose RoPE table is a model's own when `given_rope` (a captured layer's cos
    /// and sin): its angles and kernel say so ([`crate::positions::rope::describe_given`]); with `sinks`, its
    /// weights say that a row's sum is less than 1.
    pub fn meta_in(self, cfg: &Config, per_head_tables: bool, given_rope: bool, sinks: bool) -> StageMeta {
        let given = (given_rope && cfg.method.rotates()).then(|| rope::describe_given(self)).flatten();
        let sunk = (sinks && self == Stage::Weights).then_some(WEIGHTS_WITH_SINKS);
        let text = given.or(sunk).unwrap_or_else(|| text(self, cfg));
        let (x_axis, y_axis) = text.axes.unwrap_or_else(|| usual_axes(self));
        // Stages of the positions alone: one figure shared by every head and batch element (the slopes'
        // column lists every head's). The output, every head's concatenated and projected, is per batch element.
        let positional = matches!(self, Stage::Distances | Stage::RelIndex | Stage::Slopes | Stage::RopeAngles | Stage::RopeKernel | Stage::Positions);
        let is_table = matches!(self, Stage::RelK | Stage::RelV);
        StageMeta {
            name: self.name(),
            title: text.title,
            formula: text.formula,
            tex: text.tex,
            notice: text.notice,
            x_axis,
            y_axis,
            pairs: x_axis == KEY_AXIS && y_axis == QUERY_AXIS,
            rows_are_queries: y_axis == QUERY_AXIS,
            masked_above: cfg.causal && self.masked_when_causal(),
            masked_window: cfg.window.filter(|_| self.masked_when_causal()),
            masked_chunk: cfg.chunk.filter(|_| self.masked_when_causal()),
            per_head: if is_table { per_head_tables } else { !positional && self != Stage::Output },
            per_batch: !is_table && !positional,
            scale: self.scale(),
        }
    }
}

/// The book's table of stages (docs/src/math.md): name, title, formula and axes of each, by variant where they differ (a
/// stage a variant does not have is left out of its line).
pub fn markdown_table() -> String {
    let mut out = String::from("| stage | title | formula | axes (x; y) |\n|---|---|---|---|\n");
    let escape = |s: &str| s.replace('|', "\\|");
    for stage in Stage::ALL {
        let metas: Vec<(Variant, StageMeta)> =
            Variant::all().into_iter().filter(|v| stage.exists_in(*v)).map(|v| (v, stage.meta(&v.config(), false))).collect();
        // A stage of what a model adds to any scheme (the sink's share) belongs to no variant: it is in the
        // book's section on today's models.
        if metas.is_empty() {
            continue;
        }
        // One column: its text when every variant agrees, else each text after the variants that have it.
        let column = |f: &dyn Fn(&StageMeta) -> String| {
            let mut groups: Vec<(Vec<String>, String)> = Vec::new();
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
    /// Whether the causal mask takes the weight of this stage's cells above the diagonal: the pairs' logits
    /// and weights and the terms that make them (content, relative, the skew's slice); not the distances,
    /// rows or kernels, which say what a pair would read.
    pub fn masked_when_causal(self) -> bool {
        matches!(
            self,
            Stage::ContentLogits
                | Stage::RelativeLogits
                | Stage::SkewSliced
                | Stage::C2p
                | Stage::P2c
                | Stage::XlBd
                | Stage::XlEf
                | Stage::Logits
                | Stage::Weights
        )
    }

    /// Whether a layer of this variant has the stage (skew steps: a scheme that skews; w^V stages: a value term).
    fn exists_in(self, v: Variant) -> bool {
        Present::fullest(v.method, v.values).has(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The book's table (docs/src/math.md) is this module's, between its two markers; run with
    /// `RELATTN_WRITE_DOCS=1` to update it.
    #[test]
    fn book_table_is_the_stage_metadata() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/src/math.md");
        let page = std::fs::read_to_string(path).unwrap();
        let (begin, end) = ("<!-- stages: generated by crates/relattn-core/src/layer/stage_meta.rs -->\n", "<!-- /stages -->");
        let (Some(a), Some(b)) = (page.find(begin), page.find(end)) else { panic!("docs/src/math.md has no '{begin}' … '{end}' block") };
        let table = markdown_table();
        if page[a + begin.len()..b] != table {
            if std::env::var_os("RELATTN_WRITE_DOCS").is_some() {
                std::fs::write(path, format!("{}{table}{}", &page[..a + begin.len()], &page[b..])).unwrap();
            } else {
                panic!("docs/src/math.md's stage table differs from stage_meta.rs; run with RELATTN_WRITE_DOCS=1 to rewrite it:\n{table}");
            }
        }
    }

    #[test]
    fn names_parse_back_and_pairs_are_query_by_key() {
        for s in Stage::ALL {
            assert_eq!(s.name().parse::<Stage>().unwrap(), s);
        }
        let shaw = Config { rel_v: true, ..Config::default() };
        let music = Config { method: Method::Music, causal: true, ..Config::default() };
        let pairs: Vec<&str> = Stage::ALL.iter().filter(|s| s.meta(&shaw, false).pairs).map(|s| s.name()).collect();
        assert_eq!(
            pairs,
            ["distances", "rel_index", "rope_kernel", "content_logits", "skew_sliced", "c2p", "p2c", "bd", "ef", "relative_logits", "logits", "weights"]
        );
        assert!(!Stage::Output.meta(&shaw, false).per_head && Stage::Output.meta(&shaw, false).per_batch);
        assert!(Stage::RelK.meta(&music, true).per_head && !Stage::RelK.meta(&music, false).per_head);
        assert!("attention".parse::<Stage>().is_err());
    }

    /// A stage the layer has not is refused with the schemes whose layers have it, read from the schemes.
    #[test]
    fn a_missing_stage_names_the_schemes_that_have_it() {
        let rope = Present { method: Method::Rope, rel_v: false, value_buckets: false, skew: false, sinks: false, c2p: false, p2c: false, ef: false };
        assert!(rope.check(Stage::RotatedQ).is_ok());
        let said = |s: Stage| rope.check(s).unwrap_err().to_string();
        assert!(
            said(Stage::RelIndex).contains("only Shaw et al. 2018, Music Transformer, T5 buckets, DeBERTa, BERT relative and Transformer-XL layers have it"),
            "{}",
            said(Stage::RelIndex)
        );
        assert!(said(Stage::P2c).contains("only DeBERTa and BERT relative layers have it (with the term"), "{}", said(Stage::P2c));
        assert!(said(Stage::XlEf).contains("only Transformer-XL layers have it (with segments)"), "{}", said(Stage::XlEf));
        assert!(said(Stage::SkewSliced).contains("only Music Transformer layers have it (efficient"), "{}", said(Stage::SkewSliced));
        assert!(said(Stage::Slopes).contains("only ALiBi layers have it"), "{}", said(Stage::Slopes));
        assert!(said(Stage::RelV).contains("only Shaw et al. 2018 layers have it (with a^V on)"), "{}", said(Stage::RelV));
        assert!(said(Stage::SinkShare).contains("only a layer given sinks (gpt-oss) has it"), "{}", said(Stage::SinkShare));
    }

    /// Every stage of every variant says what to notice, in a few sentences; leaving the content term out
    /// changes what the content logits say.
    #[test]
    fn every_stage_says_what_to_notice() {
        for v in Variant::all() {
            for stage in Stage::ALL.into_iter().filter(|s| s.exists_in(v)) {
                let n = stage.meta(&v.config(), false).notice;
                assert!(n.len() > 60 && n.len() < 400 && n.ends_with('.'), "{} ({}): {n:?}", stage.name(), v.label());
            }
        }
        let off = Config { content: false, ..Config::default() };
        assert!(Stage::ContentLogits.meta(&off, false).notice.contains("left out"));
        // Unscaled logits say so, for every scheme; scaled ones name the scale.
        for method in Method::ALL {
            let unscaled = Config { method, logit_scale: LogitScale::None, ..Config::default() };
            assert!(Stage::Logits.meta(&unscaled, false).notice.starts_with("Not scaled by 1/√d_head"), "{method}");
            assert_eq!(Stage::Logits.meta(&unscaled, false).title, "Masked logits (not scaled)", "{method}");
            assert!(Stage::Logits.meta(&Config { method, ..Config::default() }, false).notice.contains("1/√d_head"), "{method}");
        }
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
        assert!(Stage::Output.meta(&Config { rel_v: true, ..Config::default() }, false).formula.contains("a^V"));
        assert!(!Stage::Output.meta(&Config { rel_v: false, ..Config::default() }, false).formula.contains("a^V"));
    }
}
