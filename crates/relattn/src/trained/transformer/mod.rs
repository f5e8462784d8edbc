//! A decoder-only transformer whose attention is relattn's layer: the trained chorale models (models/chorales-{music,shaw,rope,alibi,t5,absolute}.safetensors,
//! trained by `train/`), as docs/src/models.md ("The architecture, exactly") defines them, the file's tensors included:
//!
//! ```text
//! x      = E[tokens] · √d_model  (+ PE sinusoids, absolute model only)        (T, d_model)
//! layer ℓ: h = LN₁(x);  x ← x + Attn_ℓ(h)                                     relattn's forward::forward on h
//!          x ← x + gelu(LN₂(x) W₁ + b₁) W₂ + b₂                              W₁ (d_model, d_ff), W₂ (d_ff, d_model)
//! logits = LN_f(x) · Eᵀ                                                        (T, vocab), tied embeddings
//! ```
//! Attention is causal, its relative term the model's: music E_r (heads, R, d_head), rows for distances −(R−1)..0 (R = the training length), zero beyond; shaw
//! w^K, w^V (heads, 2k+1, d_head) at clip(j − i, k); rope Q, K rotated ([`Rope::default`]); alibi m_h·(j − i) after the scale ([`alibi::slopes`], not in the
//! file); t5 b_h[bucket(j − i)] (heads, buckets); absolute none ([`ModelConfig::attention`]).

mod cache;
mod passes;
mod sampling;

pub use cache::Cache;
pub use passes::AttentionPass;
pub use sampling::{
    log_softmax_at, probabilities, truncated_probabilities, SampleSettings, Sampler, DEFAULT_TOP_K, DEFAULT_TOP_P, MAX_CONTEXT, MAX_SAMPLE_STEPS,
};

use ndarray::{Array1, Array2, Array3, ArrayView2, Axis, Ix1, Ix2, Ix3};
use relattn_core::attention::Config;
use relattn_core::core::finite::check_overflow;
use relattn_core::core::matmul::matmul;
use relattn_core::error::{Error, Result};
use relattn_core::layer::forward;
use relattn_core::layer::scenario::Scenario;
use relattn_core::positions::absolute::add_sinusoid;
use relattn_core::positions::alibi;
use relattn_core::positions::rope::Rope;
use relattn_core::positions::t5::Buckets;
use relattn_core::positions::table::Edge;
use relattn_core::positions::Method;
use serde::{Deserialize, Serialize};

/// LayerNorm's ε, with the biased variance (PyTorch's).
const LN_EPS: f32 = 1e-5;

/// The shape of a model; the file's metadata `config` (other keys there are training figures, kept as they are).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ModelConfig {
    /// The position scheme (every one of the six has a trained model).
    pub method: Method,
    pub layers: usize,
    pub d_model: usize,
    pub heads: usize,
    pub d_ff: usize,
    pub vocab: usize,
    /// Tokens per training crop; the Music Transformer's E_r has this many rows.
    pub context: usize,
    /// k: Shaw's tables have 2k+1 rows, the Music Transformer's E_r k+1 (k = context − 1); 0 for absolute.
    pub clip: usize,
    /// Shaw's a^V.
    pub rel_v: bool,
    /// What distances beyond E_r read (music).
    pub edge: Edge,
    /// T5's buckets and the distance where the last one starts (t5 only; the files of other schemes may
    /// carry them too, unread).
    #[serde(default)]
    pub t5_buckets: Option<usize>,
    #[serde(default)]
    pub t5_max_distance: Option<usize>,
}

impl ModelConfig {
    /// Refuses sizes no model of this runtime has, naming the field; the tensors are checked against the rest.
    fn check(&self) -> Result<()> {
        let bound = |field: &str, v: usize, lo: usize, hi: usize| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(Error::invalid(&format!("config.{field}"), v, format!("{lo}..={hi}")))
            }
        };
        bound("layers", self.layers, 1, 64)?;
        bound("d_model", self.d_model, 1, 4096)?;
        bound("heads", self.heads, 1, self.d_model)?;
        bound("d_ff", self.d_ff, 1, 16384)?;
        bound("vocab", self.vocab, 2, 65536)?;
        bound("context", self.context, 1, MAX_CONTEXT)?;
        if !self.d_model.is_multiple_of(self.heads) {
            return Err(Error::invalid("config.heads", self.heads, format!("a divisor of d_model = {}", self.d_model)));
        }
        let clip_ok = match self.method {
            Method::Music => self.clip + 1 == self.context,
            Method::Shaw => self.clip <= 65536,
            Method::Rope | Method::Alibi | Method::T5 | Method::Absolute => self.clip == 0,
            Method::Deberta | Method::BertRelative | Method::TransformerXl => {
                return Err(Error::invalid(
                    "config.method",
                    self.method,
                    "shaw, music, rope, alibi, t5 or absolute (the trained decoders have no DeBERTa, BERT relative or Transformer-XL layers)",
                ))
            }
        };
        if !clip_ok {
            return Err(Error::invalid("config.clip", self.clip, "context − 1 (music), ≤ 65536 (shaw), 0 (the others)"));
        }
        if self.rel_v && self.method != Method::Shaw {
            return Err(Error::invalid("config.rel_v", true, "false unless method is shaw"));
        }
        if self.method == Method::T5 {
            self.buckets()?;
        }
        // RoPE rotates whole pairs of every head (a model's rotary fraction is 1): d_head even, 2 or more. Said of
        // config.heads, a field the config has (the scheme's own check would name rope_fraction).
        let dh = self.d_model / self.heads;
        if self.method == Method::Rope && (dh < 2 || dh % 2 == 1) {
            let allowed = format!("a divisor of d_model = {} leaving an even d_head of 2 or more (RoPE rotates pairs); d_head is {dh}", self.d_model);
            return Err(Error::invalid("config.heads", self.heads, allowed));
        }
        // The scheme's own options (T5's buckets), named as the config's fields.
        self.attention().scheme().check(self.d_model / self.heads).map_err(|e| match e {
            Error::Invalid { field, given, allowed } => Error::Invalid { field: format!("config.{field}"), given, allowed },
            other => other,
        })
    }

    /// T5's buckets, refused naming the field when the config has none.
    fn buckets(&self) -> Result<Buckets> {
        match (self.t5_buckets, self.t5_max_distance) {
            (Some(count), Some(max_distance)) => Ok(Buckets { count, max_distance }),
            (None, _) => Err(Error::invalid("config.t5_buckets", "missing", "a number of buckets (method t5)")),
            (_, None) => Err(Error::invalid("config.t5_max_distance", "missing", "a distance (method t5)")),
        }
    }

    /// The attention layer's configuration (every layer has the same). The absolute model's positions are in
    /// its input: its layer is Shaw's with k = 0, a^V off and a zero table, so its relative logits are exactly
    /// zero and every stage of the page still applies.
    pub fn attention(&self) -> Config {
        let method = if self.method == Method::Absolute { Method::Shaw } else { self.method };
        let buckets = self.buckets().unwrap_or_default();
        Config {
            method,
            heads: self.heads,
            clip: self.clip,
            causal: true,
            rel_v: self.rel_v,
            edge: self.edge,
            rope: Rope::default(),
            buckets,
            ..Config::default()
        }
    }
}

struct LayerNorm {
    weight: Array1<f32>,
    bias: Array1<f32>,
}

impl LayerNorm {
    /// `(x − mean) / sqrt(var + ε) · weight + bias` over each row, in float32 as PyTorch's. `name`
    /// ("layers.ℓ.ln1") names the [`Error::Overflow`] of a row whose mean or variance leaves float32's range:
    /// the sum of squares overflows long before the values do (d_model values of 2e19 suffice), and
    /// 1/sqrt(∞) = 0 would silently turn every such row into `bias`, all rows alike.
    fn apply(&self, x: ArrayView2<f32>, name: &str) -> Result<Array2<f32>> {
        let mut out = x.to_owned();
        let d = x.ncols() as f32;
        for (i, mut row) in out.rows_mut().into_iter().enumerate() {
            let mean = row.sum() / d;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / d;
            if !var.is_finite() {
                return Err(Error::Overflow { array: format!("{name} (variance of the row)"), index: vec![i], value: var as f64 });
            }
            let inv = 1.0 / (var + LN_EPS).sqrt();
            row.zip_mut_with(&self.weight, |v, w| *v = (*v - mean) * inv * w);
            row += &self.bias;
        }
        check_overflow(name, &out)?;
        Ok(out)
    }
}

/// One layer's attention weights, laid out as relattn's [`Scenario`] reads them.
struct Attention {
    w: [Array2<f32>; 4],
    b: [Array1<f32>; 4],
    /// (heads, R, width), the layer's table ([`relattn_core::positions::Scheme::table_rows`] and `table_width`): w^K
    /// or E_r (R, d_head), T5's bias (B, 1), ALiBi's slope (1, 1), none for RoPE (0, d_head), and a zero
    /// (1, d_head) for the absolute model.
    rel_k: Array3<f32>,
    rel_v: Option<Array3<f32>>,
}

struct Block {
    ln1: LayerNorm,
    attn: Attention,
    ln2: LayerNorm,
    w1: Array2<f32>,
    b1: Array1<f32>,
    w2: Array2<f32>,
    b2: Array1<f32>,
}

/// A loaded model.
pub struct Transformer {
    pub config: ModelConfig,
    /// The file's whole `config` metadata (the fields above and the training figures).
    pub metadata: serde_json::Value,
    /// (vocab, d_model), also the output projection.
    embed: Array2<f32>,
    blocks: Vec<Block>,
    ln_f: LayerNorm,
}

/// Reads a safetensors file's tensors by name, checking dtype, shape and finiteness.
struct Tensors<'a> {
    st: safetensors::SafeTensors<'a>,
    used: Vec<String>,
}

impl Tensors<'_> {
    fn get(&mut self, name: &str, shape: &[usize]) -> Result<ndarray::ArrayD<f32>> {
        let view = self.st.tensor(name).map_err(|_| Error::Shape { array: name.into(), given: "missing".into(), expected: format!("{shape:?}") })?;
        if view.dtype() != safetensors::Dtype::F32 {
            return Err(Error::invalid(&format!("dtype of '{name}'"), format!("{:?}", view.dtype()), "F32"));
        }
        if view.shape() != shape {
            return Err(Error::shape(name, view.shape(), format!("{shape:?}")));
        }
        let values: Vec<f32> = view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Error::NonFinite { array: name.into(), index: vec![i], value: *v as f64 });
        }
        self.used.push(name.into());
        Ok(ndarray::ArrayD::from_shape_vec(shape, values).expect("the shape was checked"))
    }
    fn vector(&mut self, name: &str, n: usize) -> Result<Array1<f32>> {
        Ok(self.get(name, &[n])?.into_dimensionality::<Ix1>().expect("1-D"))
    }
    fn matrix(&mut self, name: &str, r: usize, c: usize) -> Result<Array2<f32>> {
        Ok(self.get(name, &[r, c])?.into_dimensionality::<Ix2>().expect("2-D"))
    }
    fn table(&mut self, name: &str, h: usize, r: usize, c: usize) -> Result<Array3<f32>> {
        Ok(self.get(name, &[h, r, c])?.into_dimensionality::<Ix3>().expect("3-D"))
    }
    fn layer_norm(&mut self, prefix: &str, d: usize) -> Result<LayerNorm> {
        Ok(LayerNorm { weight: self.vector(&format!("{prefix}.weight"), d)?, bias: self.vector(&format!("{prefix}.bias"), d)? })
    }
}
impl Transformer {
    /// Loads a model from the bytes of its safetensors file (the metadata key `config` holds [`ModelConfig`] as JSON,
    /// with the training figures beside it; the tensors' names: docs/src/models.md); every error names the file and the field.
    pub fn load(bytes: &[u8], file_name: &str) -> Result<Transformer> {
        let file_err = |reason: String| Error::File { path: file_name.into(), reason };
        let st = safetensors::SafeTensors::deserialize(bytes).map_err(|e| file_err(format!("not a safetensors file: {e}")))?;
        let (_, header) = safetensors::SafeTensors::read_metadata(bytes).map_err(|e| file_err(format!("not a safetensors file: {e}")))?;
        let text = header.metadata().as_ref().and_then(|m| m.get("config")).ok_or_else(|| file_err("its metadata has no 'config'".into()))?;
        let metadata: serde_json::Value = serde_json::from_str(text).map_err(|e| file_err(format!("metadata 'config' is not JSON: {e}")))?;
        // Read from the text itself, not the parsed value (whose map keeps the last of a duplicated key): a field
        // given twice is refused ("duplicate field `heads`").
        let config: ModelConfig = serde_json::from_str(text).map_err(|e| file_err(format!("metadata 'config': {e}")))?;
        config.check()?;
        let (d, h, ff) = (config.d_model, config.heads, config.d_ff);
        let dh = d / h;
        let rows = config.attention().table_rows();
        let width = config.attention().scheme().table_width(dh);
        let mut t = Tensors { st, used: Vec::new() };
        let embed = t.matrix("embed", config.vocab, d)?;
        let mut blocks = Vec::with_capacity(config.layers);
        for l in 0..config.layers {
            let p = format!("layers.{l}");
            let (mut w, mut b) = (Vec::new(), Vec::new());
            for n in ["q", "k", "v", "o"] {
                w.push(t.matrix(&format!("{p}.attn.w_{n}"), d, d)?);
                b.push(t.vector(&format!("{p}.attn.b_{n}"), d)?);
            }
            let attn = Attention {
                w: w.try_into().expect("four projections"),
                b: b.try_into().expect("four biases"),
                rel_k: match config.method {
                    Method::Music => t.table(&format!("{p}.attn.e_r"), h, rows, dh)?,
                    Method::Shaw => t.table(&format!("{p}.attn.rel_k"), h, rows, dh)?,
                    Method::T5 => t.matrix(&format!("{p}.attn.t5_bias"), h, rows)?.insert_axis(Axis(2)),
                    Method::Alibi => Array3::from_shape_vec((h, 1, 1), alibi::slopes(h)).expect("one slope per head"),
                    // DeBERTa, BERT relative and Transformer-XL are refused by the config's check.
                    Method::Rope | Method::Absolute | Method::Deberta | Method::BertRelative | Method::TransformerXl => Array3::zeros((h, rows, width)),
                },
                rel_v: if config.rel_v { Some(t.table(&format!("{p}.attn.rel_v"), h, rows, dh)?) } else { None },
            };
            blocks.push(Block {
                ln1: t.layer_norm(&format!("{p}.ln1"), d)?,
                attn,
                ln2: t.layer_norm(&format!("{p}.ln2"), d)?,
                w1: t.matrix(&format!("{p}.ffn.w1"), d, ff)?,
                b1: t.vector(&format!("{p}.ffn.b1"), ff)?,
                w2: t.matrix(&format!("{p}.ffn.w2"), ff, d)?,
                b2: t.vector(&format!("{p}.ffn.b2"), d)?,
            });
        }
        let ln_f = t.layer_norm("ln_f", d)?;
        if let Some(extra) = t.st.names().into_iter().find(|n| !t.used.iter().any(|u| u == n)) {
            return Err(Error::invalid(
                "tensor",
                format!("'{extra}' in {file_name}"),
                "only the tensors of this config (the book's trained-models chapter, docs/src/models.md, names them)",
            ));
        }
        Ok(Transformer { config, metadata, embed, blocks, ln_f })
    }

    /// Number of trained parameters.
    pub fn parameters(&self) -> usize {
        let ln = |l: &LayerNorm| l.weight.len() + l.bias.len();
        let blocks: usize = self
            .blocks
            .iter()
            .map(|b| {
                let a = &b.attn;
                let tables = if self.config.method.has_index() { a.rel_k.len() + a.rel_v.as_ref().map_or(0, |t| t.len()) } else { 0 };
                a.w.iter().map(|w| w.len()).sum::<usize>()
                    + a.b.iter().map(|b| b.len()).sum::<usize>()
                    + tables
                    + ln(&b.ln1)
                    + ln(&b.ln2)
                    + b.w1.len()
                    + b.b1.len()
                    + b.w2.len()
                    + b.b2.len()
            })
            .sum();
        self.embed.len() + blocks + ln(&self.ln_f)
    }

    /// `E[token] · √d_model` (+ PE[first_position + t] for the absolute model, PE[p, 2i] = sin(p / 10000^(2i/d)),
    /// PE[p, 2i+1] = cos(…)), one row per token; "embedding" names an overflow (an embedding near float32's limit,
    /// scaled by √d_model).
    fn embed(&self, tokens: &[u32], first_position: usize) -> Result<Array2<f32>> {
        let d = self.config.d_model;
        let scale = (d as f32).sqrt();
        let mut x = Array2::zeros((tokens.len(), d));
        for (t, (&tok, mut row)) in tokens.iter().zip(x.rows_mut()).enumerate() {
            if tok as usize >= self.config.vocab {
                return Err(Error::invalid("tokens", format!("{tok} at position {t}"), format!("0..{}", self.config.vocab)));
            }
            row.assign(&(&self.embed.row(tok as usize) * scale));
            if self.config.method == Method::Absolute {
                add_sinusoid(row.as_slice_mut().expect("a row of a standard array"), first_position + t);
            }
        }
        check_overflow("embedding", &x)?;
        Ok(x)
    }

    /// Layer `l`'s attention tensors as a [`Scenario`] over its input `h` (T, d_model).
    fn scenario(&self, l: usize, h: Array2<f32>) -> Scenario {
        let a = &self.blocks[l].attn;
        let [w_q, w_k, w_v, w_o] = a.w.clone();
        let [b_q, b_k, b_v, b_o] = a.b.clone();
        Scenario {
            x: h.insert_axis(Axis(0)),
            w_q,
            w_k,
            w_v,
            w_o,
            b_q,
            b_k,
            b_v,
            b_o,
            q_norm: None,
            k_norm: None,
            sinks: None,
            d_head: self.config.d_model / self.config.heads,
            d_v: self.config.d_model / self.config.heads,
            rel_k: a.rel_k.clone(),
            rel_v: a.rel_v.clone(),
            key_mask: None,
            segments: None,
            positions: None,
            rope: None,
            kv_heads: self.config.heads,
        }
    }

    /// Refuses a sequence that is empty or whose trace or forward would not fit the memory budget.
    fn check_length(&self, tokens: &[u32], trace: bool) -> Result<()> {
        if tokens.is_empty() {
            return Err(Error::invalid("tokens", 0, "1 or more"));
        }
        #[cfg(not(target_arch = "wasm32"))]
        let parallel = rayon::current_num_threads();
        #[cfg(target_arch = "wasm32")]
        let parallel = 1;
        let sizes = forward::Sizes { batch: 1, n: tokens.len(), d_model: self.config.d_model, per_head_tables: true, trace, parallel, widths: None };
        forward::check_budget(&self.config.attention(), &sizes, |_, _| Some(0), forward::DEFAULT_MEMORY_LIMIT).map(|_| ())
    }

    /// LN₁ of the residual stream `x` entering layer `l`: its attention's input, (T, d_model).
    fn attention_input(&self, l: usize, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        self.blocks[l].ln1.apply(x, &format!("layers.{l}.ln1"))
    }

    /// The rest of layer `l` once its attention gave `attn` (T, d_model): x ← x + attn, x ← x + FFN(x), each
    /// stage checked for values that left float32's range (an [`Error::Overflow`] naming the layer and the
    /// stage: "layers.ℓ.residual after attention", "layers.ℓ.ln2", "layers.ℓ.ffn.w1", "layers.ℓ.ffn.w2",
    /// "layers.ℓ.residual").
    fn finish_layer(&self, l: usize, x: &mut Array2<f32>, attn: ArrayView2<f32>) -> Result<()> {
        *x += &attn;
        check_overflow(&format!("layers.{l}.residual after attention"), &*x)?;
        let ffn = self.blocks[l].ffn(l, x.view())?;
        *x += &ffn;
        check_overflow(&format!("layers.{l}.residual"), &*x)
    }

    /// The output head: LN_f(x) · Embedᵀ, (T, vocab). Finite weights can still leave float32's range in the
    /// residual stream or here (the fuzzer found models that do): every stage of the forward pass is checked,
    /// and such values are refused with [`Error::Overflow`] naming the stage ("embedding", "layers.ℓ.ln1",
    /// "layers.ℓ.attn.logits", …, "ln_f", "logits") rather than returned as ±∞, NaN or rows made alike.
    fn logits(&self, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        let logits = matmul(self.ln_f.apply(x, "ln_f")?.view(), self.embed.t());
        check_overflow("logits", &logits)?;
        Ok(logits)
    }
}

impl Block {
    /// `gelu(LN₂(x) W₁ + b₁) W₂ + b₂` of layer `l`, each stage checked ("layers.ℓ.ln2", "layers.ℓ.ffn.w1",
    /// "layers.ℓ.ffn.w2").
    fn ffn(&self, l: usize, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        let mut u = matmul(self.ln2.apply(x, &format!("layers.{l}.ln2"))?.view(), self.w1.view()) + &self.b1;
        u.mapv_inplace(gelu);
        check_overflow(&format!("layers.{l}.ffn.w1"), &u)?;
        let out = matmul(u.view(), self.w2.view()) + &self.b2;
        check_overflow(&format!("layers.{l}.ffn.w2"), &out)?;
        Ok(out)
    }
}

/// `½u(1 + tanh(√(2/π)(u + 0.044715u³)))`.
fn gelu(u: f32) -> f32 {
    0.5 * u * (1.0 + (0.797_884_6 * (u + 0.044715 * u * u * u)).tanh())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_matches_its_formula_at_known_points() {
        assert_eq!(gelu(0.0), 0.0);
        assert!((gelu(1.0) - 0.841_192).abs() < 1e-5, "{}", gelu(1.0));
        assert!((gelu(-3.0) + 0.003_637_4).abs() < 1e-6, "{}", gelu(-3.0));
    }
}
