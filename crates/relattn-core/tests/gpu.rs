//! The GPU backend (wgpu; natively Vulkan, here usually Mesa's lavapipe) gives the CPU's trace within 1e-4
//! (max |gpu − cpu| / max(1, max |cpu|), per array) on random layers: every scheme, causal or not, key
//! masks, k below and above n, shared and per-head tables, a^V on and off, every way of cutting a layer
//! into chunks, and what today's models add (heads of their own width, q/k norms, sliding windows,
//! soft-capping, scales of their own, sinks), each alone and all at once, also against the f64 definition of
//! tests/common. Without a GPU adapter each test prints why and passes.

mod common;

use common::rel_err;
use ndarray::{Array2, Array4};
use proptest::prelude::*;
use relattn_core::attention::{gpu_computes, LogitScale};
use relattn_core::error::gpu::GpuError;
use relattn_core::gpu::GpuContext;
use relattn_core::layer::forward;
use relattn_core::layer::scenario::Arrays;
use relattn_core::positions::deberta::{Deberta, Terms};
use relattn_core::timing::LogitTimes;
use relattn_core::{Config, Edge, Error, Implementation, Method, Scenario, Spec, Stage, Trace};
use std::sync::{Mutex, OnceLock};

const TOL: f64 = 1e-4;

/// One device for the whole file (tests take turns); `None` (the test is skipped, saying why) only when the
/// machine has no adapter or device. A kernel that does not build fails the tests.
fn gpu() -> Option<std::sync::MutexGuard<'static, GpuContext>> {
    static CTX: OnceLock<Result<Mutex<GpuContext>, GpuError>> = OnceLock::new();
    match CTX.get_or_init(|| pollster::block_on(GpuContext::try_new()).map(Mutex::new)) {
        Ok(m) => Some(m.lock().unwrap_or_else(|e| e.into_inner())),
        Err(why @ (GpuError::NoAdapter(_) | GpuError::NoDevice { .. })) => {
            eprintln!("skipped: {why}");
            None
        }
        Err(why) => panic!("the GPU context failed: {why}"),
    }
}

fn close(name: &str, got: &Array4<f32>, want: &Array4<f32>) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.dim(), want.dim(), "{} shape", name);
    let e = rel_err(got.iter(), want.iter().map(|&v| v as f64));
    prop_assert!(e <= TOL, "{name}: {e:e}");
    Ok(())
}

/// Every array of the two traces agrees; −∞ (masked logits) in the same cells.
fn same_trace(g: &Trace, c: &Trace) -> Result<(), TestCaseError> {
    prop_assert_eq!(&g.distances, &c.distances);
    prop_assert_eq!(&g.rel_index, &c.rel_index);
    for (name, a, b) in [("q", &g.q, &c.q), ("k", &g.k, &c.k), ("v", &g.v, &c.v), ("heads", &g.heads, &c.heads), ("output", &g.output, &c.output)] {
        let e = rel_err(a.iter(), b.iter().map(|&v| v as f64));
        prop_assert!(e <= TOL, "{name}: {e:e}");
    }
    close("content_logits", &g.content_logits, &c.content_logits)?;
    close("relative_logits", &g.relative_logits, &c.relative_logits)?;
    prop_assert!(g.logits.iter().zip(&c.logits).all(|(a, b)| (*a == f32::NEG_INFINITY) == (*b == f32::NEG_INFINITY)), "masked cells differ");
    let finite = |t: &Trace| t.logits.mapv(|v| if v.is_finite() { v } else { 0.0 });
    close("logits", &finite(g), &finite(c))?;
    close("weights", &g.weights, &c.weights)?;
    close("out_content", &g.out_content, &c.out_content)?;
    close("out_relative", &g.out_relative, &c.out_relative)?;
    prop_assert_eq!(g.value_buckets.is_some(), c.value_buckets.is_some(), "value buckets present");
    if let (Some(a), Some(b)) = (&g.value_buckets, &c.value_buckets) {
        close("value_buckets", a, b)?;
    }
    for (name, a, b) in [("c2p", &g.c2p, &c.c2p), ("p2c", &g.p2c, &c.p2c)] {
        prop_assert_eq!(a.is_some(), b.is_some(), "{} present", name);
        if let (Some(a), Some(b)) = (a, b) {
            close(name, a, b)?;
        }
    }
    prop_assert_eq!(g.skew.is_some(), c.skew.is_some(), "skew steps present");
    if let (Some(a), Some(b)) = (&g.skew, &c.skew) {
        close("skew_qer", &a.qer, &b.qer)?;
        close("skew_padded", &a.padded, &b.padded)?;
        close("skew_reshaped", &a.reshaped, &b.reshaped)?;
        close("skew_sliced", &a.sliced, &b.sliced)?;
    }
    prop_assert_eq!(g.stages(), c.stages());
    if g.stages().contains(&Stage::SinkShare) {
        let (b, h, _, _) = c.weights.dim();
        for (bi, hi) in (0..b).flat_map(|bi| (0..h).map(move |hi| (bi, hi))) {
            let (a, w) = (g.stage(Stage::SinkShare, bi, hi).unwrap(), c.stage(Stage::SinkShare, bi, hi).unwrap());
            let e = rel_err(a.iter(), w.iter().map(|&v| v as f64));
            prop_assert!(e <= TOL, "sink_share b{} h{}: {:e}", bi, hi, e);
        }
    }
    prop_assert!(g.weights.iter().all(|w| w.is_finite()) && g.output.iter().all(|v| v.is_finite()));
    Ok(())
}

/// The GPU's output and weights against the f64 definition (tests/common's `layer`: projections, q/k norms,
/// windows, soft-caps, scales and sinks written from the formulas), within 1e-4.
fn matches_definition(ctx: &mut GpuContext, cfg: &Config, sc: &Scenario) -> Result<(), TestCaseError> {
    if refused(ctx, cfg, sc)? {
        return Ok(());
    }
    let want = common::layer(cfg, sc);
    let got = trace(ctx, cfg, sc);
    let out = pollster::block_on(ctx.output(cfg, sc)).unwrap();
    for (bi, (heads, output)) in want.heads.iter().zip(&want.output).enumerate() {
        let flat = |m: &common::Mat| m.iter().flatten().copied().collect::<Vec<f64>>();
        let e = rel_err(got.output.index_axis(ndarray::Axis(0), bi).iter(), flat(output));
        prop_assert!(e <= TOL, "output (staged) b{} vs the definition: {:e}", bi, e);
        let e = rel_err(out.index_axis(ndarray::Axis(0), bi).iter(), flat(output));
        prop_assert!(e <= TOL, "output (attend.wgsl) b{} vs the definition: {:e}", bi, e);
        for (hi, r) in heads.iter().enumerate() {
            let w = got.weights.slice(ndarray::s![bi, hi, .., ..]);
            let e = rel_err(w.iter(), flat(&r.weights));
            prop_assert!(e <= TOL, "weights b{} h{} vs the definition: {:e}", bi, hi, e);
            for (i, row) in r.masked.iter().enumerate() {
                for (j, &masked) in row.iter().enumerate() {
                    prop_assert_eq!(got.logits[[bi, hi, i, j]] == f32::NEG_INFINITY, masked, "masked ({}, {})", i, j);
                }
            }
        }
    }
    Ok(())
}

/// A model's layer as tests/equivalence.rs's `model_shaped_layers` makes it: w_q (d_model, h·d_head), w_v
/// (d_model, kv·d_v) and w_o (h·d_v, d_out) of any widths, `kv` K/V heads, q/k norms none (0), per head (1) or
/// over the whole projection (2), sink logits, a key mask; values drawn from `seed`, and per-head tables (w^K,
/// w^V, …) when `seed` is odd, one shared by every head when even.
#[allow(clippy::too_many_arguments)]
fn model_layer(
    cfg: &Config,
    n: usize,
    d_model: usize,
    (d_head, d_v, d_out): (usize, usize, usize),
    kv: usize,
    norm: u8,
    sinks: bool,
    seed: u64,
    mask_bits: Option<u64>,
) -> Scenario {
    let h = cfg.heads;
    let mut r = seed;
    let mut vec = |len: usize, lo: f32, hi: f32| -> Vec<f32> {
        (0..len)
            .map(|_| {
                r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                lo + (hi - lo) * ((r >> 40) as f32 / (1u64 << 24) as f32)
            })
            .collect()
    };
    let mut given = Arrays::new();
    let mut put = |name: &str, shape: &[usize], values: Vec<f32>| {
        given.insert(name.into(), ndarray::ArrayD::from_shape_vec(shape, values).unwrap());
    };
    put("w_q", &[d_model, h * d_head], vec(d_model * h * d_head, -0.8, 0.8));
    put("w_k", &[d_model, kv * d_head], vec(d_model * kv * d_head, -0.8, 0.8));
    put("w_v", &[d_model, kv * d_v], vec(d_model * kv * d_v, -0.8, 0.8));
    put("w_o", &[h * d_v, d_out], vec(h * d_v * d_out, -0.8, 0.8));
    put("b_q", &[h * d_head], vec(h * d_head, -0.3, 0.3));
    put("b_k", &[kv * d_head], vec(kv * d_head, -0.3, 0.3));
    put("b_v", &[kv * d_v], vec(kv * d_v, -0.3, 0.3));
    put("b_o", &[d_out], vec(d_out, -0.3, 0.3));
    match norm {
        1 => {
            put("q_norm", &[d_head], vec(d_head, 0.5, 1.5));
            put("k_norm", &[d_head], vec(d_head, 0.5, 1.5));
        }
        2 => {
            put("q_norm", &[h * d_head], vec(h * d_head, 0.5, 1.5));
            put("k_norm", &[kv * d_head], vec(kv * d_head, 0.5, 1.5));
        }
        _ => {}
    }
    if sinks {
        put("sinks", &[h], vec(h, -1.0, 2.0));
    }
    if let Some(bits) = mask_bits {
        put("key_mask", &[1, n], (0..n).map(|i| ((bits >> (i % 64)) & 1) as f32).collect());
    }
    let sc = Scenario::build(cfg, &Spec { n, d_model, batch: 1, seed }, given, seed % 2 == 1).unwrap();
    assert_eq!((sc.d_head, sc.d_v, sc.d_out()), (d_head, d_v, d_out));
    sc
}

/// [`check`] with the work capped at `work_rows` rows of the widest work array (per-head and row-tiled
/// chunks; `None`: the default cap), the cap put back after.
fn check_chunked(ctx: &mut GpuContext, cfg: &Config, sc: &Scenario, work_rows: Option<usize>) -> Result<(), TestCaseError> {
    let n = sc.dims().1;
    let row_bytes = (n.max(cfg.table_rows()).max(sc.d_head).max(sc.d_v) * 4) as u64;
    ctx.set_work_bytes(work_rows.map_or(relattn_core::gpu::WORK_BYTES, |r| r as u64 * row_bytes));
    let res = check(ctx, cfg, sc);
    ctx.set_work_bytes(relattn_core::gpu::WORK_BYTES);
    res
}

#[allow(clippy::too_many_arguments)]
fn scenario(cfg: &Config, n: usize, d_head: usize, batch: usize, per_head: bool, seed: u64, mask_bits: Option<u64>) -> Scenario {
    let spec = Spec { n, d_model: d_head * cfg.heads, batch, seed };
    let mut given = Arrays::new();
    if let Some(bits) = mask_bits {
        let m = Array2::from_shape_fn((batch, n), |(b, i)| ((bits >> ((b * n + i) % 64)) & 1) as f32);
        given.insert("key_mask".into(), m.into_dyn());
    }
    Scenario::build(cfg, &spec, given, per_head).unwrap()
}

/// Whether the GPU refuses the layer: a scheme without kernels ([`gpu_computes`]) and Llama 4's chunks, and the
/// trace, the profiled forward and the output alone each refuse them naming "method" or "chunk" (the page
/// computes such a layer on the CPU instead).
fn refused(ctx: &mut GpuContext, cfg: &Config, sc: &Scenario) -> Result<bool, TestCaseError> {
    let field = match (!gpu_computes(cfg.method), cfg.chunk) {
        (true, _) => "method",
        (false, Some(_)) => "chunk",
        (false, None) => return Ok(false),
    };
    let fields = [
        pollster::block_on(ctx.trace(cfg, sc)).err().map(|e| e.field().to_string()),
        pollster::block_on(ctx.forward(cfg, sc)).err().map(|e| e.field().to_string()),
        pollster::block_on(ctx.output(cfg, sc)).err().map(|e| e.field().to_string()),
    ];
    let want = Some(field.to_string());
    prop_assert_eq!(fields, [want.clone(), want.clone(), want]);
    Ok(true)
}

/// The GPU's trace of the layer.
fn trace(ctx: &mut GpuContext, cfg: &Config, sc: &Scenario) -> Trace {
    pollster::block_on(ctx.trace(cfg, sc)).unwrap().0
}

/// GPU trace vs CPU trace, the GPU's profiled forward vs its own trace (its stage times are the logits
/// kernel's, no logit parts), and its output alone (attend.wgsl) vs the CPU.
fn check(ctx: &mut GpuContext, cfg: &Config, sc: &Scenario) -> Result<(), TestCaseError> {
    if refused(ctx, cfg, sc)? {
        return Ok(());
    }
    let want = forward::trace(cfg, sc).unwrap();
    let got = trace(ctx, cfg, sc);
    same_trace(&got, &want)?;
    let (fwd, times) = pollster::block_on(ctx.forward(cfg, sc)).unwrap();
    let e = rel_err(fwd.iter(), got.output.iter().map(|&v| v as f64));
    prop_assert!(e <= 1e-6, "forward vs trace output: {e:e}");
    prop_assert!(matches!(times.logits, LogitTimes::Fused(ms) if ms >= 0.0), "{times:?}");
    // The output alone runs attend.wgsl (heads up to 64 wide), the fused kernel with the online softmax.
    let out = pollster::block_on(ctx.output(cfg, sc)).unwrap();
    let e = rel_err(out.iter(), want.output.iter().map(|&v| v as f64));
    prop_assert!(e <= 1e-5, "output (attend.wgsl) vs the CPU: {e:e}");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random small layers, whole-layer chunks or (with a tiny work cap) one head / a few rows at a time.
    #[test]
    fn gpu_trace_matches_cpu(cfg in common::configs(1..=4, 0..=40), d_head in 1usize..=20, n in 1usize..=40, batch in 1usize..=2,
                             per_head in any::<bool>(), seed in any::<u64>(), mask in proptest::option::of(any::<u64>()),
                             work_rows in proptest::option::of(1usize..=12)) {
        let Some(mut ctx) = gpu() else { return Ok(()) };
        // The configs' windows (1 in 3), soft-caps (1 in 4) and scales of their own (1 in 4 of the scaled) too.
        let (cfg, d_head) = common::fit(cfg, d_head);
        let sc = scenario(&cfg, n, d_head, batch, per_head, seed, mask);
        // A cap of `work_rows` rows of the widest work array forces per-head and row-tiled chunks.
        check_chunked(&mut ctx, &cfg, &sc, work_rows)?;
    }

    /// Today's models' layers (as tests/equivalence.rs's `model_shaped_layers`): heads whose width is not
    /// d_model / heads, values of their own width d_v and an output of its own d_out (each in 1 of 2), grouped
    /// K/V heads, q/k norms per head or over the whole projection, sink logits, with the configs' windows,
    /// soft-caps and scales, a key mask, whole or cut into chunks: the GPU's trace, profiled forward and
    /// attend.wgsl's output equal the CPU's, and its output and weights the f64 definition.
    #[test]
    fn model_shaped_layers_match_cpu(cfg in common::configs(1..=4, 0..=6), d_head in 1usize..=20, d_v in proptest::option::of(1usize..=24),
                                     d_model in 1usize..=24, d_out in proptest::option::of(1usize..=12), n in 1usize..=40,
                                     groups in 0usize..=2, norm in 0u8..3, sinks in any::<bool>(), seed in any::<u64>(),
                                     mask in proptest::option::of(any::<u64>()), work_rows in proptest::option::of(1usize..=12)) {
        let Some(mut ctx) = gpu() else { return Ok(()) };
        let (cfg, d_head) = common::fit(cfg, d_head);
        let h = cfg.heads;
        let kv = [h, 1, if h % 2 == 0 { h / 2 } else { h }][groups];
        let widths = (d_head, d_v.unwrap_or(d_head), d_out.unwrap_or(d_model));
        let sc = model_layer(&cfg, n, d_model, widths, kv, norm, sinks, seed, mask);
        check_chunked(&mut ctx, &cfg, &sc, work_rows)?;
        matches_definition(&mut ctx, &cfg, &sc)?;
    }
}

/// Heads of width 6 in d_model 16 (3 heads: h·d_head = 18 > d_model; 2 heads: 12 < d_model) and of width 24 in
/// d_model 16, for every scheme, causal and not: the projections, the heads' columns, each head's logits and
/// the output projection on the GPU as on the CPU and as the definition.
#[test]
fn heads_of_their_own_width() {
    let Some(mut ctx) = gpu() else { return };
    for method in Method::ALL {
        for (heads, d_head) in [(3, 6), (2, 6), (2, 24)] {
            for causal in [false, true] {
                let (cfg, d_head) = common::fit(Config { method, heads, clip: 4, causal, rel_v: true, ..Config::default() }, d_head);
                let sc = model_layer(&cfg, 13, 16, (d_head, d_head, 16), heads, 0, false, 5, Some(0xffff_ffef));
                assert_eq!(sc.w_q.dim(), (16, heads * d_head));
                check(&mut ctx, &cfg, &sc).unwrap_or_else(|e| panic!("{method} {heads} heads of {d_head}: {e}"));
                matches_definition(&mut ctx, &cfg, &sc).unwrap_or_else(|e| panic!("{method} {heads} heads of {d_head}: {e}"));
            }
        }
    }
}

/// Each of today's additions alone on an ordinary RoPE and Shaw layer (d_head 8, 3 heads, n 37: two tiles of
/// attend.wgsl's keys, a second workgroup of rows), causal and not: q/k norms per head and over the whole
/// projection (and k's alone, with ε 0.1), sliding windows of 1, 3 and 30 keys, soft-caps of 0.5 and 3, the
/// model's own scale and none, sinks high and low; each equals the CPU and the definition, and differs from the
/// same layer without it (so each is computed, not ignored).
#[test]
fn each_addition_alone() {
    let Some(mut ctx) = gpu() else { return };
    let (n, d_head, heads) = (37, 8, 3);
    let ones = |len: usize, v: f32| ndarray::Array1::from_elem(len, v);
    for method in [Method::Rope, Method::Shaw] {
        for causal in [false, true] {
            let base = Config { method, heads, clip: 5, causal, rel_v: true, ..Config::default() };
            let plain = model_layer(&base, n, 20, (d_head, d_head, 20), heads, 0, false, 9, Some(!0b100u64));
            let gamma = ndarray::Array1::from_shape_fn(d_head, |c| 0.6 + 0.1 * c as f32);
            let whole = ndarray::Array1::from_shape_fn(heads * d_head, |c| 1.4 - 0.03 * c as f32);
            #[rustfmt::skip]
            let cases: Vec<(&str, Config, Scenario)> = vec![
                ("q/k norms per head", base, Scenario { q_norm: Some(gamma.clone()), k_norm: Some(gamma.clone()), ..plain.clone() }),
                ("q/k norms over the projection", base, Scenario { q_norm: Some(whole.clone()), k_norm: Some(whole.clone()), ..plain.clone() }),
                ("k norm alone, ε 0.1", Config { norm_eps: 0.1, ..base }, Scenario { k_norm: Some(ones(d_head, 1.0)), ..plain.clone() }),
                ("window 1", Config { window: Some(1), ..base }, plain.clone()),
                ("window 3", Config { window: Some(3), ..base }, plain.clone()),
                ("window 30", Config { window: Some(30), ..base }, plain.clone()),
                ("soft-cap 0.5", Config { softcap: Some(0.5), ..base }, plain.clone()),
                ("soft-cap 3", Config { softcap: Some(3.0), logit_scale: LogitScale::None, ..base }, plain.clone()),
                ("scale 0.0625", Config { logit_scale: LogitScale::Factor(0.0625), ..base }, plain.clone()),
                ("no scale", Config { logit_scale: LogitScale::None, ..base }, plain.clone()),
                ("sinks", base, Scenario { sinks: Some(ndarray::arr1(&[-1.0, 0.5, 3.0])), ..plain.clone() }),
            ];
            let without = pollster::block_on(ctx.output(&base, &plain)).unwrap();
            for (what, cfg, sc) in cases {
                check(&mut ctx, &cfg, &sc).unwrap_or_else(|e| panic!("{method} causal {causal}, {what}: {e}"));
                matches_definition(&mut ctx, &cfg, &sc).unwrap_or_else(|e| panic!("{method} causal {causal}, {what}: {e}"));
                let with = pollster::block_on(ctx.output(&cfg, &sc)).unwrap();
                let change = rel_err(with.iter(), without.iter().map(|&v| v as f64));
                assert!(change > 1e-3, "{method} causal {causal}, {what}: the output moved by {change:e} only");
            }
        }
    }
}

/// Everything at once on every scheme — queries and keys of 64 with values of 40, 40 with 64 (attend.wgsl's
/// widest), 64 with 80 (values too wide for it: the unfused kernels), in d_model 96 with an output of 72; two K/V
/// heads for four query heads, q/k norms, a window of 34 keys (tiles of 32: the last key a workgroup of rows
/// sees starts a tile of its own), a soft-cap, the model's own scale, sinks and padded keys — over n 170 (six
/// tiles of keys and workgroups of rows, the last ones partial: attend.wgsl walks only the tiles a window
/// reaches), whole or cut a head and 40 rows at a time.
#[test]
fn everything_at_once_over_many_tiles() {
    let Some(mut ctx) = gpu() else { return };
    let n = 170;
    for method in Method::ALL {
        // Causal heads of 64 also cut a head and 40 rows at a time, and against the definition.
        for (d_head, d_v, causal, norm, cut) in [(64, 40, true, 1, true), (40, 64, false, 2, false), (64, 80, true, 2, false)] {
            let cfg = Config {
                method,
                heads: 4,
                clip: 16,
                causal,
                rel_v: true,
                window: Some(34),
                softcap: Some(4.0),
                logit_scale: LogitScale::Factor(0.08),
                ..Config::default()
            };
            let (cfg, d_head) = common::fit(cfg, d_head);
            let sc = model_layer(&cfg, n, 96, (d_head, d_v, 72), 2, norm, true, 13, Some(0xfff7_ffff_ffbf_fffe));
            let rows = cut.then_some(40);
            check_chunked(&mut ctx, &cfg, &sc, rows).unwrap_or_else(|e| panic!("{method} d_head {d_head} causal {causal} rows {rows:?}: {e}"));
            if cut {
                matches_definition(&mut ctx, &cfg, &sc).unwrap_or_else(|e| panic!("{method} d_head {d_head} causal {causal}: {e}"));
            }
        }
    }
}

/// Sinks: each row's weights sum to 1 − the sink's share, exp(s_h) / (exp(s_h) + Σ_j exp(e_ij)), the share the
/// trace's `sink_share` stage gives; a row with every key masked gives zeros (no NaN) with a sink too.
#[test]
fn sinks_take_their_share() {
    let Some(mut ctx) = gpu() else { return };
    let cfg = Config { method: Method::Rope, heads: 2, causal: true, ..Config::default() };
    // Keys 0 and 1 padding: queries 0 and 1 see no key.
    let sc = model_layer(&cfg, 9, 8, (4, 4, 8), 2, 0, true, 21, Some(!0b11u64));
    let sc = Scenario { sinks: Some(ndarray::arr1(&[0.0, 2.0])), ..sc };
    let t = trace(&mut ctx, &cfg, &sc);
    let out = pollster::block_on(ctx.output(&cfg, &sc)).unwrap();
    assert!(t.output.iter().chain(&out).all(|v| v.is_finite()));
    for hi in 0..2 {
        let share = t.stage(Stage::SinkShare, 0, hi).unwrap();
        for i in 0..9 {
            let row = t.weights.slice(ndarray::s![0, hi, i, ..]);
            if i < 2 {
                assert!(row.iter().all(|&w| w == 0.0), "head {hi} row {i}: {row}");
                continue;
            }
            let sum: f32 = row.sum();
            assert!((share[[i, 0]] - (1.0 - sum)).abs() < 1e-5);
            // The share by its definition, from the trace's own logits.
            let e = t.logits.slice(ndarray::s![0, hi, i, ..]);
            let s = sc.sinks.as_ref().unwrap()[hi] as f64;
            let denominator = s.exp() + e.iter().filter(|v| v.is_finite()).map(|&v| (v as f64).exp()).sum::<f64>();
            assert!(((1.0 - sum as f64) - s.exp() / denominator).abs() < 1e-5, "head {hi} row {i}");
        }
    }
    matches_definition(&mut ctx, &cfg, &sc).unwrap();
}

/// A captured model's RoPE layer: grouped K/V heads and the model's own cos and sin (frequencies of its own,
/// scaled by an attention factor), on the GPU as on the CPU.
#[test]
fn grouped_heads_and_given_rotary() {
    let Some(mut ctx) = gpu() else { return };
    let (n, heads, kv, dh) = (11, 4, 2, 8);
    let rope = relattn_core::positions::rope::Rope { layout: relattn_core::positions::rope::PairLayout::Half, ..Default::default() };
    let cfg = Config { method: relattn_core::Method::Rope, heads, causal: true, rope, ..Config::default() };
    let cos = Array2::from_shape_fn((n, dh / 2), |(m, p)| (m as f32 * 0.7f32.powi(p as i32)).cos() * 1.1);
    let sin = Array2::from_shape_fn((n, dh / 2), |(m, p)| (m as f32 * 0.7f32.powi(p as i32)).sin() * 1.1);
    let mut given = Arrays::new();
    given.insert("w_k".into(), Array2::from_shape_fn((heads * dh, kv * dh), |(r, c)| ((r * 7 + c * 3) % 11) as f32 / 11.0 - 0.5).into_dyn());
    given.insert("b_v".into(), ndarray::Array1::from_shape_fn(kv * dh, |c| c as f32 / 16.0).into_dyn());
    given.insert("rope_cos".into(), cos.into_dyn());
    given.insert("rope_sin".into(), sin.into_dyn());
    let sc = Scenario::build(&cfg, &Spec { n, d_model: heads * dh, batch: 1, seed: 3 }, given, false).unwrap();
    check(&mut ctx, &cfg, &sc).unwrap();
}

/// What the kernels once refused by name — a window, a soft-cap, q/k norms, sinks, heads of their own width,
/// values of their own width (d_v) and an output of its own (d_out) — is computed, as the CPU computes it; the
/// kernels refuse nothing of a layer now (a front end falls back to the CPU only when the device cannot run it).
#[test]
fn computes_what_it_once_refused() {
    let Some(mut ctx) = gpu() else { return };
    let cfg = Config { method: Method::Rope, heads: 2, causal: true, ..Config::default() };
    let plain = scenario(&cfg, 6, 4, 1, false, 1, None);
    let with = |arrays: &[(&str, ndarray::ArrayD<f32>)]| {
        let given: Arrays = arrays.iter().map(|(name, a)| (name.to_string(), a.clone())).collect();
        Scenario::build(&cfg, &Spec { n: 6, d_model: 8, batch: 1, seed: 1 }, given, false).unwrap()
    };
    let cases = [
        ("window", Config { window: Some(3), ..cfg }, plain.clone()),
        ("softcap", Config { softcap: Some(5.0), ..cfg }, plain.clone()),
        ("q_norm", cfg, with(&[("q_norm", ndarray::Array1::from_elem(4, 1.5f32).into_dyn())])),
        ("sinks", cfg, with(&[("sinks", ndarray::Array1::from_elem(2, 0.5f32).into_dyn())])),
        ("d_head", cfg, with(&[("w_q", Array2::from_elem((8, 4), 0.1f32).into_dyn())])),
        ("d_v", cfg, with(&[("w_v", Array2::from_elem((8, 12), 0.1f32).into_dyn()), ("w_o", Array2::from_elem((12, 8), 0.1f32).into_dyn())])),
        ("d_out", cfg, with(&[("w_o", Array2::from_elem((8, 5), 0.1f32).into_dyn())])),
    ];
    for (field, cfg, sc) in cases {
        let want = forward::trace(&cfg, &sc).unwrap().output;
        let out = pollster::block_on(ctx.output(&cfg, &sc)).unwrap_or_else(|e| panic!("{field}: {e}"));
        let traced = pollster::block_on(ctx.trace(&cfg, &sc)).unwrap_or_else(|e| panic!("{field}: {e}")).0.output;
        assert_eq!(out.dim(), want.dim(), "{field}");
        for got in [out, traced] {
            assert!(rel_err(got.iter(), want.iter().map(|&v| v as f64)) <= 1e-5, "{field}");
        }
    }
    // Llama 4's chunks have no kernel flag: refused by name (the page computes such a layer on the CPU).
    let chunked = Config { chunk: Some(4), ..cfg };
    let e = pollster::block_on(ctx.output(&chunked, &plain)).unwrap_err();
    assert_eq!(e.field(), "chunk", "{e}");
}

/// A few long sequences (up to n = 1024), k below and above n, both methods.
#[test]
fn long_sequences() {
    let Some(mut ctx) = gpu() else { return };
    let cases = [
        (Method::Shaw, 1024, 16, 2, true, true, Some(0x5555_aaaa_f0f0_0ff0u64)),
        (Method::Music, 1024, 64, 2, true, false, None),
        (Method::Music, 600, 1000, 1, false, true, None),
        (Method::Shaw, 300, 500, 4, false, false, Some(u64::MAX - 7)),
    ];
    for (method, n, clip, heads, causal, per_head, mask) in cases {
        let cfg = Config { method, heads, clip, causal, rel_v: true, edge: Edge::Zero, ..Config::default() };
        let sc = scenario(&cfg, n, 8, 1, per_head, n as u64, mask);
        check(&mut ctx, &cfg, &sc).unwrap_or_else(|e| panic!("{method} n {n} k {clip}: {e}"));
    }
    // Heads of 64 (attend.wgsl's widest, which fills its shared tiles) and of 80 (the unfused kernels).
    for (method, d_head, causal) in [(Method::Shaw, 64, false), (Method::Music, 64, true), (Method::Shaw, 80, true)] {
        let (n, clip) = (200, 16);
        let cfg = Config { method, heads: 2, clip, causal, ..Config::default() };
        let sc = scenario(&cfg, n, d_head, 1, false, 7, Some(0xffff_ffff_0f0f_ff00));
        check(&mut ctx, &cfg, &sc).unwrap_or_else(|e| panic!("{method} n {n} k {clip}: {e}"));
    }
}

/// Every scheme with heads of 64 (attend.wgsl's widest: its K and V tiles full) over several workgroups of
/// query rows and tiles of keys (n 300: neither a multiple of 32), causal and not, with padded keys: the
/// online softmax across tiles and across a row's lanes, each scheme's term in the kernel.
#[test]
fn every_scheme_over_many_tiles() {
    let Some(mut ctx) = gpu() else { return };
    for method in Method::ALL {
        for causal in [false, true] {
            let cfg = Config { method, heads: 2, clip: 16, causal, rel_v: true, ..Config::default() };
            let sc = scenario(&cfg, 300, 64, 1, true, 11, Some(0xfff7_ffff_ffbf_fffe));
            check(&mut ctx, &cfg, &sc).unwrap_or_else(|e| panic!("{method} causal {causal}: {e}"));
        }
    }
}

/// DeBERTa's disentangled terms, each setting of `deberta_terms` (both, c2p alone, p2c alone) with plain
/// clipping, small log buckets and v3's (256, 512), causal and not, padded keys, per-head and shared tables,
/// over n 150 (several workgroups of rows and tiles of keys; with S 256 most pairs read exact buckets, with
/// (6, 9) and (0, 3) most read log-spaced or edge rows), whole or a head and 40 rows at a time: the GPU's trace
/// (c2p, p2c and their sum gathered from its P and P2), forward and attend.wgsl's output equal the CPU's, and
/// its output and weights the f64 definition.
#[test]
fn deberta_every_setting() {
    let Some(mut ctx) = gpu() else { return };
    for terms in [Terms::Both, Terms::C2p, Terms::P2c] {
        for (position_buckets, max_relative_positions) in [(0, 3), (6, 9), (256, 512)] {
            for causal in [false, true] {
                let deberta = Deberta { position_buckets, max_relative_positions, terms };
                let cfg = Config { method: Method::Deberta, heads: 2, causal, deberta, ..Config::default() };
                let per_head = causal;
                let sc = scenario(&cfg, 150, 48, 1, per_head, 5, Some(0xfff7_ffff_ffbf_fffe));
                let what = format!("{terms} buckets {position_buckets} max {max_relative_positions} causal {causal}");
                for rows in [None, Some(40)] {
                    check_chunked(&mut ctx, &cfg, &sc, rows).unwrap_or_else(|e| panic!("{what} rows {rows:?}: {e}"));
                }
                matches_definition(&mut ctx, &cfg, &sc).unwrap_or_else(|e| panic!("{what}: {e}"));
                let t = trace(&mut ctx, &cfg, &sc);
                assert_eq!((t.c2p.is_some(), t.p2c.is_some()), (terms.c2p(), terms.p2c()), "{what}: the terms' stages");
                // The terms move the output (the same layer with zero tables, the same scale): a test of them
                // that cannot pass without them.
                let mut flat = sc.clone();
                flat.rel_k.fill(0.0);
                let moved = rel_err(t.output.iter(), forward::trace(&cfg, &flat).unwrap().output.iter().map(|&v| v as f64));
                assert!(moved > 1e-3, "{what}: the terms moved the output by {moved:e} only");
            }
        }
    }
}

/// The context keeps the last RoPE table made from the options (and uploads a model's own each time): layers
/// of other options, or a given table, in between give each its own rotation, on the same context.
#[test]
fn rope_tables_kept_between_calls_are_the_right_ones() {
    let Some(mut ctx) = gpu() else { return };
    use relattn_core::positions::rope::{PairLayout, Rope};
    let (n, dh) = (40, 8);
    let make = |base: f32, layout: PairLayout| Config {
        method: Method::Rope,
        heads: 2,
        causal: true,
        rope: Rope { base, layout, ..Default::default() },
        ..Config::default()
    };
    let given = {
        let cfg = make(10000.0, PairLayout::Half);
        let mut arrays = Arrays::new();
        arrays.insert("rope_cos".into(), Array2::from_shape_fn((n, dh / 2), |(m, p)| (m as f32 * 0.3f32.powi(p as i32)).cos()).into_dyn());
        arrays.insert("rope_sin".into(), Array2::from_shape_fn((n, dh / 2), |(m, p)| (m as f32 * 0.3f32.powi(p as i32)).sin()).into_dyn());
        (cfg, Scenario::build(&cfg, &Spec { n, d_model: 2 * dh, batch: 1, seed: 4 }, arrays, false).unwrap())
    };
    let a = make(10000.0, PairLayout::Half);
    let b = make(50.0, PairLayout::Interleaved);
    for (cfg, sc) in [
        (a, scenario(&a, n, dh, 1, false, 1, None)),
        (a, scenario(&a, n, dh, 1, false, 2, None)),
        (b, scenario(&b, n, dh, 1, false, 3, None)),
        given.clone(),
        (a, scenario(&a, n, dh, 1, false, 5, None)),
        given,
        (b, scenario(&b, n, dh, 1, false, 6, None)),
    ] {
        let want = forward::trace(&cfg, &sc).unwrap();
        let out = pollster::block_on(ctx.output(&cfg, &sc)).unwrap();
        let e = rel_err(out.iter(), want.output.iter().map(|&v| v as f64));
        assert!(e <= 1e-5, "base {} given {}: {e:e}", cfg.rope.base, sc.rope.is_some());
    }
}

/// The materialized implementation runs on the efficient kernels and gives the CPU's materialized trace.
#[test]
fn materialized_is_computed_as_efficient() {
    let Some(mut ctx) = gpu() else { return };
    for method in [Method::Shaw, Method::Music] {
        let cfg = Config { method, heads: 2, clip: 3, causal: true, implementation: Implementation::Materialized, ..Config::default() };
        let sc = scenario(&cfg, 9, 4, 2, true, 5, Some(0b1011_0111));
        check(&mut ctx, &cfg, &sc).unwrap();
    }
}

/// The relative term alone (content off): the GPU's logits and weights are the CPU's, and its content
/// logits zeros, for both methods, both masks.
#[test]
fn relative_term_only() {
    let Some(mut ctx) = gpu() else { return };
    for (method, causal) in [(Method::Shaw, false), (Method::Shaw, true), (Method::Music, true), (Method::Music, false)] {
        let cfg = Config { method, heads: 2, clip: 3, causal, content: false, ..Config::default() };
        let sc = scenario(&cfg, 11, 8, 2, false, 3, None);
        check(&mut ctx, &cfg, &sc).unwrap_or_else(|e| panic!("{method} causal {causal}: {e}"));
        let (t, _) = pollster::block_on(ctx.trace(&cfg, &sc)).unwrap();
        assert!(t.content_logits.iter().all(|v| *v == 0.0), "{method}: content logits are not zero");
        assert_ne!(t.relative_logits, t.content_logits);
    }
}

/// Every key masked: zero weights, zero output, never NaN.
#[test]
fn fully_masked_rows_give_zeros() {
    let Some(mut ctx) = gpu() else { return };
    let cfg = Config { heads: 2, ..Config::default() };
    let sc = scenario(&cfg, 5, 4, 1, false, 3, Some(0));
    let t = trace(&mut ctx, &cfg, &sc);
    assert!(t.weights.iter().all(|&w| w == 0.0));
    assert!(t.output.iter().all(|&v| v == 0.0));
    assert!(t.logits.iter().all(|&v| v == f32::NEG_INFINITY));
}

/// Logits scaled by 1e4 stay finite; rows sum to 1.
#[test]
fn huge_logits_stay_finite() {
    let Some(mut ctx) = gpu() else { return };
    let cfg = Config { heads: 2, clip: 3, causal: true, ..Config::default() };
    let sc = scenario(&cfg, 16, 4, 1, false, 9, None);
    let sc = Scenario { x: sc.x.mapv(|v| v * 1e4), ..sc };
    let t = trace(&mut ctx, &cfg, &sc);
    for row in t.weights.rows() {
        assert!((row.sum() - 1.0).abs() < 1e-5);
    }
}

/// A layer whose single row of work exceeds what the device (here: the cap) allows is an error, not a crash.
#[test]
fn too_large_is_an_error() {
    let Some(mut ctx) = gpu() else { return };
    let cfg = Config::default();
    let sc = scenario(&cfg, 8, 4, 1, false, 1, None);
    ctx.set_work_bytes(4);
    let r = pollster::block_on(ctx.output(&cfg, &sc));
    ctx.set_work_bytes(relattn_core::gpu::WORK_BYTES);
    assert!(matches!(r, Err(Error::Gpu(GpuError::TooLarge { .. }))), "{r:?}");
    assert!(pollster::block_on(ctx.output(&cfg, &sc)).is_ok(), "the context stays usable");
}

/// A forced pipeline-creation failure (test hook: one kernel's WGSL replaced by a module that does not
/// compile) is an `Err` naming that kernel's pipeline, for every kernel; not a panic.
#[cfg(feature = "test-hooks")]
#[test]
fn failed_pipeline_is_an_error() {
    for kernel in ["matmul", "logits", "softmax", "buckets"] {
        match pollster::block_on(GpuContext::try_new_with_broken_kernel_for_test(kernel)) {
            Ok(_) => panic!("{kernel}: a broken kernel built a context"),
            Err(why @ (GpuError::NoAdapter(_) | GpuError::NoDevice { .. })) => {
                eprintln!("skipped: {why}");
                return;
            }
            Err(why @ GpuError::Pipeline { .. }) => {
                assert!(why.to_string().contains(&format!("pipeline of {kernel}.wgsl failed: ")), "{kernel}: {why}");
                println!("{kernel}: {why}");
            }
            Err(other) => panic!("{kernel}: {other:?}"),
        }
    }
    let unknown = pollster::block_on(GpuContext::try_new_with_broken_kernel_for_test("attention"));
    assert!(matches!(unknown, Err(GpuError::NoSuchKernel(_))), "{:?}", unknown.err());
}

/// A pretended tiny binding limit (test hook) refuses an ordinary layer with `Error::Gpu` naming the limit;
/// the context stays usable once the real limit is back.
#[cfg(feature = "test-hooks")]
#[test]
fn over_the_binding_limit_is_an_error() {
    let Some(mut ctx) = gpu() else { return };
    let cfg = Config::default();
    let sc = scenario(&cfg, 8, 4, 1, false, 1, None);
    let real = ctx.limits().max_storage_buffer_binding_size;
    ctx.pretend_max_binding_for_test(64);
    let r = pollster::block_on(ctx.output(&cfg, &sc));
    ctx.pretend_max_binding_for_test(real);
    match r {
        Err(Error::Gpu(why @ GpuError::TooLarge { max_binding: 64, .. })) => assert!(why.to_string().contains("allows 64 bytes per buffer"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(pollster::block_on(ctx.output(&cfg, &sc)).is_ok(), "the context stays usable");
}
