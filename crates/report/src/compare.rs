//! `throng compare`: two runs, or two servers of one run, step by step.
//!
//! A change is only called when it is both statistically significant and
//! larger than the noise threshold; everything else is "no change", because
//! a 1% difference between two runs of the same server is what benchmarks
//! look like, not news.

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

use throng_model::{ReasonCode, RunData, StepRecord, StepStatus};
use throng_stats::MedianCi;

use crate::agreement::{self, Agreement};
use crate::article::Block;
use crate::charts::NamedChart;
use crate::error::{ReportError, Result};
use crate::figures::{self, grouped};
use crate::markdown;
use crate::ratios;
use crate::table::{Align, Cell, Column, Table};
use crate::terminal;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    /// Welch's t-test: usable from two rounds a side, which is what short
    /// studies have.
    Welch,
    /// Mann–Whitney U: makes no normality assumption, but cannot reach
    /// p < 0.05 with fewer than four rounds a side.
    MannWhitney,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CompareOptions {
    /// Smallest relative change worth a verdict (0.02 = 2%).
    pub noise: f64,
    /// Significance level (0.05).
    pub alpha: f64,
    pub test: Test,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            noise: 0.02,
            alpha: 0.05,
            test: Test::Welch,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    Faster,
    Slower,
    NoChange,
    /// Fewer than two rounds a side, or no spread at all: the test cannot
    /// say anything.
    #[serde(rename = "not-testable")]
    Untestable,
}

impl Change {
    pub fn label(self) -> &'static str {
        match self {
            Change::Faster => "faster",
            Change::Slower => "slower",
            Change::NoChange => "no change",
            Change::Untestable => "not testable",
        }
    }
}

/// What identifies a step across the two sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepKey {
    /// Set when comparing runs (the same server on both sides).
    pub server: Option<String>,
    pub cores: u32,
    pub workload: String,
    pub concurrency: u32,
    /// The offered rate of an open-model level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
}

impl StepKey {
    pub fn label(&self) -> String {
        figures::labelled([
            self.server.clone(),
            figures::known_cores(self.cores),
            Some(self.workload.clone()),
            Some(format!("c={}", self.concurrency)),
            self.rate.map(|r| format!("{r} req/s offered")),
        ])
    }
}

/// One side of a row: per-round requests per second.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    pub rounds: Vec<f64>,
    pub median: f64,
    /// 95% interval of the median (see `throng_stats::median_ci` for its coverage
    /// with few rounds).
    pub ci: MedianCi,
    /// The step's verdict label, as the JSON has always had it.
    pub verdict: String,
    /// The codes behind a suspect verdict, as stored; none when valid.
    #[serde(skip)]
    pub reasons: Vec<ReasonCode>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub key: StepKey,
    pub a: Side,
    pub b: Side,
    /// (median B − median A) / median A: positive means B is faster.
    pub change: f64,
    pub p_value: Option<f64>,
    pub verdict: Change,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GeoMean {
    pub a: f64,
    pub b: f64,
    /// Geometric mean over rows of median B / median A, minus one.
    pub change: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub options: CompareOptions,
    pub rows: Vec<Row>,
    pub geomean: Option<GeoMean>,
    /// Steps measured on one side only, or failed on either.
    pub unmatched: Vec<String>,
    /// Of those, steps that A measured and B did not, the server having
    /// failed or been skipped there: a regression no ratio can show, which
    /// a gate on slowdowns must not pass.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<String>,
    /// Two runs: what says a change may be the machine's rather than the
    /// servers' (see [`cautions`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cautions: Vec<String>,
    /// Two servers of one run: the lab's paired ratios of B over A, pooled
    /// and per level, turned to B over A when stored the other way round.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paired: Vec<throng_model::Comparison>,
    /// Two runs that both stored paired ratios: whether each pair of
    /// servers' ratio in one run lies inside the other run's interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement: Option<Agreement>,
    /// That check drawn, for `--svg`; the JSON has its figures already.
    #[serde(skip)]
    pub agreement_chart: Option<NamedChart>,
}

/// The line over the step-by-step table when paired ratios lead.
const UNPAIRED: &str = "Unpaired, step by step:";

/// The mark beside a figure whose step's verdict is suspect.
pub const SUSPECT: &str = "†";

impl Side {
    /// Whether the step's verdict is not valid.
    pub fn suspect(&self) -> bool {
        !self.reasons.is_empty()
    }
}

fn samples(s: &StepRecord) -> Vec<f64> {
    s.rounds
        .iter()
        .map(|r| r.summary.requests_per_sec)
        .collect()
}

fn usable(s: &StepRecord) -> bool {
    s.status == StepStatus::Ok && !s.rounds.is_empty()
}

fn side(s: &StepRecord) -> Option<Side> {
    let rounds = samples(s);
    let ci = throng_stats::median_ci(&rounds, 0.95)?;
    Some(Side {
        median: ci.median,
        ci,
        rounds,
        verdict: s.verdict.label(),
        reasons: s.verdict.reasons.iter().map(|r| r.code).collect(),
    })
}

fn row(key: StepKey, a: &StepRecord, b: &StepRecord, opts: &CompareOptions) -> Option<Row> {
    let (sa, sb) = (side(a)?, side(b)?);
    let change = if sa.median > 0.0 {
        (sb.median - sa.median) / sa.median
    } else {
        f64::NAN
    };
    let p_value = match opts.test {
        Test::Welch => throng_stats::welch_t_test(&sa.rounds, &sb.rounds).map(|w| w.p_value),
        Test::MannWhitney => {
            throng_stats::mann_whitney_u(&sa.rounds, &sb.rounds).map(|m| m.p_value)
        }
    };
    let verdict = match p_value {
        None => Change::Untestable,
        Some(p) if p < opts.alpha && change.abs() > opts.noise => {
            if change > 0.0 {
                Change::Faster
            } else {
                Change::Slower
            }
        }
        Some(_) => Change::NoChange,
    };
    Some(Row {
        key,
        a: sa,
        b: sb,
        change,
        p_value,
        verdict,
    })
}

fn finish(
    a: String,
    b: String,
    opts: CompareOptions,
    rows: Vec<Row>,
    unmatched: Vec<String>,
) -> Comparison {
    let ratios: Vec<f64> = rows.iter().map(|r| r.b.median / r.a.median).collect();
    let am: Vec<f64> = rows.iter().map(|r| r.a.median).collect();
    let bm: Vec<f64> = rows.iter().map(|r| r.b.median).collect();
    let geomean = match (
        throng_stats::geometric_mean(&ratios),
        throng_stats::geometric_mean(&am),
        throng_stats::geometric_mean(&bm),
    ) {
        (Some(r), Some(a), Some(b)) => Some(GeoMean {
            a,
            b,
            change: r - 1.0,
        }),
        _ => None,
    };
    Comparison {
        a,
        b,
        options: opts,
        rows,
        geomean,
        unmatched,
        lost: Vec::new(),
        cautions: Vec::new(),
        paired: Vec::new(),
        agreement: None,
        agreement_chart: None,
    }
}

/// The same servers' steps in two runs; B against A.
pub fn compare_runs(a: &RunData, b: &RunData, opts: CompareOptions) -> Comparison {
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    let mut lost = Vec::new();
    for sa in &a.steps {
        let key = StepKey {
            server: Some(sa.server.clone()),
            cores: sa.cores,
            workload: sa.workload.clone(),
            concurrency: sa.concurrency,
            rate: sa.rate,
        };
        let sb = b.steps.iter().find(|s| {
            s.server == sa.server
                && s.cores == sa.cores
                && s.workload == sa.workload
                && s.same_level(sa)
        });
        match sb {
            Some(sb) if usable(sa) && usable(sb) => rows.extend(row(key, sa, sb, &opts)),
            Some(sb) if usable(sa) => {
                let word = match sb.status {
                    StepStatus::Failed => "failed",
                    StepStatus::Skipped => "skipped",
                    StepStatus::Unsupported => "unsupported",
                    StepStatus::Ok => "measured nothing",
                };
                let why = sb.failure.as_deref().and_then(|f| f.lines().next());
                let why = why.map(|w| format!(" ({w})")).unwrap_or_default();
                let line = format!("{}: {word} in run {}{why}", key.label(), b.run.id);
                unmatched.push(line.clone());
                lost.push(line);
            }
            Some(_) => unmatched.push(format!("{}: not measured on both sides", key.label())),
            None => unmatched.push(format!("{}: only in run {}", key.label(), a.run.id)),
        }
    }
    for sb in &b.steps {
        let in_a = a.steps.iter().any(|s| {
            s.server == sb.server
                && s.cores == sb.cores
                && s.workload == sb.workload
                && s.same_level(sb)
        });
        if !in_a {
            let key = StepKey {
                server: Some(sb.server.clone()),
                cores: sb.cores,
                workload: sb.workload.clone(),
                concurrency: sb.concurrency,
                rate: sb.rate,
            };
            unmatched.push(format!("{}: only in run {}", key.label(), b.run.id));
        }
    }
    let cautions = cautions(a, b, &rows);
    let agreement = agreement::between(a, b);
    // The first run's band: the second is read against it.
    let agreement_chart = agreement
        .as_ref()
        .and_then(|g| g.chart(Some(ratios::threshold(a))));
    Comparison {
        lost,
        cautions,
        agreement,
        agreement_chart,
        ..finish(
            format!("run {}", a.run.id),
            format!("run {}", b.run.id),
            opts,
            rows,
            unmatched,
        )
    }
}

/// What says that a change between two runs may be the machine's: the
/// steps' verdicts and the machine checks of each run, where one run has
/// what the other has not, and every server changing alike. Two runs
/// minutes apart on a busy machine made every server "slower" by 11–67%,
/// the servers' ratios to each other holding (1.34 and 1.40), with one
/// mark beside the figures for all of it.
pub fn cautions(a: &RunData, b: &RunData, rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    let reasons = |run: &RunData| {
        let ok: Vec<&StepRecord> = run.steps.iter().filter(|s| usable(s)).collect();
        let mut by: BTreeMap<String, usize> = BTreeMap::new();
        for s in &ok {
            for r in &s.verdict.reasons {
                *by.entry(r.code.to_string()).or_default() += 1;
            }
        }
        let suspect = ok.iter().filter(|s| !s.verdict.is_valid()).count();
        (ok.len(), suspect, by)
    };
    let (na, sa, ra) = reasons(a);
    let (nb, sb, rb) = reasons(b);
    if ra != rb && (sa > 0 || sb > 0) {
        let words = |n: usize, s: usize, r: &BTreeMap<String, usize>| {
            let list: Vec<String> = r.iter().map(|(c, k)| format!("{c} {k}")).collect();
            if list.is_empty() {
                format!("{s} of {n} steps suspect")
            } else {
                format!("{s} of {n} steps suspect ({})", list.join(", "))
            }
        };
        out.push(format!(
            "The runs' verdicts differ: run {}: {}; run {}: {}. A change carried by the \
             steps of one run only may be the machine's, not the servers'.",
            a.run.id,
            words(na, sa, &ra),
            b.run.id,
            words(nb, sb, &rb)
        ));
    }
    for (this, other) in [(a, b), (b, a)] {
        let theirs = figures::flagged_findings(other);
        for f in figures::flagged_findings(this) {
            if !theirs.iter().any(|o| o.check == f.check) {
                out.push(format!(
                    "Run {}'s machine check, not run {}'s: {}: {}",
                    this.run.id, other.run.id, f.check, f.message
                ));
            }
        }
    }
    out.extend(crate::prices::caution(a, b));
    let decided: Vec<&Row> = rows
        .iter()
        .filter(|r| matches!(r.verdict, Change::Slower | Change::Faster))
        .collect();
    let servers: BTreeSet<&str> = decided
        .iter()
        .filter_map(|r| r.key.server.as_deref())
        .collect();
    let tested = rows
        .iter()
        .filter(|r| r.verdict != Change::Untestable)
        .count();
    // Most steps changed, every one the same way, on two servers or more.
    if servers.len() >= 2 && 2 * decided.len() > tested {
        let slower = decided.iter().all(|r| r.verdict == Change::Slower);
        let faster = decided.iter().all(|r| r.verdict == Change::Faster);
        if slower || faster {
            out.push(format!(
                "Every server ({}) is {} wherever a change was found, on most steps: a change of the machine \
                 (its load, its clock, its kernel) is likelier than each server's own; \
                 compare the servers within each run (`throng compare RUN --servers X Y`).",
                servers.into_iter().collect::<Vec<_>>().join(", "),
                if slower { "slower" } else { "faster" }
            ));
        }
    }
    out
}

/// Two servers of one run, step by step; `b` against `a`.
pub fn compare_servers(
    run: &RunData,
    a: &str,
    b: &str,
    opts: CompareOptions,
) -> Result<Comparison> {
    for name in [a, b] {
        if !run.steps.iter().any(|s| s.server == name) {
            let known: Vec<String> = crate::figures::server_names(run);
            return Err(ReportError::Input(format!(
                "run {} has no server {name:?} (it has: {})",
                run.run.id,
                known.join(", ")
            )));
        }
    }
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    for sa in run.steps.iter().filter(|s| s.server == a) {
        let key = StepKey {
            server: None,
            cores: sa.cores,
            workload: sa.workload.clone(),
            concurrency: sa.concurrency,
            rate: sa.rate,
        };
        let sb = run.steps.iter().find(|s| {
            s.server == b && s.cores == sa.cores && s.workload == sa.workload && s.same_level(sa)
        });
        match sb {
            Some(sb) if usable(sa) && usable(sb) => rows.extend(row(key, sa, sb, &opts)),
            Some(_) => unmatched.push(format!("{}: not measured for both servers", key.label())),
            None => unmatched.push(format!("{}: {b} has no such step", key.label())),
        }
    }
    for sb in run.steps.iter().filter(|s| s.server == b) {
        if !run.steps.iter().any(|s| {
            s.server == a && s.cores == sb.cores && s.workload == sb.workload && s.same_level(sb)
        }) {
            let key = StepKey {
                server: None,
                cores: sb.cores,
                workload: sb.workload.clone(),
                concurrency: sb.concurrency,
                rate: sb.rate,
            };
            unmatched.push(format!("{}: {a} has no such step", key.label()));
        }
    }
    let paired = ratios::sorted(run)
        .into_iter()
        .filter_map(|c| ratios::oriented(c, a, b))
        .collect();
    Ok(Comparison {
        paired,
        ..finish(a.to_string(), b.to_string(), opts, rows, unmatched)
    })
}

impl Comparison {
    /// Rows where B is significantly slower than A by more than `threshold`
    /// (0.05 = 5%).
    pub fn slowdowns_beyond(&self, threshold: f64) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.verdict == Change::Slower && -r.change > threshold)
            .collect()
    }

    fn test_name(&self) -> &'static str {
        match self.options.test {
            Test::Welch => "Welch's t-test",
            Test::MannWhitney => "Mann–Whitney U",
        }
    }

    fn footer(&self) -> String {
        let mut s = format!(
            "Medians of per-round req/s with 95% intervals of the median (*: fewer than 6 rounds, so min–max, covering less than 95%). \
             A verdict needs p < {} ({}) and a change beyond {:.1}%; \"not testable\": fewer than 2 rounds a side, or no spread.",
            self.options.alpha,
            self.test_name(),
            self.options.noise * 100.0
        );
        if !self.unmatched.is_empty() {
            s.push_str(&format!(" Not compared: {}.", self.unmatched.join("; ")));
        }
        s
    }

    fn cells(&self, side: &Side) -> String {
        let star = if side.ci.coverage < 0.95 { "*" } else { "" };
        let mark = if side.suspect() {
            format!(" {SUSPECT}")
        } else {
            String::new()
        };
        format!(
            "{} [{}–{}]{star}{mark}",
            grouped(side.median.round() as u64),
            grouped(side.ci.low.round() as u64),
            grouped(side.ci.high.round() as u64)
        )
    }

    /// The line that explains the mark beside suspect figures, with the
    /// reasons they carry; `None` when no figure is marked.
    pub fn legend(&self) -> Option<String> {
        let mut codes: Vec<&str> = self
            .rows
            .iter()
            .flat_map(|r| [&r.a, &r.b])
            .filter(|s| s.suspect())
            .flat_map(|s| s.reasons.iter().map(|c| c.name()))
            .collect();
        if self.rows.iter().all(|r| !r.a.suspect() && !r.b.suspect()) {
            return None;
        }
        codes.sort_unstable();
        codes.dedup();
        let why = if codes.is_empty() {
            String::new()
        } else {
            format!(" ({})", codes.join(", "))
        };
        Some(format!(
            "{SUSPECT}: that side's step has a suspect verdict{why}: its figure may say more about \
             the machine than the server, and a change against it may not be the server's. \
             the HTML report and `throng report --format json` give each step's reasons."
        ))
    }

    fn lines(&self) -> Vec<[String; 6]> {
        let mut v: Vec<[String; 6]> = self
            .rows
            .iter()
            .map(|r| {
                [
                    r.key.label(),
                    self.cells(&r.a),
                    self.cells(&r.b),
                    pct(r.change),
                    r.p_value
                        .map(|p| format!("{p:.3}"))
                        .unwrap_or_else(|| "–".into()),
                    r.verdict.label().to_string(),
                ]
            })
            .collect();
        if let Some(g) = &self.geomean {
            v.push([
                "geometric mean".into(),
                grouped(g.a.round() as u64),
                grouped(g.b.round() as u64),
                pct(g.change),
                String::new(),
                String::new(),
            ]);
        }
        v
    }

    /// The comparison as one table for every format. Every cell is escaped
    /// in Markdown, figures included, as it always was here.
    fn table(&self) -> Table {
        let head = |title: String, align| Column::with_head(Cell::text(title), align);
        let mut t = Table::new(vec![
            head("step".into(), Align::Left),
            head(format!("{} req/s", self.a), Align::Right),
            head(format!("{} req/s", self.b), Align::Right),
            head("change".into(), Align::Right),
            head("p".into(), Align::Right),
            head("verdict".into(), Align::Left),
        ]);
        for line in self.lines() {
            t.push(line.into_iter().map(Cell::text).collect());
        }
        t
    }

    /// What leads when the lab stored paired ratios: one row per sweep,
    /// pooled first; `None` otherwise.
    fn paired_table(&self) -> Option<Table> {
        if self.paired.is_empty() {
            return None;
        }
        let mut t = Table::new(vec![
            Column::left("sweep"),
            Column::with_head(Cell::text(format!("{} / {}", self.b, self.a)), Align::Right),
            Column::right("95% CI"),
            Column::right("pairs"),
            Column::left("decision"),
        ]);
        for c in &self.paired {
            t.push(vec![
                Cell::text(ratios::sweep_label(c)),
                Cell::lit(ratios::ratio_text(c)),
                Cell::lit(ratios::interval_text(c)),
                Cell::lit(grouped(c.pairs.into())),
                Cell::lit(ratios::decision_words(c.decision)),
            ]);
        }
        Some(t)
    }

    /// The line over the paired table.
    fn paired_title(&self) -> String {
        format!(
            "Paired: {}'s requests per second over {}'s, from rounds measured back to back",
            self.b, self.a
        )
    }

    /// What a comparison says, in its order, for every format: the paired
    /// ratios when the lab stored them, then the step-by-step table with
    /// what its marks mean, then, for two runs that both stored paired
    /// ratios, whether they agree pair by pair, then each caution. Each part is a run of blocks;
    /// a terminal sets parts apart with a blank line.
    pub fn parts(&self) -> Vec<Vec<Block>> {
        let mut parts = Vec::new();
        let mut steps = Vec::new();
        if let Some(t) = self.paired_table() {
            parts.push(vec![
                Block::text(self.paired_title()),
                Block::Table(t),
                Block::text(ratios::TABLE_NOTE),
            ]);
            steps.push(Block::text(UNPAIRED));
        }
        steps.push(Block::Table(self.table()));
        if let Some(l) = self.legend() {
            steps.push(Block::text(l));
        }
        steps.push(Block::text(self.footer()));
        parts.push(steps);
        if let Some(a) = &self.agreement {
            parts.push(vec![
                Block::text(a.title()),
                Block::List(a.lines()),
                Block::text(a.tally()),
            ]);
        }
        parts.extend(self.cautions.iter().map(|c| vec![Block::text(c)]));
        parts
    }

    /// A table for the terminal.
    pub fn to_table(&self) -> String {
        terminal::parts(&self.parts())
    }

    pub fn to_markdown(&self) -> String {
        let blocks: Vec<Block> = self.parts().into_iter().flatten().collect();
        markdown::body(&blocks)
    }

    pub fn to_json(&self) -> Result<Vec<u8>> {
        let mut v = serde_json::to_vec_pretty(self)?;
        v.push(b'\n');
        Ok(v)
    }
}

fn pct(change: f64) -> String {
    if change.is_finite() {
        format!("{:+.1}%", change * 100.0)
    } else {
        "–".into()
    }
}
