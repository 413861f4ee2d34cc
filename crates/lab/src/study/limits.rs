//! What a study's free text and times may be, checked before anything
//! is stored: its name is one line of a title's length, and every time
//! fits a Duration.

use anyhow::bail;

use super::StudyFile;

/// The longest time a study may give in seconds: a day.
const MAX_SECONDS: f64 = 86_400.0;

pub(super) fn check(f: &StudyFile) -> anyhow::Result<()> {
    let r = &f.rounds;
    // The name heads tables, the report and `throng runs`: one line of
    // text, of a length a title can have.
    if f.name.trim().is_empty()
        || f.name.chars().count() > 200
        || f.name.chars().any(char::is_control)
    {
        bail!(
            "name = {:?}: give one line of up to 200 characters",
            f.name.chars().take(40).collect::<String>()
        );
    }
    // Times become Durations, which hold no NaN, infinity or 10^300 s:
    // anything past a day is a typo, refused before anything is stored.
    for (key, v, least) in [
        ("rounds.seconds", r.seconds, f64::MIN_POSITIVE),
        ("rounds.warmup_seconds", r.warmup_seconds, 0.0),
        ("rounds.step_seconds", r.step_seconds, f64::MIN_POSITIVE),
        ("warmup_seconds", f.warmup_seconds, 0.0),
        ("patience_seconds", f.patience_seconds, f64::MIN_POSITIVE),
    ] {
        if !(least..=MAX_SECONDS).contains(&v) {
            bail!(
                "{key} = {v:?}: give a time {} and at most {MAX_SECONDS} seconds",
                if least > 0.0 {
                    "above 0"
                } else {
                    "of 0 or more"
                }
            );
        }
    }
    Ok(())
}
