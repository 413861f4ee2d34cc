//! The group's servers started one after the other, each checked, its
//! configs and settings stored; a server that cannot serve the workload,
//! or could not start, has its steps stored as such at once. For a later
//! launch the servers still measured start again, in a shuffled order, so
//! that no server always follows the same one.

use throng_model::{Setting, StepStatus};

use super::failure::Down;
use super::pending::level_step;
use super::Sweep;
use crate::executor::{NotReady, Started};
use crate::group::Group;
use crate::observer::Event;
use crate::pairs::Shuffle;
use crate::round::ServerId;

impl Sweep<'_, '_> {
    pub(super) fn start_servers(&mut self) -> anyhow::Result<()> {
        self.read_prices()?;
        if self.launch > 0 {
            self.start_again();
            return Ok(());
        }
        for index in 0..self.study.servers.len() {
            if self.interrupted() {
                break;
            }
            let id = ServerId(index);
            let s = &self.study.servers[index];
            // A server that cannot serve a dynamic workload shows that, not
            // a number.
            let unsupported = match &s.unsupported {
                Some(why) => Err(why.clone()),
                None => s.recipe.workload(self.group.workload.kind).map(|_| ()),
            };
            if let Err(reason) = unsupported {
                self.unsupported(id, &reason)?;
                continue;
            }
            let mine = self.launch_group(index);
            match self.exec.start(&mine, id, s) {
                Ok(started) => self.started(id, &started)?,
                Err(f) => self.not_ready(id, &f)?,
            }
        }
        Ok(())
    }

    /// The servers' core read while no server runs on it, so that a
    /// comparison of runs can set the machine's change beside the servers'.
    fn read_prices(&mut self) -> anyhow::Result<()> {
        let Some(&cpu) = self.group.server_cpus.first() else {
            return Ok(());
        };
        if let Some(r) = self.exec.core_prices(cpu) {
            let p = throng_model::CorePrices {
                launch: self.launch,
                cores: self.group.cores,
                workload: self.group.workload.kind.name().to_string(),
                cpu: cpu as u32,
                unix_s: throng_model::unix_now(),
                loop_ns: r.loop_ns,
                syscall_ns: r.syscall_ns,
                switch_ns: r.switch_ns,
            };
            self.ctx.sink.prices(&p)?;
            self.prices.push(p);
        }
        Ok(())
    }

    /// A later launch: every server up and still measured started again;
    /// one that does not start is down for the rest of the group.
    fn start_again(&mut self) {
        let mut order: Vec<ServerId> = self
            .up
            .iter()
            .copied()
            .filter(|id| self.down[id.index()].is_none())
            .collect();
        let seed = (u64::from(self.group.cores) << 32) ^ u64::from(self.launch);
        Shuffle::new(seed).shuffle(&mut order);
        for id in order {
            if self.interrupted() {
                break;
            }
            let s = &self.study.servers[id.index()];
            let mine = self.launch_group(id.index());
            match self.exec.start(&mine, id, s) {
                Ok(started) => self.ctx.observer.event(Event::ServerStarted {
                    server: &s.name,
                    cores: self.group.cores,
                    workload: self.group.workload.kind.name(),
                    pid: started.pid,
                }),
                Err(f) => {
                    let msg = f.message();
                    self.ctx.observer.event(Event::ServerFailed {
                        server: &s.name,
                        cores: self.group.cores,
                        workload: self.group.workload.kind.name(),
                        message: &msg,
                    });
                    self.down[id.index()] = Some(Down::Restart(self.launch, msg));
                }
            }
        }
    }

    fn unsupported(&mut self, id: ServerId, reason: &str) -> anyhow::Result<()> {
        let mine = self.group.for_server(id.index());
        for l in self.levels.clone() {
            let mut st = level_step(&mine, self.name(id), l);
            st.status = StepStatus::Unsupported;
            st.failure = Some(reason.to_string());
            self.record(st)?;
        }
        Ok(())
    }

    /// The group as the server with this index is started in: its lane's
    /// CPUs in a duet, and configured for the connections of its own
    /// max-users search, which a server whose connections each take a
    /// task searches less far (see [`crate::study::Study::users_cap`]).
    fn launch_group(&self, index: usize) -> Group {
        Group {
            max_concurrency: self.study.max_concurrency_of(&self.study.servers[index]),
            ..self.group.for_server(index)
        }
    }

    /// A server up: its configs and the settings they give it stored.
    fn started(&mut self, id: ServerId, started: &Started) -> anyhow::Result<()> {
        let (s, group) = (&self.study.servers[id.index()], self.group);
        let ctx = &mut *self.ctx;
        ctx.sink.configs(&s.name, &started.configs)?;
        let lab = throng_servers::LabSettings {
            protocol: s.protocol.description().to_string(),
            cipher: s.protocol.cipher(s.certificate.name()),
            // The server's kernel is this one's only when it runs here.
            congestion: s.protocol.congestion(
                self.study
                    .hosts
                    .server
                    .is_local()
                    .then(kernel_congestion)
                    .flatten()
                    .as_deref(),
            ),
            ..throng_servers::LabSettings::cleartext(
                group.cores,
                group.for_server(id.index()).server_cpus,
                throng_servers::max_connections_for(self.study.max_concurrency_of(s)),
            )
        };
        let parity = throng_servers::parity(&s.recipe, &started.configs, &lab);
        if let Some(e) = parity.iter().find(|e| e.setting == Setting::AccessLog) {
            ctx.access_logs.retain(|(n, _)| n != &s.name);
            ctx.access_logs.push((s.name.clone(), e.value.clone()));
        }
        ctx.sink.parity(&s.name, &parity)?;
        ctx.observer.event(Event::ServerStarted {
            server: &s.name,
            cores: group.cores,
            workload: group.workload.kind.name(),
            pid: started.pid,
        });
        self.up.push(id);
        Ok(())
    }

    /// A server that did not start: every step of it failed, or skipped
    /// when the run was interrupted while it was being waited for.
    fn not_ready(&mut self, id: ServerId, f: &NotReady) -> anyhow::Result<()> {
        let name = self.name(id);
        self.ctx.sink.configs(name, &f.failure.configs)?;
        let msg = f.message();
        self.ctx.observer.event(Event::ServerFailed {
            server: name,
            cores: self.group.cores,
            workload: self.group.workload.kind.name(),
            message: &msg,
        });
        // Interrupted while it was being waited for: nothing failed,
        // nothing was measured.
        let cut = self.interrupted();
        let mine = self.group.for_server(id.index());
        for l in self.levels.clone() {
            let mut st = level_step(&mine, name, l);
            if cut {
                st.status = StepStatus::Skipped;
                st.failure = Some(throng_servers::launch::ABANDONED.to_string());
            } else {
                st.status = StepStatus::Failed;
                st.failure = Some(msg.clone());
                st.log_tail = Some(f.failure.log_tail.clone());
            }
            self.record(st)?;
        }
        Ok(())
    }
}

/// This kernel's TCP congestion control, e.g. `cubic`; `None` when it
/// cannot be read.
fn kernel_congestion() -> Option<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}
