//! A layer's options, one type for every front end: the command line reads it as flags (`--rope-base`,
//! clap's derive), Python as keywords (`rope_base=`) and the page as the fields of its requests and links
//! (`rope_base`, serde; its JavaScript type by ts-rs), one spelling each up to `-`/`_`. Every option is
//! optional: an unset one comes from the preset, if any, else from the defaults ([`Config::default`],
//! [`Spec::default`]). [`LayerOptions::resolve`] is the one place that checks them, against [`Limits`] that
//! each front end passes (the page's are a browser's; the command line and Python check the memory a layer
//! needs instead), each refusal naming its option.
//!
//! Adding an option: one field here with its doc (which is the CLI's help, the page's type comment and the
//! Python docs), read in [`LayerOptions::resolve`] and written in [`LayerOptions::of`]; for the page, one
//! control in www/index.html whose id is the field's name.

use relattn_core::attention::{Config, Implementation, LogitScale};
use relattn_core::error::{Error, Result};
use relattn_core::layer::presets;
use relattn_core::layer::scenario::{Arrays, Spec};
use relattn_core::positions::bert_relative::{self, BertTerms};
use relattn_core::positions::deberta::{self, Terms};
use relattn_core::positions::rope::{self, PairLayout, Rope};
use relattn_core::positions::t5::Buckets;
use relattn_core::positions::table::Edge;
use relattn_core::positions::transformer_xl;
use relattn_core::positions::Method;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Keys a request carried that [`LayerOptions`] (or the struct around it) does not name: serde-wasm-bindgen
/// reads only the fields a struct names, so `deny_unknown_fields` would not see them; a flattened map sees
/// every key, and the front end refuses the request naming them.
pub type Unknown = BTreeMap<String, IgnoredAny>;

/// The options. Numbers are f64, as a form, a link or Python gives them, so that a negative, fractional or
/// empty (NaN) one is refused by [`LayerOptions::resolve`] with its name, never by a parser.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(default)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts", optional_fields))]
pub struct LayerOptions {
    /// Start from a preset (the seeds' examples): seed000-shaw, seed000-music, seed002, seed003, seed004,
    /// built-heads, …; the options given beside it replace the preset's.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// shaw (Shaw et al. 2018), music (Music Transformer skew), rope (rotary), alibi (linear bias), t5
    /// (bucketed bias), absolute (sinusoids added to x), deberta (DeBERTa's disentangled c2p and p2c terms),
    /// bert_relative (BERT's relative_key and relative_key_query: q·a and k·a of one distance table) or
    /// transformer_xl (Transformer-XL / XLNet: biases u and v, projected sinusoids, rel_shift). [default: shaw]
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<Method>,
    /// Sequence length, 1 or more (when x is not given). [default: 8]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<f64>,
    /// Model width, 1 or more, a multiple of heads (when x is not given). [default: 16]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub d_model: Option<f64>,
    /// Number of heads, 1 or more; must divide d_model. [default: 1]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heads: Option<f64>,
    /// Shaw and the Music Transformer only: clipping distance k ≥ 0 (Shaw's tables have 2k+1 rows; Music's E_r
    /// k+1 causal, 2k+1 bidirectional). [default: 2]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clip: Option<f64>,
    /// Sequences in the batch, 1 or more (when x is not given). [default: 1]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<f64>,
    /// Seed of every generated tensor (ChaCha8), 0 or more. [default: 0]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<f64>,
    /// Mask keys after the query. [default: false]
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub causal: Option<bool>,
    /// Shaw's relative value term a^V (the other schemes have none). [default: true]
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relative_values: Option<bool>,
    /// One learned table per head instead of one shared by all heads (Shaw's, E_r, T5's biases; generated
    /// tables only). [default: false]
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_head_tables: Option<bool>,
    /// Leave the content term q_i · k_j out of the logits: what the relative positions do alone.
    /// [default: false]
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relative_only: Option<bool>,
    /// What the logits are multiplied by before a bias and the softmax: inv_sqrt_d_head (1/√d_head, as in
    /// every scheme's paper), none (T5's own logits, whose scale is folded into its initialisation) or a
    /// factor above 0 up to 1e4 (a number on the command line, {"factor": f} in a request: Gemma's
    /// query_pre_attn_scalar^(−1/2)). [default: inv_sqrt_d_head]
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logit_scale: Option<LogitScale>,
    /// A sliding window: keys at |j − i| ≥ window are masked (with causal, each query sees itself and the
    /// window − 1 keys before it, as Mistral's and Gemma's local layers), a whole number ≥ 1; 0: no window.
    /// [default: 0]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<f64>,
    /// Chunked attention (Llama 4): keys outside the query's chunk of this many positions are masked (with
    /// causal, each query sees the keys of its chunk up to itself), a whole number ≥ 1; 0: no chunks.
    /// [default: 0]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<f64>,
    /// Logit soft-capping c (Gemma 2): each logit becomes c·tanh(e / c) after the scale and any bias, above 0
    /// up to 1e4; 0: no cap. [default: 0]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub softcap: Option<f64>,
    /// ε of the RMS norms of q and k, for a layer given q_norm and k_norm (Qwen3, Gemma 3, OLMo 2), from 0 up
    /// to 1. [default: 1e-6]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub norm_eps: Option<f64>,
    /// Music Transformer only: what distances beyond E_r read: zero (tensor2tensor) or clip (the edge row).
    /// [default: zero]
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge: Option<Edge>,
    /// efficient (gather and skew) or materialized (the seeds' n × n × d_head tensor; same numbers).
    /// [default: efficient]
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub implementation: Option<Implementation>,
    /// RoPE only: θ_p = base^(−2p/d_rot), above 1 up to 1e9. [default: 10000]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rope_base: Option<f64>,
    /// RoPE only: the rotated share of d_head (GPT-NeoX's rotary_pct), above 0 up to 1. [default: 1]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rope_fraction: Option<f64>,
    /// RoPE only: pairs (2p, 2p+1) as the paper and GPT-J (interleaved) or (p, p + d_rot/2) as GPT-NeoX and Llama
    /// (half). [default: interleaved]
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rope_layout: Option<PairLayout>,
    /// RoPE only: positions divided by this (linear interpolation), 0.01 to 1000. [default: 1]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rope_scale: Option<f64>,
    /// T5 only: number of buckets, 2 (4 and even bidirectional) to 1024. [default: 32]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t5_buckets: Option<f64>,
    /// T5 only: distances from this on share the last bucket; above the exact buckets, up to 1048576.
    /// [default: 128]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t5_max_distance: Option<f64>,
    /// DeBERTa only: log buckets of δ = i − j (256 in DeBERTa-v3), 2 to 65536; 0: none, δ clipped at
    /// ±max_relative_positions. [default: 256]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position_buckets: Option<f64>,
    /// DeBERTa only: the distance the log buckets reach (above position_buckets / 2 + 1), or the clipping distance
    /// without buckets (1 or more); at most 65536. [default: 512]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_relative_positions: Option<f64>,
    /// DeBERTa only: the position terms added, both (c2p|p2c: content to position and position to content), c2p
    /// or p2c. [default: both]
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deberta_terms: Option<Terms>,
    /// BERT relative only: P, Hugging Face's max_position_embeddings: a table of 2P − 1 distance vectors, and
    /// sequences of at most P positions (no clipping), 1 to 65536. [default: 512]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_position: Option<f64>,
    /// BERT relative only: key (position_embedding_type relative_key: q_i·a_ij) or key_query (relative_key_query:
    /// q_i·a_ij + k_j·a_ij). [default: key]
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bert_terms: Option<BertTerms>,
    /// Transformer-XL only: XLNet's segment term EF, 0 to 65536: 0 for none; otherwise the positions carry
    /// segment ids (a scenario file's `segment_ids`, or n positions cut into this many equal runs). Its clamp of
    /// i − j is `clip`. [default: 0]
    #[arg(long, allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<f64>,
    /// Absolute positions only: x already holds them (a captured model's layer: GPT-2, OPT and BERT add their
    /// learned positions at the embedding, before layer 0); the positions stage shows them (the model's table,
    /// given as `positions`) and attention reads x as given. [default: false]
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub positions_in_x: Option<bool>,
    /// Keys given that are not options (refused by name).
    #[arg(skip)]
    #[serde(flatten, skip_serializing)]
    #[cfg_attr(test, ts(skip))]
    pub unknown: Unknown,
}

/// The largest sizes a front end computes; the smallest are the same everywhere (n, d_model, heads and the
/// batch at least 1, k at least 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub n: usize,
    pub d_model: usize,
    pub heads: usize,
    pub clip: usize,
    pub batch_size: usize,
    pub seed: u64,
}

impl Limits {
    /// No size limit (the command line and Python refuse a layer by the memory it needs instead); seeds up to
    /// 2⁵³ − 1, the whole numbers a float (and a JavaScript number) holds exactly.
    pub const NONE: Limits = Limits { n: usize::MAX, d_model: usize::MAX, heads: usize::MAX, clip: usize::MAX, batch_size: usize::MAX, seed: MAX_SEED };
}

/// The largest seed: 2⁵³ − 1.
pub const MAX_SEED: u64 = (1 << 53) - 1;

/// The options resolved: the layer, the sizes of what is generated, the preset's arrays and whether the
/// tables are per head.
pub struct Resolved {
    pub config: Config,
    pub spec: Spec,
    pub arrays: Arrays,
    pub per_head_tables: bool,
}

/// `v` as a whole number in `lo..=hi` (`hi` usize::MAX: no upper bound), or an error naming `field`.
pub fn whole(field: &str, v: f64, lo: usize, hi: usize) -> Result<usize> {
    // As u64: on wasm32 usize::MAX is u32::MAX, a real bound there (the page's largest seed), not "none".
    whole_u64(field, v, lo as u64, hi as u64).map(|w| w as usize)
}

/// `v` as a whole number in `lo..=hi` (`hi` u64::MAX: no upper bound), or an error naming `field`.
fn whole_u64(field: &str, v: f64, lo: u64, hi: u64) -> Result<u64> {
    let unbounded = hi == u64::MAX;
    // With no upper bound a huge v saturates, which the memory check then refuses.
    let fits = v.is_finite() && v.fract() == 0.0 && v >= lo as f64 && (unbounded || v <= hi as f64);
    if !fits {
        let given = match v {
            v if v.is_nan() => "nothing (not a number)".into(),
            v if v.is_infinite() => format!("{}∞ (not a number: too large to hold)", if v < 0.0 { "−" } else { "" }),
            v => format!("{v}"),
        };
        let allowed = if unbounded { format!("a whole number ≥ {lo}") } else { format!("a whole number in {lo}..={hi}") };
        return Err(Error::invalid(field, given, allowed));
    }
    Ok(v as u64)
}

impl LayerOptions {
    /// Every option's name, in the order of the fields: clap's argument ids, which are the fields' names, as
    /// serde's and ts-rs's are (tests/options.rs).
    pub fn names() -> Vec<String> {
        use clap::Args;
        LayerOptions::augment_args(clap::Command::new("options")).get_arguments().map(|a| a.get_id().to_string()).collect()
    }

    /// The options given here that `method` does not read (Shaw's `clip` with RoPE, RoPE's with T5, …): accepted,
    /// and said (the command line's JSON summary), never silently ignored.
    pub fn unread(&self, method: Method) -> Vec<String> {
        // The options given are the ones that serialize (an unset one is skipped).
        let given = serde_json::to_value(self).expect("options serialize");
        LayerOptions::names().into_iter().filter(|name| given.get(name).is_some() && !method.reads_option(name)).collect()
    }

    /// The options that describe a resolved computation: every one set, no preset.
    pub fn of(cfg: &Config, spec: &Spec, per_head_tables: bool) -> LayerOptions {
        LayerOptions {
            preset: None,
            method: Some(cfg.method),
            n: Some(spec.n as f64),
            d_model: Some(spec.d_model as f64),
            heads: Some(cfg.heads as f64),
            clip: Some(cfg.clip as f64),
            batch_size: Some(spec.batch as f64),
            seed: Some(spec.seed as f64),
            causal: Some(cfg.causal),
            relative_values: Some(cfg.rel_v),
            per_head_tables: Some(per_head_tables),
            relative_only: Some(!cfg.content),
            logit_scale: Some(cfg.logit_scale),
            window: Some(cfg.window.unwrap_or(0) as f64),
            chunk: Some(cfg.chunk.unwrap_or(0) as f64),
            softcap: Some(cfg.softcap.unwrap_or(0.0) as f64),
            norm_eps: Some(cfg.norm_eps as f64),
            edge: Some(cfg.edge),
            implementation: Some(cfg.implementation),
            rope_base: Some(cfg.rope.base as f64),
            rope_fraction: Some(cfg.rope.fraction as f64),
            rope_layout: Some(cfg.rope.layout),
            rope_scale: Some(cfg.rope.scale as f64),
            t5_buckets: Some(cfg.buckets.count as f64),
            t5_max_distance: Some(cfg.buckets.max_distance as f64),
            position_buckets: Some(cfg.deberta.position_buckets as f64),
            max_relative_positions: Some(cfg.deberta.max_relative_positions as f64),
            deberta_terms: Some(cfg.deberta.terms),
            max_position: Some(cfg.bert.max_position as f64),
            bert_terms: Some(cfg.bert.terms),
            segments: Some(cfg.xl.segments as f64),
            positions_in_x: Some(cfg.positions_in_x),
            unknown: Unknown::new(),
        }
    }

    /// The configuration, sizes and the preset's arrays, each option checked against its range and `limits`
    /// (an unknown key is refused first, as field "option"). Ranges that depend on each other or on the
    /// tensors (heads dividing d_model, RoPE's pairs, T5's buckets, a file's x) are checked when the scenario
    /// is built ([`relattn_core::layer::scenario::check_config`]).
    pub fn resolve(&self, limits: &Limits) -> Result<Resolved> {
        if let Some(name) = self.unknown.keys().next() {
            return Err(Error::invalid("option", format!("'{name}'"), LayerOptions::names().join(", ")));
        }
        let (mut cfg, mut spec, arrays, mut per_head_tables) = match &self.preset {
            Some(name) if !name.is_empty() => {
                let p = presets::preset(name)?;
                (p.config, p.spec, p.arrays, p.per_head_tables)
            }
            _ => (Config::default(), Spec::default(), Arrays::new(), false),
        };
        cfg.method = self.method.unwrap_or(cfg.method);
        if let Some(n) = self.n {
            spec.n = whole("n", n, 1, limits.n)?;
        }
        if let Some(d) = self.d_model {
            spec.d_model = whole("d_model", d, 1, limits.d_model)?;
        }
        if let Some(h) = self.heads {
            cfg.heads = whole("heads", h, 1, limits.heads)?;
        }
        if let Some(k) = self.clip {
            cfg.clip = whole("clip", k, 0, limits.clip)?;
        }
        if let Some(b) = self.batch_size {
            spec.batch = whole("batch_size", b, 1, limits.batch_size)?;
        }
        if let Some(s) = self.seed {
            spec.seed = whole_u64("seed", s, 0, limits.seed.min(MAX_SEED))?;
        }
        cfg.causal = self.causal.unwrap_or(cfg.causal);
        cfg.rel_v = self.relative_values.unwrap_or(cfg.rel_v);
        per_head_tables = self.per_head_tables.unwrap_or(per_head_tables);
        cfg.content = !self.relative_only.unwrap_or(!cfg.content);
        cfg.logit_scale = self.logit_scale.map(LogitScale::checked).transpose()?.unwrap_or(cfg.logit_scale);
        if let Some(w) = self.window {
            cfg.window = Some(whole("window", w, 0, usize::MAX)?).filter(|&w| w > 0);
        }
        if let Some(c) = self.chunk {
            cfg.chunk = Some(whole("chunk", c, 0, usize::MAX)?).filter(|&c| c > 0);
        }
        if let Some(c) = self.softcap {
            if !(c.is_finite() && (0.0..=1e4).contains(&c)) {
                return Err(Error::invalid("softcap", c, "0 (no cap), or above 0 up to 1e4"));
            }
            cfg.softcap = Some(c as f32).filter(|&c| c > 0.0);
        }
        if let Some(eps) = self.norm_eps {
            if !(eps.is_finite() && (0.0..=1.0).contains(&eps)) {
                return Err(Error::invalid("norm_eps", eps, "from 0 up to 1"));
            }
            cfg.norm_eps = eps as f32;
        }
        cfg.edge = self.edge.unwrap_or(cfg.edge);
        cfg.implementation = self.implementation.unwrap_or(cfg.implementation);
        cfg.positions_in_x = self.positions_in_x.unwrap_or(cfg.positions_in_x);
        // RoPE's numbers are ranged by the scheme's own check (Rope::check, when the scenario is built), T5's
        // below by Buckets::check.
        // Where the method reads them, their ranges are checked here on the f64 too: 1000000001 rounds to
        // float32's 1e9, within the range.
        let method = cfg.method;
        let rope = &mut cfg.rope;
        let float = |name: &str, v: Option<f64>, default: f32, (lo, hi): (f32, f32), open_low: bool| match v {
            None => Ok(default),
            Some(v) if !method.reads_option(name) => Ok(v as f32),
            Some(v) if v.is_finite() && (if open_low { v > lo as f64 } else { v >= lo as f64 }) && v <= hi as f64 => Ok(v as f32),
            Some(v) => Err(Error::invalid(name, v, format!("{} {lo} to {hi}", if open_low { "above" } else { "from" }))),
        };
        *rope = Rope {
            base: float("rope_base", self.rope_base, rope.base, rope::BASE_RANGE, true)?,
            fraction: float("rope_fraction", self.rope_fraction, rope.fraction, (0.0, 1.0), true)?,
            layout: self.rope_layout.unwrap_or(rope.layout),
            scale: float("rope_scale", self.rope_scale, rope.scale, rope::SCALE_RANGE, false)?,
        };
        // T5's numbers must be whole; their ranges (which depend on each other and on causal) are the scheme's
        // (Buckets::check, when the scenario is built), and so is the range a refusal here states.
        if let Some(b) = self.t5_buckets {
            cfg.buckets.count = whole("t5_buckets", b, 0, usize::MAX).map_err(|_| Error::invalid("t5_buckets", b, Buckets::count_range(cfg.causal)))?;
        }
        if let Some(d) = self.t5_max_distance {
            let allowed = || cfg.buckets.distance_range(cfg.causal);
            cfg.buckets.max_distance = whole("t5_max_distance", d, 0, usize::MAX).map_err(|_| Error::invalid("t5_max_distance", d, allowed()))?;
        }
        // DeBERTa's as T5's: whole numbers here, their ranges (which depend on each other) the scheme's
        // (Deberta::check, when the scenario is built).
        if let Some(b) = self.position_buckets {
            let range = || format!("0 (no buckets) or 2 to {}", deberta::MAX_SPAN);
            cfg.deberta.position_buckets = whole("position_buckets", b, 0, usize::MAX).map_err(|_| Error::invalid("position_buckets", b, range()))?;
        }
        if let Some(m) = self.max_relative_positions {
            let allowed = || cfg.deberta.max_range();
            cfg.deberta.max_relative_positions =
                whole("max_relative_positions", m, 0, usize::MAX).map_err(|_| Error::invalid("max_relative_positions", m, allowed()))?;
        }
        cfg.deberta.terms = self.deberta_terms.unwrap_or(cfg.deberta.terms);
        // BERT's P: a whole number here, its range and the sequence's fit the scheme's (BertRelative::check and
        // check_length, when the scenario is built).
        if let Some(p) = self.max_position {
            let range = || format!("1 to {}", bert_relative::MAX_POSITION);
            cfg.bert.max_position = whole("max_position", p, 0, usize::MAX).map_err(|_| Error::invalid("max_position", p, range()))?;
        }
        cfg.bert.terms = self.bert_terms.unwrap_or(cfg.bert.terms);
        if let Some(s) = self.segments {
            cfg.xl.segments = whole("segments", s, 0, transformer_xl::MAX_SEGMENTS)?;
        }
        Ok(Resolved { config: cfg, spec, arrays, per_head_tables })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_options_come_from_the_preset_and_bad_ones_are_named() {
        let o = LayerOptions { preset: Some("seed004".into()), n: Some(6.0), ..LayerOptions::default() };
        let r = o.resolve(&Limits::NONE).unwrap();
        assert_eq!((r.config.heads, r.config.clip, r.spec.n, r.spec.batch), (3, 2, 6, 2));
        let page = Limits { n: 8192, ..Limits::NONE };
        for (o, field) in [
            (LayerOptions { n: Some(0.0), ..LayerOptions::default() }, "n"),
            (LayerOptions { n: Some(8193.0), ..LayerOptions::default() }, "n"),
            (LayerOptions { n: Some(2.5), ..LayerOptions::default() }, "n"),
            (LayerOptions { n: Some(f64::NAN), ..LayerOptions::default() }, "n"),
            (LayerOptions { n: Some(f64::INFINITY), ..LayerOptions::default() }, "n"),
            (LayerOptions { clip: Some(-1.0), ..LayerOptions::default() }, "clip"),
            (LayerOptions { heads: Some(0.0), ..LayerOptions::default() }, "heads"),
            (LayerOptions { seed: Some(2f64.powi(53)), ..LayerOptions::default() }, "seed"),
            (LayerOptions { seed: Some(1e20), ..LayerOptions::default() }, "seed"),
            (LayerOptions { t5_buckets: Some(-4.0), ..LayerOptions::default() }, "t5_buckets"),
            (LayerOptions { window: Some(-1.0), ..LayerOptions::default() }, "window"),
            (LayerOptions { window: Some(2.5), ..LayerOptions::default() }, "window"),
            (LayerOptions { softcap: Some(-3.0), ..LayerOptions::default() }, "softcap"),
            (LayerOptions { softcap: Some(f64::NAN), ..LayerOptions::default() }, "softcap"),
            (LayerOptions { norm_eps: Some(2.0), ..LayerOptions::default() }, "norm_eps"),
            (LayerOptions { logit_scale: Some(LogitScale::Factor(0.0)), ..LayerOptions::default() }, "logit_scale"),
            (LayerOptions { logit_scale: Some(LogitScale::Factor(f32::INFINITY)), ..LayerOptions::default() }, "logit_scale"),
            // Past the range as f64, within it once rounded to float32.
            (LayerOptions { method: Some(Method::Rope), rope_base: Some(1_000_000_001.0), ..LayerOptions::default() }, "rope_base"),
            (LayerOptions { method: Some(Method::Rope), rope_scale: Some(1000.00001), ..LayerOptions::default() }, "rope_scale"),
            (LayerOptions { preset: Some("nope".into()), ..LayerOptions::default() }, "preset"),
        ] {
            assert_eq!(o.resolve(&page).err().map(|e| e.field().to_string()).as_deref(), Some(field), "{o:?}");
        }
    }

    #[test]
    fn the_options_of_a_layer_resolve_to_that_layer() {
        let cfg = Config { method: Method::Rope, heads: 4, causal: true, logit_scale: LogitScale::None, content: false, ..Config::default() };
        let spec = Spec { n: 5, d_model: 32, batch: 2, seed: 9 };
        let r = LayerOptions::of(&cfg, &spec, true).resolve(&Limits::NONE).unwrap();
        assert_eq!((r.config, r.spec, r.per_head_tables), (cfg, spec, true));
        // Today's models' options: a window, a soft-cap, a factor of their own, the norms' ε.
        let cfg = Config { window: Some(5), softcap: Some(30.0), logit_scale: LogitScale::Factor(0.125), norm_eps: 1e-5, ..cfg };
        let r = LayerOptions::of(&cfg, &spec, false).resolve(&Limits::NONE).unwrap();
        assert_eq!(r.config, cfg);
    }

    /// A factor is `{"factor": f}` in a request (and a capture's options), a number on the command line.
    #[test]
    fn a_logit_scale_factor_is_spelled_in_json_and_on_the_command_line() {
        let o: LayerOptions = serde_json::from_str(r#"{"logit_scale": {"factor": 0.0625}, "window": 4096}"#).unwrap();
        let r = o.resolve(&Limits::NONE).unwrap();
        assert_eq!((r.config.logit_scale, r.config.window), (LogitScale::Factor(0.0625), Some(4096)));
        assert_eq!(serde_json::to_value(LogitScale::Factor(0.5)).unwrap(), serde_json::json!({"factor": 0.5}));
        assert_eq!("0.0625".parse::<LogitScale>().unwrap(), LogitScale::Factor(0.0625));
        assert_eq!("none".parse::<LogitScale>().unwrap(), LogitScale::None);
        assert_eq!("-2".parse::<LogitScale>().unwrap_err().field(), "logit_scale");
    }

    #[test]
    fn an_unknown_key_is_refused_by_name() {
        let o: LayerOptions = serde_json::from_str(r#"{"n": 4, "temperature": 1}"#).unwrap();
        let e = o.resolve(&Limits::NONE).err().unwrap();
        assert_eq!(e.field(), "option");
        assert!(e.to_string().contains("'temperature'") && e.to_string().contains("rope_base"), "{e}");
    }
}
