//! Scenario files: the tensors of one attention layer, as a user exports them with `np.savez`. Every array is optional, float32 or float64; what is absent is
//! generated from the seed. The arrays, their shapes and how each is generated: docs/src/files.md, "Scenario files" ([`NAMES`]: the names).
//!
//! The RNG is ChaCha8 seeded with the seed; each array draws from its own stream, so giving one array in a file never changes the values generated for another.
//! Grouped K/V heads are repeated for their query heads as they are read (`repeat_kv`), so every later step sees h heads.
//! A model's heads need not fill d_model: d_head is w_q's columns over the heads when the file gives w_q ([`check_config`]).

use crate::attention::{rope_table, Config};

use crate::error::{Error, Result};
use crate::positions::rope::RopeTable;
use crate::positions::{alibi, transformer_xl, Method};
use ndarray::{Array1, Array2, Array3, ArrayD, Axis, Dimension, Ix1, Ix2, Ix3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use std::collections::BTreeMap;

/// Sizes used for whatever the file does not give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    pub n: usize,
    pub d_model: usize,
    pub batch: usize,
    pub seed: u64,
}

impl Default for Spec {
    fn default() -> Self {
        Spec { n: 8, d_model: 16, batch: 1, seed: 0 }
    }
}

/// The tensors of one layer, checked against a [`Config`].
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// (b, n, d_model)
    pub x: Array3<f32>,
    /// w_q, w_k (d_model, h·d_head), w_v (d_model, h·d_v), w_o (h·d_v, d_out); h·d_head is d_model unless the
    /// file's w_q says otherwise, d_v is d_head unless its w_v does, d_out is d_model unless its w_o does. w_k
    /// and w_v (and b_k, b_v) with each of `kv_heads` K/V heads' columns repeated for the query heads it serves.
    pub w_q: Array2<f32>,
    pub w_k: Array2<f32>,
    pub w_v: Array2<f32>,
    pub w_o: Array2<f32>,
    /// b_q, b_k (h·d_head), b_v (h·d_v), b_o (d_out)
    pub b_q: Array1<f32>,
    pub b_k: Array1<f32>,
    pub b_v: Array1<f32>,
    pub b_o: Array1<f32>,
    /// RMS norms of the projected queries and keys, before any rotation (Qwen3, Gemma 3, OLMo 2):
    /// `q ← q / √(mean(q²) + ε) ⊙ γ` over each group of γ's length: d_head (each head, Qwen3 and Gemma 3) or
    /// h·d_head (the whole projection, OLMo 2; k_norm's repeated as w_k). ε is [`Config::norm_eps`].
    pub q_norm: Option<Array1<f32>>,
    pub k_norm: Option<Array1<f32>>,
    /// (h): each head's learned sink logit (gpt-oss), a softmax column with no key and no value.
    pub sinks: Option<Array1<f32>>,
    /// Each head's query and key width.
    pub d_head: usize,
    /// Each head's value width: w_v's columns over the K/V heads when the file gives w_v (DeepSeek's multi-head
    /// latent attention: values of 128 for queries and keys of 192), else d_head.
    pub d_v: usize,
    /// (1 or h, R, d_head): Shaw's w^K or the Music Transformer's E_r.
    pub rel_k: Array3<f32>,
    /// (1 or h, R, d_v): Shaw's w^V, when a^V is on.
    pub rel_v: Option<Array3<f32>>,
    /// (b, n): false where a key is padding.
    pub key_mask: Option<Array2<bool>>,
    /// (b, n): each position's segment id (Transformer-XL with segments: XLNet's token_type_ids), the file's
    /// `segment_ids` or n positions cut into `segments` equal runs.
    pub segments: Option<Array2<u32>>,
    /// (n, d_model): absolute positions when the file gives a model's own (`positions`); `None`: the sinusoids.
    pub positions: Option<Array2<f32>>,
    /// RoPE's cos and sin when the file gives a model's own (`rope_cos`, `rope_sin`); `None`: made from
    /// the options ([`Scenario::rope_table`]).
    pub rope: Option<RopeTable>,
    /// How many K/V heads w_k and w_v hold (grouped-query attention: fewer than the heads, each repeated); the
    /// heads when every query head has its own. [`crate::layer::forward::projections`] projects each once.
    pub kv_heads: usize,
}

/// Arrays read from a file, by name, as f32.
pub type Arrays = BTreeMap<String, ArrayD<f32>>;

/// The array names a scenario file may hold.
pub const NAMES: [&str; 30] = [
    "x",
    "w_q",
    "w_k",
    "w_v",
    "w_o",
    "b_q",
    "b_k",
    "b_v",
    "b_o",
    "rel_k",
    "rel_v",
    "e_r",
    "alibi_slopes",
    "t5_bias",
    "rope_cos",
    "rope_sin",
    "positions",
    "key_mask",
    "q_norm",
    "k_norm",
    "sinks",
    "deberta_k_r",
    "deberta_q_r",
    "distance_embedding",
    "xl_w_r",
    "xl_u",
    "xl_v",
    "xl_s",
    "xl_seg_embed",
    "segment_ids",
];

/// A generator with one stream per array name.
fn rng(seed: u64, name: &str) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(NAMES.iter().position(|n| *n == name).unwrap_or(NAMES.len()) as u64 + 1);
    r
}

fn normal(seed: u64, name: &str, shape: (usize, usize, usize)) -> Array3<f32> {
    let mut r = rng(seed, name);
    Array3::from_shape_simple_fn(shape, || r.sample(StandardNormal))
}

/// An input x (n, d_model) for a sentence: one N(0, 1) vector per distinct token, drawn from a ChaCha8
/// stream picked by the token's text (FNV-1a) and seeded with `seed`, so the same token gives the same row
/// wherever it stands. Equal rows give equal content logits q_i · k_j; what still tells them apart is the
/// relative term alone.
pub fn token_embeddings(tokens: &[String], d_model: usize, seed: u64) -> Array2<f32> {
    let mut x = Array2::zeros((tokens.len(), d_model));
    for (mut row, token) in x.rows_mut().into_iter().zip(tokens) {
        let stream = token.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3));
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        r.set_stream(stream);
        row.iter_mut().for_each(|v| *v = r.sample(StandardNormal));
    }
    x
}

/// Xavier-uniform (a, rows, cols): U(±sqrt(6 / (rows + cols))) per (rows, cols) matrix.
fn xavier(seed: u64, name: &str, shape: (usize, usize, usize)) -> Array3<f32> {
    let mut r = rng(seed, name);
    let bound = (6.0 / (shape.1 + shape.2) as f32).sqrt();
    Array3::from_shape_simple_fn(shape, || (r.random::<f32>() * 2.0 - 1.0) * bound)
}

fn dims(a: &ArrayD<f32>) -> String {
    format!("{:?}", a.shape())
}

/// Checks every value is finite, naming the first bad one.
fn check_finite(name: &str, a: &ArrayD<f32>) -> Result<()> {
    // A plain scan first (an indexed walk of a dynamic-rank array costs ~15 ns an element: 30 ms for 2M
    // values); the index is looked for only when there is a bad value.
    if a.iter().all(|v| v.is_finite()) {
        return Ok(());
    }
    match a.indexed_iter().find(|(_, v)| !v.is_finite()) {
        Some((idx, v)) => Err(Error::NonFinite { array: name.into(), index: idx.slice().to_vec(), value: *v as f64 }),
        None => Ok(()),
    }
}

/// The widths of a layer's heads and output, as its arrays say: each head's query/key width d_head (w_q's columns
/// over the heads: a model's heads need not fill d_model, mT5-small's 6 of 64 in 512, Gemma 7B's 16 of 256 in
/// 3072), its K/V heads (w_k's columns over d_head: grouped-query attention), each head's value width d_v (w_v's
/// columns over the K/V heads: DeepSeek's MLA) and the output's width d_out (w_o's columns); what no array says
/// is d_model / heads, every head, d_head and d_model. An array of another shape leaves its width at that
/// default, for [`Scenario::build`] to refuse it by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Widths {
    pub d_head: usize,
    pub kv_heads: usize,
    pub d_v: usize,
    pub d_out: usize,
}

impl Widths {
    /// A generated layer's: heads of d_model / heads, each its own K/V head, the output d_model wide.
    pub fn of_model(d_model: usize, heads: usize) -> Widths {
        let d_head = d_model / heads.max(1);
        Widths { d_head, kv_heads: heads, d_v: d_head, d_out: d_model }
    }

    /// `Some(self)` when the arrays gave widths of their own, `None` when they are a generated layer's: those follow
    /// d_model, so that the memory budget's search for a d_model that fits scales them too.
    pub fn own(self, d_model: usize, heads: usize) -> Option<Widths> {
        (self != Widths::of_model(d_model, heads)).then_some(self)
    }

    /// The widths `given`'s arrays say for a layer of `heads` heads over inputs of `d_model` and heads of `d_head`.
    fn of_arrays(given: &Arrays, heads: usize, d_model: usize, d_head: usize) -> Widths {
        let shape_of = |name: &str| given.get(name).map(|a| a.shape().to_vec()).filter(|s| s.len() == 2 && s[0] > 0 && s[1] > 0);
        let kv_heads = match shape_of("w_k") {
            Some(shape) if shape[0] == d_model && shape[1] % d_head == 0 && heads.is_multiple_of(shape[1] / d_head) => shape[1] / d_head,
            _ => heads,
        };
        let d_v = match shape_of("w_v") {
            Some(shape) if shape[0] == d_model && shape[1].is_multiple_of(kv_heads) => shape[1] / kv_heads,
            _ => d_head,
        };
        let d_out = match shape_of("w_o") {
            Some(shape) if shape[0] == heads * d_v => shape[1],
            _ => d_model,
        };
        Widths { d_head, kv_heads, d_v, d_out }
    }
}

/// Checks the sizes of a request before anything is generated; returns the layer's [`Widths`] (d_head: w_q's
/// columns over the heads when `given` has w_q, else d_model / heads).
pub fn check_config(cfg: &Config, spec: &Spec, given: &Arrays) -> Result<Widths> {
    if cfg.heads == 0 {
        return Err(Error::invalid("heads", 0, "1 or more, dividing d_model"));
    }
    if spec.n == 0 {
        return Err(Error::invalid("n", 0, "1 or more"));
    }
    if spec.batch == 0 {
        return Err(Error::invalid("batch_size", 0, "1 or more"));
    }
    if spec.d_model == 0 {
        return Err(Error::invalid("d_model", 0, "1 or more"));
    }
    let d_head = match given.get("w_q").map(|a| a.shape()) {
        Some(&[_, cols]) if cols > 0 && cols.is_multiple_of(cfg.heads) => cols / cfg.heads,
        Some(&[_, cols]) => {
            return Err(Error::invalid("heads", cfg.heads, format!("a divisor of w_q's {cols} columns (heads·d_head) and 1 or more")));
        }
        _ if !spec.d_model.is_multiple_of(cfg.heads) => {
            return Err(Error::invalid("heads", cfg.heads, format!("a divisor of d_model = {}", spec.d_model)));
        }
        _ => spec.d_model / cfg.heads,
    };
    cfg.scheme().check(d_head)?;
    cfg.scheme().check_length(spec.n)?;
    Ok(Widths::of_arrays(given, cfg.heads, spec.d_model, d_head))
}

/// The sizes of a request: from `x` when the file has it ((n, d_model) or (b, n, d_model), every size
/// ≥ 1, else a shape error naming `x`: the file is at fault, not a control), else from `spec`.
pub fn sizes_of(arrays: &Arrays, spec: &Spec) -> Result<Spec> {
    let Some(x) = arrays.get("x") else { return Ok(*spec) };
    let expected = "(n, d_model) or (b, n, d_model), every size ≥ 1";
    match *x.shape() {
        _ if x.shape().contains(&0) => Err(Error::shape("x", x.shape(), expected)),
        [n, d_model] => Ok(Spec { n, d_model, batch: 1, ..*spec }),
        [batch, n, d_model] => Ok(Spec { n, d_model, batch, ..*spec }),
        _ => Err(Error::shape("x", x.shape(), expected)),
    }
}

impl Scenario {
    /// Builds a scenario from the given arrays (possibly none), generating the rest from `spec`.
    /// When `x` is given it fixes n, d_model and the batch, and `spec`'s sizes are not used.
    pub fn build(cfg: &Config, spec: &Spec, mut given: Arrays, per_head_tables: bool) -> Result<Scenario> {
        for (name, a) in given.iter_mut() {
            check_finite(name, a)?;
            // Any layout in (a reversed or strided NumPy view, a transposed tensor), row-major from here on:
            // every reshape below reads the elements in logical order.
            if !a.is_standard_layout() {
                *a = a.as_standard_layout().into_owned();
            }
        }
        sizes_of(&given, spec)?;
        let x = match given.remove("x") {
            Some(a) if a.ndim() == 2 => a.insert_axis(Axis(0)).into_dimensionality::<Ix3>().expect("3-D"),
            Some(a) => a.into_dimensionality::<Ix3>().expect("sizes_of: 2-D or 3-D"),
            None => {
                check_config(cfg, spec, &given)?;
                normal(spec.seed, "x", (spec.batch, spec.n, spec.d_model))
            }
        };
        let (b, n, d) = x.dim();
        let Widths { d_head: dh, kv_heads, d_v: dv, d_out } = check_config(cfg, &Spec { n, d_model: d, batch: b, seed: spec.seed }, &given)?;
        let seed = spec.seed;

        let h = cfg.heads;
        // Q, K: h·d_head columns (g·d_head for g grouped K/V heads); V: h·d_v (g·d_v); the output: d_out.
        let inner = h * dh;
        // Per name: (columns as given, the width of one K/V head's block, how many query heads share it).
        let heads_of = |name: &str| match name {
            "w_k" | "b_k" | "k_norm" => (kv_heads * dh, dh, h / kv_heads),
            "w_v" | "b_v" => (kv_heads * dv, dv, h / kv_heads),
            "w_o" | "b_o" => (d_out, d_out, 1),
            _ => (inner, dh, 1),
        };
        let grouped = |name: &str| heads_of(name).2 > 1;
        let mut matrix = |name: &str| -> Result<Array2<f32>> {
            let (cols, block, times) = heads_of(name);
            let rows = if name == "w_o" { h * dv } else { d };
            match given.remove(name) {
                Some(a) if a.shape() == [rows, cols] => Ok(repeat_kv(a.into_dimensionality::<Ix2>().expect("2-D"), block, times)),
                Some(a) => Err(Error::shape(
                    name,
                    a.shape(),
                    match name {
                        "w_k" => format!(
                            "[{d}, {inner}] = (d_model, heads·d_head), or [{d}, g·{dh}] = (d_model, g·d_head) for g grouped K/V heads, g dividing heads = {h}"
                        ),
                        "w_v" => format!("[{d}, {}] = (d_model, {kv_heads}·d_v) for w_k's {kv_heads} K/V heads, d_v ≥ 1", kv_heads * dv),
                        "w_o" => format!("[{}, d_out] = (heads·d_v, d_out), d_out ≥ 1", h * dv),
                        _ => format!("[{d}, {inner}] = (d_model, heads·d_head)"),
                    },
                )),
                None => Ok(repeat_kv(xavier(seed, name, (1, rows, cols)).index_axis_move(Axis(0), 0), block, times)),
            }
        };
        let (w_q, w_k, w_v, w_o) = (matrix("w_q")?, matrix("w_k")?, matrix("w_v")?, matrix("w_o")?);
        let mut bias = |name: &str| -> Result<Array1<f32>> {
            let (cols, block, times) = heads_of(name);
            match given.remove(name) {
                Some(a) if a.shape() == [cols] => Ok(repeat_kv(a.into_shape_with_order((1, cols)).expect("1-D"), block, times).index_axis_move(Axis(0), 0)),
                Some(a) => Err(Error::shape(
                    name,
                    a.shape(),
                    match name {
                        "b_o" => format!("[{cols}] = (d_out), w_o's columns"),
                        "b_v" => format!("[{cols}] = ({kv_heads}·d_v), as w_v"),
                        _ if grouped(name) => format!("[{cols}] = ({kv_heads}·d_head), as w_k's {kv_heads} K/V heads"),
                        _ => format!("[{cols}] = (heads·d_head)"),
                    },
                )),
                None => Ok(Array1::zeros(cols * times)),
            }
        };
        let (b_q, b_k, b_v, b_o) = (bias("b_q")?, bias("b_k")?, bias("b_v")?, bias("b_o")?);
        // A norm's γ: d_head long (each head's) or the whole projection's (k_norm's repeated as w_k).
        let mut norm = |name: &str| -> Result<Option<Array1<f32>>> {
            let (cols, _, times) = heads_of(name);
            match given.remove(name) {
                Some(a) if a.shape() == [dh] => Ok(Some(a.into_dimensionality::<Ix1>().expect("1-D"))),
                Some(a) if a.shape() == [cols] => Ok(Some(repeat_kv(a.into_shape_with_order((1, cols)).expect("1-D"), dh, times).index_axis_move(Axis(0), 0))),
                Some(a) => Err(Error::shape(name, a.shape(), format!("[{dh}] = (d_head), one γ for every head, or [{cols}], the whole projection's"))),
                None => Ok(None),
            }
        };
        let (q_norm, k_norm) = (norm("q_norm")?, norm("k_norm")?);
        let sinks = match given.remove("sinks") {
            Some(a) if a.shape() == [h] => Some(a.into_dimensionality().expect("1-D")),
            Some(a) => return Err(Error::shape("sinks", a.shape(), format!("[{h}] = (heads)"))),
            None => None,
        };

        let xl = if cfg.method.shifts() { Some(xl_tables(cfg, &mut given, seed, (d, dh))?) } else { None };
        let rows = cfg.table_rows();
        let (logits_table, values_table) = cfg.method.table_names();
        // ALiBi's slopes or T5's biases, read here: their shapes are their own.
        let scalars = if cfg.method.adds_distance_bias() { given.remove(logits_table) } else { None };
        let table_heads = if per_head_tables { cfg.heads } else { 1 };
        // w^K or E_r (R, d_head), w^V (R, d_v): one for every head or one per head.
        let mut table = |name: &str, width: usize, what: &str| -> Result<Array3<f32>> {
            let expected =
                || format!("[{rows}, {width}] or [{}, {rows}, {width}] = ({f}, {what}) or (heads, {f}, {what})", cfg.heads, f = cfg.scheme().rows_formula());
            match given.remove(name) {
                Some(a) if a.shape() == [rows, width] => Ok(a.into_dimensionality::<Ix2>().expect("2-D").insert_axis(Axis(0))),
                Some(a) if a.shape() == [cfg.heads, rows, width] => Ok(a.into_dimensionality::<Ix3>().expect("3-D")),
                Some(a) => Err(Error::Shape { array: name.into(), given: dims(&a), expected: expected() }),
                None => Ok(xavier(seed, name, (table_heads, rows, width))),
            }
        };
        let rel_k = match cfg.method {
            // BERT's distance_embedding is one (2P − 1, d_head) table for every head (or one per head).
            Method::Shaw | Method::Music | Method::BertRelative => table(logits_table, dh, "d_head")?,
            Method::Deberta => {
                // K_r and Q_r (R, d_head) each, for every head or per head, side by side: one row r of the
                // (R, 2·d_head) table is what both of a pair's terms read (positions::deberta).
                let (k_r, q_r) = (table(logits_table, dh, "d_head")?, table("deberta_q_r", dh, "d_head")?);
                let heads = k_r.dim().0.max(q_r.dim().0);
                let wide = |t: &Array3<f32>| t.broadcast((heads, rows, dh)).expect("1 or h heads").to_owned();
                ndarray::concatenate(Axis(2), &[wide(&k_r).view(), wide(&q_r).view()]).expect("same heads and rows")
            }
            Method::TransformerXl => xl.expect("made above for transformer_xl"),
            Method::Rope | Method::Absolute => Array3::zeros((1, 0, dh)),
            Method::Alibi => match scalars {
                Some(a) if a.shape() == [cfg.heads] => a.into_shape_with_order((cfg.heads, 1, 1)).expect("h values"),
                Some(a) => return Err(Error::Shape { array: logits_table.into(), given: dims(&a), expected: format!("[{}] = (heads)", cfg.heads) }),
                None => Array3::from_shape_vec((cfg.heads, 1, 1), alibi::slopes(cfg.heads)).expect("h slopes"),
            },
            Method::T5 => match scalars {
                Some(a) if a.shape() == [rows] => a.into_shape_with_order((1, rows, 1)).expect("B values"),
                // Hugging Face's nn.Embedding(num_buckets, n_heads): bucket-major, a column per head.
                Some(a) if a.shape() == [rows, cfg.heads] => a.into_dimensionality::<Ix2>().expect("2-D").t().to_owned().insert_axis(Axis(2)),
                Some(a) => {
                    let expected = format!("[{rows}] or [{rows}, {}] = (buckets) or (buckets, heads)", cfg.heads);
                    return Err(Error::Shape { array: logits_table.into(), given: dims(&a), expected });
                }
                None => xavier(seed, logits_table, (table_heads, rows, 1)),
            },
        };
        let rel_v = match values_table {
            Some(name) if cfg.rel_v => Some(table(name, dv, "d_v")?),
            _ => None,
        };
        let key_mask = match given.remove("key_mask") {
            Some(a) if a.shape() == [b, n] => {
                if let Some((idx, v)) = a.indexed_iter().find(|(_, v)| **v != 0.0 && **v != 1.0) {
                    return Err(Error::invalid("key_mask", format!("{v} at {:?}", idx.slice()), "0 (padding) or 1 (keep)"));
                }
                Some(a.into_dimensionality::<Ix2>().expect("2-D").mapv(|v| v == 1.0))
            }
            Some(a) => return Err(Error::shape("key_mask", a.shape(), format!("[{b}, {n}] = (b, n)"))),
            None => None,
        };
        // Segment ids (b, n) when the layer has segments: the file's (any non-negative integers) or generated.
        let segments = match given.remove("segment_ids") {
            Some(a) if cfg.method.shifts() && cfg.xl.segments > 0 && a.shape() == [b, n] => {
                if let Some((idx, v)) = a.indexed_iter().find(|(_, v)| v.fract() != 0.0 || **v < 0.0 || **v > u32::MAX as f32) {
                    return Err(Error::invalid("segment_ids", format!("{v} at {:?}", idx.slice()), "non-negative integers"));
                }
                Some(a.into_dimensionality::<Ix2>().expect("2-D").mapv(|v| v as u32))
            }
            Some(a) if cfg.method.shifts() && cfg.xl.segments > 0 => return Err(Error::shape("segment_ids", a.shape(), format!("[{b}, {n}] = (b, n)"))),
            Some(a) => {
                // Not a layer with segments: left to be refused below as an array this configuration does not use.
                given.insert("segment_ids".into(), a);
                None
            }
            None if cfg.method.shifts() => cfg.xl.generated_ids(n).map(|ids| ids.broadcast((b, n)).expect("one row a batch element").to_owned()),
            None => None,
        };
        let rope = match (cfg.method.rotates(), given.remove("rope_cos"), given.remove("rope_sin")) {
            (true, Some(cos), Some(sin)) => {
                let pairs = cfg.rope.rotated_dims(dh) / 2;
                for (name, a) in [("rope_cos", &cos), ("rope_sin", &sin)] {
                    if a.shape() != [n, pairs] {
                        let expected = format!("[{n}, {pairs}] = (n, d_rot/2): positions 0..n, one column per rotated pair of d_head {dh}");
                        return Err(Error::shape(name, a.shape(), expected));
                    }
                }
                let two = |a: ArrayD<f32>| a.into_dimensionality::<Ix2>().expect("2-D");
                Some(RopeTable::given(cfg.rope, two(cos), two(sin)))
            }
            (true, Some(_), None) => return Err(Error::invalid("rope_sin", "absent", "given with rope_cos: a model's cos and sin come together")),
            (true, None, Some(_)) => return Err(Error::invalid("rope_cos", "absent", "given with rope_sin: a model's cos and sin come together")),
            (_, cos, sin) => {
                // Not a RoPE layer: left to be refused below as an array this configuration does not use.
                given.extend([cos.map(|a| ("rope_cos".to_string(), a)), sin.map(|a| ("rope_sin".to_string(), a))].into_iter().flatten());
                None
            }
        };
        let positions = match given.remove("positions") {
            Some(a) if cfg.method.adds_to_input() && a.shape() == [n, d] => Some(a.into_dimensionality::<Ix2>().expect("2-D")),
            Some(a) if cfg.method.adds_to_input() => return Err(Error::shape("positions", a.shape(), format!("[{n}, {d}] = (n, d_model)"))),
            Some(a) => {
                given.insert("positions".into(), a);
                None
            }
            None => None,
        };
        if let Some(name) = given.keys().next() {
            let reads = match cfg.method.array_names() {
                none if none.is_empty() => format!("--method {} reads none of its own", cfg.method),
                names => format!("--method {} reads {}", cfg.method, names.join(", ")),
            };
            let hint = match Method::ALL.into_iter().find(|&m| m.array_names().contains(&name.as_str())) {
                _ if Some(name.as_str()) == values_table => "a^V is switched off (--relative-values false)".to_string(),
                Some(owner) => format!("'{name}' belongs to --method {owner}; {reads}"),
                None => reads,
            };
            return Err(Error::invalid("array", format!("'{name}' not used by this configuration"), hint));
        }
        Ok(Scenario {
            x,
            w_q,
            w_k,
            w_v,
            w_o,
            b_q,
            b_k,
            b_v,
            b_o,
            q_norm,
            k_norm,
            sinks,
            d_head: dh,
            d_v: dv,
            rel_k,
            rel_v,
            key_mask,
            segments,
            positions,
            rope,
            kv_heads,
        })
    }

    /// (b, n, d_model).
    pub fn dims(&self) -> (usize, usize, usize) {
        self.x.dim()
    }

    /// The output's width d_out: w_o's columns (d_model unless the file's w_o says otherwise).
    pub fn d_out(&self) -> usize {
        self.w_o.ncols()
    }

    /// RoPE's cos and sin for positions 0 .. n, once for every head: the model's own when given, else made
    /// from the options; `None` for a scheme that does not rotate.
    pub fn rope_table(&self, cfg: &Config) -> Option<RopeTable> {
        let (_, n, _) = self.dims();
        cfg.method.rotates().then(|| self.rope.clone().unwrap_or_else(|| rope_table(cfg, n, n, self.d_head)))
    }
}

/// Transformer-XL's tables, one a head (heads, P + 5, d_head) ([`transformer_xl::table`]): W_R `xl_w_r` (d_model,
/// heads·d_head), u, v, s `xl_u`, `xl_v`, `xl_s` (heads, d_head) and `xl_seg_embed` (2, heads, d_head), each the file's or
/// generated (Xavier-uniform, its own stream); for d_model and d_head `(d, dh)`.
fn xl_tables(cfg: &Config, given: &mut Arrays, seed: u64, (d, dh): (usize, usize)) -> Result<Array3<f32>> {
    let h = cfg.heads;
    let mut given_or = |name: &str, shape: &[usize], what: &str| -> Result<ArrayD<f32>> {
        match given.remove(name) {
            Some(a) if a.shape() == shape => Ok(a),
            Some(a) => Err(Error::shape(name, a.shape(), format!("{shape:?} = {what}"))),
            None => Ok(xavier(seed, name, (1, shape[0], shape[1..].iter().product())).into_dyn().into_shape_with_order(shape).expect("same count")),
        }
    };
    let w_r = given_or("xl_w_r", &[d, h * dh], "(d_model, heads·d_head)")?.into_dimensionality::<Ix2>().expect("2-D");
    let bias = |a: ArrayD<f32>| a.into_dimensionality::<Ix2>().expect("2-D");
    let u = bias(given_or("xl_u", &[h, dh], "(heads, d_head)")?);
    let v = bias(given_or("xl_v", &[h, dh], "(heads, d_head)")?);
    let s = bias(given_or("xl_s", &[h, dh], "(heads, d_head)")?);
    let seg = given_or("xl_seg_embed", &[2, h, dh], "(2, heads, d_head)")?.into_dimensionality::<Ix3>().expect("3-D");
    let tables: Vec<Array2<f32>> = (0..h)
        .map(|head| {
            let cols = ndarray::s![.., head * dh..(head + 1) * dh];
            transformer_xl::table(w_r.slice(cols), u.row(head), v.row(head), s.row(head), seg.index_axis(Axis(1), head), cfg.clip, cfg.causal)
        })
        .collect();
    Ok(ndarray::stack(Axis(0), &tables.iter().map(|t| t.view()).collect::<Vec<_>>()).expect("one table per head"))
}

/// `a` (rows, g·d_head) with each K/V head's d_head columns repeated `times` times in place, as Hugging
/// Face's `repeat_kv`: (rows, g·times·d_head), column block i the K/V head ⌊i / times⌋. Grouped K/V heads (Llama
/// 2/3, Mistral, Qwen2: `num_key_value_heads` = g < h) share each K/V head with h/g query heads, query head i
/// reading K/V head ⌊i·g/h⌋; repeated here, every later step sees h heads.
pub(crate) fn repeat_kv(a: Array2<f32>, d_head: usize, times: usize) -> Array2<f32> {
    if times == 1 {
        return a;
    }
    let (rows, cols) = a.dim();
    let a = a.as_standard_layout();
    let mut out = vec![0.0; rows * cols * times];
    for (from, to) in a.as_slice().expect("standard layout").chunks_exact(cols.max(1)).zip(out.chunks_exact_mut((cols * times).max(1))) {
        for (g, head) in from.chunks_exact(d_head).enumerate() {
            for t in 0..times {
                to[(g * times + t) * d_head..][..d_head].copy_from_slice(head);
            }
        }
    }
    Array2::from_shape_vec((rows, cols * times), out).expect("rows × cols·times")
}
