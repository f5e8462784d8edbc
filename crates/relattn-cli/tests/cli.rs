//! The `relattn` binary: traces, figures, and every error path (message and exit code 2).

#[path = "../../relattn-core/tests/common/mod.rs"]
mod common;

use common::npy;
use ndarray::{Array2, Array3, Array4, ArrayD, IxDyn};
use ndarray_npy::{NpzReader, NpzWriter};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's root, where the commands run (models/, tests/fixtures/, the default --data).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn relattn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relattn")).args(args).current_dir(root()).output().expect("run relattn")
}

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn path(d: &tempfile::TempDir, name: &str) -> PathBuf {
    d.path().join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs a failing command; checks exit code 2, no panic, one line on stderr and nothing on stdout, and that
/// stderr holds every `needles`.
fn fails(args: &[&str], needles: &[&str]) {
    let out = relattn(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert_eq!((err.lines().count(), out.stdout.len()), (1, 0), "{args:?}: one line on stderr, none on stdout: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: expected '{n}' in: {err}");
    }
}

fn write_npz(p: &Path, arrays: &[(&str, ArrayD<f32>)]) {
    let mut npz = NpzWriter::new(std::fs::File::create(p).unwrap());
    for (name, a) in arrays {
        npz.add_array(*name, a).unwrap();
    }
    npz.finish().unwrap();
}

#[test]
fn compute_writes_the_trace_names_and_shapes() {
    let d = dir();
    let out = path(&d, "t.npz");
    let o = relattn(&[
        "compute",
        "--method",
        "shaw",
        "--heads",
        "2",
        "--clip",
        "3",
        "--causal",
        "--n",
        "6",
        "--d-model",
        "8",
        "--batch-size",
        "2",
        "--seed",
        "5",
        "--out",
        s(&out),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((json["heads"].as_u64(), json["n"].as_u64(), json["method"].as_str()), (Some(2), Some(6), Some("shaw")));
    assert_eq!(json["unread_options"], serde_json::json!([]));
    let mut npz = NpzReader::new(std::fs::File::open(&out).unwrap()).unwrap();
    let idx: Array2<i64> = npz.by_name("rel_index").unwrap();
    assert_eq!(idx.dim(), (6, 6));
    assert_eq!((idx[[0, 5]], idx[[5, 0]], idx[[2, 2]]), (6, 0, 3));
    for name in ["content_logits", "relative_logits", "logits", "weights"] {
        let a: Array4<f32> = npz.by_name(name).unwrap();
        assert_eq!(a.dim(), (2, 2, 6, 6), "{name}");
    }
    let logits: Array4<f32> = npz.by_name("logits").unwrap();
    assert_eq!(logits[[0, 0, 0, 1]], f32::NEG_INFINITY, "causal cells are −inf");
    let output: Array3<f32> = npz.by_name("output").unwrap();
    assert_eq!(output.dim(), (2, 6, 8));
}

#[test]
fn cli_reproduces_seed004() {
    let d = dir();
    let out = path(&d, "t.npz");
    assert!(relattn(&["compute", "--preset", "seed004", "--out", s(&out)]).status.success());
    let rel: Array4<f32> = NpzReader::new(std::fs::File::open(&out).unwrap()).unwrap().by_name("relative_logits").unwrap();
    assert_eq!(
        rel.slice(ndarray::s![0, 0, .., ..]),
        ndarray::arr2(&[[44., 23., 18., 18.], [-29., 129., 68., 33.], [66., -59., 214., 113.], [86., 86., -89., 299.]])
    );
    assert_eq!(rel.slice(ndarray::s![1, 2, 3, ..]).to_vec(), vec![486., 486., -689., 1999.]);
}

#[test]
fn tensors_from_a_file_are_used_and_the_rest_generated() {
    let d = dir();
    let scen = path(&d, "in.npz");
    let x = Array3::from_shape_fn((1, 5, 4), |(_, i, c)| (i * 4 + c) as f32 / 10.0).into_dyn();
    let mask = Array2::from_shape_vec((1, 5), vec![1f32, 1., 1., 0., 0.]).unwrap().into_dyn();
    write_npz(&scen, &[("x", x), ("key_mask", mask), ("w_q", Array2::<f32>::eye(4).into_dyn())]);
    let out = path(&d, "t.npz");
    let o = relattn(&["compute", "--heads", "2", "--tensors", s(&scen), "--out", s(&out)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut npz = NpzReader::new(std::fs::File::open(&out).unwrap()).unwrap();
    let w: Array4<f32> = npz.by_name("weights").unwrap();
    assert_eq!(w.dim(), (1, 2, 5, 5));
    assert!(w.slice(ndarray::s![.., .., .., 3..]).iter().all(|&v| v == 0.0), "padding keys get no weight");
    let q: Array3<f32> = npz.by_name("q").unwrap();
    assert_eq!(q[[0, 2, 1]], 0.9, "W_q = I, b_q = 0: Q = x");
}

/// Left padding under the causal mask: the first queries see no key (weights 0, where transformers spreads
/// such a row evenly): the trace marks them (`unattended`) and a figure whose rows are queries says which.
#[test]
fn queries_that_see_no_key_are_said() {
    let d = dir();
    let scen = path(&d, "left-padded.npz");
    let mask = Array2::from_shape_vec((1, 5), vec![0f32, 0., 1., 1., 1.]).unwrap().into_dyn();
    write_npz(&scen, &[("x", Array3::from_shape_fn((1, 5, 4), |(_, i, c)| (i + c) as f32 / 7.0).into_dyn()), ("key_mask", mask)]);
    let out = path(&d, "t.npz");
    let o = relattn(&["compute", "--heads", "2", "--causal", "--tensors", s(&scen), "--out", s(&out)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut npz = NpzReader::new(std::fs::File::open(&out).unwrap()).unwrap();
    let unattended: Array2<f32> = npz.by_name("unattended").unwrap();
    assert_eq!(unattended.row(0).to_vec(), vec![1., 1., 0., 0., 0.]);
    let w: Array4<f32> = npz.by_name("weights").unwrap();
    assert!(w.slice(ndarray::s![.., .., ..2, ..]).iter().all(|&v| v == 0.0), "rows 0 and 1 have no visible key");
    let svg = path(&d, "w.svg");
    let o = relattn(&["render", "--heads", "2", "--causal", "--tensors", s(&scen), "--stage", "weights", "--out", s(&svg)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("rows 0–1 see no key (all padding): weight 0"));
}

/// `render` draws one head's stage of a layer whose whole trace would not fit the budget: the trace of n 2048 ×
/// 8 heads (Music, bidirectional) is refused at 400 MiB, its skew's reshaped buffer (2049 × 4095) of head 5 is
/// drawn within it (the forward pass and that head's stages a block of rows at a time); too little memory for
/// that names the largest n that fits.
#[test]
fn render_computes_one_head_of_a_layer_too_large_to_trace() {
    let d = dir();
    let out = path(&d, "reshaped.png");
    let layer = ["--method", "music", "--n", "2048", "--d-model", "128", "--heads", "8", "--clip", "64", "--max-memory-mb", "400"];
    fails(&[&["compute", "--out", s(&path(&d, "t.npz"))][..], &layer[..]].concat(), &["the trace with n = 2048", "400.0 MiB"]);
    let o = relattn(&[&["render", "--stage", "skew_reshaped", "--head", "5", "--out", s(&out), "--json"][..], &layer[..]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read(&out).unwrap().starts_with(b"\x89PNG"));
    let small = ["--method", "music", "--n", "2048", "--d-model", "128", "--heads", "8", "--max-memory-mb", "40"];
    fails(&[&["render", "--stage", "weights", "--out", s(&out)][..], &small[..]].concat(), &["the forward pass with n = 2048", "40.0 MiB", "n ≤"]);
}

#[test]
fn render_writes_svg_and_png() {
    let d = dir();
    for (stage, file, extra) in
        [("weights", "w.svg", vec![]), ("skew_reshaped", "s.png", vec!["--method", "music", "--causal"]), ("logits", "big.png", vec!["--n", "200"])]
    {
        let out = path(&d, file);
        let mut args = vec!["render", "--stage", stage, "--heads", "2", "--out", s(&out)];
        args.extend(extra);
        let o = relattn(&args);
        assert!(o.status.success(), "{stage}: {}", String::from_utf8_lossy(&o.stderr));
        let bytes = std::fs::read(&out).unwrap();
        if file.ends_with(".svg") {
            let text = String::from_utf8(bytes).unwrap();
            assert!(text.starts_with("<svg") && text.contains("Attention weights") && text.contains("<rect"));
        } else {
            assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000);
        }
    }
    let out = path(&d, "tok.svg");
    assert!(relattn(&["render", "--preset", "seed004", "--stage", "relative_logits", "--tokens", "the cat sat down", "--out", s(&out)]).status.success());
    let text = std::fs::read_to_string(&out).unwrap();
    for label in ["cat", "-29", "299"] {
        assert!(text.contains(&format!("\n{label}\n</text>")), "{label} missing from the SVG");
    }
}

/// Every picture of every scheme that has some, as SVG (titled, the scheme's options under the formula) and PNG;
/// a picture the scheme has not is refused with the ones it has.
#[test]
fn picture_draws_each_schemes_lecture_pictures() {
    let d = dir();
    for (method, names, stated) in [
        ("rope", &["rope_pair_turn", "rope_kernel_curves", "rope_layouts"][..], "RoPE: base 10000"),
        ("alibi", &["alibi_slope_by_head", "alibi_bias_by_head"][..], "ALiBi: 4 heads"),
        ("t5", &["t5_staircase", "t5_bias_by_bucket"][..], "T5: 32 buckets"),
        ("deberta", &["deberta_buckets"][..], "DeBERTa: 256 log buckets"),
        ("transformer_xl", &["skew_and_rel_shift"][..], "Transformer-XL: R W_R"),
        ("absolute", &["absolute_similarity"][..], "absolute: sinusoids"),
    ] {
        for name in names {
            let out = path(&d, &format!("{name}.svg"));
            let o = relattn(&["picture", "--method", method, "--heads", "4", "--d-model", "32", "--n", "12", "--name", name, "--out", s(&out)]);
            assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
            let text = std::fs::read_to_string(&out).unwrap();
            assert!(text.starts_with("<svg width=\"1600\" height=\"900\"") && text.contains(stated), "{name}");
        }
        let png = path(&d, "p.png");
        assert!(relattn(&["picture", "--method", method, "--name", names[0], "--out", s(&png)]).status.success());
        assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    }
    fails(
        &["picture", "--method", "rope", "--name", "t5_staircase", "--out", "f.svg"],
        &["invalid name", "'t5_staircase'", "one of rope_pair_turn, rope_kernel_curves, rope_layouts"],
    );
    fails(&["picture", "--method", "shaw", "--name", "rope_layouts", "--out", "f.svg"], &["invalid name", "Shaw et al. 2018 layers have none"]);
}

#[test]
fn every_bad_input_is_named_with_exit_code_2() {
    let d = dir();
    let out = path(&d, "t.npz");
    let o = s(&out);
    fails(&["compute", "--n", "0", "--out", o], &["invalid n", "got 0", "≥ 1"]);
    fails(&["compute", "--clip", "-3", "--out", o], &["invalid clip", "got -3", "≥ 0"]);
    fails(&["compute", "--heads", "3", "--d-model", "16", "--out", o], &["invalid heads", "got 3", "divisor of d_model = 16"]);
    fails(&["compute", "--heads", "0", "--out", o], &["invalid heads", "got 0"]);
    fails(&["compute", "--batch-size", "-1", "--out", o], &["invalid batch_size", "got -1"]);
    fails(&["compute", "--method", "bert", "--out", o], &["--method", "'bert'", "shaw, music"]);
    fails(&["compute", "--edge", "wrap", "--out", o], &["--edge", "zero, clip"]);
    fails(&["render", "--stage", "softmax", "--out", "f.svg"], &["--stage", "'softmax'", "weights"]);
    fails(&["render", "--stage", "skew_qer", "--out", "f.svg"], &["skew_qer", "Music Transformer"]);
    fails(&["render", "--stage", "weights", "--head", "4", "--heads", "2", "--out", "f.svg"], &["invalid head", "got 4", "0..=1"]);
    fails(&["render", "--stage", "weights", "--out", "f.gif"], &["invalid out", ".svg or .png"]);
    fails(&["render", "--stage", "weights", "--n", "3", "--tokens", "a b", "--out", "f.svg"], &["invalid tokens", "2 tokens", "n = 3"]);
    fails(&["render", "--stage", "weights", "--size", "10x10", "--out", "f.svg"], &["invalid size", "WIDTHxHEIGHT"]);
    fails(&["compute", "--preset", "seed999", "--out", o], &["invalid preset", "seed004"]);
    fails(&["compute", "--n", "200000", "--max-memory-mb", "64", "--out", o], &["needs about", "TiB", "limit is 64.0 MiB", "allowed: n ≤ "]);
    fails(&["compute", "--n", "4", "--out", "/nonexistent/dir/t.npz"], &["cannot write '/nonexistent/dir/t.npz'"]);

    // Files.
    fails(&["compute", "--tensors", "/no/such.npz", "--out", o], &["cannot read '/no/such.npz'", "No such file"]);
    let junk = path(&d, "junk.npz");
    std::fs::write(&junk, b"this is not numpy").unwrap();
    fails(&["compute", "--tensors", s(&junk), "--out", o], &["cannot read", "neither an .npz"]);
    let truncated = path(&d, "trunc.npz");
    write_npz(&truncated, &[("x", ArrayD::zeros(IxDyn(&[4, 8])))]);
    let bytes = std::fs::read(&truncated).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    fails(&["compute", "--tensors", s(&truncated), "--out", o], &["cannot read", "corrupt .npz"]);

    // Shapes and values.
    let bad = path(&d, "bad.npz");
    write_npz(&bad, &[("x", ArrayD::zeros(IxDyn(&[5, 8]))), ("w_q", ArrayD::zeros(IxDyn(&[9, 8])))]);
    fails(&["compute", "--tensors", s(&bad), "--out", o], &["shape mismatch in 'w_q'", "[9, 8]", "[8, 8]"]);
    // Heads of their own width must divide w_q's columns.
    write_npz(&bad, &[("x", ArrayD::zeros(IxDyn(&[5, 8]))), ("w_q", ArrayD::zeros(IxDyn(&[8, 7])))]);
    fails(&["compute", "--tensors", s(&bad), "--heads", "2", "--out", o], &["heads", "a divisor of w_q's 7 columns"]);
    write_npz(&bad, &[("x", ArrayD::zeros(IxDyn(&[5, 8]))), ("rel_k", ArrayD::zeros(IxDyn(&[4, 8])))]);
    fails(&["compute", "--tensors", s(&bad), "--clip", "2", "--out", o], &["shape mismatch in 'rel_k'", "[4, 8]", "2k+1"]);
    write_npz(&bad, &[("x", ArrayD::zeros(IxDyn(&[5, 8]))), ("key_mask", ArrayD::zeros(IxDyn(&[1, 4])))]);
    fails(&["compute", "--tensors", s(&bad), "--out", o], &["shape mismatch in 'key_mask'", "[1, 5]"]);
    write_npz(&bad, &[("x", ArrayD::from_elem(IxDyn(&[1, 5, 8]), 2.0)), ("key_mask", ArrayD::from_elem(IxDyn(&[1, 5]), 0.5))]);
    fails(&["compute", "--tensors", s(&bad), "--out", o], &["invalid key_mask", "0.5", "0 (padding) or 1 (keep)"]);
    let mut x = ArrayD::<f32>::zeros(IxDyn(&[1, 3, 4]));
    x[[0, 1, 2]] = f32::NAN;
    write_npz(&bad, &[("x", x)]);
    fails(&["compute", "--tensors", s(&bad), "--out", o], &["non-finite value in 'x'", "NaN", "[0, 1, 2]"]);
    write_npz(&bad, &[("w_v", ArrayD::from_elem(IxDyn(&[16, 16]), f32::INFINITY))]);
    fails(&["compute", "--tensors", s(&bad), "--out", o], &["non-finite value in 'w_v'", "inf", "[0, 0]"]);
    write_npz(&bad, &[("W_q", ArrayD::zeros(IxDyn(&[16, 16])))]);
    fails(&["compute", "--tensors", s(&bad), "--out", o], &["invalid array name", "'W_q'", "w_q"]);
    write_npz(&bad, &[("e_r", ArrayD::zeros(IxDyn(&[5, 16])))]);
    fails(&["compute", "--tensors", s(&bad), "--out", o], &["'e_r' not used", "--method music"]);
    write_npz(&bad, &[("x", ArrayD::zeros(IxDyn(&[2, 3, 4, 5])))]);
    fails(&["compute", "--tensors", s(&bad), "--out", o], &["shape mismatch in 'x'", "(b, n, d_model)"]);
}

/// The model commands' options at and past their ranges: one line naming the option, the value and the range.
#[test]
fn model_options_out_of_range_name_the_option_value_and_range() {
    let d = dir();
    let (mid, npz) = (path(&d, "s.mid"), path(&d, "t.npz"));
    let model = ["--model", "models/chorales-music.safetensors"];
    let sample = |extra: &[&str], needles: &[&str]| {
        fails(&[&["model", "sample"], &model[..], &["--piece", "10.7", "--out", s(&mid)], extra].concat(), needles);
        assert!(!mid.exists(), "{extra:?}: nothing written");
    };
    let trace = |extra: &[&str], needles: &[&str]| {
        fails(&[&["model", "trace"], &model[..], &["--piece", "10.7", "--out", s(&npz)], extra].concat(), needles);
        assert!(!npz.exists(), "{extra:?}: nothing written");
    };
    // BWV 10.7 has 1408 tokens; the model 3 layers of 4 heads.
    trace(&["--layer", "-1", "--head", "0"], &["invalid layer", "got -1", "0..=2"]);
    trace(&["--layer", "3", "--head", "0"], &["invalid layer", "got 3", "0..=2"]);
    trace(&["--layer", "0", "--head", "-1"], &["invalid head", "got -1", "0..=3"]);
    trace(&["--layer", "0", "--head", "0", "--start", "-1"], &["invalid start", "got -1", "0..=1407"]);
    trace(&["--layer", "0", "--head", "0", "--start", "1408"], &["invalid start", "got 1408", "0..=1407"]);
    trace(&["--layer", "0", "--head", "0", "--length", "0"], &["invalid length", "got 0", "1..=1408"]);
    trace(&["--layer", "0", "--head", "0", "--start", "8", "--length", "-1"], &["invalid length", "got -1", "1..=1400"]);
    trace(&["--layer", "0", "--head", "0", "--start", "8", "--length", "1401"], &["invalid length", "got 1401", "1..=1400"]);
    trace(&["--head", "0"], &["--layer <LAYER>", "not provided"]);
    sample(&["--prime", "-1"], &["invalid prime", "got -1", "1..=1408"]);
    sample(&["--prime", "0"], &["invalid prime", "got 0", "1..=1408"]);
    sample(&["--prime", "1409"], &["invalid prime", "got 1409", "1..=1408"]);
    sample(&["--steps", "-1"], &["invalid steps", "got -1", "0..=65536"]);
    sample(&["--steps", "65537"], &["invalid steps", "got 65537", "0..=65536"]);
    sample(&["--context", "0"], &["invalid context", "got 0", "1..=65536"]);
    sample(&["--temperature", "-1"], &["invalid temperature", "got -1", "0..=100"]);
    sample(&["--temperature", "NaN"], &["invalid temperature", "got NaN", "0..=100"]);
    sample(&["--top-k", "54"], &["invalid top_k", "got 54", "0..=53"]);
    sample(&["--top-k", "-1"], &["invalid top_k", "got -1", "0..=53"]);
    sample(&["--top-p", "0"], &["invalid top_p", "got 0", "(0, 1]"]);
    sample(&["--top-p", "1.5"], &["invalid top_p", "got 1.5", "(0, 1]"]);
    sample(&["--top-p", "NaN"], &["invalid top_p", "got NaN", "(0, 1]"]);
    sample(&["--bpm", "0"], &["--bpm <BPM>", "0 is not in 20..=400"]);
    sample(&["--bpm", "4294967295"], &["--bpm <BPM>", "4294967295 is not in 20..=400"]);
    sample(&["--bpm", "-5"], &["--bpm <BPM>", "-5 is not in 20..=400"]);
    sample(&["--seed", "-1"], &["--seed <SEED>", "'-1'"]);
    sample(&["--no-such-option"], &["unexpected argument '--no-such-option'"]);
    // An opening chord instead of a piece: four names of the vocabulary, soprano to bass.
    let opening = |extra: &[&str], needles: &[&str]| {
        fails(&[&["model", "sample"], &model[..], &["--out", s(&mid)], extra].concat(), needles);
        assert!(!mid.exists(), "{extra:?}: nothing written");
    };
    opening(&[], &["invalid piece", "neither --piece nor --opening", "--opening"]);
    opening(&["--opening", "C5 G4 E4"], &["invalid opening", "'C5 G4 E4'", "four names", "A1..=C6"]);
    opening(&["--opening", "C5 G4 E4 H2"], &["invalid opening", "'H2'"]);
    opening(&["--opening", "C5 G4 E4 C3", "--piece", "10.7"], &["'--opening <OPENING>' cannot be used with '--piece <PIECE>'"]);
    let out = relattn(&[&["model", "sample"], &model[..], &["--opening", "C5 G4 E4 C3", "--steps", "8", "--out", s(&mid), "--json"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tokens: Vec<u64> = json["tokens"].as_array().unwrap().iter().map(|t| t.as_u64().unwrap()).collect();
    // C5, G4, E4, C3 in a vocabulary starting at A1 (MIDI 33) after the rest: tokens 40, 35, 32, 16.
    assert_eq!((tokens.len(), &tokens[..4]), (12, &[40, 35, 32, 16][..]));
    assert!(midly::Smf::parse(&std::fs::read(&mid).unwrap()).is_ok());
    std::fs::remove_file(&mid).unwrap();
    let eval = |extra: &[&str], needles: &[&str]| fails(&[&["model", "eval"], &model[..], extra].concat(), needles);
    eval(&["--window", "-1"], &["invalid window", "got -1", "2 or more"]);
    eval(&["--window", "1"], &["invalid window", "got 1", "2 or more"]);
    let help = String::from_utf8_lossy(&relattn(&["model", "sample", "--help"]).stdout).into_owned();
    for range in ["20..=400", "0..=65536", "1..=65536", "0..=100"] {
        assert!(help.contains(range), "sample --help gives the range {range}: {help}");
    }
}

/// Chorale data that would give silent results: no pieces (eval's NaN), steps of no MIDI ticks.
#[test]
fn chorale_data_with_no_tokens_or_bad_steps_is_refused_naming_the_field() {
    let d = dir();
    let data: serde_json::Value = serde_json::from_slice(&std::fs::read(root().join("tests/fixtures/chorales-subset.json")).unwrap()).unwrap();
    let with = |key: &str, value: serde_json::Value| {
        let mut v = data.clone();
        v[key] = value;
        let p = path(&d, &format!("{key}-{}.json", v[key]));
        std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
        p
    };
    let model = "models/chorales-shaw.safetensors";
    let empty = with("pieces", serde_json::json!([]));
    for json in [&[][..], &["--json"]] {
        fails(&[&["model", "eval", "--model", model, "--data", s(&empty)], json].concat(), &["invalid data", s(&empty), "no pieces", "at least one piece"]);
    }
    for spq in [0, 7, 100000] {
        let p = with("steps_per_quarter", serde_json::json!(spq));
        fails(&["model", "eval", "--model", model, "--data", s(&p)], &["invalid steps_per_quarter", &format!("got {spq}"), "a divisor of 480"]);
    }
}

/// A long sampling says how far it is on stderr, and Ctrl-C stops it with exit code 130, saying how many
/// tokens were drawn, with nothing written.
#[test]
fn a_long_sampling_shows_progress_and_stops_on_ctrl_c_writing_nothing() {
    use std::io::{BufRead, BufReader};
    let d = dir();
    let mid = path(&d, "s.mid");
    let mut child = Command::new(env!("CARGO_BIN_EXE_relattn"))
        .current_dir(root())
        .args(["model", "sample", "--model", "models/chorales-music.safetensors", "--piece", "10.7", "--steps", "65536", "--out", s(&mid)])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().expect("a progress line").unwrap();
    assert!(first.starts_with("sampling: ") && first.contains(" of 65536 tokens ("), "{first}");
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = child.wait().unwrap();
    let last = rest.last().expect("a last line");
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(last.starts_with("error: interrupted after ") && last.contains("of 65536 tokens; nothing written"), "{last}");
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "no MIDI file and no temporary file");
}

/// Negative numbers reach the options' own checks, which name them with their range (not clap's "unexpected
/// argument '-1' found").
#[test]
fn negative_numbers_are_refused_by_name_with_their_range() {
    let d = dir();
    let svg = path(&d, "f.svg");
    let render = |extra: &[&'static str]| [&["render", "--stage", "weights", "--out", s(&svg)][..], extra].concat();
    fails(&render(&["--head", "-1"]), &["invalid head", "got -1", "0 or more"]);
    fails(&render(&["--batch-index", "-2"]), &["invalid batch index", "got -2", "0 or more"]);
    fails(&render(&["--max-memory-mb", "-5"]), &["--max-memory-mb", "-5", "1..="]);
    fails(&render(&["--size", "-1x5"]), &["invalid size", "-1x5", "200..=8000"]);
    fails(&["picture", "--name", "rope_pair_turn", "--method", "rope", "--size", "-1x5", "--out", s(&svg)], &["invalid size", "-1x5"]);
    fails(&["bench", "--reps", "-1"], &["--reps", "-1", "1..=10000"]);
    fails(&["bench", "--threads", "-1"], &["--threads", "-1", "1..=256"]);
    assert!(!svg.exists());
}

/// Ctrl-C while `compute --out` writes its trace (135 MB at n 2048) removes the temporary file: nothing is
/// left beside the output, which is not written.
#[test]
fn ctrl_c_while_writing_leaves_no_temporary_file() {
    let d = dir();
    let out = path(&d, "t.npz");
    let mut child = Command::new(env!("CARGO_BIN_EXE_relattn"))
        .current_dir(root())
        .args(["compute", "--n", "2048", "--out", s(&out)])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let writing = || std::fs::read_dir(d.path()).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().contains(".tmp"));
    while !writing() && child.try_wait().unwrap().is_none() && started.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(writing(), "no temporary file seen while the trace was written");
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Options a method does not read are accepted and said: in the JSON summary (and `--help` names each
/// scheme-specific option's scheme).
#[test]
fn options_a_method_does_not_read_are_said() {
    let d = dir();
    let out = path(&d, "t.npz");
    let o = relattn(&["compute", "--method", "rope", "--clip", "5", "--t5-buckets", "8", "--rope-base", "100", "--out", s(&out), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["unread_options"], serde_json::json!(["clip", "t5_buckets"]));
    let help = String::from_utf8_lossy(&relattn(&["compute", "--help"]).stdout).into_owned();
    for said in ["RoPE only:", "T5 only:", "Shaw and the Music Transformer only:", "Music Transformer only:", "Absolute positions only:"] {
        assert!(help.contains(said), "{said} missing from help");
    }
}

#[test]
fn help_documents_the_commands() {
    let o = relattn(&["compute", "--help"]);
    let text = String::from_utf8_lossy(&o.stdout);
    for flag in ["--tensors", "--out", "--json", "--max-memory-mb"] {
        assert!(text.contains(flag), "{flag} missing from help");
    }
    // Every command that computes a layer takes every layer option by its one name (crates/relattn/tests/options.rs).
    for sub in ["compute", "render", "bench"] {
        let text = String::from_utf8_lossy(&relattn(&[sub, "--help"]).stdout).into_owned();
        for name in relattn::options::LayerOptions::names() {
            let flag = format!("--{} ", name.replace('_', "-"));
            assert!(text.contains(&flag), "relattn {sub} --help lacks {flag}");
        }
    }
}

/// A shell command line run with `sh -c`, `relattn` standing for the binary.
fn shell(script: &str) -> Output {
    Command::new("sh").arg("-c").arg(script.replace("relattn", env!("CARGO_BIN_EXE_relattn"))).current_dir(root()).output().expect("run sh")
}

#[test]
fn absurd_sizes_are_refused_with_the_field_and_what_fits() {
    let d = dir();
    let out = path(&d, "t.npz");
    let o = s(&out);
    // The estimate used to wrap (n 2⁶²), leave out the tables (clip 2³¹: 274 GB tried), or reach ndarray's
    // "Shape too large" panic; now each names the size to reduce and how far.
    fails(&["compute", "--n", "4611686018427387904", "--d-model", "4", "--out", o], &["needs more than 16 EiB", "allowed: n ≤ "]);
    fails(&["compute", "--clip", "2147483648", "--out", o], &["clip = 2147483648", "allowed: clip ≤ "]);
    fails(&["compute", "--clip", "10000000", "--max-memory-mb", "100", "--out", o], &["limit is 100.0 MiB", "allowed: clip ≤ "]);
    for (flag, field) in [("--n", "n"), ("--d-model", "d_model"), ("--batch-size", "batch_size"), ("--clip", "clip")] {
        for v in ["4611686018427387904", "9223372036854775807"] {
            fails(&["compute", flag, v, "--out", o], &[&format!("allowed: {field} ≤ ")]);
        }
    }
    fails(&["bench", "--n", "4", "--reps", "1000000000000"], &["--reps", "1..=10000"]);
    fails(&["bench", "--n", "4", "--threads", "20000"], &["--threads", "1..=256"]);
    fails(&["bench", "--n", "4", "--threads", "0"], &["--threads", "1..=256"]);
    fails(&["compute", "--max-memory-mb", "17592186044416", "--out", o], &["--max-memory-mb", "1..=8796093022207"]);
    assert!(!out.exists());
}

#[test]
fn a_full_or_closed_stdout() {
    let full = shell("relattn presets > /dev/full");
    let err = String::from_utf8_lossy(&full.stderr);
    assert_eq!(full.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot write 'stdout'") && err.contains("No space left") && !err.contains("panicked"), "{err}");
    // The reader goes away before anything is printed: no panic, no message, success.
    let mut child =
        Command::new(env!("CARGO_BIN_EXE_relattn")).arg("presets").stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let closed = child.wait_with_output().unwrap();
    assert_eq!(closed.status.code(), Some(0), "{}", String::from_utf8_lossy(&closed.stderr));
    assert!(closed.stderr.is_empty(), "{}", String::from_utf8_lossy(&closed.stderr));
    // --out on a full device: one error line, no panic and no "ZipWriter drop failed".
    let o = relattn(&["compute", "--n", "64", "--out", "/dev/full"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().collect::<Vec<_>>(), ["error: cannot write '/dev/full': No space left on device (os error 28)"]);
    // Written in place, not replaced: /dev/null is still a device.
    assert!(relattn(&["compute", "--n", "4", "--out", "/dev/null"]).status.success());
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
}

#[test]
fn a_write_that_fails_partway_keeps_the_previous_file() {
    let d = dir();
    for name in ["t.npz", "f.png", "f.svg"] {
        let out = path(&d, name);
        std::fs::write(&out, b"the previous file").unwrap();
        // A 64-block file size limit, SIGXFSZ ignored: the write fails with EFBIG partway.
        let stage = if name.ends_with("npz") { "compute --n 256 --d-model 64" } else { "render --stage weights --n 64" };
        let o = shell(&format!("trap '' XFSZ; ulimit -f 64; exec relattn {stage} --out '{}'", s(&out)));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(&format!("cannot write '{}'", s(&out))) && err.contains("File too large"), "{name}: {err}");
        assert_eq!(std::fs::read(&out).unwrap(), b"the previous file", "{name} was truncated");
    }
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.contains(".tmp")).collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    // A write that succeeds replaces the file.
    let out = path(&d, "t.npz");
    assert!(relattn(&["compute", "--n", "4", "--out", s(&out)]).status.success());
    assert!(std::fs::read(&out).unwrap().starts_with(b"PK"));
}

#[test]
fn tensors_must_be_a_regular_file_within_the_limit() {
    let d = dir();
    let out = path(&d, "t.npz");
    let o = s(&out);
    fails(&["compute", "--tensors", "/dev/zero", "--out", o], &["cannot read '/dev/zero'", "not a regular file"]);
    fails(&["compute", "--tensors", s(d.path()), "--out", o], &["not a regular file"]);
    let fifo = path(&d, "fifo.npz");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut child =
        Command::new(env!("CARGO_BIN_EXE_relattn")).args(["compute", "--tensors", s(&fifo), "--out", o]).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed().as_secs() > 20 {
            child.kill().unwrap();
            panic!("reading a FIFO blocked");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let fifo_out = child.wait_with_output().unwrap();
    assert_eq!(fifo_out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&fifo_out.stderr).contains("not a regular file"));
    // Over the limit: refused from its size, before reading (a sparse file, no disk used).
    let big = path(&d, "big.npz");
    std::fs::File::create(&big).unwrap().set_len(relattn::files::MAX_FILE_BYTES + 1).unwrap();
    fails(&["compute", "--tensors", s(&big), "--out", o], &["cannot read", "1.00 GiB is over the limit of 1.00 GiB"]);
}

#[test]
fn npz_members_and_headers_are_checked_with_plain_messages() {
    let d = dir();
    let out = path(&d, "t.npz");
    let o = s(&out);
    // "x" and "x.npy" are both the array x: refused, not one silently dropped.
    let dup = path(&d, "dup.npz");
    {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&dup).unwrap());
        let x = npy("<f4", "(2, 4)", &[0u8; 32]);
        for name in ["x.npy", "x"] {
            zip.start_file(name, zip::write::SimpleFileOptions::default()).unwrap();
            std::io::Write::write_all(&mut zip, &x).unwrap();
        }
        zip.finish().unwrap();
    }
    fails(&["compute", "--tensors", s(&dup), "--out", o], &["invalid array name", "'x' twice", "each array once"]);
    // A header whose shape and data disagree says so (not "incorrect descriptor ... allowed float32").
    let lie = path(&d, "lie.npy");
    std::fs::write(&lie, npy("<f4", "(4, 8)", &[0u8; 100])).unwrap();
    fails(&["compute", "--tensors", s(&lie), "--out", o], &["header says shape [4, 8] of float32 (128 bytes) but the data holds 100 bytes"]);
    std::fs::write(&lie, npy("<c8", "(4, 8)", &[0u8; 256])).unwrap();
    fails(&["compute", "--tensors", s(&lie), "--out", o], &["dtype '<c8' is not allowed", "float32, float64"]);
    // A shape of zero size with huge axes (wasm32's ndarray panicked on it) is refused on every target.
    std::fs::write(&lie, npy("<f4", "(0, 70000, 70000)", &[])).unwrap();
    fails(&["compute", "--tensors", s(&lie), "--out", o], &["shape [0, 70000, 70000] is too large"]);
    // Sizes of zero from a file are the file's fault (x), not the controls' (heads, n).
    for (shape, data) in [("(5, 0)", 0), ("(0, 4)", 0), ("(1, 0, 4)", 0)] {
        std::fs::write(&lie, npy("<f4", shape, &vec![0u8; data])).unwrap();
        let o2 = relattn(&["compute", "--tensors", s(&lie), "--heads", "2", "--out", o]);
        let err = String::from_utf8_lossy(&o2.stderr);
        assert_eq!(o2.status.code(), Some(2), "{shape}: {err}");
        assert!(err.contains("shape mismatch in 'x'") && err.contains("every size ≥ 1") && !err.contains("heads"), "{shape}: {err}");
    }
}

#[test]
fn a_zip_bomb_is_refused_by_its_declared_size_before_inflating() {
    let d = dir();
    let bomb = path(&d, "bomb.npz");
    {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&bomb).unwrap());
        let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated).compression_level(Some(1)).large_file(true);
        zip.start_file("x.npy", options).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..1100 {
            std::io::Write::write_all(&mut zip, &zeros).unwrap();
        }
        zip.finish().unwrap();
    }
    // With 600 MB of address space, inflating it first gave "corrupt .npz: out of memory".
    let o = shell(&format!("ulimit -v 600000; exec relattn compute --tensors '{}' --out '{}'", s(&bomb), s(&path(&d, "t.npz"))));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("its arrays exceed 1.00 GiB once decompressed") && !err.contains("memory"), "{err}");
}

#[test]
fn finite_inputs_that_overflow_float32_name_the_array() {
    let d = dir();
    let out = path(&d, "t.npz");
    let big = path(&d, "big.npz");
    write_npz(&big, &[("x", ArrayD::from_elem(IxDyn(&[1, 4, 16]), 3e38))]);
    fails(&["compute", "--tensors", s(&big), "--out", s(&out)], &["overflow in 'q'", "inf", "[0, 0, "]);
    write_npz(&big, &[("w_q", ArrayD::from_elem(IxDyn(&[16, 16]), 1e30)), ("w_k", ArrayD::from_elem(IxDyn(&[16, 16]), 1e30))]);
    fails(&["compute", "--tensors", s(&big), "--out", s(&out)], &["overflow in 'content_logits'"]);
    // The forward pass alone (no trace) checks as it goes: NaN or +∞ logits would pass the softmax as weights.
    fails(&["bench", "--tensors", s(&big), "--reps", "1"], &["overflow in 'content_logits'", "[0, 0, 0, 0]"]);
    assert!(!out.exists());
}

#[test]
fn control_characters_in_tokens_give_a_valid_svg() {
    let d = dir();
    let out = path(&d, "tok.svg");
    let o = relattn(&["render", "--preset", "seed004", "--stage", "weights", "--tokens", "a\u{1} b\u{1b}[31m c\u{7f} d\u{85}", "--out", s(&out)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(&out).unwrap();
    let bad: Vec<char> = svg.chars().filter(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')).collect();
    assert!(bad.is_empty(), "control characters in the SVG: {bad:?}");
    assert!(svg.contains("a\u{2401}") && svg.contains("b\u{241b}[31m"), "the tokens are shown with visible stand-ins");
}

/// The memory estimate against the measured peak (VmHWM) over a grid: both methods and implementations,
/// long tables (clip up to 400 000), heads, batch, with and without a^V. The estimate must cover the peak
/// (less the process's own baseline) and stay within 4× of it.
#[test]
fn memory_estimate_covers_the_measured_peak() {
    let d = dir();
    let out = path(&d, "t.npz");
    // `compute` keeps the trace; `bench` runs the fused forward, which keeps no (n, n) array; `render` the fused
    // forward and one head's stages a block of rows at a time, keeping one stage.
    let png = path(&d, "f.png");
    let run = |args: &[&str]| -> (f64, f64) {
        let all = match args {
            ["bench", rest @ ..] => [&["bench", "--reps", "1", "--threads", "2"], rest].concat(),
            ["render", rest @ ..] => [&["render", "--json", "--out", s(&png)], rest].concat(),
            _ => [&["compute", "--json", "--out", s(&out)], args].concat(),
        };
        let o = relattn(&all);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (j["estimate_bytes"].as_f64().unwrap() / 1048576.0, j["peak_rss_mib"].as_f64().unwrap())
    };
    let (_, baseline) = run(&["--n", "2", "--d-model", "2"]);
    let grid: [&[&str]; 15] = [
        &["bench", "--n", "4096", "--d-model", "64", "--heads", "4", "--clip", "16"],
        // Transformer-XL's fused forward with a clamp past n: a query block's (Q + v)·rᵀ, never an (n, 2k + 1) product.
        &["bench", "--method", "transformer_xl", "--n", "4096", "--d-model", "64", "--heads", "4", "--clip", "4096", "--segments", "2"],
        // Its trace: BD_rel (n, 2n), BD and EF beside the other stages.
        &["--method", "transformer_xl", "--n", "384", "--d-model", "32", "--heads", "2", "--clip", "400", "--segments", "2"],
        // DeBERTa's fused forward holds K·Q_rᵀ (n, 2·256) per head besides Shaw's work.
        &["bench", "--method", "deberta", "--n", "4096", "--d-model", "64", "--heads", "4"],
        &["render", "--stage", "weights", "--n", "4096", "--d-model", "256", "--heads", "8", "--clip", "16"],
        &["render", "--stage", "skew_reshaped", "--method", "music", "--n", "2048", "--d-model", "128", "--heads", "4", "--clip", "64"],
        &["bench", "--method", "music", "--causal", "--n", "2048", "--d-model", "128", "--heads", "2", "--batch-size", "2"],
        &["--n", "512", "--d-model", "64", "--heads", "4"],
        &["--n", "384", "--d-model", "32", "--heads", "2", "--batch-size", "3", "--causal"],
        &["--method", "music", "--n", "384", "--d-model", "32", "--heads", "2", "--clip", "64"],
        &["--method", "music", "--n", "384", "--d-model", "32", "--causal", "--clip", "500"],
        &["--n", "8", "--d-model", "16", "--clip", "400000"],
        &["--n", "64", "--d-model", "64", "--heads", "2", "--clip", "100000", "--per-head-tables"],
        &["--n", "128", "--d-model", "32", "--heads", "2", "--implementation", "materialized", "--relative-values", "false"],
        &["--n", "256", "--d-model", "256", "--heads", "8", "--clip", "16", "--batch-size", "2"],
    ];
    // Heads wider than d_model / heads and values and an output of their own widths (a captured Gemma's or
    // DeepSeek's layer): the arrays' widths, not d_model's, set the estimate (d_model's would be 6× too small for
    // the fused forward at n 4096, which holds no (n, n) array).
    let filled =
        |shape: &[usize]| ArrayD::from_shape_vec(IxDyn(shape), (0..shape.iter().product()).map(|k: usize| ((k % 7) as f32 - 3.0) * 0.05).collect()).unwrap();
    let wide = |n: usize| {
        let (file, dm, h, dh, dv, d_out) = (path(&d, &format!("wide{n}.npz")), 64, 4, 192, 128, 320);
        write_npz(
            &file,
            &[
                ("x", filled(&[1, n, dm])),
                ("w_q", filled(&[dm, h * dh])),
                ("w_k", filled(&[dm, h * dh])),
                ("w_v", filled(&[dm, h * dv])),
                ("w_o", filled(&[h * dv, d_out])),
            ],
        );
        file
    };
    let (traced, forward) = (wide(512), wide(4096));
    let wide_args: [&[&str]; 2] =
        [&["--tensors", s(&traced), "--method", "rope", "--heads", "4"], &["bench", "--tensors", s(&forward), "--method", "rope", "--heads", "4"]];
    for args in grid.into_iter().chain(wide_args) {
        let (estimate, peak) = run(args);
        let used = peak - baseline;
        eprintln!("{args:?}: estimate {estimate:.1} MiB, peak {peak:.1} MiB (baseline {baseline:.1})");
        assert!(estimate >= used, "{args:?}: estimate {estimate:.1} MiB < measured {used:.1} MiB above the baseline");
        assert!(estimate <= 4.0 * used.max(4.0), "{args:?}: estimate {estimate:.1} MiB is far above the measured {used:.1} MiB");
    }
}

/// The position schemes' options past their ranges, refused in one line naming the option, the value and the
/// range; their arrays by shape; and every scheme computes, renders and benches.
#[test]
fn position_scheme_options_are_checked_by_name() {
    let d = dir();
    let out = path(&d, "t.npz");
    let o = s(&out);
    let rope = |extra: &[&str], needles: &[&str]| fails(&[&["compute", "--method", "rope", "--out", o], extra].concat(), needles);
    rope(&["--rope-base", "0"], &["invalid rope_base", "got 0", "above 1"]);
    rope(&["--rope-base", "NaN"], &["invalid rope_base"]);
    rope(&["--rope-fraction", "1.5"], &["invalid rope_fraction", "got 1.5", "to 1"]);
    rope(&["--rope-fraction", "0"], &["invalid rope_fraction"]);
    rope(&["--rope-fraction", "0.3125", "--d-model", "16"], &["invalid rope_fraction", "an odd number", "whole pairs"]);
    rope(&["--rope-scale", "0"], &["invalid rope_scale", "0.01 to 1000"]);
    rope(&["--heads", "16", "--d-model", "16"], &["invalid heads", "d_head", "2 or more"]);
    fails(&["compute", "--method", "rope", "--rope-layout", "diagonal", "--out", o], &["rope_layout", "interleaved, half"]);
    let t5 = |extra: &[&str], needles: &[&str]| fails(&[&["compute", "--method", "t5", "--out", o], extra].concat(), needles);
    t5(&["--t5-buckets", "1", "--causal"], &["invalid t5_buckets", "got 1", "2 to 1024"]);
    t5(&["--t5-buckets", "7"], &["invalid t5_buckets", "got 7", "even"]);
    t5(&["--t5-buckets", "-4"], &["invalid t5_buckets", "got -4"]);
    t5(&["--t5-max-distance", "8"], &["invalid t5_max_distance", "got 8", "9 to 1048576"]);
    let arrays = path(&d, "a.npz");
    write_npz(&arrays, &[("t5_bias", ArrayD::zeros(IxDyn(&[3, 4])))]);
    t5(&["--tensors", s(&arrays)], &["shape mismatch in 't5_bias'", "(buckets) or (buckets, heads)"]);
    write_npz(&arrays, &[("alibi_slopes", ArrayD::zeros(IxDyn(&[3])))]);
    fails(&["compute", "--method", "alibi", "--heads", "2", "--tensors", s(&arrays), "--out", o], &["shape mismatch in 'alibi_slopes'", "(heads)"]);
    fails(&["compute", "--method", "relative", "--out", o], &["method", "absolute, shaw, music, rope, alibi, t5"]);
    for method in ["rope", "alibi", "t5", "absolute"] {
        let png = path(&d, &format!("{method}.png"));
        let stage = match method {
            "rope" => "rope_kernel",
            "alibi" => "slopes",
            "t5" => "rel_index",
            _ => "positions",
        };
        for args in [
            vec!["compute", "--method", method, "--n", "9", "--out", o],
            vec!["render", "--method", method, "--n", "9", "--stage", stage, "--out", s(&png)],
            vec!["bench", "--method", method, "--n", "64", "--reps", "1"],
        ] {
            let run = relattn(&args);
            assert!(run.status.success(), "{args:?}: {}", String::from_utf8_lossy(&run.stderr));
        }
    }
}

/// `atlas render` draws the atlas relattn.atlas made of a tiny random Llama as SVG, PNG or one HTML file, and
/// names a metric it does not hold, an unknown order and a truncated file.
#[test]
fn atlas_render_writes_svg_png_and_html_and_names_bad_input() {
    let d = dir();
    let atlas = "tests/fixtures/atlas-tiny-llama.atlas.npz";
    for ext in ["svg", "png", "html"] {
        let out = path(&d, &format!("atlas.{ext}"));
        let o = relattn(&["atlas", "render", atlas, "--metric", "previous_token", "--order", "kv_head", "--out", s(&out)]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let bytes = std::fs::read(&out).unwrap();
        match ext {
            "png" => assert_eq!(&bytes[1..4], b"PNG"),
            _ => {
                let text = String::from_utf8(bytes).unwrap();
                assert!(text.contains("tiny-llama (llama): 4 layers × 8 heads") && text.contains("previous token"), "{ext}");
                if ext == "html" {
                    assert!(!text.contains("http://") && !text.contains("https://") && text.contains("id=\"atlas-data\""));
                }
            }
        }
    }
    let o = s(&path(&d, "x.svg")).to_string();
    fails(&["atlas", "render", atlas, "--metric", "sinkiness", "--out", &o], &["invalid value 'sinkiness'", "first_token, previous_token"]);
    fails(&["atlas", "render", atlas, "--order", "random", "--out", &o], &["invalid value 'random'", "kv_head"]);
    fails(&["atlas", "render", atlas, "--out", s(&path(&d, "x.pdf"))], &["invalid out", ".svg, .png or .html"]);
    let truncated = path(&d, "cut.atlas.npz");
    let bytes = std::fs::read(root().join(atlas)).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    fails(&["atlas", "render", s(&truncated), "--out", &o], &["cannot read", "corrupt .npz"]);
    fails(&["atlas", "render", "Cargo.toml", "--out", &o], &["cannot read 'Cargo.toml'", "not an .npz"]);
}
