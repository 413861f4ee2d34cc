//! A built-in study's own text, scaled down for a real run: the tests of
//! the studies that rebuild articles run the file `throng lab NAME` runs,
//! with a few values replaced, so a change to the built-in is tested as
//! shipped.

use std::path::PathBuf;

use throng_lab::Recipes;

/// A built-in study's text, as `throng lab NAME` runs it.
pub fn builtin_text(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../lab/studies")
        .join(format!("{name}.toml"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `text` with `from`, which must occur exactly once, replaced: a built-in
/// that changes fails here rather than run at full size.
pub fn substitute(text: &str, from: &str, to: &str) -> String {
    assert_eq!(
        text.matches(from).count(),
        1,
        "expected {from:?} once in the study:\n{text}"
    );
    text.replacen(from, to, 1)
}

/// Whether a recipe and its backend are installed; when not, says which
/// package would install it.
pub fn is_installed(name: &str) -> bool {
    let recipes = Recipes::builtin();
    let r = recipes.get(name).expect("a built-in recipe");
    let backend = r.backend.as_deref().and_then(|b| recipes.get(b));
    let ok = r.is_installed() && backend.is_none_or(|b| b.is_installed());
    if !ok {
        eprintln!(
            "skipping {name}: {} is not installed (apt-get install {})",
            r.binary, r.package
        );
    }
    ok
}

/// The servers of `wanted` whose recipes (and backends) are installed.
pub fn installed(wanted: &[&str]) -> Vec<String> {
    wanted
        .iter()
        .filter(|name| is_installed(name))
        .map(|s| s.to_string())
        .collect()
}

/// The rows of the Markdown table under `### {sub}` in the section
/// `## {section}`, each cell by its column's heading.
pub fn markdown_table(md: &str, section: &str, sub: &str) -> Vec<Vec<(String, String)>> {
    let from = md
        .find(&format!("## {section}\n"))
        .unwrap_or_else(|| panic!("no section {section}:\n{md}"));
    let rest = &md[from..];
    let start = rest
        .find(&format!("### {sub}\n"))
        .unwrap_or_else(|| panic!("no table {sub}:\n{rest}"));
    // A chart's table follows its caption; the next heading ends the
    // search.
    let lines: Vec<&str> = rest[start..]
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with('|') && !l.starts_with('#'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(lines.len() >= 2, "no table under {sub}:\n{rest}");
    let cells = |l: &str| -> Vec<String> {
        l.trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().to_string())
            .collect()
    };
    let heads = cells(lines[0]);
    lines[2..]
        .iter()
        .map(|l| heads.iter().cloned().zip(cells(l)).collect())
        .collect()
}

/// A row's cell under `column`.
pub fn cell<'a>(row: &'a [(String, String)], column: &str) -> &'a str {
    &row.iter()
        .find(|(h, _)| h == column)
        .unwrap_or_else(|| panic!("no column {column}: {row:?}"))
        .1
}
