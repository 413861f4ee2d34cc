//! A study over TLS: `protocols = ["http1", "https1"]` runs nginx twice,
//! as `nginx` and `nginx-https1`, the second with the run's certificate;
//! each round completes its exact count, the TLS rounds say what they
//! negotiated, and the feature table's TLS column has a real handshake as
//! evidence.

mod support;

use std::time::Duration;

#[test]
fn a_study_runs_each_server_over_cleartext_and_tls() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("study.toml");
    std::fs::write(
        &study,
        "name = 'tls'\nservers = ['nginx', 'varnish']\nworkloads = ['tiny']\ncores = [1]\n\
         concurrency = [4]\nprotocols = ['http1', 'https1']\nwarmup_seconds = 0.2\n\
         [load]\nrequests = 400\n\
         [rounds]\nseconds = 0.5\nwarmup_seconds = 0.0\nmin = 2\nmax = 2\n",
    )
    .unwrap();
    let j = support::lab_report(&study, &dir.path().join("t.db"), Duration::from_secs(240));
    let steps = j["run"]["steps"].as_array().unwrap();
    let step = |name: &str| {
        steps
            .iter()
            .find(|s| s["server"] == name)
            .unwrap_or_else(|| panic!("no step for {name}"))
    };
    for name in ["nginx", "nginx-https1"] {
        let s = step(name);
        assert_eq!(s["status"], "ok", "{s}");
        for r in s["rounds"].as_array().unwrap() {
            let sum = &r["summary"];
            // 400 requests a level, split into 8 rounds so that pairs form.
            assert_eq!(sum["completed"], 50, "{name}: {sum}");
            assert_eq!(sum["errors_total"], 0, "{name}: {sum}");
            if name == "nginx" {
                assert!(sum.get("tls").is_none(), "{sum}");
            } else {
                let t = &sum["tls"];
                assert_eq!(t["version"], "TLSv1_3", "{t}");
                assert_eq!(t["alpn"], "http/1.1", "{t}");
                // A counted round with no warmup opens its own 4
                // connections, each one full handshake.
                assert_eq!(t["handshakes"], 4, "{t}");
            }
        }
    }
    // Varnish serves no TLS in its recipe: stored as unsupported, saying so.
    let v = step("varnish-https1");
    assert_eq!(v["status"], "unsupported", "{v}");
    assert!(
        v["failure"]
            .as_str()
            .unwrap_or("")
            .contains("serves no TLS"),
        "{v}"
    );
    // The feature table's TLS column: a real handshake on the TLS server,
    // a pointer to `protocols` on the cleartext one, and a plain no for a
    // recipe with no TLS.
    let tls_feature = |server: &str| support::feature(&j, server, "tls");
    let (status, evidence) = tls_feature("nginx-https1");
    assert_eq!(status, "yes");
    assert!(
        evidence.starts_with("handshake: TLSv1_3 TLS13_"),
        "{evidence}"
    );
    // nginx keeps its default session tickets: a second handshake resumes.
    assert!(
        evidence.contains(
            "ALPN http/1.1; a second handshake resumed the session; OCSP stapling untested"
        ),
        "{evidence}"
    );
    let (status, evidence) = tls_feature("nginx");
    assert_eq!(status, "untested");
    assert!(evidence.contains("https1"), "{evidence}");
    assert_eq!(tls_feature("varnish").0, "no");
}

#[test]
fn an_rsa_certificate_is_served_when_the_study_asks() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("study.toml");
    std::fs::write(
        &study,
        "name = 'rsa'\nservers = ['nginx']\nworkloads = ['tiny']\ncores = [1]\n\
         concurrency = [2]\nprotocols = ['https1']\ncertificate = 'rsa2048'\nfeatures = false\n\
         warmup_seconds = 0.2\n[load]\nrequests = 100\n\
         [rounds]\nseconds = 0.5\nwarmup_seconds = 0.0\nmin = 1\nmax = 1\n",
    )
    .unwrap();
    let j = support::lab_report(&study, &dir.path().join("t.db"), Duration::from_secs(120));
    let step = &j["run"]["steps"][0];
    assert_eq!(step["server"], "nginx");
    let sum = &step["rounds"][0]["summary"];
    assert_eq!(sum["completed"], 100, "{sum}");
    assert_eq!(sum["tls"]["handshakes"], 2, "{sum}");
    // The certificate the server was given, beside its config.
    let toml = j["run"]["run"]["study_toml"].as_str().unwrap_or_default();
    assert!(toml.contains("rsa2048"), "{toml}");
}
