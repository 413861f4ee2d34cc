//! What a study's `cores = "auto"` could sweep on the machine it ran on,
//! in one wording for the lab, before it starts, and the report, after:
//! on a small machine "auto" quietly becomes one core count, and a sweep
//! over cores (the 2016 Linux web server benchmark ran 1, 2, 4 and 8) then
//! has no axis left unless the reader is told.

/// The server core counts a full sweep over cores covers.
pub const FULL_SWEEP: [u32; 4] = [1, 2, 4, 8];

/// The note for `cores = "auto"` on a machine of `cpus` CPUs (all on it,
/// the load generator on the CPUs the server leaves) that swept `swept`;
/// `None` when `swept` covers [`FULL_SWEEP`].
pub fn auto_cores_note(swept: &[u32], cpus: u32) -> Option<String> {
    let missing: Vec<u32> = FULL_SWEEP
        .into_iter()
        .filter(|c| !swept.contains(c))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let counts = |v: &[u32]| {
        let words: Vec<String> = v.iter().map(u32::to_string).collect();
        match words.split_last() {
            None => "none".to_string(),
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        }
    };
    let swept_words = match swept {
        [] => "no server core count".to_string(),
        [1] => "1 server core only".to_string(),
        v => format!("{} server cores only", counts(v)),
    };
    let needed = missing.iter().max().copied().unwrap_or(1) + 1;
    Some(format!(
        "cores = \"auto\" swept {swept_words} on this machine, not {}: it has {cpus} CPUs, and \
         each count keeps a CPU for the load generator ({}). To sweep {} cores, run the study on \
         a machine of {needed} CPUs or more, or with the servers on a host of their own and the \
         load from another (server_host and client_hosts, docs/study-format.md#hosts), where \
         every CPU of the server host serves.",
        counts(&FULL_SWEEP),
        if cpus == 2 {
            "one CPU for the server, one for the client".to_string()
        } else {
            format!("at most {} for the server", cpus.saturating_sub(1))
        },
        counts(&missing)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_cpu_machine_says_it_swept_one_core_and_what_to_do() {
        assert_eq!(
            auto_cores_note(&[1], 2).unwrap(),
            "cores = \"auto\" swept 1 server core only on this machine, not 1, 2, 4 and 8: it has \
             2 CPUs, and each count keeps a CPU for the load generator (one CPU for the server, \
             one for the client). To sweep 2, 4 and 8 cores, run the study on a machine of 9 \
             CPUs or more, or with the servers on a host of their own and the load from another \
             (server_host and client_hosts, docs/study-format.md#hosts), where every CPU of the \
             server host serves."
        );
        assert_eq!(
            auto_cores_note(&[1, 2], 4).unwrap(),
            "cores = \"auto\" swept 1 and 2 server cores only on this machine, not 1, 2, 4 and 8: \
             it has 4 CPUs, and each count keeps a CPU for the load generator (at most 3 for the \
             server). To sweep 4 and 8 cores, run the study on a machine of 9 CPUs or more, or \
             with the servers on a host of their own and the load from another (server_host and \
             client_hosts, docs/study-format.md#hosts), where every CPU of the server host serves."
        );
        assert_eq!(auto_cores_note(&[1, 2, 4, 8], 9), None);
        assert_eq!(auto_cores_note(&[1, 2, 4, 8, 16], 32), None);
    }
}
