//! The key/value cache: a prompt fed in one pass ([`Transformer::prefill`]), then one token a step
//! ([`Transformer::step`]) attending to the last `context` tokens, a sliding window.

use super::Transformer;
use ndarray::{s, Array1, Array2, ArrayView2, Axis};
use relattn_core::attention::{attend_head, rope_table, HeadInput};
use relattn_core::core::matmul::matmul;
use relattn_core::error::{Error, Result};
use relattn_core::layer::forward;

impl Transformer {
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
                    sink: None,
                    segments: None,
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
