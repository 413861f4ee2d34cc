//! The sweep of one group: every server started fresh on the group's
//! cores and checked, warmed up, then measured level by level; then, when
//! the study asks for launches, every server stopped and started again
//! (in a shuffled order) and every level measured once more, until the
//! study's launches are done and the comparisons drawn over them are
//! narrow enough, or the launches run out. A level is
//! measured in blocks: each block gives every server one short round (a
//! slice) in a shuffled order, over connections kept open and idle between
//! slices, and the slices of one block are paired (see [`crate::pairs`]).
//! The level ends when every paired comparison is narrow enough, or when
//! its rounds or time run out; a server measured alone ends by its own
//! interval. Then each server gets a diagnostic round, stored apart.
//! A workload whose study asks for a request count per level (`requests`)
//! is measured in the same shuffled blocks, each round completing its
//! share of the requests on connections of its own: the level ends after
//! exactly `rounds.min` blocks, since a count, not a time, is what the
//! study fixed. Everything outside this module's decisions goes through
//! an [`Executor`].
//!
//! A [`Sweep`] holds what one group's sweep knows as it goes (the servers
//! up, why a server can no longer be measured, each server's pace, the
//! steps stored); each of its phases lives in a file of its own: starting
//! the servers (`start`), the warmup (`warmup`), a level (`level`), its
//! blocks of slices and when they are enough (`rotation`), one slice
//! measured (`slice`), failures (`failure`), the diagnostic rounds
//! (`diagnosis`), and what follows the levels (`after`).

use throng_model::{Comparison, ConfigFile, ParityEntry, StepRecord, StepStatus};

use crate::executor::Executor;
use crate::group::Group;
use crate::interrupt::Interrupt;
pub use crate::live::live_parity;
use crate::observer::{Event, Observer};
use crate::round::ServerId;
use crate::spec::{known_response_bytes, Pace};
use crate::study::{Level, Study};
use level::LevelRun;

mod after;
mod diagnosis;
mod failure;
mod forecast;
mod launches;
mod level;
mod pending;
mod rotation;
mod slice;
mod start;
mod warmup;

pub use failure::{Down, StepFailure};

/// What a sweep writes to: the store in a real study, a list in tests.
pub trait Sink {
    fn step(&mut self, step: &StepRecord) -> anyhow::Result<()>;
    fn verdict(&mut self, step: &StepRecord) -> anyhow::Result<()>;
    fn configs(&mut self, server: &str, configs: &[ConfigFile]) -> anyhow::Result<()>;
    fn max_users(&mut self, server: &str, m: &throng_model::MaxUsers) -> anyhow::Result<()>;
    fn comparisons(&mut self, cs: &[Comparison]) -> anyhow::Result<()>;
    /// A server's settings, replacing what was stored for each setting.
    fn parity(&mut self, server: &str, entries: &[ParityEntry]) -> anyhow::Result<()>;
    /// A reading of the servers' core before a launch.
    fn prices(&mut self, p: &throng_model::CorePrices) -> anyhow::Result<()>;
}

/// Everything a sweep needs besides its executor.
pub struct Ctx<'a> {
    pub study: &'a Study,
    pub sink: &'a mut dyn Sink,
    pub observer: &'a mut dyn Observer,
    pub interrupt: &'a Interrupt,
    /// Steps stored as failed so far.
    pub failed_steps: u32,
    /// Each started server's access log as its configs set it: what the
    /// live check confirms, or leaves standing when it cannot see.
    pub access_logs: Vec<(String, String)>,
    /// The earlier runs of this study on this machine, for each pooled
    /// comparison's next-run range.
    pub earlier: &'a crate::reruns::Earlier,
    /// The paths to the servers whose capacity is known: the study's
    /// `link_capacity`, each client host's link speed.
    pub links: Vec<throng_trust::path::LinkCapacity>,
}

/// Seconds of load a diagnostic round runs at least.
pub const DIAGNOSE_S: f64 = 0.5;

/// Sweeps `group` over the study's servers and levels, storing each step
/// as it ends.
pub fn run_group(ctx: &mut Ctx, exec: &mut dyn Executor, group: &Group) -> anyhow::Result<()> {
    Sweep::new(ctx, exec, group).run()
}

/// What the sweep knows of each server's pace and the workload's size, to
/// make rounds long enough for the responses they measure.
struct Paces {
    /// Per server of the study: the pace of its last round, warmup included.
    of: Vec<Option<Pace>>,
    /// The workload's mean response body, when its files say.
    known: Option<f64>,
}

impl Paces {
    fn update(&mut self, server: ServerId, s: &throng_model::Summary) {
        if let Some(p) = Pace::of(s, self.known) {
            self.of[server.index()] = Some(p);
        }
    }

    fn of(&self, server: ServerId) -> Option<Pace> {
        self.of[server.index()]
    }
}

/// One group's sweep in progress.
pub struct Sweep<'s, 'a> {
    ctx: &'s mut Ctx<'a>,
    exec: &'s mut dyn Executor,
    group: &'s Group,
    study: &'a Study,
    /// The study's levels for the group's workload.
    levels: Vec<Level>,
    /// Rounds end at a request count rather than a time.
    counted: bool,
    /// With `counted`: how many rounds each level's requests are split
    /// into, over every launch.
    counted_rounds: Option<u32>,
    /// The servers started for the group, in the study's order: all stay
    /// up for the whole group, idle on the same cores while another one is
    /// measured.
    up: Vec<ServerId>,
    /// Per server of the study: why it can no longer be measured in this
    /// group, once it cannot.
    down: Vec<Option<Down>>,
    /// Per server: why it is offered no higher rate, once it did not keep
    /// up with one.
    saturated: Vec<Option<String>>,
    paces: Paces,
    /// Every level's paired comparisons, pooled over the sweep at its end.
    compared: Vec<Comparison>,
    /// The group's steps as stored, for the verdicts of a whole sweep.
    steps: Vec<StepRecord>,
    /// The start of the servers being measured: 0 for the first.
    launch: u32,
    /// The servers' core's prices read before each launch so far.
    prices: Vec<throng_model::CorePrices>,
}

impl<'s, 'a> Sweep<'s, 'a> {
    pub fn new(ctx: &'s mut Ctx<'a>, exec: &'s mut dyn Executor, group: &'s Group) -> Self {
        let study = ctx.study;
        let load = study.load_of(group.workload.kind);
        let n = study.servers.len();
        Sweep {
            levels: load.levels(),
            counted: load.round_requests.is_some(),
            counted_rounds: load
                .round_requests
                .map(|_| load.counted_rounds.unwrap_or(study.precision.min_rounds)),
            ctx,
            exec,
            group,
            study,
            up: Vec::new(),
            down: (0..n).map(|_| None).collect(),
            saturated: vec![None; n],
            paces: Paces {
                of: vec![None; n],
                known: known_response_bytes(&group.workload),
            },
            compared: Vec::new(),
            steps: Vec::new(),
            launch: 0,
            prices: Vec::new(),
        }
    }

    /// The whole sweep: servers started, warmed up, every level measured,
    /// the sweep's comparisons and max-users searches, servers stopped, and
    /// the verdicts only a whole sweep can give.
    pub fn run(mut self) -> anyhow::Result<()> {
        let mut runs: Vec<LevelRun> = Vec::new();
        loop {
            self.start_servers()?;
            self.warm_up(&runs);
            for (index, lv) in self.levels.clone().into_iter().enumerate() {
                if self.interrupted() {
                    break;
                }
                if self.launch == 0 {
                    self.skip_saturated(lv)?;
                    let run = self.begin_level(index, lv);
                    runs.push(run);
                }
                let at = if self.one_launch() { 0 } else { index };
                self.level(&mut runs[at])?;
                // In a group of one launch, a level is done once measured:
                // stored now, so an interrupt later keeps it.
                if self.one_launch() {
                    if let Some(run) = runs.pop() {
                        self.close_level(run)?;
                    }
                }
            }
            if self.interrupted() || !self.another_launch(&mut runs) {
                break;
            }
            for &id in &self.up {
                self.exec.stop(id);
            }
            self.launch += 1;
        }
        for run in runs {
            self.close_level(run)?;
        }
        self.pool_comparisons()?;
        self.search_max_users()?;
        for &id in &self.up {
            self.exec.stop(id);
        }
        self.revise_verdicts()
    }

    fn interrupted(&self) -> bool {
        self.ctx.interrupt.is_set()
    }

    fn name(&self, server: ServerId) -> &'a str {
        &self.study.servers[server.index()].name
    }

    /// Stores a step as it ends, and keeps it for the sweep's verdicts.
    fn record(&mut self, step: StepRecord) -> anyhow::Result<()> {
        if step.status == StepStatus::Failed {
            self.ctx.failed_steps += 1;
        }
        self.ctx.sink.step(&step)?;
        self.ctx.observer.event(Event::Step(&step));
        self.steps.push(step);
        Ok(())
    }
}
