#!/usr/bin/env python3
"""The client's hold, read off the wire, for any client.

A closed-model client holds a connection from the moment its answer
reached the client's socket to the moment the client sends its next
request on it; meanwhile the server has that many fewer requests to work
on. throng measures its own hold (client_held_connections); wrk, h2load
and ab do not, and their latency is timed in user space, after their own
wait, so it cannot be read off their output. It can be read off a
packet capture of the loopback interface, the same way for every client:
on loopback a packet is stamped as its sender transmits it, which is
when the receiving socket gets it.

For each connection (the client's port), a hold runs from the last
segment of an answer (data from the server's port) to the next request
(data from the client's port). The mean number of connections held is
the sum of the holds that lie wholly inside the capture over the
capture's length (Little's law); the rest of each cycle is the server's
side (request on the wire to answer on the wire).

A capture of every packet slows both ends, so a capture may hold only
some of the connections (a filter on the client's port): given CONNS,
the connections the client had, the sums are scaled by CONNS over the
connections seen. Connections are taken to be alike, as a closed-model
client's are.

Usage: wire_hold.py CAPTURE.pcap SERVER_PORT [CONNS]
Prints one line: key=value pairs (held, in_flight: connections, of CONNS
or of those seen; hold_us, server_us: means per cycle; cycles,
connections seen, seconds).
"""
import struct
import sys


def packets(path):
    """(time in seconds, source port, destination port, payload length)
    of each TCP/IPv4 packet of an Ethernet (loopback) capture."""
    with open(path, "rb") as f:
        head = f.read(24)
        magic = struct.unpack("<I", head[:4])[0]
        if magic == 0xA1B23C4D:
            scale = 1e-9
        elif magic == 0xA1B2C3D4:
            scale = 1e-6
        else:
            sys.exit(f"{path}: not a little-endian pcap file")
        linktype = struct.unpack("<I", head[20:24])[0]
        if linktype != 1:
            sys.exit(f"{path}: link type {linktype}, not Ethernet (capture on lo)")
        rec = struct.Struct("<IIII")
        while True:
            h = f.read(16)
            if len(h) < 16:
                return
            sec, frac, incl, _orig = rec.unpack(h)
            data = f.read(incl)
            if len(data) < 34 or data[12:14] != b"\x08\x00":
                continue
            ip = data[14:]
            ihl = (ip[0] & 0x0F) * 4
            if ip[9] != 6 or len(ip) < ihl + 20:
                continue
            total = struct.unpack(">H", ip[2:4])[0]
            tcp = ip[ihl:]
            sport, dport = struct.unpack(">HH", tcp[:4])
            doff = (tcp[12] >> 4) * 4
            yield sec + frac * scale, sport, dport, total - ihl - doff


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: wire_hold.py CAPTURE.pcap SERVER_PORT [CONNS]")
    server = int(sys.argv[2])
    # Per connection: when its last answer segment went out since its
    # last request (None: no answer since), and when its last request went.
    answered = {}
    asked = {}
    first = last = None
    hold = 0.0
    holds = 0
    server_side = 0.0
    serves = 0
    seen_conns = set()
    for t, sport, dport, payload in packets(sys.argv[1]):
        first = t if first is None else first
        last = t
        seen_conns.add(dport if sport == server else sport)
        if payload <= 0:
            continue
        if sport == server:
            conn = dport
            answered[conn] = t
            if conn in asked:
                server_side += t - asked.pop(conn)
                serves += 1
        elif dport == server:
            conn = sport
            a = answered.pop(conn, None)
            if a is not None:
                hold += t - a
                holds += 1
            # A request in several segments is timed from its first.
            asked.setdefault(conn, t)
    if first is None or last <= first:
        sys.exit(f"{sys.argv[1]}: no packets to the server's port {server}")
    span = last - first
    seen = len(seen_conns)
    scale = int(sys.argv[3]) / seen if len(sys.argv) == 4 and seen else 1.0
    print(
        f"held={hold / span * scale:.2f} in_flight={server_side / span * scale:.2f} "
        f"hold_us={hold / max(holds, 1) * 1e6:.1f} "
        f"server_us={server_side / max(serves, 1) * 1e6:.1f} "
        f"cycles={holds} connections={seen} seconds={span:.3f}"
    )


main()
