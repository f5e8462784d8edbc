//! The `relattn` binary: traces, figures, and every error path (message and exit code 2).

use ndarray::{Array2, Array3, ArrayD, Array4, IxDyn};
use ndarray_npy::{NpzReader, NpzWriter};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn relattn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relattn")).args(args).output().expect("run relattn")
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

/// Runs a failing command; checks exit code 2, no panic, and that stderr holds every `needles`.
fn fails(args: &[&str], needles: &[&str]) {
    let out = relattn(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
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
    let o = relattn(&["compute", "--method", "shaw", "--heads", "2", "--clip", "3", "--causal", "--n", "6", "--d-model", "8", "--batch", "2", "--seed", "5", "--out", s(&out), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((json["heads"].as_u64(), json["n"].as_u64(), json["method"].as_str()), (Some(2), Some(6), Some("shaw")));
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
    assert_eq!(rel.slice(ndarray::s![0, 0, .., ..]), ndarray::arr2(&[[44., 23., 18., 18.], [-29., 129., 68., 33.], [66., -59., 214., 113.], [86., 86., -89., 299.]]));
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

#[test]
fn render_writes_svg_and_png() {
    let d = dir();
    for (stage, file, extra) in [("weights", "w.svg", vec![]), ("skew_reshaped", "s.png", vec!["--method", "music", "--causal"]), ("logits", "big.png", vec!["--n", "200"])] {
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

#[test]
fn every_bad_input_is_named_with_exit_code_2() {
    let d = dir();
    let out = path(&d, "t.npz");
    let o = s(&out);
    fails(&["compute", "--n", "0", "--out", o], &["invalid n", "got 0", "≥ 1"]);
    fails(&["compute", "--clip", "-3", "--out", o], &["invalid clip", "got -3", "≥ 0"]);
    fails(&["compute", "--heads", "3", "--d-model", "16", "--out", o], &["invalid heads", "got 3", "divisor of d_model = 16"]);
    fails(&["compute", "--heads", "0", "--out", o], &["invalid heads", "got 0"]);
    fails(&["compute", "--batch", "-1", "--out", o], &["invalid batch", "got -1"]);
    fails(&["compute", "--method", "bert", "--out", o], &["--method", "'bert'", "shaw, music"]);
    fails(&["compute", "--edge", "wrap", "--out", o], &["--edge", "zero, clip"]);
    fails(&["render", "--stage", "softmax", "--out", "f.svg"], &["--stage", "'softmax'", "weights"]);
    fails(&["render", "--stage", "skew_qer", "--out", "f.svg"], &["skew_qer", "Music Transformer"]);
    fails(&["render", "--stage", "weights", "--head", "4", "--heads", "2", "--out", "f.svg"], &["invalid head", "got 4", "0..=1"]);
    fails(&["render", "--stage", "weights", "--out", "f.gif"], &["invalid out", ".svg or .png"]);
    fails(&["render", "--stage", "weights", "--n", "3", "--tokens", "a b", "--out", "f.svg"], &["invalid tokens", "2 tokens", "n = 3"]);
    fails(&["render", "--stage", "weights", "--size", "10x10", "--out", "f.svg"], &["invalid size", "WIDTHxHEIGHT"]);
    fails(&["compute", "--preset", "seed999", "--out", o], &["invalid preset", "seed004"]);
    fails(&["compute", "--n", "200000", "--max-memory-mb", "64", "--out", o], &["needs about", "GiB", "limit is 64.0 MiB", "smaller n"]);
    fails(&["compute", "--n", "4", "--out", "/nonexistent/dir/t.npz"], &["cannot read '/nonexistent/dir/t.npz'"]);

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
    write_npz(&bad, &[("x", ArrayD::zeros(IxDyn(&[5, 8]))), ("w_q", ArrayD::zeros(IxDyn(&[8, 7])))]);
    fails(&["compute", "--tensors", s(&bad), "--out", o], &["shape mismatch in 'w_q'", "[8, 7]", "[8, 8]"]);
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

#[test]
fn help_documents_the_commands() {
    let o = relattn(&["compute", "--help"]);
    let text = String::from_utf8_lossy(&o.stdout);
    for flag in ["--method", "--heads", "--clip", "--causal", "--no-rel-v", "--tensors", "--seed", "--out", "--json", "--preset"] {
        assert!(text.contains(flag), "{flag} missing from help");
    }
}
