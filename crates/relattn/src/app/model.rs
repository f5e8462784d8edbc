//! The page's Model mode: a trained chorale model ([`crate::trained::transformer`]) and the test split ([`crate::trained::chorales`]) held in the worker's
//! memory. A window's forward pass, its NLL and a layer's trace are computed where the request's `backend` says, by a [`Runner`] as Parameters mode's compute:
//! in the page on WebGPU when it is usable, else on the CPU with the reason ([`BackendUsed`]). Sampling with the key/value cache runs on the CPU
//! ([`Transformer::step`] has no [`crate::Backend`] path: one query row at a time).
//!
//! [`ChoraleSession::load`] reads a model and the data; [`ChoraleSession::run`] computes a window ([`ModelRequest`] → [`WindowInfo`]) keeping every layer's
//! attention weights and the logits, which [`ChoraleSession::weights`], [`ChoraleSession::distance_profile`] and [`ChoraleSession::predict`] read without
//! computing again; the rest: a layer's trace, sampling (`relattn model sample`'s tokens, a few a call), another window's NLL (each method says how).
//!
//! Positions: a window of T tokens starts at token `start` of the piece (a multiple of 4, so token t of the window is voice (t mod 4) ∈ soprano, alto, tenor,
//! bass at 16th-note step (start + t) div 4 of the piece). Windows run up to [`CONTEXTS_PER_WINDOW`] × the training context, past what the model saw.

use super::request::Inputs;
use super::session::Session;
use super::Runner;
use crate::options::whole;
use crate::protocol::{
    BackendChoice, BackendUsed, Candidate, Cut, DistanceProfile, ModelInfo, ModelRequest, Note, PieceInfo, PositionNll, Prediction, SampleRequest, Sampled,
    SamplingInfo, Timing, WindowInfo,
};
use crate::render::{self, Palette};
use crate::trained::chorales::{Chorales, VOICES};
use crate::trained::heads::{self, Meter};
use crate::trained::transformer::{log_softmax_at, probabilities, AttentionPass, SampleSettings, Sampler, Transformer, DEFAULT_TOP_K, DEFAULT_TOP_P};
use ndarray::{ArrayView2, Axis};
use relattn_core::error::{check_index, Error, Result};
use relattn_core::layer::scenario::{Arrays, Spec};
use relattn_core::stage::Scale;
use relattn_core::timing::now_ms;
use std::cell::{Ref, RefCell};

/// A window may hold up to this many times the model's training context (1024 tokens for the shipped
/// models: the longest windows docs/src/models.md evaluates). Running a 1024-token window grows the wasm memory to
/// about 400 MiB (measured in chromium: the trace of one layer at a time, all layers' weights, 48 MiB, kept).
/// [`Transformer`] itself only refuses what exceeds its memory budget. Past the context each model meets distances or
/// positions it never trained on: the Music Transformer's E_r has rows for distances −(context − 1)..0 and reads zero
/// beyond (its relative logit is 0 there); Shaw's tables clip every distance below −k to −k (k = 64); the absolute
/// model adds sinusoids, defined at every position, for positions it never saw (docs/src/models.md, "Longer than
/// trained", gives every model's NLL at each length).
pub const CONTEXTS_PER_WINDOW: usize = 4;
/// Most tokens one [`ChoraleSession::start_sampling`] may draw.
pub const MAX_STEPS: usize = 4096;

/// A [`ModelRequest`] checked against the data and the model.
struct WindowAsked {
    /// The piece's BWV number ("" for an opening chord).
    piece: String,
    opening: Option<String>,
    start: usize,
    transpose: i32,
    /// The transpositions the window allows, (min, max).
    transpose_range: (i32, i32),
    /// The window's tokens, transposed.
    tokens: Vec<u32>,
    backend: BackendChoice,
}

/// The window last run.
struct Window {
    start: usize,
    /// The piece's meter, which names distances ([`crate::trained::heads`]).
    meter: Meter,
    /// The window's tokens, transposed (T).
    tokens: Vec<u32>,
    pass: AttentionPass,
}

/// A sampling under way: its sampler and the tokens drawn so far.
struct Sampling {
    sampler: Sampler,
    drawn: Vec<u32>,
}

/// What a [`ChoraleSession`]'s methods change: the window last run, the sampling under way, and the map last
/// selected by [`ChoraleSession::weights`].
#[derive(Default)]
struct State {
    window: Option<Window>,
    sampling: Option<Sampling>,
    /// The (T, T) map last selected, row-major, and its RGBA pixels.
    values: Vec<f32>,
    rgba: Vec<u8>,
}

impl State {
    fn window(&self) -> Result<&Window> {
        self.window.as_ref().ok_or_else(|| Error::invalid("window", "no window yet", "a window: call run first"))
    }
}

/// A model, its data, the window last run and the map last selected.
///
/// The methods that compute ([`ChoraleSession::run`], [`ChoraleSession::nll_by_position`],
/// [`ChoraleSession::trace`]) are async: on the GPU they await the device. While the promise of one is
/// pending, wasm-bindgen holds a shared borrow of the session, and a method taking `&mut self` called
/// meanwhile would throw ("recursive use of an object"); the worker does call others meanwhile (a sampling,
/// the NLL comparison, the models side by side run beside a window's pass). So every method takes `&self`:
/// the model and the data never change after [`ChoraleSession::load`], and what does ([`State`]) is in a
/// `RefCell` borrowed only between awaits, never across one. A computation reads the tokens it needs first
/// (its own request's, or a copy of the window's), awaits, and only then stores what it computed: the last
/// pass to finish is the window.
pub struct ChoraleSession {
    model: Transformer,
    data: Chorales,
    info: ModelInfo,
    state: RefCell<State>,
}

/// The semitones that keep every pitch of `tokens` within tokens 1..vocab: (1 − lowest, vocab − 1 −
/// highest); ±(vocab − 2) when all are rests.
fn transpose_range(tokens: &[u32], vocab: usize) -> (i32, i32) {
    let top = vocab as i32 - 1;
    let pitched = tokens.iter().filter(|&&t| t != 0).map(|&t| t as i32);
    let (lo, hi) = pitched.fold((top, 1), |(lo, hi), t| (lo.min(t), hi.max(t)));
    (1 - lo, top - hi)
}

/// `tokens` with every pitch moved by `semitones` (rests stay), within the range of [`transpose_range`].
fn transposed(tokens: &[u32], semitones: i32) -> Vec<u32> {
    tokens.iter().map(|&t| if t == 0 { 0 } else { (t as i32 + semitones) as u32 }).collect()
}

/// [`PositionNll`] of a window's tokens from its logits (T, vocab), computed on `backend` in `ms`.
fn position_nll(logits: ArrayView2<f32>, tokens: &[u32], ms: f64, backend: BackendUsed) -> PositionNll {
    let values: Vec<f64> =
        logits.rows().into_iter().zip(&tokens[1..]).map(|(row, &next)| -log_softmax_at(row.as_slice().expect("standard layout"), next as usize)).collect();
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    PositionNll { values, mean, ms, backend }
}

impl ChoraleSession {
    /// A token at position `position` of the piece as a [`Note`].
    fn note(&self, token: u32, position: usize) -> Note {
        Note { token, voice: position % VOICES.len(), step: position / VOICES.len(), midi: self.data.pitch(token) }
    }

    fn candidate(&self, token: u32, probability: f64, rank: usize) -> Candidate {
        let name = self.data.vocab.get(token as usize).cloned().unwrap_or_default();
        Candidate { token, name, midi: self.data.pitch(token), probability, rank }
    }

    /// Layer `layer`'s head `head` of the current window of `state`, (T, T).
    fn map<'a>(&self, state: &'a State, layer: usize, head: usize) -> Result<ArrayView2<'a, f32>> {
        let w = state.window()?;
        let c = &self.model.config;
        check_index("layer", layer, c.layers)?;
        check_index("head", head, c.heads)?;
        Ok(w.pass.weights[layer].index_axis(Axis(0), head))
    }

    /// A [`ModelRequest`] checked against the data and the model.
    fn resolve(&self, r: &ModelRequest) -> Result<WindowAsked> {
        let r = r.clone();
        let opening = r.window.opening.filter(|o| !o.trim().is_empty());
        let (bwv, start, window) = match &opening {
            Some(names) => (String::new(), 0, self.data.chord(names)?.to_vec()),
            None => {
                let piece = self.data.piece(&r.window.piece)?;
                let n = piece.tokens.len();
                let start = whole("start", r.window.start, 0, n - VOICES.len())?;
                if start % VOICES.len() != 0 {
                    return Err(Error::invalid("start", start, format!("a multiple of 4 in 0..={} (windows start on a 16th-note step)", n - 4)));
                }
                let max = (n - start).min(self.info.max_length);
                let length = whole("length", r.window.length, 2, max)?;
                (piece.bwv.clone(), start, piece.tokens[start..start + length].to_vec())
            }
        };
        let window = &window[..];
        let range = transpose_range(window, self.data.vocab.len());
        let t = r.window.transpose;
        if !(t.is_finite() && t.fract() == 0.0 && (range.0 as f64..=range.1 as f64).contains(&t)) {
            let allowed = format!("a whole number of semitones in {}..={} (keeps this window's pitches in the vocabulary)", range.0, range.1);
            return Err(Error::invalid("transpose", t, allowed));
        }
        let backend = BackendChoice::named(&r.backend)?;
        Ok(WindowAsked { piece: bwv, opening, start, transpose: t as i32, transpose_range: range, tokens: transposed(window, t as i32), backend })
    }

    /// The map last selected by [`ChoraleSession::weights`]: (T, T) f32 values, row-major.
    pub fn values(&self) -> Ref<'_, [f32]> {
        Ref::map(self.state.borrow(), |s| &s.values[..])
    }

    /// The pixels of the map last selected by [`ChoraleSession::weights`].
    pub fn rgba(&self) -> Ref<'_, [u8]> {
        Ref::map(self.state.borrow(), |s| &s.rgba[..])
    }

    /// The current window's tokens followed by the tokens sampled so far.
    pub fn tokens(&self) -> Vec<u32> {
        let s = self.state.borrow();
        let window = s.window.as_ref().map_or(&[][..], |w| &w.tokens[..]);
        let drawn = s.sampling.as_ref().map_or(&[][..], |s| &s.drawn[..]);
        [window, drawn].concat()
    }
    /// A model from its safetensors file's bytes (`name`: the file's name, for errors and
    /// [`ModelInfo::name`]) and the chorale data file's bytes (models/chorales-test.json). Errors: field
    /// "file" (not a model or data file), "config.*", a tensor's name, or "data" (a vocabulary that is not
    /// the model's).
    pub fn load(model: &[u8], name: &str, data: &[u8]) -> Result<ChoraleSession> {
        let model = Transformer::load(model, name)?;
        let data = Chorales::parse(data, "the chorale data")?;
        let vocab = data.vocab.len();
        if vocab != model.config.vocab {
            return Err(Error::invalid("data", format!("{vocab} tokens"), format!("the model's vocabulary of {}", model.config.vocab)));
        }
        let pieces = data
            .pieces
            .iter()
            .map(|p| {
                let (transpose_min, transpose_max) = transpose_range(&p.tokens, vocab);
                PieceInfo {
                    bwv: p.bwv.clone(),
                    title: p.title.clone(),
                    time_signature: p.time_signature.clone(),
                    bars: p.bars.clone(),
                    length: p.tokens.len(),
                    transpose_min,
                    transpose_max,
                }
            })
            .collect();
        let figure = |key: &str| model.metadata.get(key).and_then(serde_json::Value::as_f64);
        let info = ModelInfo {
            name: name.into(),
            kind: model.config.method,
            config: model.config.clone(),
            parameters: model.parameters(),
            test_nll: figure("test_nll"),
            valid_nll: figure("valid_nll"),
            max_length: CONTEXTS_PER_WINDOW * model.config.context,
            max_steps: MAX_STEPS,
            top_k: DEFAULT_TOP_K,
            top_p: DEFAULT_TOP_P,
            voices: VOICES.iter().map(|v| v.to_string()).collect(),
            vocab: data.vocab.clone(),
            pitch_min: data.pitch_min,
            steps_per_quarter: data.steps_per_quarter,
            split: data.split.clone(),
            pieces,
        };
        Ok(ChoraleSession { model, data, info, state: RefCell::default() })
    }

    /// The [`ModelInfo`].
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Runs a [`ModelRequest`] `{ piece, start, length, transpose, backend }`: one forward pass over the
    /// window, on the backend asked for (as `runner` decides), that keeps every layer's attention weights
    /// (layers × heads × T × T f32) and the logits (T × vocab); once computed, the window replaces the
    /// previous one and ends any sampling. Returns the [`WindowInfo`] (where it ran: `nll.backend`). Errors
    /// name the field: "piece", "start", "length", "transpose", "backend".
    pub async fn run(&self, runner: &impl Runner, request: &ModelRequest) -> Result<WindowInfo> {
        let WindowAsked { piece, opening, start, transpose, transpose_range, tokens, backend } = self.resolve(request)?;
        let t0 = now_ms();
        let ran = runner.run(backend, async |b| self.model.attention_pass_async(b, &tokens).await).await;
        let pass = ran.result?;
        let nll = position_nll(pass.logits.view(), &tokens, now_ms() - t0, ran.backend);
        let notes = tokens.iter().enumerate().map(|(t, &tok)| self.note(tok, start + t)).collect();
        let c = &self.model.config;
        let time_signature = self.data.piece(&piece).map(|p| p.time_signature.as_str()).unwrap_or("");
        let meter = Meter::of(time_signature, self.data.steps_per_quarter);
        let info = WindowInfo {
            piece,
            opening,
            start,
            length: tokens.len(),
            transpose,
            transpose_min: transpose_range.0,
            transpose_max: transpose_range.1,
            notes,
            nll,
            layers: c.layers,
            heads: c.heads,
            meter,
        };
        let mut state = self.state.borrow_mut();
        state.window = Some(Window { start, tokens, pass, meter });
        state.sampling = None;
        Ok(info)
    }

    /// The [`PositionNll`] of another window (a [`ModelRequest`]), by a forward pass that keeps no weights,
    /// on the backend asked for; the current window stays. For the 2× and 4× training-length comparison.
    pub async fn nll_by_position(&self, runner: &impl Runner, request: &ModelRequest) -> Result<PositionNll> {
        let WindowAsked { tokens, backend, .. } = self.resolve(request)?;
        let t0 = now_ms();
        let ran = runner.run(backend, async |b| self.model.forward_async(b, &tokens).await).await;
        let logits = ran.result?;
        Ok(position_nll(logits.view(), &tokens, now_ms() - t0, ran.backend))
    }

    /// Selects head `head` of layer `layer` of the current window: its (T, T) attention weights α[i, j]
    /// (query i, key j; rows sum to 1, 0 for j > i) and their pixels in the sequential colormap, pooled to at
    /// most `raster_side` a side ([`render::rgba_pooled`]: a thin diagonal stays) in `palette`; returns the
    /// [`Cut`] `{ rows, cols, raster_rows, raster_cols, lo, hi, has_values: true }`; the values and pixels are
    /// [`ChoraleSession::values`] and [`ChoraleSession::rgba`].
    pub fn weights(&self, layer: usize, head: usize, raster_side: usize, palette: Palette) -> Result<Cut> {
        let mut state = self.state.borrow_mut();
        let m = self.map(&state, layer, head)?;
        let (rgba, (raster_rows, raster_cols), (lo, hi)) = render::rgba_pooled(m, Scale::Sequential, palette, raster_side);
        let (rows, cols) = m.dim();
        let values = m.iter().copied().collect();
        (state.values, state.rgba) = (values, rgba);
        Ok(Cut { rows, cols, raster_rows, raster_cols, lo, hi, has_values: true, heads_shared: false, own_scale: false })
    }

    /// The [`DistanceProfile`] of head `head` of layer `layer` over the current window.
    pub fn distance_profile(&self, layer: usize, head: usize) -> Result<DistanceProfile> {
        let state = self.state.borrow();
        let m = self.map(&state, layer, head)?;
        let meter = state.window()?.meter;
        let n = m.nrows();
        let distribution = heads::distance_distribution(m);
        let distances: Vec<i64> = (0..n).map(|k| k as i64 - (n as i64 - 1)).collect();
        // The sum over the queries at distance d, spread over the T − |d| that reach it.
        let mean_weight = distribution.iter().zip(&distances).map(|(p, d)| p * n as f64 / (n - d.unsigned_abs() as usize) as f64).collect();
        let description = heads::describe(&distribution, meter);
        Ok(DistanceProfile { layer, head, distances, mean_weight, distribution, description, landmarks: heads::landmarks(meter) })
    }

    /// What head `head` of layer `layer` does over the current window, in one line (its
    /// [`DistanceProfile::description`], [`heads::describe`]), without the profile: the model view's tiles.
    pub fn head_description(&self, layer: usize, head: usize) -> Result<String> {
        let state = self.state.borrow();
        let m = self.map(&state, layer, head)?;
        Ok(heads::describe(&heads::distance_distribution(m), state.window()?.meter))
    }

    /// The [`Prediction`] at position `position` of the current window: the `top` most likely next tokens
    /// (1..=vocab) from row `position` of the logits.
    pub fn predict(&self, position: usize, top: usize) -> Result<Prediction> {
        let state = self.state.borrow();
        let w = state.window()?;
        let (n, vocab) = w.pass.logits.dim();
        if position >= n {
            return Err(Error::invalid("position", position, format!("0..={} (the window's tokens)", n - 1)));
        }
        if top == 0 || top > vocab {
            return Err(Error::invalid("top", top, format!("1..={vocab}")));
        }
        let p = probabilities(w.pass.logits.row(position).as_slice().expect("standard layout"), 1.0);
        let mut order: Vec<usize> = (0..vocab).collect();
        order.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
        let candidates = order.iter().take(top).enumerate().map(|(r, &k)| self.candidate(k as u32, p[k], r + 1)).collect();
        let actual = w.tokens.get(position + 1).map(|&next| {
            let rank = order.iter().position(|&k| k == next as usize).expect("every token is ranked") + 1;
            self.candidate(next, p[next as usize], rank)
        });
        Ok(Prediction { position, candidates, actual })
    }

    /// Every stage of layer `layer`'s attention (all heads) on the current window's hidden states, as a
    /// [`Session`] for the page's stage-by-stage figures (`cut(stage, 0, head, …)`), computed on `backend`
    /// ("auto", "webgpu" or "cpu", as [`ModelRequest::backend`]; the session's info says where). Its options
    /// are the attention layer's: its scheme, n = T. Errors: "window", "backend", "layer".
    pub async fn trace(&self, runner: &impl Runner, layer: usize, backend: &str) -> Result<Session> {
        let choice = BackendChoice::named(backend)?;
        // A copy: another window may be run while this one awaits the GPU.
        let tokens = self.state.borrow().window()?.tokens.clone();
        let t0 = now_ms();
        let ran = runner.run(choice, async |b| self.model.trace_async(b, &tokens, layer).await).await;
        let (trace, times) = ran.result?;
        let (_, _, n) = trace.dims();
        let inputs = Inputs {
            cfg: trace.config,
            spec: Spec { n, d_model: self.model.config.d_model, batch: 1, seed: 0 },
            arrays: Arrays::new(),
            per_head: true,
            preset: String::new(),
            tokens: Vec::new(),
            capture: None,
        };
        let timings = vec![Timing { name: "trace".into(), ms: now_ms() - t0 }];
        let title = format!("{} chorale model, layer {layer}", self.model.config.method.label());
        Ok(Session::whole(trace, &inputs, timings, ran.backend, &times).titled(title))
    }

    /// Starts sampling after the current window (a [`SampleRequest`] `{ steps, temperature, seed }`): the
    /// window is the prime, its last context tokens (the model's training context) fed into the key/value
    /// cache now in one pass, on the CPU (as every cached step: [`Transformer::step`] has no GPU path);
    /// [`ChoraleSession::next_tokens`] draws, each token attending to the context before it. The
    /// tokens equal `relattn model sample --piece P --prime T --steps S --temperature τ --seed s` for a
    /// window at start 0 without transposition (the CLI primes with the piece's first T tokens). Ends the
    /// sampling before. Returns the [`SamplingInfo`]; errors name "steps", "temperature", "seed", "top_k",
    /// "top_p" or "window".
    pub fn start_sampling(&self, r: &SampleRequest) -> Result<SamplingInfo> {
        let steps = whole("steps", r.steps, 1, MAX_STEPS)?;
        if !(0.0..=100.0).contains(&r.temperature) {
            return Err(Error::invalid("temperature", r.temperature, "0..=100 (0: always the most likely token)"));
        }
        let seed = whole("seed", r.seed, 0, u32::MAX as usize)? as u64;
        // top_p is the sampler's to check (SampleSettings::check), as the CLI's is.
        let top_k = whole("top_k", r.top_k, 0, self.model.config.vocab)?;
        let mut state = self.state.borrow_mut();
        let w = state.window()?;
        let t0 = now_ms();
        let settings = SampleSettings { top_k, top_p: r.top_p as f32, ..SampleSettings::new(&self.model, steps, r.temperature as f32, seed) };
        let sampler = self.model.sampler(&w.tokens, &settings)?;
        let prime = w.tokens.len();
        state.sampling = Some(Sampling { sampler, drawn: Vec::new() });
        Ok(SamplingInfo { prime, steps, ms: now_ms() - t0 })
    }

    /// Draws up to `count` (1..=[`MAX_STEPS`]) more tokens of the sampling started last, on the CPU; returns
    /// them as [`Sampled`] (no notes once every step is drawn). Errors: "count", or "sampling" when none was
    /// started.
    pub fn next_tokens(&self, count: usize) -> Result<Sampled> {
        if count == 0 || count > MAX_STEPS {
            return Err(Error::invalid("count", count, format!("1..={MAX_STEPS}")));
        }
        let t0 = now_ms();
        let mut state = self.state.borrow_mut();
        let state = &mut *state;
        let (w, s) = match (&state.window, &mut state.sampling) {
            (Some(w), Some(s)) => (w, s),
            _ => return Err(Error::invalid("sampling", "no sampling under way", "a sampling: call start_sampling first")),
        };
        let first = w.start + w.tokens.len() + s.drawn.len();
        let mut new = Vec::with_capacity(count);
        while new.len() < count {
            match s.sampler.next_token(&self.model)? {
                Some(token) => new.push(token),
                None => break,
            }
        }
        s.drawn.extend(&new);
        let (drawn, remaining) = (s.drawn.len(), s.sampler.remaining());
        let notes = new.iter().enumerate().map(|(k, &tok)| self.note(tok, first + k)).collect();
        Ok(Sampled { notes, drawn, remaining, ms: now_ms() - t0 })
    }

    /// A standard MIDI file (♩ = `bpm`, [`crate::trained::chorales::BPM`]) of the current window followed by the
    /// tokens sampled so far, one track per voice ([`Chorales::midi`]). Errors name "bpm".
    pub fn midi(&self, bpm: u32) -> Result<Vec<u8>> {
        self.data.midi(&self.tokens(), bpm)
    }
}
