//! The page's application natively (src/app/, `cargo test`): Parameters mode's requests in, typed sessions
//! out — every stage cut and coloured, exact cells, a table row's readers, errors that name the control, the
//! page's memory budget — and every scheme side by side. crates/relattn-wasm/tests/web.rs checks the wasm shells around it in a
//! browser (JavaScript values, pointers into the wasm memory, a request's unknown keys).

use relattn::app::compare::compare;
use relattn::app::request::{page_bytes, scheme_options, LIMITS, MEMORY_LIMIT};
use relattn::app::session::{compute, Session};
use relattn::app::Cpu;
use relattn::attention::Config;
use relattn::error::{Error, ErrorKind};
use relattn::layer::scenario::Spec;
use relattn::layer::stage_meta::StageMeta;
use relattn::options::LayerOptions;
use relattn::positions::Method;
use relattn::protocol::{Compared, Cut, Request};
use relattn::render::Palette;

/// The options of the page's controls.
fn settings(method: Method, n: f64, d_model: f64, heads: f64, clip: f64) -> LayerOptions {
    LayerOptions {
        method: Some(method),
        n: Some(n),
        d_model: Some(d_model),
        heads: Some(heads),
        clip: Some(clip),
        seed: Some(0.0),
        batch_size: Some(1.0),
        relative_values: Some(true),
        ..LayerOptions::default()
    }
}

fn request(options: LayerOptions, tokens: &[&str]) -> Request {
    let mut r: Request = serde_json::from_value(serde_json::json!({ "backend": "cpu", "options": {} })).unwrap();
    (r.options, r.tokens) = (options, tokens.iter().map(|t| t.to_string()).collect());
    r
}

fn run(options: LayerOptions) -> relattn::Result<Session> {
    pollster::block_on(compute(&Cpu, &request(options, &[]), None))
}

fn preset(name: &str) -> Session {
    run(LayerOptions { preset: Some(name.into()), ..LayerOptions::default() }).unwrap()
}

fn field(e: &Error) -> (&str, ErrorKind) {
    (e.field(), e.kind())
}

fn stage_index(s: &Session, name: &str) -> usize {
    s.info().stages.iter().position(|m| m.name == name).unwrap_or_else(|| panic!("no {name}"))
}

fn select(s: &mut Session, name: &str, batch: usize, head: usize) -> (Cut, Vec<f32>, usize) {
    let i = stage_index(s, name);
    let cut = s.cut(i, batch, head, Palette::default()).unwrap();
    let (values, rgba) = s.selected().unwrap();
    (cut, values.to_vec(), rgba.len())
}

#[test]
fn seed004_relative_logits_match_the_seed() {
    let s = preset("seed004");
    let o = &s.info().options;
    assert_eq!((o.batch_size, o.heads, o.n, o.clip), (Some(2.0), Some(3.0), Some(4.0), Some(2.0)));
    assert!(s.info().preset_description.contains("004"), "{}", s.info().preset_description);
    let rel = &s.trace().unwrap().relative_logits;
    assert_eq!((0..4).map(|j| rel[[0, 0, 0, j]]).collect::<Vec<_>>(), vec![44.0, 23.0, 18.0, 18.0]);
    assert_eq!((rel[[0, 0, 1, 0]], rel[[0, 0, 1, 1]]), (-29.0, 129.0));
}

/// Every stage comes with its metadata from relattn-core's src/layer/stage_meta.rs: the page spells none of it.
#[test]
fn info_carries_the_stage_metadata() {
    let mut s = run(LayerOptions { causal: Some(true), ..settings(Method::Music, 6.0, 8.0, 2.0, 3.0) }).unwrap();
    let by = |name: &str| -> StageMeta { s.info().stages.iter().find(|m| m.name == name).unwrap().clone() };
    let rel = by("relative_logits");
    assert!(rel.tex.contains(r"\operatorname{Skew}"));
    assert_eq!((rel.x_axis, rel.y_axis), ("key j", "query i"));
    assert!(rel.pairs && rel.per_head);
    assert!(!by("distances").per_head && !by("output").per_head);
    assert_eq!(s.info().backend.name, "CPU");
    let (cut, _, _) = select(&mut s, "skew_padded", 0, 1);
    assert_eq!((cut.rows, cut.cols), (6, 7));
    assert!(cut.lo <= cut.hi);
}

/// The (batch, head) asked is clamped into the layer's: the page and its worker clamp nothing.
#[test]
fn shown_for_clamps_the_asked_slice() {
    let s = preset("seed004"); // batch 2, heads 3
    let shown = |b, h| {
        let v = s.shown_for(b, h);
        (v.batch, v.head)
    };
    assert_eq!(shown(1, 2), (1, 2));
    assert_eq!(shown(5, 9), (1, 2));
    assert_eq!(shown(-1, -4), (0, 0));
}

/// The options the page's controls follow (`scheme_options`: the rest are disabled or hidden) are exactly the
/// ones a method's layer reads: changing one changes the output where the method's flag says, nowhere else.
#[test]
fn scheme_options_are_the_options_each_method_reads() {
    let output = |o: LayerOptions| -> relattn::Result<Vec<f32>> { Ok(run(o)?.trace().unwrap().output.iter().copied().collect()) };
    for method in Method::ALL {
        let flags = scheme_options(method);
        let base = LayerOptions { relative_values: Some(false), ..settings(method, 8.0, 16.0, 2.0, 3.0) };
        let out = output(base.clone()).unwrap();
        let variants = [
            ("clip", flags.clip, LayerOptions { clip: Some(5.0), ..base.clone() }),
            ("rel_v", flags.rel_v, LayerOptions { relative_values: Some(true), ..base.clone() }),
            ("per_head", flags.per_head, LayerOptions { per_head_tables: Some(true), ..base.clone() }),
            ("rope", flags.rope, LayerOptions { rope_base: Some(100.0), ..base.clone() }),
            ("buckets", flags.buckets, LayerOptions { t5_buckets: Some(8.0), ..base.clone() }),
            ("edge", flags.edge, LayerOptions { edge: Some(relattn::Edge::Clip), clip: Some(1.0), ..base.clone() }),
        ];
        for (flag, reads, changed) in variants {
            let base_out = if flag == "edge" { output(LayerOptions { clip: Some(1.0), ..base.clone() }).unwrap() } else { out.clone() };
            match output(changed) {
                Ok(o) => assert_eq!(o != base_out, reads, "{method}: {flag}"),
                // A value term the method cannot have is refused, by its field.
                Err(e) => assert_eq!((e.field(), reads), ("rel_v", false), "{method}: {flag}"),
            }
        }
    }
}

#[test]
fn a_cut_has_its_values_and_pixels() {
    let mut s =
        run(LayerOptions { causal: Some(true), relative_values: Some(false), seed: Some(7.0), ..settings(Method::Music, 16.0, 32.0, 2.0, 4.0) }).unwrap();
    let (cut, values, pixels) = select(&mut s, "weights", 0, 1);
    assert_eq!((cut.rows, cut.cols), (16, 16));
    assert_eq!((values.len(), pixels), (256, 1024));
    let row0: f32 = values[..16].iter().sum();
    assert!((row0 - 1.0).abs() < 1e-5, "weights of row 0 sum to {row0}");
    assert_eq!(values[1], 0.0, "causal: key 1 is masked for query 0");
    assert!(s.timings().len() >= 3);
    let names: Vec<&str> = s.info().stage_times.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["projections", "content_logits", "relative_logits", "scale_mask", "logits", "softmax", "values", "output"]);
    assert!(s.info().stage_times.iter().all(|t| t.ms.is_finite() && t.ms >= 0.0));
}

#[test]
fn bad_input_names_the_field_and_the_kind() {
    let bad = |n: f64, d: f64, h: f64| run(settings(Method::Shaw, n, d, h, 2.0)).err().map(|e| e.field().to_string());
    assert_eq!(bad(0.0, 16.0, 1.0).as_deref(), Some("n"));
    assert_eq!(bad(9000.0, 16.0, 1.0).as_deref(), Some("n"));
    assert_eq!(bad(8.0, 16.0, 3.0).as_deref(), Some("heads"));
    assert_eq!(bad(f64::NAN, 16.0, 1.0).as_deref(), Some("n"));
    let e = run(LayerOptions { batch_size: Some(0.0), ..settings(Method::Shaw, 4.0, 8.0, 1.0, 2.0) }).err().unwrap();
    assert_eq!(field(&e), ("batch_size", ErrorKind::Invalid));
    let e = run(LayerOptions { preset: Some("seed999".into()), ..LayerOptions::default() }).err().unwrap();
    assert_eq!(field(&e), ("preset", ErrorKind::Invalid));
    // An option the page does not have is refused by name, with the list.
    let mut r: Request = serde_json::from_value(serde_json::json!({ "options": { "n": 4, "temperature": 1 } })).unwrap();
    r.backend = Default::default();
    let e = pollster::block_on(compute(&Cpu, &r, None)).err().unwrap();
    assert_eq!(e.field(), "option");
    assert!(e.to_string().contains("'temperature'"), "{e}");
}

/// A stage larger than the raster's side is pooled for the screen; past VALUES_CELLS its values are not sent
/// and `read_cells` reads them exactly; bad ranges name "cells".
#[test]
fn a_large_stage_has_a_pooled_raster_and_cells_on_request() {
    let mut s = run(settings(Method::Shaw, 1200.0, 8.0, 1.0, 16.0)).unwrap();
    let w = stage_index(&s, "weights");
    let (cut, values, pixels) = select(&mut s, "weights", 0, 0);
    assert_eq!((cut.rows, cut.cols, cut.raster_rows, cut.raster_cols), (1200, 1200, 400, 400));
    assert!(!cut.has_values);
    assert_eq!((values.len(), pixels), (0, 400 * 400 * 4));
    let got = s.read_cells(w, 0, 0, 600..602, 17..20).unwrap();
    let want: Vec<f32> = s.trace().unwrap().weights.slice(ndarray::s![0, 0, 600..602, 17..20]).iter().copied().collect();
    assert_eq!(got, want);
    for (rows, cols) in [(1199..1201, 0..1), (0..0, 0..1), (0..1200, 0..1200)] {
        assert_eq!(s.read_cells(w, 0, 0, rows.clone(), cols.clone()).err().unwrap().field(), "cells", "{rows:?} {cols:?}");
    }
    assert_eq!(s.read_cells(99, 0, 0, 0..1, 0..1).err().unwrap().field(), "stage");
}

/// Reverse linking: the keys of each query that read a table row are the pairs whose rel_index is that row;
/// a row past the table names "row".
#[test]
fn table_readers_are_the_pairs_whose_rel_index_is_the_row() {
    for (method, causal, clip) in
        [(Method::Shaw, false, 2.0), (Method::Shaw, true, 0.0), (Method::Music, true, 3.0), (Method::Music, false, 2.0), (Method::T5, true, 2.0)]
    {
        let s = run(LayerOptions { causal: Some(causal), ..settings(method, 9.0, 8.0, 2.0, clip) }).unwrap();
        let t = s.trace().unwrap();
        let rows = t.config.table_rows();
        for r in 0..rows {
            let runs = s.table_readers(r).unwrap();
            assert_eq!(runs.len(), 2 * 9);
            for (i, keys) in runs.chunks(2).enumerate() {
                let want: Vec<usize> = (0..9).filter(|&j| t.rel_index[[i, j]] == r as i64).collect();
                assert_eq!((keys[0] as usize..keys[1] as usize).collect::<Vec<_>>(), want, "{method} causal {causal}: row {r}, query {i}");
            }
        }
        let e = s.table_readers(rows).err().unwrap();
        assert_eq!(e.field(), "row");
        assert!(e.to_string().contains(&format!("0..={}", rows - 1)), "{e}");
    }
}

/// Past WHOLE_LIMIT a layer is held on demand: the stages of the (batch, head) selected are computed when
/// selected, equal to the same head of a layer computed whole; the export is refused with a reason.
#[test]
fn a_layer_too_large_to_hold_whole_computes_the_head_shown() {
    let options = LayerOptions { batch_size: Some(2.0), ..settings(Method::Shaw, 700.0, 64.0, 16.0, 8.0) };
    let mut s = run(options.clone()).unwrap();
    assert!(s.info().on_demand && s.trace().is_none());
    let e = s.npz().err().unwrap();
    assert!(e.field() == "export" && e.to_string().contains("relattn compute"), "{e}");
    // The same layer, whole, from the library (the page holds it on demand only for its memory).
    let cfg = Config { method: Method::Shaw, heads: 16, clip: 8, rel_v: true, ..Config::default() };
    let spec = Spec { n: 700, d_model: 64, batch: 2, seed: 0 };
    let sc = relattn::Scenario::build(&cfg, &spec, Default::default(), false).unwrap();
    let whole = relattn::layer::forward::trace(&cfg, &sc).unwrap();
    let (b, h) = (1, 11);
    let close = |g: f32, w: f32| (g - w).abs() <= 1e-5 * w.abs().max(1.0);
    for name in ["weights", "relative_logits", "value_buckets", "rel_index", "output"] {
        let i = stage_index(&s, name);
        let want = whole.stage(name.parse().unwrap(), b, h).unwrap();
        let (cut, _, _) = select(&mut s, name, b, h);
        assert_eq!((cut.rows, cut.cols), want.dim(), "{name}");
        let (rows, cols) = want.dim();
        for (r0, c0) in [(0, 0), (rows / 2, cols / 2 - 1), (rows - 2, cols - 2)] {
            let got = s.read_cells(i, b, h, r0..r0 + 2, c0..c0 + 2).unwrap();
            let w: Vec<f32> = want.slice(ndarray::s![r0..r0 + 2, c0..c0 + 2]).iter().copied().collect();
            assert!(got.iter().zip(&w).all(|(g, w)| close(*g, *w)), "{name} at ({r0}, {c0}): {got:?} vs {w:?}");
        }
    }
}

/// Every scheme's layer held on demand cuts every stage of a head (ALiBi's and T5's panicked in the page:
/// their output stages were sized as their one-column bias table), each stage's last row as the layer computed
/// whole by the library has it.
#[test]
fn every_scheme_held_on_demand_cuts_every_stage() {
    for method in Method::ALL {
        // BERT's table covers this n.
        let options = LayerOptions { max_position: Some(1100.0), ..settings(method, 1100.0, 64.0, 2.0, 4.0) };
        let mut s = run(options.clone()).unwrap();
        assert!(s.info().on_demand, "{method}: held whole");
        let r = options.resolve(&relattn::options::Limits::NONE).unwrap();
        let sc = relattn::Scenario::build(&r.config, &r.spec, r.arrays, r.per_head_tables).unwrap();
        let whole = relattn::layer::forward::trace(&r.config, &sc).unwrap();
        let names: Vec<&str> = s.info().stages.iter().map(|m| m.name).collect();
        for (i, name) in names.iter().enumerate() {
            let cut = s.cut(i, 0, 1, Palette::default()).unwrap_or_else(|e| panic!("{method} {name}: {e}"));
            let want = whole.stage(name.parse().unwrap(), 0, 1).unwrap();
            assert_eq!((cut.rows, cut.cols), want.dim(), "{method} {name}");
            let got = s.read_cells(i, 0, 1, cut.rows - 1..cut.rows, 0..cut.cols).unwrap();
            let close = |g: &f32, w: &f32| (g - w).abs() <= 1e-5 * w.abs().max(1.0) || (g.is_infinite() && g == w);
            assert!(got.iter().zip(want.row(cut.rows - 1)).all(|(g, w)| close(g, w)), "{method} {name}: the last row");
        }
    }
}

#[test]
fn a_batch_and_a_sentence_give_their_x() {
    let s = run(LayerOptions { batch_size: Some(3.0), ..settings(Method::Shaw, 5.0, 8.0, 2.0, 2.0) }).unwrap();
    assert_eq!(s.info().options.batch_size, Some(3.0));
    let x = &s.trace().unwrap().x;
    assert_eq!(x.dim(), (3, 5, 8));
    assert_ne!(x.index_axis(ndarray::Axis(0), 0), x.index_axis(ndarray::Axis(0), 2));
    // A sentence: one seeded vector per distinct token, n its length, equal content logits for a repeated token.
    let tokens = ["the", "cat", "saw", "the", "dog"];
    let sentence = |seed: f64| {
        let r = request(LayerOptions { seed: Some(seed), ..settings(Method::Shaw, 3.0, 8.0, 2.0, 2.0) }, &tokens);
        pollster::block_on(compute(&Cpu, &r, None)).unwrap()
    };
    let s = sentence(0.0);
    let t = s.trace().unwrap();
    assert_eq!(t.x.dim(), (1, 5, 8));
    assert_eq!(t.x.slice(ndarray::s![0, 0, ..]), t.x.slice(ndarray::s![0, 3, ..]), "both 'the' rows");
    for j in 0..5 {
        assert_eq!(t.content_logits[[0, 1, 0, j]], t.content_logits[[0, 1, 3, j]], "query 'the' at 0 and 3, key {j}");
    }
    assert_eq!((s.info().options.n, s.info().tokens.len()), (Some(5.0), 5));
    assert_eq!(sentence(0.0).trace().unwrap().x, t.x);
    assert_ne!(sentence(1.0).trace().unwrap().x, t.x);
}

/// The hand-built heads do what their description says; the relative term alone leaves the content out.
#[test]
fn built_heads_and_the_relative_term_alone() {
    let s = preset("built-heads");
    let w = &s.trace().unwrap().weights;
    for i in 1..11 {
        assert!(w[[0, 0, i, i - 1]] > 0.95 && w[[0, 1, i, i + 1]] > 0.95, "row {i}");
    }
    assert_eq!(s.info().options.relative_only, Some(true));
    let s = run(LayerOptions { relative_only: Some(true), causal: Some(true), ..settings(Method::Music, 7.0, 8.0, 2.0, 3.0) }).unwrap();
    let t = s.trace().unwrap();
    assert!(t.content_logits.iter().all(|v| *v == 0.0));
    for (i, j) in [(3, 1), (6, 0), (5, 5)] {
        assert!((t.logits[[0, 1, i, j]] - t.relative_logits[[0, 1, i, j]] * 0.5).abs() < 1e-6, "({i}, {j})");
    }
    let content = s.info().stages.iter().find(|m| m.name == "content_logits").unwrap();
    assert!(content.title.contains("off"), "{}", content.title);
    // Unscaled logits (T5's): the logits are the relative logits as they are.
    let s = run(LayerOptions {
        relative_only: Some(true),
        causal: Some(true),
        logit_scale: Some(relattn::attention::LogitScale::None),
        ..settings(Method::Music, 7.0, 8.0, 2.0, 3.0)
    })
    .unwrap();
    let t = s.trace().unwrap();
    assert!((t.logits[[0, 1, 3, 1]] - t.relative_logits[[0, 1, 3, 1]]).abs() < 1e-6);
    assert!(s.info().stages.iter().any(|m| m.name == "logits" && m.notice.starts_with("Not scaled")));
}

/// A left-padded causal file: the page's info says which query rows see no key, per batch element.
#[test]
fn queries_that_see_no_key_are_said_per_batch_element() {
    let mut npz = ndarray_npy::NpzWriter::new(std::io::Cursor::new(Vec::new()));
    npz.add_array("x", &ndarray::Array3::<f32>::from_shape_fn((2, 4, 8), |(b, i, c)| (b + i * c) as f32 / 9.0)).unwrap();
    npz.add_array("key_mask", &ndarray::arr2(&[[0f32, 1., 1., 1.], [0., 0., 0., 1.]])).unwrap();
    let bytes = npz.finish().unwrap().into_inner();
    let mut r = request(LayerOptions { causal: Some(true), heads: Some(2.0), ..LayerOptions::default() }, &[]);
    r.file_name = "left-padded.npz".into();
    let s = pollster::block_on(compute(&Cpu, &r, Some(bytes))).unwrap();
    assert_eq!(s.info().unattended, vec!["row 0 sees no key (all padding): weight 0", "rows 0–2 see no key (all padding): weight 0"]);
    assert!(run(settings(Method::Shaw, 4.0, 8.0, 2.0, 2.0)).unwrap().info().unattended.is_empty(), "no key mask, nothing to say");
}

#[test]
fn files_and_exports() {
    assert!(preset("seed004").npz().unwrap().starts_with(b"PK"));
    let mut r = request(settings(Method::Shaw, 4.0, 8.0, 1.0, 2.0), &[]);
    r.file_name = "bad.npz".into();
    let e = pollster::block_on(compute(&Cpu, &r, Some(b"not a file".to_vec()))).err().unwrap();
    assert_eq!(field(&e), ("file", ErrorKind::File));
    // A file's x with a size of 0 is the file's fault: field `x`, not `n` or `heads`.
    use ndarray_npy::WriteNpyExt;
    for shape in [[0, 4], [5, 0]] {
        let mut bytes = Vec::new();
        ndarray::Array2::<f32>::zeros(shape).write_npy(&mut bytes).unwrap();
        r.file_name = "x.npy".into();
        let e = pollster::block_on(compute(&Cpu, &r, Some(bytes))).err().unwrap();
        assert_eq!(field(&e), ("x", ErrorKind::Shape), "{shape:?}");
    }
}

/// A thousand pseudo-random settings, valid and not (n 0, negative, fractional, NaN, ±∞, huge; clip negative;
/// seed huge), give either a session whose every stage can be cut and coloured, or an error whose field names
/// a control; never a panic.
#[test]
fn property_every_setting_gives_a_session_or_a_named_error() {
    let state = std::cell::Cell::new(0x5eed_1234_abcd_0042_u64);
    let next = || {
        state.set(state.get().wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
        (state.get() >> 33) as usize
    };
    let weird = [0.0, -1.0, -3.5, 0.5, 2.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e20, -1e20, 4097.0, 4294967296.0, 9007199254740993.0];
    let controls = ["n", "d_model", "heads", "clip", "seed", "batch_size"];
    let (mut sessions, mut errors, mut too_large) = (0, 0, 0);
    for case in 0..1000 {
        let pick = |valid: &[f64]| if next() % 4 == 0 { weird[next() % weird.len()] } else { valid[next() % valid.len()] };
        let method = [Method::Shaw, Method::Music][case % 2];
        let (n, d_model, heads, clip) = (
            pick(&[1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 24.0, 8192.0]),
            pick(&[1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 48.0, 4096.0]),
            pick(&[1.0, 2.0, 3.0, 4.0, 8.0, 64.0]),
            pick(&[0.0, 1.0, 2.0, 3.0, 7.0, 100.0, 8192.0]),
        );
        let batch_size = if next() % 8 == 0 { pick(&[1.0, 2.0, 16.0]) } else { 1.0 };
        let (causal, rel_v, per_head) = (next() % 2 == 0, next() % 2 == 0, next() % 2 == 0);
        let options = LayerOptions {
            seed: Some(pick(&[0.0, 1.0, 42.0, 4294967295.0])),
            batch_size: Some(batch_size),
            causal: Some(causal),
            relative_values: Some(rel_v),
            per_head_tables: Some(per_head),
            ..settings(method, n, d_model, heads, clip)
        };
        let label = format!("case {case}: {options:?}");
        let whole = |v: f64, hi: usize, lo: f64| v.fract() == 0.0 && (lo..=hi as f64).contains(&v);
        // A large layer that fits the budget would be slow here, not wrong: those are left to the e2e test.
        if (n > 64.0 || d_model > 64.0)
            && whole(n, LIMITS.n, 1.0)
            && whole(d_model, LIMITS.d_model, 1.0)
            && whole(heads, LIMITS.heads, 1.0)
            && whole(clip, LIMITS.clip, 0.0)
        {
            let cfg = Config { method, heads: heads as usize, clip: clip as usize, causal, rel_v, ..Config::default() };
            let spec = Spec { n: n as usize, d_model: d_model as usize, batch: batch_size.max(1.0) as usize, seed: 0 };
            if page_bytes(&cfg, &spec, per_head, None).is_some_and(|b| b <= MEMORY_LIMIT) {
                continue;
            }
        }
        match run(options) {
            Ok(mut s) => {
                sessions += 1;
                assert_eq!(s.info().options.n, Some(n), "{label}");
                let heads = s.info().options.heads.unwrap() as usize;
                for i in 0..s.info().stages.len() {
                    let cut = s.cut(i, 0, heads - 1, Palette::default()).unwrap_or_else(|e| panic!("{label}: stage {i}: {e}"));
                    let (values, rgba) = s.selected().unwrap();
                    assert_eq!(values.len(), if cut.has_values { cut.rows * cut.cols } else { 0 }, "{label}");
                    assert_eq!(rgba.len(), cut.raster_rows * cut.raster_cols * 4, "{label}");
                }
                assert!(s.cut(0, 0, heads, Palette::default()).is_err(), "{label}: a head out of range");
            }
            Err(e) => {
                errors += 1;
                assert!(controls.contains(&e.field()), "{label}: error names {:?}: {e}", e.field());
                if e.kind() == ErrorKind::TooLarge {
                    too_large += 1;
                    assert_eq!(e.field(), "n", "{label}");
                    assert!(e.to_string().contains("GiB") && e.to_string().contains("limit"), "{label}: {e}");
                }
            }
        }
    }
    assert!(sessions >= 50 && errors >= 50 && too_large >= 1, "sessions {sessions}, errors {errors}, too large {too_large}");
}

#[test]
fn the_memory_budget_refuses_every_big_setting() {
    for method in [Method::Shaw, Method::Music] {
        let big = LayerOptions { per_head_tables: Some(true), batch_size: Some(16.0), ..settings(method, 8192.0, 4096.0, 64.0, 8192.0) };
        let e = run(big).err().unwrap();
        assert_eq!(field(&e), ("n", ErrorKind::TooLarge));
        assert!(e.to_string().contains("1.50 GiB") && e.to_string().contains("use n ≤"), "{e}");
        let e = run(LayerOptions { per_head_tables: Some(true), batch_size: Some(4.0), ..settings(method, 8192.0, 4096.0, 8.0, 3.0) }).err().unwrap();
        assert_eq!(e.field(), "n");
    }
    // The estimate grows with every size, so the largest accepted n of each setting is below the limit.
    let cfg = Config { method: Method::Music, heads: 2, clip: 4096, rel_v: true, ..Config::default() };
    let mut last = 0;
    for n in [1, 16, 256, 1024, 4096, 8192] {
        let b = page_bytes(&cfg, &Spec { n, d_model: 64, batch: 1, seed: 0 }, true, None).unwrap();
        assert!(b > last);
        last = b;
    }
}

/// Every scheme on one input: each its own weights (rows summing to 1), in Method::ALL's order; a preset or a
/// sequence past MAX_COMPARE_N is refused by name.
#[test]
fn the_schemes_side_by_side() {
    let r = request(settings(Method::Shaw, 12.0, 32.0, 2.0, 3.0), &[]);
    let views = compare(&r, 0, 1, Compared::Weights, Palette::default()).unwrap();
    assert_eq!(views.iter().map(|v| v.method.as_str()).collect::<Vec<_>>(), Method::ALL.map(Method::name));
    // A sequence past BERT relative's max_position leaves its panel out (its table has no row for it).
    let short = LayerOptions { max_position: Some(11.0), ..settings(Method::Shaw, 12.0, 32.0, 2.0, 3.0) };
    let others = compare(&request(short, &[]), 0, 1, Compared::Weights, Palette::default()).unwrap();
    let compared: Vec<&str> = Method::ALL.into_iter().filter(|m| *m != Method::BertRelative).map(Method::name).collect();
    assert_eq!(others.iter().map(|v| v.method.as_str()).collect::<Vec<_>>(), compared);
    for v in &views {
        let values = v.values.as_ref().unwrap();
        assert_eq!((v.cut.rows, v.cut.cols, values.len()), (12, 12, 144));
        assert!((values[..12].iter().sum::<f32>() - 1.0).abs() < 1e-5, "{}", v.method);
        assert!((v.profile.iter().sum::<f32>() - 1.0).abs() < 1e-4, "{}", v.method);
    }
    assert_ne!(views[0].values, views[1].values);
    let preset = request(LayerOptions { preset: Some("seed004".into()), ..LayerOptions::default() }, &[]);
    assert_eq!(compare(&preset, 0, 0, Compared::Weights, Palette::default()).err().unwrap().field(), "compare");
    let long = request(settings(Method::Shaw, 4096.0, 8.0, 1.0, 2.0), &[]);
    assert_eq!(compare(&long, 0, 0, Compared::Weights, Palette::default()).err().unwrap().field(), "n");
}

/// Every scheme's position term side by side (#40 item 5): each scheme's own stage (Method::term_stage: the
/// relative logits or bias, RoPE's kernel; the absolute vectors' similarity), its mean by distance, the masked
/// keys grey. DeBERTa's is c2p + p2c, the sum of its session's two stages on the same options.
#[test]
fn the_schemes_position_terms_side_by_side() {
    let options = LayerOptions { causal: Some(true), ..settings(Method::Shaw, 10.0, 32.0, 4.0, 3.0) };
    let views = compare(&request(options.clone(), &[]), 0, 0, Compared::Term, Palette::default()).unwrap();
    let stages: Vec<&str> = views.iter().map(|v| v.meta.name).collect();
    let expected: Vec<&str> = Method::ALL.into_iter().map(|m| m.term_stage().map_or("absolute_similarity", |s| s.name())).collect();
    assert_eq!(stages, expected);
    let view = |name: &str| views.iter().find(|v| v.method == name).unwrap();
    let alibi = view("alibi");
    let values = alibi.values.as_ref().unwrap();
    // ALiBi's bias at distance d is m_0·d (m_0 = 1/4 with 4 heads): its mean by distance is exactly that.
    for d in -9..=0isize {
        assert!((alibi.profile[(d + 9) as usize] - 0.25 * d as f32).abs() < 1e-6, "d {d}");
    }
    assert_eq!(alibi.profile[9 + 1], 0.0, "masked distances count for nothing");
    assert!(values[9] > 0.0, "the masked bias keeps its value");
    let rope = view("rope");
    assert!((rope.profile[9] - 1.0).abs() < 1e-6, "RoPE's kernel is 1 at d = 0");
    let deberta = view("deberta").values.as_ref().unwrap();
    let mut s = run(LayerOptions { method: Some(Method::Deberta), ..options }).unwrap();
    let (c2p, p2c) = (select(&mut s, "c2p", 0, 0).1, select(&mut s, "p2c", 0, 0).1);
    for (k, v) in deberta.iter().enumerate() {
        assert!((v - (c2p[k] + p2c[k])).abs() <= 1e-5 * (1.0 + v.abs()), "cell {k}: {v} against {} + {}", c2p[k], p2c[k]);
    }
}

/// Keys after the query get no weight (#40 item 3): in a causal layer the pairs' stages say so in their
/// metadata, their cells above the diagonal are grey in the raster and out of the colour range (the ALiBi bias
/// of those keys, up to +m·(n − 1), no longer sets its scale), and their values stay what they are; a key mask
/// greys its padded keys the same way.
#[test]
fn masked_cells_are_grey_and_out_of_the_colour_range() {
    let grey = relattn::render::MASKED;
    let pixel = |rgba: &[u8], cols: usize, i: usize, j: usize| [rgba[(i * cols + j) * 4], rgba[(i * cols + j) * 4 + 1], rgba[(i * cols + j) * 4 + 2]];
    let n = 6;
    let mut s = run(LayerOptions { causal: Some(true), ..settings(Method::Alibi, n as f64, 16.0, 2.0, 2.0) }).unwrap();
    for name in ["content_logits", "relative_logits", "logits", "weights"] {
        let meta = &s.info().stages[stage_index(&s, name)];
        assert!(meta.masked_above, "{name}");
        let (cut, values, _) = select(&mut s, name, 0, 0);
        let (_, rgba) = s.selected().unwrap();
        assert_eq!(pixel(rgba, n, 0, n - 1), grey, "{name}: (0, n − 1) is masked");
        assert_ne!(pixel(rgba, n, n - 1, 0), grey, "{name}: (n − 1, 0) is not");
        let visible: Vec<f32> = (0..n).flat_map(|i| (0..=i).map(move |j| (i, j))).map(|(i, j)| values[i * n + j]).collect();
        let (lo, hi) = visible.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        if name == "weights" {
            assert_eq!((cut.lo, cut.hi), (lo, hi), "the weights' range is the visible weights'");
            assert_eq!(values[n - 1], 0.0, "a masked weight is still its value, 0");
        } else if name == "relative_logits" {
            assert!(values[n - 1] > 0.0, "the masked bias keeps its value");
        }
    }
    assert!(!s.info().stages[stage_index(&s, "distances")].masked_above);
    // Unmasked, nothing is grey.
    let mut s = run(settings(Method::Alibi, n as f64, 16.0, 2.0, 2.0)).unwrap();
    assert!(!s.info().stages[stage_index(&s, "weights")].masked_above);
    select(&mut s, "weights", 0, 0);
    let (_, rgba) = s.selected().unwrap();
    assert_ne!(pixel(rgba, n, 0, n - 1), grey);
}

/// A sliding window masks as the causal mask does (#49): keys at |j − i| ≥ window are grey in every pair stage,
/// out of the colour range, the stage's metadata says the window, and their weights are 0.
#[test]
fn keys_outside_a_window_are_grey_as_masked_keys_are() {
    let grey = relattn::render::MASKED;
    let pixel = |rgba: &[u8], cols: usize, i: usize, j: usize| [rgba[(i * cols + j) * 4], rgba[(i * cols + j) * 4 + 1], rgba[(i * cols + j) * 4 + 2]];
    let n = 7;
    let mut s = run(LayerOptions { causal: Some(true), window: Some(3.0), ..settings(Method::Rope, n as f64, 16.0, 2.0, 2.0) }).unwrap();
    for name in ["content_logits", "logits", "weights"] {
        assert_eq!(s.info().stages[stage_index(&s, name)].masked_window, Some(3), "{name}");
        let (cut, values, _) = select(&mut s, name, 0, 0);
        let (_, rgba) = s.selected().unwrap();
        assert_eq!(pixel(rgba, n, 6, 3), grey, "{name}: (6, 3) is 3 back, outside the window");
        assert_ne!(pixel(rgba, n, 6, 4), grey, "{name}: (6, 4) is inside");
        let inside: Vec<f32> = (0..n).flat_map(|i| (i.saturating_sub(2)..=i).map(move |j| (i, j))).map(|(i, j)| values[i * n + j]).collect();
        let (lo, hi) = inside.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        if name == "weights" {
            assert_eq!((cut.lo, cut.hi), (lo, hi), "the weights' range is the window's");
            assert_eq!(values[6 * n + 3], 0.0);
            let row: f32 = values[6 * n..7 * n].iter().sum();
            assert!((row - 1.0).abs() < 1e-5, "a row's weights within the window sum to 1: {row}");
        }
    }
}

/// Chunks mask as the causal mask does (Llama 4's chunked attention, #49): keys outside the query's chunk are grey
/// in every pair stage, the stage's metadata says the chunk, their weights are 0 and the statement says it.
#[test]
fn keys_outside_a_chunk_are_grey_as_masked_keys_are() {
    let grey = relattn::render::MASKED;
    let pixel = |rgba: &[u8], cols: usize, i: usize, j: usize| [rgba[(i * cols + j) * 4], rgba[(i * cols + j) * 4 + 1], rgba[(i * cols + j) * 4 + 2]];
    let n = 7;
    let mut s = run(LayerOptions { causal: Some(true), chunk: Some(3.0), ..settings(Method::Rope, n as f64, 16.0, 2.0, 2.0) }).unwrap();
    assert!(s.info().stated.contains("chunks of 3"), "{}", s.info().stated);
    for name in ["content_logits", "logits", "weights"] {
        assert_eq!(s.info().stages[stage_index(&s, name)].masked_chunk, Some(3), "{name}");
        let (_, values, _) = select(&mut s, name, 0, 0);
        let (_, rgba) = s.selected().unwrap();
        // Query 4 is in the chunk 3..6: key 2 (the chunk before) is grey, key 3 is not.
        assert_eq!(pixel(rgba, n, 4, 2), grey, "{name}: (4, 2) is in the chunk before");
        assert_ne!(pixel(rgba, n, 4, 3), grey, "{name}: (4, 3) is in the query's chunk");
        if name == "weights" {
            assert_eq!(values[4 * n + 2], 0.0);
            assert_eq!(values[6 * n], 0.0);
            let row: f32 = values[4 * n + 3..4 * n + 5].iter().sum();
            assert!((row - 1.0).abs() < 1e-5, "a row's weights within its chunk sum to 1: {row}");
        }
    }
}

/// The lecture's pictures come with the session of a scheme that has them, a heatmap coloured with its values
/// and labels, curves with their series; the scheme's options are stated in the info.
#[test]
fn a_session_draws_its_schemes_pictures() {
    let s = run(LayerOptions { causal: Some(true), ..settings(Method::Alibi, 8.0, 64.0, 8.0, 2.0) }).unwrap();
    assert!(s.info().stated.starts_with("ALiBi: 8 heads, slopes 2^(−8(h+1)/8)"), "{}", s.info().stated);
    let pictures = s.pictures(Palette::default());
    let names: Vec<&str> = pictures.iter().map(|p| p.meta.name).collect();
    assert_eq!(names, ["alibi_slope_by_head", "alibi_bias_by_head"]);
    let chart = pictures[0].chart.as_ref().expect("curves");
    assert_eq!(chart.series[0].points.len(), 8);
    let bias = &pictures[1];
    assert_eq!((bias.cut.rows, bias.cut.cols, bias.rgba.len()), (8, 8, 8 * 8 * 4));
    assert_eq!((bias.x_labels.first().map(String::as_str), bias.y_labels.len()), (Some("-7"), 8));
    assert_eq!(bias.values.as_ref().unwrap()[0], -0.5 * 7.0, "head 0 at d = −7");
    // DeBERTa's bucket map: its rows of δ = i − j as the session's options set them.
    let mut deberta = settings(Method::Deberta, 8.0, 16.0, 2.0, 2.0);
    (deberta.position_buckets, deberta.max_relative_positions) = (Some(8.0), Some(20.0));
    let s = run(deberta).unwrap();
    assert_eq!(s.info().stated, "DeBERTa: 8 log buckets up to 20 (tables of 16 rows), c2p + p2c, bidirectional");
    let pictures = s.pictures(Palette::default());
    assert_eq!(pictures.iter().map(|p| p.meta.name).collect::<Vec<_>>(), ["deberta_buckets"]);
    let map = pictures[0].chart.as_ref().expect("curves").series.iter().find(|s| s.label.ends_with("(this layer)")).unwrap();
    let d = relattn::positions::deberta::Deberta { position_buckets: 8, max_relative_positions: 20, ..Default::default() };
    assert_eq!(map.points.len(), 2 * 30 + 1);
    assert!(map.points.iter().all(|p| p[1] as isize == d.row(p[0] as isize) as isize - 8), "{:?}", map.points);
    // Shaw's and the Music Transformer's stages are their pictures.
    assert!(run(settings(Method::Shaw, 8.0, 16.0, 2.0, 2.0)).unwrap().pictures(Palette::default()).is_empty());
}

/// Heads compared by colour (#40 item 3): by default the bias stages (ALiBi's and T5's term, T5's table) of every
/// head share one colour range — every head's, masked cells left out — and say so; the other stages keep their
/// own. "each" gives every head its own; "all" shares every stage that differs by head.
#[test]
fn bias_stages_share_one_colour_scale_across_heads() {
    use relattn::protocol::HeadScale;
    let n = 6;
    let mut s = run(LayerOptions { causal: Some(true), ..settings(Method::Alibi, n as f64, 32.0, 4.0, 2.0) }).unwrap();
    let range = |s: &mut Session, name: &str, head: usize| {
        let (cut, values, _) = select(s, name, 0, head);
        (cut.lo, cut.hi, cut.heads_shared, values)
    };
    let (lo0, hi0, shared0, _) = range(&mut s, "relative_logits", 0);
    let (lo3, hi3, shared3, v3) = range(&mut s, "relative_logits", 3);
    assert!(shared0 && shared3 && (lo0, hi0) == (lo3, hi3), "one scale: {lo0} … {hi0} and {lo3} … {hi3}");
    // Head 0 is the steepest (m_0 = 2^(−8/4) = 1/4): its bias at (n − 1, 0), −m_0·(n − 1) = −1.25, sets the range.
    assert_eq!((lo0, hi0), (-1.25, 1.25));
    assert!(v3[(n - 1) * n] > -1.25);
    assert!(!range(&mut s, "weights", 0).2, "weights keep their own scale by default");
    s.set_head_scale(HeadScale::Each);
    let (lo3, _, shared3, _) = range(&mut s, "relative_logits", 3);
    assert!(!shared3 && lo3 > -1.25);
    s.set_head_scale(HeadScale::All);
    assert!(range(&mut s, "weights", 1).2 && range(&mut s, "content_logits", 1).2);
    assert!(!range(&mut s, "distances", 1).2, "a stage every head shares has no other head to share with");
}

/// A layer held on demand (ALiBi at n 1024 with 8 heads, #51 item 6: each head fell back to its own scale,
/// unsaid) shares its bias's scale too, read from every head's first and last rows; a stage it cannot share
/// without computing every head, or a bias with each head its own scale, says so (`own_scale`).
#[test]
fn a_layer_held_on_demand_shares_its_bias_scale_or_says_it_does_not() {
    use relattn::protocol::HeadScale;
    let n = 1024;
    let mut s = run(LayerOptions { causal: Some(true), ..settings(Method::Alibi, n as f64, 64.0, 8.0, 2.0) }).unwrap();
    assert!(s.info().on_demand);
    let (c0, ..) = select(&mut s, "relative_logits", 0, 0);
    let (c7, ..) = select(&mut s, "relative_logits", 0, 7);
    assert!(c0.heads_shared && c7.heads_shared && !c7.own_scale && (c0.lo, c0.hi) == (c7.lo, c7.hi), "{c0:?} {c7:?}");
    // Head 0's slope 1/2 at (n − 1, 0) sets the range: −511.5 (head 7's own would be ±4).
    assert_eq!(c7.lo, -0.5 * (n - 1) as f32);
    s.set_head_scale(HeadScale::All);
    let (w, ..) = select(&mut s, "weights", 0, 1);
    assert!(!w.heads_shared && w.own_scale, "{w:?}");
    s.set_head_scale(HeadScale::Each);
    let (b, ..) = select(&mut s, "relative_logits", 0, 1);
    assert!(!b.heads_shared && b.own_scale, "{b:?}");
}
