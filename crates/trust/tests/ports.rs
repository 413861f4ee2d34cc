//! The `ports` rule's figure: ephemeral ports held in TIME_WAIT, read as
//! ports, not sockets, from the kernel over sock_diag or /proc/net/tcp.

use std::io::Read;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use throng_testkit::wait::poll_until;
use throng_trust::snapshot::{
    ephemeral_range, proc_time_wait_ports, read_time_wait_ports, sockstat_time_wait,
    time_wait_ports,
};
use throng_trust::PortUse;

/// /proc/net/tcp with a listener on 127.0.0.1:32800 (0x8020), three
/// TIME_WAIT sockets the server closed first (all on its port 32800), two
/// the client closed first (on its ports 40000 and 40001), one established
/// connection and one TIME_WAIT below the range (port 8080).
const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:8020 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:8020 0100007F:9C41 06 00000000:00000000 03:00001767 00000000     0        0 0 3
   2: 0100007F:8020 0100007F:9C42 06 00000000:00000000 03:00001767 00000000     0        0 0 3
   3: 0100007F:8020 0100007F:9C43 06 00000000:00000000 03:00001767 00000000     0        0 0 3
   4: 0100007F:9C40 0100007F:8020 06 00000000:00000000 03:00001767 00000000     0        0 0 3
   5: 0100007F:9C41 0100007F:8021 06 00000000:00000000 03:00001767 00000000     0        0 0 3
   6: 0100007F:9C44 0100007F:8020 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
   7: 0100007F:1F90 0100007F:9C45 06 00000000:00000000 03:00001767 00000000     0        0 0 3
";

/// /proc/net/tcp6: one client TIME_WAIT on port 40002 (0x9C42).
const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:9C42 00000000000000000000000001000000:8020 06 00000000:00000000 03:00001767 00000000     0        0 0 3
";

#[test]
fn time_wait_is_counted_by_port() {
    let v4 = time_wait_ports(TCP, 32768, 60999);
    // The server's three TIME_WAITs hold one port, its own; each client
    // TIME_WAIT holds its port. 8080 is not ephemeral.
    assert_eq!(
        v4.into_iter().collect::<Vec<_>>(),
        vec![32800, 40000, 40001]
    );
    let v6 = time_wait_ports(TCP6, 32768, 60999);
    assert_eq!(v6.into_iter().collect::<Vec<_>>(), vec![40002]);
    // A narrower range counts only its own ports.
    assert_eq!(time_wait_ports(TCP, 40000, 40000).len(), 1);
    assert!(time_wait_ports("", 32768, 60999).is_empty());
}

#[test]
fn sockstat_says_how_many_sockets_are_in_time_wait() {
    let text = "sockets: used 15\nTCP: inuse 2 orphan 0 tw 37 alloc 2 mem 0\nUDP: inuse 0 mem 45\n";
    assert_eq!(sockstat_time_wait(text), Some(37));
    let none = "sockets: used 15\nTCP: inuse 2 orphan 0 tw 0 alloc 2 mem 0\n";
    assert_eq!(sockstat_time_wait(none), Some(0));
    // Unreadable: the tables are read, as before.
    assert_eq!(sockstat_time_wait("TCP: inuse 2 orphan 0\n"), None);
    assert_eq!(sockstat_time_wait(""), None);
    // This machine's, read as the ports' count reads it.
    let own = std::fs::read_to_string("/proc/net/sockstat").unwrap();
    assert!(sockstat_time_wait(&own).is_some(), "{own}");
}

#[test]
fn whoever_closes_first_holds_its_port() {
    let (lo, hi) = ephemeral_range().expect("ip_local_port_range");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server_port = listener.local_addr().unwrap().port();

    // The client closes first: its own ephemeral port goes to TIME_WAIT.
    let client_port = throng_testkit::tcp::closed_by_its_client(&listener);
    let mut buf = [0u8; 1];

    // The server closes first: the TIME_WAIT sits on the server's port.
    let client2 = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let client2_port = client2.local_addr().unwrap().port();
    let (accepted2, _) = listener.accept().unwrap();
    accepted2.shutdown(Shutdown::Both).unwrap();
    drop(accepted2);
    let mut c2 = client2;
    assert_eq!(c2.read(&mut buf).unwrap(), 0);
    drop(c2);

    // Loopback delivers each segment inside the sender's system call, so
    // the states are normally there already; allow the kernel a moment.
    let read = || time_wait_ports(&std::fs::read_to_string("/proc/net/tcp").unwrap(), lo, hi);
    let held = poll_until(Instant::now() + Duration::from_secs(5), || {
        let held = read();
        (held.contains(&client_port) && held.contains(&server_port)).then_some(held)
    })
    .unwrap_or_else(read);
    assert!(held.contains(&client_port), "client port {client_port}");
    assert!((lo..=hi).contains(&server_port));
    assert!(held.contains(&server_port), "server port {server_port}");
    // The client whose server closed first keeps nothing toward it (its
    // port may be in TIME_WAIT toward somewhere else, from another program).
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let pair = format!(":{client2_port:04X} 0100007F:{server_port:04X} 06 ");
    assert!(!tcp.contains(&pair), "{pair}");
    let reverse = format!(":{server_port:04X} 0100007F:{client2_port:04X} 06 ");
    assert!(tcp.contains(&reverse), "{reverse}");

    let n = read_time_wait_ports(lo, hi).unwrap();
    assert!(n >= 2, "{n}");
    // The kernel's answer over sock_diag, which the figure is read from
    // where it answers, names the same two ports as the table.
    let asked = throng_engine::sockdiag::time_wait_ports(lo, hi).expect("sock_diag answers");
    assert!(
        asked.contains(&client_port) && asked.contains(&server_port),
        "{asked:?}"
    );
    assert!(proc_time_wait_ports(lo, hi).unwrap() >= 2);
    let p = PortUse::read();
    assert_eq!(p.range, Some(u64::from(hi - lo) + 1));
    assert!(p.time_wait.unwrap() >= 2);
}
