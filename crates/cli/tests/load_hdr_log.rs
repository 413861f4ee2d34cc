//! `throng load --hdr-log` against a real nginx: the interval log read
//! back with HdrHistogram's own reader merges to the run's histogram.

mod support;

use std::time::Duration;

use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use support::{run_bounded, throng, throng_json, Nginx};

/// The log's intervals: each start (seconds from BaseTime) and histogram.
fn intervals(path: &std::path::Path) -> (Vec<(f64, Histogram<u64>)>, String) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut de = Deserializer::new();
    let mut out = Vec::new();
    for entry in IntervalLogIterator::new(text.as_bytes()) {
        if let LogEntry::Interval(i) = entry.expect("a well-formed log") {
            assert_eq!(i.duration(), Duration::from_secs(1));
            let bytes = base64_decode(i.encoded_histogram());
            let h: Histogram<u64> = de.deserialize(&mut &bytes[..]).unwrap();
            out.push((i.start_timestamp().as_secs_f64(), h));
        }
    }
    (out, text)
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

fn merged(parts: &[(f64, Histogram<u64>)]) -> Histogram<u64> {
    let mut all = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for (_, h) in parts {
        all.add(h).unwrap();
    }
    all
}

/// The summary's figures of a histogram, as `latency_us` holds them.
fn figures(h: &Histogram<u64>) -> serde_json::Value {
    serde_json::to_value(throng_load::record::latency(h)).unwrap()
}

#[test]
fn a_counted_run_merges_to_its_histogram() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let log = ng.dir.path().join("run.hlog");
    let j = throng_json(&[
        "load",
        &ng.url("/"),
        "-n",
        "2000",
        "-c",
        "4",
        "-t",
        "2",
        "--hdr-log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(j["completed"], 2000);
    let (parts, text) = intervals(&log);
    assert!(text.starts_with("#[Latency of throng load"));
    assert!(text.contains("\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"));
    let all = merged(&parts);
    assert_eq!(all.len(), 2000);
    assert_eq!(figures(&all), j["latency_us"]);
    // Written beside its name and renamed: nothing else is left.
    let names: Vec<_> = std::fs::read_dir(ng.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("hlog"))
        .collect();
    assert_eq!(names, ["run.hlog"]);
}

#[test]
fn each_second_of_a_timed_run_is_its_own_interval() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let log = ng.dir.path().join("timed.hlog");
    let j = throng_json(&[
        "load",
        &ng.url("/"),
        "-d",
        "2s",
        "-c",
        "4",
        "-t",
        "2",
        "--rate",
        "400",
        "--timeline",
        "--hdr-log",
        log.to_str().unwrap(),
    ]);
    let (parts, _) = intervals(&log);
    let timeline = j["timeline"].as_array().unwrap();
    // Second k of the log is second k of the timeline, response for response.
    let with_data: Vec<&serde_json::Value> = timeline
        .iter()
        .filter(|s| s["completed"].as_u64().unwrap() > 0)
        .collect();
    assert_eq!(parts.len(), with_data.len());
    for (k, (start, h)) in parts.iter().enumerate() {
        assert_eq!(*start, k as f64);
        assert_eq!(
            h.len(),
            timeline[k]["completed"].as_u64().unwrap(),
            "second {k}"
        );
    }
    let all = merged(&parts);
    assert_eq!(all.len(), j["completed"].as_u64().unwrap());
    assert_eq!(figures(&all), j["latency_us"]);
}

#[test]
fn a_log_that_cannot_be_written_is_refused_before_any_request() {
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    // Under a regular file: no directory can hold it.
    let bad = ng.dir.path().join("not-a-dir");
    std::fs::write(&bad, "").unwrap();
    let bad = bad.join("run.hlog");
    let mut cmd = throng();
    cmd.args(["load", &ng.url("/"), "-n", "10"])
        .args(["--hdr-log", bad.to_str().unwrap()]);
    let out = run_bounded(cmd, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err,
        format!(
            "throng: --hdr-log {}: Not a directory (os error 20)\n",
            bad.display()
        )
    );
    assert!(out.stdout.is_empty());
    assert_eq!(ng.quit_and_read_entries().len(), 0);
}
