//! The model's passes over a whole sequence on a [`Backend`]: logits, a layer's trace, the NLL of windows, and
//! the pass that keeps every layer's attention weights for the page.

use super::{log_softmax_at, Transformer};
use ndarray::{Array2, Array3, Axis};
use relattn_core::backend::Backend;
use relattn_core::error::{in_range, Error, Result};
use relattn_core::layer::trace::Trace;
use relattn_core::timing::StageTimes;

impl Transformer {
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
}

/// One forward pass over T tokens with what the page shows of every layer.
pub struct AttentionPass {
    /// (T, vocab): row t scores token t + 1, as [`Transformer::forward_async`].
    pub logits: Array2<f32>,
    /// One (heads, T, T) array per layer: α[h, i, j], the weight query i gives key j in head h (each row
    /// sums to 1; 0 for j > i, causal).
    pub weights: Vec<Array3<f32>>,
}
