use super::*;

const CFG: Config = Config {
    stream_window: 1 << 20,
    conn_window: 1 << 20,
    checksum: true,
};

fn headers(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut e = loona_hpack::Encoder::new();
    e.encode(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())))
}

fn frame(typ: u8, flags: u8, id: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame_head(&mut out, payload.len() as u32, typ, flags, id);
    out.extend_from_slice(payload);
    out
}

fn server_settings(pairs: &[(u16, u32)]) -> Vec<u8> {
    let mut p = Vec::new();
    for &(k, v) in pairs {
        setting(&mut p, k, v);
    }
    frame(SETTINGS, 0, 0, &p)
}

fn blocks() -> Blocks {
    let spec = crate::spec::LoadSpec::new(vec![crate::spec::Target::new(
        "127.0.0.1:1".parse().unwrap(),
        "127.0.0.1:1".into(),
        "/".into(),
        "http://127.0.0.1:1/".into(),
    )]);
    blocks::H2Requests::new(&spec).targets.remove(0)
}

/// A started connection with `n` streams open (ids 1, 3, ...).
fn conn(n: usize) -> H2 {
    let mut h = H2::new(CFG, 0);
    h.start();
    let b = blocks();
    for _ in 0..n {
        h.open(0, &b);
    }
    let len = h.pending().len();
    h.written(len);
    h
}

/// Every event `input` gives, fed in pieces of `step` bytes.
fn events(h: &mut H2, input: &[u8], step: usize) -> Result<Vec<Event>, Fault> {
    let mut out = Vec::new();
    for chunk in input.chunks(step.max(1)) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let (used, ev) = h.feed(rest)?;
            rest = &rest[used..];
            out.extend(ev);
        }
    }
    Ok(out)
}

fn ok(stream: u32, status: u16, body: &[u8]) -> Event {
    Event::Response {
        stream,
        resp: Response {
            status,
            body_bytes: body.len() as u64,
            wire_bytes: 0,
            checksum: crate::http1::fnv1a64(body),
            keep_alive: true,
        },
    }
}

#[test]
fn the_preface_and_settings_go_first() {
    let h = conn(0);
    let mut h2 = H2::new(CFG, 0);
    h2.start();
    let out = h2.pending();
    assert!(out.starts_with(PREFACE));
    let s = &out[PREFACE.len()..];
    // SETTINGS of two entries: no push, our stream window.
    assert_eq!(&s[..9], &[0, 0, 12, SETTINGS, 0, 0, 0, 0, 0]);
    assert_eq!(&s[9..15], &[0, 2, 0, 0, 0, 0]);
    assert_eq!(&s[15..21], &[0, 4, 0, 0x10, 0, 0]);
    // The connection window opened to 1 MiB.
    assert_eq!(&s[21..30], &[0, 0, 4, WINDOW_UPDATE, 0, 0, 0, 0, 0]);
    assert_eq!(
        u32::from_be_bytes(s[30..34].try_into().unwrap()),
        (1 << 20) - 65_535
    );
    assert!(h.pending().is_empty());
}

#[test]
fn responses_come_out_whole_however_the_bytes_are_split() {
    // HEADERS then CONTINUATION, then padded DATA.
    let mut input = server_settings(&[(SETTINGS_MAX_CONCURRENT_STREAMS, 100)]);
    let b404 = headers(&[(":status", "404"), ("content-length", "0")]);
    input.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &b404));
    let b200 = headers(&[
        (":status", "200"),
        ("content-length", "11"),
        ("server", "x"),
    ]);
    input.extend(frame(HEADERS, 0, 1, &b200[..2]));
    input.extend(frame(CONTINUATION, END_HEADERS, 1, &b200[2..]));
    let mut padded = vec![3u8];
    padded.extend_from_slice(b"hello ");
    padded.extend_from_slice(&[0, 0, 0]);
    input.extend(frame(DATA, PADDED, 1, &padded));
    input.extend(frame(DATA, END_STREAM, 1, b"world"));
    for step in [1, 2, 3, 7, 64, input.len()] {
        let mut h = conn(2);
        let got = events(&mut h, &input, step).unwrap();
        assert_eq!(
            got,
            vec![
                Event::Settings,
                Event::Response {
                    stream: 3,
                    resp: Response {
                        status: 404,
                        body_bytes: 0,
                        wire_bytes: 0,
                        checksum: crate::http1::fnv1a64(b""),
                        keep_alive: true
                    }
                },
                ok(1, 200, b"hello world"),
            ],
            "step {step}"
        );
        assert_eq!(h.peer_max_streams(), 100);
        assert_eq!(h.active(), 0);
        // The SETTINGS were acknowledged.
        assert_eq!(h.pending(), &[0, 0, 0, SETTINGS, ACK, 0, 0, 0, 0]);
    }
}

#[test]
fn an_interim_response_is_skipped() {
    let mut h = conn(1);
    let mut input = server_settings(&[]);
    input.extend(frame(
        HEADERS,
        END_HEADERS,
        1,
        &headers(&[(":status", "103")]),
    ));
    input.extend(frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &headers(&[(":status", "204")]),
    ));
    let got = events(&mut h, &input, 5).unwrap();
    assert_eq!(got[1], ok(1, 204, b""));
}

#[test]
fn the_server_limits_are_honoured() {
    let mut h = conn(0);
    events(
        &mut h,
        &server_settings(&[(SETTINGS_MAX_CONCURRENT_STREAMS, 1)]),
        100,
    )
    .unwrap();
    assert!(h.can_open());
    h.open(0, &blocks());
    assert!(!h.can_open());
    // A GOAWAY: nothing more is opened, and it names the last stream.
    let mut g = 1u32.to_be_bytes().to_vec();
    g.extend(0u32.to_be_bytes());
    let got = events(&mut h, &frame(GOAWAY, 0, 0, &g), 100).unwrap();
    assert_eq!(
        got,
        vec![Event::GoAway {
            last_stream: 1,
            code: 0
        }]
    );
    assert!(h.finished());
}

#[test]
fn a_reset_and_a_malformed_response_fail_one_stream() {
    let mut h = conn(3);
    let mut input = server_settings(&[]);
    input.extend(frame(RST_STREAM, 0, 1, &7u32.to_be_bytes()));
    // A body longer than its content-length.
    input.extend(frame(
        HEADERS,
        END_HEADERS,
        3,
        &headers(&[(":status", "200"), ("content-length", "2")]),
    ));
    input.extend(frame(DATA, END_STREAM, 3, b"abc"));
    // No :status.
    input.extend(frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        5,
        &headers(&[("server", "x")]),
    ));
    let got = events(&mut h, &input, 4).unwrap();
    assert_eq!(
        got[1..],
        [
            Event::Reset { stream: 1, code: 7 },
            Event::Malformed { stream: 3 },
            Event::Malformed { stream: 5 },
        ]
    );
    assert_eq!(h.active(), 0);
    assert_eq!(code_name(7), "refused_stream");
    assert_eq!(code_name(99), "other");
    assert_eq!(code_slot(99), CODES.len());
}

#[test]
fn broken_frames_are_faults_of_their_class() {
    let settings = server_settings(&[]);
    let cases: Vec<(Vec<u8>, Fault)> = vec![
        // Longer than the 16 KiB we allow.
        (frame(DATA, 0, 1, &vec![0; 16_385]), Fault::FrameSize),
        // Not HPACK.
        (
            frame(
                HEADERS,
                END_HEADERS,
                1,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            ),
            Fault::Compression,
        ),
        // A stream never opened.
        (
            frame(HEADERS, END_HEADERS, 7, &headers(&[(":status", "200")])),
            Fault::Protocol,
        ),
        (
            frame(PUSH_PROMISE, END_HEADERS, 1, &[0, 0, 0, 2]),
            Fault::Protocol,
        ),
        (frame(PING, 0, 0, &[0; 7]), Fault::FrameSize),
        (
            frame(WINDOW_UPDATE, 0, 0, &0u32.to_be_bytes()),
            Fault::Protocol,
        ),
        (frame(CONTINUATION, END_HEADERS, 1, &[]), Fault::Protocol),
        (
            server_settings(&[(SETTINGS_MAX_FRAME_SIZE, 100)]),
            Fault::Protocol,
        ),
        (
            server_settings(&[(SETTINGS_INITIAL_WINDOW_SIZE, 1 << 31)]),
            Fault::FlowControl,
        ),
        (
            server_settings(&[(SETTINGS_ENABLE_PUSH, 1)]),
            Fault::Protocol,
        ),
        // DATA before the response's headers.
        (frame(DATA, 0, 1, b"x"), Fault::Protocol),
    ];
    for (k, (bad, fault)) in cases.iter().enumerate() {
        let mut h = conn(2);
        let mut input = settings.clone();
        input.extend(bad);
        for step in [1, 5, input.len()] {
            let mut h2 = conn(2);
            assert_eq!(
                events(&mut h2, &input, step),
                Err(*fault),
                "case {k} step {step}"
            );
        }
        assert_eq!(events(&mut h, &input, 9), Err(*fault), "case {k}");
    }
    // Anything but SETTINGS first.
    let mut h = conn(1);
    assert_eq!(
        events(&mut h, &frame(PING, 0, 0, &[0; 8]), 100),
        Err(Fault::Protocol)
    );
    assert_eq!(Fault::Compression.kind(), ErrorKind::H2Compression);
}

#[test]
fn data_beyond_our_window_is_a_flow_control_error() {
    let cfg = Config {
        stream_window: 65_535,
        conn_window: 65_535,
        checksum: false,
    };
    let mut h = H2::new(cfg, 0);
    h.start();
    h.open(0, &blocks());
    let mut input = server_settings(&[]);
    input.extend(frame(
        HEADERS,
        END_HEADERS,
        1,
        &headers(&[(":status", "200")]),
    ));
    for _ in 0..4 {
        input.extend(frame(DATA, 0, 1, &[b'x'; 16_384]));
    }
    input.extend(frame(DATA, END_STREAM, 1, &[b'x'; 16_384]));
    assert_eq!(events(&mut h, &input, 1000), Err(Fault::FlowControl));
}

#[test]
fn windows_are_given_back_and_pings_answered() {
    let mut h = conn(1);
    let mut input = server_settings(&[]);
    input.extend(frame(PING, 0, 0, b"12345678"));
    input.extend(frame(
        HEADERS,
        END_HEADERS,
        1,
        &headers(&[(":status", "200")]),
    ));
    // 600 KiB: more than half of each 1 MiB window.
    for _ in 0..37 {
        input.extend(frame(DATA, 0, 1, &[b'y'; 16_384]));
    }
    input.extend(frame(DATA, END_STREAM, 1, b"z"));
    // One read of it all: one update for the connection; the stream has
    // ended and needs none.
    let got = events(&mut h, &input, 4096).unwrap();
    h.replenish();
    assert_eq!(got.len(), 2);
    let out = h.pending().to_vec();
    let mut frames = Vec::new();
    let mut p = &out[..];
    while p.len() >= 9 {
        let len = u32::from_be_bytes([0, p[0], p[1], p[2]]) as usize;
        frames.push((p[3], p[4], u32::from_be_bytes(p[5..9].try_into().unwrap())));
        p = &p[9 + len..];
    }
    assert_eq!(
        frames,
        vec![(SETTINGS, ACK, 0), (PING, ACK, 0), (WINDOW_UPDATE, 0, 0),]
    );
    assert!(out.windows(8).any(|w| w == b"12345678"));
}

/// A started connection with one POST of 70,000 bytes open on stream 1,
/// as much of its body queued as the default window lets out.
fn upload() -> (blocks::H2Requests, H2) {
    let mut spec = crate::spec::LoadSpec::new(vec![crate::spec::Target::new(
        "127.0.0.1:1".parse().unwrap(),
        "127.0.0.1:1".into(),
        "/up".into(),
        "http://127.0.0.1:1/up".into(),
    )]);
    spec.method = "POST".into();
    spec.body = Some(vec![b'b'; 70_000]);
    let r = blocks::H2Requests::new(&spec);
    let mut h = H2::new(CFG, r.targets[0].body.len());
    h.start();
    let n = h.pending().len();
    h.written(n);
    h.open(0, &r.targets[0]);
    h.pump(|_| &r.targets[0].body);
    (r, h)
}

#[test]
fn request_bodies_wait_for_the_servers_window() {
    let (r, mut h) = upload();
    let data = |out: &[u8]| {
        let mut sent = 0;
        let mut p = out;
        while p.len() >= 9 {
            let len = u32::from_be_bytes([0, p[0], p[1], p[2]]) as usize;
            if p[3] == DATA {
                sent += len;
            }
            p = &p[9 + len..];
        }
        sent
    };
    // The default window: 65,535 bytes, no more.
    assert_eq!(data(h.pending()), 65_535);
    let n = h.pending().len();
    h.written(n);
    let mut input = server_settings(&[]);
    input.extend(frame(WINDOW_UPDATE, 0, 0, &10_000u32.to_be_bytes()));
    input.extend(frame(WINDOW_UPDATE, 0, 1, &10_000u32.to_be_bytes()));
    events(&mut h, &input, 100).unwrap();
    h.pump(|_| &r.targets[0].body);
    assert_eq!(data(h.pending()), 70_000 - 65_535);
}

#[test]
fn a_small_table_turns_indexing_off() {
    let mut h = conn(1);
    h.table_bytes = 100;
    events(
        &mut h,
        &server_settings(&[(SETTINGS_HEADER_TABLE_SIZE, 0)]),
        100,
    )
    .unwrap();
    let n = h.pending().len();
    h.written(n);
    let b = blocks();
    h.open(0, &b);
    let out = h.pending();
    // A size update to 0, then the plain block.
    assert_eq!(out[9], 0x20);
    assert_eq!(&out[10..], &b.plain[..]);
}

#[test]
fn a_ping_flood_the_server_does_not_read_fails_the_connection_at_a_bound() {
    let ping = frame(PING, 0, 0, &[7; 8]);
    // The server's SETTINGS come first, and their acknowledgement with
    // the first flood.
    let settled = || {
        let mut h = conn(0);
        events(&mut h, &server_settings(&[]), 64).unwrap();
        let n = h.pending().len();
        h.written(n);
        h
    };
    // Acknowledgements written as they come: any number is answered.
    let mut h = settled();
    for _ in 0..4 {
        let flood = ping.repeat(MAX_ACKS_UNWRITTEN as usize);
        events(&mut h, &flood, 65536).unwrap();
        assert_eq!(h.pending().len(), 17 * MAX_ACKS_UNWRITTEN as usize);
        let n = h.pending().len();
        h.written(n);
    }
    // Never written: the memory they held grew without end (3 GB in 5 s).
    let mut h = settled();
    let flood = ping.repeat(MAX_ACKS_UNWRITTEN as usize + 1);
    assert_eq!(events(&mut h, &flood, 65536).err(), Some(Fault::Protocol));
    // SETTINGS take the same path.
    let mut h = settled();
    let flood = server_settings(&[]).repeat(MAX_ACKS_UNWRITTEN as usize + 1);
    assert_eq!(events(&mut h, &flood, 65536).err(), Some(Fault::Protocol));
}

#[test]
fn a_response_before_the_whole_body_closes_our_half_with_a_reset() {
    let (_, mut h) = upload();
    let n = h.pending().len();
    h.written(n);
    // 65,535 bytes sent, the window spent; the server answers in full.
    let mut input = server_settings(&[]);
    input.extend(frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &headers(&[(":status", "413")]),
    ));
    let ev = events(&mut h, &input, 100).unwrap();
    assert!(matches!(ev.last(), Some(Event::Response { stream: 1, .. })));
    // After the SETTINGS acknowledgement: RST_STREAM(NO_ERROR) on stream 1.
    // Without it the stream stayed open on the server's side, counted
    // against its limit, and later streams were refused.
    let out = h.pending();
    assert_eq!(&out[9..], &frame(RST_STREAM, 0, 1, &0u32.to_be_bytes())[..]);
    // A request whose body was all sent ends with its END_STREAM: no reset.
    let mut h = conn(1);
    events(&mut h, &server_settings(&[]), 100).unwrap();
    let n = h.pending().len();
    h.written(n);
    let answer = frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &headers(&[(":status", "200")]),
    );
    events(&mut h, &answer, 100).unwrap();
    assert!(h.pending().is_empty());
}

#[test]
fn fields_a_response_may_not_carry_make_it_malformed() {
    // RFC 9113 §8.2.1, §8.2.2, §8.3, §8.6: each used to be a response.
    let blocks: [&[(&str, &str)]; 6] = [
        &[(":status", "200"), ("Content-Type", "text/plain")],
        &[(":status", "200"), ("connection", "keep-alive")],
        &[(":status", "200"), ("transfer-encoding", "chunked")],
        &[("server", "x"), (":status", "200")],
        &[(":status", "200"), (":path", "/")],
        &[(":status", "200"), (":status", "200")],
    ];
    for fields in blocks {
        let mut h = conn(1);
        let mut input = server_settings(&[]);
        input.extend(frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            1,
            &headers(fields),
        ));
        let got = events(&mut h, &input, 100).unwrap();
        assert_eq!(got[1..], [Event::Malformed { stream: 1 }], "{fields:?}");
    }
    // A pseudo-field in trailers.
    let mut h = conn(1);
    let mut input = server_settings(&[]);
    input.extend(frame(
        HEADERS,
        END_HEADERS,
        1,
        &headers(&[(":status", "200")]),
    ));
    input.extend(frame(DATA, 0, 1, b"ok"));
    input.extend(frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &headers(&[(":path", "/")]),
    ));
    let got = events(&mut h, &input, 100).unwrap();
    assert_eq!(got[1..], [Event::Malformed { stream: 1 }]);
    // HTTP/2 has no 101: it is not an interim response.
    let mut h = conn(1);
    let mut input = server_settings(&[]);
    input.extend(frame(
        HEADERS,
        END_HEADERS,
        1,
        &headers(&[(":status", "101")]),
    ));
    input.extend(frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &headers(&[(":status", "200")]),
    ));
    let got = events(&mut h, &input, 100).unwrap();
    assert_eq!(got[1], Event::Malformed { stream: 1 });
    // Plain trailers and a 103 first are still fine.
    let mut h = conn(1);
    let mut input = server_settings(&[]);
    input.extend(frame(
        HEADERS,
        END_HEADERS,
        1,
        &headers(&[(":status", "103")]),
    ));
    input.extend(frame(
        HEADERS,
        END_HEADERS,
        1,
        &headers(&[(":status", "200")]),
    ));
    input.extend(frame(DATA, 0, 1, b"ok"));
    input.extend(frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &headers(&[("x-t", "1")]),
    ));
    let got = events(&mut h, &input, 100).unwrap();
    assert!(
        matches!(got[1], Event::Response { stream: 1, .. }),
        "{got:?}"
    );
}
