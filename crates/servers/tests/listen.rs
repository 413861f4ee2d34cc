//! Every installed built-in listens on the address it is given, not on
//! loopback's 127.0.0.1 nor on every address, and answers there: a server
//! loaded from other hosts listens on its host's benchmark address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

mod common;

use throng_servers::{loopback, start, Recipes, RunAs, RunDir, Site, Start};

const BODY: &str = "hello\n";

/// IPv6 loopback: an address other than 127.0.0.1 that needs brackets in
/// most configs. 127.0.0.2 where the host has no IPv6.
fn other_address() -> IpAddr {
    let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
    if TcpListener::bind((v6, 0)).is_ok() {
        v6
    } else {
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))
    }
}

#[test]
fn every_installed_server_listens_only_on_the_address_given() {
    let listen = other_address();
    let base = tempfile::tempdir().unwrap();
    let rd = RunDir::create(base.path(), "listen", 0, false).unwrap();
    let docroot = rd.subdir(&["docroot"], None).unwrap();
    std::fs::write(docroot.join("index.html"), BODY).unwrap();
    let recipes = Recipes::builtin();
    let user = RunAs::unprivileged();
    let site = Site {
        rundir: &rd,
        user: user.as_ref(),
    };
    for (recipe, backend) in common::installed(&recipes) {
        let s = Start {
            backend,
            listen,
            ..Start::one_worker(&recipe.name, recipe, "listen", docroot.clone())
        };
        let mut running = start(site, &s).unwrap_or_else(|e| {
            panic!("{} on {listen}: {}\n{}", recipe.name, e.message, e.log_tail)
        });
        assert_eq!(running.addr(), SocketAddr::new(listen, running.port));
        let r = loopback::get(running.addr(), "/index.html", &[], Duration::from_secs(5));
        let elsewhere =
            TcpStream::connect_timeout(&loopback::addr(running.port), Duration::from_secs(1));
        running.stop();
        let r = r.unwrap_or_else(|e| panic!("{} on {listen}: {e}", recipe.name));
        assert_eq!(
            (r.status, r.body.as_slice()),
            (200, BODY.as_bytes()),
            "{}",
            recipe.name
        );
        assert!(
            elsewhere.is_err(),
            "{} given {listen} also listens on 127.0.0.1",
            recipe.name
        );
    }
}
