//! A server whose launches differ: its figure in a run depends on how it
//! happened to start, beyond what its slices' own noise explains. The
//! split itself is measured by the statistics the report draws it with
//! (`throng_stats::launches`); this is the verdict's wording of it.

/// The reason's message for a server whose launches differed by `spread`
/// (the fastest launch over the slowest, less one), each launch's effect
/// on its rate in `factors`, one slice's own spread `slice_sd` (relative).
pub fn launches_differ(spread: f64, factors: &[f64], slice_sd: f64) -> String {
    let effects: Vec<String> = factors.iter().map(|f| format!("{f:.3}")).collect();
    format!(
        "its launches differed by {:.0}% (each launch's effect on its rate: {}; one slice's own \
         spread ±{:.1}%): its figure depends on how it started, and its comparisons' intervals, \
         drawn over launches, are as wide as that; look for what a start leaves behind (pool \
         sizes, memory, the core its workers were given)",
        spread * 100.0,
        effects.join(", "),
        slice_sd * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_spread_and_each_launch() {
        assert_eq!(
            launches_differ(0.12, &[0.96, 1.075, 0.96], 0.011),
            "its launches differed by 12% (each launch's effect on its rate: 0.960, 1.075, \
             0.960; one slice's own spread ±1.1%): its figure depends on how it started, and its \
             comparisons' intervals, drawn over launches, are as wide as that; look for what a \
             start leaves behind (pool sizes, memory, the core its workers were given)"
        );
    }
}
