//! `throng compare A B`, or `throng compare RUN --servers X Y`: step by step,
//! with a verdict only where the change is significant and beyond noise;
//! two servers of a run that stored paired ratios lead with those; two runs
//! that both stored them are checked against each other pair by pair.
//!
//! Exit status: 0 when compared; 1 when a gate asked for fails
//! (`--fail-if-slower`, `--fail-on-disagreement`); 2 when the comparison
//! could not be made (a missing run, a bad option).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use throng_report::compare::{compare_runs, compare_servers, CompareOptions, Test};

use crate::cmd_report::open_store;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum CompareFormat {
    Table,
    Md,
    Json,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum TestArg {
    /// Welch's t-test (works from 2 rounds a side).
    Welch,
    /// Mann–Whitney U (needs 4 or more rounds a side to reach p < 0.05).
    MannWhitney,
}

#[derive(clap::Args)]
#[command(
    after_help = "Exit status: 0 when compared; 1 when --fail-if-slower finds a step \
    significantly slower beyond its limit or lost, or --fail-on-disagreement finds a pair of \
    servers whose ratios in the two runs lie outside each other's intervals; 2 when the \
    comparison cannot be made (a missing run or database, a bad option)."
)]
pub struct CompareArgs {
    /// Two run ids (B is compared with A), or one with --servers.
    #[arg(required = true, num_args = 1..=2, value_name = "RUN")]
    pub runs: Vec<i64>,
    /// Compare two servers of one run: B against A.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub servers: Option<Vec<String>>,
    /// Results database written by `throng lab`.
    #[arg(long, default_value = "throng.db", value_parser = crate::args::out_path)]
    pub db: PathBuf,
    /// Changes smaller than this are "no change" even when significant.
    #[arg(long, default_value = "2%", value_parser = parse_percent)]
    pub noise: f64,
    /// Exit with status 1 when a step is significantly slower by more than
    /// this (e.g. 5%), or measured in A failed in B, for CI.
    #[arg(long, value_parser = parse_percent, value_name = "PERCENT")]
    pub fail_if_slower: Option<f64>,
    /// Exit with status 1 when, for a pair of servers both runs compared,
    /// one run's paired ratio lies outside the other's 95% interval.
    #[arg(long, conflicts_with = "servers")]
    pub fail_on_disagreement: bool,
    #[arg(long, value_enum, default_value = "table")]
    pub format: CompareFormat,
    /// Also draw the two runs' paired ratios, pair by pair with their 95%
    /// intervals on one log axis, as an SVG forest plot in FILE.
    #[arg(long, value_name = "FILE", conflicts_with = "servers", value_parser = crate::args::out_path)]
    pub svg: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "welch")]
    pub test: TestArg,
}

/// "5%" or "5" → 0.05.
fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let marked = t.ends_with('%');
    let n = t.trim_end_matches('%').trim();
    let v: f64 = n
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage like 5%"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("{s:?} is out of range: give 0% to 100%"));
    }
    // A study writes 5% as 0.05, so a bare 0.05 here could mean either:
    // the `%` says which.
    if !marked && v > 0.0 && v < 1.0 {
        return Err(format!(
            "{s:?} could be {}% or {v}%: write it with %",
            v * 100.0
        ));
    }
    Ok(v / 100.0)
}

pub fn run(args: CompareArgs) -> anyhow::Result<u8> {
    let opts = CompareOptions {
        noise: args.noise,
        test: match args.test {
            TestArg::Welch => Test::Welch,
            TestArg::MannWhitney => Test::MannWhitney,
        },
        ..CompareOptions::default()
    };
    // Every step would be "equal" to itself: a typo, not a finding.
    if let ([a, b], None) = (args.runs.as_slice(), &args.servers) {
        if a == b {
            anyhow::bail!("run {a} compared with itself: give two different runs");
        }
    }
    let store = open_store(&args.db)?;
    let comparison = match (args.runs.as_slice(), &args.servers) {
        ([_], Some(s)) if s[0] == s[1] => {
            anyhow::bail!(
                "server {} compared with itself: give two different servers",
                s[0]
            )
        }
        ([run], Some(s)) => {
            let data = store.load_run(*run)?;
            compare_servers(&data, &s[0], &s[1], opts)?
        }
        ([a, b], None) => compare_runs(&store.load_run(*a)?, &store.load_run(*b)?, opts),
        ([_], None) => anyhow::bail!("give two runs, or one run with --servers A B"),
        (_, Some(_)) => anyhow::bail!("--servers compares two servers of one run: give one run"),
        _ => anyhow::bail!("give one or two runs"),
    };
    // Stored paired ratios are a comparison of their own, step or no step.
    let checked = comparison.agreement.as_ref().is_some_and(|a| {
        a.pairs
            .iter()
            .any(|p| p.first.is_some() && p.second.is_some())
    });
    if comparison.rows.is_empty() && comparison.paired.is_empty() && !checked {
        anyhow::bail!(
            "no step was measured on both sides{}",
            if comparison.unmatched.is_empty() {
                String::new()
            } else {
                format!(": {}", comparison.unmatched.join("; "))
            }
        );
    }
    // Before anything is printed: a picture asked for and not drawable is
    // the command's failure, not a footnote.
    if let Some(path) = &args.svg {
        let Some(chart) = &comparison.agreement_chart else {
            anyhow::bail!(
                "--svg {}: {} and {} did not both store paired ratios, so there is nothing to draw",
                path.display(),
                comparison.a,
                comparison.b
            );
        };
        crate::args::write_whole(path, chart.svg.as_bytes())
            .with_context(|| format!("write {}", path.display()))?;
    }
    let out = match args.format {
        CompareFormat::Table => comparison.to_table().into_bytes(),
        CompareFormat::Md => comparison.to_markdown().into_bytes(),
        CompareFormat::Json => comparison.to_json()?,
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&out).map_err(crate::stdout_error)?;
    stdout.flush().map_err(crate::stdout_error)?;

    let mut failed = false;
    if let Some(limit) = args.fail_if_slower {
        let slow = comparison.slowdowns_beyond(limit);
        if !slow.is_empty() {
            eprintln!(
                "throng: {} step(s) significantly slower by more than {:.1}%:",
                slow.len(),
                limit * 100.0
            );
            for r in &slow {
                eprintln!("  {}: {:+.1}%", r.key.label(), r.change * 100.0);
            }
        }
        // A server that fails where it used to serve is slower than any
        // ratio says.
        if !comparison.lost.is_empty() {
            eprintln!(
                "throng: {} step(s) measured in {} were not in {}:",
                comparison.lost.len(),
                comparison.a,
                comparison.b
            );
            for l in &comparison.lost {
                eprintln!("  {l}");
            }
        }
        failed |= !slow.is_empty() || !comparison.lost.is_empty();
    }
    if args.fail_on_disagreement {
        failed |= disagreement(&comparison);
    }
    Ok(u8::from(failed))
}

/// Says on stderr which pairs of servers the two runs disagree on; true
/// when there is one. A run without paired ratios leaves nothing to check,
/// which is said rather than passed in silence.
fn disagreement(comparison: &throng_report::compare::Comparison) -> bool {
    let Some(agreement) = &comparison.agreement else {
        eprintln!(
            "throng: --fail-on-disagreement: {} and {} did not both store paired ratios, so none were checked",
            comparison.a, comparison.b
        );
        return false;
    };
    let bad = agreement.disagreements();
    if bad.is_empty() {
        return false;
    }
    eprintln!(
        "throng: {} pair(s) of servers disagree between {} and {} beyond their intervals:",
        bad.len(),
        comparison.a,
        comparison.b
    );
    for p in &bad {
        eprintln!("  {}", p.line(agreement.runs));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::parse_percent;

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("5%"), Ok(0.05));
        assert_eq!(parse_percent("2.5"), Ok(0.025));
        assert_eq!(parse_percent("0.5%"), Ok(0.005));
        assert_eq!(parse_percent("0"), Ok(0.0));
        assert!(parse_percent("fast").is_err());
        assert!(parse_percent("-1%").is_err());
        assert_eq!(
            parse_percent("150%"),
            Err("\"150%\" is out of range: give 0% to 100%".into())
        );
        assert_eq!(
            parse_percent("0.05"),
            Err("\"0.05\" could be 5% or 0.05%: write it with %".into())
        );
    }
}
