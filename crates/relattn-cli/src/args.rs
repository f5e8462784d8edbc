//! The command line's arguments (clap's derive): the commands, their flags and their help. A layer's options
//! are `LayerOptions` (crates/relattn/src/options.rs), flattened into [`LayerArgs`] with the scenario file and the budget.

use clap::{Args, Parser, Subcommand};
use relattn::files::atlas::Metric;
use relattn::options::LayerOptions;
use relattn::render::atlas::Order;
use relattn::trained::chorales::BPM;
use relattn::trained::transformer::{DEFAULT_TOP_K, DEFAULT_TOP_P};
use relattn::Stage;
use std::path::PathBuf;

/// Most timed repetitions of `bench`.
pub const MAX_REPS: u64 = 10_000;
/// Most worker threads of `bench` (each is an OS thread; thousands only slow the start-up).
pub const MAX_THREADS: u64 = 256;
/// Largest memory budget in MiB: isize::MAX bytes, the most one array may take.
pub const MAX_MEMORY_MB: u64 = (isize::MAX as u64) >> 20;

/// A whole number in 1..=MAX, read as a signed number first so that a negative one is refused with the range
/// (clap's u64 parser says "invalid digit found in string").
fn one_to<const MAX: u64>(s: &str) -> Result<u64, String> {
    match s.parse::<i128>() {
        Ok(v) if (1..=MAX as i128).contains(&v) => Ok(v as u64),
        Ok(v) => Err(format!("{v} is not in 1..={MAX}")),
        Err(e) => Err(e.to_string()),
    }
}

#[derive(Parser)]
#[command(
    name = "relattn",
    version,
    about = "Relative-position self-attention (Shaw et al. 2018; Music Transformer) with every intermediate exposed",
    long_about = "Computes relative-position multi-head self-attention and writes every intermediate (distances, clipped \
indices, content and relative logits, the Music Transformer's skew steps, masked logits, weights, outputs) to an .npz, \
or renders one of them as a labelled heatmap (.svg or .png).\n\nTensors come from a scenario file (--tensors, an \
np.savez .npz; see docs/src/files.md) and whatever it lacks is generated from --seed (ChaCha8; x ~ N(0, 1); weights and tables \
Xavier-uniform; biases 0)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Compute a trace and write it as an .npz (rel_index, content_logits, relative_logits, logits, weights, output, ...).
    Compute {
        #[command(flatten)]
        layer: LayerArgs,
        /// Where to write the trace (.npz).
        #[arg(long)]
        out: PathBuf,
        /// Print a JSON summary on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Draw one of the lecture's pictures of the layer's scheme (.svg or .png, 16:9 by default).
    Picture {
        #[command(flatten)]
        layer: LayerArgs,
        /// The picture: rope_pair_turn, rope_kernel_curves, rope_layouts (RoPE); alibi_slope_by_head,
        /// alibi_bias_by_head (ALiBi); t5_staircase, t5_bias_by_bucket (T5); deberta_buckets (DeBERTa);
        /// skew_and_rel_shift (transformer_xl); absolute_similarity (absolute).
        #[arg(long)]
        name: String,
        /// Figure size in pixels, WIDTHxHEIGHT.
        #[arg(long, default_value = "1600x900", allow_hyphen_values = true)]
        size: String,
        /// Output file: .svg (vector) or .png.
        #[arg(long)]
        out: PathBuf,
    },
    /// Render one stage of one head as a heatmap with a colorbar (.svg or .png).
    Render {
        #[command(flatten)]
        layer: LayerArgs,
        /// Stage to draw: distances, rel_index, rel_k, rel_v, slopes, rope_angles, rope_kernel, rotated_q, rotated_k,
        /// content_logits, skew_qer, skew_padded, skew_reshaped, skew_sliced, c2p, p2c, bd_relative, bd, ef,
        /// relative_logits, logits, weights, sink_share, value_buckets, output_content, output_relative, output.
        #[arg(long, value_parser = clap::value_parser!(Stage))]
        stage: Stage,
        /// Head to draw, 0..=(heads − 1).
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        head: i64,
        /// Batch element to draw, 0..=(batch − 1).
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        batch_index: i64,
        /// Space-separated tokens that label the axes (one per position).
        #[arg(long)]
        tokens: Option<String>,
        /// Figure size in pixels, WIDTHxHEIGHT.
        #[arg(long, default_value = "900x760", allow_hyphen_values = true)]
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
        layer: LayerArgs,
        /// Timed repetitions after one warm-up (1..=10000).
        #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = one_to::<MAX_REPS>)]
        reps: u64,
        /// Worker threads (heads run in parallel), 1..=256; default: all cores.
        #[arg(long, allow_negative_numbers = true, value_parser = one_to::<MAX_THREADS>)]
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
    /// Head atlases (relattn.atlas(model, prompts).save(path) in Python): every layer × head of a model.
    Atlas {
        #[command(subcommand)]
        command: AtlasCommand,
    },
    /// Trained models (models/chorales-*.safetensors): config, evaluation, attention traces, sampling.
    Model {
        #[command(subcommand)]
        command: ModelCommand,
    },
}

#[derive(Subcommand)]
pub enum AtlasCommand {
    /// Draw the atlas as a grid of layer × head tiles (each head's attention by offset over its scheme's
    /// position term), coloured by a metric: .svg, .png, or one self-contained .html with tooltips.
    Render(AtlasRender),
}

/// The metrics that colour an atlas's tiles, by name, each with its title (crates/relattn/src/files/atlas.rs).
fn tile_metrics() -> clap::builder::PossibleValuesParser {
    Metric::ALL.into_iter().filter(|m| m.colours_tiles()).map(|m| clap::builder::PossibleValue::new(m.name()).help(m.title())).collect::<Vec<_>>().into()
}

/// `atlas render`'s arguments.
#[derive(Args)]
pub struct AtlasRender {
    /// The atlas (.atlas.npz).
    pub file: PathBuf,
    /// Output file: .svg, .png or .html.
    #[arg(long)]
    pub out: PathBuf,
    /// The metric colouring the tiles (one the atlas holds).
    #[arg(long, default_value = "first_token", value_parser = tile_metrics())]
    pub metric: String,
    /// The order of each layer's tiles.
    #[arg(long, value_enum, default_value_t = Order::Head)]
    pub order: Order,
    /// The figure's width in pixels, 400..=8000 (its height follows from the layers).
    #[arg(long, default_value_t = 1600, allow_negative_numbers = true)]
    pub width: i64,
    /// Memory budget in MiB (1..=8796093022207) for the atlas's arrays. [default: 8192]
    #[arg(long, allow_negative_numbers = true, value_parser = one_to::<MAX_MEMORY_MB>)]
    pub max_memory_mb: Option<u64>,
}

/// Where a model and its data come from.
#[derive(Args)]
pub struct ModelFiles {
    /// The model: a safetensors file written by train/export.py.
    #[arg(long)]
    pub model: PathBuf,
    /// Tokenised chorales (JSON written by train/export.py).
    #[arg(long, default_value = "models/chorales-test.json")]
    pub data: PathBuf,
}

#[derive(Subcommand)]
pub enum ModelCommand {
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
        #[command(flatten)]
        sampler: SamplerArgs,
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
        #[command(flatten)]
        sampler: SamplerArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// How `model sample` and `model stats` draw each token.
#[derive(Args)]
pub struct SamplerArgs {
    /// Softmax temperature, 0..=100 (0: always the most likely token).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub temperature: f32,
    /// Draw only from the K most likely tokens, 0..=vocab (0: every token).
    #[arg(long, default_value_t = DEFAULT_TOP_K as i64, allow_negative_numbers = true)]
    pub top_k: i64,
    /// Draw only from the fewest most likely tokens whose probabilities reach P (nucleus), in (0, 1] (1:
    /// every token).
    #[arg(long, default_value_t = DEFAULT_TOP_P, allow_negative_numbers = true)]
    pub top_p: f32,
    /// Seed of the sampler (ChaCha8), 0..=18446744073709551615; the same seed gives the same music (`stats`:
    /// the k-th continuation uses seed + k).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub seed: u64,
}

/// What to compute: the layer's options (unset ones from --preset, or the defaults shown), a scenario file and
/// the memory budget.
#[derive(Args)]
pub struct LayerArgs {
    #[command(flatten)]
    pub options: LayerOptions,
    /// Scenario file (.npz from np.savez, or an .npy holding x) with any of: x, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o,
    /// rel_k, rel_v, e_r, alibi_slopes, t5_bias, key_mask.
    #[arg(long)]
    pub tensors: Option<PathBuf>,
    /// Memory budget in MiB (1..=8796093022207); larger requests are refused before computing. [default: 8192]
    #[arg(long, allow_negative_numbers = true, value_parser = one_to::<MAX_MEMORY_MB>)]
    pub max_memory_mb: Option<u64>,
}
