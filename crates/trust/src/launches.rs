//! A server whose launches differ: its figure in a run depends on how it
//! happened to start, beyond what its slices' own noise explains. The
//! split itself is measured by the statistics the report draws it with
//! (`throng_stats::launches`); this is the verdict's wording of it.

/// The servers' core may be said to have held over the launches while its
/// context switch's price stayed within this (largest over smallest, less
/// one); the readings are medians of short timings, good to a few percent.
const HELD: f64 = 0.05;

/// The reason's message for a server whose launches differed by `spread`
/// (the fastest launch over the slowest, less one), each launch's effect
/// on its rate in `factors`, one slice's own spread `slice_sd` (relative),
/// the price of a context switch on the servers' core read before each of
/// those launches, in nanoseconds (`switch_ns`; empty where it was not
/// read), and how far every server's rate moved together between the
/// launches (`machine`: the spread `throng_stats::launches::machine`
/// reads from every server's rate, given where it is beyond the run's
/// decision threshold), which tell a start that differed from a machine
/// that did. The two can disagree: the switch's price is one reading of
/// one core, and a host whose memory or caches other guests share slows
/// every server while it holds.
pub fn launches_differ(
    spread: f64,
    factors: &[f64],
    slice_sd: f64,
    switch_ns: &[f64],
    machine: Option<f64>,
) -> String {
    let effects: Vec<String> = factors.iter().map(|f| format!("{f:.3}")).collect();
    let mut text = format!(
        "its launches differed by {:.0}% (each launch's effect on its rate: {}; one slice's own \
         spread ±{:.1}%)",
        spread * 100.0,
        effects.join(", "),
        slice_sd * 100.0
    );
    let lo = switch_ns.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = switch_ns.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let switch = (switch_ns.len() >= 2 && lo > 0.0).then(|| hi / lo - 1.0);
    let together = |m: f64| {
        format!(
            "every server's rate moved together by {:.0}% between them",
            m * 100.0
        )
    };
    const START: &str = "its figure depends on how it started, and its comparisons' intervals, \
                         drawn over launches, are as wide as that; look for what a start leaves \
                         behind (pool sizes, memory, the core its workers were given)";
    const BOTH: &str = "so part of it may be the machine's (a server it slowed more or less than \
                        the others reads as a launch of its own); its comparisons' intervals, \
                        drawn over launches, are as wide as both";
    let price = |held: bool| {
        let moved = switch.unwrap_or(0.0) * 100.0;
        format!(
            "a context switch on the servers' core cost {:.2}–{:.2} µs before those launches ({})",
            lo / 1000.0,
            hi / 1000.0,
            if held {
                format!("within {moved:.0}%")
            } else {
                format!("{moved:.0}% apart")
            }
        )
    };
    match (switch, machine) {
        (Some(moved), None) if moved <= HELD => text.push_str(&format!(
            ", while {}: the machine held, so {START}",
            price(true)
        )),
        (Some(moved), Some(m)) if moved <= HELD => text.push_str(&format!(
            ", and while {}, {}: the machine moved in a way the switch's price does not show, \
             {BOTH}",
            price(true),
            together(m)
        )),
        (Some(_), m) => text.push_str(&format!(
            ", and {}{}: the machine moved too, {BOTH}",
            price(false),
            m.map_or(String::new(), |m| format!(", and {}", together(m)))
        )),
        (None, Some(m)) => text.push_str(&format!(
            ", and {}: the machine moved too, {BOTH}",
            together(m)
        )),
        (None, None) => text.push_str(&format!(": {START}")),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: &str = "its launches differed by 12% (each launch's effect on its rate: \
                         0.960, 1.075, 0.960; one slice's own spread ±1.1%)";
    /// The switch's price read before each of three launches: within 2%,
    /// and 25% apart.
    const HELD_NS: [f64; 3] = [3000.0, 3050.0, 2990.0];
    const MOVED_NS: [f64; 3] = [3000.0, 2400.0, 3000.0];

    /// The message for the same launches, with these readings of the
    /// machine.
    fn said(switch_ns: &[f64], machine: Option<f64>) -> String {
        launches_differ(0.12, &[0.96, 1.075, 0.96], 0.011, switch_ns, machine)
    }

    #[test]
    fn the_message_names_the_spread_and_each_launch() {
        assert_eq!(
            said(&[], None),
            format!(
                "{START}: its figure depends on how it started, and its comparisons' intervals, \
                 drawn over launches, are as wide as that; look for what a start leaves behind \
                 (pool sizes, memory, the core its workers were given)"
            )
        );
    }

    #[test]
    fn a_machine_that_held_over_the_launches_leaves_the_start_to_blame() {
        assert_eq!(
            said(&HELD_NS, None),
            format!(
                "{START}, while a context switch on the servers' core cost 2.99–3.05 µs before \
                 those launches (within 2%): the machine held, so its figure depends on how it \
                 started, and its comparisons' intervals, drawn over launches, are as wide as \
                 that; look for what a start leaves behind (pool sizes, memory, the core its \
                 workers were given)"
            )
        );
    }

    #[test]
    fn a_machine_that_moved_over_the_launches_is_named_beside_the_start() {
        const BOTH: &str = "so part of it may be the machine's (a server it slowed more or \
                            less than the others reads as a launch of its own); its \
                            comparisons' intervals, drawn over launches, are as wide as both";
        // By the switch's price.
        assert_eq!(
            said(&MOVED_NS, None),
            format!(
                "{START}, and a context switch on the servers' core cost 2.40–3.00 µs before \
                 those launches (25% apart): the machine moved too, {BOTH}"
            )
        );
        // By every server's rate, the switch's price unread.
        assert_eq!(
            said(&[], Some(0.15)),
            format!(
                "{START}, and every server's rate moved together by 15% between them: the \
                 machine moved too, {BOTH}"
            )
        );
        // By every server's rate while the switch's price held: the price
        // does not outweigh the servers themselves.
        assert_eq!(
            said(&HELD_NS, Some(0.15)),
            format!(
                "{START}, and while a context switch on the servers' core cost 2.99–3.05 µs \
                 before those launches (within 2%), every server's rate moved together by 15% \
                 between them: the machine moved in a way the switch's price does not show, \
                 {BOTH}"
            )
        );
        // Both.
        assert_eq!(
            said(&MOVED_NS, Some(0.15)),
            format!(
                "{START}, and a context switch on the servers' core cost 2.40–3.00 µs before \
                 those launches (25% apart), and every server's rate moved together by 15% \
                 between them: the machine moved too, {BOTH}"
            )
        );
    }
}
