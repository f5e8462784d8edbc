//! Model mode's application natively (src/app/model.rs, `cargo test`): the shipped models and test pieces
//! load; a window's attention weights are causal distributions equal to the model's own trace; NLL,
//! predictions and distance profiles agree with the logits; live sampling gives `Transformer::sample`'s tokens;
//! bad requests name their field. tests/web_model.rs checks the wasm shell in a browser (and PyTorch's
//! fixtures, WebGPU's fallback).

use ndarray::{Array2, Axis};
use relattn::app::model::ChoraleSession;
use relattn::app::Cpu;
use relattn::protocol::{ModelRequest, SampleRequest, WindowInfo};
use relattn::render::Palette;
use relattn::trained::heads::{describe, Meter};
use relattn::trained::transformer::{SampleSettings, Transformer, DEFAULT_TOP_K, DEFAULT_TOP_P};
use relattn::Backend;

const DATA: &[u8] = include_bytes!("../../../models/chorales-test.json");
const MODELS: [(&str, &[u8]); 6] = [
    ("music", include_bytes!("../../../models/chorales-music.safetensors")),
    ("shaw", include_bytes!("../../../models/chorales-shaw.safetensors")),
    ("rope", include_bytes!("../../../models/chorales-rope.safetensors")),
    ("alibi", include_bytes!("../../../models/chorales-alibi.safetensors")),
    ("t5", include_bytes!("../../../models/chorales-t5.safetensors")),
    ("absolute", include_bytes!("../../../models/chorales-absolute.safetensors")),
];

fn bytes(kind: &str) -> &'static [u8] {
    MODELS.iter().find(|m| m.0 == kind).unwrap().1
}

fn session(kind: &str) -> ChoraleSession {
    ChoraleSession::load(bytes(kind), &format!("chorales-{kind}.safetensors"), DATA).unwrap()
}

fn window(piece: &str, start: f64, length: f64, transpose: f64) -> ModelRequest {
    let mut r: ModelRequest = serde_json::from_value(serde_json::json!({ "piece": piece, "start": 0, "length": 0, "transpose": 0, "backend": "cpu" })).unwrap();
    (r.window.start, r.window.length, r.window.transpose) = (start, length, transpose);
    r
}

fn sample_request(steps: f64, temperature: f64, top_p: f64, seed: f64) -> SampleRequest {
    let mut r: SampleRequest =
        serde_json::from_value(serde_json::json!({ "steps": 0, "temperature": 0, "top_k": DEFAULT_TOP_K, "top_p": 0, "seed": 0 })).unwrap();
    (r.steps, r.temperature, r.top_p, r.seed) = (steps, temperature, top_p, seed);
    r
}

fn run(s: &ChoraleSession, piece: &str, start: f64, length: f64, transpose: f64) -> WindowInfo {
    pollster::block_on(s.run(&Cpu, &window(piece, start, length, transpose))).unwrap()
}

/// The (T, T) map of `layer`, `head` as the page reads it.
fn weights(s: &ChoraleSession, layer: usize, head: usize) -> Array2<f32> {
    let cut = s.weights(layer, head, usize::MAX, Palette::default()).unwrap();
    assert_eq!((s.values().len(), s.rgba().len()), (cut.rows * cut.cols, 4 * cut.rows * cut.cols));
    Array2::from_shape_vec((cut.rows, cut.cols), s.values().to_vec()).unwrap()
}

#[test]
fn each_model_loads_with_its_config_and_the_pieces() {
    let results: serde_json::Value = serde_json::from_slice(include_bytes!("../../../models/results.json")).unwrap();
    for (kind, _) in MODELS {
        let s = session(kind);
        let info = s.info();
        let trained = &results["models"][kind];
        assert_eq!(serde_json::to_value(info.kind).unwrap(), kind);
        assert_eq!((info.parameters as u64, info.config.layers, info.config.heads, info.config.context), (trained["parameters"].as_u64().unwrap(), 3, 4, 256));
        assert!((info.test_nll.unwrap() - trained["test_nll"].as_f64().unwrap()).abs() < 1e-9, "{kind}");
        assert_eq!((info.max_length, info.vocab.len(), info.pieces.len()), (1024, 53, 34));
        assert_eq!((info.pieces[0].bwv.as_str(), info.pieces[0].length), ("10.7", 1408));
    }
}

/// A window's notes, NLL and weights: causal distributions equal to the model's own trace of the same
/// (transposed) tokens, for every model.
#[test]
fn a_window_gives_notes_nll_and_the_models_weights() {
    let data = relattn::trained::chorales::Chorales::parse(DATA, "data").unwrap();
    for (kind, model) in MODELS {
        let s = session(kind);
        let w = run(&s, "BWV 10.7", 64.0, 40.0, -3.0);
        assert_eq!((w.piece.as_str(), w.start, w.length, w.transpose, w.layers, w.heads), ("10.7", 64, 40, -3, 3, 4));
        assert_eq!((w.notes.len(), w.nll.values.len()), (40, 39));
        for (t, n) in w.notes.iter().enumerate() {
            assert_eq!((n.voice, n.step), (t % 4, (64 + t) / 4));
        }
        assert!(w.nll.values.iter().all(|v| v.is_finite() && *v >= 0.0) && w.nll.mean > 0.0);
        assert!(!w.nll.backend.on_gpu);
        let tokens: Vec<u32> = data.piece("10.7").unwrap().tokens[64..104].iter().map(|&t| if t == 0 { 0 } else { t - 3 }).collect();
        let m = Transformer::load(model, kind).unwrap();
        let (trace, _) = pollster::block_on(m.trace_async(&mut Backend::Cpu, &tokens, 1)).unwrap();
        for head in 0..4 {
            let got = weights(&s, 1, head);
            for (i, row) in got.rows().into_iter().enumerate() {
                assert!((row.sum() - 1.0).abs() < 1e-5 && row.iter().skip(i + 1).all(|&v| v == 0.0), "{kind} head {head} row {i}");
            }
            let want = trace.weights.index_axis(Axis(0), 0).index_axis(Axis(0), head).to_owned();
            let e = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            assert!(e <= 1e-5, "{kind} head {head}: |session − trace| = {e:e}");
        }
        // The stages of layer 1 as a session, the same weights.
        let mut t = pollster::block_on(s.trace(&Cpu, 1, "cpu")).unwrap();
        let i = t.info().stages.iter().position(|m| m.name == "weights").unwrap();
        t.cut(i, 0, 2, Palette::default()).unwrap();
        let e = t.selected().unwrap().0.iter().zip(weights(&s, 1, 2).iter()).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(e <= 1e-5, "{kind}: |trace session − window| = {e:e}");
        // The NLL of the same window without keeping weights.
        let again = pollster::block_on(s.nll_by_position(&Cpu, &window("10.7", 64.0, 40.0, -3.0))).unwrap();
        assert!(again.values.iter().zip(&w.nll.values).all(|(a, b)| (a - b).abs() <= 1e-5 * a.abs().max(1.0)), "{kind}");
    }
}

#[test]
fn predictions_and_distance_profiles_follow_the_weights_and_logits() {
    let s = session("shaw");
    let w = run(&s, "30.6", 0.0, 80.0, 0.0);
    let info = s.info();
    let piece = info.pieces.iter().find(|p| p.bwv == "30.6").unwrap();
    let meter = Meter::of(&piece.time_signature, 4);
    for layer in 0..3 {
        for head in 0..4 {
            let p = s.distance_profile(layer, head).unwrap();
            let m = weights(&s, layer, head);
            assert_eq!((p.distances.len(), p.distances[0], p.distances[79]), (80, -79, 0));
            assert!((p.distribution.iter().sum::<f64>() - 1.0).abs() < 1e-5);
            let diagonal = m.diag().iter().map(|&v| v as f64).sum::<f64>() / 80.0;
            assert!((p.mean_weight[79] - diagonal).abs() < 1e-6 && (p.distribution[79] - diagonal).abs() < 1e-6);
            assert_eq!(p.description, describe(&p.distribution, meter));
            assert_eq!(s.head_description(layer, head).unwrap(), p.description);
        }
    }
    // The next token's probabilities sum to 1, sorted; the actual next token's NLL is the window's.
    for position in [0, 40, 78] {
        let p = s.predict(position, 53).unwrap();
        assert!((p.candidates.iter().map(|c| c.probability).sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(p.candidates.windows(2).all(|c| c[0].probability >= c[1].probability));
        let actual = p.actual.unwrap();
        assert!((-actual.probability.ln() - w.nll.values[position]).abs() < 1e-4, "{position}");
    }
}

/// Live sampling, a few tokens per call, gives `Transformer::sample`'s tokens for the same prime, steps,
/// temperature and seed; a transposed window later in the piece primes with its transposed tokens.
#[test]
fn live_sampling_gives_transformer_sample() {
    for kind in ["music", "t5"] {
        let s = session(kind);
        let w = run(&s, "10.7", 0.0, 32.0, 0.0);
        let info = s.start_sampling(&sample_request(32.0, 1.0, 1.0, 7.0)).unwrap();
        assert_eq!((info.prime, info.steps), (32, 32));
        let mut got = Vec::new();
        loop {
            let batch = s.next_tokens(5).unwrap();
            got.extend(batch.notes.iter().map(|n| n.token));
            assert_eq!((batch.drawn, batch.remaining), (got.len(), 32 - got.len()));
            if batch.remaining == 0 {
                break;
            }
        }
        assert!(s.next_tokens(3).unwrap().notes.is_empty());
        assert!(midly::Smf::parse(&s.midi(80).unwrap()).is_ok());
        let prime: Vec<u32> = w.notes.iter().map(|n| n.token).collect();
        let t = Transformer::load(bytes(kind), kind).unwrap();
        let native = t.sample(&prime, &SampleSettings { top_p: 1.0, ..SampleSettings::new(&t, 32, 1.0, 7) }, |_| {}).unwrap();
        assert_eq!(s.tokens(), native, "{kind}");
    }
    let s = session("shaw");
    let w = run(&s, "30.6", 256.0, 32.0, 3.0);
    s.start_sampling(&sample_request(20.0, 0.5, DEFAULT_TOP_P as f64, 123.0)).unwrap();
    let got = s.next_tokens(100).unwrap();
    assert_eq!((got.notes.len(), got.notes[0].step), (20, (256 + 32) / 4));
    let prime: Vec<u32> = w.notes.iter().map(|n| n.token).collect();
    let t = Transformer::load(bytes("shaw"), "shaw").unwrap();
    assert_eq!(s.tokens()[32..], t.sample(&prime, &SampleSettings::new(&t, 20, 0.5, 123), |_| {}).unwrap()[32..]);
}

#[test]
fn bad_requests_name_their_field() {
    let s = session("shaw");
    let field = |e: relattn::Error| e.field().to_string();
    assert_eq!(field(s.weights(0, 0, 128, Palette::default()).unwrap_err()), "window");
    assert_eq!(field(s.predict(0, 1).unwrap_err()), "window");
    assert_eq!(field(s.start_sampling(&sample_request(4.0, 1.0, 1.0, 0.0)).unwrap_err()), "window");
    assert_eq!(field(s.next_tokens(1).unwrap_err()), "sampling");
    let on = |backend: &str| ModelRequest { backend: backend.into(), ..window("10.7", 0.0, 64.0, 0.0) };
    let bad = [
        (window("11", 0.0, 64.0, 0.0), "piece"),
        (window("10.7", 1408.0, 64.0, 0.0), "start"),
        (window("10.7", 2.0, 64.0, 0.0), "start"),
        (window("10.7", f64::NAN, 64.0, 0.0), "start"),
        (window("10.7", 0.0, 1.0, 0.0), "length"),
        (window("10.7", 0.0, 1025.0, 0.0), "length"),
        (window("10.7", 1400.0, 16.0, 0.0), "length"),
        (window("10.7", 0.0, 64.0, 40.0), "transpose"),
        (window("10.7", 0.0, 64.0, 0.5), "transpose"),
        (on("gpu"), "backend"),
    ];
    for (request, want) in bad {
        assert_eq!(field(pollster::block_on(s.run(&Cpu, &request)).unwrap_err()), want, "{request:?}");
        assert_eq!(field(pollster::block_on(s.nll_by_position(&Cpu, &request)).unwrap_err()), want, "{request:?}");
    }
    let w = run(&s, "10.7", 0.0, 64.0, 0.0);
    assert_eq!((w.transpose_min, w.transpose_max), (-22, 7));
    for (e, want) in [
        (s.weights(3, 0, 128, Palette::default()).unwrap_err(), "layer"),
        (s.weights(0, 4, 128, Palette::default()).unwrap_err(), "head"),
        (s.distance_profile(0, 9).unwrap_err(), "head"),
        (s.predict(64, 3).unwrap_err(), "position"),
        (s.predict(0, 54).unwrap_err(), "top"),
        (s.start_sampling(&sample_request(0.0, 1.0, 1.0, 0.0)).unwrap_err(), "steps"),
        (s.start_sampling(&sample_request(4.0, f64::NAN, 1.0, 0.0)).unwrap_err(), "temperature"),
        (s.start_sampling(&sample_request(4.0, 1.0, 1.0, -1.0)).unwrap_err(), "seed"),
        (s.start_sampling(&sample_request(4.0, 1.0, 0.0, 0.0)).unwrap_err(), "top_p"),
        (pollster::block_on(s.trace(&Cpu, 3, "cpu")).err().unwrap(), "layer"),
    ] {
        assert_eq!(field(e), want);
    }
    let mut data: serde_json::Value = serde_json::from_slice(DATA).unwrap();
    data["vocab"].as_array_mut().unwrap().pop();
    assert_eq!(field(ChoraleSession::load(bytes("shaw"), "m", &serde_json::to_vec(&data).unwrap()).err().unwrap()), "data");
    assert_eq!(field(ChoraleSession::load(b"not a model", "x.safetensors", DATA).err().unwrap()), "file");
}
