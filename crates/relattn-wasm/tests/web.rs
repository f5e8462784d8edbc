//! The wasm shells in a headless browser (wasm-bindgen-test, `make test-wasm`): what only the browser has —
//! requests as JavaScript objects (an unknown key, a wrong type, a missing field), answers as plain objects,
//! errors as `Error`s with a field and a kind, zero-copy stage buffers in the wasm memory, figures drawn with
//! the DOM's text metrics, the memory the wasm instance grows to — and the control space on wasm32, whose
//! usize is 32 bits. The app's own logic is tested natively (tests/app.rs).
#![cfg(target_arch = "wasm32")]

use relattn::attention::Config;

use relattn::app::request::{page_bytes, LIMITS, MEMORY_LIMIT};
use relattn::layer::scenario::Spec;
use relattn::options::LayerOptions;
use relattn::positions::Method;
use relattn_wasm::figure::{draw_frame, draw_svg};
use relattn_wasm::{compute, memory_bytes, set_colormaps, Session};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn get(o: &JsValue, k: &str) -> JsValue {
    js_sys::Reflect::get(o, &k.into()).unwrap()
}
fn num(o: &JsValue, k: &str) -> f64 {
    get(o, k).as_f64().unwrap_or_else(|| panic!("{k} is not a number"))
}
fn text(o: &JsValue, k: &str) -> String {
    get(o, k).as_string().unwrap_or_else(|| panic!("{k} is not a string"))
}

/// The page's controls: the method select's text as it is (a name the wasm may refuse) and the other options.
#[derive(Clone, Debug)]
struct Controls {
    method: String,
    options: LayerOptions,
}

impl Controls {
    /// These controls with `change` made to their options.
    fn with(mut self, change: impl FnOnce(&mut LayerOptions)) -> Controls {
        change(&mut self.options);
        self
    }
}

fn settings(method: &str, n: f64, d_model: f64, heads: f64, clip: f64) -> Controls {
    let options = LayerOptions {
        n: Some(n),
        d_model: Some(d_model),
        heads: Some(heads),
        clip: Some(clip),
        seed: Some(0.0),
        batch_size: Some(1.0),
        relative_values: Some(true),
        ..LayerOptions::default()
    };
    Controls { method: method.into(), options }
}

/// A request object as the page sends it, on the CPU: the preset alone when one is named, else the options;
/// the sentence's tokens beside them.
fn request_with(preset: &str, c: &Controls, tokens: &[String]) -> JsValue {
    let o = js_sys::Object::new();
    js_sys::Reflect::set(&o, &"backend".into(), &"cpu".into()).unwrap();
    let options = if preset.is_empty() {
        let options = serde_wasm_bindgen::to_value(&c.options).unwrap();
        js_sys::Reflect::set(&options, &"method".into(), &c.method.as_str().into()).unwrap();
        options
    } else {
        serde_wasm_bindgen::to_value(&LayerOptions { preset: Some(preset.into()), ..LayerOptions::default() }).unwrap()
    };
    js_sys::Reflect::set(&o, &"options".into(), &options).unwrap();
    let tokens: js_sys::Array = tokens.iter().map(|t| JsValue::from_str(t)).collect();
    js_sys::Reflect::set(&o, &"tokens".into(), &tokens).unwrap();
    o.into()
}

fn request(preset: &str, c: &Controls) -> JsValue {
    request_with(preset, c, &[])
}

async fn run(preset: &str, c: &Controls) -> Result<Session, JsValue> {
    compute(request(preset, c), None).await
}

/// The controls with a sentence.
async fn run_sentence(tokens: &[String], c: &Controls) -> Result<Session, JsValue> {
    compute(request_with("", c, tokens), None).await
}

async fn preset(name: &str) -> Session {
    run(name, &settings("shaw", 1.0, 1.0, 1.0, 0.0)).await.unwrap()
}

/// `(field, kind)` of a thrown error.
fn named(e: &JsValue) -> (String, String) {
    (text(e, "field"), text(e, "kind"))
}

fn stage_names(s: &Session) -> Vec<String> {
    js_sys::Array::from(&get(&s.info().unwrap(), "stages")).iter().map(|st| text(&st, "name")).collect()
}

#[wasm_bindgen_test]
async fn seed004_relative_logits_match_the_seed() {
    let s = preset("seed004").await;
    let info = s.info().unwrap();
    let set = get(&info, "options");
    assert_eq!((num(&set, "batch_size"), num(&set, "heads"), num(&set, "n"), num(&set, "clip")), (2.0, 3.0, 4.0, 2.0));
    assert!(text(&info, "preset_description").contains("004"), "{}", text(&info, "preset_description"));
    let rel = &s.trace().unwrap().relative_logits;
    assert_eq!((0..4).map(|j| rel[[0, 0, 0, j]]).collect::<Vec<_>>(), vec![44.0, 23.0, 18.0, 18.0]);
    assert_eq!((rel[[0, 0, 1, 0]], rel[[0, 0, 1, 1]]), (-29.0, 129.0));
    assert_eq!(s.trace().unwrap().rel_index[[1, 0]], 1);
}

#[wasm_bindgen_test]
async fn select_exposes_values_and_pixels_in_memory() {
    let mut s = run(
        "",
        &settings("music", 16.0, 32.0, 2.0, 4.0).with(|o| {
            o.causal = Some(true);
            o.relative_values = Some(false);
            o.seed = Some(7.0);
        }),
    )
    .await
    .unwrap();
    let names = stage_names(&s);
    let w = names.iter().position(|n| n == "weights").unwrap();
    let cut = s.select(w, 0, 1, JsValue::UNDEFINED).unwrap();
    assert_eq!((num(&cut, "rows"), num(&cut, "cols")), (16.0, 16.0));
    assert_eq!((s.values_len(), s.rgba_len()), (256, 1024));
    let mem = wasm_bindgen::memory().unchecked_into::<js_sys::WebAssembly::Memory>();
    let view = js_sys::Float32Array::new_with_byte_offset_and_length(&mem.buffer(), s.values_ptr() as u32, s.values_len() as u32);
    let row0: f32 = (0..16).map(|j| view.get_index(j)).sum();
    assert!((row0 - 1.0).abs() < 1e-5, "weights of row 0 sum to {row0}");
    assert!(view.get_index(1) == 0.0, "causal: key 1 is masked for query 0");
    assert!(js_sys::Array::from(&s.timings().unwrap()).length() >= 3);
    // The CPU trace's stages, timed with performance.now() (std's Instant panics in wasm).
    let stages: Vec<(String, f64)> = js_sys::Array::from(&get(&s.info().unwrap(), "stage_times")).iter().map(|o| (text(&o, "name"), num(&o, "ms"))).collect();
    let names: Vec<&str> = stages.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["projections", "content_logits", "relative_logits", "scale_mask", "logits", "softmax", "values", "output"]);
    assert!(stages.iter().all(|(_, ms)| ms.is_finite() && *ms >= 0.0), "{stages:?}");
}

#[wasm_bindgen_test]
async fn bad_input_names_the_field_and_the_kind() {
    let bad = |n: f64, d: f64, h: f64, method: &'static str| async move { run("", &settings(method, n, d, h, 2.0)).await.err().map(|e| named(&e).0) };
    assert_eq!(bad(0.0, 16.0, 1.0, "shaw").await.as_deref(), Some("n"));
    assert_eq!(bad(9000.0, 16.0, 1.0, "shaw").await.as_deref(), Some("n"));
    assert_eq!(bad(8.0, 16.0, 3.0, "shaw").await.as_deref(), Some("heads"));
    assert_eq!(bad(8.0, 16.0, 1.0, "rnn").await.as_deref(), Some("method"));
    assert_eq!(named(&relattn_wasm::scheme_options("rotary").unwrap_err()).0, "method");
    assert_eq!(bad(f64::NAN, 16.0, 1.0, "shaw").await.as_deref(), Some("n"));
    let e = run("", &settings("shaw", 4.0, 8.0, 1.0, 2.0).with(|o| o.batch_size = Some(0.0))).await.err().unwrap();
    assert_eq!(named(&e), ("batch_size".into(), "invalid".into()));
    let e = run("seed999", &settings("shaw", 4.0, 8.0, 1.0, 2.0)).await.err().unwrap();
    assert_eq!(named(&e), ("preset".into(), "invalid".into()));
    // A request the page should never send: a missing or unknown field is refused, named "request".
    let o = request("", &settings("shaw", 4.0, 8.0, 1.0, 2.0));
    js_sys::Reflect::set(&o, &"colour".into(), &"red".into()).unwrap();
    let e = compute(o.clone(), None).await.err().unwrap();
    assert_eq!(named(&e), ("request".into(), "invalid".into()));
    assert!(text(&e, "message").contains("colour"), "{}", text(&e, "message"));
    js_sys::Reflect::delete_property(&o.clone().into(), &"colour".into()).unwrap();
    js_sys::Reflect::set(&get(&o, "options"), &"temperature".into(), &1.into()).unwrap();
    assert!(text(&compute(o.clone(), None).await.err().unwrap(), "message").contains("temperature"));
    js_sys::Reflect::delete_property(&get(&o, "options").into(), &"temperature".into()).unwrap();
    // An option of the wrong type is refused by its name; one left out takes its default.
    js_sys::Reflect::set(&get(&o, "options"), &"causal".into(), &"yes".into()).unwrap();
    assert_eq!(named(&compute(o.clone(), None).await.err().unwrap()), ("causal".into(), "invalid".into()));
    js_sys::Reflect::delete_property(&get(&o, "options").into(), &"causal".into()).unwrap();
    js_sys::Reflect::delete_property(&get(&o, "options").into(), &"clip".into()).unwrap();
    let s = compute(o, None).await.unwrap();
    assert_eq!(num(&get(&s.info().unwrap(), "options"), "clip"), 2.0);
}

/// A sentence makes x: one seeded vector per distinct token, so repeated tokens have equal content logits
/// (q_i·k_j depends on the token only) and n is the number of tokens.
#[wasm_bindgen_test]
async fn a_sentence_gives_one_embedding_per_distinct_token() {
    let tokens: Vec<String> = "the cat saw the dog".split(' ').map(String::from).collect();
    let s = run_sentence(&tokens, &settings("shaw", 3.0, 8.0, 2.0, 2.0)).await.unwrap();
    let t = s.trace().unwrap();
    assert_eq!(t.x.dim(), (1, 5, 8));
    assert_eq!(t.x.slice(ndarray::s![0, 0, ..]), t.x.slice(ndarray::s![0, 3, ..]), "both 'the' rows");
    assert_ne!(t.x.slice(ndarray::s![0, 1, ..]), t.x.slice(ndarray::s![0, 2, ..]));
    let c = &t.content_logits;
    for j in 0..5 {
        assert_eq!(c[[0, 1, 0, j]], c[[0, 1, 3, j]], "query 'the' at 0 and 3, key {j}");
    }
    let info = s.info().unwrap();
    assert_eq!(num(&get(&info, "options"), "n"), 5.0);
    assert_eq!(js_sys::Array::from(&get(&info, "tokens")).length(), 5);
    // Another seed gives other vectors; the same seed the same ones.
    let again = run_sentence(&tokens, &settings("shaw", 3.0, 8.0, 2.0, 2.0)).await.unwrap();
    assert_eq!(again.trace().unwrap().x, t.x);
    let other = run_sentence(&tokens, &settings("shaw", 3.0, 8.0, 2.0, 2.0).with(|o| o.seed = Some(1.0))).await.unwrap();
    assert_ne!(other.trace().unwrap().x, t.x);
}

fn spec(rows: usize, cols: usize, labels: &[String], title: &str) -> JsValue {
    let o = js_sys::Object::new();
    let set = |k: &str, v: JsValue| js_sys::Reflect::set(&o, &k.into(), &v).unwrap();
    set("title", title.into());
    set("subtitle", "f".into());
    set("x_axis", "key j".into());
    set("y_axis", "query i".into());
    set("scale", "sequential".into());
    set("rows", rows.into());
    set("cols", cols.into());
    let l: js_sys::Array = labels.iter().map(|s| JsValue::from_str(s)).collect();
    set("x_labels", l.clone().into());
    set("y_labels", l.into());
    o.into()
}

#[wasm_bindgen_test]
async fn exports_and_tensors() {
    let s = preset("seed004").await;
    assert!(s.npz().unwrap().starts_with(b"PK"));
    let values: Vec<f32> = (0..16).map(|v| v as f32 / 16.0).collect();
    let o = draw_svg(spec(4, 4, &[], "t"), &values, 470, 430).unwrap();
    let svg = text(&o, "svg");
    assert!(svg.contains("<svg") && svg.contains("<rect"), "{}", &svg[..200.min(svg.len())]);
    assert!(get(&o, "painted").as_bool().unwrap() && num(&get(&o, "area"), "x1") > num(&get(&o, "area"), "x0"));
    let o = request("", &settings("shaw", 4.0, 8.0, 1.0, 2.0));
    js_sys::Reflect::set(&o, &"file_name".into(), &"bad.npz".into()).unwrap();
    let e = compute(o, Some(b"not a file".to_vec())).await.err().unwrap();
    assert_eq!(named(&e), ("file".into(), "file".into()));
    assert!(set_colormaps("cividis", "purple_green").is_ok());
    assert_eq!(named(&set_colormaps("jet", "red_blue").err().unwrap()).0, "sequential");
    set_colormaps("viridis", "red_blue").unwrap();
}

/// The page's SVG (and the PNG rasterised from it) with tokens holding control characters: XML 1.0
/// cannot carry C0 controls, so each is drawn as a visible stand-in and the SVG stays valid.
#[wasm_bindgen_test]
fn control_characters_in_labels_give_a_valid_svg() {
    let values: Vec<f32> = (0..4).map(|v| v as f32).collect();
    let labels = vec!["a\u{1}".to_string(), "b\u{1b}[31m".to_string()];
    let svg = text(&draw_svg(spec(2, 2, &labels, "t\u{7}"), &values, 470, 430).unwrap(), "svg");
    let bad: Vec<char> = svg.chars().filter(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')).collect();
    assert!(bad.is_empty(), "control characters in the SVG: {bad:?}");
    assert!(svg.contains("a\u{2401}") && svg.contains("t\u{2407}"), "stand-ins missing");
}

#[wasm_bindgen_test]
fn draw_frame_returns_the_plot_area() {
    let doc = web_sys::window().unwrap().document().unwrap();
    let canvas = || {
        let c = doc.create_element("canvas").unwrap().unchecked_into::<web_sys::HtmlCanvasElement>();
        c.set_width(400);
        c.set_height(300);
        c
    };
    let values: Vec<f32> = (0..12).map(|v| v as f32 - 6.0).collect();
    let r = draw_frame(canvas(), spec(3, 4, &[], "t"), &values).unwrap();
    let (x0, x1, y0, y1) = (num(&r, "x0"), num(&r, "x1"), num(&r, "y0"), num(&r, "y1"));
    assert!(x0 < x1 && y0 < y1 && x1 <= 400.0 && y1 <= 300.0, "{x0} {x1} {y0} {y1}");
    assert_eq!(named(&draw_frame(canvas(), spec(5, 5, &[], ""), &values).err().unwrap()).0, "values");
    assert_eq!(named(&draw_frame(canvas(), JsValue::from_str("a figure"), &values).err().unwrap()).0, "figure");
}

/// Property test over the whole control space through the wasm API: a thousand pseudo-random
/// settings, valid and not (n 0, negative, fractional, NaN, ±∞, huge; clip negative; seed huge;
/// unknown methods), give either a trace whose every stage can be cut and coloured, or an `Error`
/// whose `field` names a control; never a panic (a panic would abort this test's wasm instance).
#[wasm_bindgen_test]
async fn property_every_setting_gives_a_trace_or_a_named_error() {
    let state = std::cell::Cell::new(0x5eed_1234_abcd_0042_u64);
    let next = || {
        state.set(state.get().wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
        (state.get() >> 33) as usize
    };
    let weird = [0.0, -1.0, -3.5, 0.5, 2.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e20, -1e20, 4097.0, 4294967296.0, 9007199254740993.0];
    let methods = ["shaw", "music", "", "Shaw", "rnn", "<img src=x onerror=alert(1)>"];
    let controls = ["method", "n", "d_model", "heads", "clip", "seed", "batch_size"];
    let (mut traces, mut errors, mut too_large) = (0, 0, 0);
    for case in 0..1000 {
        let pick = |valid: &[f64]| if next() % 4 == 0 { weird[next() % weird.len()] } else { valid[next() % valid.len()] };
        let method = if case % 10 == 9 { methods[next() % methods.len()] } else { methods[case % 2] };
        let (n, d_model, heads, clip) = (
            pick(&[1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 24.0, 8192.0]),
            pick(&[1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 48.0, 4096.0]),
            pick(&[1.0, 2.0, 3.0, 4.0, 8.0, 64.0]),
            pick(&[0.0, 1.0, 2.0, 3.0, 7.0, 100.0, 8192.0]),
        );
        let batch_size = if next() % 8 == 0 { pick(&[1.0, 2.0, 16.0]) } else { 1.0 };
        let (causal, rel_v, per_head) = (next() % 2 == 0, next() % 2 == 0, next() % 2 == 0);
        let s = settings(method, n, d_model, heads, clip).with(|o| {
            o.seed = Some(pick(&[0.0, 1.0, 42.0, 4294967295.0]));
            o.batch_size = Some(batch_size);
            (o.causal, o.relative_values, o.per_head_tables) = (Some(causal), Some(rel_v), Some(per_head));
        });
        let label = format!("case {case}: {s:?}");
        let whole = |v: f64, hi: usize, lo: f64| v.fract() == 0.0 && (lo..=hi as f64).contains(&v);
        // A large trace that fits the budget would be slow here, not wrong: those are left to the e2e test.
        if (n > 64.0 || d_model > 64.0)
            && whole(n, LIMITS.n, 1.0)
            && whole(d_model, LIMITS.d_model, 1.0)
            && whole(heads, LIMITS.heads, 1.0)
            && whole(clip, LIMITS.clip, 0.0)
        {
            let cfg = Config {
                method: if method == "music" { Method::Music } else { Method::Shaw },
                heads: heads as usize,
                clip: clip as usize,
                causal,
                rel_v,
                ..Config::default()
            };
            let sp = Spec { n: n as usize, d_model: d_model as usize, batch: batch_size.max(1.0) as usize, seed: 0 };
            if page_bytes(&cfg, &sp, per_head, None).is_some_and(|b| b <= MEMORY_LIMIT) {
                continue;
            }
        }
        match run("", &s).await {
            Ok(mut session) => {
                traces += 1;
                let set = get(&session.info().unwrap(), "options");
                assert_eq!(num(&set, "n"), n, "{label}");
                let heads = num(&set, "heads") as usize;
                for i in 0..stage_names(&session).len() {
                    let cut = session.select(i, 0, heads - 1, JsValue::UNDEFINED).unwrap_or_else(|e| panic!("{label}: stage {i}: {e:?}"));
                    let cells = num(&cut, "rows") * num(&cut, "cols");
                    let sent = if get(&cut, "has_values").as_bool().unwrap() { cells } else { 0.0 };
                    assert_eq!(session.values_len() as f64, sent, "{label}");
                    assert_eq!(session.rgba_len() as f64, num(&cut, "raster_rows") * num(&cut, "raster_cols") * 4.0, "{label}");
                }
                assert!(session.select(0, 0, heads, JsValue::UNDEFINED).is_err(), "{label}: a head out of range");
            }
            Err(e) => {
                errors += 1;
                let (field, kind) = named(&e);
                assert!(controls.contains(&field.as_str()), "{label}: error names {field:?}");
                assert!(!text(&e, "message").is_empty(), "{label}");
                if kind == "too_large" {
                    too_large += 1;
                    assert_eq!(field, "n", "{label}");
                    let message = text(&e, "message");
                    assert!(message.contains("GiB") && message.contains("limit"), "{label}: {message}");
                }
            }
        }
    }
    assert!(traces >= 50 && errors >= 50 && too_large >= 1, "traces {traces}, errors {errors}, too large {too_large}");
}

#[wasm_bindgen_test]
async fn the_memory_budget_refuses_every_big_setting_before_allocating() {
    let before = memory_bytes();
    // The largest settings the controls allow, for both methods: refused with the estimate, the limit and a smaller n.
    for method in ["shaw", "music"] {
        let big = settings(method, 8192.0, 4096.0, 64.0, 8192.0).with(|o| {
            o.per_head_tables = Some(true);
            o.batch_size = Some(16.0);
        });
        let e = run("", &big).await.err().unwrap();
        assert_eq!(named(&e), ("n".into(), "too_large".into()));
        let m = text(&e, "message");
        assert!(m.contains("1.50 GiB") && m.contains("use n ≤"), "{m}");
        let e = run(
            "",
            &settings(method, 8192.0, 4096.0, 8.0, 3.0).with(|o| {
                o.per_head_tables = Some(true);
                o.batch_size = Some(4.0);
            }),
        )
        .await
        .err()
        .unwrap();
        assert_eq!(named(&e).0, "n");
    }
    // The refused settings need 1.5 GiB and more; the requests' own small allocations may grow the memory by a
    // page or so, depending on what the tests before left in the heap.
    let grown = memory_bytes() - before;
    assert!(grown < (1 << 20) as f64, "a refused trace allocated: the memory grew by {grown} bytes");
    // The estimate grows with every size, so the largest accepted n of each setting is below the limit.
    let cfg = Config { method: Method::Music, heads: 2, clip: 4096, rel_v: true, ..Config::default() };
    let mut last = 0;
    for n in [1, 16, 256, 1024, 4096, 8192] {
        let b = page_bytes(&cfg, &Spec { n, d_model: 64, batch: 1, seed: 0 }, true, None).unwrap();
        assert!(b > last);
        last = b;
    }
}

/// The atlas of a tiny random Llama (tests/fixtures), read in the browser: its view, its grid as SVG and HTML
/// in the page's colormap (the HTML in viridis, as the command line writes it), a head's chart; a truncated
/// copy, and a capture file, are no atlas: refused with field and kind "file", or not recognised.
#[wasm_bindgen_test]
fn an_atlas_opens_draws_and_refuses_a_truncated_copy() {
    use relattn_wasm::atlas::{atlas_height, atlas_html, atlas_svg, is_atlas, open_atlas};
    let bytes = include_bytes!("../../../tests/fixtures/atlas-tiny-llama.atlas.npz");
    assert!(is_atlas(bytes) && !is_atlas(&bytes[..bytes.len() / 2]));
    let atlas = open_atlas(bytes, "tiny.atlas.npz").unwrap_or_else(|_| panic!("the fixture opens"));
    let view = atlas.view().unwrap();
    assert_eq!(js_sys::Array::from(&get(&view, "rows")).length(), 4);
    assert!(text(&view, "title").starts_with("tiny-llama (llama): 4 layers × 8 heads"));
    let spec = |metric: &str| relattn_wasm::to_value(&serde_json::json!({ "metric": metric, "order": "kv_head", "width": 800 })).unwrap();
    assert!(atlas_height(view.clone(), spec("entropy")).unwrap() > 200);
    set_colormaps("cividis", "red_blue").unwrap();
    let cividis = atlas_svg(view.clone(), spec("entropy")).unwrap();
    let html = atlas_html(view.clone(), spec("entropy")).unwrap();
    set_colormaps("viridis", "red_blue").unwrap();
    assert_ne!(cividis, atlas_svg(view.clone(), spec("entropy")).unwrap(), "the page's colormap colours the SVG");
    assert_eq!(html, atlas_html(view.clone(), spec("entropy")).unwrap(), "the HTML is the command line's, whatever the colormap");
    assert_eq!(named(&atlas_svg(view, spec("sinkiness")).unwrap_err()), ("metric".to_string(), "invalid".to_string()));
    let chart = atlas.head_chart(1, 3).unwrap();
    assert!(text(&chart, "title").starts_with("decoder layer 1, head 3"));
    assert_eq!(named(&atlas.head_chart(9, 0).err().unwrap()), ("atlas row".to_string(), "invalid".to_string()));
    let Err(e) = open_atlas(&bytes[..bytes.len() / 2], "cut.atlas.npz") else { panic!("a truncated atlas opened") };
    assert_eq!(named(&e), ("file".to_string(), "file".to_string()));
}
