//! Stored profiles against a scripted truth: folded stacks whose split is
//! known to the sample, read back into the report's components, its why
//! sentence, its flame graphs' file names, and the line that says a
//! profile is absent rather than empty.

mod common;
mod stacks;

use stacks::profiled;

use throng_report::components::{self, Component};
use throng_report::{Exporter, MarkdownExporter};

#[test]
fn the_split_is_the_samples_over_the_requests() {
    let run = profiled();
    let d = |server: &str| {
        run.steps
            .iter()
            .find(|s| s.server == server && s.cores == 1 && s.concurrency == 100)
            .and_then(|s| s.diagnosis.clone())
            .unwrap()
    };
    let nginx = components::split(&d("nginx")).unwrap();
    let round = |v: f64| (v * 1e9).round() / 1e9;
    let us: Vec<(Component, f64)> = nginx.us.iter().map(|(c, v)| (*c, round(*v))).collect();
    assert_eq!(
        us,
        [
            (Component::Network, 2.0),
            (Component::Files, 3.0),
            (Component::Copies, 0.0),
            (Component::Server, 5.0),
            (Component::Tls, 0.0),
            (Component::Scheduler, 0.0),
            (Component::Other, 0.0),
        ]
    );
    let lighttpd = components::split(&d("lighttpd")).unwrap();
    assert_eq!(round(lighttpd.of(Component::Network)), 3.0);
    assert_eq!(round(lighttpd.total()), 7.0);
}

#[test]
fn the_report_splits_explains_and_says_absent() {
    let run = profiled();
    let md = String::from_utf8(MarkdownExporter { image_dir: None }.export(&run).unwrap()).unwrap();
    let section = &md[md.find("## Where a request's CPU goes").expect(&md)..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    for line in [
        "| nginx | 1 | tiny | 100 | 10.0 µs | 2.0 | 3.0 | 0.0 | 5.0 | 0.0 | 0.0 | 0.0 |",
        "| lighttpd | 1 | tiny | 100 | 7.0 µs | 3.0 | 0.0 | 0.0 | 4.0 | 0.0 | 0.0 | 0.0 |",
        "- apache2-event (tiny, 1 core, c=200): profile absent: no perf on PATH (Debian package linux-perf)",
        "nginx spends 3.0 µs more CPU per request than lighttpd at c=100, 3.0 µs of it in files and page cache (see their flame graphs)",
        "lighttpd against nginx: CPU per request: `diff-lighttpd-vs-nginx-tiny-1c-c100.svg`",
        "nginx: CPU per request: `nginx-tiny-1c-c100.svg`",
        "lighttpd: CPU per request: `lighttpd-tiny-1c-c100.svg`",
    ] {
        assert!(section.lines().any(|l| l == line), "no line {line:?} in\n{section}");
    }
    // The ratio line says it too, beside the syscalls.
    assert!(md.contains("(see their flame graphs)"), "{md}");

    let a = throng_report::Analysis::of(&run);
    let files: Vec<String> = throng_report::flames::all(&run, &a.steps)
        .into_iter()
        .map(|g| g.file)
        .collect();
    assert_eq!(
        files,
        [
            "nginx-tiny-1c-c100.svg",
            "lighttpd-tiny-1c-c100.svg",
            "diff-lighttpd-vs-nginx-tiny-1c-c100.svg"
        ]
    );
}

/// The section of a Markdown report, up to the next.
fn md_section(md: &str) -> String {
    let section = &md[md.find("## Where a request's CPU goes").expect(md)..];
    section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)].to_string()
}

#[test]
fn the_bars_lay_each_servers_components_end_to_end_at_scale() {
    let html = String::from_utf8(throng_report::HtmlExporter.export(&profiled()).unwrap()).unwrap();
    let at = html
        .find("<figure class=\"chart\" id=\"cpu-split-tiny-1c\">")
        .expect("the stacked bars");
    let chart = &html[at..at + html[at..].find("</figure>").unwrap()];
    // nginx 10.0 µs at most: the axis ends at 10, 390 px wide, 39 px a
    // µs. nginx (row 0): network 2.0, files 3.0, server 5.0; lighttpd
    // (row 1): network 3.0, server 4.0; apache2-event has no profile.
    let parts: Vec<&str> = chart
        .lines()
        .filter(|l| l.starts_with("<rect class=\"part\""))
        .collect();
    assert_eq!(
        parts,
        [
            "<rect class=\"part\" x=\"170.0\" y=\"49.0\" width=\"78.0\" height=\"18.0\" fill=\"#0072b2\"><title>nginx (c=100): network 2.0 µs</title></rect>",
            "<rect class=\"part\" x=\"248.0\" y=\"49.0\" width=\"117.0\" height=\"18.0\" fill=\"#e69f00\"><title>nginx (c=100): files and page cache 3.0 µs</title></rect>",
            "<rect class=\"part\" x=\"365.0\" y=\"49.0\" width=\"195.0\" height=\"18.0\" fill=\"#cc79a7\"><title>nginx (c=100): server code 5.0 µs</title></rect>",
            "<rect class=\"part\" x=\"170.0\" y=\"77.0\" width=\"117.0\" height=\"18.0\" fill=\"#0072b2\"><title>lighttpd (c=100): network 3.0 µs</title></rect>",
            "<rect class=\"part\" x=\"287.0\" y=\"77.0\" width=\"156.0\" height=\"18.0\" fill=\"#cc79a7\"><title>lighttpd (c=100): server code 4.0 µs</title></rect>",
        ]
    );
    // The table's headings carry the bars' colours.
    for (name, color) in [
        ("network", "#0072b2"),
        ("files and page cache", "#e69f00"),
        ("other kernel", "#7f7f7f"),
    ] {
        let th = format!(
            "<th><span class=\"swatch\" style=\"display:inline-block;width:0.8em;height:0.8em;\
             margin-right:0.3em;background:{color}\"></span>{name}</th>"
        );
        assert!(html.contains(&th), "no {th}");
    }
    // Every component in the legend, in the table's order.
    assert_eq!(chart.matches("<rect class=\"key\"").count(), 7);
    let legend = chart.find(">network</text>").unwrap();
    assert!(legend < chart.find(">files and page cache</text>").unwrap());
    assert!(chart.contains(">10.0 µs</text>") && chart.contains(">7.0 µs</text>"));
    // Text has the table alone.
    let md = String::from_utf8(
        MarkdownExporter { image_dir: None }
            .export(&profiled())
            .unwrap(),
    )
    .unwrap();
    assert!(!md.contains("CPU per request by component, tiny"), "{md}");
}

fn with_counters(run: &mut throng_model::RunData, c: &throng_model::HwCounters) {
    for s in &mut run.steps {
        if let Some(p) = s.diagnosis.as_mut().and_then(|d| d.profile.as_mut()) {
            if p.absent.is_none() {
                p.counters = Some(c.clone());
            }
        }
    }
}

#[test]
fn counters_are_per_request_where_the_machine_has_them_and_said_absent_where_not() {
    // Over 9000 requests: 3000 cycles, 4000 instructions, 10 cache misses
    // a request.
    let mut run = profiled();
    with_counters(
        &mut run,
        &throng_model::HwCounters {
            absent: None,
            cycles: 27_000_000,
            instructions: 36_000_000,
            cache_misses: 90_000,
        },
    );
    let md = String::from_utf8(MarkdownExporter { image_dir: None }.export(&run).unwrap()).unwrap();
    let section = md_section(&md);
    for line in [
        "| nginx | 1 | tiny | 100 | 10.0 µs | 2.0 | 3.0 | 0.0 | 5.0 | 0.0 | 0.0 | 0.0 | 3000 | 4000 | 1.33 | 10.0 |",
        "| lighttpd | 1 | tiny | 100 | 7.0 µs | 3.0 | 0.0 | 0.0 | 4.0 | 0.0 | 0.0 | 0.0 | 3000 | 4000 | 1.33 | 10.0 |",
    ] {
        assert!(section.lines().any(|l| l == line), "no line {line:?} in\n{section}");
    }
    assert!(!section.contains("Hardware counters"), "{section}");

    let mut run = profiled();
    with_counters(
        &mut run,
        &throng_model::HwCounters {
            absent: Some(
                "not available on this machine: perf stat: cycles <not supported>, \
                 instructions <not supported>, cache-misses <not supported>"
                    .into(),
            ),
            ..Default::default()
        },
    );
    let md = String::from_utf8(MarkdownExporter { image_dir: None }.export(&run).unwrap()).unwrap();
    let section = md_section(&md);
    // Said once, for both steps (Markdown escapes perf's angle
    // brackets); the table as it was without counters.
    assert_eq!(
        section
            .matches(
                "Hardware counters (cycles, instructions, cache misses): not available on this \
                 machine: perf stat: cycles &lt;not supported&gt;, instructions &lt;not \
                 supported&gt;, cache-misses &lt;not supported&gt;."
            )
            .count(),
        1,
        "{section}"
    );
    assert!(section
        .lines()
        .any(|l| l
            == "| nginx | 1 | tiny | 100 | 10.0 µs | 2.0 | 3.0 | 0.0 | 5.0 | 0.0 | 0.0 | 0.0 |"));
}

#[test]
fn a_profile_short_of_its_syscall_counts_floor_is_said_to_be() {
    // nginx's counts: openat, newfstatat and close once a request, at
    // least 0.30 µs, against 3.0 µs in files; recvfrom, writev, 0.08
    // epoll_wait and 0.004 accept4, at least 0.21 µs, against 2.0 µs in
    // the network. lighttpd's 0.04 file calls stand for under a sample.
    let md = String::from_utf8(
        MarkdownExporter { image_dir: None }
            .export(&profiled())
            .unwrap(),
    )
    .unwrap();
    assert!(
        !md_section(&md).contains("read its split with care"),
        "{md}"
    );
    // The open path sampled where no symbol names it: other kernel, and
    // no CPU in files against three file calls a request.
    let nginx = "\
nginx;ngx_open_cached_file;[unknown];entry_SYSCALL_64_[k];[kernel.kallsyms]_[k] 270
nginx;ngx_http_parse_request_line 450
nginx;ngx_writev;writev;entry_SYSCALL_64_[k];tcp_sendmsg_[k] 180
";
    let unnamed = |requests: u64| {
        let mut run = profiled();
        for s in &mut run.steps {
            if s.server == "nginx" && s.cores == 1 && s.concurrency == 100 && s.workload == "tiny" {
                let d = s.diagnosis.as_mut().unwrap();
                d.profile = Some(stacks::profile(nginx));
                d.requests = requests;
            }
        }
        let md =
            String::from_utf8(MarkdownExporter { image_dir: None }.export(&run).unwrap()).unwrap();
        md_section(&md)
            .lines()
            .filter(|l| l.contains("read its split with care"))
            .map(str::to_string)
            .collect::<Vec<String>>()
    };
    assert_eq!(
        unnamed(9_000),
        [
            "nginx (tiny, 1 core, c=100): its syscall count gives 3.00 file calls a request, at \
          least 0.30 µs of CPU, but its profile puts 0.00 µs in files and page cache: read its \
          split with care"
        ]
    );
    // Over 300 requests the floor stands for 0.9 of a sample: not judged.
    assert_eq!(unnamed(300), Vec::<String>::new());
}

#[test]
fn the_json_leaves_the_stacks_out_unless_asked() {
    let run = profiled();
    let plain = String::from_utf8(throng_report::JsonExporter.export(&run).unwrap()).unwrap();
    let with =
        String::from_utf8(throng_report::JsonWithStacksExporter.export(&run).unwrap()).unwrap();
    // Two profiled steps, each in the stored run and in the figures.
    assert_eq!(plain.matches("\"folded_gz\"").count(), 0);
    assert_eq!(with.matches("\"folded_gz\"").count(), 4);
    // The figures of a profile stay: its samples, nginx's 900 and
    // lighttpd's 630, twice each.
    for json in [&plain, &with] {
        assert_eq!(json.matches("\"samples\": 900").count(), 2);
        assert_eq!(json.matches("\"samples\": 630").count(), 2);
    }
}
