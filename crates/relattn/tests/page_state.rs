//! The page's shared state has one writer per field. `www/js/page/state.js` lists the fields several features
//! read, in sections headed `// --- written by MODULE.js ---`; this test reads every script of the page and
//! fails when a module assigns a field (`state.f = …`, `state.f += …`, `++state.f`, or through an alias
//! `const m = state.model; m.f = …`) that its section gives to another module, or a field state.js does not
//! declare. A feature's own state lives in its module and is not listed there.

use std::collections::BTreeMap;
use std::path::Path;

/// Field path ("pinned", "model.shown") → the module its section in state.js names (None: no one assigns it,
/// as for an object whose fields have writers of their own).
fn owners(state_js: &str) -> BTreeMap<String, Option<String>> {
    let mut owners = BTreeMap::new();
    let mut writer: Option<String> = None;
    let mut parent: Option<String> = None;
    for line in state_js.lines() {
        let t = line.trim();
        let indent = line.len() - line.trim_start().len();
        if let Some(section) = t.strip_prefix("// --- ") {
            writer = section.split_once("written by ").map(|(_, rest)| rest.trim_end_matches(" ---").trim().to_string());
            continue;
        }
        if t.starts_with("//") || t.starts_with("/**") || t.starts_with('*') {
            continue;
        }
        if t == "}," {
            parent = None;
            continue;
        }
        let Some((name, _)) = t.split_once(':') else { continue };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let path = match (&parent, indent) {
            (Some(p), 4) => format!("{p}.{name}"),
            _ => name.to_string(),
        };
        owners.insert(path.clone(), writer.clone());
        if t.ends_with('{') {
            parent = Some(path);
        }
    }
    owners
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

/// The field paths that `code` assigns through `prefix` (`state.` or an alias of `state.model`, given as
/// "m." with `base` "model"): the first member, or "model.<member>" under state.model.
fn writes(code: &str, prefix: &str, base: Option<&str>) -> Vec<String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find(prefix) {
        let start = from + at;
        from = start + prefix.len();
        if start > 0 && (ident_char(b[start - 1]) || b[start - 1] == b'.') {
            continue;
        }
        // The member path: ident(.ident)*.
        let mut end = from;
        let mut members = Vec::new();
        loop {
            let s = end;
            while end < b.len() && ident_char(b[end]) {
                end += 1;
            }
            if end == s {
                break;
            }
            members.push(&code[s..end]);
            if end < b.len() && b[end] == b'.' {
                end += 1;
            } else {
                break;
            }
        }
        if members.is_empty() {
            continue;
        }
        let rest = code[end..].trim_start();
        let assigned = ["+=", "-=", "++", "--", "||=", "??=", "&&="].iter().any(|op| rest.starts_with(op))
            || (rest.starts_with('=') && !rest.starts_with("==") && !rest.starts_with("=>"));
        let prefixed = code[..start].trim_end().ends_with("++") || code[..start].trim_end().ends_with("--");
        if !(assigned || prefixed) {
            continue;
        }
        let path = match (base, members.as_slice()) {
            (Some(base), [first, ..]) => format!("{base}.{first}"),
            (None, ["model", second, ..]) => format!("model.{second}"),
            (None, [first, ..]) => first.to_string(),
            _ => unreachable!(),
        };
        out.push(path);
    }
    out
}

/// A script without its comment lines (doc comments mention `state.f = …` in prose).
fn code_of(source: &str) -> String {
    source
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            !(t.starts_with("//") || t.starts_with("/*") || t.starts_with('*'))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_shared_field_has_one_writer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../www");
    let owners = owners(&std::fs::read_to_string(root.join("js/page/state.js")).unwrap());
    for field in ["current", "pinned", "pinnedRow", "mode", "model.shown", "model.position"] {
        assert!(owners.get(field).is_some_and(|w| w.is_some()), "state.js gives {field} no writer: {owners:?}");
    }
    // Every script: www/'s own (the worker, the benchmark) and www/js/'s, in its folders by thread and mode.
    let mut scripts = Vec::new();
    let mut dirs = vec![root.clone(), root.join("js")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && dir != root {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "js") {
                scripts.push(path);
            }
        }
    }
    assert!(scripts.len() > 20, "the page's scripts were not found under {}", root.display());
    let mut wrong = Vec::new();
    for path in &scripts {
        // A module is named by its path under www/js/ (as state.js's sections name their writers).
        let module = path.strip_prefix(root.join("js")).unwrap_or(path.strip_prefix(&root).unwrap()).to_str().unwrap();
        let code = code_of(&std::fs::read_to_string(path).unwrap());
        let mut found = writes(&code, "state.", None);
        for line in code.lines() {
            // const m = state.model;
            if let Some(alias) = line.trim().strip_prefix("const ").and_then(|l| l.strip_suffix(" = state.model;")) {
                found.extend(writes(&code, &format!("{alias}."), Some("model")));
            }
        }
        for field in found {
            match owners.get(&field) {
                None => wrong.push(format!("{module} writes state.{field}, which state.js does not declare")),
                Some(Some(owner)) if owner == module => {}
                Some(owner) => wrong.push(format!("{module} writes state.{field}, whose writer is {owner:?}")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn writes_are_found_in_every_form() {
    let code = "state.a = 1; state.b += 2; ++state.c; state.d.e = 3; if (state.f === 1) g(state.h); state.model.k = 4; x => state.i;";
    assert_eq!(writes(code, "state.", None), ["a", "b", "c", "d", "model.k"]);
    assert_eq!(writes("m.shown = x; m.position === 1; mm.z = 2;", "m.", Some("model")), ["model.shown"]);
}
