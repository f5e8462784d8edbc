//! One spelling per option: [`OPTIONS`] is every option of a layer, and every front end takes exactly these
//! names — the command line's flags (`-` for `_`; crates/relattn-cli/tests/cli.rs checks the binary's help), the page's requests and links (serde; Python's keywords go
//! through the same serde, python/tests/test_relattn.py), the page's TypeScript type (ts-rs, in
//! www/js/types/protocol.d.ts) and the page's controls (the ids of www/index.html's `data-option` elements).

use clap::Args;
use relattn::layer::scenario::Spec;
use relattn::options::{LayerOptions, Limits};
use relattn::Config;
use std::collections::BTreeSet;
use std::path::Path;

/// Every option, in the order of `LayerOptions`' fields.
const OPTIONS: [&str; 32] = [
    "preset",
    "method",
    "n",
    "d_model",
    "heads",
    "clip",
    "batch_size",
    "seed",
    "causal",
    "relative_values",
    "per_head_tables",
    "relative_only",
    "logit_scale",
    "window",
    "chunk",
    "softcap",
    "norm_eps",
    "edge",
    "implementation",
    "rope_base",
    "rope_fraction",
    "rope_layout",
    "rope_scale",
    "t5_buckets",
    "t5_max_distance",
    "position_buckets",
    "max_relative_positions",
    "deberta_terms",
    "max_position",
    "bert_terms",
    "segments",
    "positions_in_x",
];

/// The repository's root (www/).
fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn serde_reads_and_writes_every_option_by_its_name() {
    assert_eq!(LayerOptions::names(), OPTIONS);
    // Every option written is read back under the same name (none lands among the unknown keys).
    let all = LayerOptions { preset: Some("seed004".into()), ..LayerOptions::of(&Config::default(), &Spec::default(), true) };
    let back: LayerOptions = serde_json::from_value(serde_json::to_value(&all).unwrap()).unwrap();
    assert_eq!(back, all);
    assert!(back.unknown.is_empty());
}

#[test]
fn the_command_line_has_a_flag_per_option() {
    let command = LayerOptions::augment_args(clap::Command::new("relattn"));
    let flags: Vec<String> = command.get_arguments().map(|a| a.get_long().expect("a long flag").replace('-', "_")).collect();
    assert_eq!(flags, OPTIONS);
}

#[test]
fn the_page_type_and_controls_are_the_options() {
    let types = std::fs::read_to_string(root().join("www/js/types/protocol.d.ts")).unwrap();
    let decl = types.split("export type LayerOptions = {").nth(1).expect("LayerOptions in protocol.d.ts").split("};").next().unwrap();
    let fields: Vec<&str> = decl
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('*') && !l.starts_with("/**") && !l.starts_with("*/"))
        .filter_map(|l| l.split_once("?:").map(|(name, _)| name.trim()))
        .collect();
    assert_eq!(fields, OPTIONS);
    let html = std::fs::read_to_string(root().join("www/index.html")).unwrap();
    let controls: BTreeSet<&str> = html
        .split('<')
        .filter(|tag| tag.contains(" data-option"))
        .map(|tag| tag.split("id=\"").nth(1).and_then(|r| r.split('"').next()).expect("an option control with an id"))
        .collect();
    assert_eq!(controls, OPTIONS.into_iter().collect());
}

#[test]
fn old_names_are_refused_with_the_list() {
    for old in ["batch", "no_rel_v", "rel_v", "per_head", "settings"] {
        let o: LayerOptions = serde_json::from_value(serde_json::json!({ old: 1 })).unwrap();
        let e = o.resolve(&Limits::NONE).err().unwrap();
        assert_eq!(e.field(), "option");
        assert!(e.to_string().contains(&format!("'{old}'")) && e.to_string().contains("batch_size, seed"), "{e}");
    }
}

/// Every numeric option refused with its real range (#41 items 8 and 10: `--t5-buckets -1` said "≥ 0" where
/// 4 to 1024, even, holds): each bad value goes the whole way (resolved, then the scenario built, where the
/// ranges that depend on each other are checked), and the refusal names the option and states its range.
#[test]
fn every_refusal_states_the_real_range() {
    use relattn::options::Resolved;
    use relattn::Scenario;
    let cases: [(&str, &str); 28] = [
        (r#"{"n": -1}"#, "a whole number ≥ 1"),
        (r#"{"d_model": 0}"#, "a whole number ≥ 1"),
        (r#"{"heads": -2}"#, "a whole number ≥ 1"),
        (r#"{"heads": 3, "d_model": 16}"#, "a divisor of d_model = 16"),
        (r#"{"clip": -1}"#, "a whole number ≥ 0"),
        (r#"{"batch_size": 0}"#, "a whole number ≥ 1"),
        (r#"{"seed": -3}"#, "a whole number in 0..=9007199254740991"),
        (r#"{"method": "t5", "t5_buckets": -1}"#, "4 to 1024, even"),
        (r#"{"method": "t5", "t5_buckets": 7}"#, "4 to 1024, even"),
        (r#"{"method": "t5", "causal": true, "t5_buckets": 1}"#, "2 to 1024"),
        (r#"{"method": "t5", "t5_max_distance": -5}"#, "9 to 1048576 (above the 8 exact buckets)"),
        (r#"{"method": "t5", "t5_buckets": 8, "t5_max_distance": 2}"#, "3 to 1048576 (above the 2 exact buckets)"),
        (r#"{"method": "deberta", "position_buckets": -1}"#, "0 (no buckets) or 2 to 65536"),
        (r#"{"method": "deberta", "position_buckets": 1}"#, "0 (no buckets) or 2 to 65536"),
        (r#"{"method": "deberta", "max_relative_positions": 100}"#, "130 to 65536 (above position_buckets / 2 + 1)"),
        (r#"{"method": "deberta", "position_buckets": 0, "max_relative_positions": 0}"#, "1 to 65536"),
        (r#"{"method": "bert_relative", "max_position": 0}"#, "1 to 65536"),
        (r#"{"method": "bert_relative", "max_position": -3}"#, "1 to 65536"),
        (r#"{"method": "bert_relative", "n": 40, "max_position": 39}"#, "at least the 40 positions of the sequence"),
        (r#"{"method": "transformer_xl", "segments": -1}"#, "a whole number in 0..=65536"),
        (r#"{"method": "transformer_xl", "segments": 2.5}"#, "a whole number in 0..=65536"),
        (r#"{"method": "rope", "rope_base": -2}"#, "above 1 to 1000000000"),
        (r#"{"method": "rope", "rope_fraction": -0.5}"#, "above 0 to 1"),
        (r#"{"method": "rope", "rope_scale": -1}"#, "from 0.01 to 1000"),
        (r#"{"method": "rope", "d_model": 10, "rope_fraction": 0.3}"#, "whole pairs"),
        (r#"{"window": -4}"#, "a whole number ≥ 0"),
        (r#"{"softcap": -1}"#, "0 (no cap), or above 0 up to 1e4"),
        (r#"{"logit_scale": {"factor": -1}}"#, "a factor above 0 and at most 1e4"),
    ];
    for (json, range) in cases {
        let options: LayerOptions = serde_json::from_str(json).unwrap();
        let field = json.trim_matches(['{', '}']).rsplit(", ").next().unwrap().split('"').nth(1).unwrap();
        let field = if json.contains(r#""heads": 3"#) { "heads" } else { field };
        let e = options
            .resolve(&Limits::NONE)
            .and_then(|Resolved { config, spec, arrays, per_head_tables }| Scenario::build(&config, &spec, arrays, per_head_tables).map(drop))
            .expect_err(json);
        assert_eq!(e.field(), field, "{json}: {e}");
        assert!(e.to_string().contains(range), "{json}: {e}");
    }
}
