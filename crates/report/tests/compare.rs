//! Verdict rules of `throng compare` on hand-made steps.

mod common;

use throng_report::compare::{compare_servers, Change, CompareOptions, Test};

/// A run with servers "a" and "b", one step each, with the given per-round
/// requests per second.
fn pair(a: &[f64], b: &[f64]) -> throng_model::RunData {
    let mut run = common::rich_run();
    run.steps.clear();
    for (name, rps) in [("a", a), ("b", b)] {
        let mut s = common::step(name, 1, "tiny", 10, 1000.0, 7, 1 << 20);
        s.rounds.truncate(rps.len());
        for (r, v) in s.rounds.iter_mut().zip(rps) {
            r.summary.requests_per_sec = *v;
        }
        s.throughput = throng_stats::estimate(rps);
        run.steps.push(s);
    }
    run
}

fn verdict(a: &[f64], b: &[f64], opts: CompareOptions) -> (Change, f64) {
    let c = compare_servers(&pair(a, b), "a", "b", opts).unwrap();
    assert_eq!(c.rows.len(), 1);
    (c.rows[0].verdict, c.rows[0].change)
}

#[test]
fn significant_but_small_is_no_change() {
    // +1%, p far below 0.05, but inside the 2% noise threshold.
    let (v, change) = verdict(
        &[1000.0, 1001.0, 1002.0],
        &[1010.0, 1011.0, 1012.0],
        CompareOptions::default(),
    );
    assert_eq!(v, Change::NoChange);
    assert!((change - 0.00999).abs() < 1e-4, "{change}");
    // With a 0.5% threshold the same data is a verdict.
    let opts = CompareOptions {
        noise: 0.005,
        ..CompareOptions::default()
    };
    assert_eq!(
        verdict(&[1000.0, 1001.0, 1002.0], &[1010.0, 1011.0, 1012.0], opts).0,
        Change::Faster
    );
}

#[test]
fn large_but_noisy_is_no_change() {
    // -10% on the medians, but the rounds overlap widely: p > 0.05.
    let (v, change) = verdict(
        &[900.0, 1000.0, 1300.0],
        &[700.0, 900.0, 1250.0],
        CompareOptions::default(),
    );
    assert_eq!(v, Change::NoChange);
    assert!((change + 0.1).abs() < 1e-12);
}

#[test]
fn clear_slowdown_is_slower_and_fails_ci() {
    let c = compare_servers(
        &pair(
            &[1000.0, 1004.0, 998.0, 1001.0],
            &[900.0, 903.0, 899.0, 902.0],
        ),
        "a",
        "b",
        CompareOptions::default(),
    )
    .unwrap();
    assert_eq!(c.rows[0].verdict, Change::Slower);
    assert_eq!(c.slowdowns_beyond(0.05).len(), 1);
    assert_eq!(c.slowdowns_beyond(0.15).len(), 0);
    let g = c.geomean.as_ref().unwrap();
    assert!((g.change - (901.0 / 1000.5 - 1.0)).abs() < 1e-12);
}

#[test]
fn mann_whitney_needs_enough_rounds() {
    let opts = CompareOptions {
        test: Test::MannWhitney,
        ..CompareOptions::default()
    };
    // 3 against 3 cannot go below p = 0.1, however clear the difference.
    assert_eq!(
        verdict(&[1000.0, 1001.0, 1002.0], &[800.0, 801.0, 802.0], opts).0,
        Change::NoChange
    );
    // 5 against 5 can: exact p = 2/252.
    let a = [1000.0, 1001.0, 1002.0, 1003.0, 1004.0];
    let b = [800.0, 801.0, 802.0, 803.0, 804.0];
    assert_eq!(verdict(&a, &b, opts).0, Change::Slower);
}

#[test]
fn one_round_is_not_testable() {
    assert_eq!(
        verdict(&[1000.0], &[500.0], CompareOptions::default()).0,
        Change::Untestable
    );
}

#[test]
fn suspect_figures_are_marked_in_the_tables_with_a_legend() {
    let mut run = pair(&[1000.0, 1001.0, 1002.0], &[1010.0, 1011.0, 1012.0]);
    let clean = compare_servers(&run, "a", "b", CompareOptions::default()).unwrap();
    assert_eq!(clean.legend(), None);
    assert!(!clean.to_table().contains('†'));
    run.steps[1]
        .verdict
        .push(throng_model::ReasonCode::Noisy, "wide interval");
    run.steps[1]
        .verdict
        .push(throng_model::ReasonCode::ClientBound, "97% of its core");
    let c = compare_servers(&run, "a", "b", CompareOptions::default()).unwrap();
    // B's figure carries the mark, A's does not; the JSON keeps the verdicts.
    let text = c.to_table();
    let row = text.lines().find(|l| l.contains("c=10")).unwrap();
    assert!(row.contains("1,001 [1,000–1,002]* ┆"), "{row}");
    assert!(row.contains("1,011 [1,010–1,012]* † ┆"), "{row}");
    let legend = "†: that side's step has a suspect verdict (client_bound, noisy): its figure may \
                  say more about the machine than the server, and a change against it may not be \
                  the server's. the HTML report and `throng report --format json` give each step's reasons.";
    assert_eq!(c.legend().as_deref(), Some(legend));
    assert!(text.contains(&format!("\n{legend}\n")), "{text}");
    let md = c.to_markdown();
    assert!(
        md.contains("| 1,001 \\[1,000–1,002\\]\\* | 1,011 \\[1,010–1,012\\]\\* † |"),
        "{md}"
    );
    assert!(md.contains("\n†: that side's step has a suspect verdict (client\\_bound, noisy)"));
    assert_eq!(c.rows[0].b.verdict, "suspect: noisy, client_bound");
}

#[test]
fn a_slower_machine_is_named_before_the_servers_are_blamed() {
    use throng_model::{Finding, ReasonCode, Severity};
    let a = common::rich_run();
    // The same study minutes later with a build running beside it: every
    // server 30% slower, every step starved of CPU, and the machine check
    // said so.
    let mut b = common::rich_run();
    b.run.id = 9;
    for s in &mut b.steps {
        common::scale(s, 0.7);
        s.verdict
            .push(ReasonCode::ServerStarved, "others took its CPU");
    }
    b.run.doctor.push(Finding {
        check: "load.others".into(),
        severity: Severity::Warn,
        message: "rustc used 190% of the CPUs".into(),
        fix: String::new(),
    });
    let c = throng_report::compare::compare_runs(&a, &b, CompareOptions::default());
    let steps = a.steps.iter().filter(|s| !s.rounds.is_empty()).count();
    assert_eq!(c.cautions.len(), 3, "{:#?}", c.cautions);
    assert_eq!(
        c.cautions[0],
        format!(
            "The runs' verdicts differ: run 7: 1 of {steps} steps suspect (client_bound 1); \
             run 9: {steps} of {steps} steps suspect (client_bound 1, server_starved {steps}). \
             A change carried by the steps of one run only may be the machine's, not the \
             servers'."
        )
    );
    assert_eq!(
        c.cautions[1],
        "Run 9's machine check, not run 7's: load.others: rustc used 190% of the CPUs"
    );
    assert!(
        c.cautions[2].starts_with("Every server ("),
        "{}",
        c.cautions[2]
    );
    assert!(c.to_table().contains("Every server ("));
    assert!(c.to_markdown().contains("machine check, not run"));
    // Against itself, nothing to caution.
    let same = throng_report::compare::compare_runs(&a, &a, CompareOptions::default());
    assert!(same.cautions.is_empty(), "{:?}", same.cautions);
}
