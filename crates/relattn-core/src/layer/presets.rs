//! Ready scenarios: the seeds' examples (../shared/seeds/ in the project's workspace), named as their
//! source, and hand-built heads that show what relative positions alone can do.

use crate::attention::Config;

use crate::error::{Error, Result};
use crate::layer::scenario::{Arrays, Spec};
use crate::positions::deberta::{Deberta, Terms};
use crate::positions::rope::{PairLayout, Rope};
use crate::positions::Method;
use ndarray::{Array, Array2, Array3};

/// A named example: its configuration, sizes and any fixed arrays.
pub struct Preset {
    pub name: &'static str,
    pub description: &'static str,
    pub config: Config,
    pub spec: Spec,
    pub per_head_tables: bool,
    pub arrays: Arrays,
}

/// Every preset's name.
pub const NAMES: [&str; 12] = [
    "seed000-shaw",
    "seed000-music",
    "seed002",
    "seed003",
    "seed004",
    "built-heads",
    "rope-kernel",
    "rope-half-split",
    "alibi-slopes",
    "t5-buckets",
    "absolute-positions",
    "deberta-buckets",
];

/// Seed 004's relation-key table: `np.random.seed(5); np.random.randint(-10, 10, (5, 5))`.
pub const SEED004_TABLE: [[f32; 5]; 5] =
    [[-7., 4., 5., -4., 6.], [-1., -2., -6., -3., 6.], [6., -3., 2., 5., 7.], [-3., 6., 2., 3., 1.], [-9., 5., 8., -1., 0.]];

/// The preset called `name`.
pub fn preset(name: &str) -> Result<Preset> {
    let shaw = Config { method: Method::Shaw, ..Config::default() };
    let p = |description, config, n, d_model, batch| Preset {
        name: "",
        description,
        config,
        spec: Spec { n, d_model, batch, seed: 0 },
        per_head_tables: false,
        arrays: Arrays::new(),
    };
    let mut preset = match name {
        "seed000-shaw" => {
            p("Seed 000, approach 1 (Shaw): seq_len 12, d 512, clip 7, one head, no a^V", Config { heads: 1, clip: 7, rel_v: false, ..shaw }, 12, 512, 1)
        }
        "seed000-music" => p(
            "Seed 000, approach 2 (Music Transformer skew): seq_len 12, d 512, E_r (12, 512) as the seed's embedding(positions), one head, causal",
            Config { method: Method::Music, heads: 1, clip: 11, causal: true, rel_v: false, ..shaw },
            12,
            512,
            1,
        ),
        "seed002" => p("Seed 002: 200 × 200 distances clipped at 150, d_model 100, batch 4", Config { heads: 1, clip: 150, rel_v: false, ..shaw }, 200, 100, 4),
        "seed003" => p("Seed 003: hidden 768, 8 heads (d_head 96), k 4, seq_len 20", Config { heads: 8, clip: 4, ..shaw }, 20, 768, 1),
        "seed004" => seed004(),
        "built-heads" => built_heads(),
        "rope-kernel" => p(
            "RoPE as in the paper and GPT-J (interleaved pairs, base 10000), d_head 64: see the relative kernel's decay, and that the logits' diagonals carry the positions",
            Config { method: Method::Rope, heads: 1, ..Config::default() },
            64,
            64,
            1,
        ),
        "rope-half-split" => p(
            "The same weights as rope-kernel with Llama's and GPT-NeoX's half-split pairs: other rotated Q and K, other logits; the kernel is the same",
            Config { method: Method::Rope, heads: 1, rope: Rope { layout: PairLayout::Half, ..Rope::default() }, ..Config::default() },
            64,
            64,
            1,
        ),
        "alibi-slopes" => p(
            "ALiBi with 8 heads, causal: slopes 1/2, 1/4, … 1/256 (the slopes stage); each head's bias is a penalty of its own steepness",
            Config { method: Method::Alibi, heads: 8, causal: true, ..Config::default() },
            32,
            64,
            1,
        ),
        "t5-buckets" => p(
            "T5's 32 buckets and max_distance 128 at n 512, bidirectional: exact buckets near the diagonal, log-spaced bands, then flat",
            Config { method: Method::T5, heads: 1, ..Config::default() },
            512,
            64,
            1,
        ),
        "absolute-positions" => p(
            "Absolute sinusoids (Vaswani et al. 2017), the baseline, at n 32, d_model 64: vectors added to x, no position term in attention; the last picture shows how alike the position vectors are",
            Config { method: Method::Absolute, heads: 1, ..Config::default() },
            32,
            64,
            1,
        ),
        "deberta-buckets" => p(
            "DeBERTa's disentangled attention with small buckets at n 96, bidirectional: 16 a side, exact to ±8, log steps to ±63, then the edge rows; c2p and p2c each read one row of their table per bucket of i − j, and the bucket map follows the stages",
            Config { method: Method::Deberta, heads: 1, deberta: Deberta { position_buckets: 16, max_relative_positions: 64, terms: Terms::Both }, ..Config::default() },
            96,
            64,
            1,
        ),
        _ => return Err(Error::invalid("preset", format!("'{name}'"), NAMES.join(", "))),
    };
    preset.name = NAMES.into_iter().find(|n| *n == name).expect("matched above");
    Ok(preset)
}

/// The logit a hand-built head gives the distances it favours (before the 1/√d_head scale): 20/√8 ≈ 7,
/// so such a key gets e⁷ ≈ 1100 times the weight of one at logit 0.
const BUILT_LOGIT: f32 = 20.0;

/// Three hand-built Shaw heads (n 12, d_model 24, k 3, relative term only): every query is the same vector
/// u = e₀ (W_q = 0, b_q = u in each head), so q_i · w^K[r] is component 0 of table row r, and each head's
/// w^K sets that component to [`BUILT_LOGIT`] on the distances it attends to: head 0 the previous token
/// (j − i = −1), head 1 the next one (+1), head 2 every key with |j − i| < k (the edge rows ±k, which all
/// farther keys share, stay 0). The weights show each pattern as a diagonal band, trained by nobody.
fn built_heads() -> Preset {
    let (h, dh, k, n) = (3, 8, 3usize, 12);
    let d = h * dh;
    let rows = 2 * k + 1;
    let favoured = |head: usize, dist: isize| match head {
        0 => dist == -1,
        1 => dist == 1,
        _ => dist.unsigned_abs() < k,
    };
    let rel_k = Array3::from_shape_fn((h, rows, dh), |(head, r, c)| if c == 0 && favoured(head, r as isize - k as isize) { BUILT_LOGIT } else { 0.0 });
    let b_q = ndarray::Array1::from_shape_fn(d, |col| if col % dh == 0 { 1.0 } else { 0.0 });
    let arrays = Arrays::from([
        ("w_q".to_string(), Array2::<f32>::zeros((d, d)).into_dyn()),
        ("b_q".to_string(), b_q.into_dyn()),
        ("rel_k".to_string(), rel_k.into_dyn()),
    ]);
    Preset {
        name: "built-heads",
        description:
            "Hand-built heads, relative term only: head 0 attends to the previous token, head 1 to the next, head 2 evenly to every key with |j − i| < k",
        config: Config { method: Method::Shaw, heads: h, clip: k, rel_v: false, content: false, ..Config::default() },
        spec: Spec { n, d_model: d, batch: 1, seed: 0 },
        per_head_tables: true,
        arrays,
    }
}

/// Seed 004 (tensor2tensor walk-through): b 2, h 3, n 4, d_z 5, k 2. Its queries are
/// `arange(120).reshape(2, 3, 4, 5)` (b, h, n, d_z); here they come out of `Q = x W_q` with W_q = I and
/// x[b, i, h·5 + c] = arange[b, h, i, c], so the relative logits are the seed's 44, 23, 18, 18, −29, ...
fn seed004() -> Preset {
    let (b, h, n, dz) = (2, 3, 4, 5);
    let x = Array3::from_shape_fn((b, n, h * dz), |(bi, i, col)| ((((bi * h + col / dz) * n + i) * dz) + col % dz) as f32);
    let table = Array2::from_shape_vec((5, 5), SEED004_TABLE.concat()).expect("5×5");
    let arrays = Arrays::from([("x".to_string(), x.into_dyn()), ("w_q".to_string(), Array::eye(h * dz).into_dyn()), ("rel_k".to_string(), table.into_dyn())]);
    Preset {
        name: "seed004",
        description: "Seed 004: b 2, h 3, n 4, d_z 5, k 2, its integer w^K table, queries = arange(120)",
        config: Config { method: Method::Shaw, heads: h, clip: 2, ..Config::default() },
        spec: Spec { n, d_model: h * dz, batch: b, seed: 0 },
        per_head_tables: false,
        arrays,
    }
}
