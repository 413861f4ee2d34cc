//! `throng doctor`: machine checks before a study, each with its fix.

use std::io::Write;

use throng_model::parse_cpu_list;
use throng_model::{Finding, Severity};
use throng_trust::doctor::{check_serving, environment, has_findings, Plan};

#[derive(clap::Args)]
pub struct DoctorArgs {
    /// Connections the study will hold open at once (checked against the
    /// open-file limit, the listen backlog and the port range).
    #[arg(short = 'c', long, default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub connections: u64,
    /// The study uses `Connection: close` (a new connection per request).
    #[arg(long)]
    pub close: bool,
    /// CPUs the load generator will run on, e.g. "1" or "2-3".
    #[arg(long, value_name = "LIST", default_value = "")]
    pub client_cpus: String,
    /// CPUs the server will run on, e.g. "0" or "0-1".
    #[arg(long, value_name = "LIST", default_value = "")]
    pub server_cpus: String,
    /// Print the findings and the environment as JSON.
    #[arg(long)]
    pub json: bool,
}

fn cpus(flag: &str, list: &str) -> anyhow::Result<Vec<usize>> {
    // Empty is every CPU; an empty item ("0,,1") is a typo, not a CPU.
    let valid = list.trim().is_empty()
        || list.split(',').all(|p| {
            p.split('-')
                .all(|n| !n.trim().is_empty() && n.trim().bytes().all(|b| b.is_ascii_digit()))
        });
    let Some(v) = parse_cpu_list(list).filter(|_| valid) else {
        anyhow::bail!("{flag} {list:?}: expected a CPU list such as 0-1,3");
    };
    // The checks would be made for CPUs the machine does not have.
    let own = throng_engine::affinity::own_cpus();
    if let Some(c) = v.iter().find(|c| !own.contains(c)) {
        anyhow::bail!("{flag} {list:?}: CPU {c} is not one this process may run on ({own:?})");
    }
    Ok(v)
}

pub fn run(args: DoctorArgs) -> anyhow::Result<u8> {
    let plan = Plan {
        connections: args.connections,
        close_mode: args.close,
        client_cpus: cpus("--client-cpus", &args.client_cpus)?,
        server_cpus: cpus("--server-cpus", &args.server_cpus)?,
    };
    // No server address here: the NIC is the one other hosts reach this
    // machine through, the default route's.
    let nic = throng_trust::serving::default_interface(std::path::Path::new("/"));
    let findings = check_serving(&plan, nic.as_deref());
    let code = u8::from(has_findings(&findings));
    let mut out = std::io::stdout().lock();
    if args.json {
        let doc = serde_json::json!({
            "clean": code == 0,
            "plan": {
                "connections": plan.connections,
                "close_mode": plan.close_mode,
                "client_cpus": plan.client_cpus,
                "server_cpus": plan.server_cpus,
            },
            "findings": findings,
            "environment": environment(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        write_text(&mut out, &findings)?;
    }
    Ok(code)
}

fn write_text(out: &mut impl Write, findings: &[Finding]) -> std::io::Result<()> {
    let width = findings.iter().map(|f| f.check.len()).max().unwrap_or(0);
    for f in findings {
        let tag = match f.severity {
            Severity::Ok => "ok  ",
            Severity::Warn => "WARN",
            Severity::Fail => "FAIL",
        };
        writeln!(out, "{tag}  {:width$}  {}", f.check, f.message)?;
        if !f.fix.is_empty() {
            writeln!(out, "      {:width$}  fix: {}", "", f.fix)?;
        }
    }
    let warn = findings
        .iter()
        .filter(|f| f.severity == Severity::Warn)
        .count();
    let fail = findings
        .iter()
        .filter(|f| f.severity == Severity::Fail)
        .count();
    if warn + fail == 0 {
        writeln!(out, "\n{} checks, nothing found", findings.len())
    } else {
        writeln!(
            out,
            "\n{} checks: {fail} failed, {warn} warnings (see docs/trust.md)",
            findings.len()
        )
    }
}
