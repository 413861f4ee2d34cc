//! Load shapes: `--stages 30s:1000,60s:5000,30s:0` of the open model and
//! `--users-stages 10s:50,30s:50,10s:0` of sessions, read into the
//! engine's [`Ramp`]; a run of the first judged second by second against
//! it (each second's target beside what it achieved, and the first second
//! the schedule was no longer kept), a run of the second given each
//! second's target users beside those active.

use throng_engine::ramp::{Ramp, Stage};
use throng_model::{ReasonCode, Summary, Verdict};
use throng_trust::verdict::KEEP_UP_SHARE;

/// Why a list of stages is not one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShapeError {
    #[error("{stage:?}: {why}")]
    Stage { stage: String, why: String },
    #[error("{0}")]
    Ramp(&'static str),
}

/// `LENGTH:RATE,LENGTH:RATE,…`: each stage a linear ramp from the rate
/// before it (0 before the first) to RATE over LENGTH.
pub fn stages(text: &str) -> Result<Ramp, ShapeError> {
    let ramp = Ramp {
        stages: read(
            text,
            "RATE",
            |to| to.is_finite() && to >= 0.0,
            "its rate is not a number of requests per second, 0 or more",
        )?,
    };
    ramp.check().map_err(ShapeError::Ramp)?;
    Ok(ramp)
}

/// `LENGTH:USERS,…`: each stage a linear ramp of the users active, from
/// the users before it (none before the first) to USERS over LENGTH.
pub fn users_stages(text: &str) -> Result<Ramp, ShapeError> {
    let ramp = Ramp {
        stages: read(
            text,
            "USERS",
            |to| to >= 0.0 && to.fract() == 0.0 && to <= u32::MAX as f64,
            "its users are not a whole number, 0 or more",
        )?,
    };
    ramp.check_users().map_err(ShapeError::Ramp)?;
    Ok(ramp)
}

fn read(
    text: &str,
    unit: &str,
    fits: impl Fn(f64) -> bool,
    unfit: &str,
) -> Result<Vec<Stage>, ShapeError> {
    let mut out = Vec::new();
    for stage in text.split(',').map(str::trim) {
        let bad = |why: &str| ShapeError::Stage {
            stage: stage.to_string(),
            why: why.to_string(),
        };
        let (length, to) = stage
            .split_once(':')
            .ok_or_else(|| bad(&format!("write a stage as LENGTH:{unit}, such as 30s:1000")))?;
        let length = crate::vocab::duration(length.trim())
            .map_err(|_| bad("its length is not a duration (30s, 500ms, 2m)"))?;
        let to: f64 = to
            .trim()
            .parse()
            .ok()
            .filter(|&r: &f64| r.is_finite() && fits(r))
            .ok_or_else(|| bad(unfit))?;
        out.push(Stage { length, to });
    }
    Ok(out)
}

/// Each second of a run of sessions in stages, its target users (as the
/// stages stood at the second's start) beside the users the run found
/// active then.
pub fn users_seconds(s: &mut Summary, ramp: &Ramp) {
    let active = s
        .sessions
        .as_ref()
        .map(|x| x.active.clone())
        .unwrap_or_default();
    for (i, row) in s.timeline.iter_mut().enumerate() {
        // A hair over, as the engine lets a user in when the line meets it.
        row.users_target = Some((ramp.at(i as f64) + 1e-6).floor() as u64);
        row.users_active = active.get(i).copied();
    }
}

/// `--rate FROM..TO --ramp LENGTH` for a run of `total`: at FROM at once,
/// to TO over LENGTH, then TO held to the end.
pub fn linear(from: f64, to: f64, length: std::time::Duration, total: std::time::Duration) -> Ramp {
    let mut stages = vec![
        Stage {
            length: std::time::Duration::ZERO,
            to: from,
        },
        Stage { length, to },
    ];
    if total > length {
        stages.push(Stage {
            length: total - length,
            to,
        });
    }
    Ramp { stages }
}

/// The run's timeline given each second's target, its rate report the
/// first second that completed under [`KEEP_UP_SHARE`] of it, and its
/// verdict that second when it has one. A second short by no more than
/// the connections is not counted: that many sends may be on the wire
/// across its end (the run's last second, a ramp down to a few a second).
pub fn judge_seconds(s: &mut Summary, v: &mut Verdict, ramp: &Ramp) {
    let mut first = None;
    let slack = s.connections.requested as f64;
    for (i, row) in s.timeline.iter_mut().enumerate() {
        let t = i as f64;
        let target = ramp.due_by(t + 1.0) - ramp.due_by(t);
        row.target = Some(target);
        let done = row.completed as f64;
        if first.is_none() && done < KEEP_UP_SHARE * target && target - done > slack {
            first = Some((i as u64, row.completed, target));
        }
    }
    let Some((second, completed, target)) = first else {
        return;
    };
    if let Some(r) = &mut s.rate {
        r.saturated_second = Some(second);
    }
    v.push(
        ReasonCode::Saturated,
        format!(
            "the schedule was not kept from second {second} of the run: it completed \
             {completed} of the {target:.0} due then (under {:.0}%)",
            KEEP_UP_SHARE * 100.0
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use throng_model::{RateReport, TimelineRow};

    #[test]
    fn stages_are_read_in_order_and_a_bad_one_is_named() {
        let r = stages("1s:500, 1s:2000,2s:2000").unwrap();
        assert_eq!(r.requests(), 5500.0);
        assert_eq!(r.length(), Duration::from_secs(4));
        let err = |t: &str| stages(t).unwrap_err().to_string();
        assert_eq!(
            err("30s"),
            "\"30s\": write a stage as LENGTH:RATE, such as 30s:1000"
        );
        assert_eq!(
            err("1s:500,soon:10"),
            "\"soon:10\": its length is not a duration (30s, 500ms, 2m)"
        );
        assert_eq!(
            err("1s:-5"),
            "\"1s:-5\": its rate is not a number of requests per second, 0 or more"
        );
        assert_eq!(err("0s:500"), "a ramp sends at least one request");
    }

    #[test]
    fn users_stages_are_whole_users_and_each_second_gets_its_target() {
        let r = users_stages("2s:4,1s:4,0s:8,1s:8").unwrap();
        assert_eq!(r.length(), Duration::from_secs(4));
        let err = |t: &str| users_stages(t).unwrap_err().to_string();
        assert_eq!(
            err("1s:2.5"),
            "\"1s:2.5\": its users are not a whole number, 0 or more"
        );
        assert_eq!(
            err("10"),
            "\"10\": write a stage as LENGTH:USERS, such as 30s:1000"
        );
        assert_eq!(
            err("1s:0"),
            "the stages hold at least one user for some time"
        );
        let row = TimelineRow::default;
        let mut s = Summary {
            timeline: vec![row(), row(), row(), row()],
            sessions: Some(throng_model::Sessions {
                active: vec![0, 2, 4, 7],
                ..Default::default()
            }),
            ..Summary::default()
        };
        users_seconds(&mut s, &r);
        let got: Vec<(Option<u64>, Option<u64>)> = s
            .timeline
            .iter()
            .map(|r| (r.users_target, r.users_active))
            .collect();
        assert_eq!(
            got,
            [
                (Some(0), Some(0)),
                (Some(2), Some(2)),
                (Some(4), Some(4)),
                (Some(8), Some(7))
            ]
        );
    }

    #[test]
    fn a_linear_ramp_starts_at_once_and_holds_its_end() {
        let r = linear(
            500.0,
            2000.0,
            Duration::from_secs(2),
            Duration::from_secs(3),
        );
        assert_eq!(r.requests(), 2500.0 + 2000.0);
        assert_eq!(
            linear(1.0, 3.0, Duration::from_secs(1), Duration::from_secs(1))
                .stages
                .len(),
            2
        );
    }

    #[test]
    fn the_first_second_under_its_target_is_named() {
        let ramp = stages("1s:500,1s:2000,2s:2000").unwrap();
        let row = |completed| TimelineRow {
            completed,
            ..TimelineRow::default()
        };
        let mut s = Summary {
            timeline: vec![row(250), row(1250), row(1990), row(1800)],
            rate: Some(RateReport::default()),
            ..Summary::default()
        };
        s.connections.requested = 20;
        let mut v = Verdict::default();
        judge_seconds(&mut s, &mut v, &ramp);
        let targets: Vec<f64> = s.timeline.iter().map(|r| r.target.unwrap()).collect();
        assert_eq!(targets, [250.0, 1250.0, 2000.0, 2000.0]);
        assert_eq!(s.rate.unwrap().saturated_second, Some(3));
        assert_eq!(
            v.reasons[0].message,
            "the schedule was not kept from second 3 of the run: it completed 1800 of the 2000 \
             due then (under 95%)"
        );
        // Short by no more than the connections: on the wire at its end.
        let ramp = stages("1s:100,1s:0").unwrap();
        let mut s = Summary {
            timeline: vec![row(50), row(31)],
            rate: Some(RateReport::default()),
            ..Summary::default()
        };
        s.connections.requested = 20;
        let mut v = Verdict::default();
        judge_seconds(&mut s, &mut v, &ramp);
        assert_eq!(s.rate.unwrap().saturated_second, None);
        assert!(v.reasons.is_empty());
    }
}
