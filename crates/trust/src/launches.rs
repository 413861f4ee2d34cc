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
/// and the price of a context switch on the servers' core read before
/// each of those launches, in nanoseconds (`switch_ns`; empty where it was
/// not read), which tells a start that differed from a machine that did.
pub fn launches_differ(spread: f64, factors: &[f64], slice_sd: f64, switch_ns: &[f64]) -> String {
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
    let machine = (switch_ns.len() >= 2 && lo > 0.0).then(|| hi / lo - 1.0);
    match machine {
        Some(moved) if moved <= HELD => text.push_str(&format!(
            ", while a context switch on the servers' core cost {:.2}–{:.2} µs before those \
             launches (within {:.0}%): the machine held, so its figure depends on how it \
             started, and its comparisons' intervals, drawn over launches, are as wide as that; \
             look for what a start leaves behind (pool sizes, memory, the core its workers were \
             given)",
            lo / 1000.0,
            hi / 1000.0,
            moved * 100.0
        )),
        Some(moved) => text.push_str(&format!(
            ", and a context switch on the servers' core cost {:.2}–{:.2} µs before those \
             launches ({:.0}% apart): the machine moved too, so part of it may be the \
             machine's; its comparisons' intervals, drawn over launches, are as wide as both",
            lo / 1000.0,
            hi / 1000.0,
            moved * 100.0
        )),
        None => text.push_str(
            ": its figure depends on how it started, and its comparisons' intervals, drawn over \
             launches, are as wide as that; look for what a start leaves behind (pool sizes, \
             memory, the core its workers were given)",
        ),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_spread_and_each_launch() {
        assert_eq!(
            launches_differ(0.12, &[0.96, 1.075, 0.96], 0.011, &[]),
            "its launches differed by 12% (each launch's effect on its rate: 0.960, 1.075, \
             0.960; one slice's own spread ±1.1%): its figure depends on how it started, and its \
             comparisons' intervals, drawn over launches, are as wide as that; look for what a \
             start leaves behind (pool sizes, memory, the core its workers were given)"
        );
    }

    #[test]
    fn a_machine_that_held_over_the_launches_leaves_the_start_to_blame() {
        assert_eq!(
            launches_differ(0.12, &[0.96, 1.075, 0.96], 0.011, &[3000.0, 3050.0, 2990.0]),
            "its launches differed by 12% (each launch's effect on its rate: 0.960, 1.075, \
             0.960; one slice's own spread ±1.1%), while a context switch on the servers' core \
             cost 2.99–3.05 µs before those launches (within 2%): the machine held, so its \
             figure depends on how it started, and its comparisons' intervals, drawn over \
             launches, are as wide as that; look for what a start leaves behind (pool sizes, \
             memory, the core its workers were given)"
        );
    }

    #[test]
    fn a_machine_that_moved_over_the_launches_is_named_beside_the_start() {
        assert_eq!(
            launches_differ(0.12, &[0.96, 1.075, 0.96], 0.011, &[3000.0, 2400.0, 3000.0]),
            "its launches differed by 12% (each launch's effect on its rate: 0.960, 1.075, \
             0.960; one slice's own spread ±1.1%), and a context switch on the servers' core \
             cost 2.40–3.00 µs before those launches (25% apart): the machine moved too, so \
             part of it may be the machine's; its comparisons' intervals, drawn over launches, \
             are as wide as both"
        );
    }
}
