//! A decoder-only transformer whose attention is relattn's layer: the trained chorale models
//! (`models/chorales-{music,shaw,rope,alibi,t5,absolute}.safetensors`, trained by `train/`).
//!
//! ```text
//! x      = E[tokens] · √d_model  (+ PE sinusoids, absolute model only)        (T, d_model)
//! layer ℓ: h = LN₁(x);  x ← x + Attn_ℓ(h)                                     relattn's forward::forward on h
//!          x ← x + gelu(LN₂(x) W₁ + b₁) W₂ + b₂                              W₁ (d_model, d_ff), W₂ (d_ff, d_model)
//! logits = LN_f(x) · Eᵀ                                                        (T, vocab), tied embeddings
//! ```
//!
//! `gelu(u) = ½u(1 + tanh(√(2/π)(u + 0.044715u³)))`, LayerNorm ε = 1e-5 with the biased variance, PE[p, 2i] =
//! sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(…). Attention is causal; its relative term is the model's:
//! - `music`: Huang et al.'s E_r (heads, R, d_head), rows for distances −(R−1)..0 (R = the training length),
//!   zero beyond (tensor2tensor's edge); the skew for a full sequence, the direct gather for a cached step;
//! - `shaw`: Shaw et al.'s w^K and w^V (heads, 2k+1, d_head), clip(j − i, k);
//! - `rope`: Q and K rotated by position (interleaved pairs, base 10000, every component: [`Rope::default`]);
//!   a cached step rotates the window's keys by their places in it, which gives the same angles j − i;
//! - `alibi`: m_h·(j − i) added after the scale, the paper's slopes ([`alibi::slopes`]; not in the file);
//! - `t5`: a trained bias per head and causal bucket of j − i (`t5_buckets`, `t5_max_distance` of the config);
//! - `absolute`: no relative term. It runs through the same layer as Shaw with k = 0, a^V off and a zero
//!   table, so its relative logits are exactly zero and every stage of the page still applies.
//!
//! The file is a safetensors file whose metadata key `config` holds [`ModelConfig`] as JSON (with the training
//! figures beside it); the tensors are named `embed`, `ln_f.{weight,bias}` and, for each layer ℓ,
//! `layers.ℓ.{ln1,ln2}.{weight,bias}`, `layers.ℓ.attn.{w_q,b_q,w_k,b_k,w_v,b_v,w_o,b_o}`,
//! `layers.ℓ.attn.{rel_k,rel_v}` (shaw), `layers.ℓ.attn.e_r` (music) or `layers.ℓ.attn.t5_bias` (t5, (heads,
//! buckets)), `layers.ℓ.ffn.{w1,b1,w2,b2}`.

use crate::attention::{attend_head, rope_table, Config, HeadInput};
use crate::backend::Backend;
use crate::core::finite::check_overflow;
use crate::core::matmul::matmul;
use crate::error::{in_range, Error, Result};
use crate::layer::forward;
use crate::layer::scenario::Scenario;
use crate::layer::trace::Trace;
use crate::positions::absolute::add_sinusoid;
use crate::positions::alibi;
use crate::positions::rope::Rope;
use crate::positions::t5::Buckets;
use crate::positions::table::Edge;
use crate::positions::Method;
use crate::timing::StageTimes;
use ndarray::{s, Array1, Array2, Array3, ArrayView2, Axis, Ix1, Ix2, Ix3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

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
        // The scheme's own options (T5's buckets, RoPE's pairs in d_head), named as the config's fields.
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
    /// its input: its layer is Shaw's with k = 0 and a zero table.
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
        check_overflow(name, &out, false)?;
        Ok(out)
    }
}

/// One layer's attention weights, laid out as relattn's [`Scenario`] reads them.
struct Attention {
    w: [Array2<f32>; 4],
    b: [Array1<f32>; 4],
    /// (heads, R, width), the layer's table ([`crate::positions::Scheme::table_rows`] and `table_width`): w^K
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
    /// Loads a model from the bytes of its safetensors file; every error names the file and the field.
    pub fn load(bytes: &[u8], file_name: &str) -> Result<Transformer> {
        let file_err = |reason: String| Error::File { path: file_name.into(), reason };
        let st = safetensors::SafeTensors::deserialize(bytes).map_err(|e| file_err(format!("not a safetensors file: {e}")))?;
        let (_, header) = safetensors::SafeTensors::read_metadata(bytes).map_err(|e| file_err(format!("not a safetensors file: {e}")))?;
        let text = header.metadata().as_ref().and_then(|m| m.get("config")).ok_or_else(|| file_err("its metadata has no 'config'".into()))?;
        let metadata: serde_json::Value = serde_json::from_str(text).map_err(|e| file_err(format!("metadata 'config' is not JSON: {e}")))?;
        let config: ModelConfig = serde_json::from_value(metadata.clone()).map_err(|e| file_err(format!("metadata 'config': {e}")))?;
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
                    Method::Rope | Method::Absolute => Array3::zeros((h, rows, width)),
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
            return Err(Error::invalid("tensor", format!("'{extra}' in {file_name}"), "only the tensors of this config (see src/trained/transformer.rs)"));
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

    /// `E[token] · √d_model` (+ PE[first_position + t] for the absolute model), one row per token;
    /// "embedding" names an overflow (an embedding near float32's limit, scaled by √d_model).
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
        check_overflow("embedding", &x, false)?;
        Ok(x)
    }

    /// Layer `l`'s attention tensors as a [`Scenario`] over its input `h` (T, d_model).
    fn scenario(&self, l: usize, h: Array2<f32>) -> Scenario {
        let a = &self.blocks[l].attn;
        let [w_q, w_k, w_v, w_o] = a.w.clone();
        let [b_q, b_k, b_v, b_o] = a.b.clone();
        Scenario { x: h.insert_axis(Axis(0)), w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o, rel_k: a.rel_k.clone(), rel_v: a.rel_v.clone(), key_mask: None }
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
        let sizes = forward::Sizes { batch: 1, n: tokens.len(), d_model: self.config.d_model, per_head_tables: true, trace, parallel };
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
        check_overflow(&format!("layers.{l}.residual after attention"), &*x, false)?;
        let ffn = self.blocks[l].ffn(l, x.view())?;
        *x += &ffn;
        check_overflow(&format!("layers.{l}.residual"), &*x, false)
    }

    /// The residual stream entering layer `stop` (all layers when `stop` = layers), (T, d_model).
    async fn residual(&self, backend: &mut Backend, tokens: &[u32], stop: usize) -> Result<Array2<f32>> {
        let mut x = self.embed(tokens, 0)?;
        let cfg = self.config.attention();
        for l in 0..stop {
            let sc = self.scenario(l, self.attention_input(l, x.view())?);
            let attn = backend.output(&cfg, &sc).await.map_err(|e| e.in_stage(&format!("layers.{l}.attn")))?;
            self.finish_layer(l, &mut x, attn.index_axis(Axis(0), 0))?;
        }
        Ok(x)
    }

    /// The output head: LN_f(x) · Embedᵀ, (T, vocab). Finite weights can still leave float32's range in the
    /// residual stream or here (the fuzzer found models that do): every stage of the forward pass is checked,
    /// and such values are refused with [`Error::Overflow`] naming the stage ("embedding", "layers.ℓ.ln1",
    /// "layers.ℓ.attn.logits", …, "ln_f", "logits") rather than returned as ±∞, NaN or rows made alike.
    fn logits(&self, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        let logits = matmul(self.ln_f.apply(x, "ln_f")?.view(), self.embed.t());
        check_overflow("logits", &logits, false)?;
        Ok(logits)
    }

    /// The logits (T, vocab) of every position: row t scores token t + 1.
    pub async fn forward_async(&self, backend: &mut Backend, tokens: &[u32]) -> Result<Array2<f32>> {
        self.check_length(tokens, false)?;
        let x = self.residual(backend, tokens, self.blocks.len()).await?;
        self.logits(x.view())
    }

    /// The trace of head `head` of layer `layer` on the window `start .. start + length` of a piece's `tokens`
    /// (`length`: the model's context, or the rest of the piece when shorter), every number checked by name:
    /// the command line's `model trace` and Python's `relattn.model_trace`.
    pub async fn window_trace(&self, backend: &mut Backend, tokens: &[u32], start: i64, length: Option<i64>, layer: i64, head: i64) -> Result<Trace> {
        let head = in_range("head", head, 0..=self.config.heads - 1, "the model's heads")?;
        self.window_trace_layer(backend, tokens, start, length, layer).await?.head(head)
    }

    /// [`Transformer::window_trace`] with every head of the layer.
    pub async fn window_trace_layer(&self, backend: &mut Backend, tokens: &[u32], start: i64, length: Option<i64>, layer: i64) -> Result<Trace> {
        let layer = in_range("layer", layer, 0..=self.config.layers - 1, "the model's layers")?;
        let start = in_range("start", start, 0..=tokens.len().saturating_sub(1), "the piece's tokens")?;
        let rest = tokens.len() - start;
        let length = match length {
            Some(l) => in_range("length", l, 1..=rest, "the piece's tokens from start")?,
            None => self.config.context.min(rest),
        };
        Ok(self.trace_async(backend, &tokens[start..start + length], layer).await?.0)
    }

    /// Every stage of layer `layer`'s attention (all its heads) on the real hidden states `LN₁(x)`, and the
    /// time of each stage of that layer.
    pub async fn trace_async(&self, backend: &mut Backend, tokens: &[u32], layer: usize) -> Result<(Trace, StageTimes)> {
        if layer >= self.blocks.len() {
            return Err(Error::invalid("layer", layer, format!("0..{}", self.blocks.len())));
        }
        self.check_length(tokens, true)?;
        let x = self.residual(backend, tokens, layer).await?;
        let sc = self.scenario(layer, self.attention_input(layer, x.view())?);
        backend.trace(&self.config.attention(), &sc).await.map_err(|e| e.in_stage(&format!("layers.{layer}.attn")))
    }

    /// Σ −ln p(token) over `seqs`, each cut into consecutive windows of `window` tokens that predict their
    /// tokens 1.. from the tokens before them in the window (the training script's evaluation), and the
    /// number of predicted tokens (≥ 1: sequences with no window of 2 tokens are refused, naming "tokens",
    /// rather than averaged to NaN). Nats; accumulated in f64.
    pub async fn nll_async(&self, backend: &mut Backend, seqs: &[&[u32]], window: usize) -> Result<(f64, usize)> {
        if window < 2 {
            return Err(Error::invalid("window", window, "2 or more"));
        }
        let (mut total, mut count) = (0.0, 0);
        for seq in seqs {
            for w in seq.chunks(window).filter(|w| w.len() >= 2) {
                let logits = self.forward_async(backend, w).await?;
                for (row, &next) in logits.rows().into_iter().zip(&w[1..]) {
                    total -= log_softmax_at(row.as_slice().expect("standard layout"), next as usize);
                    count += 1;
                }
            }
        }
        if count == 0 {
            return Err(Error::invalid(
                "tokens",
                format!("{} sequences with no 2 tokens to predict from", seqs.len()),
                "at least one sequence of 2 or more tokens",
            ));
        }
        Ok((total, count))
    }

    /// An empty key/value cache for [`Transformer::step`] whose tokens attend to the last `context` tokens
    /// fed (themselves included; at least 1).
    pub fn cache(&self, context: usize) -> Cache {
        let layers = self.blocks.len();
        Cache { keys: vec![Vec::new(); layers], values: vec![Vec::new(); layers], rows: 0, len: 0, context: context.max(1) }
    }

    /// Feeds one token after the `cache.len` already fed and returns the logits of the next one (vocab):
    /// each layer projects only the new token, appends its key and value to the cache and attends with
    /// Lq = 1 query against the last Lk = min(cache.len + 1, context) keys (the query is the last position).
    /// A sliding window: a step costs O(context · d_model) however many tokens came before, and the cache
    /// holds O(context · d_model). With context ≥ every token fed, the logits are the full forward pass's;
    /// with a shorter one, those of a forward pass whose causal mask also hides keys context or more tokens
    /// back (keys fed earlier still reach the query through the layers below). CPU. On an error the cache
    /// is as it was.
    pub fn step(&self, cache: &mut Cache, token: u32) -> Result<Array1<f32>> {
        cache.make_room(self.config.d_model);
        let result = self.step_layers(cache, token);
        match &result {
            Ok(_) => {
                cache.rows += 1;
                cache.len += 1;
            }
            Err(_) => cache.truncate(self.config.d_model),
        }
        result
    }

    /// [`Transformer::step`] before the cache counts the new row.
    fn step_layers(&self, cache: &mut Cache, token: u32) -> Result<Array1<f32>> {
        let mut x = self.embed(&[token], cache.len)?;
        let cfg = self.config.attention();
        let (d, dh) = (self.config.d_model, self.config.d_model / self.config.heads);
        let rows = cache.rows + 1;
        let lk = rows.min(cache.context);
        // RoPE: the query and the window's keys turned by their places in the window (one table a step).
        let rope = cfg.method.rotates().then(|| rope_table(&cfg, 1, lk, dh));
        for (l, block) in self.blocks.iter().enumerate() {
            let a = &block.attn;
            let h = self.attention_input(l, x.view())?;
            let proj = |i: usize| matmul(h.view(), a.w[i].view()) + &a.b[i];
            let q = proj(0);
            cache.keys[l].extend(proj(1).iter());
            cache.values[l].extend(proj(2).iter());
            let held = (rows - lk) * d..rows * d;
            let keys = ArrayView2::from_shape((lk, d), &cache.keys[l][held.clone()]).expect("lk rows of d_model");
            let values = ArrayView2::from_shape((lk, d), &cache.values[l][held]).expect("lk rows of d_model");
            let mut heads = Array2::zeros((1, d));
            for hi in 0..self.config.heads {
                let cols = s![.., hi * dh..(hi + 1) * dh];
                let input = HeadInput {
                    q: q.slice(cols),
                    k: keys.slice(cols),
                    v: values.slice(cols),
                    rel_k: a.rel_k.index_axis(Axis(0), hi),
                    rel_v: a.rel_v.as_ref().map(|t| t.index_axis(Axis(0), hi)),
                    key_mask: None,
                    rope: rope.as_ref(),
                };
                let z = attend_head(&cfg, &input, None).map_err(|e| e.in_stage(&format!("layers.{l}.attn")).within(&[hi]))?;
                heads.slice_mut(cols).assign(&z);
            }
            let attn = matmul(heads.view(), a.w[3].view()) + &a.b[3];
            self.finish_layer(l, &mut x, attn.view())?;
        }
        Ok(self.logits(x.view())?.index_axis_move(Axis(0), 0))
    }

    /// Feeds `tokens` (1..=context of them) into an empty `cache` in one forward pass (the fused layer, causal
    /// over the T tokens) and returns the logits of the token after the last (vocab): the cache then holds
    /// what T calls of [`Transformer::step`] would have left, up to float32 rounding, for O(T · d_model)
    /// memory and one pass instead of T. On an error the cache is left empty.
    pub fn prefill(&self, cache: &mut Cache, tokens: &[u32]) -> Result<Array1<f32>> {
        if cache.len > 0 {
            return Err(Error::invalid("cache", format!("{} tokens fed", cache.len), "an empty cache"));
        }
        if tokens.len() > cache.context {
            return Err(Error::invalid("tokens", tokens.len(), format!("1..={} (the cache's context)", cache.context)));
        }
        self.check_length(tokens, false)?;
        let result = self.prefill_layers(cache, tokens);
        match &result {
            Ok(_) => (cache.rows, cache.len) = (tokens.len(), tokens.len()),
            Err(_) => cache.truncate(self.config.d_model),
        }
        result
    }

    /// [`Transformer::prefill`] before the cache counts the rows.
    fn prefill_layers(&self, cache: &mut Cache, tokens: &[u32]) -> Result<Array1<f32>> {
        let mut x = self.embed(tokens, 0)?;
        let cfg = self.config.attention();
        for l in 0..self.blocks.len() {
            let sc = self.scenario(l, self.attention_input(l, x.view())?);
            // The forward's own projections: its keys and values are the cache's (batch 1, row-major).
            let (projected, attn) = forward::forward_projected(&cfg, &sc).map_err(|e| e.in_stage(&format!("layers.{l}.attn")))?;
            cache.keys[l] = projected.k.into_iter().collect();
            cache.values[l] = projected.v.into_iter().collect();
            self.finish_layer(l, &mut x, attn.index_axis(Axis(0), 0))?;
        }
        let last = x.nrows() - 1;
        Ok(self.logits(x.slice(s![last.., ..]))?.index_axis_move(Axis(0), 0))
    }

    /// Continues `prime` by `settings.steps` tokens drawn from softmax(logits / temperature) with ChaCha8
    /// seeded by `settings.seed` (temperature 0: the most likely token), through the key/value cache with a
    /// sliding context ([`SampleSettings::context`]); `on_token` sees each new token as it is drawn. Returns
    /// prime + continuation. [`Transformer::sampler`] draws the same tokens one call at a time.
    pub fn sample(&self, prime: &[u32], settings: &SampleSettings, mut on_token: impl FnMut(u32)) -> Result<Vec<u32>> {
        let mut sampler = self.sampler(prime, settings)?;
        let mut out = prime.to_vec();
        while let Some(next) = sampler.next_token(self)? {
            out.push(next);
            on_token(next);
        }
        Ok(out)
    }

    /// [`Transformer::forward_async`] keeping every layer's attention weights, in one pass through the
    /// residual stream: each layer's attention runs as a trace (every stage, as [`Transformer::trace_async`]
    /// gives one layer), of which the weights are kept and the rest dropped before the next layer.
    pub async fn attention_pass_async(&self, backend: &mut Backend, tokens: &[u32]) -> Result<AttentionPass> {
        self.check_length(tokens, true)?;
        let mut x = self.embed(tokens, 0)?;
        let cfg = self.config.attention();
        let mut weights = Vec::with_capacity(self.blocks.len());
        for l in 0..self.blocks.len() {
            let sc = self.scenario(l, self.attention_input(l, x.view())?);
            let (trace, _) = backend.trace(&cfg, &sc).await.map_err(|e| e.in_stage(&format!("layers.{l}.attn")))?;
            self.finish_layer(l, &mut x, trace.output.index_axis(Axis(0), 0))?;
            weights.push(trace.weights.index_axis_move(Axis(0), 0));
        }
        Ok(AttentionPass { logits: self.logits(x.view())?, weights })
    }

    /// A [`Sampler`] that continues `prime` as [`Transformer::sample`] does (same checks, same ChaCha8
    /// stream), one token per [`Sampler::next_token`]. The prime's last `settings.context` tokens are fed
    /// here in one pass ([`Transformer::prefill`]); tokens before them are not read, so a prime of any
    /// length costs one forward pass of at most `context` tokens. Errors name "prime", "steps",
    /// "temperature" or "context".
    pub fn sampler(&self, prime: &[u32], settings: &SampleSettings) -> Result<Sampler> {
        settings.check()?;
        if settings.top_k > self.config.vocab {
            return Err(Error::invalid("top_k", settings.top_k, format!("0..={} (0: every token; the vocabulary has {0})", self.config.vocab)));
        }
        if prime.is_empty() {
            return Err(Error::invalid("prime", 0, "1 or more tokens"));
        }
        let mut cache = self.cache(settings.context);
        let fed = &prime[prime.len().saturating_sub(settings.context)..];
        let logits = self.prefill(&mut cache, fed)?;
        Ok(Sampler { cache, rng: ChaCha8Rng::seed_from_u64(settings.seed), logits, settings: *settings, left: settings.steps })
    }
}

/// The sampler's defaults, the same in the CLI and the page, chosen by the figures of the music sampled
/// (`relattn model stats`, MODELS.md): no top-k, a nucleus of 0.9.
pub const DEFAULT_TOP_K: usize = 0;
pub const DEFAULT_TOP_P: f32 = 0.9;

/// Most tokens one sampling may draw ([`SampleSettings::steps`]).
pub const MAX_SAMPLE_STEPS: usize = 1 << 16;
/// Longest context a model or a sampling may have ([`ModelConfig::context`], [`SampleSettings::context`]).
pub const MAX_CONTEXT: usize = 1 << 16;

/// How [`Transformer::sample`] draws.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleSettings {
    /// Tokens to draw, 0..=[`MAX_SAMPLE_STEPS`].
    pub steps: usize,
    /// softmax(logits / temperature), 0..=100 (0: always the most likely token).
    pub temperature: f32,
    /// Only the `top_k` most likely tokens are drawn from, 0..=vocab (0: every token).
    pub top_k: usize,
    /// Only the fewest most likely tokens whose probabilities reach `top_p` are drawn from (nucleus), in
    /// (0, 1] (1: every token).
    pub top_p: f32,
    /// Seed of the ChaCha8 stream: the same seed gives the same tokens.
    pub seed: u64,
    /// Tokens each new token attends to (itself and the context − 1 before it), 1..=[`MAX_CONTEXT`]: the
    /// model's training context is the length its NLL is measured at, and the natural choice.
    pub context: usize,
}

impl SampleSettings {
    /// The model's own context, the default truncation ([`DEFAULT_TOP_K`], [`DEFAULT_TOP_P`]) and the given
    /// draws.
    pub fn new(model: &Transformer, steps: usize, temperature: f32, seed: u64) -> SampleSettings {
        SampleSettings { steps, temperature, top_k: DEFAULT_TOP_K, top_p: DEFAULT_TOP_P, seed, context: model.config.context }
    }

    /// Refuses a value out of its range, naming the field.
    pub fn check(&self) -> Result<()> {
        if !(0.0..=100.0).contains(&self.temperature) {
            return Err(Error::invalid("temperature", self.temperature, "0..=100 (0: always the most likely token)"));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(Error::invalid("top_p", self.top_p, "a share in (0, 1] (1: every token)"));
        }
        if self.steps > MAX_SAMPLE_STEPS {
            return Err(Error::invalid("steps", self.steps, format!("0..={MAX_SAMPLE_STEPS}")));
        }
        if !(1..=MAX_CONTEXT).contains(&self.context) {
            return Err(Error::invalid("context", self.context, format!("1..={MAX_CONTEXT} tokens")));
        }
        Ok(())
    }
}

/// One forward pass over T tokens with what the page shows of every layer.
pub struct AttentionPass {
    /// (T, vocab): row t scores token t + 1, as [`Transformer::forward_async`].
    pub logits: Array2<f32>,
    /// One (heads, T, T) array per layer: α[h, i, j], the weight query i gives key j in head h (each row
    /// sums to 1; 0 for j > i, causal).
    pub weights: Vec<Array3<f32>>,
}

/// [`Transformer::sample`] one token at a time (from [`Transformer::sampler`]): each [`Sampler::next_token`]
/// draws u ~ U[0, 1) from the ChaCha8 stream, takes the token whose cumulative softmax(logits / temperature)
/// first exceeds u, and feeds it through the cache for the next logits.
pub struct Sampler {
    cache: Cache,
    rng: ChaCha8Rng,
    /// (vocab): the logits of the next token.
    logits: Array1<f32>,
    settings: SampleSettings,
    /// Tokens still to draw.
    left: usize,
}

impl Sampler {
    /// The next token, or `None` once the `steps` asked for are drawn. The last token is not fed (no logits
    /// after it are needed), as in [`Transformer::sample`].
    pub fn next_token(&mut self, model: &Transformer) -> Result<Option<u32>> {
        if self.left == 0 {
            return Ok(None);
        }
        let next = draw(self.logits.as_slice().expect("standard layout"), &self.settings, self.rng.random::<f64>());
        self.left -= 1;
        if self.left > 0 {
            self.logits = model.step(&mut self.cache, next)?;
        }
        Ok(Some(next))
    }

    /// Tokens still to draw.
    pub fn remaining(&self) -> usize {
        self.left
    }
}

impl Block {
    /// `gelu(LN₂(x) W₁ + b₁) W₂ + b₂` of layer `l`, each stage checked ("layers.ℓ.ln2", "layers.ℓ.ffn.w1",
    /// "layers.ℓ.ffn.w2").
    fn ffn(&self, l: usize, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        let mut u = matmul(self.ln2.apply(x, &format!("layers.{l}.ln2"))?.view(), self.w1.view()) + &self.b1;
        u.mapv_inplace(gelu);
        check_overflow(&format!("layers.{l}.ffn.w1"), &u, false)?;
        let out = matmul(u.view(), self.w2.view()) + &self.b2;
        check_overflow(&format!("layers.{l}.ffn.w2"), &out, false)?;
        Ok(out)
    }
}

/// The keys and values of the tokens fed, per layer, (rows, d_model) row-major: the last `context` rows are
/// attended to, and older ones are dropped in batches (`Cache::make_room`).
#[derive(Clone, Debug)]
pub struct Cache {
    keys: Vec<Vec<f32>>,
    values: Vec<Vec<f32>>,
    /// Rows held per layer.
    rows: usize,
    /// Tokens fed so far (the position of the next one: the absolute model's sinusoid).
    pub len: usize,
    /// Keys each new token attends to.
    context: usize,
}

impl Cache {
    /// Before a step: once the rows held pass `context` by min(context, 1024), drops the oldest so that
    /// context − 1 remain (the new token's row makes context): memory stays O(context · d_model) and the copy
    /// costs O(d_model) per step on average.
    fn make_room(&mut self, d: usize) {
        if self.rows < self.context + self.context.min(1024) {
            return;
        }
        let dropped = self.rows + 1 - self.context;
        for t in self.keys.iter_mut().chain(self.values.iter_mut()) {
            t.drain(..dropped * d);
        }
        self.rows -= dropped;
    }

    /// Drops whatever a failed step or prefill appended past the rows counted.
    fn truncate(&mut self, d: usize) {
        for t in self.keys.iter_mut().chain(self.values.iter_mut()) {
            t.truncate(self.rows * d);
        }
    }
}

/// `½u(1 + tanh(√(2/π)(u + 0.044715u³)))`.
fn gelu(u: f32) -> f32 {
    0.5 * u * (1.0 + (0.797_884_6 * (u + 0.044715 * u * u * u)).tanh())
}

/// `ln softmax(logits)[k]` in f64.
pub fn log_softmax_at(logits: &[f32], k: usize) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&v| (v as f64 - max).exp()).sum();
    logits[k] as f64 - max - sum.ln()
}

/// softmax(logits / temperature) as probabilities in f64 (temperature 0: all mass on the first maximum).
pub fn probabilities(logits: &[f32], temperature: f32) -> Vec<f64> {
    if temperature == 0.0 {
        let best = logits.iter().enumerate().fold(0, |b, (i, &v)| if v > logits[b] { i } else { b });
        return (0..logits.len()).map(|i| if i == best { 1.0 } else { 0.0 }).collect();
    }
    let t = temperature as f64;
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let e: Vec<f64> = logits.iter().map(|&v| ((v as f64 - max) / t).exp()).collect();
    let sum: f64 = e.iter().sum();
    e.into_iter().map(|v| v / sum).collect()
}

/// [`probabilities`] kept to the `top_k` most likely tokens (0: every token) and then to the fewest most likely
/// whose probabilities reach `top_p` (nucleus sampling, Holtzman et al. 2020; 1: every token), renormalized.
/// Equal probabilities keep the lower token first.
pub fn truncated_probabilities(logits: &[f32], temperature: f32, top_k: usize, top_p: f32) -> Vec<f64> {
    let mut p = probabilities(logits, temperature);
    if top_k == 0 && top_p >= 1.0 {
        return p;
    }
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
    let mut keep = if top_k == 0 { p.len() } else { top_k.min(p.len()) };
    let mut acc = 0.0;
    for (n, &i) in order.iter().enumerate().take(keep) {
        acc += p[i];
        if acc >= top_p as f64 {
            keep = n + 1;
            break;
        }
    }
    for &i in &order[keep..] {
        p[i] = 0.0;
    }
    let sum: f64 = p.iter().sum();
    p.iter_mut().for_each(|v| *v /= sum);
    p
}

/// The token whose cumulative probability (of [`truncated_probabilities`]) first exceeds `u` ∈ [0, 1).
fn draw(logits: &[f32], settings: &SampleSettings, u: f64) -> u32 {
    let p = truncated_probabilities(logits, settings.temperature, settings.top_k, settings.top_p);
    let mut acc = 0.0;
    for (i, pi) in p.iter().enumerate() {
        acc += pi;
        if u < acc {
            return i as u32;
        }
    }
    p.iter().rposition(|&pi| pi > 0.0).unwrap_or(0) as u32
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

    #[test]
    fn drawing_follows_the_cumulative_probabilities() {
        let logits = [0.0f32, (3.0f32).ln()]; // p = 0.25, 0.75
        let at = |temperature, top_k, top_p| SampleSettings { steps: 1, temperature, top_k, top_p, seed: 0, context: 1 };
        let plain = at(1.0, 0, 1.0);
        assert_eq!((draw(&logits, &plain, 0.2), draw(&logits, &plain, 0.3), draw(&logits, &plain, 0.999)), (0, 1, 1));
        assert_eq!(draw(&logits, &at(0.0, 0, 1.0), 0.0), 1);
        // Truncated to the most likely token by top-k 1 or by a nucleus of 0.7 (< 0.75): token 1 always.
        assert_eq!((draw(&logits, &at(1.0, 1, 1.0), 0.2), draw(&logits, &at(1.0, 0, 0.7), 0.2)), (1, 1));
        // p = 0.1, 0.2, 0.3, 0.4: the nucleus 0.65 keeps 0.4 and 0.3 (0.7 ≥ 0.65), renormalized to 4/7, 3/7.
        let four = [0.1f32.ln(), 0.2f32.ln(), 0.3f32.ln(), 0.4f32.ln()];
        let p = truncated_probabilities(&four, 1.0, 0, 0.65);
        assert!(p[0] == 0.0 && p[1] == 0.0 && (p[2] - 3.0 / 7.0).abs() < 1e-6 && (p[3] - 4.0 / 7.0).abs() < 1e-6, "{p:?}");
        let p = truncated_probabilities(&four, 1.0, 3, 1.0);
        assert!(p[0] == 0.0 && (p[1] - 2.0 / 9.0).abs() < 1e-6, "{p:?}");
        let p = probabilities(&logits, 1.0);
        assert!((p[0] - 0.25).abs() < 1e-6 && (p[1] - 0.75).abs() < 1e-6, "{p:?}");
        assert!((log_softmax_at(&logits, 0) - 0.25f64.ln()).abs() < 1e-7);
    }
}
