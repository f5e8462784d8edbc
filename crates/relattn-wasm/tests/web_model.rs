//! The Model mode's wasm API (src/model.rs over the library's src/app/model.rs) in a headless browser (wasm-bindgen-test, `make test-wasm`):
//! the shipped models and test pieces load; a window's attention weights are causal distributions equal to
//! the native trace and to PyTorch's (tests/fixtures); NLL, predictions and distance profiles agree with the
//! logits; live sampling gives `Transformer::sample`'s and the CLI's tokens; bad requests name their field;
//! a window asked on WebGPU in a browser without an adapter is computed on the CPU, which says why.
#![cfg(target_arch = "wasm32")]

use ndarray::{Array2, Axis};
use relattn::protocol::{BackendUsed, DistanceProfile, ModelInfo, PositionNll, Prediction, Sampled, SamplingInfo, WindowInfo};
use relattn::trained::heads::{describe, Meter};
use relattn::trained::transformer::{log_softmax_at, probabilities, SampleSettings, Transformer};
use relattn::Backend;
use relattn_wasm::model::ModelSession;
use relattn_wasm::Session;
use serde::de::DeserializeOwned;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

#[path = "../../relattn-core/tests/common/fixture.rs"]
mod fixture;

wasm_bindgen_test_configure!(run_in_browser);

const DATA: &[u8] = include_bytes!("../../../models/chorales-test.json");
/// (kind, model file, PyTorch's fixture of the same weights).
const MODELS: [(&str, &[u8], &[u8]); 6] = [
    ("music", include_bytes!("../../../models/chorales-music.safetensors"), include_bytes!("../../../tests/fixtures/chorales-music.safetensors")),
    ("shaw", include_bytes!("../../../models/chorales-shaw.safetensors"), include_bytes!("../../../tests/fixtures/chorales-shaw.safetensors")),
    ("rope", include_bytes!("../../../models/chorales-rope.safetensors"), include_bytes!("../../../tests/fixtures/chorales-rope.safetensors")),
    ("alibi", include_bytes!("../../../models/chorales-alibi.safetensors"), include_bytes!("../../../tests/fixtures/chorales-alibi.safetensors")),
    ("t5", include_bytes!("../../../models/chorales-t5.safetensors"), include_bytes!("../../../tests/fixtures/chorales-t5.safetensors")),
    ("absolute", include_bytes!("../../../models/chorales-absolute.safetensors"), include_bytes!("../../../tests/fixtures/chorales-absolute.safetensors")),
];

fn session(kind: &str) -> ModelSession {
    let (_, model, _) = MODELS.iter().find(|m| m.0 == kind).unwrap();
    ModelSession::load(model, &format!("chorales-{kind}.safetensors"), DATA).unwrap()
}

fn transformer(kind: &str) -> Transformer {
    let (_, model, _) = MODELS.iter().find(|m| m.0 == kind).unwrap();
    Transformer::load(model, kind).unwrap()
}

/// A plain object from (key, value) pairs.
fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let o = js_sys::Object::new();
    for (k, v) in fields {
        js_sys::Reflect::set(&o, &(*k).into(), v).unwrap();
    }
    o.into()
}

/// A window to compute on the CPU.
fn window(piece: &str, start: f64, length: f64, transpose: f64) -> JsValue {
    window_on(piece, start, length, transpose, "cpu")
}

fn window_on(piece: &str, start: f64, length: f64, transpose: f64, backend: &str) -> JsValue {
    object(&[("piece", piece.into()), ("start", start.into()), ("length", length.into()), ("transpose", transpose.into()), ("backend", backend.into())])
}

/// A SampleRequest with the sampler's default truncation.
fn sample_request(steps: f64, temperature: f64, seed: f64) -> JsValue {
    sample_request_with(steps, temperature, relattn::trained::transformer::DEFAULT_TOP_P as f64, seed)
}

fn sample_request_with(steps: f64, temperature: f64, top_p: f64, seed: f64) -> JsValue {
    let top_k = relattn::trained::transformer::DEFAULT_TOP_K as f64;
    object(&[("steps", steps.into()), ("temperature", temperature.into()), ("top_k", top_k.into()), ("top_p", top_p.into()), ("seed", seed.into())])
}

fn typed<T: DeserializeOwned>(v: Result<JsValue, JsValue>) -> T {
    serde_wasm_bindgen::from_value(v.unwrap_or_else(|e| panic!("{e:?}"))).unwrap()
}

async fn run(s: &ModelSession, piece: &str, start: f64, length: f64, transpose: f64) -> WindowInfo {
    typed(s.run(window(piece, start, length, transpose)).await)
}

/// The (T, T) map of `layer`, `head` as the page reads it.
fn weights(s: &ModelSession, layer: usize, head: usize) -> Array2<f32> {
    let cut = s.weights(layer, head, usize::MAX).unwrap();
    let size = |k: &str| js_sys::Reflect::get(&cut, &k.into()).unwrap().as_f64().unwrap() as usize;
    let (rows, cols) = (size("rows"), size("cols"));
    assert_eq!((s.values_len(), s.rgba_len()), (rows * cols, 4 * rows * cols));
    Array2::from_shape_vec((rows, cols), s.values().to_vec()).unwrap()
}

fn max_diff<'a>(a: impl IntoIterator<Item = &'a f32>, b: impl IntoIterator<Item = &'a f32>) -> f32 {
    a.into_iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// NLL per position from a pass that keeps every weight (staged) and one that keeps none (the fused
/// forward, relattn-core's src/attention/fused/): equal within float rounding.
fn same_nll(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-5 * x.abs().max(1.0))
}

fn field(e: &JsValue) -> String {
    js_sys::Reflect::get(e, &"field".into()).unwrap().as_string().unwrap_or_else(|| panic!("no field in {e:?}"))
}

/// Lets the browser run a turn of its event loop: chromedriver gives up on a renderer that does not answer
/// for 30 s, and in a debug build one model's part of a test takes seconds.
async fn yield_to_browser() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        web_sys::window().unwrap().set_timeout_with_callback(&resolve).unwrap();
    });
    wasm_bindgen_futures::JsFuture::from(promise).await.unwrap();
}

fn log(line: String) {
    web_sys::console::log_1(&line.into());
}

#[wasm_bindgen_test]
fn each_model_loads_with_its_config_and_the_pieces() {
    // The training figures as export.py measured them (models/results.json, docs/src/models.md's tables).
    let results: serde_json::Value = serde_json::from_slice(include_bytes!("../../../models/results.json")).unwrap();
    for (kind, _, _) in MODELS {
        let trained = &results["models"][kind];
        let info: ModelInfo = typed(session(kind).info());
        assert_eq!(serde_json::to_value(info.kind).unwrap(), kind);
        let parameters = trained["parameters"].as_u64().unwrap() as usize;
        assert_eq!((info.parameters, info.config.layers, info.config.heads, info.config.d_model, info.config.context), (parameters, 3, 4, 128, 256));
        let (test_nll, valid_nll) = (trained["test_nll"].as_f64().unwrap(), trained["valid_nll"].as_f64().unwrap());
        assert!((info.test_nll.unwrap() - test_nll).abs() < 1e-9 && (info.valid_nll.unwrap() - valid_nll).abs() < 1e-9, "{kind}: {:?}", info.test_nll);
        assert_eq!((info.max_length, info.vocab.len(), info.pitch_min, info.voices.len()), (1024, 53, 33, 4));
        assert_eq!(info.pieces.len(), 34);
        let p = &info.pieces[0];
        assert_eq!((p.bwv.as_str(), p.time_signature.as_str(), p.length), ("10.7", "4/4", 1408));
        assert!(!p.bars.is_empty() && p.transpose_min < 0 && p.transpose_max > 0, "{p:?}");
    }
}

#[wasm_bindgen_test]
async fn a_window_gives_notes_nll_and_causal_distributions() {
    let s = session("music");
    let w = run(&s, "BWV 10.7", 64.0, 96.0, 2.0).await;
    assert_eq!((w.piece.as_str(), w.start, w.length, w.transpose, w.layers, w.heads), ("10.7", 64, 96, 2, 3, 4));
    assert_eq!((w.notes.len(), w.nll.values.len()), (96, 95));
    for (t, n) in w.notes.iter().enumerate() {
        assert_eq!((n.voice, n.step), (t % 4, (64 + t) / 4));
        assert_eq!(n.midi, (n.token != 0).then(|| 33 + n.token as u8 - 1));
    }
    assert!(w.nll.values.iter().all(|v| v.is_finite() && *v >= 0.0) && w.nll.mean > 0.0 && w.nll.ms >= 0.0);
    assert_eq!(w.nll.backend, BackendUsed { on_gpu: false, name: "CPU (wasm)".into(), note: String::new(), provisional: false });
    for layer in 0..3 {
        for head in 0..4 {
            let m = weights(&s, layer, head);
            assert_eq!(m.dim(), (96, 96));
            for (i, row) in m.rows().into_iter().enumerate() {
                assert!((row.sum() - 1.0).abs() < 1e-5, "layer {layer} head {head} row {i} sums to {}", row.sum());
                assert!(row.iter().skip(i + 1).all(|&v| v == 0.0), "layer {layer} head {head} row {i} sees the future");
            }
        }
    }
}

#[wasm_bindgen_test]
async fn weights_equal_the_native_trace_and_pytorch() {
    let data = relattn::trained::chorales::Chorales::parse(DATA, "data").unwrap();
    for (kind, _, fix) in MODELS {
        yield_to_browser().await;
        let (s, m) = (session(kind), transformer(kind));
        // A transposed window inside the piece against the native trace of the same tokens.
        run(&s, "10.7", 128.0, 100.0, -3.0).await;
        let tokens: Vec<u32> = data.piece("10.7").unwrap().tokens[128..228].iter().map(|&t| if t == 0 { 0 } else { t - 3 }).collect();
        let (trace, _) = m.trace_async(&mut Backend::Cpu, &tokens, 1).await.unwrap();
        for h in 0..4 {
            let want = trace.weights.index_axis(Axis(0), 0).index_axis(Axis(0), h).to_owned();
            let e = max_diff(&weights(&s, 1, h), &want);
            assert!(e <= 1e-5, "{kind} head {h}: |wasm − native trace| = {e:e}");
        }
        // The fixture's short sequence is BWV 10.7's first 64 tokens; its weights are PyTorch's layer 1.
        let layer: usize = fixture::meta(fix, "layer").parse().unwrap();
        let short = fixture::array(fix, "tokens_short");
        run(&s, "10.7", 0.0, short.len() as f64, 0.0).await;
        assert_eq!(s.tokens().iter().map(|&t| t as f32).collect::<Vec<_>>(), short.iter().copied().collect::<Vec<_>>());
        let want = fixture::array(fix, "weights");
        for h in 0..4 {
            let e = max_diff(&weights(&s, layer, h), want.index_axis(Axis(0), h));
            assert!(e <= 1e-4, "{kind} layer {layer} head {h}: |wasm − torch| = {e:e}");
        }
    }
}

#[wasm_bindgen_test]
async fn nll_and_predictions_match_pytorch_logits_on_a_long_window() {
    for (kind, _, fix) in MODELS {
        yield_to_browser().await;
        let s = session(kind);
        // tokens_long: BWV 10.7's first 512 tokens (2 × the training context). Causal, so the logits of its
        // first 320 tokens (past the context: 256) are those of the 320-token window (and a debug build
        // stays within the test runner's patience).
        let logits = fixture::array(fix, "logits_long").into_dimensionality::<ndarray::Ix2>().unwrap().slice_move(ndarray::s![..320, ..]);
        let tokens: Vec<u32> = fixture::array(fix, "tokens_long").iter().take(320).map(|&t| t as u32).collect();
        let w = run(&s, "10.7", 0.0, 320.0, 0.0).await;
        assert_eq!(w.notes.iter().map(|n| n.token).collect::<Vec<_>>(), tokens);
        let want: Vec<f64> = logits.rows().into_iter().zip(&tokens[1..]).map(|(r, &next)| -log_softmax_at(r.as_slice().unwrap(), next as usize)).collect();
        let e = w.nll.values.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(e <= 1e-4, "{kind}: |NLL wasm − torch| = {e:e}");
        // The same window scored without keeping weights.
        yield_to_browser().await;
        let again: PositionNll = typed(s.nll_by_position(window("10.7", 0.0, 320.0, 0.0)).await);
        assert!(same_nll(&again.values, &w.nll.values), "{kind}");
        for position in [0, 255, 300, 319] {
            let p: Prediction = typed(s.predict(position, 5));
            let torch = probabilities(logits.row(position).as_slice().unwrap(), 1.0);
            assert_eq!((p.position, p.candidates.len()), (position, 5));
            for (r, c) in p.candidates.iter().enumerate() {
                assert_eq!(c.rank, r + 1);
                assert!(c.probability <= 1.0 && (c.probability - torch[c.token as usize]).abs() < 1e-4, "{kind} {position}: {c:?}");
                assert_eq!(c.midi, (c.token != 0).then(|| 33 + c.token as u8 - 1));
            }
            assert!(p.candidates.windows(2).all(|c| c[0].probability >= c[1].probability), "{kind} {position}: not sorted");
            match (&p.actual, tokens.get(position + 1)) {
                (Some(a), Some(&next)) => assert!(a.token == next && a.rank >= 1 && a.rank <= 53, "{a:?}"),
                (None, None) => {}
                other => panic!("{kind} {position}: {other:?}"),
            }
        }
        let all: Prediction = typed(s.predict(10, 53));
        assert!((all.candidates.iter().map(|c| c.probability).sum::<f64>() - 1.0).abs() < 1e-9);
    }
}

#[wasm_bindgen_test]
async fn distance_profiles_are_distributions_over_distances() {
    let s = session("shaw");
    run(&s, "30.6", 0.0, 80.0, 0.0).await;
    let info: ModelInfo = typed(s.info());
    let piece = info.pieces.iter().find(|p| p.bwv == "30.6").unwrap();
    for layer in 0..3 {
        for head in 0..4 {
            let p: DistanceProfile = typed(s.distance_profile(layer, head));
            let m = weights(&s, layer, head);
            assert_eq!((p.distances.len(), p.distances[0], p.distances[79]), (80, -79, 0));
            assert!((p.distribution.iter().sum::<f64>() - 1.0).abs() < 1e-5, "layer {layer} head {head}");
            // d = 0: the diagonal's mean over all 80 queries; d = −79: only query 79 reaches key 0.
            let diagonal = m.diag().iter().map(|&v| v as f64).sum::<f64>() / 80.0;
            assert!((p.mean_weight[79] - diagonal).abs() < 1e-6 && (p.distribution[79] - diagonal).abs() < 1e-6);
            assert!((p.mean_weight[0] - m[[79, 0]] as f64).abs() < 1e-7 && (p.distribution[0] - m[[79, 0]] as f64 / 80.0).abs() < 1e-7);
            // The head's description is its profile's, in the piece's meter; the landmarks are the predicted
            // voice one 16th, one beat and one bar back.
            let meter = Meter::of(&piece.time_signature, 4);
            assert_eq!(p.description, describe(&p.distribution, meter), "layer {layer} head {head}");
            assert_eq!(s.head_description(layer, head).unwrap(), p.description, "the tiles' description is the profile's");
            assert_eq!(p.landmarks.iter().map(|l| l.distance).collect::<Vec<_>>(), [-3, 1 - 4 * meter.beat, 1 - 4 * meter.bar]);
        }
    }
}

#[wasm_bindgen_test]
async fn live_sampling_gives_transformer_sample_and_the_cli() {
    // `relattn model sample --model models/chorales-KIND.safetensors --piece 10.7 --prime 32 --steps 32
    // --temperature 1 --top-p 1 --seed 7 --json`, native x86_64 build (its tokens 32..;
    // the sliding context covers all 64 tokens, so there is no truncation).
    let cli: [(&str, [u32; 32]); 6] = [
        ("music", [40, 33, 28, 25, 40, 33, 28, 25, 40, 35, 28, 25, 40, 35, 28, 25, 38, 33, 30, 18, 38, 33, 30, 18, 38, 33, 30, 16, 38, 33, 30, 16]),
        ("shaw", [42, 35, 26, 23, 42, 35, 26, 23, 42, 38, 26, 23, 42, 38, 26, 23, 42, 37, 26, 21, 42, 37, 26, 21, 40, 35, 28, 19, 40, 35, 28, 19]),
        ("rope", [42, 35, 26, 23, 42, 35, 26, 23, 42, 38, 30, 21, 42, 38, 30, 21, 40, 35, 31, 19, 40, 35, 31, 19, 40, 35, 31, 16, 40, 35, 31, 16]),
        ("alibi", [40, 34, 28, 25, 40, 34, 28, 25, 40, 35, 28, 25, 40, 34, 28, 25, 38, 35, 30, 23, 38, 35, 30, 21, 38, 35, 30, 21, 38, 35, 30, 21]),
        ("t5", [42, 35, 26, 23, 42, 35, 26, 23, 42, 37, 25, 22, 42, 37, 25, 22, 42, 35, 25, 21, 42, 35, 25, 21, 40, 34, 30, 18, 40, 34, 30, 18]),
        ("absolute", [42, 35, 26, 23, 42, 35, 26, 23, 42, 37, 25, 21, 42, 37, 25, 21, 42, 37, 25, 21, 42, 37, 25, 21, 42, 37, 30, 21, 40, 37, 32, 20]),
    ];
    for (kind, want) in cli {
        yield_to_browser().await;
        let s = session(kind);
        let w = run(&s, "10.7", 0.0, 32.0, 0.0).await;
        let info: SamplingInfo = typed(s.start_sampling(sample_request_with(32.0, 1.0, 1.0, 7.0)));
        assert_eq!((info.prime, info.steps), (32, 32));
        let mut got = Vec::new();
        loop {
            // As the worker does: a few tokens, then the browser's turn.
            yield_to_browser().await;
            let batch: Sampled = typed(s.next_tokens(5));
            for (k, n) in batch.notes.iter().enumerate() {
                let position = 32 + got.len() + k;
                assert_eq!((n.voice, n.step), (position % 4, position / 4));
            }
            got.extend(batch.notes.iter().map(|n| n.token));
            assert_eq!((batch.drawn, batch.remaining), (got.len(), 32 - got.len()));
            if batch.remaining == 0 {
                break;
            }
        }
        assert_eq!(got, want, "{kind}: wasm vs the native CLI");
        let after: Sampled = typed(s.next_tokens(3));
        assert!(after.notes.is_empty() && after.remaining == 0);
        assert!(midly::Smf::parse(&s.midi(80).unwrap()).is_ok());
        yield_to_browser().await;
        let prime: Vec<u32> = w.notes.iter().map(|n| n.token).collect();
        let native = {
            let t = transformer(kind);
            t.sample(&prime, &SampleSettings { top_p: 1.0, ..SampleSettings::new(&t, 32, 1.0, 7) }, |_| {})
        }
        .unwrap();
        assert_eq!(s.tokens(), native, "{kind}: live sampling vs Transformer::sample");
    }
    // A transposed window later in the piece, at temperature 0.5, primes with the transposed tokens.
    yield_to_browser().await;
    let s = session("shaw");
    let w = run(&s, "30.6", 256.0, 32.0, 3.0).await;
    typed::<SamplingInfo>(s.start_sampling(sample_request(20.0, 0.5, 123.0)));
    let got: Sampled = typed(s.next_tokens(100));
    assert_eq!((got.notes.len(), got.notes[0].step), (20, (256 + 32) / 4));
    yield_to_browser().await;
    let prime: Vec<u32> = w.notes.iter().map(|n| n.token).collect();
    assert_eq!(
        got.notes.iter().map(|n| n.token).collect::<Vec<_>>(),
        {
            let t = transformer("shaw");
            t.sample(&prime, &SampleSettings::new(&t, 20, 0.5, 123), |_| {})
        }
        .unwrap()[32..]
    );
}

#[wasm_bindgen_test]
async fn trace_is_a_session_of_the_window() {
    let s = session("music");
    run(&s, "20.11", 16.0, 48.0, 0.0).await;
    let mut trace: Session = s.trace(2, "cpu".into()).await.unwrap();
    let i = trace.trace().unwrap().stages().iter().position(|&st| st == relattn::stage::Stage::Weights).unwrap();
    for head in 0..4 {
        let cut = trace.select(i, 0, head, JsValue::UNDEFINED).unwrap();
        let size = |k: &str| js_sys::Reflect::get(&cut, &k.into()).unwrap().as_f64().unwrap();
        assert_eq!((size("rows"), size("cols")), (48.0, 48.0));
        let got = trace.trace().unwrap().weights.index_axis(Axis(0), 0).index_axis(Axis(0), head).to_owned();
        assert!(max_diff(&got, &weights(&s, 2, head)) <= 1e-6, "head {head}");
    }
    assert_eq!(field(&s.trace(3, "cpu".into()).await.err().unwrap()), "layer");
    assert_eq!(field(&s.trace(0, "gpu".into()).await.err().unwrap()), "backend");
}

#[wasm_bindgen_test]
async fn bad_requests_name_their_field() {
    let s = session("shaw");
    // Before any window.
    assert_eq!(field(&s.weights(0, 0, 128).unwrap_err()), "window");
    assert_eq!(field(&s.predict(0, 1).unwrap_err()), "window");
    assert_eq!(field(&s.start_sampling(sample_request(4.0, 1.0, 0.0)).unwrap_err()), "window");
    assert_eq!(field(&s.next_tokens(1).unwrap_err()), "sampling");
    // 10.7 has 1408 tokens; the pitches of its first 64 allow −22..=+7 semitones.
    let bad = [
        (window("11", 0.0, 64.0, 0.0), "piece"),
        (window("10.7", 1408.0, 64.0, 0.0), "start"),
        (window("10.7", 2.0, 64.0, 0.0), "start"),
        (window("10.7", -4.0, 64.0, 0.0), "start"),
        (window("10.7", f64::NAN, 64.0, 0.0), "start"),
        (window("10.7", 0.0, 0.0, 0.0), "length"),
        (window("10.7", 0.0, 1.0, 0.0), "length"),
        (window("10.7", 0.0, 1025.0, 0.0), "length"),
        (window("10.7", 1400.0, 16.0, 0.0), "length"),
        (window("10.7", 0.0, 64.0, 40.0), "transpose"),
        (window("10.7", 0.0, 64.0, -40.0), "transpose"),
        (window("10.7", 0.0, 64.0, 0.5), "transpose"),
        (window_on("10.7", 0.0, 64.0, 0.0, "gpu"), "backend"),
        (window_on("10.7", 0.0, 64.0, 0.0, "WebGPU"), "backend"),
        (object(&[("piece", "10.7".into()), ("start", 0.0.into()), ("length", 8.0.into()), ("backend", "cpu".into())]), "request"),
        (object(&[("piece", "10.7".into()), ("start", 0.0.into()), ("length", 8.0.into()), ("transpose", 0.0.into())]), "request"),
        (
            object(&[
                ("piece", "10.7".into()),
                ("start", 0.0.into()),
                ("length", 8.0.into()),
                ("transpose", 0.0.into()),
                ("backend", "cpu".into()),
                ("step", 1.0.into()),
            ]),
            "request",
        ),
        (JsValue::from_str("10.7"), "request"),
    ];
    for (request, want) in bad {
        let e = s.run(request.clone()).await.unwrap_err();
        assert_eq!(field(&e), want, "{request:?}: {e:?}");
        assert_eq!(field(&s.nll_by_position(request.clone()).await.unwrap_err()), want, "{request:?}");
    }
    let w = run(&s, "10.7", 0.0, 64.0, 0.0).await;
    assert_eq!((w.transpose_min, w.transpose_max), (-22, 7));
    run(&s, "10.7", 0.0, 64.0, w.transpose_max as f64).await;
    assert_eq!(field(&s.run(window("10.7", 0.0, 64.0, w.transpose_max as f64 + 1.0)).await.unwrap_err()), "transpose");
    for (e, want) in [
        (s.weights(3, 0, 128).unwrap_err(), "layer"),
        (s.weights(0, 4, 128).unwrap_err(), "head"),
        (s.distance_profile(usize::MAX, 0).unwrap_err(), "layer"),
        (s.distance_profile(0, 9).unwrap_err(), "head"),
        (s.predict(64, 3).unwrap_err(), "position"),
        (s.predict(0, 0).unwrap_err(), "top"),
        (s.predict(0, 54).unwrap_err(), "top"),
        (s.start_sampling(sample_request(0.0, 1.0, 0.0)).unwrap_err(), "steps"),
        (s.start_sampling(sample_request(4097.0, 1.0, 0.0)).unwrap_err(), "steps"),
        (s.start_sampling(sample_request(4.0, -1.0, 0.0)).unwrap_err(), "temperature"),
        (s.start_sampling(sample_request(4.0, f64::NAN, 0.0)).unwrap_err(), "temperature"),
        (s.start_sampling(sample_request(4.0, 1.0, -1.0)).unwrap_err(), "seed"),
        (
            s.start_sampling(object(&[
                ("steps", 4.0.into()),
                ("temperature", 1.0.into()),
                ("top_k", 54.0.into()),
                ("top_p", 1.0.into()),
                ("seed", 0.0.into()),
            ]))
            .unwrap_err(),
            "top_k",
        ),
        (
            s.start_sampling(object(&[("steps", 4.0.into()), ("temperature", 1.0.into()), ("top_k", 0.0.into()), ("top_p", 0.0.into()), ("seed", 0.0.into())]))
                .unwrap_err(),
            "top_p",
        ),
        (s.start_sampling(object(&[("steps", 4.0.into())])).unwrap_err(), "request"),
        (s.next_tokens(1).unwrap_err(), "sampling"),
    ] {
        assert_eq!(field(&e), want, "{e:?}");
    }
    typed::<SamplingInfo>(s.start_sampling(sample_request(4.0, 1.0, 0.0)));
    assert_eq!(field(&s.next_tokens(0).unwrap_err()), "count");
    // Files that are not what they should be.
    let (_, model, _) = MODELS[0];
    assert_eq!(field(&ModelSession::load(b"not a model", "x.safetensors", DATA).err().unwrap()), "file");
    assert_eq!(field(&ModelSession::load(model, "m", b"{").err().unwrap()), "file");
    let mut data: serde_json::Value = serde_json::from_slice(DATA).unwrap();
    data["vocab"].as_array_mut().unwrap().pop();
    assert_eq!(field(&ModelSession::load(model, "m", &serde_json::to_vec(&data).unwrap()).err().unwrap()), "data");
}

/// #13's targets on CPU wasm: the whole forward over a 1024-token window (every layer's weights kept) in
/// ≤ 500 ms, sampling ≥ 50 tokens/s with the cache. Prints the timings (the window twice: the first run also
/// grows the wasm memory); asserts only that they ran. Ignored in debug builds, where relattn itself is not
/// optimised: `cargo test --release --target wasm32-unknown-unknown --no-default-features --features
/// test-hooks --test web_model -- --include-ignored --nocapture timings`.
#[wasm_bindgen_test]
#[cfg_attr(debug_assertions, ignore = "timings want a release build")]
async fn timings_of_a_long_window_and_of_sampling() {
    let now = || js_sys::Date::now();
    for (kind, _, _) in MODELS {
        yield_to_browser().await;
        let s = session(kind);
        let t0 = now();
        run(&s, "190.7", 0.0, 1024.0, 0.0).await;
        let t_first = now() - t0;
        let t0 = now();
        let w = run(&s, "190.7", 0.0, 1024.0, 0.0).await;
        let t_run = now() - t0;
        let t0 = now();
        let nll: PositionNll = typed(s.nll_by_position(window("190.7", 0.0, 1024.0, 0.0)).await);
        let t_nll = now() - t0;
        let t0 = now();
        for layer in 0..3 {
            for head in 0..4 {
                s.weights(layer, head, 128).unwrap();
            }
        }
        let t_tiles = now() - t0;
        run(&s, "190.7", 0.0, 256.0, 0.0).await;
        let t0 = now();
        let info: SamplingInfo = typed(s.start_sampling(sample_request(256.0, 1.0, 0.0)));
        let t_prime = now() - t0;
        let t0 = now();
        let sampled: Sampled = typed(s.next_tokens(256));
        let t_sample = now() - t0;
        assert_eq!((w.length, nll.values.len(), sampled.notes.len()), (1024, 1023, 256));
        log(format!(
            "{kind}: run 1024 tokens {t_first:.0} ms, again {t_run:.0} ms (forward + weights {:.0} ms, NLL {:.3}); nll_by_position 1024 {t_nll:.0} ms; \
             12 weight tiles {t_tiles:.0} ms; sampling: prime {} tokens {t_prime:.0} ms, 256 tokens {t_sample:.0} ms = {:.0} tokens/s; \
             wasm memory {:.0} MiB",
            w.nll.ms,
            w.nll.mean,
            info.prime,
            256.0 / (t_sample / 1e3),
            relattn_wasm::memory_bytes() / (1 << 20) as f64
        ));
    }
}

/// WebGPU asked for where the browser has no adapter (this runner's chromium runs without
/// --enable-unsafe-webgpu; tests/e2e/model.test.mjs runs the page on SwiftShader's): the window, its NLL and
/// a layer's trace are computed on the CPU, equal to the CPU's, and say why. Auto says so too.
#[wasm_bindgen_test]
async fn webgpu_without_an_adapter_falls_back_to_the_cpu_with_the_reason() {
    let status = relattn_wasm::backend::gpu_init().await.unwrap();
    let get = |k: &str| js_sys::Reflect::get(&status, &k.into()).unwrap();
    let reason = get("reason").as_string().unwrap();
    if get("available").as_bool().unwrap() {
        log("this browser has a WebGPU adapter: the fallback is checked by tests/e2e/model.test.mjs".into());
        return;
    }
    let s = session("music");
    let cpu = run(&s, "10.7", 0.0, 48.0, 0.0).await;
    let cpu_weights = weights(&s, 1, 2);
    for choice in ["webgpu", "auto"] {
        let w: WindowInfo = typed(s.run(window_on("10.7", 0.0, 48.0, 0.0, choice)).await);
        let b = &w.nll.backend;
        assert_eq!(b, &BackendUsed { on_gpu: false, name: "CPU (wasm)".into(), note: reason.clone(), provisional: false }, "{choice}");
        assert_eq!(w.nll.values, cpu.nll.values, "{choice}");
        assert_eq!(weights(&s, 1, 2), cpu_weights, "{choice}");
        let nll: PositionNll = typed(s.nll_by_position(window_on("10.7", 0.0, 48.0, 0.0, choice)).await);
        assert_eq!(&nll.backend, b, "{choice}");
        assert!(same_nll(&nll.values, &cpu.nll.values), "{choice}");
    }
    let info = s.trace(1, "webgpu".into()).await.unwrap().info().unwrap();
    let backend: BackendUsed = serde_wasm_bindgen::from_value(js_sys::Reflect::get(&info, &"backend".into()).unwrap()).unwrap();
    assert!(!backend.on_gpu && backend.note == reason && !reason.is_empty(), "{backend:?}");
}
