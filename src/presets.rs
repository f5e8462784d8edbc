//! The seeds' examples as ready scenarios (../shared/seeds/ in the project's workspace).

use crate::attention::{Config, Method};
use crate::error::{Error, Result};
use crate::scenario::{Arrays, Spec};
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
pub const NAMES: [&str; 5] = ["seed000-shaw", "seed000-music", "seed002", "seed003", "seed004"];

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
        _ => return Err(Error::invalid("preset", format!("'{name}'"), NAMES.join(", "))),
    };
    preset.name = NAMES.into_iter().find(|n| *n == name).expect("matched above");
    Ok(preset)
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
