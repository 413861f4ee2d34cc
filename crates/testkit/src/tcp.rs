//! Sockets in the states a test needs of the kernel's tables.

use std::io::Read;
use std::net::{Shutdown, TcpListener, TcpStream};

/// A connection to `listener` that its client closes first, so that the
/// client's ephemeral port goes to TIME_WAIT once the server, having read
/// the end, closes too; returns that port. On loopback each segment is
/// normally delivered inside its sender's system call, but a busy machine
/// may leave the last to the kernel a moment: a test that reads the state
/// waits for it.
pub fn closed_by_its_client(listener: &TcpListener) -> u16 {
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let port = client.local_addr().unwrap().port();
    let (mut accepted, _) = listener.accept().unwrap();
    client.shutdown(Shutdown::Both).unwrap();
    drop(client);
    // The server sees the client's FIN, then closes its side; the client's
    // socket is in TIME_WAIT once that FIN is acknowledged.
    let mut buf = [0u8; 1];
    assert_eq!(accepted.read(&mut buf).unwrap(), 0);
    drop(accepted);
    port
}
