use super::*;
use throng_model::Latency;

fn summary() -> Summary {
    Summary {
        completed: 200,
        sent: 1000,
        errors_total: 1,
        requests_per_sec: 10_234.5,
        mb_per_sec: 24.8,
        latency_us: Latency {
            count: 200,
            min: 112,
            mean: 970.25,
            p50: 951,
            p75: 1013,
            p90: 1095,
            p99: 73_213,
            p999: 80_000,
            p9999: 90_000,
            max: 95_500,
            ..Latency::default()
        },
        first_byte_us: Some(Latency {
            count: 200,
            p90: 8_000,
            ..Latency::default()
        }),
        ..Summary::default()
    }
}

fn parse(t: &str) -> Threshold {
    Threshold::parse(t).unwrap()
}

fn figure(t: &str) -> Option<f64> {
    parse(t).figure_of(&summary())
}

fn passes(t: &str) -> bool {
    parse(t).judge(&summary()).passed
}

fn refused(t: &str) -> String {
    Threshold::parse(t).unwrap_err().to_string()
}

#[test]
fn every_operator_compares_as_written() {
    assert!(!passes("p99<50ms"));
    assert!(passes("p99<73.214ms"));
    assert!(!passes("p99<73.213ms"));
    assert!(passes("p99<=73.213ms"));
    assert!(passes("p99>73.212ms"));
    assert!(!passes("p99>73.213ms"));
    assert!(passes("p99>=73.213ms"));
    assert!(!passes("p99>=73.214ms"));
    let t = parse(" p99 <= 50 ms ");
    assert_eq!(t.expression, "p99<=50ms");
    assert_eq!((t.op, t.limit, t.unit), (Op::Le, 50.0, Unit::Ms));
    assert_eq!(t.name(), "p99");
}

#[test]
fn every_unit_scales_the_figure() {
    assert_eq!(figure("p99<1us"), Some(73_213.0));
    assert_eq!(figure("p99<1µs"), Some(73_213.0));
    assert_eq!(figure("p99<1ms"), Some(73.213));
    assert_eq!(figure("p99<1s"), Some(0.073213));
    // 1 error of 1,000 sent is exactly the 0.1% a user writes.
    assert_eq!(figure("errors<0.1%"), Some(0.1));
    assert!(passes("errors<=0.1%"));
    assert!(!passes("errors<0.1%"));
    assert_eq!(figure("errors<1"), Some(1.0));
    assert_eq!(figure("rps>10k"), Some(10.2345));
    assert!(passes("rps>10k"));
    assert!(!passes("rps>10.5k"));
    assert_eq!(figure("rps>10000"), Some(10_234.5));
    assert_eq!(figure("completed<1k"), Some(0.2));
}

#[test]
fn every_figure_reads_its_field() {
    let cases = [
        ("min<1us", 112.0),
        ("mean<1us", 970.25),
        ("p50<1us", 951.0),
        ("p75<1us", 1013.0),
        ("p90<1us", 1095.0),
        ("p99<1us", 73_213.0),
        ("p999<1us", 80_000.0),
        ("p99.9<1us", 80_000.0),
        ("p9999<1us", 90_000.0),
        ("p99.99<1us", 90_000.0),
        ("max<1us", 95_500.0),
        ("latency.p99<1us", 73_213.0),
        ("first_byte.p90<1us", 8_000.0),
        ("errors<1", 1.0),
        ("rps<1", 10_234.5),
        ("requests_per_sec<1", 10_234.5),
        ("mb_per_sec<1", 24.8),
        ("completed<1", 200.0),
        ("sent<1", 1000.0),
    ];
    for (t, want) in cases {
        assert_eq!(figure(t), Some(want), "{t}");
    }
}

#[test]
fn a_run_without_the_figure_crosses_the_threshold() {
    let empty = Summary::default();
    for t in ["p99<50ms", "first_byte.p90<10ms", "errors<1%"] {
        let c = parse(t).judge(&empty);
        assert_eq!((c.figure, c.passed), (None, false), "{t}");
    }
    let c = parse("completed<1").judge(&empty);
    assert_eq!((c.figure, c.passed), (Some(0.0), true));
    assert!(parse("p99<1ms").of_responses());
    assert!(!parse("errors<1%").of_responses());
}

#[test]
fn a_step_is_judged_by_its_worst_round() {
    let mut a = summary();
    let mut b = summary();
    a.latency_us.p99 = 40_000;
    b.latency_us.p99 = 60_000;
    let c = parse("p99<50ms").judge_worst([&a, &b]);
    assert_eq!((c.figure, c.passed), (Some(60.0), false));
    a.requests_per_sec = 900.0;
    b.requests_per_sec = 1100.0;
    let c = parse("rps>1k").judge_worst([&a, &b]);
    assert_eq!((c.figure, c.passed), (Some(0.9), false));
    let c = parse("p99<70ms").judge_worst([&a, &b]);
    assert_eq!((c.figure, c.passed), (Some(60.0), true));
    let c = parse("p99<70ms").judge_worst([&a, &Summary::default(), &b]);
    assert_eq!((c.figure, c.passed), (None, false));
    let c = parse("p99<70ms").judge_worst([]);
    assert_eq!((c.figure, c.passed), (None, false));
}

#[test]
fn each_bad_expression_says_what_is_wrong() {
    let cases = [
        ("", "nothing to judge: write a figure, a comparison and a limit, such as p99<50ms"),
        ("  ", "nothing to judge: write a figure, a comparison and a limit, such as p99<50ms"),
        (
            "p99=50ms",
            "no comparison: write <, <=, > or >= between a figure and a limit, such as p99<50ms",
        ),
        (
            "1ms<p99<50ms",
            "more than one comparison: write one limit per threshold",
        ),
        (
            "p99<=>50ms",
            "more than one comparison: write one limit per threshold",
        ),
        (
            "p98<50ms",
            "`p98` is not a figure: use p50, p75, p90, p99, p999, p9999, min, mean or max \
             (latency; first_byte.p99 for the first byte), errors, rps, mb_per_sec, completed or sent",
        ),
        (
            "first_byte.p98<50ms",
            "`first_byte.p98` is not a figure: use p50, p75, p90, p99, p999, p9999, min, mean or max \
             (latency; first_byte.p99 for the first byte), errors, rps, mb_per_sec, completed or sent",
        ),
        (
            "<50ms",
            "no figure before the comparison, such as p99 in p99<50ms",
        ),
        ("p99<", "no limit to compare p99 with"),
        ("p99<fast", "`fast` is not a number"),
        ("p99<1.2.3ms", "`1.2.3ms` is not a number"),
        ("p99<-5ms", "`-5ms` is not a number"),
        ("p99<50m", "unknown unit `m`: use us, ms, s, % or k"),
        ("rps>10M", "unknown unit `M`: use us, ms, s, % or k"),
        ("p99<50", "p99 is a time: give its unit, us, ms or s (such as p99<50ms)"),
        ("p99<5%", "p99 cannot be in `%`: it is a time, in us, ms or s"),
        ("p99<5k", "p99 cannot be in `k`: it is a time, in us, ms or s"),
        (
            "errors<5ms",
            "errors cannot be in `ms`: it is a count (10, 2k) or a share of sent (0.1%)",
        ),
        ("completed>5%", "completed cannot be in `%`: it is a count (200, 10k)"),
        ("sent>5s", "sent cannot be in `s`: it is a count (200, 10k)"),
        ("rps>5%", "rps cannot be in `%`: it is per second (5000, 10k)"),
        (
            "mb_per_sec>5k",
            "mb_per_sec cannot be in `k`: it is megabytes per second, a number",
        ),
    ];
    for (t, want) in cases {
        assert_eq!(refused(t), want, "{t:?}");
    }
}

#[test]
fn judged_in_order_with_their_expressions() {
    let ts = [parse("p99<50ms"), parse("completed>=200")];
    let got = judge_all(&ts, &summary());
    assert_eq!(
        got,
        vec![
            ThresholdCheck {
                expression: "p99<50ms".into(),
                figure: Some(73.213),
                passed: false
            },
            ThresholdCheck {
                expression: "completed>=200".into(),
                figure: Some(200.0),
                passed: true
            },
        ]
    );
}

#[test]
fn running_figures_are_judged_from_the_totals_so_far() {
    let so_far = SoFar {
        seconds: 2,
        completed: 1_990,
        errors: 10,
        bytes_read: 3_000_000,
    };
    let judged = |t: &str| parse(t).judge_so_far(&so_far).map(|c| (c.figure, c.passed));
    assert_eq!(judged("completed<1"), Some((Some(1990.0), false)));
    assert_eq!(judged("completed<=2k"), Some((Some(1.99), true)));
    assert_eq!(judged("errors<10"), Some((Some(10.0), false)));
    assert_eq!(judged("errors<1%"), Some((Some(0.5), true)));
    assert_eq!(judged("rps>=1k"), Some((Some(0.995), false)));
    assert_eq!(judged("rps>900"), Some((Some(995.0), true)));
    assert_eq!(judged("mb_per_sec>1"), Some((Some(1.5), true)));
    for t in [
        "p99<1ms",
        "first_byte.p90<1ms",
        "sent<10",
        "completed>10",
        "errors>=1",
    ] {
        assert!(!parse(t).judged_running(), "{t}");
        assert_eq!(judged(t), None, "{t}");
    }
    // Nothing is judged before a whole second is counted.
    let none = SoFar::default();
    assert_eq!(parse("rps>1").judge_so_far(&none), None);
    let idle = SoFar { seconds: 1, ..none };
    assert_eq!(parse("errors<1%").judge_so_far(&idle), None);
}
