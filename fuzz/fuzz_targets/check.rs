// Included by the fuzz target and by tests/fuzz_corpus.rs: the path a dropped or passed file takes.

/// Any bytes as a scenario file give arrays or an error, never a panic or an abort; loaded arrays build a
/// scenario or give an error, for each method; a scenario within a small memory budget computes a trace
/// (or names the array that overflowed float32).
pub fn check_scenario_bytes(data: &[u8]) {
    use relattn::files::{read_arrays, TensorFile};
    use relattn::layer::forward;
    use relattn::{Config, Method, Scenario, Spec};
    let Ok(TensorFile { arrays, .. }) = read_arrays(data, "input.npz", relattn::files::MAX_FILE_BYTES) else { return };
    for (method, causal) in [(Method::Shaw, false), (Method::Music, true)] {
        let cfg = Config { method, causal, heads: 1, clip: 2, ..Config::default() };
        let spec = Spec { n: 4, d_model: 4, batch: 1, seed: 0 };
        let (b, n, d) = match arrays.get("x").map(|x| x.shape().to_vec()).as_deref() {
            Some([n, d]) => (1, *n, *d),
            Some([b, n, d]) => (*b, *n, *d),
            _ => (1, 4, 4),
        };
        let sizes = forward::Sizes { batch: b, n, d_model: d, per_head_tables: false, trace: true, parallel: 1, widths: None };
        if forward::check_budget(&cfg, &sizes, |_, _| Some(0), 64 << 20).is_err() {
            continue;
        }
        if let Ok(sc) = Scenario::build(&cfg, &spec, arrays.clone(), false) {
            // The trace (staged) and the forward (fused, relattn-core's src/attention/fused/) agree: the same output within
            // rounding, or both refuse the same overflow.
            match (forward::trace(&cfg, &sc), forward::forward(&cfg, &sc)) {
                (Ok(t), Ok(out)) => {
                    assert!(t.weights.iter().all(|w| w.is_finite()), "weights are finite");
                    let scale = t.output.iter().fold(f32::MIN_POSITIVE, |m, v| m.max(v.abs()));
                    let diff = t.output.iter().zip(&out).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
                    assert!(diff <= 1e-4 * scale, "the fused forward differs from the trace by {diff} (scale {scale})");
                    check_on_demand(&cfg, &sc, &t);
                }
                // Finite inputs past float32's range: refused with the array's name, as they should be.
                (Err(relattn::Error::Overflow { .. }), Err(relattn::Error::Overflow { .. })) => {}
                (Err(e), _) | (_, Err(e)) => panic!("a built scenario computes on both paths or names an overflow on both: {e}"),
            }
        }
    }
}

/// The layer held on demand (the page's long sequences) gives every stage of every batch element of the trace,
/// gathered block by block as the page's session does, within rounding (masked cells alike).
fn check_on_demand(cfg: &relattn::Config, sc: &relattn::Scenario, t: &relattn::Trace) {
    use relattn::layer::{forward, on_demand::Layer};
    let (p, output) = forward::forward_projected(cfg, sc).expect("the forward ran above");
    let layer = Layer::new(cfg, sc.clone(), p, output).expect("a scenario whose trace ran has a layer");
    assert_eq!(layer.stages(), t.stages());
    let stages = layer.stages();
    for b in 0..t.dims().0 {
        let mut gathered: Vec<ndarray::Array2<f32>> = stages.iter().map(|&s| ndarray::Array2::from_elem(layer.shape(s), f32::NAN)).collect();
        layer
            .each_block(b, 0, |k, first, part| gathered[k].slice_mut(ndarray::s![first..first + part.nrows(), ..]).assign(&part))
            .expect("blocks of a layer that ran");
        for (k, &stage) in stages.iter().enumerate() {
            let want = t.stage(stage, b, 0).expect("a stage of the trace");
            let scale = want.iter().filter(|v| v.is_finite()).fold(f32::MIN_POSITIVE, |m, v| m.max(v.abs()));
            assert_eq!(gathered[k].dim(), want.dim(), "{stage}: shape");
            for (g, w) in gathered[k].iter().zip(&want) {
                assert!(g == w || (g - w).abs() <= 1e-4 * scale, "{stage} on demand: {g} vs {w} (scale {scale})");
            }
        }
    }
}
