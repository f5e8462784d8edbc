//! The seeds' examples (../shared/seeds/) reproduced through the presets.

mod common;

use common::{flat, rel_err};
use ndarray::{s, Array4, Axis};
use relattn_core::layer::forward;
use relattn_core::layer::presets::preset;
use relattn_core::{Implementation, Scenario, Stage};

fn build(name: &str) -> (relattn_core::Config, Scenario) {
    let p = preset(name).unwrap();
    let sc = Scenario::build(&p.config, &p.spec, p.arrays, p.per_head_tables).unwrap();
    (p.config, sc)
}

/// Seed 004's e_by_def, printed there for b 2, h 3, n 4: q_i · w^K[clip(j − i, 2) + 2].
pub const SEED004_RELATION_KEY_LOGITS: [[[[f32; 4]; 4]; 3]; 2] = [
    [
        [[44., 23., 18., 18.], [-29., 129., 68., 33.], [66., -59., 214., 113.], [86., 86., -89., 299.]],
        [[384., 203., 78., 78.], [-149., 469., 248., 93.], [146., -179., 554., 293.], [166., 166., -209., 639.]],
        [[724., 383., 138., 138.], [-269., 809., 428., 153.], [226., -299., 894., 473.], [246., 246., -329., 979.]],
    ],
    [
        [[1064., 563., 198., 198.], [-389., 1149., 608., 213.], [306., -419., 1234., 653.], [326., 326., -449., 1319.]],
        [[1404., 743., 258., 258.], [-509., 1489., 788., 273.], [386., -539., 1574., 833.], [406., 406., -569., 1659.]],
        [[1744., 923., 318., 318.], [-629., 1829., 968., 333.], [466., -659., 1914., 1013.], [486., 486., -689., 1999.]],
    ],
];

pub fn seed004_expected() -> Array4<f32> {
    Array4::from_shape_vec((2, 3, 4, 4), SEED004_RELATION_KEY_LOGITS.as_flattened().as_flattened().as_flattened().to_vec()).unwrap()
}

#[test]
fn seed004_worked_example_exactly() {
    let (cfg, sc) = build("seed004");
    for implementation in [Implementation::Efficient, Implementation::Materialized] {
        let t = forward::trace(&relattn_core::Config { implementation, ..cfg }, &sc).unwrap();
        assert_eq!(t.relative_logits, seed004_expected(), "{implementation:?}");
        assert_eq!(t.rel_index, ndarray::arr2(&[[2, 3, 4, 4], [1, 2, 3, 4], [0, 1, 2, 3], [0, 0, 1, 2]]));
        // The queries are the seed's x = arange(120).reshape(2, 3, 4, 5): batch 1, head 1 (columns 5..10), row 2.
        assert_eq!(t.q.slice(s![1, 2, 5..10]).to_vec(), vec![90., 91., 92., 93., 94.]);
    }
}

#[test]
fn seed000_both_approaches_run() {
    for name in ["seed000-shaw", "seed000-music"] {
        let (cfg, sc) = build(name);
        assert_eq!(sc.dims(), (1, 12, 512));
        let t = forward::trace(&cfg, &sc).unwrap();
        assert_eq!(t.weights.dim(), (1, 1, 12, 12));
        assert_eq!(t.output.dim(), (1, 12, 512));
        let want = common::layer(&cfg, &sc);
        assert!(rel_err(t.output.iter(), flat(&want.output[0])) < 1e-5, "{name}");
        let m = forward::trace(&relattn_core::Config { implementation: Implementation::Materialized, ..cfg }, &sc).unwrap();
        assert!(rel_err(m.output.iter(), t.output.iter().map(|&v| v as f64)) < 1e-5, "{name} materialized");
    }
    let (cfg, sc) = build("seed000-music");
    let t = forward::trace(&cfg, &sc).unwrap();
    let skew = t.skew.as_ref().unwrap();
    assert_eq!((skew.qer.dim(), skew.padded.dim(), skew.reshaped.dim(), skew.sliced.dim()), ((1, 1, 12, 12), (1, 1, 12, 13), (1, 1, 13, 12), (1, 1, 12, 12)));
    // Seed 000's E_r = embedding(positions) has 12 rows, distances −11..=0: nothing clips.
    assert_eq!(t.rel_k.dim(), (1, 12, 512));
    assert_eq!((t.rel_index[[11, 0]], t.rel_index[[11, 11]], t.rel_index[[5, 3]]), (0, 11, 9));
}

#[test]
fn seed002_clip_150_on_200_positions() {
    let (cfg, sc) = build("seed002");
    let t = forward::trace(&cfg, &sc).unwrap();
    assert_eq!(t.weights.dim(), (4, 1, 200, 200));
    assert_eq!(t.rel_index[[0, 199]], 300);
    assert_eq!(t.rel_index[[199, 0]], 0);
    assert_eq!(t.rel_index[[10, 20]], 160);
    assert_eq!(t.stage(Stage::RelK, 0, 0).unwrap().dim(), (301, 100));
    let m = forward::trace(&relattn_core::Config { implementation: Implementation::Materialized, ..cfg }, &sc).unwrap();
    assert!(rel_err(m.relative_logits.iter(), t.relative_logits.iter().map(|&v| v as f64)) < 1e-5);
}

#[test]
fn seed003_multi_head_matches_definition() {
    let (cfg, sc) = build("seed003");
    assert_eq!((cfg.heads, cfg.clip, sc.dims()), (8, 4, (1, 20, 768)));
    let t = forward::trace(&cfg, &sc).unwrap();
    let want = common::layer(&cfg, &sc);
    assert!(rel_err(t.output.iter(), flat(&want.output[0])) < 1e-5);
    for h in 0..8 {
        let w = t.weights.index_axis(Axis(0), 0).index_axis(Axis(0), h).to_owned();
        assert!(rel_err(w.iter(), flat(&want.heads[0][h].weights)) < 1e-5);
    }
}
