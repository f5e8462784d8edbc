//! `relattn`: compute relative attention, save every intermediate, render any stage for a slide.
//! Errors print one line naming the field, what was given and what is allowed, and exit with code 2.

use clap::{Args, Parser, Subcommand};
use relattn::attention::Config;
use relattn::error::in_range;
use relattn::error::Bytes;
use relattn::gpu::GpuContext;
use relattn::layer::forward::{self, Sizes, DEFAULT_MEMORY_LIMIT};
use relattn::layer::on_demand::{block_bytes, largest_stage_floats, Layer};
use relattn::layer::options::{LayerOptions, Limits, Resolved};
use relattn::layer::presets;
use relattn::layer::scenario::{read_arrays, read_at_most, sizes_of, Arrays, Scenario, Spec, MAX_FILE_BYTES};
use relattn::render::{self, Figure};
use relattn::timing::StageTimes;
use relattn::trained::chorales::{Chorales, BPM, VOICES};
use relattn::trained::music_stats;
use relattn::trained::transformer::{SampleSettings, Transformer, DEFAULT_TOP_K, DEFAULT_TOP_P, MAX_CONTEXT, MAX_SAMPLE_STEPS};
use relattn::{Backend, Error, Stage, Trace};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Most timed repetitions of `bench`.
const MAX_REPS: u64 = 10_000;
/// Most worker threads of `bench` (each is an OS thread; thousands only slow the start-up).
const MAX_THREADS: u64 = 256;
/// Largest memory budget in MiB: isize::MAX bytes, the most one array may take.
const MAX_MEMORY_MB: u64 = (isize::MAX as u64) >> 20;

#[derive(Parser)]
#[command(
    name = "relattn",
    version,
    about = "Relative-position self-attention (Shaw et al. 2018; Music Transformer) with every intermediate exposed",
    long_about = "Computes relative-position multi-head self-attention and writes every intermediate (distances, clipped \
indices, content and relative logits, the Music Transformer's skew steps, masked logits, weights, outputs) to an .npz, \
or renders one of them as a labelled heatmap (.svg or .png).\n\nTensors come from a scenario file (--tensors, an \
np.savez .npz; see README.md) and whatever it lacks is generated from --seed (ChaCha8; x ~ N(0, 1); weights and tables \
Xavier-uniform; biases 0)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compute a trace and write it as an .npz (rel_index, content_logits, relative_logits, logits, weights, output, ...).
    Compute {
        #[command(flatten)]
        setup: Setup,
        /// Where to write the trace (.npz).
        #[arg(long)]
        out: PathBuf,
        /// Print a JSON summary on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Render one stage of one head as a heatmap with a colorbar (.svg or .png).
    Render {
        #[command(flatten)]
        setup: Setup,
        /// Stage to draw: distances, rel_index, rel_k, rel_v, slopes, rope_angles, rope_kernel, rotated_q, rotated_k,
        /// content_logits, relative_logits, skew_qer, skew_padded, skew_reshaped, skew_sliced, logits, weights,
        /// value_buckets, output_content, output_relative, output.
        #[arg(long, value_parser = clap::value_parser!(Stage))]
        stage: Stage,
        /// Head to draw (0-based).
        #[arg(long, default_value_t = 0)]
        head: usize,
        /// Batch element to draw (0-based).
        #[arg(long, default_value_t = 0)]
        batch_index: usize,
        /// Space-separated tokens that label the axes (one per position).
        #[arg(long)]
        tokens: Option<String>,
        /// Figure size in pixels, WIDTHxHEIGHT.
        #[arg(long, default_value = "900x760")]
        size: String,
        /// Output file: .svg (vector) or .png.
        #[arg(long)]
        out: PathBuf,
        /// Print a JSON summary on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Time the forward pass alone (no trace kept) and print one JSON line with "ms_per_forward" (median).
    Bench {
        #[command(flatten)]
        setup: Setup,
        /// Timed repetitions after one warm-up (1..=10000).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=MAX_REPS))]
        reps: u64,
        /// Worker threads (heads run in parallel), 1..=256; default: all cores.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_THREADS))]
        threads: Option<u64>,
        /// Where the forward runs: cpu, or gpu (wgpu: Vulkan; fails with the reason when there is no adapter).
        #[arg(long, default_value = "cpu", value_parser = ["cpu", "gpu"])]
        backend: String,
        /// Save the output (b, n, d_model) as a float32 .npy, to compare with another implementation.
        #[arg(long)]
        save_output: Option<PathBuf>,
        /// Also time one more forward stage by stage ("stages_ms"). On the CPU that forward keeps each head's
        /// (n, n) stages (the timed one is fused and keeps none), so it raises the peak memory.
        #[arg(long)]
        stages: bool,
    },
    /// List the presets (the seeds' examples).
    Presets,
    /// Trained models (models/chorales-*.safetensors): config, evaluation, attention traces, sampling.
    Model {
        #[command(subcommand)]
        command: ModelCommand,
    },
}

/// Where a model and its data come from.
#[derive(Args)]
struct ModelFiles {
    /// The model: a safetensors file written by train/export.py.
    #[arg(long)]
    model: PathBuf,
    /// Tokenised chorales (JSON written by train/export.py).
    #[arg(long, default_value = "models/chorales-test.json")]
    data: PathBuf,
}

#[derive(Subcommand)]
enum ModelCommand {
    /// Print the model's config and training figures as JSON.
    Info {
        /// The model: a safetensors file written by train/export.py.
        #[arg(long)]
        model: PathBuf,
    },
    /// Mean negative log-likelihood per token (nats) over every piece of --data, in windows of the training length.
    Eval {
        #[command(flatten)]
        files: ModelFiles,
        /// Tokens per window, 2 or more (each window predicts its tokens 1.. from the ones before); default: the
        /// model's context.
        #[arg(long, allow_negative_numbers = true)]
        window: Option<i64>,
        /// Where the layers run: cpu, or gpu (wgpu: Vulkan).
        #[arg(long, default_value = "cpu", value_parser = ["cpu", "gpu"])]
        backend: String,
        /// Print JSON ({"nll", "tokens", "pieces", "window"}).
        #[arg(long)]
        json: bool,
    },
    /// Write every attention stage of one layer and head, on the real hidden states of a piece, as an .npz.
    Trace {
        #[command(flatten)]
        files: ModelFiles,
        /// The piece's BWV number, e.g. 10.7.
        #[arg(long)]
        piece: String,
        /// First token of the window, 0..=(the piece's tokens − 1) (a multiple of 4 keeps the voices in place).
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        start: i64,
        /// Tokens in the window, 1..=(the piece's tokens from --start); default: the model's context (or the
        /// rest of the piece, if shorter).
        #[arg(long, allow_negative_numbers = true)]
        length: Option<i64>,
        /// Layer, 0..=(layers − 1).
        #[arg(long, allow_negative_numbers = true)]
        layer: i64,
        /// Head, 0..=(heads − 1).
        #[arg(long, allow_negative_numbers = true)]
        head: i64,
        /// Where the layers run: cpu, or gpu (wgpu: Vulkan).
        #[arg(long, default_value = "cpu", value_parser = ["cpu", "gpu"])]
        backend: String,
        /// Where to write the trace (.npz).
        #[arg(long)]
        out: PathBuf,
    },
    /// Continue the first --prime tokens of a piece (or an --opening chord) by --steps sampled tokens and write
    /// a MIDI file. Each new
    /// token attends to the --context tokens before it (a sliding window, fed from the prime's last --context
    /// tokens in one pass), so the time grows linearly with --steps: 65536 steps take minutes, not hours. The
    /// MIDI file is written only once every step is drawn; Ctrl-C stops with nothing written.
    Sample {
        #[command(flatten)]
        files: ModelFiles,
        /// The piece's BWV number, e.g. 10.7 (or --opening).
        #[arg(long, conflicts_with = "opening")]
        piece: Option<String>,
        /// Start from a chord instead of a piece: four names of the data's vocabulary, soprano to bass (e.g.
        /// "C5 G4 E4 C3"; "rest" for a silent voice); the continuation follows it.
        #[arg(long)]
        opening: Option<String>,
        /// Tokens of the piece to start from, 1..=(the piece's tokens) (4 per 16th-note step).
        #[arg(long, default_value_t = 64, allow_negative_numbers = true, conflicts_with = "opening")]
        prime: i64,
        /// Tokens to sample, 0..=65536.
        #[arg(long, default_value_t = 256, allow_negative_numbers = true)]
        steps: i64,
        /// Tokens each new token attends to (itself included), 1..=65536; default: the model's context (the
        /// length it was trained and evaluated at).
        #[arg(long, allow_negative_numbers = true)]
        context: Option<i64>,
        /// Softmax temperature, 0..=100 (0: always the most likely token).
        #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
        temperature: f32,
        /// Draw only from the K most likely tokens, 0..=vocab (0: every token).
        #[arg(long, default_value_t = DEFAULT_TOP_K as i64, allow_negative_numbers = true)]
        top_k: i64,
        /// Draw only from the fewest most likely tokens whose probabilities reach P (nucleus), in (0, 1] (1:
        /// every token).
        #[arg(long, default_value_t = DEFAULT_TOP_P, allow_negative_numbers = true)]
        top_p: f32,
        /// Seed of the sampler (ChaCha8), 0..=18446744073709551615; the same seed gives the same music.
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        seed: u64,
        /// Tempo of the MIDI file, 20..=400 quarter notes per minute.
        #[arg(long, default_value_t = 80, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(*BPM.start() as i64..=*BPM.end() as i64))]
        bpm: u32,
        /// Where to write the MIDI file (.mid).
        #[arg(long)]
        out: PathBuf,
        /// Print the tokens as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Figures that say whether four-part music holds together (voice crossings, parallel fifths and octaves,
    /// key fraction, chord changes, voice ranges, note length, longest repeat; src/trained/music_stats.rs):
    /// of the pieces of --data, or, with --model, of --samples continuations sampled after the first --prime
    /// tokens of its pieces in turn (seeds --seed, --seed + 1, …).
    Stats {
        /// A model to sample from (without: the figures of the data's own pieces).
        #[arg(long)]
        model: Option<PathBuf>,
        /// Tokenised chorales (JSON written by train/export.py).
        #[arg(long, default_value = "models/chorales-test.json")]
        data: PathBuf,
        /// Continuations to sample, 1..=256.
        #[arg(long, default_value_t = 16, allow_negative_numbers = true)]
        samples: i64,
        /// Tokens per continuation, a multiple of 4 in 4..=65536.
        #[arg(long, default_value_t = 512, allow_negative_numbers = true)]
        length: i64,
        /// Tokens of each piece to start from, a multiple of 4 in 4..=(the shortest piece's tokens).
        #[arg(long, default_value_t = 64, allow_negative_numbers = true)]
        prime: i64,
        /// Softmax temperature, 0..=100 (0: always the most likely token).
        #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
        temperature: f32,
        /// Draw only from the K most likely tokens, 0..=vocab (0: every token).
        #[arg(long, default_value_t = DEFAULT_TOP_K as i64, allow_negative_numbers = true)]
        top_k: i64,
        /// Draw only from the fewest most likely tokens whose probabilities reach P (nucleus), in (0, 1] (1:
        /// every token).
        #[arg(long, default_value_t = DEFAULT_TOP_P, allow_negative_numbers = true)]
        top_p: f32,
        /// Seed of the first continuation's sampler; the k-th uses seed + k.
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        seed: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn load_model(path: &Path) -> relattn::Result<Transformer> {
    Transformer::load(&read_bytes(path, "a model file", "a .safetensors model")?, &path.display().to_string())
}

impl ModelFiles {
    fn load(&self) -> relattn::Result<(Transformer, Chorales)> {
        let model = load_model(&self.model)?;
        let data = read_chorales(&self.data)?;
        same_vocabulary(&model, &data, &self.data)?;
        Ok((model, data))
    }
}

/// Reads a chorale data file (see [`read_bytes`]).
fn read_chorales(path: &Path) -> relattn::Result<Chorales> {
    Chorales::parse(&read_bytes(path, "a chorale data file", "a .json data file")?, &path.display().to_string())
}

/// Refuses data (read from `path`) whose vocabulary is not the model's, naming "data".
fn same_vocabulary(model: &Transformer, data: &Chorales, path: &Path) -> relattn::Result<()> {
    if data.vocab.len() != model.config.vocab {
        let given = format!("{} tokens in {}", data.vocab.len(), path.display());
        return Err(Error::invalid("data", given, format!("the model's vocabulary of {}", model.config.vocab)));
    }
    Ok(())
}

/// Refuses data (read from `path`) with no pieces, naming "data": nothing to evaluate or measure.
fn with_pieces(data: &Chorales, path: &Path) -> relattn::Result<()> {
    if data.pieces.is_empty() {
        let given = format!("{}: no pieces (the {} split), so no token to predict", path.display(), data.split);
        return Err(Error::invalid("data", given, "a data file with at least one piece (every piece of --data is read)"));
    }
    Ok(())
}

fn backend_named(name: &str) -> relattn::Result<Backend> {
    Ok(match name {
        "gpu" => Backend::Gpu(pollster::block_on(GpuContext::try_new()).map_err(Error::Gpu)?),
        _ => Backend::Cpu,
    })
}

/// A multiple of 4 (whole 16th-note steps) in `range`, named by `field`.
fn whole_steps(field: &str, value: i64, range: std::ops::RangeInclusive<usize>, why: &str) -> relattn::Result<usize> {
    let v = in_range(field, value, range.clone(), why)?;
    if !v.is_multiple_of(4) {
        return Err(Error::invalid(field, value, format!("a multiple of 4 (whole steps of 4 voices) in {}..={} ({why})", range.start(), range.end())));
    }
    Ok(v)
}

fn run_model(command: ModelCommand) -> Result<(), Stop> {
    match command {
        ModelCommand::Stats { model, data, samples, length, prime, temperature, top_k, top_p, seed, json } => {
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
                    let top_k = in_range("top_k", top_k, 0..=m.config.vocab, "0: every token; the vocabulary's size")?;
                    let mut progress = Progress::new("sampling", "continuations", samples);
                    let mut out = Vec::with_capacity(samples);
                    for k in 0..samples {
                        let piece = &chorales.pieces[k % chorales.pieces.len()];
                        let settings = SampleSettings { top_k, top_p, ..SampleSettings::new(&m, length, temperature, seed.wrapping_add(k as u64)) };
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
            write_atomic(&out, |tmp| write_file(tmp, |w| trace.write_npz(w)))?;
        }
        ModelCommand::Sample { files, piece, opening, prime, steps, context, temperature, top_k, top_p, seed, bpm, out, json } => {
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
            let top_k = in_range("top_k", top_k, 0..=model.config.vocab, "0: every token; the vocabulary's size")?;
            let settings = SampleSettings { steps, temperature, top_k, top_p, seed, context };
            let interrupted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let flag = interrupted.clone();
            // Without a handler Ctrl-C ends the process as before (nothing is written until the end either way).
            let _ = ctrlc::set_handler(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
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

/// A progress line on stderr for work that takes more than [`Progress::QUIET`]: "sampling: 1200 of 65536
/// tokens (3 s)", at most once a second, rewritten in place on a terminal and one line each otherwise.
struct Progress {
    what: &'static str,
    unit: &'static str,
    total: usize,
    start: std::time::Instant,
    last: Option<std::time::Instant>,
    terminal: bool,
}

impl Progress {
    /// Quiet for this long: quick commands print nothing on stderr.
    const QUIET: std::time::Duration = std::time::Duration::from_secs(2);

    fn new(what: &'static str, unit: &'static str, total: usize) -> Progress {
        use std::io::IsTerminal;
        Progress { what, unit, total, start: std::time::Instant::now(), last: None, terminal: std::io::stderr().is_terminal() }
    }

    fn tick(&mut self, done: usize) {
        let now = std::time::Instant::now();
        if now - self.start < Self::QUIET || self.last.is_some_and(|t| now - t < std::time::Duration::from_secs(1)) {
            return;
        }
        self.last = Some(now);
        let line = format!("{}: {done} of {} {} ({} s)", self.what, self.total, self.unit, (now - self.start).as_secs());
        if self.terminal {
            eprint!("\r{line}");
        } else {
            eprintln!("{line}");
        }
    }

    /// Ends a line rewritten in place.
    fn finish(&mut self) {
        if self.terminal && self.last.is_some() {
            eprintln!();
        }
    }
}

/// What to compute: the layer's options (unset ones from --preset, or the defaults shown), a scenario file and
/// the memory budget.
#[derive(Args)]
struct Setup {
    #[command(flatten)]
    options: LayerOptions,
    /// Scenario file (.npz from np.savez, or an .npy holding x) with any of: x, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o,
    /// rel_k, rel_v, e_r, alibi_slopes, t5_bias, key_mask.
    #[arg(long)]
    tensors: Option<PathBuf>,
    /// Memory budget in MiB (1..=8796093022207); larger requests are refused before computing. [default: 8192]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_MEMORY_MB))]
    max_memory_mb: Option<u64>,
}

impl Setup {
    /// The configuration, sizes and given arrays (the preset's, then the file's), checked ([`LayerOptions::resolve`]).
    fn resolve(&self) -> relattn::Result<(Config, Spec, Arrays, bool)> {
        let Resolved { config, spec, mut arrays, per_head_tables } = self.options.resolve(&Limits::NONE)?;
        if let Some(path) = &self.tensors {
            arrays.extend(read_file(path)?);
        }
        Ok((config, spec, arrays, per_head_tables))
    }

    /// Builds the scenario and its trace within the memory budget (plus `extra` bytes the caller needs).
    /// The trace, the milliseconds of each stage and the memory estimate.
    fn trace(&self, extra: u64) -> relattn::Result<(Trace, StageTimes, u64)> {
        let (cfg, sc, estimate) = self.scenario(true, rayon::current_num_threads(), |_, _| Some(extra))?;
        let (t, times) = pollster::block_on(Backend::Cpu.trace(&cfg, &sc))?;
        Ok((t, times, estimate))
    }

    /// Builds the scenario and a [`Layer`] of it (its forward pass, fused), within the memory budget of the
    /// forward, one block of a head's stages, one whole stage and `extra` bytes: what rendering one stage of one
    /// head needs, however many heads the layer has.
    fn layer(&self, extra: u64) -> relattn::Result<(Layer, u64)> {
        let work = |cfg: &Config, s: &Sizes| {
            let stage = largest_stage_floats(cfg, s.n, s.d_model)?.checked_mul(4)?;
            stage.checked_add(block_bytes(cfg, s.n, s.d_model / cfg.heads.max(1))?)?.checked_add(extra)
        };
        let (cfg, sc, estimate) = self.scenario(false, rayon::current_num_threads(), work)?;
        let (projections, output) = forward::forward_projected(&cfg, &sc)?;
        Ok((Layer::new(&cfg, sc, projections, output)?, estimate))
    }

    /// Builds the scenario once its memory estimate (with or without a trace, `parallel` heads at once,
    /// plus the `extra` bytes the caller needs for these sizes; `None`: past u64) fits the budget; returns it
    /// with the estimate.
    fn scenario(&self, trace: bool, parallel: usize, extra: impl Fn(&Config, &Sizes) -> Option<u64>) -> relattn::Result<(Config, Scenario, u64)> {
        let (cfg, spec, arrays, per_head) = self.resolve()?;
        let sizes = sizes_of(&arrays, &spec)?;
        relattn::layer::scenario::check_config(&cfg, &sizes)?;
        let limit = self.max_memory_mb.map_or(DEFAULT_MEMORY_LIMIT, |mb| mb << 20);
        let request = Sizes { batch: sizes.batch, n: sizes.n, d_model: sizes.d_model, per_head_tables: per_head, trace, parallel };
        let estimate = forward::check_budget(&cfg, &request, extra, limit)?;
        Ok((cfg, Scenario::build(&cfg, &spec, arrays, per_head)?, estimate))
    }
}

/// Reads a scenario file (see [`read_bytes`]).
fn read_file(path: &Path) -> relattn::Result<Arrays> {
    read_arrays(&read_bytes(path, "a scenario file", "an .npz or .npy file")?, &path.display().to_string())
}

/// Reads an input file (`what`, e.g. "a scenario file"; `wanted`, what to give instead). Refused before
/// reading: anything but a regular file (/dev/zero never ends, a FIFO blocks) and a file over
/// [`MAX_FILE_BYTES`]; the read itself stops there too, should the file grow.
fn read_bytes(path: &Path, what: &str, wanted: &str) -> relattn::Result<Vec<u8>> {
    let name = path.display().to_string();
    let err = |reason: String| Error::File { path: name.clone(), reason };
    let not_regular = || err(format!("not a regular file (a device, FIFO or directory); give {wanted}"));
    let over = |size: String| err(format!("{size} is over the limit of {} for {what}", Bytes(MAX_FILE_BYTES)));
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(over(Bytes(meta.len()).to_string()));
    }
    let mut file = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
    if !file.metadata().map_err(|e| err(e.to_string()))?.is_file() {
        return Err(not_regular());
    }
    read_at_most(&mut file, MAX_FILE_BYTES).map_err(|e| err(e.to_string()))?.ok_or_else(|| over("it".into()))
}

/// Writes `path` through `write`, which is given the path to write to: a temporary file beside `path`
/// (same directory, so the rename stays on one file system; same extension, which picks the format),
/// renamed over `path` once written and synced. On failure the temporary file is removed and `path` is as
/// it was. A `path` that exists and is not a regular file (/dev/null, /dev/stdout, a FIFO) is written in
/// place: a rename would replace the device node itself.
fn write_atomic(path: &Path, write: impl FnOnce(&Path) -> relattn::Result<()>) -> relattn::Result<()> {
    let shown = path.display().to_string();
    let named = |e: Error| match e {
        Error::Write { reason, .. } => Error::Write { path: shown.clone(), reason },
        other => other,
    };
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return write(path).map_err(named);
    }
    let file_name = path.file_name().ok_or_else(|| Error::Write { path: shown.clone(), reason: "not a file name".into() })?;
    let ext = path.extension().map_or(String::new(), |e| format!(".{}", e.to_string_lossy()));
    let tmp = path.with_file_name(format!(".{}.{}.tmp{ext}", file_name.to_string_lossy(), std::process::id()));
    let result = write(&tmp).and_then(|()| std::fs::rename(&tmp, path).map_err(|e| Error::Write { path: shown.clone(), reason: e.to_string() }));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(named)
}

/// A file written through `write` (a buffered, seekable writer that keeps its first error), then flushed
/// and synced; every error, the first write error above all, as [`Error::Write`].
fn write_file(path: &Path, write: impl FnOnce(&mut FirstError<std::io::BufWriter<std::fs::File>>) -> relattn::Result<()>) -> relattn::Result<()> {
    let err = |e: std::io::Error| Error::Write { path: path.display().to_string(), reason: e.to_string() };
    let mut w = FirstError::new(std::io::BufWriter::new(std::fs::File::create(path).map_err(err)?));
    let result = write(&mut w);
    if let Some(e) = w.first.take() {
        return Err(err(e));
    }
    result?;
    let file = w.inner.into_inner().map_err(|e| err(e.into_error()))?;
    file.sync_all().or_else(|e| if e.kind() == std::io::ErrorKind::InvalidInput { Ok(()) } else { Err(e) }).map_err(err)
}

/// A writer that returns its first error once and then accepts (and drops) every write and seek, so an
/// encoder that writes again while it is dropped (zip's `ZipWriter` finishing the archive, which printed
/// "ZipWriter drop failed") stops quietly; the first error is the one reported. It keeps the position the
/// encoder expects, so it sees consistent offsets either way.
struct FirstError<W> {
    inner: W,
    first: Option<std::io::Error>,
    /// Position and end of the stream as the encoder sees it.
    pos: u64,
    end: u64,
}

impl<W> FirstError<W> {
    fn new(inner: W) -> Self {
        FirstError { inner, first: None, pos: 0, end: 0 }
    }

    /// Keeps `e` and returns an error of the same kind to the caller.
    fn keep(&mut self, e: std::io::Error) -> std::io::Error {
        let returned = std::io::Error::new(e.kind(), e.to_string());
        self.first = Some(e);
        returned
    }

    fn moved_to(&mut self, pos: u64) -> u64 {
        self.pos = pos;
        self.end = self.end.max(pos);
        pos
    }
}

impl<W: Write> Write for FirstError<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = if self.first.is_some() { buf.len() } else { self.inner.write(buf).map_err(|e| self.keep(e))? };
        self.moved_to(self.pos + written as u64);
        Ok(written)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        if self.first.is_some() {
            return Ok(());
        }
        self.inner.flush().map_err(|e| self.keep(e))
    }
}

impl<W: Seek> Seek for FirstError<W> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        if self.first.is_none() {
            let at = self.inner.seek(pos).map_err(|e| self.keep(e))?;
            return Ok(self.moved_to(at));
        }
        let at = match pos {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.end.checked_add_signed(d),
        };
        at.map(|p| self.moved_to(p)).ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))
    }
}

/// Why a command stopped early: an error to report (exit code 2), Ctrl-C (what was done and left undone;
/// exit code 130, as a shell reports SIGINT), or stdout closed by its reader (`| head`), which ends quietly.
enum Stop {
    Failed(Error),
    Interrupted(String),
    StdoutClosed,
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Failed(e)
    }
}

/// Prints one line on stdout: a closed pipe stops the command quietly, any other failure (a full disk,
/// /dev/full) is an error.
fn say(line: impl std::fmt::Display) -> Result<(), Stop> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").and_then(|()| out.flush()).map_err(|e| match e.kind() {
        std::io::ErrorKind::BrokenPipe => Stop::StdoutClosed,
        _ => Stop::Failed(Error::Write { path: "stdout".into(), reason: e.to_string() }),
    })
}

fn summary(cfg: &Config, (b, h, n): (usize, usize, usize), d_model: usize, stages: &[Stage], out: &Path, ms: f64) -> serde_json::Value {
    serde_json::json!({
        "method": cfg.method.to_string(),
        "batch": b, "heads": h, "n": n, "d_model": d_model, "clip": cfg.clip,
        "causal": cfg.causal, "rel_v": stages.contains(&Stage::RelV),
        "stages": stages.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "out": out.display().to_string(),
        "ms": ms,
    })
}

/// `stages_ms`: projections, logits, softmax, values, output, and on the CPU the logits' parts; CPU head
/// stages summed over heads (CPU time).
fn stages_json(t: &StageTimes) -> serde_json::Value {
    serde_json::Value::Object(t.named().into_iter().map(|(name, ms)| (name.to_string(), serde_json::json!(ms))).collect())
}

fn parse_size(s: &str) -> relattn::Result<(u32, u32)> {
    let bad = || Error::invalid("size", format!("'{s}'"), "WIDTHxHEIGHT, each 200..=8000 pixels");
    let (w, h) = s.split_once('x').ok_or_else(bad)?;
    let (w, h): (u32, u32) = (w.parse().map_err(|_| bad())?, h.parse().map_err(|_| bad())?);
    if !(200..=8000).contains(&w) || !(200..=8000).contains(&h) {
        return Err(bad());
    }
    Ok((w, h))
}

/// Peak resident memory of this process in MiB (Linux's VmHWM), if known.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Floating-point operations of one forward: four projections, QKᵀ, αV, and the two small relative products.
fn forward_flops(cfg: &Config, (b, n, d): (usize, usize, usize)) -> f64 {
    let (b, n, d, h, r) = (b as f64, n as f64, d as f64, cfg.heads as f64, cfg.table_rows() as f64);
    let dh = d / h;
    let rel_v = if cfg.has_rel_v() { 1.0 } else { 0.0 };
    b * (8.0 * n * d * d + h * (4.0 * n * n * dh + 2.0 * n * r * dh * (1.0 + rel_v)))
}

fn bench(setup: &Setup, reps: u64, threads: Option<u64>, backend: &str, save_output: Option<&Path>, stages: bool) -> relattn::Result<serde_json::Value> {
    let threads = threads.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |t| t as usize);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| Error::invalid("threads", threads, e))?;
    let (cfg, sc, estimate) = setup.scenario(false, threads, |_, _| Some(0))?;
    let mut backend = backend_named(backend)?;
    pool.install(|| -> relattn::Result<serde_json::Value> {
        // One warm-up (pipelines, buffers), then the timed repetitions.
        let output = pollster::block_on(backend.output(&cfg, &sc))?;
        let mut ms = Vec::new();
        for _ in 0..reps {
            let start = std::time::Instant::now();
            let out = pollster::block_on(backend.output(&cfg, &sc))?;
            ms.push(start.elapsed().as_secs_f64() * 1e3);
            drop(out);
        }
        // The peak before the staged forward, which keeps (n, n) stages on the CPU.
        let peak_rss = peak_rss_mib();
        let stages = if stages { Some(stages_json(&pollster::block_on(backend.forward(&cfg, &sc))?.1)) } else { None };
        let adapter = match &backend {
            Backend::Gpu(ctx) => serde_json::json!(ctx.description()),
            Backend::Cpu => serde_json::Value::Null,
        };
        ms.sort_by(f64::total_cmp);
        if let Some(path) = save_output {
            use ndarray_npy::WriteNpyExt;
            write_atomic(path, |tmp| write_file(tmp, |w| output.write_npy(w).map_err(|e| Error::Write { path: "the output".into(), reason: e.to_string() })))?;
        }
        let (b, n, d) = sc.dims();
        let median = ms[ms.len() / 2];
        Ok(serde_json::json!({
            "backend": backend.name(), "adapter": adapter, "method": cfg.method.to_string(), "implementation": format!("{:?}", cfg.implementation).to_lowercase(),
            "batch": b, "n": n, "d_model": d, "heads": cfg.heads, "clip": cfg.clip, "causal": cfg.causal, "rel_v": cfg.has_rel_v(),
            "threads": threads, "reps": reps,
            "ms_per_forward": median, "ms_min": ms[0],
            "gflop_per_s": forward_flops(&cfg, sc.dims()) / median / 1e6,
            "peak_rss_mib": peak_rss, "estimate_bytes": estimate,
            "stages_ms": stages,
        }))
    })
}

fn run(cli: Cli) -> Result<(), Stop> {
    let start = std::time::Instant::now();
    match cli.command {
        Command::Bench { setup, reps, threads, backend, save_output, stages } => {
            say(bench(&setup, reps, threads, &backend, save_output.as_deref(), stages)?)?;
        }
        Command::Model { command } => run_model(command)?,
        Command::Presets => {
            for name in presets::NAMES {
                say(format!("{name:14} {}", presets::preset(name)?.description))?;
            }
        }
        Command::Compute { setup, out, json } => {
            let (t, times, estimate) = setup.trace(0)?;
            write_atomic(&out, |tmp| write_file(tmp, |w| t.write_npz(w)))?;
            if json {
                let mut s = summary(&t.config, t.dims(), t.output.dim().2, &t.stages(), &out, start.elapsed().as_secs_f64() * 1e3);
                s["stages_ms"] = stages_json(&times);
                s["estimate_bytes"] = estimate.into();
                s["peak_rss_mib"] = peak_rss_mib().into();
                say(s)?;
            }
        }
        Command::Render { setup, stage, head, batch_index, tokens, size, out, json } => {
            let size = parse_size(&size)?;
            let (layer, estimate) = setup.layer(render::figure_bytes(size))?;
            let m = layer.stage(stage, batch_index, head)?;
            let (_, _, n) = layer.dims();
            let tokens: Option<Vec<String>> = tokens.map(|s| s.split_whitespace().map(String::from).collect());
            if let Some(tok) = &tokens {
                if tok.len() != n {
                    return Err(Error::invalid("tokens", format!("{} tokens", tok.len()), format!("exactly n = {n} tokens")).into());
                }
            }
            let positional = |len: usize| tokens.clone().filter(|_| len == n);
            let (rows, cols) = m.dim();
            let meta = layer.meta(stage);
            let fig = Figure {
                matrix: m.view(),
                title: if meta.per_head { format!("{} — head {head}", meta.title) } else { meta.title.into() },
                subtitle: format!("{}   shape ({rows}, {cols})", meta.formula),
                x_desc: meta.x_axis.into(),
                y_desc: meta.y_axis.into(),
                x_labels: if meta.pairs { positional(cols) } else { None },
                y_labels: if meta.rows_are_queries { positional(rows) } else { None },
                scale: meta.scale,
                palette: Default::default(),
                ink: render::Ink::LIGHT,
                range: None,
            };
            write_atomic(&out, |tmp| render::save(&fig, tmp, size))?;
            if json {
                let d_model = layer.output.dim().2;
                let mut s = summary(&layer.config, layer.dims(), d_model, &layer.stages(), &out, start.elapsed().as_secs_f64() * 1e3);
                s["estimate_bytes"] = estimate.into();
                s["peak_rss_mib"] = peak_rss_mib().into();
                say(s)?;
            }
        }
    }
    Ok(())
}

/// clap's usage error as one line: its message and any tip, without the usage block and the pointer to --help
/// ("error: invalid value '70000' for '--steps <STEPS>': 70000 is not in 0..=65536").
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let parts: Vec<&str> =
        text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")).collect();
    parts.join(" ")
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help, --version, and the help shown for a command given without its subcommand.
        Err(e) if !e.use_stderr() || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        Err(e) => {
            eprintln!("{}", one_line(&e));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) | Err(Stop::StdoutClosed) => ExitCode::SUCCESS,
        Err(Stop::Failed(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        Err(Stop::Interrupted(why)) => {
            eprintln!("error: {why}");
            ExitCode::from(130)
        }
    }
}
