//! The `throng` command: options are parsed and validated here, once, into
//! the typed specs the library crates take.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `print!`, returning the write's error instead of panicking: standard
/// output closed early (`| head`) or full (`> /dev/full`) panicked with
/// exit code 101.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut o = std::io::stdout().lock();
        // Flushed here: an error left in the buffer is lost at exit.
        write!(o, $($arg)*).and_then(|()| o.flush()).map_err(crate::stdout_error)
    }};
}

/// `println!`, as [`out!`].
macro_rules! outln {
    ($($arg:tt)*) => {
        out!("{}\n", format_args!($($arg)*))
    };
}

mod args;
mod cmd_compare;
mod cmd_doctor;
mod cmd_hosts;
mod cmd_lab;
mod cmd_load;
mod cmd_report;
mod cmd_runs;
mod cmd_servers;
mod fmt;
mod lab_thresholds;
mod load_conn;
mod load_errors;
mod load_h2;
mod load_h3;
mod load_live;
mod load_render;
mod load_server;
mod load_sessions;
mod load_shape;
mod load_thresholds;
mod load_tls;
mod load_warnings;
mod signals;

#[derive(Parser)]
#[command(name = "throng", version, about = "A web-server benchmark lab", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate HTTP/1.1 or HTTP/2 load, cleartext or over TLS, or HTTP/3 over QUIC, against a URL and report what was measured.
    Load(Box<cmd_load::LoadArgs>),
    /// Start real servers, sweep concurrency over workloads, store results.
    Lab(cmd_lab::LabArgs),
    /// List server recipes and whether each is installed.
    Servers(cmd_servers::ServersArgs),
    /// Write the benchmark article for a stored run.
    Report(cmd_report::ReportArgs),
    /// Compare two runs, or two servers of one run, with statistics.
    Compare(cmd_compare::CompareArgs),
    /// List the stored runs, newest first, with their steps' verdicts.
    Runs(cmd_runs::RunsArgs),
    /// Check the machine for things that make benchmarks lie.
    Doctor(cmd_doctor::DoctorArgs),
    /// Reach the hosts of a study (or of --hosts) and say what each is
    /// and lacks, before anything starts.
    Hosts(cmd_hosts::HostsArgs),
    /// The far end of a coordinating throng on another host: JSON lines on
    /// stdin and stdout. Started by throng itself over ssh.
    #[command(hide = true)]
    Agent {
        /// Print this build's name (VERSION-HASH), the directory of a host's
        /// cache a coordinator looks for it in, and exit: an image that
        /// holds throng places it there (deploy/kubernetes/agents.yaml).
        #[arg(long)]
        build: bool,
    },
    /// Print a shell completion script: bash, zsh, fish, elvish or powershell.
    Completions { shell: clap_complete::Shell },
    /// Print the manual page (roff), or write one page per command into DIR.
    Man {
        /// Write throng.1 and throng-COMMAND.1 here instead of printing throng.1.
        #[arg(long, value_name = "DIR", value_parser = args::out_path)]
        dir: Option<std::path::PathBuf>,
    },
}

/// Manual pages from the command's own definition, so they cannot drift
/// from `--help`.
fn man(dir: Option<std::path::PathBuf>) -> anyhow::Result<u8> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let Some(dir) = dir else {
        clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?;
        return Ok(0);
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("man --dir {}: cannot make the folder: {e}", dir.display()))?;
    let mut pages = vec![("throng.1".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("throng-{}", sub.get_name());
        let file = format!("{name}.1");
        pages.push((file, sub.clone().name(name)));
    }
    for (file, page) in pages {
        let mut out = Vec::new();
        clap_mangen::Man::new(page).render(&mut out)?;
        let path = dir.join(file);
        args::write_whole(&path, &out)
            .map_err(|e| anyhow::anyhow!("man --dir: cannot write {}: {e}", path.display()))?;
    }
    Ok(0)
}

/// Help and version as clap prints them; a bad option or value in one
/// line, clap's own first (`error: …`), and exit 2, as every other refusal
/// of input is.
fn parse_failed(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
    }
    // The first paragraph is the error and what it allows (possible
    // values); the rest is usage and tips, which `--help` gives.
    let text = e.render().to_string();
    let first: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let line = first.join(" ");
    let line = line.strip_prefix("error: ").unwrap_or(&line);
    eprintln!("throng: {line}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_failed(&e),
    };
    let result = match cli.command {
        Command::Load(a) if a.hosts.is_some() => cmd_hosts::load_on_hosts(*a),
        Command::Load(a) => cmd_load::run(*a),
        Command::Lab(a) => cmd_lab::run(a),
        Command::Servers(a) => cmd_servers::run(a),
        Command::Report(a) => cmd_report::run(a),
        Command::Compare(a) => cmd_compare::run(a),
        Command::Runs(a) => cmd_runs::run(a),
        Command::Doctor(a) => cmd_doctor::run(a),
        Command::Hosts(a) => cmd_hosts::run(a),
        Command::Agent { build: true } => throng_remote::binary::Binary::current()
            .map(|b| {
                println!("{}", b.id);
                0
            })
            .map_err(anyhow::Error::from),
        Command::Agent { build: false } => Ok(throng_remote::agent::serve_with(
            &mut throng_lab::apart::ServerHost::new(),
            throng_servers::process::kill_all_servers,
        )),
        Command::Man { dir } => man(dir),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "throng", &mut script);
            out!("{}", String::from_utf8_lossy(&script)).map(|()| 0)
        }
    };
    match result {
        Ok(code) => ExitCode::from(code),
        // A reader that stopped reading (`| head`) wanted no more: quiet,
        // with the status a shell gives a process SIGPIPE ended.
        Err(e) if closed_stdout(&e) => ExitCode::from(141),
        Err(e) => {
            eprintln!("throng: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The error is a write to a pipe whose reader went away; it comes as the
/// io error itself, from [`stdout_error`] or from a command that writes
/// with `?`.
fn closed_stdout(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// A failed write to standard output, said as such.
fn stdout_error(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        e.into()
    } else {
        anyhow::anyhow!("cannot write to standard output: {e}")
    }
}
