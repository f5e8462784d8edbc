//! A head atlas: what Python's `relattn.atlas(model, prompts).save(path)` writes, every layer × head of a model
//! summarised by position over a few prompts, with the whole capture of some layers. Read whole ([`Atlas::read`],
//! every member checked against the description, each refusal naming the member and what it must be), a
//! captured layer given back as a capture file's own [`TensorFile`] ([`Atlas::capture`]).
//!
//! The format, version 1 (an .npz; L rows of (part, layer), H heads per layer, N the longest prompt's length, M
//! metrics):
//!
//! ```text
//! atlas         uint8 (UTF-8 JSON)   {"format": "relattn atlas", "version": 1, "model": "tiny-llama", "family": "llama",
//!                                     "layers": [{"part": "decoder", "layer": 0, "method": "rope", "heads": 4,
//!                                                 "kv_heads": 2, "causal": true, "window": 4096}, …],
//!                                                 one per row, forward order; "window" and "chunk" only where
//!                                                 the layer has them
//!                                     "metrics": ["mean_distance", "entropy", …],           names of Metric
//!                                     "prompts": [{"n": 12, "tokens": ["<s>", …] or null}, …],
//!                                     "induction": {"n": 64, "seed": 0},    the repeated random sequence
//!                                     "offsets": N,                         j − i = −(N−1) … N−1 at index d + N − 1
//!                                     "captured": [0, 3],                   rows whose whole capture the file holds
//!                                     "notes": ["…"]}
//! metrics       float32 (M, L, H)    each metric's mean over the prompts (duplicate_token, induction: over the
//!                                    repeated random sequence)
//! metrics_std   float32 (M, L, H)    their standard deviation over the prompts (0 with one prompt)
//! profile       float32 (L, H, 2N−1) mean attention weight at offset j − i over the queries that see it; NaN where
//!                                    none does (j > i in a causal layer)
//! term          float32 (L, H, 2N−1) mean of the scheme's position term at that offset, in logit units; NaN where
//!                                    no query sees it; 0 for a layer with no position term
//! kv_head       float32 (L, H)       the K/V head serving each query head (integers)
//! band_q, band_k float32 (L, H, P)   only when some layer is RoPE: mean norm of each rotary pair of q and k
//! layer{c}.*    for each c in captured: that layer's capture file's members (layer{c}.x, layer{c}.w_q, …,
//!               layer{c}.capture: its description, uint8)
//! ```
//!
//! What each metric measures: [`Metric`]; docs/src/atlas.md.

use super::capture::{self, CaptureInfo};
use super::{read_npz, Member, MemberKind, TensorFile};
use ndarray::{ArrayD, ArrayView1, Ix2, Ix3};
use relattn_core::error::{Error, Result};
use relattn_core::layer::scenario::NAMES;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The member holding the atlas's description ([`AtlasInfo`]), which marks a file as an atlas.
pub const MEMBER: &str = "atlas";
/// The description's `format`.
pub const FORMAT: &str = "relattn atlas";
/// The one version this reader reads.
pub const VERSION: u32 = 1;
/// Most tiles (rows × heads) an atlas may have: 128 layers of 128 heads, more than any model has (a tile is drawn
/// and its tooltip kept for each).
pub const MAX_TILES: usize = 128 * 128;
/// Largest N (`offsets`, the longest prompt): the offset axis has 2N − 1 points, on every target.
pub const MAX_OFFSETS: u32 = 1 << 24;
/// The arrays of an atlas besides its description and its captures (band_q and band_k optional).
pub const ARRAYS: [&str; 7] = ["metrics", "metrics_std", "profile", "term", "kv_head", "band_q", "band_k"];

/// A metric of the atlas: per head, per prompt, averaged over the prompts. Its name is the core's
/// (`relattn_core::atlas::METRICS`, in this enum's order: a test checks it); its title and description are said
/// here only: the page and the command line show these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    MeanDistance,
    Entropy,
    UniformEntropy,
    PreviousToken,
    FirstToken,
    DuplicateToken,
    Induction,
    PositionShare,
    OffsetShare,
}

impl Metric {
    pub const ALL: [Metric; 9] = [
        Metric::FirstToken,
        Metric::PreviousToken,
        Metric::Entropy,
        Metric::MeanDistance,
        Metric::PositionShare,
        Metric::OffsetShare,
        Metric::DuplicateToken,
        Metric::Induction,
        Metric::UniformEntropy,
    ];

    /// Its name in the file's `metrics` list (and the command line's `--metric`).
    pub fn name(self) -> &'static str {
        relattn_core::atlas::METRICS[self as usize]
    }

    /// The metric named `name`, if it is one.
    pub fn named(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The names of every metric, for messages.
    pub fn names() -> String {
        Metric::ALL.map(Metric::name).join(", ")
    }

    /// Its title, short enough for a select and a tooltip line.
    pub fn title(self) -> &'static str {
        match self {
            Metric::MeanDistance => "mean distance",
            Metric::Entropy => "entropy",
            Metric::UniformEntropy => "uniform entropy",
            Metric::PreviousToken => "previous token",
            Metric::FirstToken => "sink (first token)",
            Metric::DuplicateToken => "duplicate token",
            Metric::Induction => "induction",
            Metric::PositionShare => "position share",
            Metric::OffsetShare => "offset share",
        }
    }

    /// What it measures, in a sentence (A the weights, i the queries).
    pub fn description(self) -> &'static str {
        match self {
            Metric::MeanDistance => "how far the head looks: the mean over queries of Σ_j A_ij |i − j|, in positions",
            Metric::Entropy => "how spread its attention is: the mean over queries of −Σ_j A_ij ln A_ij, shown as a share of the uniform entropy (0: one key, 1: every visible key alike)",
            Metric::UniformEntropy => "the entropy of attending evenly to every visible key, mean over queries (nats)",
            Metric::PreviousToken => "the weight on the key just before the query, A_{i,i−1}, mean over queries",
            Metric::FirstToken => "the weight on the first position, mean over the other queries: a sink above 0.3",
            Metric::DuplicateToken => "the weight on earlier copies of the query's token, on a repeated random sequence",
            Metric::Induction => "the weight on the token after an earlier copy of the query's token, on a repeated random sequence",
            Metric::PositionShare => "how much of the scaled logits the scheme's position term explains: 1 − Σ(S − P)² / ΣS², row-centred (below 0: the content works against it)",
            Metric::OffsetShare => "how much of the scaled logits the offset j − i alone explains (their mean at each offset)",
        }
    }

    /// The metrics that colour the tiles (every one but the uniform entropy, which the entropy is shown against).
    pub fn colours_tiles(self) -> bool {
        self != Metric::UniformEntropy
    }
}

/// One row of the atlas: a layer of the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtlasLayer {
    /// "encoder" or "decoder".
    pub part: String,
    /// The block's index.
    pub layer: u32,
    /// Its position scheme (rope, alibi, t5, absolute, …), as the file names it.
    pub method: String,
    pub heads: u32,
    pub kv_heads: u32,
    pub causal: bool,
    /// Its sliding window (keys at |j − i| ≥ window masked), where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u32>,
    /// Its chunks (Llama 4: keys outside the query's chunk masked), where it has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk: Option<u32>,
}

impl AtlasLayer {
    /// "decoder layer 3".
    pub fn title(&self) -> String {
        format!("{} layer {}", self.part, self.layer)
    }
}

/// One prompt the atlas was measured on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtlasPrompt {
    pub n: u32,
    /// Its tokens, when a tokenizer was given.
    pub tokens: Option<Vec<String>>,
}

/// The repeated random sequence duplicate_token and induction are measured on: n tokens, two copies of n/2.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtlasInduction {
    pub n: u32,
    pub seed: u64,
}

/// What an atlas says of itself (its member `atlas`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtlasInfo {
    /// "relattn atlas".
    pub format: String,
    pub version: u32,
    /// The model's name (its `name_or_path`, or its class).
    pub model: String,
    /// Its `model_type`.
    pub family: String,
    /// One per row of the arrays, in forward order.
    pub layers: Vec<AtlasLayer>,
    /// The names of the metrics' rows ([`Metric::name`]).
    pub metrics: Vec<String>,
    pub prompts: Vec<AtlasPrompt>,
    pub induction: AtlasInduction,
    /// N: the offset axis covers j − i = −(N − 1) … N − 1.
    pub offsets: u32,
    /// The rows whose whole capture the file holds.
    pub captured: Vec<u32>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// An atlas read and checked.
#[derive(Clone, Debug)]
pub struct Atlas {
    pub info: AtlasInfo,
    /// The metrics of the description, in its order.
    pub metric_names: Vec<Metric>,
    /// (M, L, H).
    pub metrics: ndarray::Array3<f32>,
    pub metrics_std: ndarray::Array3<f32>,
    /// (L, H, 2N − 1).
    pub profile: ndarray::Array3<f32>,
    pub term: ndarray::Array3<f32>,
    /// (L, H), whole numbers below the row's kv_heads.
    pub kv_head: ndarray::Array2<usize>,
    /// Each captured row's capture, as a capture file holds it.
    captures: BTreeMap<usize, TensorFile>,
}

/// The prefix of row `c`'s capture members.
fn capture_prefix(c: usize) -> String {
    format!("layer{c}.")
}

/// The row of a capture member's name (`layer{c}.{name}`) and its name in a capture file, if it is one.
fn captured_member(name: &str) -> Option<(usize, &str)> {
    let (row, rest) = name.strip_prefix("layer")?.split_once('.')?;
    let c = row.parse::<usize>().ok().filter(|c| row == c.to_string())?;
    (NAMES.contains(&rest) || rest == capture::MEMBER).then_some((c, rest))
}

/// Whether the .npz `bytes` is an atlas: it has a member [`MEMBER`] (only the zip's directory is read).
pub fn is_atlas(bytes: &[u8]) -> bool {
    let Ok(zip) = zip::ZipArchive::new(std::io::Cursor::new(bytes)) else { return false };
    let found = zip.file_names().any(|n| n == MEMBER || n == format!("{MEMBER}.npy"));
    found
}

impl Atlas {
    /// Reads an atlas from the bytes of its .npz (`file_name` for messages) within `budget` bytes, as
    /// [`super::read_arrays`] reads a scenario file; every array's shape is checked against the description.
    pub fn read(bytes: &[u8], file_name: &str, budget: u64) -> Result<Atlas> {
        let file_err = |reason: String| Error::File { path: file_name.into(), reason };
        let kind_of = |name: &str| match name {
            MEMBER => Some(MemberKind::Description),
            _ if ARRAYS.contains(&name) => Some(MemberKind::Array),
            _ => match captured_member(name)? {
                (_, capture::MEMBER) => Some(MemberKind::Description),
                _ => Some(MemberKind::Array),
            },
        };
        let allowed = format!("atlas, {}, and layer{{c}}.<a capture file's member> for a captured row c", ARRAYS.join(", "));
        let (mut info, mut arrays, mut captured) = (None, BTreeMap::<String, ArrayD<f32>>::new(), BTreeMap::<usize, (TensorFile, bool)>::new());
        for (name, member) in read_npz(bytes, file_name, budget, kind_of, &allowed)? {
            match (captured_member(&name), member) {
                (None, Member::Description(json)) => info = Some(json),
                (None, Member::Array(a)) => {
                    arrays.insert(name, a);
                }
                (Some((c, _)), Member::Description(json)) => {
                    let c_file = format!("{file_name}, member {}{}", capture_prefix(c), capture::MEMBER);
                    captured.entry(c).or_default().0.capture = Some(CaptureInfo::parse(&json, &c_file)?);
                }
                (Some((c, rest)), Member::Array(a)) => {
                    let entry = captured.entry(c).or_default();
                    entry.0.arrays.insert(rest.to_string(), a);
                    entry.1 |= rest == "x";
                }
            }
        }
        let info = info.ok_or_else(|| file_err(format!("no member '{MEMBER}': an atlas (relattn.atlas(...).save) holds its description there")))?;
        let info: AtlasInfo = serde_json::from_slice(&info).map_err(|e| file_err(format!("member '{MEMBER}' is not an atlas's description: {e}")))?;
        let metric_names = check_info(&info, file_name)?;
        let (l, h, n) = (info.layers.len(), info.layers[0].heads as usize, info.offsets as usize);
        let m = metric_names.len();
        let mut take = |name: &str, shape: &[usize], spelled: &str| -> Result<ArrayD<f32>> {
            let a = arrays.remove(name).ok_or_else(|| file_err(format!("no member '{name}': an atlas holds {spelled} = {shape:?}")))?;
            if a.shape() != shape {
                return Err(file_err(format!("member '{name}' has shape {:?}; allowed: {spelled} = {shape:?}", a.shape())));
            }
            Ok(a)
        };
        let three = |a: ArrayD<f32>| a.into_dimensionality::<Ix3>().expect("shape checked");
        let metrics = three(take("metrics", &[m, l, h], "(M metrics, L layers, H heads)")?);
        let metrics_std = three(take("metrics_std", &[m, l, h], "(M metrics, L layers, H heads)")?);
        let profile = three(take("profile", &[l, h, 2 * n - 1], "(L layers, H heads, 2N − 1 offsets)")?);
        let term = three(take("term", &[l, h, 2 * n - 1], "(L layers, H heads, 2N − 1 offsets)")?);
        let kv = take("kv_head", &[l, h], "(L layers, H heads)")?.into_dimensionality::<Ix2>().expect("shape checked");
        let mut kv_head = ndarray::Array2::zeros((l, h));
        for ((c, head), &k) in kv.indexed_iter() {
            let kv_heads = info.layers[c].kv_heads;
            if !(k >= 0.0 && k < kv_heads as f32 && k.fract() == 0.0) {
                return Err(file_err(format!(
                    "member 'kv_head' holds {k} at row {c}, head {head}; allowed: a whole number in 0..={} (the row's kv_heads − 1)",
                    kv_heads - 1
                )));
            }
            kv_head[[c, head]] = k as usize;
        }
        match (arrays.remove("band_q"), arrays.remove("band_k")) {
            (None, None) => {}
            (Some(q), Some(k)) if q.ndim() == 3 && q.shape()[..2] == [l, h] && q.shape() == k.shape() => {}
            (Some(q), Some(k)) => {
                return Err(file_err(format!(
                    "members 'band_q' {:?} and 'band_k' {:?}; allowed: both of shape (L layers, H heads, P pairs) = ({l}, {h}, P)",
                    q.shape(),
                    k.shape()
                )))
            }
            (q, _) => {
                return Err(file_err(format!(
                    "member '{}' without '{}'; allowed: both or neither",
                    if q.is_some() { "band_q" } else { "band_k" },
                    if q.is_some() { "band_k" } else { "band_q" }
                )))
            }
        }
        let mut captures = BTreeMap::new();
        for (c, (file, has_x)) in captured {
            let prefix = capture_prefix(c);
            if !info.captured.contains(&(c as u32)) {
                return Err(file_err(format!("members '{prefix}*' of row {c}, which 'captured' does not name; allowed: the rows {:?}", info.captured)));
            }
            if file.capture.is_none() || !has_x {
                let lacks = if has_x { capture::MEMBER } else { "x" };
                return Err(file_err(format!(
                    "captured row {c} has no member '{prefix}{lacks}'; a captured row holds a capture file's members, x and capture at least"
                )));
            }
            captures.insert(c, file);
        }
        if let Some(c) = info.captured.iter().find(|c| !captures.contains_key(&(**c as usize))) {
            return Err(file_err(format!("'captured' names row {c}, but the file has no member '{}x'", capture_prefix(*c as usize))));
        }
        Ok(Atlas { info, metric_names, metrics, metrics_std, profile, term, kv_head, captures })
    }

    /// (L rows, H heads, N).
    pub fn dims(&self) -> (usize, usize, usize) {
        let (_, l, h) = self.metrics.dim();
        (l, h, self.info.offsets as usize)
    }

    /// Whether row `c`'s whole capture is held.
    pub fn is_captured(&self, c: usize) -> bool {
        self.captures.contains_key(&c)
    }

    /// The capture of row `c`, as a capture file holds it (its members without their prefix `layer{c}.`), or an
    /// error naming field "atlas row" with the rows captured.
    pub fn capture(&self, c: usize) -> Result<&TensorFile> {
        self.captures.get(&c).ok_or_else(|| {
            let rows: Vec<String> = self.captures.keys().map(usize::to_string).collect();
            let allowed = if rows.is_empty() { "none: this atlas holds no capture".to_string() } else { format!("a captured row: {}", rows.join(", ")) };
            Error::invalid("atlas row", c, allowed)
        })
    }

    /// Metric `metric`'s (mean, std) for row `c`, head `h`, or `None` when the file does not hold it.
    pub fn metric(&self, metric: Metric, c: usize, h: usize) -> Option<(f32, f32)> {
        let k = self.metric_names.iter().position(|&m| m == metric)?;
        Some((self.metrics[[k, c, h]], self.metrics_std[[k, c, h]]))
    }

    /// What colours a tile for `metric`: its mean, the entropy as a share of the uniform entropy; `None` when
    /// the file does not hold it (or, for the entropy, the uniform entropy).
    pub fn shown(&self, metric: Metric, c: usize, h: usize) -> Option<f32> {
        let (v, _) = self.metric(metric, c, h)?;
        match metric {
            Metric::Entropy => {
                let (u, _) = self.metric(Metric::UniformEntropy, c, h)?;
                Some(if u > 0.0 { v / u } else { 0.0 })
            }
            _ => Some(v),
        }
    }

    /// The metrics the file holds that colour tiles ([`Metric::colours_tiles`]; the entropy only beside the
    /// uniform entropy), in [`Metric::ALL`]'s order.
    pub fn tile_metrics(&self) -> Vec<Metric> {
        tile_metrics(&self.metric_names)
    }

    /// Row `c`, head `h`'s profile over the offsets −(N − 1) … N − 1.
    pub fn profile_of(&self, c: usize, h: usize) -> ArrayView1<'_, f32> {
        self.profile.slice(ndarray::s![c, h, ..])
    }

    /// Row `c`, head `h`'s position term over the offsets.
    pub fn term_of(&self, c: usize, h: usize) -> ArrayView1<'_, f32> {
        self.term.slice(ndarray::s![c, h, ..])
    }
}

/// Of the metrics `held`, those that colour tiles, in [`Metric::ALL`]'s order: [`Metric::colours_tiles`], the
/// entropy only beside the uniform entropy.
fn tile_metrics(held: &[Metric]) -> Vec<Metric> {
    let has = |m| held.contains(&m);
    Metric::ALL.into_iter().filter(|&m| m.colours_tiles() && has(m) && (m != Metric::Entropy || has(Metric::UniformEntropy))).collect()
}

/// The description's own checks: its format and version, at least one layer, the same heads in every layer
/// with kv_heads dividing them, at most [`MAX_TILES`] tiles, known metrics each once and one of them colouring
/// tiles, N in 1..=[`MAX_OFFSETS`] and every prompt within it, captured rows
/// among the layers. Returns the metrics.
fn check_info(info: &AtlasInfo, file_name: &str) -> Result<Vec<Metric>> {
    let file_err = |reason: String| Error::File { path: file_name.into(), reason };
    if info.format != FORMAT || info.version != VERSION {
        return Err(file_err(format!("member '{MEMBER}' says format '{}' version {}; allowed: '{FORMAT}' version {VERSION}", info.format, info.version)));
    }
    let Some(first) = info.layers.first() else {
        return Err(file_err(format!("member '{MEMBER}': 'layers' is empty; allowed: at least one layer")));
    };
    for (c, layer) in info.layers.iter().enumerate() {
        if layer.heads != first.heads || layer.heads == 0 {
            return Err(file_err(format!(
                "member '{MEMBER}': layers[{c}].heads is {}; allowed: {} (at least 1, the same in every layer)",
                layer.heads,
                first.heads.max(1)
            )));
        }
        if layer.kv_heads == 0 || layer.heads % layer.kv_heads != 0 {
            return Err(file_err(format!("member '{MEMBER}': layers[{c}].kv_heads is {}; allowed: a divisor of heads = {}", layer.kv_heads, layer.heads)));
        }
    }
    let tiles = info.layers.len() as u64 * first.heads as u64;
    if tiles > MAX_TILES as u64 {
        return Err(file_err(format!(
            "member '{MEMBER}': {} layers × {} heads = {tiles} tiles; allowed: at most {MAX_TILES} (128 layers of 128 heads)",
            info.layers.len(),
            first.heads
        )));
    }
    let mut metrics = Vec::new();
    for name in &info.metrics {
        let m = Metric::named(name).ok_or_else(|| Error::invalid("metric", format!("'{name}' in {file_name}"), Metric::names()))?;
        if metrics.contains(&m) {
            return Err(Error::invalid("metric", format!("'{name}' twice in {file_name}"), "each metric once"));
        }
        metrics.push(m);
    }
    if info.offsets == 0 || info.offsets > MAX_OFFSETS {
        return Err(file_err(format!("member '{MEMBER}': 'offsets' is {}; allowed: N in 1..={MAX_OFFSETS}, the longest prompt's length", info.offsets)));
    }
    if tile_metrics(&metrics).is_empty() {
        return Err(file_err(format!(
            "member '{MEMBER}': 'metrics' names no metric that colours a tile; allowed: one or more of {} (entropy beside uniform_entropy)",
            Metric::names()
        )));
    }
    if let Some((k, p)) = info.prompts.iter().enumerate().find(|(_, p)| p.n > info.offsets || p.tokens.as_ref().is_some_and(|t| t.len() != p.n as usize)) {
        return Err(file_err(format!(
            "member '{MEMBER}': prompts[{k}] has n = {} and {} tokens; allowed: n in 1..={} (offsets), with n tokens or null",
            p.n,
            p.tokens.as_ref().map_or("no".to_string(), |t| t.len().to_string()),
            info.offsets
        )));
    }
    let rows = info.layers.len();
    if let Some(c) = info.captured.iter().find(|&&c| c as usize >= rows) {
        return Err(file_err(format!("member '{MEMBER}': 'captured' names row {c}; allowed: rows 0..={}", rows - 1)));
    }
    Ok(metrics)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ndarray::{Array1, Array2, Array3};
    use ndarray_npy::NpzWriter;
    use std::io::Cursor;

    /// Every metric is one of the core's, each once: the enum's order is METRICS' (its names are read there).
    #[test]
    fn metrics_are_the_cores() {
        let mut names: Vec<&str> = Metric::ALL.map(Metric::name).to_vec();
        names.sort();
        let mut core = relattn_core::atlas::METRICS.to_vec();
        core.sort();
        assert_eq!(names, core);
        assert_eq!(Metric::OffsetShare as usize, relattn_core::atlas::METRICS.len() - 1);
    }

    /// The description of an atlas of `layers` rows of 4 heads (2 K/V heads), N = 5, every metric, one prompt,
    /// row 1 captured.
    pub fn description(layers: usize) -> serde_json::Value {
        let layer = |c: usize| serde_json::json!({"part": "decoder", "layer": c, "method": "rope", "heads": 4, "kv_heads": 2, "causal": true});
        serde_json::json!({
            "format": "relattn atlas", "version": 1, "model": "tiny-llama", "family": "llama",
            "layers": (0..layers).map(layer).collect::<Vec<_>>(),
            "metrics": Metric::ALL.map(Metric::name).to_vec(),
            "prompts": [{"n": 5, "tokens": ["<s>", "the", "cat", "sat", "."]}],
            "induction": {"n": 64, "seed": 0}, "offsets": 5, "captured": [1], "notes": ["a test"]
        })
    }

    /// An atlas's bytes: `info`, its arrays (N its first prompt's n) as `edit` leaves them (name → array), and row
    /// 1's capture.
    pub fn atlas_bytes(info: &serde_json::Value, edit: impl FnOnce(&mut BTreeMap<String, ArrayD<f32>>)) -> Vec<u8> {
        let (l, m, n) =
            (info["layers"].as_array().unwrap().len(), info["metrics"].as_array().unwrap().len(), info["prompts"][0]["n"].as_u64().unwrap() as usize);
        let mut arrays = BTreeMap::new();
        let metrics = Array3::from_shape_fn((m, l, 4), |(k, c, h)| (k + c + h) as f32 / 20.0).into_dyn();
        arrays.insert("metrics".to_string(), metrics.clone());
        arrays.insert("metrics_std".to_string(), metrics.mapv(|v| v / 10.0));
        // Causal: NaN after offset 0; weight falling with distance.
        let profile = Array3::from_shape_fn((l, 4, 2 * n - 1), |(_, h, d)| if d + 1 > n { f32::NAN } else { 1.0 / (n - d + h) as f32 });
        arrays.insert("term".to_string(), profile.mapv(|v| v.ln()).into_dyn());
        arrays.insert("profile".to_string(), profile.into_dyn());
        arrays.insert("kv_head".to_string(), Array2::from_shape_fn((l, 4), |(_, h)| (h / 2) as f32).into_dyn());
        edit(&mut arrays);
        let mut w = NpzWriter::new(Cursor::new(Vec::new()));
        w.add_array(MEMBER, &Array1::from(serde_json::to_vec(info).unwrap())).unwrap();
        for (name, a) in &arrays {
            w.add_array(name.as_str(), a).unwrap();
        }
        let capture =
            br#"{"options": {"method": "rope", "heads": 4, "causal": true}, "model": "tiny-llama", "family": "llama", "part": "decoder", "layer": 1}"#;
        w.add_array("layer1.capture", &Array1::from(capture.to_vec())).unwrap();
        w.add_array("layer1.x", &Array3::<f32>::ones((1, 5, 8))).unwrap();
        w.finish().unwrap().into_inner()
    }

    fn read(bytes: &[u8]) -> Result<Atlas> {
        Atlas::read(bytes, "t.atlas.npz", super::super::MAX_FILE_BYTES)
    }

    fn refused(bytes: &[u8]) -> String {
        read(bytes).unwrap_err().to_string()
    }

    #[test]
    fn an_atlas_is_read_with_its_capture() {
        let bytes = atlas_bytes(&description(2), |_| {});
        assert!(is_atlas(&bytes));
        let a = read(&bytes).unwrap();
        assert_eq!(a.dims(), (2, 4, 5));
        assert_eq!(a.kv_head.row(0).to_vec(), [0, 0, 1, 1]);
        assert_eq!(a.metric(Metric::FirstToken, 1, 2), Some((3.0 / 20.0, 3.0 / 20.0 / 10.0)));
        // The entropy (metric 2 of ALL) against the uniform entropy (metric 8): (2 + 1 + 3) / (8 + 1 + 3).
        assert_eq!(a.shown(Metric::Entropy, 1, 3), Some(0.5));
        assert_eq!(a.tile_metrics().len(), 8);
        let c = a.capture(1).unwrap();
        assert_eq!(
            (c.arrays.keys().map(String::as_str).collect::<Vec<_>>(), c.capture.as_ref().unwrap().title()),
            (vec!["x"], "tiny-llama, decoder layer 1".to_string())
        );
        let e = a.capture(0).unwrap_err();
        assert_eq!(e.field(), "atlas row");
        assert!(e.to_string().contains("a captured row: 1"), "{e}");
        // A capture file is no atlas.
        assert!(!is_atlas(b"PK not a zip") && !is_atlas(&[]));
    }

    #[test]
    fn a_member_of_the_wrong_shape_is_named_with_its_shape() {
        let bytes = atlas_bytes(&description(2), |a| {
            a.insert("profile".into(), Array3::<f32>::zeros((2, 4, 7)).into_dyn());
        });
        let e = refused(&bytes);
        assert!(e.contains("'profile'") && e.contains("[2, 4, 7]") && e.contains("[2, 4, 9]") && e.contains("2N − 1"), "{e}");
        let bytes = atlas_bytes(&description(2), |a| {
            a.insert("metrics_std".into(), Array3::<f32>::zeros((9, 3, 4)).into_dyn());
        });
        let e = refused(&bytes);
        assert!(e.contains("'metrics_std'") && e.contains("[9, 2, 4]"), "{e}");
        let bytes = atlas_bytes(&description(2), |a| {
            a.remove("term");
        });
        assert!(refused(&bytes).contains("no member 'term'"));
        let bytes = atlas_bytes(&description(2), |a| {
            a.insert("kv_head".into(), Array2::<f32>::from_elem((2, 4), 2.0).into_dyn());
        });
        let e = refused(&bytes);
        assert!(e.contains("'kv_head'") && e.contains("0..=1"), "{e}");
        let bytes = atlas_bytes(&description(2), |a| {
            a.insert("band_q".into(), Array3::<f32>::zeros((2, 4, 3)).into_dyn());
        });
        assert!(refused(&bytes).contains("'band_q' without 'band_k'"));
        let bytes = atlas_bytes(&description(2), |a| {
            a.insert("band_q".into(), Array3::<f32>::zeros((2, 4, 3)).into_dyn());
            a.insert("band_k".into(), Array3::<f32>::zeros((2, 4, 3)).into_dyn());
        });
        assert!(read(&bytes).is_ok());
    }

    #[test]
    fn an_unknown_metric_is_refused_by_name_with_the_known_ones() {
        let mut info = description(2);
        info["metrics"][3] = "sinkiness".into();
        let e = read(&atlas_bytes(&info, |_| {})).unwrap_err();
        assert_eq!(e.field(), "metric");
        assert!(e.to_string().contains("'sinkiness'") && e.to_string().contains("first_token, previous_token"), "{e}");
    }

    #[test]
    fn the_description_is_checked() {
        let mut info = description(2);
        info["version"] = 2.into();
        assert!(refused(&atlas_bytes(&info, |_| {})).contains("version 1"));
        let mut info = description(2);
        info["layers"][1]["heads"] = 3.into();
        assert!(refused(&atlas_bytes(&info, |_| {})).contains("layers[1].heads is 3"));
        let mut info = description(2);
        info["captured"] = serde_json::json!([5]);
        assert!(refused(&atlas_bytes(&info, |_| {})).contains("'captured' names row 5"));
        let mut info = description(2);
        info["captured"] = serde_json::json!([]);
        assert!(refused(&atlas_bytes(&info, |_| {})).contains("members 'layer1.*' of row 1"));
        let mut info = description(2);
        info["prompts"][0]["n"] = 9.into();
        assert!(refused(&atlas_bytes(&info, |_| {})).contains("prompts[0] has n = 9"));
        let mut info = description(2);
        info["layers"] = serde_json::json!(vec![info["layers"][0].clone(); MAX_TILES / 4 + 1]);
        assert!(refused(&atlas_bytes(&info, |_| {})).contains("tiles; allowed: at most 16384"));
        let mut info = description(2);
        info["metrics"] = serde_json::json!(["entropy"]);
        let e = refused(&atlas_bytes(&info, |_| {}));
        assert!(e.contains("names no metric that colours a tile"), "{e}");
        let mut info = description(2);
        info["offsets"] = (MAX_OFFSETS + 1).into();
        assert!(refused(&atlas_bytes(&info, |_| {})).contains("'offsets' is 16777217"));
        let mut info = description(2);
        info["extra"] = 1.into();
        assert!(refused(&atlas_bytes(&info, |_| {})).contains("unknown field `extra`"));
    }

    #[test]
    fn a_file_without_the_atlas_member_or_truncated_is_refused_by_name() {
        let mut w = NpzWriter::new(Cursor::new(Vec::new()));
        w.add_array("metrics", &Array3::<f32>::zeros((1, 1, 1))).unwrap();
        let e = refused(&w.finish().unwrap().into_inner());
        assert!(e.contains("no member 'atlas'"), "{e}");
        let bytes = atlas_bytes(&description(2), |_| {});
        for cut in [bytes.len() / 2, bytes.len() - 10, 3] {
            let e = refused(&bytes[..cut]);
            assert!(e.contains("t.atlas.npz") && (e.contains("corrupt .npz") || e.contains("not an .npz")), "{e}");
        }
        // A member of no atlas.
        let bytes = atlas_bytes(&description(2), |a| {
            a.insert("weights".into(), Array3::<f32>::zeros((1, 1, 1)).into_dyn());
        });
        let e = read(&bytes).unwrap_err();
        assert_eq!(e.field(), "array name");
        assert!(e.to_string().contains("'weights'") && e.to_string().contains("layer{c}."), "{e}");
    }

    #[test]
    fn no_bytes_make_it_panic() {
        let bytes = atlas_bytes(&description(2), |_| {});
        // Every byte flipped in turn, in a stride that covers headers and data.
        for i in (0..bytes.len()).step_by(7) {
            let mut b = bytes.clone();
            b[i] ^= 0xa5;
            let _ = read(&b);
        }
    }
}
