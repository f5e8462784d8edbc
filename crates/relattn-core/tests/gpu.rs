//! The GPU backend (wgpu; natively Vulkan, here usually Mesa's lavapipe) gives the CPU's trace within 1e-4
//! (max |gpu − cpu| / max(1, max |cpu|), per array) on random layers: both methods, causal or not, key
//! masks, k below and above n, shared and per-head tables, a^V on and off, every way of cutting a layer
//! into chunks. Without a GPU adapter each test prints why and passes.

mod common;

use common::rel_err;
use ndarray::{Array2, Array4};
use proptest::prelude::*;
use relattn_core::error::gpu::GpuError;
use relattn_core::gpu::GpuContext;
use relattn_core::layer::forward;
use relattn_core::layer::scenario::Arrays;
use relattn_core::timing::LogitTimes;
use relattn_core::{Config, Edge, Error, Implementation, Method, Scenario, Spec, Trace};
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
    prop_assert_eq!(g.skew.is_some(), c.skew.is_some(), "skew steps present");
    if let (Some(a), Some(b)) = (&g.skew, &c.skew) {
        close("skew_qer", &a.qer, &b.qer)?;
        close("skew_padded", &a.padded, &b.padded)?;
        close("skew_reshaped", &a.reshaped, &b.reshaped)?;
        close("skew_sliced", &a.sliced, &b.sliced)?;
    }
    prop_assert_eq!(g.stages(), c.stages());
    prop_assert!(g.weights.iter().all(|w| w.is_finite()) && g.output.iter().all(|v| v.is_finite()));
    Ok(())
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

/// The GPU's trace of the layer.
fn trace(ctx: &mut GpuContext, cfg: &Config, sc: &Scenario) -> Trace {
    pollster::block_on(ctx.trace(cfg, sc)).unwrap().0
}

/// GPU trace vs CPU trace, the GPU's profiled forward vs its own trace (its stage times are the logits
/// kernel's, no logit parts), and its output alone (attend.wgsl) vs the CPU.
fn check(ctx: &mut GpuContext, cfg: &Config, sc: &Scenario) -> Result<(), TestCaseError> {
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
        // The kernels have no window and no soft-cap (refused by name: `refuses_what_the_kernels_lack`).
        let (cfg, d_head) = common::fit(Config { window: None, softcap: None, ..cfg }, d_head);
        let sc = scenario(&cfg, n, d_head, batch, per_head, seed, mask);
        // A cap of `work_rows` rows of the widest work array forces per-head and row-tiled chunks.
        let row_bytes = (n.max(cfg.table_rows()).max(d_head) * 4) as u64;
        ctx.set_work_bytes(work_rows.map_or(relattn_core::gpu::WORK_BYTES, |r| r as u64 * row_bytes));
        let res = check(&mut ctx, &cfg, &sc);
        ctx.set_work_bytes(relattn_core::gpu::WORK_BYTES);
        res?;
    }
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

/// A layer with what the kernels do not compute — a window, a soft-cap, q/k norms, sinks, heads narrower than
/// d_model / heads — is refused naming it (the page then computes on the CPU, saying why), never computed wrong.
#[test]
fn refuses_what_the_kernels_lack() {
    let Some(mut ctx) = gpu() else { return };
    let cfg = Config { method: Method::Rope, heads: 2, causal: true, ..Config::default() };
    let plain = scenario(&cfg, 6, 4, 1, false, 1, None);
    let with = |name: &str, a: ndarray::ArrayD<f32>| {
        let mut given = Arrays::new();
        given.insert(name.to_string(), a);
        Scenario::build(&cfg, &Spec { n: 6, d_model: 8, batch: 1, seed: 1 }, given, false).unwrap()
    };
    let cases = [
        ("window", Config { window: Some(3), ..cfg }, plain.clone()),
        ("softcap", Config { softcap: Some(5.0), ..cfg }, plain.clone()),
        ("q_norm", cfg, with("q_norm", ndarray::Array1::from_elem(4, 1.5f32).into_dyn())),
        ("sinks", cfg, with("sinks", ndarray::Array1::from_elem(2, 0.5f32).into_dyn())),
        ("d_head", cfg, with("w_q", Array2::from_elem((8, 4), 0.1f32).into_dyn())),
    ];
    for (field, cfg, sc) in cases {
        let err = pollster::block_on(ctx.output(&cfg, &sc)).expect_err(field);
        assert_eq!(err.field(), field, "{err}");
    }
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
