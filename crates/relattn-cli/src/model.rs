//! `relattn model …`: a trained chorale model's config, evaluation, traces, sampling and music figures.

use crate::args::{ModelCommand, ModelFiles, SamplerArgs};
use crate::files::{load_model, read_chorales, write_atomic, write_file};
use crate::progress::Progress;
use crate::{say, Stop};
use relattn::error::in_range;
use relattn::gpu::GpuContext;
use relattn::trained::chorales::{Chorales, VOICES};
use relattn::trained::music_stats;
use relattn::trained::transformer::{SampleSettings, Transformer, MAX_CONTEXT, MAX_SAMPLE_STEPS};
use relattn::{Backend, Error};
use std::io::Write;
use std::path::Path;

impl ModelFiles {
    pub fn load(&self) -> relattn::Result<(Transformer, Chorales)> {
        let model = load_model(&self.model)?;
        let data = read_chorales(&self.data)?;
        same_vocabulary(&model, &data, &self.data)?;
        Ok((model, data))
    }
}

/// Refuses data (read from `path`) whose vocabulary is not the model's, naming "data".
pub fn same_vocabulary(model: &Transformer, data: &Chorales, path: &Path) -> relattn::Result<()> {
    if data.vocab.len() != model.config.vocab {
        let given = format!("{} tokens in {}", data.vocab.len(), path.display());
        return Err(Error::invalid("data", given, format!("the model's vocabulary of {}", model.config.vocab)));
    }
    Ok(())
}

/// Refuses data (read from `path`) with no pieces, naming "data": nothing to evaluate or measure.
pub fn with_pieces(data: &Chorales, path: &Path) -> relattn::Result<()> {
    if data.pieces.is_empty() {
        let given = format!("{}: no pieces (the {} split), so no token to predict", path.display(), data.split);
        return Err(Error::invalid("data", given, "a data file with at least one piece (every piece of --data is read)"));
    }
    Ok(())
}

pub fn backend_named(name: &str) -> relattn::Result<Backend> {
    Ok(match name {
        "gpu" => Backend::Gpu(pollster::block_on(GpuContext::try_new()).map_err(Error::Gpu)?),
        _ => Backend::Cpu,
    })
}

/// A multiple of 4 (whole 16th-note steps) in `range`, named by `field`.
pub fn whole_steps(field: &str, value: i64, range: std::ops::RangeInclusive<usize>, why: &str) -> relattn::Result<usize> {
    let v = in_range(field, value, range.clone(), why)?;
    if !v.is_multiple_of(4) {
        return Err(Error::invalid(field, value, format!("a multiple of 4 (whole steps of 4 voices) in {}..={} ({why})", range.start(), range.end())));
    }
    Ok(v)
}

impl SamplerArgs {
    /// The sampler's settings for `steps` tokens, each attending to `context`; top_k checked against the model's
    /// vocabulary (temperature and top_p by the sampler itself).
    fn settings(&self, model: &Transformer, steps: usize, context: usize) -> Result<SampleSettings, Stop> {
        let top_k = in_range("top_k", self.top_k, 0..=model.config.vocab, "0: every token; the vocabulary's size")?;
        Ok(SampleSettings { steps, temperature: self.temperature, top_k, top_p: self.top_p, seed: self.seed, context })
    }
}

pub fn run(command: ModelCommand) -> Result<(), Stop> {
    match command {
        ModelCommand::Stats { model, data, samples, length, prime, sampler, json } => {
            let chorales = read_chorales(&data)?;
            with_pieces(&chorales, &data)?;
            let sequences: Vec<Vec<u32>> = match model {
                None => chorales.pieces.iter().map(|p| p.tokens.clone()).collect(),
                Some(path) => {
                    let m = load_model(&path)?;
                    same_vocabulary(&m, &chorales, &data)?;
                    let samples = in_range("samples", samples, 1..=256, "continuations")?;
                    let length = whole_steps("length", length, 4..=MAX_SAMPLE_STEPS, "tokens per continuation")?;
                    let shortest = chorales.pieces.iter().map(|p| p.tokens.len()).min().unwrap_or(0);
                    let prime = whole_steps("prime", prime, 4..=shortest, "the shortest piece's tokens")?;
                    let settings = sampler.settings(&m, length, m.config.context)?;
                    let mut progress = Progress::new("sampling", "continuations", samples);
                    let mut out = Vec::with_capacity(samples);
                    for k in 0..samples {
                        let piece = &chorales.pieces[k % chorales.pieces.len()];
                        let settings = SampleSettings { seed: settings.seed.wrapping_add(k as u64), ..settings };
                        out.push(m.sample(&piece.tokens[..prime], &settings, |_| {})?[prime..].to_vec());
                        progress.tick(k + 1);
                    }
                    progress.finish();
                    out
                }
            };
            let f = music_stats::figures(sequences.iter().map(Vec::as_slice), chorales.pitch_min);
            if json {
                say(serde_json::to_string(&f).expect("figures print"))?;
            } else {
                say(format!("{} sequences, {} steps", f.sequences, f.steps))?;
                say(format!("voice crossings per step          {:.3}", f.crossings_per_step))?;
                say(format!("parallel fifths per 100 changes   {:.2}", f.parallel_fifths_per_100_changes))?;
                say(format!("parallel octaves per 100 changes  {:.2}", f.parallel_octaves_per_100_changes))?;
                say(format!("key fraction (Krumhansl)          {:.3}", f.key_fraction))?;
                say(format!("chord changes per step            {:.3}", f.chord_changes_per_step))?;
                for v in &f.voices {
                    let show = |p: Option<u8>| p.map_or("-".to_string(), |p| p.to_string());
                    let mean = v.mean.map_or("-".to_string(), |m| format!("{m:.1}"));
                    say(format!("{:<8} MIDI {}..{}, mean {mean}", v.voice, show(v.lowest), show(v.highest)))?;
                }
                say(format!("mean note length (16ths)          {:.2}", f.mean_note_length))?;
                say(format!("longest repeat (steps)            {}", f.longest_repeat))?;
            }
        }
        ModelCommand::Info { model } => {
            let m = load_model(&model)?;
            let mut info = m.metadata.clone();
            info["parameters_loaded"] = serde_json::json!(m.parameters());
            say(serde_json::to_string_pretty(&info).expect("JSON values print"))?;
        }
        ModelCommand::Eval { files, window, backend, json } => {
            let (model, data) = files.load()?;
            let window = match window {
                Some(w) => in_range("window", w, 2..=usize::MAX, "tokens per window")?,
                None => model.config.context,
            };
            with_pieces(&data, &files.data)?;
            let seqs: Vec<&[u32]> = data.pieces.iter().map(|p| p.tokens.as_slice()).collect();
            let mut backend = backend_named(&backend)?;
            let mut progress = Progress::new("evaluating", "pieces", seqs.len());
            let (mut total, mut count) = (0.0, 0);
            for (i, seq) in seqs.iter().enumerate() {
                let (t, c) = pollster::block_on(model.nll_async(&mut backend, &[seq], window))?;
                (total, count) = (total + t, count + c);
                progress.tick(i + 1);
            }
            progress.finish();
            let nll = total / count as f64;
            if json {
                say(serde_json::json!({ "nll": nll, "tokens": count, "pieces": seqs.len(), "window": window, "backend": backend.name() }))?;
            } else {
                say(format!("{nll:.6} nats per token over {count} predicted tokens ({} pieces, windows of {window})", seqs.len()))?;
            }
        }
        ModelCommand::Trace { files, piece, start, length, layer, head, backend, out } => {
            let (model, data) = files.load()?;
            let tokens = &data.piece(&piece)?.tokens;
            let mut backend = backend_named(&backend)?;
            let trace = pollster::block_on(model.window_trace(&mut backend, tokens, start, length, layer, head))?;
            write_atomic(&out, |tmp| write_file(tmp, |w| relattn::files::write_trace(&trace, w)))?;
        }
        ModelCommand::Sample { files, piece, opening, prime, steps, context, sampler, bpm, out, json } => {
            let (model, data) = files.load()?;
            let (tokens, prime) = match (&piece, &opening) {
                (Some(piece), _) => {
                    let tokens = data.piece(piece)?.tokens.clone();
                    let prime = in_range("prime", prime, 1..=tokens.len(), "the piece's tokens")?;
                    (tokens, prime)
                }
                (None, Some(chord)) => (data.chord(chord)?.to_vec(), VOICES.len()),
                (None, None) => {
                    let allowed = "--piece (a BWV number of --data, e.g. 10.7) or --opening (a chord, e.g. \"C5 G4 E4 C3\")";
                    return Err(Error::invalid("piece", "neither --piece nor --opening", allowed).into());
                }
            };
            let steps = in_range("steps", steps, 0..=MAX_SAMPLE_STEPS, "tokens one sampling may draw")?;
            let context = match context {
                Some(c) => in_range("context", c, 1..=MAX_CONTEXT, "tokens a new token may attend to")?,
                None => model.config.context,
            };
            let settings = sampler.settings(&model, steps, context)?;
            // Ctrl-C stops the sampling after its current token (nothing is written until the end).
            let interrupted = crate::files::stop_on_ctrl_c();
            let mut sampler = model.sampler(&tokens[..prime], &settings)?;
            let mut all = tokens[..prime].to_vec();
            let mut progress = Progress::new("sampling", "tokens", steps);
            while let Some(next) = sampler.next_token(&model)? {
                all.push(next);
                progress.tick(all.len() - prime);
                if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
                    progress.finish();
                    return Err(Stop::Interrupted(format!(
                        "interrupted after {} of {steps} tokens; nothing written to {} (the MIDI file is written only when every step is drawn)",
                        all.len() - prime,
                        out.display()
                    )));
                }
            }
            progress.finish();
            let midi = data.midi(&all, bpm)?;
            write_atomic(&out, |tmp| {
                write_file(tmp, |w| w.write_all(&midi).map_err(|e| Error::Write { path: tmp.display().to_string(), reason: e.to_string() }))
            })?;
            if json {
                say(serde_json::json!({ "prime": prime, "context": context, "tokens": all, "out": out.display().to_string() }))?;
            }
        }
    }
    Ok(())
}
