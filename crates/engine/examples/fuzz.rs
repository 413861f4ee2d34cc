//! Fuzz the HTTP/1 parser and the connection rules, or with `--h2` the
//! HTTP/2 connection, on stable Rust:
//!
//!     cargo run --release -p throng-engine --example fuzz -- [--h2] N SEED [THREADS]
//!
//! plays N generated and mutated inputs (see `throng_engine::fuzz`, and
//! `throng_engine::fuzz_h2` for HTTP/2), each whole, byte by byte, at
//! every two-way split and at random splits, and stops at the first input
//! whose outcome depends on the split, that the parser got wrong, or that
//! panics, printing it so that it can become a test. Input k is drawn from
//! its own generator seeded with (SEED, k), so a run finds the same inputs
//! however many threads share it. Prints inputs per second and how the
//! inputs ended.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use throng_engine::fuzz::{self, Rng};
use throng_engine::fuzz_h2;

/// Largest generated body. Every two-way split costs the square of an
/// input's length, and bodies add states only at their edges.
const MAX_BODY: usize = 256;

/// What one input came to: how it ended, its length, whether it was left
/// unmutated; or why it failed.
struct Played {
    end: String,
    bytes: usize,
    exact: bool,
}

/// One input drawn from `rng`: generated, checked and summed up, or
/// described in full when it fails (a panic included).
fn one(h2: bool, rng: &mut Rng) -> Result<Played, String> {
    if h2 {
        let case = fuzz_h2::generate(rng, MAX_BODY);
        let got = catch_unwind(AssertUnwindSafe(|| fuzz_h2::check(&case, rng)));
        let exact = case.expected.is_some();
        match got {
            Ok(Ok(outcome)) => Ok(Played {
                end: format!("{:?}", outcome.end),
                bytes: case.input.len(),
                exact,
            }),
            Ok(Err(why)) => Err(format!("{case:?}\n{why}")),
            Err(_) => Err(format!("panicked: {case:?}")),
        }
    } else {
        let case = fuzz::generate(rng, MAX_BODY);
        let got = catch_unwind(AssertUnwindSafe(|| fuzz::check(&case, rng)));
        let exact = case.expected.is_some();
        match got {
            Ok(Ok(outcome)) => Ok(Played {
                end: format!("{:?}", outcome.end),
                bytes: case.input.len(),
                exact,
            }),
            Ok(Err(why)) => Err(format!("{case:?}\n{why}")),
            Err(_) => Err(format!("panicked: {case:?}")),
        }
    }
}

struct Tally {
    ends: BTreeMap<String, u64>,
    bytes: u64,
    exact: u64,
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let h2 = args.iter().any(|a| a == "--h2");
    args.retain(|a| a != "--h2");
    let arg = |i: usize, default: u64| -> Option<u64> {
        match args.get(i) {
            None => Some(default),
            Some(a) => a.replace('_', "").parse().ok(),
        }
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let (Some(n), Some(seed), Some(threads)) = (arg(0, 100_000), arg(1, 1), arg(2, cores)) else {
        eprintln!("usage: fuzz [--h2] [N [SEED [THREADS]]]   (default 100000 inputs, seed 1, one thread per CPU)");
        return ExitCode::from(2);
    };
    let threads = threads.clamp(1, 256);
    let failed = AtomicBool::new(false);
    let started = Instant::now();
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let failed = &failed;
                s.spawn(move || {
                    let mut tally = Tally {
                        ends: BTreeMap::new(),
                        bytes: 0,
                        exact: 0,
                    };
                    for k in (t..n).step_by(threads as usize) {
                        if failed.load(Ordering::Relaxed) {
                            break;
                        }
                        let mut rng = Rng::new(seed ^ Rng::new(k).next_u64());
                        match one(h2, &mut rng) {
                            Ok(p) => {
                                tally.bytes += p.bytes as u64;
                                tally.exact += u64::from(p.exact);
                                *tally.ends.entry(p.end).or_default() += 1;
                            }
                            Err(why) => {
                                eprintln!("input {k} of seed {seed}: {why}");
                                failed.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                    tally
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    if failed.load(Ordering::Relaxed) {
        return ExitCode::FAILURE;
    }
    let secs = started.elapsed().as_secs_f64();
    let mut ends: BTreeMap<String, u64> = BTreeMap::new();
    let (mut bytes, mut exact) = (0, 0);
    for t in tallies {
        bytes += t.bytes;
        exact += t.exact;
        for (end, count) in t.ends {
            *ends.entry(end).or_default() += count;
        }
    }
    println!(
        "{n} inputs ({exact} unmutated, {:.0} bytes on average) in {secs:.1} s on {threads} thread{}: \
         {:.0} inputs/s, seed {seed}",
        bytes as f64 / n.max(1) as f64,
        if threads == 1 { "" } else { "s" },
        n as f64 / secs
    );
    for (end, count) in &ends {
        println!("  {end:<22} {count}");
    }
    ExitCode::SUCCESS
}
