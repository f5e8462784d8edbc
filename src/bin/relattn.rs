//! `relattn`: compute relative attention, save every intermediate, render any stage for a slide.
//! Errors print one line naming the field, what was given and what is allowed, and exit with code 2.

use clap::{Args, Parser, Subcommand};
use relattn::attention::{Config, Implementation, Method};
use relattn::gpu::GpuContext;
use relattn::model::{self, DEFAULT_MEMORY_LIMIT};
use relattn::presets;
use relattn::render::{self, Figure};
use relattn::scenario::{read_arrays, Arrays, Scenario, Spec};
use relattn::timing::StageTimes;
use relattn::chorales::Chorales;
use relattn::transformer::Transformer;
use relattn::{Backend, Edge, Error, Stage, Trace};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "relattn", version, about = "Relative-position self-attention (Shaw et al. 2018; Music Transformer) with every intermediate exposed",
    long_about = "Computes relative-position multi-head self-attention and writes every intermediate (distances, clipped \
indices, content and relative logits, the Music Transformer's skew steps, masked logits, weights, outputs) to an .npz, \
or renders one of them as a labelled heatmap (.svg or .png).\n\nTensors come from a scenario file (--tensors, an \
np.savez .npz; see README.md) and whatever it lacks is generated from --seed (ChaCha8; x ~ N(0, 1); weights and tables \
Xavier-uniform; biases 0).")]
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
        /// Stage to draw: distances, rel_index, rel_k, rel_v, content_logits, relative_logits, skew_qer, skew_padded,
        /// skew_reshaped, skew_sliced, logits, weights, value_buckets, output_content, output_relative, output.
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
        /// Timed repetitions after one warm-up.
        #[arg(long, default_value_t = 5)]
        reps: usize,
        /// Worker threads (heads run in parallel); default: all cores.
        #[arg(long)]
        threads: Option<usize>,
        /// Where the forward runs: cpu, or gpu (wgpu: Vulkan; fails with the reason when there is no adapter).
        #[arg(long, default_value = "cpu", value_parser = ["cpu", "gpu"])]
        backend: String,
        /// Save the output (b, n, d_model) as a float32 .npy, to compare with another implementation.
        #[arg(long)]
        save_output: Option<PathBuf>,
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
        /// Tokens per window (each window predicts its tokens 1.. from the ones before); default: the model's context.
        #[arg(long)]
        window: Option<usize>,
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
        /// First token of the window (a multiple of 4 keeps the voices in place).
        #[arg(long, default_value_t = 0)]
        start: usize,
        /// Tokens in the window; default: the model's context (or the rest of the piece).
        #[arg(long)]
        length: Option<usize>,
        /// Layer (0-based).
        #[arg(long)]
        layer: usize,
        /// Head (0-based).
        #[arg(long)]
        head: usize,
        /// Where the layers run: cpu, or gpu (wgpu: Vulkan).
        #[arg(long, default_value = "cpu", value_parser = ["cpu", "gpu"])]
        backend: String,
        /// Where to write the trace (.npz).
        #[arg(long)]
        out: PathBuf,
    },
    /// Continue the first --prime tokens of a piece by --steps sampled tokens and write a MIDI file.
    Sample {
        #[command(flatten)]
        files: ModelFiles,
        /// The piece's BWV number, e.g. 10.7.
        #[arg(long)]
        piece: String,
        /// Tokens of the piece to start from (4 per 16th-note step).
        #[arg(long, default_value_t = 64)]
        prime: usize,
        /// Tokens to sample.
        #[arg(long, default_value_t = 256)]
        steps: usize,
        /// Softmax temperature, 0..=100 (0: always the most likely token).
        #[arg(long, default_value_t = 1.0)]
        temperature: f32,
        /// Seed of the sampler (ChaCha8); the same seed gives the same music.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Tempo of the MIDI file, quarter notes per minute.
        #[arg(long, default_value_t = 80)]
        bpm: u32,
        /// Where to write the MIDI file (.mid).
        #[arg(long)]
        out: PathBuf,
        /// Print the tokens as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
}

fn read_bytes(path: &Path) -> relattn::Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::File { path: path.display().to_string(), reason: e.to_string() })
}

fn load_model(path: &Path) -> relattn::Result<Transformer> {
    Transformer::load(&read_bytes(path)?, &path.display().to_string())
}

impl ModelFiles {
    fn load(&self) -> relattn::Result<(Transformer, Chorales)> {
        let model = load_model(&self.model)?;
        let data = Chorales::parse(&read_bytes(&self.data)?, &self.data.display().to_string())?;
        if data.vocab.len() != model.config.vocab {
            return Err(Error::invalid("data", format!("{} tokens in {}", data.vocab.len(), self.data.display()), format!("the model's vocabulary of {}", model.config.vocab)));
        }
        Ok((model, data))
    }
}

fn backend_named(name: &str) -> relattn::Result<Backend> {
    Ok(match name {
        "gpu" => Backend::Gpu(pollster::block_on(GpuContext::try_new()).map_err(Error::Gpu)?),
        _ => Backend::Cpu,
    })
}

fn run_model(command: ModelCommand) -> relattn::Result<()> {
    match command {
        ModelCommand::Info { model } => {
            let m = load_model(&model)?;
            let mut info = m.metadata.clone();
            info["parameters_loaded"] = serde_json::json!(m.parameters());
            println!("{}", serde_json::to_string_pretty(&info).expect("JSON values print"));
        }
        ModelCommand::Eval { files, window, backend, json } => {
            let (model, data) = files.load()?;
            let window = window.unwrap_or(model.config.context);
            let seqs: Vec<&[u32]> = data.pieces.iter().map(|p| p.tokens.as_slice()).collect();
            let mut backend = backend_named(&backend)?;
            let (total, count) = pollster::block_on(model.nll_async(&mut backend, &seqs, window))?;
            let nll = total / count as f64;
            if json {
                println!("{}", serde_json::json!({ "nll": nll, "tokens": count, "pieces": seqs.len(), "window": window, "backend": backend.name() }));
            } else {
                println!("{nll:.6} nats per token over {count} predicted tokens ({} pieces, windows of {window})", seqs.len());
            }
        }
        ModelCommand::Trace { files, piece, start, length, layer, head, backend, out } => {
            let (model, data) = files.load()?;
            let tokens = &data.piece(&piece)?.tokens;
            if start >= tokens.len() {
                return Err(Error::invalid("start", start, format!("0..{} (the piece's tokens)", tokens.len())));
            }
            let end = start.saturating_add(length.unwrap_or(model.config.context)).min(tokens.len());
            let mut backend = backend_named(&backend)?;
            let trace = pollster::block_on(model.trace_async(&mut backend, &tokens[start..end], layer))?.head(head)?;
            let file = std::fs::File::create(&out).map_err(|e| Error::File { path: out.display().to_string(), reason: e.to_string() })?;
            trace.write_npz(std::io::BufWriter::new(file))?;
        }
        ModelCommand::Sample { files, piece, prime, steps, temperature, seed, bpm, out, json } => {
            let (model, data) = files.load()?;
            let tokens = &data.piece(&piece)?.tokens;
            if prime == 0 || prime > tokens.len() {
                return Err(Error::invalid("prime", prime, format!("1..={} (the piece's tokens)", tokens.len())));
            }
            let all = model.sample(&tokens[..prime], steps, temperature, seed, |_| {})?;
            let midi = data.midi(&all, bpm);
            std::fs::write(&out, midi).map_err(|e| Error::File { path: out.display().to_string(), reason: e.to_string() })?;
            if json {
                println!("{}", serde_json::json!({ "prime": prime, "tokens": all, "out": out.display().to_string() }));
            }
        }
    }
    Ok(())
}

/// What to compute. Unset options come from --preset, or the defaults shown.
#[derive(Args)]
struct Setup {
    /// Start from a seed's example: seed000-shaw, seed000-music, seed002, seed003, seed004.
    #[arg(long)]
    preset: Option<String>,
    /// shaw (Shaw et al. 2018) or music (Music Transformer skew). [default: shaw]
    #[arg(long, value_parser = clap::value_parser!(Method))]
    method: Option<Method>,
    /// Number of heads; must divide d_model. [default: 1]
    #[arg(long)]
    heads: Option<usize>,
    /// Clipping distance k ≥ 0 (Shaw's tables have 2k+1 rows; Music's E_r k+1 causal, 2k+1 bidirectional). [default: 2]
    #[arg(long, allow_negative_numbers = true)]
    clip: Option<i64>,
    /// Mask keys after the query.
    #[arg(long)]
    causal: bool,
    /// Switch off Shaw's value term a^V.
    #[arg(long)]
    no_rel_v: bool,
    /// One table per head instead of one shared by all heads (generated tables only).
    #[arg(long)]
    per_head_tables: bool,
    /// Music Transformer: what distances beyond E_r read: zero (tensor2tensor) or clip (edge row). [default: zero]
    #[arg(long, value_parser = clap::value_parser!(Edge))]
    edge: Option<Edge>,
    /// efficient (gather/skew, default) or materialized (the seeds' n×n×d_head tensor).
    #[arg(long, value_parser = clap::value_parser!(Implementation))]
    implementation: Option<Implementation>,
    /// Sequence length (when x is not in --tensors). [default: 8]
    #[arg(long, allow_negative_numbers = true)]
    n: Option<i64>,
    /// Model width (when x is not in --tensors). [default: 16]
    #[arg(long, allow_negative_numbers = true)]
    d_model: Option<i64>,
    /// Batch size (when x is not in --tensors). [default: 1]
    #[arg(long, allow_negative_numbers = true)]
    batch: Option<i64>,
    /// Seed for every generated tensor. [default: 0]
    #[arg(long)]
    seed: Option<u64>,
    /// Scenario file (.npz from np.savez, or an .npy holding x) with any of: x, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o,
    /// rel_k, rel_v, e_r, key_mask.
    #[arg(long)]
    tensors: Option<PathBuf>,
    /// Memory budget in MiB; larger requests are refused before computing. [default: 8192]
    #[arg(long)]
    max_memory_mb: Option<u64>,
}

fn positive(field: &str, v: i64) -> relattn::Result<usize> {
    if v < 1 { Err(Error::invalid(field, v, "an integer ≥ 1")) } else { Ok(v as usize) }
}

impl Setup {
    /// The configuration, sizes and given arrays, checked.
    fn resolve(&self) -> relattn::Result<(Config, Spec, Arrays, bool)> {
        let (mut cfg, mut spec, mut arrays, mut per_head) = match &self.preset {
            Some(name) => {
                let p = presets::preset(name)?;
                (p.config, p.spec, p.arrays, p.per_head_tables)
            }
            None => (Config::default(), Spec::default(), Arrays::new(), false),
        };
        if let Some(m) = self.method {
            cfg.method = m;
        }
        if let Some(h) = self.heads {
            cfg.heads = h;
        }
        if let Some(k) = self.clip {
            if k < 0 {
                return Err(Error::invalid("clip", k, "an integer ≥ 0"));
            }
            cfg.clip = k as usize;
        }
        cfg.causal |= self.causal;
        cfg.rel_v &= !self.no_rel_v;
        per_head |= self.per_head_tables;
        if let Some(e) = self.edge {
            cfg.edge = e;
        }
        if let Some(i) = self.implementation {
            cfg.implementation = i;
        }
        if let Some(n) = self.n {
            spec.n = positive("n", n)?;
        }
        if let Some(d) = self.d_model {
            spec.d_model = positive("d_model", d)?;
        }
        if let Some(b) = self.batch {
            spec.batch = positive("batch", b)?;
        }
        if let Some(s) = self.seed {
            spec.seed = s;
        }
        if let Some(path) = &self.tensors {
            arrays.extend(read_file(path)?);
        }
        Ok((cfg, spec, arrays, per_head))
    }

    /// Builds the scenario and its trace within the memory budget.
    /// The trace and the milliseconds of each stage.
    fn trace(&self) -> relattn::Result<(Trace, StageTimes)> {
        let (cfg, sc) = self.scenario(true)?;
        model::trace_timed(&cfg, &sc)
    }

    /// Builds the scenario once its memory estimate (with or without a trace) fits the budget.
    fn scenario(&self, trace: bool) -> relattn::Result<(Config, Scenario)> {
        let (cfg, spec, arrays, per_head) = self.resolve()?;
        let (b, n, d) = match arrays.get("x") {
            Some(x) if x.ndim() == 3 => (x.shape()[0], x.shape()[1], x.shape()[2]),
            Some(x) if x.ndim() == 2 => (1, x.shape()[0], x.shape()[1]),
            _ => (spec.batch, spec.n, spec.d_model),
        };
        relattn::scenario::check_config(&cfg, &Spec { n, d_model: d, batch: b, seed: spec.seed })?;
        let limit = self.max_memory_mb.map_or(DEFAULT_MEMORY_LIMIT, |mb| mb << 20);
        model::check_budget(&cfg, b, n, d, trace, limit)?;
        Ok((cfg, Scenario::build(&cfg, &spec, arrays, per_head)?))
    }
}

fn read_file(path: &Path) -> relattn::Result<Arrays> {
    let bytes = std::fs::read(path).map_err(|e| Error::File { path: path.display().to_string(), reason: e.to_string() })?;
    read_arrays(&bytes, &path.display().to_string())
}

fn summary(t: &Trace, out: &Path, ms: f64) -> serde_json::Value {
    let (b, h, n) = t.dims();
    serde_json::json!({
        "method": t.config.method.to_string(),
        "batch": b, "heads": h, "n": n, "d_model": t.output.dim().2, "clip": t.config.clip,
        "causal": t.config.causal, "rel_v": t.rel_v.is_some(),
        "stages": t.stages().iter().map(|s| s.name()).collect::<Vec<_>>(),
        "out": out.display().to_string(),
        "ms": ms,
    })
}

/// `stages_ms` of the CPU path: the GPU's stage names (projections, logits, softmax, values, output), and
/// the logits' parts; head stages summed over heads (CPU time).
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

fn bench(setup: &Setup, reps: usize, threads: Option<usize>, backend: &str, save_output: Option<&Path>) -> relattn::Result<serde_json::Value> {
    if reps == 0 {
        return Err(Error::invalid("reps", 0, "1 or more"));
    }
    let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| Error::invalid("threads", threads, e))?;
    let (cfg, sc) = setup.scenario(false)?;
    let mut backend = match backend {
        "gpu" => Backend::Gpu(pollster::block_on(GpuContext::try_new()).map_err(Error::Gpu)?),
        _ => Backend::Cpu,
    };
    pool.install(|| -> relattn::Result<serde_json::Value> {
        // One warm-up (pipelines, buffers), then the timed repetitions.
        let output = backend.forward(&cfg, &sc)?;
        let mut ms = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start = std::time::Instant::now();
            let out = backend.forward(&cfg, &sc)?;
            ms.push(start.elapsed().as_secs_f64() * 1e3);
            drop(out);
        }
        // Per stage: one more forward that waits for the device after each stage.
        let (adapter, stages) = match &mut backend {
            Backend::Gpu(ctx) => {
                let (_, t) = ctx.forward_profiled(&cfg, &sc)?;
                let stages = serde_json::json!({ "projections": t.projections, "logits": t.logits, "softmax": t.softmax, "values": t.values, "output": t.output });
                (serde_json::json!(ctx.description()), stages)
            }
            Backend::Cpu => (serde_json::Value::Null, stages_json(&model::forward_timed(&cfg, &sc)?.1)),
        };
        ms.sort_by(f64::total_cmp);
        if let Some(path) = save_output {
            use ndarray_npy::WriteNpyExt;
            let file = std::fs::File::create(path).map_err(|e| Error::File { path: path.display().to_string(), reason: e.to_string() })?;
            output.write_npy(std::io::BufWriter::new(file)).map_err(|e| Error::File { path: path.display().to_string(), reason: e.to_string() })?;
        }
        let (b, n, d) = sc.dims();
        let median = ms[ms.len() / 2];
        Ok(serde_json::json!({
            "backend": backend.name(), "adapter": adapter, "method": cfg.method.to_string(), "implementation": format!("{:?}", cfg.implementation).to_lowercase(),
            "batch": b, "n": n, "d_model": d, "heads": cfg.heads, "clip": cfg.clip, "causal": cfg.causal, "rel_v": cfg.has_rel_v(),
            "threads": threads, "reps": reps,
            "ms_per_forward": median, "ms_min": ms[0],
            "gflop_per_s": forward_flops(&cfg, sc.dims()) / median / 1e6,
            "peak_rss_mib": peak_rss_mib(),
            "stages_ms": stages,
        }))
    })
}

fn run(cli: Cli) -> relattn::Result<()> {
    let start = std::time::Instant::now();
    match cli.command {
        Command::Bench { setup, reps, threads, backend, save_output } => {
            println!("{}", bench(&setup, reps, threads, &backend, save_output.as_deref())?);
        }
        Command::Model { command } => run_model(command)?,
        Command::Presets => {
            for name in presets::NAMES {
                println!("{name:14} {}", presets::preset(name)?.description);
            }
        }
        Command::Compute { setup, out, json } => {
            let (t, times) = setup.trace()?;
            let file = std::fs::File::create(&out).map_err(|e| Error::File { path: out.display().to_string(), reason: e.to_string() })?;
            t.write_npz(std::io::BufWriter::new(file))?;
            if json {
                let mut s = summary(&t, &out, start.elapsed().as_secs_f64() * 1e3);
                s["stages_ms"] = stages_json(&times);
                println!("{s}");
            }
        }
        Command::Render { setup, stage, head, batch_index, tokens, size, out, json } => {
            let size = parse_size(&size)?;
            let (t, _) = setup.trace()?;
            let m = t.stage(stage, batch_index, head)?;
            let (_, _, n) = t.dims();
            let tokens: Option<Vec<String>> = tokens.map(|s| s.split_whitespace().map(String::from).collect());
            if let Some(tok) = &tokens {
                if tok.len() != n {
                    return Err(Error::invalid("tokens", format!("{} tokens", tok.len()), format!("exactly n = {n} tokens")));
                }
            }
            let positional = |len: usize| tokens.clone().filter(|_| len == n);
            let (rows, cols) = m.dim();
            let (x_desc, y_desc) = match stage {
                Stage::RelK | Stage::RelV => ("d_head", "table row r (distance r − k)"),
                Stage::ValueBuckets => ("table row r", "query i"),
                Stage::OutputContent | Stage::OutputRelative => ("d_head", "query i"),
                Stage::Output => ("d_model", "query i"),
                Stage::SkewQer | Stage::SkewPadded | Stage::SkewReshaped => ("column", "row"),
                _ => ("key j", "query i"),
            };
            let fig = Figure {
                matrix: m.view(),
                title: format!("{} — head {head}", stage.title(t.config.method)),
                subtitle: format!("{}   shape ({rows}, {cols})", stage.formula(t.config.method)),
                x_desc: x_desc.into(),
                y_desc: y_desc.into(),
                x_labels: if x_desc == "key j" { positional(cols) } else { None },
                y_labels: if y_desc == "query i" { positional(rows) } else { None },
                scale: stage.scale(),
                palette: Default::default(),
            };
            render::save(&fig, &out, size)?;
            if json {
                println!("{}", summary(&t, &out, start.elapsed().as_secs_f64() * 1e3));
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
