//! Request header blocks (HPACK, RFC 7541), encoded once per target before
//! the load, as HTTP/1.1 requests are serialised once (`request.rs`).
//!
//! What is the same in every request of a load (the authority when all
//! targets share it, the user agent, the user's headers) goes into the
//! server's dynamic table with the first request of a connection; every
//! later request names those fields by index, one or two bytes each, as a
//! browser's or h2load's encoder does once its table is warm. The entries
//! are inserted in one fixed order whatever the first target is, so their
//! indices are known in advance and a warm block is a ready slice too.
//! When the table cannot hold them (the server asked for a small one), a
//! block with every field literal and nothing indexed is sent instead.

use crate::spec::{LoadSpec, Target};

/// Fields of the static table (RFC 7541 Appendix A) the blocks use.
const AUTHORITY: usize = 1;
const METHOD_GET: usize = 2;
const METHOD_POST: usize = 3;
const PATH_ROOT: usize = 4;
const PATH_INDEX: usize = 5;
const SCHEME_HTTP: usize = 6;
const SCHEME_HTTPS: usize = 7;
const CONTENT_LENGTH: usize = 28;
const USER_AGENT: usize = 58;
/// The first index of the dynamic table.
const DYNAMIC: usize = 62;
/// RFC 7541 §4.1: each entry costs its name and value plus 32 octets.
const ENTRY_OVERHEAD: usize = 32;
/// The table size a peer allows until its SETTINGS say otherwise.
pub const DEFAULT_TABLE: usize = 4096;

/// One target's request as HTTP/2 sends it.
#[derive(Debug, Clone)]
pub struct Blocks {
    /// A connection's first request: the shared fields with incremental
    /// indexing, so they enter the table.
    pub cold: Vec<u8>,
    /// Every later request: the shared fields by index.
    pub warm: Vec<u8>,
    /// Nothing indexed, for a connection whose peer's table is too small.
    pub plain: Vec<u8>,
    pub body: Vec<u8>,
    /// A HEAD request: the response has a length but no body.
    pub head: bool,
}

/// Every target's blocks, and the table size the shared fields need.
#[derive(Debug, Clone)]
pub struct H2Requests {
    pub targets: Vec<Blocks>,
    pub table_bytes: usize,
}

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2): they describe one HTTP/1.1
/// connection, and a server must treat a request carrying them as malformed.
fn connection_specific(name: &str) -> bool {
    [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
        "host",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

impl H2Requests {
    pub fn new(spec: &LoadSpec) -> H2Requests {
        let authority_of = |t: &Target| {
            spec.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("host"))
                .map_or(t.host_header.clone(), |(_, v)| v.clone())
        };
        let first = spec.targets.first().map(authority_of).unwrap_or_default();
        let one_authority = spec.targets.iter().all(|t| authority_of(t) == first);
        // The shared fields in insertion order: name as a static index
        // or literal, then value.
        let mut shared: Vec<(Name, String)> = Vec::new();
        if one_authority {
            shared.push((Name::Static(AUTHORITY), first.clone()));
        }
        if !spec
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("user-agent"))
        {
            shared.push((
                Name::Static(USER_AGENT),
                concat!("throng/", env!("CARGO_PKG_VERSION")).to_string(),
            ));
        }
        for (n, v) in &spec.headers {
            if connection_specific(n) || n.eq_ignore_ascii_case("content-length") {
                continue;
            }
            shared.push((Name::Literal(n.to_ascii_lowercase()), v.clone()));
        }
        let table_bytes = shared
            .iter()
            .map(|(n, v)| n.len() + v.len() + ENTRY_OVERHEAD)
            .sum();
        let targets = spec
            .targets
            .iter()
            .map(|t| {
                let method = t.method.as_deref().unwrap_or(&spec.method);
                let body = t.body.as_ref().or(spec.body.as_ref()).cloned();
                let mut own = Vec::new();
                pseudo(&mut own, method, t);
                if !one_authority {
                    literal(&mut own, &Name::Static(AUTHORITY), &authority_of(t), false);
                }
                let body = body.unwrap_or_default();
                if !body.is_empty() {
                    literal(
                        &mut own,
                        &Name::Static(CONTENT_LENGTH),
                        &body.len().to_string(),
                        false,
                    );
                }
                let mut cold = own.clone();
                let mut warm = own.clone();
                let mut plain = own;
                for (k, (n, v)) in shared.iter().enumerate() {
                    literal(&mut cold, n, v, true);
                    literal(&mut plain, n, v, false);
                    // The newest entry has the lowest index.
                    int(&mut warm, DYNAMIC + shared.len() - 1 - k, 7, 0x80);
                }
                Blocks {
                    cold,
                    warm,
                    plain,
                    body,
                    head: method.eq_ignore_ascii_case("HEAD"),
                }
            })
            .collect();
        H2Requests {
            targets,
            table_bytes,
        }
    }
}

enum Name {
    Static(usize),
    Literal(String),
}

impl Name {
    fn len(&self) -> usize {
        match self {
            // Only the fields above are used by index.
            Name::Static(AUTHORITY) => ":authority".len(),
            Name::Static(USER_AGENT) => "user-agent".len(),
            Name::Static(CONTENT_LENGTH) => "content-length".len(),
            Name::Static(_) => ":path".len(),
            Name::Literal(s) => s.len(),
        }
    }
}

fn pseudo(out: &mut Vec<u8>, method: &str, t: &Target) {
    match method {
        "GET" => int(out, METHOD_GET, 7, 0x80),
        "POST" => int(out, METHOD_POST, 7, 0x80),
        m => literal(out, &Name::Static(METHOD_GET), m, false),
    }
    let scheme = if t.is_tls() {
        SCHEME_HTTPS
    } else {
        SCHEME_HTTP
    };
    int(out, scheme, 7, 0x80);
    match t.path.as_str() {
        "/" => int(out, PATH_ROOT, 7, 0x80),
        "/index.html" => int(out, PATH_INDEX, 7, 0x80),
        p => literal(out, &Name::Static(PATH_ROOT), p, false),
    }
}

/// A literal field (RFC 7541 §6.2): with incremental indexing, or without
/// indexing; strings raw, not Huffman-coded, which costs a few bytes per
/// request on the wire and nothing on the server.
fn literal(out: &mut Vec<u8>, name: &Name, value: &str, index: bool) {
    let (prefix, bits) = if index { (6, 0x40) } else { (4, 0x00) };
    match name {
        Name::Static(i) => int(out, *i, prefix, bits),
        Name::Literal(n) => {
            out.push(bits);
            string(out, n.as_bytes());
        }
    }
    string(out, value.as_bytes());
}

fn string(out: &mut Vec<u8>, s: &[u8]) {
    int(out, s.len(), 7, 0x00);
    out.extend_from_slice(s);
}

fn int(out: &mut Vec<u8>, v: usize, prefix: u8, bits: u8) {
    super::hpack::encode_int(out, v, prefix, bits);
}

/// A dynamic table size update to 0 (RFC 7541 §6.3: `001` and a 5-bit
/// integer), sent at the start of a block once the peer allows a smaller
/// table than the shared fields need: no later block indexes anything.
pub(crate) const SIZE_UPDATE_TO_ZERO: u8 = 0x20;

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(blocks: &[&[u8]]) -> Vec<Vec<(String, String)>> {
        let mut d = loona_hpack::Decoder::new();
        blocks
            .iter()
            .map(|b| {
                d.decode(b)
                    .unwrap()
                    .into_iter()
                    .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
                    .collect()
            })
            .collect()
    }

    fn target(url: &str, path: &str) -> Target {
        Target::new(
            "127.0.0.1:8443".parse().unwrap(),
            "127.0.0.1:8443".into(),
            path.into(),
            url.into(),
        )
    }

    #[test]
    fn a_warm_block_decodes_to_the_cold_one() {
        let mut spec = LoadSpec::new(vec![
            target("https://127.0.0.1:8443/", "/"),
            target("https://127.0.0.1:8443/a?b", "/a?b"),
        ]);
        spec.headers = vec![
            ("X-Test".into(), "1".into()),
            ("Connection".into(), "close".into()),
        ];
        let r = H2Requests::new(&spec);
        let (a, b) = (&r.targets[0], &r.targets[1]);
        let ua = concat!("throng/", env!("CARGO_PKG_VERSION"));
        let want = |path: &str| {
            vec![
                (":method".to_string(), "GET".to_string()),
                (":scheme".into(), "https".into()),
                (":path".into(), path.into()),
                (":authority".into(), "127.0.0.1:8443".into()),
                ("user-agent".into(), ua.into()),
                ("x-test".into(), "1".into()),
            ]
        };
        // Whichever target goes first, the warm blocks that follow name
        // the same entries.
        for (first, rest) in [(a, b), (b, a)] {
            let got = decode_all(&[&first.cold, &rest.warm, &first.warm]);
            let path = |x: &Blocks| if std::ptr::eq(x, a) { "/" } else { "/a?b" };
            assert_eq!(got[0], want(path(first)));
            assert_eq!(got[1], want(path(rest)));
            assert_eq!(got[2], want(path(first)));
        }
        assert_eq!(decode_all(&[&a.plain])[0], want("/"));
        // Three indexed fields, then three single-byte references.
        assert_eq!(a.warm, [0x82, 0x87, 0x84, 0x80 | 64, 0x80 | 63, 0x80 | 62]);
        assert_eq!(
            r.table_bytes,
            ":authority".len() + 14 + "user-agent".len() + ua.len() + 6 + 1 + 3 * 32
        );
    }

    #[test]
    fn bodies_methods_and_authorities_per_target() {
        let mut t1 = target("http://a.example:80/x", "/x");
        t1.host_header = "a.example".into();
        t1.method = Some("PUT".into());
        t1.body = Some(b"hello".to_vec());
        let mut t2 = target("http://b.example/", "/");
        t2.host_header = "b.example".into();
        let mut spec = LoadSpec::new(vec![t1, t2]);
        spec.method = "HEAD".into();
        let r = H2Requests::new(&spec);
        let got = decode_all(&[&r.targets[0].cold, &r.targets[1].warm]);
        assert_eq!(
            got[0][..5],
            [
                (":method".to_string(), "PUT".to_string()),
                (":scheme".into(), "http".into()),
                (":path".into(), "/x".into()),
                (":authority".into(), "a.example".into()),
                ("content-length".into(), "5".into()),
            ]
        );
        assert_eq!(got[1][3], (":authority".into(), "b.example".into()));
        assert_eq!(r.targets[0].body, b"hello");
        assert!(!r.targets[0].head && r.targets[1].head);
    }

    #[test]
    fn a_size_update_shrinks_the_table() {
        let mut out = Vec::new();
        int(&mut out, 0, 5, 0x20);
        assert_eq!(out, [SIZE_UPDATE_TO_ZERO]);
        let mut d = loona_hpack::Decoder::new();
        out.push(0x82);
        assert_eq!(d.decode(&out).unwrap().len(), 1);
    }
}
