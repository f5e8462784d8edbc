//! The source tree's layering, across the two library crates: one folder (or file) per concept under each
//! crate's src/, each on a floor, and no import running back up. relattn-core (the math) is the ground: its
//! concepts use only their own folder and lower floors of relattn-core, and it depends on no crate of the
//! workspace nor on clap, serde (but as an optional feature), plotters or ts-rs. relattn stands on it: its
//! concepts use relattn-core by that name (never through relattn's re-exports) and their own lower floors.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// relattn-core's concepts and floors, bottom up.
const CORE_FLOORS: &[(&str, usize)] =
    &[("error", 0), ("timing", 0), ("core", 1), ("stage", 1), ("positions", 2), ("attention", 3), ("layer", 4), ("gpu", 5), ("atlas", 5), ("backend", 6)];

/// relattn's own concepts and floors, bottom up (all above relattn-core).
const FLOORS: &[(&str, usize)] = &[("options", 0), ("files", 1), ("render", 2), ("pictures", 3), ("trained", 4), ("protocol", 5), ("app", 6)];

fn floor(floors: &[(&str, usize)], krate: &str, concept: &str) -> usize {
    floors.iter().find(|(c, _)| *c == concept).unwrap_or_else(|| panic!("{krate}/src/{concept}: a concept with no floor in tests/layout.rs")).1
}

/// Every .rs file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The concepts a file's code (comments aside) names through `<prefix>::<concept>`, and the lines that name an
/// item of the crate root that way (`crate::Config`: the root's re-exports are for users of the library, not
/// for its modules, whose imports must show the floor they come from).
fn uses(code: &str, prefix: &str) -> (BTreeSet<String>, Vec<String>) {
    let (mut concepts, mut root_items) = (BTreeSet::new(), Vec::new());
    let pat = format!("{prefix}::");
    for line in code.lines().map(str::trim_start).filter(|l| !l.starts_with("//")) {
        for (at, _) in line.match_indices(&pat) {
            if at > 0 && line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
                continue; // `relattn_crate::` or a macro's `$crate::`
            }
            let rest = &line[at + pat.len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if name.starts_with(|c: char| c.is_uppercase()) || rest.starts_with('{') {
                root_items.push(line.to_string());
            } else if !name.is_empty() {
                concepts.insert(name);
            }
        }
    }
    (concepts, root_items)
}

/// Each file of `krate`'s src/ (but lib.rs), with its concept and code.
fn files(krate: &str) -> Vec<(String, String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(krate).join("src");
    let mut paths = Vec::new();
    sources(&src, &mut paths);
    paths
        .into_iter()
        .filter_map(|file| {
            let rel = file.strip_prefix(&src).unwrap().display().to_string();
            let concept = rel.split('/').next().unwrap().trim_end_matches(".rs").to_string();
            (concept != "lib").then(|| (format!("{krate}/src/{rel}"), concept, std::fs::read_to_string(&file).unwrap()))
        })
        .collect()
}

/// Each lib.rs declares exactly the concepts of its floor table.
fn declared(krate: &str) -> BTreeSet<String> {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(krate).join("src/lib.rs")).unwrap();
    lib.lines().filter_map(|l| l.trim().strip_prefix("pub mod ")).map(|m| m.trim_end_matches(';').to_string()).collect()
}

#[test]
fn no_import_runs_back_up() {
    let mut wrong = Vec::new();
    for (path, concept, code) in files("relattn-core") {
        let here = floor(CORE_FLOORS, "relattn-core", &concept);
        let (concepts, root_items) = uses(&code, "crate");
        for used in concepts.iter().filter(|c| **c != concept) {
            let there = floor(CORE_FLOORS, "relattn-core", used);
            if there >= here {
                wrong.push(format!("{path} (floor {here}) uses crate::{used} (floor {there})"));
            }
        }
        wrong.extend(root_items.iter().map(|l| format!("{path}: a root re-export, not its module: {l}")));
    }
    for (path, concept, code) in files("relattn") {
        let here = floor(FLOORS, "relattn", &concept);
        let (concepts, root_items) = uses(&code, "crate");
        for used in concepts.iter().filter(|c| **c != concept) {
            if CORE_FLOORS.iter().any(|(c, _)| c == used) {
                wrong.push(format!("{path} uses crate::{used}: relattn-core's, named relattn_core::{used}"));
            } else if floor(FLOORS, "relattn", used) >= here {
                wrong.push(format!("{path} (floor {here}) uses crate::{used} (floor {})", floor(FLOORS, "relattn", used)));
            }
        }
        wrong.extend(root_items.iter().map(|l| format!("{path}: a root re-export, not its module: {l}")));
        let (core_concepts, core_root) = uses(&code, "relattn_core");
        wrong.extend(core_concepts.iter().filter(|c| !CORE_FLOORS.iter().any(|(k, _)| k == *c)).map(|c| format!("{path}: relattn_core::{c} is no concept")));
        wrong.extend(core_root.iter().map(|l| format!("{path}: relattn-core's root re-export, not its module: {l}")));
    }
    assert!(wrong.is_empty(), "imports running back up or sideways:\n{}", wrong.join("\n"));
    let names = |f: &[(&str, usize)]| f.iter().map(|(c, _)| c.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(declared("relattn-core"), names(CORE_FLOORS), "relattn-core's lib.rs declares every concept of CORE_FLOORS");
    assert_eq!(declared("relattn"), names(FLOORS), "relattn's lib.rs declares every concept of FLOORS");
}

/// The math crate's own dependencies (normal and target-specific, dev-dependencies aside): none of the
/// workspace's crates, and clap, plotters, serde_json and ts-rs not at all, serde and ts-rs only as optional
/// features. `make check` builds it alone, with no features (cargo clippy -p relattn-core).
#[test]
fn the_math_crate_stands_alone() {
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../relattn-core/Cargo.toml")).unwrap();
    let mut section = String::new();
    let mut wrong = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        let normal = section == "[dependencies]" || (section.ends_with(".dependencies]") && !section.contains("dev-dependencies"));
        let Some((name, spec)) = line.split_once('=') else { continue };
        let name = name.trim();
        if !normal || line.starts_with('#') {
            continue;
        }
        let optional = spec.contains("optional = true");
        if name.starts_with("relattn") || spec.contains("path =") {
            wrong.push(format!("{section} {name}: a crate of the workspace"));
        }
        if ["clap", "plotters", "plotters-svg", "serde_json", "colorous", "safetensors", "midly", "zip", "ndarray-npy"].contains(&name) {
            wrong.push(format!("{section} {name}: not the math's"));
        }
        if ["serde", "ts-rs"].contains(&name) && !optional {
            wrong.push(format!("{section} {name}: only behind a feature"));
        }
    }
    assert!(wrong.is_empty(), "relattn-core's dependencies:\n{}", wrong.join("\n"));
}
