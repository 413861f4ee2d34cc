//! The server host's side of a study apart, inside its agent.

use std::time::Duration;

use throng_servers::usage::{Carry, Sampler};
use throng_servers::{Recipes, RunAs, RunDir, Site};

use super::archive::Unpacking;
use super::wire::{stage_name, LabReply, LabRequest};
use crate::executor::{DoctorPlan, Executor, Local};
use crate::group::Group;
use crate::interrupt::Interrupt;
use crate::profile::Window;
use crate::round::ServerId;
use crate::study::{Study, StudyServer};
use crate::workload::{self, Workload, WorkloadId};

/// The server host's side: a [`Local`] executor for this host, created by
/// the coordinator's `open`, and the windows and counters running on it.
#[derive(Default)]
pub struct ServerHost {
    state: Option<Opened>,
    /// The CPUs of the thread that calls it, before any server ran: what it
    /// goes back to when none runs ([`keep_off_servers`]).
    own: Option<Vec<usize>>,
}

struct Opened {
    study: Study,
    exec: Local<'static>,
    rundir: &'static RunDir,
    user: Option<&'static RunAs>,
    keep: bool,
    /// Generated, or sent and verified (a site of the user's own).
    docroots: Vec<(WorkloadId, Workload)>,
    /// The site being sent, until its end.
    receiving: Option<Unpacking>,
    windows: Vec<(String, Sampler)>,
    /// What each server's last window's sampler left its next
    /// (`usage::Carry`), by server name: its samplers run on a CPU beside
    /// the server, which a client host may share, as in one machine's
    /// namespaces.
    carried: Vec<(String, Carry)>,
    /// The CPUs this host offered when the study opened, and those each
    /// running server started on (a duet's two): its samplers run on the
    /// others.
    cpus: Vec<usize>,
    server_cpus: Vec<(ServerId, Vec<usize>)>,
    /// Diagnostic windows: each server's syscalls counted and stacks
    /// sampled here, with its logs' size when the window opened.
    counters: Vec<(String, Window, u64)>,
}

impl ServerHost {
    pub fn new() -> ServerHost {
        ServerHost::default()
    }

    fn opened(&mut self) -> Result<&mut Opened, String> {
        self.state
            .as_mut()
            .ok_or_else(|| "no study is open on this host".to_string())
    }

    /// The study open here and the id of its server of this name: both
    /// hosts parsed the same study, so its servers are in the same order.
    fn server(&mut self, name: &str) -> Result<(&mut Opened, ServerId), String> {
        let o = self.opened()?;
        let id = o
            .study
            .servers
            .iter()
            .position(|s| s.name == name)
            .map(ServerId)
            .ok_or_else(|| format!("the study has no server {name:?}"))?;
        Ok((o, id))
    }

    pub fn handle(&mut self, req: LabRequest) -> Result<LabReply, String> {
        match req {
            LabRequest::Open {
                study_toml,
                recipes,
                listen,
                keep_workdir,
            } => {
                self.shutdown();
                self.own
                    .get_or_insert_with(throng_engine::affinity::own_cpus);
                let recipes = Recipes::with_texts(&recipes).map_err(|e| format!("{e:#}"))?;
                let study =
                    Study::parse_sent(&study_toml, &recipes).map_err(|e| format!("{e:#}"))?;
                study.check_installed().map_err(|e| format!("{e:#}"))?;
                let stamp = (throng_model::unix_now() * 1000.0) as i64;
                // The agent serves one study and ends with it: what the
                // executor borrows lives as long as the process.
                let mut rundir = RunDir::create(&std::env::temp_dir(), "throng-host", stamp, true)
                    .map_err(|e| format!("{e:#}"))?;
                crate::futex::prepare(study.futex_global, &mut rundir)
                    .map_err(|e| format!("{e:#}"))?;
                let rundir: &'static RunDir = Box::leak(Box::new(rundir));
                let user: Option<&'static RunAs> =
                    RunAs::unprivileged().map(|u| &*Box::leak(Box::new(u)));
                let interrupt: &'static Interrupt = Box::leak(Box::new(Interrupt::new()));
                let site = Site { rundir, user };
                let mut exec = Local::new(site, interrupt);
                exec.listen = listen;
                let cpus = exec.cpus();
                self.state = Some(Opened {
                    study,
                    exec,
                    rundir,
                    user,
                    keep: keep_workdir,
                    docroots: Vec::new(),
                    receiving: None,
                    windows: Vec::new(),
                    carried: Vec::new(),
                    cpus: cpus.clone(),
                    server_cpus: Vec::new(),
                    counters: Vec::new(),
                });
                Ok(LabReply::Opened { cpus })
            }
            LabRequest::Survey {
                connections,
                server_cpus,
            } => {
                let o = self.opened()?;
                let (findings, environment) = o.exec.survey(&DoctorPlan {
                    connections,
                    close_mode: false,
                    client_cpus: Vec::new(),
                    server_cpus,
                });
                Ok(LabReply::Survey {
                    findings,
                    environment,
                })
            }
            LabRequest::Start {
                server,
                cores,
                server_cpus,
                workload,
                max_concurrency,
            } => {
                let (o, id) = self.server(&server)?;
                let kind = o.workload(&workload)?;
                let w = match o.docroots.iter().find(|(k, _)| *k == kind) {
                    Some((_, w)) => w.clone(),
                    None => {
                        let WorkloadId::Builtin(kind) = kind else {
                            return Err(format!(
                                "[workload.{workload}] docroot: the site was not sent to this host"
                            ));
                        };
                        let dir = o
                            .rundir
                            .subdir(&[&format!("docroot-{}", kind.name())], None)
                            .map_err(|e| format!("{e:#}"))?;
                        let w = workload::generate(kind, &dir).map_err(|e| format!("{e:#}"))?;
                        o.docroots.push((kind.into(), w.clone()));
                        w
                    }
                };
                let s: StudyServer = o.study.servers[id.index()].clone();
                o.server_cpus.retain(|(s, _)| *s != id);
                o.server_cpus.push((id, server_cpus.clone()));
                let group = Group {
                    cores,
                    server_cpus,
                    client_cpus: Vec::new(),
                    shared: false,
                    workload: w.clone(),
                    max_concurrency,
                    lanes: Vec::new(),
                };
                let started = o.exec.start(&group, id, &s);
                keep_off_servers(o);
                Ok(match started {
                    Ok(started) => LabReply::Started {
                        pid: started.pid,
                        port: o.exec.port(id).unwrap_or(0),
                        configs: started.configs,
                        paths: w.paths(),
                        tls: o.exec.tls_spec(id),
                    },
                    Err(n) => LabReply::NotReady {
                        stage: stage_name(n.stage).to_string(),
                        message: n.failure.message,
                        log_tail: n.failure.log_tail,
                        configs: n.failure.configs,
                    },
                })
            }
            LabRequest::WindowBegin {
                server,
                delay_s,
                seconds,
                slice,
            } => {
                let (o, id) = self.server(&server)?;
                let (pid, behind) = o
                    .exec
                    .pids(id)
                    .ok_or_else(|| format!("{server} is not running"))?;
                let key = window_key(&server, slice);
                o.windows.retain(|(n, _)| n != &key);
                let carry = o
                    .carried
                    .iter()
                    .position(|(n, _)| n == &server)
                    .map(|i| o.carried.swap_remove(i).1)
                    // No load runs in this process: its samplers may keep
                    // the threads' schedstat files open.
                    .unwrap_or_else(Carry::keeping_files);
                let s = Sampler::start_window_carried(
                    Some(carry),
                    pid,
                    &behind,
                    &beside(&o.cpus, o.server_cpus.iter().flat_map(|(_, c)| c)),
                    Duration::from_secs_f64(delay_s.max(0.0)),
                    Some(Duration::from_secs_f64(seconds)),
                    Duration::from_millis(100),
                );
                o.windows.push((key, s));
                Ok(LabReply::Done)
            }
            LabRequest::WindowEnd { server, slice } => {
                let o = self.opened()?;
                let key = window_key(&server, slice);
                let i = o
                    .windows
                    .iter()
                    .position(|(n, _)| n == &key)
                    .ok_or_else(|| format!("no window of {server} is open"))?;
                let (_, s) = o.windows.swap_remove(i);
                let (usage, carry) = s.finish_carried();
                if let Some(c) = carry {
                    o.carried.retain(|(n, _)| n != &server);
                    o.carried.push((server, c));
                }
                Ok(LabReply::Usage { usage })
            }
            LabRequest::DiagnoseBegin { server } => {
                let (o, id) = self.server(&server)?;
                let (procs, dir) = o
                    .exec
                    .tree(id)
                    .ok_or_else(|| format!("{server} is not running"))?;
                let before = throng_servers::parity::log_bytes(&dir);
                let c = Window::open(&procs)?;
                o.counters.retain(|(n, _, _)| n != &server);
                o.counters.push((server, c, before));
                Ok(LabReply::Done)
            }
            LabRequest::DiagnoseEnd { server } => {
                let (o, id) = self.server(&server)?;
                let i = o
                    .counters
                    .iter()
                    .position(|(n, _, _)| n == &server)
                    .ok_or_else(|| format!("no count of {server} is under way"))?;
                let (_, c, before) = o.counters.swap_remove(i);
                let (counts, profile) = c.close()?;
                let after = o
                    .exec
                    .tree(id)
                    .map(|(_, dir)| throng_servers::parity::log_bytes(&dir))
                    .unwrap_or(before);
                Ok(LabReply::Counted {
                    counts,
                    log_bytes: after.saturating_sub(before),
                    profile: Some(profile),
                })
            }
            LabRequest::Exited { server } => {
                let (o, id) = self.server(&server)?;
                Ok(LabReply::Exited {
                    how: o.exec.exited(id),
                })
            }
            LabRequest::Answers { server } => {
                let (o, id) = self.server(&server)?;
                Ok(LabReply::Answers {
                    error: o.exec.answers(id).err(),
                })
            }
            LabRequest::LogTail { server } => {
                let (o, id) = self.server(&server)?;
                Ok(LabReply::LogTail {
                    text: o.exec.log_tail(id),
                })
            }
            LabRequest::Stop { server } => {
                let (o, id) = self.server(&server)?;
                o.exec.stop(id);
                o.server_cpus.retain(|(s, _)| *s != id);
                keep_off_servers(o);
                Ok(LabReply::Done)
            }
            LabRequest::Features { server, cpus } => {
                let o = self.opened()?;
                let s = o
                    .study
                    .servers
                    .iter()
                    .find(|s| s.name == server)
                    .ok_or_else(|| format!("the study has no server {server:?}"))?;
                let site = Site {
                    rundir: o.rundir,
                    user: o.user,
                };
                Ok(LabReply::Features {
                    found: crate::features::probe_server(site, s, &cpus),
                })
            }
            LabRequest::SiteBegin { manifest } => {
                let o = self.opened()?;
                let name = manifest.name.clone();
                let refuse = |e: String| format!("[workload.{name}] docroot: {e}");
                let id = o.workload(&name)?;
                if !matches!(id, WorkloadId::Own(_)) || o.docroots.iter().any(|(k, _)| *k == id) {
                    return Err(refuse("not a site of the study still to be sent".into()));
                }
                let dir = o.rundir.path().join(format!("docroot-{}", id.name()));
                o.receiving = None;
                o.receiving = Some(Unpacking::begin(id, manifest, &dir).map_err(refuse)?);
                Ok(LabReply::Done)
            }
            LabRequest::SiteChunk { path, data } => {
                let u = self
                    .opened()?
                    .receiving
                    .as_mut()
                    .ok_or("no site is being sent")?;
                let name = u.name().to_string();
                u.write(&path, &data)
                    .map_err(|e| format!("[workload.{name}] docroot: {e}"))?;
                Ok(LabReply::Done)
            }
            LabRequest::SiteEnd => {
                let o = self.opened()?;
                let u = o.receiving.take().ok_or("no site is being sent")?;
                let (id, name) = (u.id, u.name().to_string());
                let w = u
                    .finish()
                    .map_err(|e| format!("[workload.{name}] docroot: {e}"))?;
                o.docroots.push((id, w));
                Ok(LabReply::Done)
            }
            LabRequest::OomKills => Ok(LabReply::OomKills {
                kills: self.opened()?.exec.oom_kills(),
            }),
        }
    }

    /// Every server stopped, every window and count ended, the run
    /// directory removed unless asked to keep it.
    pub fn shutdown(&mut self) {
        if let Some(mut o) = self.state.take() {
            for (_, s) in o.windows.drain(..) {
                s.finish();
            }
            for (_, c, _) in o.counters.drain(..) {
                let _ = c.close();
            }
            o.exec.stop_all();
            if !o.keep {
                let _ = std::fs::remove_dir_all(o.rundir.path());
            }
        }
        if let Some(own) = &self.own {
            let _ = throng_engine::affinity::pin_current_thread(own);
        }
    }
}

impl Opened {
    /// The study's workload of this name.
    fn workload(&self, name: &str) -> Result<WorkloadId, String> {
        self.study
            .workloads
            .iter()
            .copied()
            .find(|w| w.name() == name)
            .ok_or_else(|| format!("the study has no workload {name:?}"))
    }
}

impl throng_remote::agent::Extension for ServerHost {
    fn handle(&mut self, body: serde_json::Value) -> Result<serde_json::Value, String> {
        let req: LabRequest = serde_json::from_value(body)
            .map_err(|e| format!("this host's throng cannot read the lab request: {e}"))?;
        let reply = ServerHost::handle(self, req)?;
        serde_json::to_value(reply).map_err(|e| e.to_string())
    }

    fn shutdown(&mut self) {
        ServerHost::shutdown(self);
    }
}

/// Keeps the thread that answers the coordinator off the running servers'
/// CPUs where the host has others, as its samplers are (and they, spawned
/// from it, start there): apart, it answers each slice's window while the
/// next slice's load runs, and on a host of one machine's namespaces it
/// was on the server's CPU for 269 ms of 8 s of `quick` apart. With no
/// server running, or none of the host's CPUs left beside them, it runs on
/// them all.
fn keep_off_servers(o: &Opened) {
    // With no server running, `beside` is every CPU already.
    let others = beside(&o.cpus, o.server_cpus.iter().flat_map(|(_, c)| c));
    let to = if others.is_empty() { &o.cpus } else { &others };
    // Best effort, as for the samplers: an unpinned agent costs accuracy.
    let _ = throng_engine::affinity::pin_current_thread(to);
}

/// A sampling window's name: its server's, and a planned slice's index.
fn window_key(server: &str, slice: Option<u32>) -> String {
    match slice {
        Some(i) => format!("{server}#{i}"),
        None => server.to_string(),
    }
}

/// The CPUs of `cpus` that are not the server's: where the sampler reads
/// the server without taking its time from it, as at home, where it runs
/// beside the client. None (the sampler unpinned) when the server has
/// them all: the doctor names that host (`plan.cpus`).
fn beside<'a>(cpus: &[usize], servers: impl IntoIterator<Item = &'a usize>) -> Vec<usize> {
    let servers: Vec<usize> = servers.into_iter().copied().collect();
    cpus.iter()
        .filter(|c| !servers.contains(c))
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sampler_runs_beside_the_server_where_the_host_has_a_cpu_for_it() {
        assert_eq!(beside(&[0, 1], &[0]), [1]);
        assert_eq!(beside(&[0, 1, 2, 3], &[0, 1]), [2, 3]);
        assert!(beside(&[0], &[0]).is_empty(), "none left: unpinned");
        assert_eq!(beside(&[0, 1], &[]), [0, 1], "no server yet: anywhere");
        // A duet's two servers: neither's CPU.
        assert_eq!(
            beside(&[0, 1, 2, 3, 4], [&[0, 1], &[2, 3]].into_iter().flatten()),
            [4]
        );
    }

    #[test]
    fn the_agent_keeps_off_a_running_servers_cpus_and_returns_after() {
        let own = throng_engine::affinity::own_cpus();
        if own.len() < 2 {
            println!("skipped: one CPU here, nothing beside a server's");
            return;
        }
        let mut host = ServerHost::new();
        let open = host.handle(LabRequest::Open {
            study_toml: "name = 's'\nservers = ['nginx']\nworkloads = ['tiny']\ncores = [1]\n\
                         concurrency = [2]\nfeatures = false\nserver_host = 'ssh://srv'\n"
                .into(),
            recipes: Vec::new(),
            listen: "127.0.0.1".parse().unwrap(),
            keep_workdir: false,
        });
        if let Err(e) = open {
            println!("skipped: {e}");
            return;
        }
        let first = own[0];
        let started = host.handle(LabRequest::Start {
            server: "nginx".into(),
            cores: 1,
            server_cpus: vec![first],
            workload: "tiny".into(),
            max_concurrency: 2,
        });
        let during = throng_engine::affinity::own_cpus();
        let pid = match &started {
            Ok(LabReply::Started { pid, .. }) => Some(*pid),
            _ => None,
        };
        let server = pid.and_then(|p| throng_servers::process::cpus_allowed(p).ok());
        let stopped = host.handle(LabRequest::Stop {
            server: "nginx".into(),
        });
        let after = throng_engine::affinity::own_cpus();
        host.shutdown();
        assert!(
            matches!(started, Ok(LabReply::Started { .. })),
            "{started:?}"
        );
        assert!(stopped.is_ok(), "{stopped:?}");
        assert_eq!(during, own[1..], "while nginx ran on CPU {first}");
        // The server itself is where it was put, not where its starter
        // went after.
        assert_eq!(server, Some(vec![first]));
        assert_eq!(after, own, "with no server running");
    }
}
