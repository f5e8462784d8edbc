//! Sampling: the settings, the sampler drawing one token at a time through the cache, and the probabilities it
//! draws from (softmax with a temperature, top-k and nucleus truncation).

use super::{Cache, Transformer};
use ndarray::Array1;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use relattn_core::error::{Error, Result};

/// The sampler's defaults, the same in the CLI and the page, chosen by the figures of the music sampled
/// (`relattn model stats`, docs/src/models.md): no top-k, a nucleus of 0.9.
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

impl Transformer {
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
