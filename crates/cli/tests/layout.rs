//! The layout's promises, checked on the source as it stands, so a change
//! that breaks one fails here rather than in a reviewer's reading:
//! docs/architecture.md says which crate may link which, that no module
//! imports another in a circle, that no function takes so many arguments
//! that clippy had to be told to allow it, and that a file over 800 lines
//! (before its tests) is an alarm.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// The package's name and the workspace crates it depends on for its
/// build (not its tests), read from its manifest's `[dependencies]`.
fn manifest(dir: &Path) -> (String, BTreeSet<String>) {
    let text = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let (mut name, mut deps, mut section) = (String::new(), BTreeSet::new(), String::new());
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        let key = line.split(['=', '.', ' ']).next().unwrap_or("");
        if section == "[package]" && key == "name" {
            name = line.split('"').nth(1).unwrap().to_string();
        }
        if section == "[dependencies]" && key.starts_with("throng") {
            deps.insert(key.to_string());
        }
    }
    (name, deps)
}

fn closure(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(c) = todo.pop() {
        for d in graph.get(&c).into_iter().flatten() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

#[test]
fn each_crate_links_only_what_its_room_may() {
    let graph: BTreeMap<String, BTreeSet<String>> =
        crate_dirs().iter().map(|d| manifest(d)).collect();
    assert!(
        graph.contains_key("throng-load"),
        "crates: {:?}",
        graph.keys()
    );
    // `throng load` is the load crate under the CLI: no server, no lab, no
    // other host comes with it.
    let load = closure(&graph, "throng-load");
    for banned in [
        "throng-lab",
        "throng-servers",
        "throng-remote",
        "throng-report",
    ] {
        assert!(
            !load.contains(banned),
            "throng-load links {banned}: {load:?}"
        );
    }
    // The report and the store read old results on machines with nothing
    // else installed.
    for reader in ["throng-report", "throng-store"] {
        let deps = closure(&graph, reader);
        for banned in [
            "throng-engine",
            "throng-lab",
            "throng-servers",
            "throng-remote",
        ] {
            assert!(!deps.contains(banned), "{reader} links {banned}: {deps:?}");
        }
    }
    // The engine hears of nothing above the model.
    let engine = closure(&graph, "throng-engine");
    assert_eq!(
        engine,
        BTreeSet::from(["throng-model".to_string()]),
        "the engine links more than the model"
    );
    // The test kit is for tests alone.
    for (name, deps) in &graph {
        assert!(
            !deps.contains("throng-testkit"),
            "{name} links the test kit outside its tests"
        );
    }
}

/// The part of a source file before its unit tests, line comments blanked.
fn code_of(text: &str) -> String {
    let body = text.split("#[cfg(test)]").next().unwrap_or("");
    body.lines()
        .map(|l| {
            if l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_function_needs_clippy_to_allow_its_arguments() {
    let mut found = Vec::new();
    for dir in crate_dirs() {
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            if text.contains(concat!("too_many_", "arguments")) {
                found.push(f.display().to_string());
            }
        }
    }
    assert!(
        found.is_empty(),
        "allowed to take too many arguments in {found:?}"
    );
}

#[test]
fn no_source_file_passes_the_alarm_before_its_tests() {
    let mut long = Vec::new();
    for dir in crate_dirs() {
        let mut files = Vec::new();
        rust_files(&dir.join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let body = text.split("#[cfg(test)]").next().unwrap_or("");
            let n = body.matches('\n').count();
            if n > 800 {
                long.push(format!("{} ({n} lines)", f.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "over 800 lines before their tests: {long:?}"
    );
}

/// Every module path a file names through `crate::` or `super::`,
/// grouped imports (`use crate::{a::X, b}`) included, as segments from
/// the crate's root.
fn paths_named(code: &str, here: &[String]) -> Vec<Vec<String>> {
    fn ident(s: &[u8], mut i: usize) -> (String, usize) {
        let start = i;
        while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_') {
            i += 1;
        }
        (String::from_utf8_lossy(&s[start..i]).into_owned(), i)
    }
    // A path from `i` on (just after a `::`), with `base` before it; a
    // group's items each continue `base`.
    fn path(s: &[u8], i: usize, base: Vec<String>, out: &mut Vec<Vec<String>>) {
        if s.get(i) == Some(&b'{') {
            let mut depth = 0;
            let mut j = i;
            let mut item_start = i + 1;
            while j < s.len() {
                match s[j] {
                    b'{' => depth += 1,
                    b'}' | b',' if depth == 1 => {
                        let mut k = item_start;
                        while k < s.len() && s[k].is_ascii_whitespace() {
                            k += 1;
                        }
                        path(s, k, base.clone(), out);
                        item_start = j + 1;
                        if s[j] == b'}' {
                            return;
                        }
                    }
                    b'}' => depth -= 1,
                    _ => {}
                }
                j += 1;
            }
            return;
        }
        let mut segs = base;
        let mut i = i;
        loop {
            let (id, next) = ident(s, i);
            if id.is_empty() {
                break;
            }
            segs.push(id);
            if s.get(next..next + 2) == Some(b"::") {
                i = next + 2;
                if s.get(i) == Some(&b'{') {
                    path(s, i, segs.clone(), out);
                    return;
                }
            } else {
                break;
            }
        }
        out.push(segs);
    }
    let s = code.as_bytes();
    let mut out = Vec::new();
    let boundary = |i: usize| i == 0 || !(s[i - 1].is_ascii_alphanumeric() || s[i - 1] == b'_');
    let mut i = 0;
    while i < s.len() {
        if s[i..].starts_with(b"crate::") && boundary(i) {
            path(s, i + 7, Vec::new(), &mut out);
            i += 7;
        } else if s[i..].starts_with(b"super::") && boundary(i) {
            let mut up = 0;
            let mut j = i;
            while s[j..].starts_with(b"super::") {
                up += 1;
                j += 7;
            }
            let base = here[..here.len().saturating_sub(up)].to_vec();
            path(s, j, base, &mut out);
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Strongly connected groups of more than one node (Tarjan).
fn circles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on: BTreeSet<&'a Vec<String>>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a Vec<String>) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let Some((w, _)) = t.g.get_key_value(w) else {
                continue;
            };
            if !t.index.contains_key(w) {
                visit(t, w);
                let l = t.low[v].min(t.low[w]);
                t.low.insert(v, l);
            } else if t.on.contains(w) {
                let l = t.low[v].min(t.index[w]);
                t.low.insert(v, l);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                comp.push(w.join("::"));
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.found.push(comp);
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.found
}

#[test]
fn no_module_imports_another_that_imports_it_back() {
    let mut found = Vec::new();
    for dir in crate_dirs() {
        let src = dir.join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut code: BTreeMap<Vec<String>, String> = BTreeMap::new();
        for f in &files {
            let rel = f.strip_prefix(&src).unwrap().with_extension("");
            let mut segs: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                segs.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                segs.pop();
            }
            code.insert(segs, code_of(&std::fs::read_to_string(f).unwrap()));
        }
        let known = |p: &[String]| -> Option<Vec<String>> {
            (1..=p.len())
                .rev()
                .map(|n| p[..n].to_vec())
                .find(|m| code.contains_key(m))
        };
        // File by file, a module's own ancestors and descendants aside
        // (`use super::X` from a child is how Rust is written).
        let mut files_graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        // Top-level modules: one room each, however it is split in files.
        let mut top_graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        for (m, text) in &code {
            let top = m.first().cloned().map(|t| vec![t]).unwrap_or_default();
            top_graph.entry(top.clone()).or_default();
            let deps = files_graph.entry(m.clone()).or_default();
            for p in paths_named(text, m) {
                let Some(d) = known(&p) else { continue };
                let related = d.starts_with(m) || m.starts_with(&d);
                if !related {
                    deps.insert(d.clone());
                }
                if !m.is_empty() && !d.is_empty() && d[0] != top[0] {
                    top_graph
                        .entry(top.clone())
                        .or_default()
                        .insert(vec![d[0].clone()]);
                }
            }
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        for c in circles(&files_graph).into_iter().chain(circles(&top_graph)) {
            found.push(format!("crates/{name}: {}", c.join(" <-> ")));
        }
    }
    found.sort();
    found.dedup();
    assert!(found.is_empty(), "import circles: {found:#?}");
}

#[test]
fn the_circle_finder_sees_a_circle_through_a_grouped_import() {
    let here = vec!["a".to_string()];
    let named = paths_named("use crate::{b::X, c};\nfn f() { super::d::g(); }", &here);
    let named: Vec<String> = named.iter().map(|p| p.join("::")).collect();
    assert_eq!(named, ["b::X", "c", "d::g"]);
    let g: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = [
        (vec!["a".into()], BTreeSet::from([vec!["b".into()]])),
        (vec!["b".into()], BTreeSet::from([vec!["a".into()]])),
        (vec!["c".into()], BTreeSet::from([vec!["a".into()]])),
    ]
    .into_iter()
    .collect();
    assert_eq!(circles(&g), vec![vec!["a".to_string(), "b".to_string()]]);
}
