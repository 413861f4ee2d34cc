//! Where a study's servers and load run: this machine, or hosts reached
//! over ssh (docs/distributed.md).

use anyhow::bail;
use throng_remote::{Place, Transport};

use super::StudyFile;

/// Where a study's servers and load run.
#[derive(Debug, Clone, PartialEq)]
pub struct Hosts {
    pub server: Place,
    pub clients: Vec<Place>,
    pub transport: Transport,
    /// `server_address`: where the servers listen when apart.
    pub address: Option<std::net::IpAddr>,
}

impl Hosts {
    pub fn local() -> Hosts {
        Hosts {
            server: Place::Local,
            clients: vec![Place::Local],
            transport: Transport::ssh(None),
            address: None,
        }
    }

    /// Everything on this machine, as before hosts existed.
    pub fn is_local(&self) -> bool {
        self.server.is_local() && self.clients.iter().all(Place::is_local)
    }

    pub(super) fn parse(f: &StudyFile) -> anyhow::Result<Hosts> {
        let server = match &f.server_host {
            Some(h) => Place::parse(h).map_err(|e| anyhow::anyhow!("server_host: {e}"))?,
            None => Place::Local,
        };
        let clients = match &f.client_hosts {
            Some(list) => {
                let mut v: Vec<Place> = Vec::new();
                for h in list {
                    let p = Place::parse(h).map_err(|e| anyhow::anyhow!("client_hosts: {e}"))?;
                    if v.contains(&p) {
                        bail!("client_hosts: {p} is listed twice");
                    }
                    v.push(p);
                }
                if v.is_empty() {
                    bail!(
                        "client_hosts: name at least one host (or leave it out for this machine)"
                    );
                }
                v
            }
            None => vec![Place::Local],
        };
        let transport = match (&f.transport, &f.ssh_command) {
            (Some(_), Some(_)) => bail!("give either transport or ssh_command, not both"),
            (Some(t), None) => Transport::template(t).map_err(|e| anyhow::anyhow!("{e}"))?,
            (None, c) => {
                if c.as_deref().is_some_and(|c| c.contains('\n')) {
                    bail!("ssh_command is one line");
                }
                Transport::ssh(c.as_deref())
            }
        };
        let address = match &f.server_address {
            None => None,
            Some(a) => Some(
                a.parse::<std::net::IpAddr>()
                    .map_err(|_| anyhow::anyhow!("server_address {a:?} is not an IP address"))?,
            ),
        };
        Ok(Hosts {
            server,
            clients,
            transport,
            address,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::study::Study;
    use throng_remote::{Place, Transport};
    use throng_servers::Recipes;

    fn study(extra: &str) -> anyhow::Result<Study> {
        Study::parse(
            &format!(
                "name = \"h\"\nservers = [\"nginx\"]\nworkloads = [\"tiny\"]\ncores = [1]\n\
                 concurrency = [10]\n{extra}"
            ),
            &Recipes::builtin(),
        )
    }

    #[test]
    fn hosts_default_to_this_machine() {
        let s = study("").unwrap();
        assert!(s.hosts.is_local());
        assert_eq!(s.hosts.clients, [Place::Local]);
    }

    #[test]
    fn a_study_names_its_server_host_and_client_hosts() {
        let s = study(
            "server_host = \"ssh://bench@198.18.0.20:2222\"\n\
             client_hosts = [\"ssh://198.18.0.11\", \"ssh://198.18.0.12\"]\n\
             server_address = \"198.18.0.20\"\nssh_command = \"ssh -F ./cfg\"\n",
        )
        .unwrap();
        assert!(!s.hosts.is_local());
        assert_eq!(s.hosts.server.to_string(), "ssh://bench@198.18.0.20:2222");
        assert_eq!(s.hosts.clients.len(), 2);
        assert_eq!(s.hosts.address, Some("198.18.0.20".parse().unwrap()));
        if std::env::var_os(throng_remote::SSH_COMMAND_ENV).is_none() {
            assert_eq!(
                s.hosts.transport,
                Transport::Ssh {
                    command: "ssh -F ./cfg".into()
                }
            );
        }
        let t =
            study("client_hosts = [\"ssh://pod-1\"]\ntransport = \"kubectl exec -i {host} --\"\n")
                .unwrap();
        assert_eq!(
            t.hosts.transport,
            Transport::Template("kubectl exec -i {host} --".into())
        );
    }

    #[test]
    fn a_duet_apart_is_decided_by_the_hosts_cpus_not_this_machines() {
        // Two servers (one recipe, two profiles): one CPU here, which would
        // refuse a duet on this machine, is not asked; the hosts' are once
        // reached (`apart::duet`).
        let s = study(
            "duet = true\nprofiles = [\"defaults\", \"tuned\"]\n\
             server_host = \"ssh://srv\"\nclient_hosts = [\"ssh://a\", \"ssh://b\"]\n",
        )
        .unwrap();
        assert!(s.duet);
        s.check_duet(1).unwrap();
        let one = study("duet = true\nserver_host = \"ssh://srv\"\n").unwrap();
        assert_eq!(
            format!("{:#}", one.check_duet(64).unwrap_err()),
            "duet = true compares exactly two servers; the study lists 1"
        );
    }

    #[test]
    fn bad_hosts_are_refused_with_the_key() {
        for (extra, want) in [
            (
                "server_host = \"ssh://-oProxyCommand=x\"\n",
                "server_host: \"-oProxyCommand=x\" is not a host name or address",
            ),
            (
                "client_hosts = []\n",
                "client_hosts: name at least one host (or leave it out for this machine)",
            ),
            (
                "client_hosts = [\"ssh://a\", \"ssh://a\"]\n",
                "client_hosts: ssh://a is listed twice",
            ),
            (
                "server_address = \"web\"\n",
                "server_address \"web\" is not an IP address",
            ),
            (
                "transport = \"docker exec -i box\"\n",
                "transport \"docker exec -i box\" does not name {host}",
            ),
            (
                "transport = \"x {host}\"\nssh_command = \"ssh\"\n",
                "give either transport or ssh_command, not both",
            ),
        ] {
            let e = study(extra).unwrap_err();
            assert_eq!(format!("{e:#}"), want, "{extra}");
        }
    }
}
