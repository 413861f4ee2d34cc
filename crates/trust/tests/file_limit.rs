//! More connections than the open-file limit allows: the doctor says so
//! before the run, and the engine refuses with the same numbers. Alone in
//! its file because lowering the hard limit cannot be undone by the process.

use nix::sys::resource::{getrlimit, setrlimit, Resource};
use throng_engine::{run, Control, EngineError, LoadSpec, Target};
use throng_model::Severity;
use throng_trust::doctor::{check, Plan};

#[test]
fn connections_above_the_open_file_limit() {
    setrlimit(Resource::RLIMIT_NOFILE, 128, 128).unwrap();
    assert_eq!(getrlimit(Resource::RLIMIT_NOFILE).unwrap(), (128, 128));

    let plan = Plan {
        connections: 1000,
        ..Plan::default()
    };
    let f = check(&plan);
    let nofile = f.iter().find(|x| x.check == "limits.nofile").unwrap();
    assert_eq!(nofile.severity, Severity::Fail);
    assert_eq!(
        nofile.message,
        "open-file limit soft 128 / hard 128 is below the 1064 needed for 1000 connections \
         plus 64 other files"
    );

    // Nothing listens there: the limit is checked before any connect.
    let addr = "127.0.0.1:9".parse().unwrap();
    let mut spec = LoadSpec::new(vec![Target::http(addr, "/")]);
    spec.connections = 1000;
    match run(&spec, &Control::new()) {
        Err(EngineError::FileLimit {
            connections,
            needed,
            soft,
            hard,
        }) => assert_eq!((connections, needed, soft, hard), (1000, 1064, 128, 128)),
        other => panic!("expected the file-limit error, got {other:?}"),
    }
}
