//! One measured slice of a step: its load sized from the server's pace,
//! run (alone, or at once with the other server of a duet), and what came
//! back absorbed: stored in the step with its verdict, or the step failed,
//! or the round asked again, longer, when it ended before any response.

use std::time::Instant;

use throng_model::RoundRecord;

use super::failure::StepFailure;
use super::pending::{Pending, Slice};
use super::Sweep;
use crate::observer::Event;
use crate::precision::Next;
use crate::round::{Measured, RoundError, RoundKind, ServerId};
use crate::spec::{longer_round, round_seconds, secs, RoundLoad};
use throng_load::record::serialize_histogram;
use throng_load::verdict::Ports;

/// What became of a round once measured.
enum Absorbed {
    /// Stored, or the step failed, or the run was interrupted.
    Done,
    /// It ended before any response could complete: measure it again
    /// with this longer load.
    Again(Box<RoundLoad>),
}

impl Sweep<'_, '_> {
    /// One measured round of `p`'s server, measured again longer while it
    /// ends too early.
    pub(super) fn measure_round(&mut self, p: &mut Pending, slice: Slice) -> anyhow::Result<()> {
        let Some(mut load) = self.prepare(p, slice) else {
            return Ok(());
        };
        loop {
            let t0 = Instant::now();
            let result = self.exec.round(p.server, &load, RoundKind::Slice);
            p.spent += t0.elapsed();
            match self.absorb(p, slice, &load, result)? {
                Absorbed::Done => return Ok(()),
                Absorbed::Again(longer) => load = *longer,
            }
        }
    }

    /// The rounds of two servers at the same time, each on its own cores
    /// (a duet): both see the same interference at every instant.
    pub(super) fn measure_together(
        &mut self,
        both: [&mut Pending; 2],
        slice: Slice,
    ) -> anyhow::Result<()> {
        let [a, b] = both;
        let mut loads = [self.prepare(a, slice), self.prepare(b, slice)];
        while loads.iter().any(Option::is_some) && !self.interrupted() {
            let ids: [ServerId; 2] = [a.server, b.server];
            let asked: Vec<(ServerId, &RoundLoad)> = ids
                .iter()
                .zip(&loads)
                .filter_map(|(&id, l)| l.as_ref().map(|l| (id, l)))
                .collect();
            let t0 = Instant::now();
            let mut results = self.exec.rounds_together(&asked).into_iter();
            let elapsed = t0.elapsed();
            for (p, load) in [&mut *a, &mut *b].into_iter().zip(loads.iter_mut()) {
                let Some(l) = load.take() else { continue };
                // An executor answers every round it is asked; one it left
                // out was never run on a server it knew.
                let r = results.next().unwrap_or(Err(RoundError::NotRunning));
                p.spent += elapsed;
                if let Absorbed::Again(longer) = self.absorb(p, slice, &l, r)? {
                    *load = Some(*longer);
                }
            }
        }
        Ok(())
    }

    /// The load of `p`'s next round, or `None` when its server has exited
    /// (the step is then failed).
    fn prepare(&mut self, p: &mut Pending, slice: Slice) -> Option<RoundLoad> {
        let study = self.study;
        if let Some(how) = self.exec.exited(p.server) {
            self.fail(p, StepFailure::Exited(how));
            return None;
        }
        let measured = self.slice_load(p, slice);
        if measured.requests.is_some() || p.round_s.is_some() {
            return Some(measured);
        }
        // The step's first round: its length is kept for the others.
        let (c, s) = (p.step.concurrency, measured.seconds);
        if let (true, Some(pace)) = (s > study.round_s, self.paces.of(p.server)) {
            self.ctx.observer.event(Event::Note(format!(
                "{} c={c}: {} rounds instead of {}, so that each connection can complete \
                 a few responses of about {:.1} s at {:.1} MB/s",
                self.name(p.server),
                secs(s),
                secs(study.round_s),
                pace.response_s(c),
                pace.bytes_per_s / 1e6
            )));
        }
        p.round_s = Some(s);
        Some(measured)
    }

    /// The load of `p`'s round in `slice`, as [`Sweep::prepare`] sizes
    /// it, without a note or a choice kept: what a forecast asks for.
    pub(super) fn slice_load(&self, p: &Pending, slice: Slice) -> RoundLoad {
        let study = self.study;
        let measured = RoundLoad {
            client_cpus: self.group.client_cpus_of(p.server.index()).to_vec(),
            ..study.round_load(self.group, p.level(), slice.seed)
        };
        if measured.requests.is_some() {
            return measured;
        }
        // A step's rounds all get the length chosen at its first: the
        // study's, or long enough for each connection to complete a few
        // responses at the pace the server last showed.
        let seconds = p.round_s.unwrap_or_else(|| {
            round_seconds(study.round_s, self.paces.of(p.server), p.step.concurrency)
        });
        measured.timed(seconds)
    }

    /// Stores a measured round in its step, or fails the step, or asks for
    /// the round again, longer.
    fn absorb(
        &mut self,
        p: &mut Pending,
        slice: Slice,
        load: &RoundLoad,
        result: Result<Measured, RoundError>,
    ) -> anyhow::Result<Absorbed> {
        let c = p.step.concurrency;
        if self.interrupted() {
            return Ok(Absorbed::Done);
        }
        let m = match result {
            Ok(m) => m,
            Err(e) => {
                self.fail(p, StepFailure::Round(e));
                return Ok(Absorbed::Done);
            }
        };
        if let Some(how) = self.exec.exited(p.server) {
            self.fail(p, StepFailure::ExitedDuring(how));
            return Ok(Absorbed::Done);
        }
        self.paces.update(p.server, &m.summary);
        // A round that ended before any response could complete measured
        // its own length, not the server: measure it again, longer. A
        // counted round ends only when its requests have.
        if load.requests.is_none() && throng_model::max_users::round_too_short(&m.summary) {
            if let Some(next) = longer_round(load.seconds, self.paces.of(p.server), c) {
                self.ctx.observer.event(Event::Note(format!(
                    "{} c={c}: the {} round ended before any response ({} requests still in \
                     flight, none timed out); measuring it again with {} rounds",
                    self.name(p.server),
                    secs(load.seconds),
                    m.summary.in_flight_at_end,
                    secs(next)
                )));
                p.round_s = Some(next);
                return Ok(Absorbed::Again(Box::new(RoundLoad {
                    seconds: next,
                    ..load.clone()
                })));
            }
        }
        if m.summary.completed == 0 {
            // A round without a response may be a stall of a busy machine;
            // the server has failed only if it does not answer a request on
            // its own.
            if let Err(e) = self.exec.answers(p.server) {
                self.fail(p, StepFailure::StoppedAnswering(e));
                return Ok(Absorbed::Done);
            }
        }
        self.keep(p, slice, load, m);
        Ok(Absorbed::Done)
    }

    /// A round stored in its step with its verdict; a step measured alone
    /// is done by its own interval, or at its count of rounds.
    fn keep(&mut self, p: &mut Pending, slice: Slice, load: &RoundLoad, m: Measured) {
        let group = self.group;
        let rc = throng_trust::verdict::RoundContext {
            server: Some(m.usage.clone()),
            server_cores: Some(group.cores),
            client_threads: m.summary.threads as u32,
            shared_cores: group.shared,
            close_mode: !load.shape.keep_alive,
            links: self.ctx.links.clone(),
        };
        // Apart, the client hosts read their own ports; this machine's are
        // no concern of a load that came from elsewhere.
        let ports = match &m.ports {
            Some(read) => Ports::Read(read.clone()),
            None => Ports::Here,
        };
        let verdict = throng_load::verdict::round(&m.summary, &m.latency, &rc, ports);
        let mut summary = m.summary;
        summary.thresholds = throng_load::thresholds::judge_all(&self.study.thresholds, &summary);
        let index = p.step.rounds.len() as u32;
        self.ctx.observer.event(Event::Round {
            server: self.name(p.server),
            concurrency: p.step.concurrency,
            index,
            summary: &summary,
            usage: &m.usage,
        });
        p.rps.push(summary.requests_per_sec);
        p.verdicts.push(verdict);
        p.step.rounds.push(RoundRecord {
            index,
            histogram: serialize_histogram(&m.latency),
            summary,
            server: m.usage,
            block: slice.block,
            launch: slice.launch,
        });
        // Paired slices end together, when their comparisons say (see
        // `rotation`), as do the slices of a launch or of a count; a lone
        // server in one launch ends by its own interval.
        if slice.block.is_none() && self.quota().is_none() {
            match self.study.precision.next(&p.rps, p.spent.as_secs_f64()) {
                Next::More => {}
                Next::Converged | Next::Capped => p.done = true,
            }
        }
    }
}
