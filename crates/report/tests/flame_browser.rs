//! The report's flame graphs in a real browser (Debian's chromium,
//! headless): each graph the HTML report embeds is searched through its
//! own script, as a reader's search box does, and the frames it highlights
//! are counted in the DOM; and a report of a `quick`-sized run with every
//! step profiled stays small enough to open and mail.

mod browser;
mod common;
mod stacks;

use browser::{chromium, console_errors};

use base64::Engine as _;
use throng_report::{Exporter, HtmlExporter};

/// inferno's colour for a frame a search matched.
const MATCHED: &str = "rgb(230,0,230)";

/// The SVG documents the report embeds, by the figure's id, as the
/// browser receives them (each an `<object>` of its own, from a data URL).
fn embedded(html: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for part in html.split("<figure class=\"flame\" id=\"").skip(1) {
        let id = &part[..part.find('"').unwrap()];
        let data = "data=\"data:image/svg+xml;base64,";
        let at = part.find(data).unwrap() + data.len();
        let b64 = &part[at..at + part[at..].find('"').unwrap()];
        let svg = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        out.push((id.to_string(), String::from_utf8(svg).unwrap()));
    }
    out
}

/// A page that loads each graph as the report does (an `<object>`), calls
/// the graph's own `search` for each term once it has loaded, and writes
/// how many frames each search highlighted, and the graph's "Matched"
/// line, into its own DOM.
fn search_page(graphs: &[&str], terms: &[&str]) -> String {
    let mut page = String::from("<!DOCTYPE html><html><body>\n");
    for (i, g) in graphs.iter().enumerate() {
        page.push_str(&format!(
            "<object id=\"g{i}\" type=\"image/svg+xml\" width=\"1200\" data=\"{g}\"></object>\n"
        ));
    }
    page.push_str("<pre id=\"out\"></pre>\n<script>\n");
    page.push_str(&format!(
        "const terms = {};\nconst n = {};\n",
        serde_json::to_string(terms).unwrap(),
        graphs.len()
    ));
    page.push_str(
        r#"let done = 0;
const lines = [];
function run(i) {
  const o = document.getElementById("g" + i);
  const doc = o.contentDocument, win = o.contentWindow;
  const said = doc.getElementById("matched");
  for (const t of terms) {
    win.searching = 0;
    said.textContent = " ";
    win.search(t);
    const hit = doc.querySelectorAll('#frames rect[fill="MATCHED"]').length;
    lines.push("g" + i + " " + t + " " + hit + " [" + said.textContent.trim() + "]");
    win.reset_search();
  }
  if (++done === n) document.getElementById("out").textContent = lines.sort().join("\n");
}
for (let i = 0; i < n; i++) {
  const o = document.getElementById("g" + i);
  const go = () => { if (o.contentDocument && o.contentWindow.search && o.contentDocument.getElementById("frames")) run(i); else setTimeout(go, 10); };
  o.addEventListener("load", () => setTimeout(go, 0));
}
"#
        .replace("MATCHED", MATCHED)
        .as_str(),
    );
    page.push_str("</script></body></html>\n");
    page
}

#[test]
fn a_search_in_each_flame_graph_highlights_exactly_its_frames() {
    let tmp = tempfile::tempdir().unwrap();
    let html = String::from_utf8(HtmlExporter.export(&stacks::profiled()).unwrap()).unwrap();
    let graphs = embedded(&html);
    let ids: Vec<&str> = graphs.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "diff-lighttpd-vs-nginx-tiny-1c-c100.svg",
            "nginx-tiny-1c-c100.svg",
            "lighttpd-tiny-1c-c100.svg"
        ]
    );
    let mut files = Vec::new();
    for (id, svg) in &graphs {
        std::fs::write(tmp.path().join(id), svg).unwrap();
        files.push(id.as_str());
    }
    let page = tmp.path().join("search.html");
    // entry_SYSCALL_64 is in two of each server's three stacks (nginx's
    // open and send, lighttpd's poll and send); do_sys_openat2 in nginx's
    // open alone; tcp_sendmsg in each one's send; no server calls
    // ngx_no_such_function.
    let terms = [
        "entry_SYSCALL_64",
        "do_sys_openat2",
        "tcp_sendmsg",
        "ngx_no_such_function",
    ];
    std::fs::write(&page, search_page(&files, &terms)).unwrap();
    let url = format!("file://{}", page.display());
    let out = chromium(
        &tmp.path().join("profile"),
        &[
            "--allow-file-access-from-files",
            "--run-all-compositor-stages-before-draw",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ],
        &url,
    );
    assert!(out.status.success(), "chromium failed: {out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(console_errors(&stderr), Vec::<&str>::new());
    let dom = String::from_utf8_lossy(&out.stdout);
    let text = &dom[dom.find("<pre id=\"out\">").expect(&dom) + 14..];
    let text = &text[..text.find("</pre>").unwrap()];
    // g0 is the differential: lighttpd's widths, so only lighttpd's
    // frames are drawn (nginx's open path has no width there).
    assert_eq!(
        text,
        "g0 do_sys_openat2 0 []\n\
         g0 entry_SYSCALL_64 2 [Matched: 42.9%]\n\
         g0 ngx_no_such_function 0 []\n\
         g0 tcp_sendmsg 1 [Matched: 28.6%]\n\
         g1 do_sys_openat2 1 [Matched: 30.0%]\n\
         g1 entry_SYSCALL_64 2 [Matched: 50.0%]\n\
         g1 ngx_no_such_function 0 []\n\
         g1 tcp_sendmsg 1 [Matched: 20.0%]\n\
         g2 do_sys_openat2 0 []\n\
         g2 entry_SYSCALL_64 2 [Matched: 42.9%]\n\
         g2 ngx_no_such_function 0 []\n\
         g2 tcp_sendmsg 1 [Matched: 28.6%]"
    );
}

#[test]
fn a_quick_sized_report_with_every_step_profiled_stays_under_5_mb() {
    let run = stacks::quick_run();
    let html = HtmlExporter.export(&run).unwrap();
    let graphs = embedded(&String::from_utf8(html.clone()).unwrap());
    // A graph per server, at the level of its headline figure, and one
    // per compared pair; the other levels' are files of `--flamegraphs`.
    assert_eq!(graphs.len(), 4 + 6);
    let a = throng_report::Analysis::of(&run);
    assert_eq!(throng_report::flames::all(&run, &a.steps).len(), 16 + 6);
    println!(
        "quick-sized report: {} bytes, {} flame graphs",
        html.len(),
        graphs.len()
    );
    assert!(html.len() < 5_000_000, "{} bytes", html.len());
}
