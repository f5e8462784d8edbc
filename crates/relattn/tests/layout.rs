//! The source tree's layering: one folder (or file) per concept under src/, each on a floor, and no import
//! running back up — a module uses only its own folder and the folders on lower floors. The floors, bottom
//! up, are the order of src/lib.rs's module list; this test keeps that order true.

use std::collections::BTreeSet;
use std::path::Path;

/// Each concept's floor: a module may use its own folder and any folder on a lower floor.
const FLOORS: &[(&str, usize)] = &[
    ("error", 0),
    ("timing", 0),
    ("core", 1),
    ("stage", 1),
    ("positions", 2),
    ("attention", 3),
    ("layer", 4),
    ("render", 5),
    ("gpu", 5),
    ("backend", 6),
    ("pictures", 6),
    ("trained", 7),
    ("protocol", 8),
    ("app", 9),
];

fn floor(concept: &str) -> usize {
    FLOORS.iter().find(|(c, _)| *c == concept).unwrap_or_else(|| panic!("src/{concept}: a concept with no floor in tests/layout.rs")).1
}

/// Every .rs file under `dir`.
fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The concepts a file's code (comments aside) names through `crate::<concept>`, and whether it names an item
/// of the crate root (`crate::Config`: the root's re-exports are for users of the library, not for its
/// modules, whose imports must show the floor they come from).
fn uses(code: &str) -> (BTreeSet<String>, Vec<String>) {
    let (mut concepts, mut root_items) = (BTreeSet::new(), Vec::new());
    for line in code.lines().map(str::trim_start).filter(|l| !l.starts_with("//")) {
        for (at, _) in line.match_indices("crate::") {
            if at > 0 && line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
                continue; // `relattn_crate::` or a macro's `$crate::`
            }
            let name: String = line[at + 7..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if name.starts_with(|c: char| c.is_uppercase()) || line[at + 7..].starts_with('{') {
                root_items.push(line.to_string());
            } else if !name.is_empty() {
                concepts.insert(name);
            }
        }
    }
    (concepts, root_items)
}

#[test]
fn no_import_runs_back_up() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
        if first == "lib.rs" {
            continue; // the root declares and re-exports
        }
        let concept = first.trim_end_matches(".rs").to_string();
        let here = floor(&concept);
        let (concepts, root_items) = uses(&std::fs::read_to_string(file).unwrap());
        for used in concepts.iter().filter(|c| **c != concept) {
            if floor(used) >= here {
                wrong.push(format!("src/{} (floor {here}) uses crate::{used} (floor {})", rel.display(), floor(used)));
            }
        }
        wrong.extend(root_items.iter().map(|l| format!("src/{}: a root re-export, not its module: {l}", rel.display())));
    }
    assert!(wrong.is_empty(), "imports running back up or sideways:\n{}", wrong.join("\n"));
    // Every folder under src/ has a floor, and lib.rs declares the modules in floor order.
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let declared: Vec<usize> = lib.lines().filter_map(|l| l.trim().strip_prefix("pub mod ")).map(|m| floor(m.trim_end_matches(';'))).collect();
    assert_eq!(declared.len(), FLOORS.len(), "lib.rs declares every concept of FLOORS");
}
