//! The profile's split of a request's CPU against servers whose split is
//! known: one that spins in its own code for 180-220 µs per request, one
//! that opens and closes a file 5-15 times per request.
//! Each measures its own thread's CPU over that work; the sampled
//! component must agree within 10%.

use std::ffi::CString;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use throng_model::Diagnosis;
use throng_report::components::{self, Component};

const SERVER_CPU: usize = 0;
const CLIENT_CPU: usize = 1;
const REQUESTS: u64 = 1500;

fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET stays in bounds.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
}

/// This thread's CPU time, user and system.
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// A different number each call, the same sequence each run: work of a
/// fixed length per request would run in step with the sampler's period
/// and be sampled at the same phase every time.
fn jitter(state: &mut u64, spread: u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state % spread
}

/// Serves `REQUESTS` one-byte requests on one connection, doing `work` for
/// each, and returns the CPU the work took in all.
fn serve(listener: TcpListener, work: impl Fn(u64)) -> Duration {
    pin(SERVER_CPU);
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_nodelay(true).unwrap();
    let mut spent = Duration::ZERO;
    let mut b = [0u8; 1];
    let mut state = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..REQUESTS {
        conn.read_exact(&mut b).unwrap();
        let t0 = thread_cpu();
        work(jitter(&mut state, 1000));
        spent += thread_cpu() - t0;
        conn.write_all(b"k").unwrap();
    }
    spent
}

/// Profiles a server doing `work` per request; returns the component's
/// microseconds per request by the profile and by the server's own clock.
fn measured(work: impl Fn(u64) + Send + 'static, component: Component) -> (f64, f64, String) {
    let perf = throng_lab::profile::on_path("perf").expect("perf is installed by scripts/setup");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let me = std::process::id() as i32;
    let mut sampler =
        throng_lab::profile::Sampler::start_on(Some(&perf), &[me], &[SERVER_CPU]).unwrap();
    let server = std::thread::spawn(move || serve(listener, work));
    let client = std::thread::spawn(move || {
        pin(CLIENT_CPU);
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_nodelay(true).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut b = [0u8; 1];
        for _ in 0..REQUESTS {
            c.write_all(b"g").unwrap();
            c.read_exact(&mut b).unwrap();
        }
    });
    client.join().unwrap();
    let spent = server.join().unwrap();
    sampler.stop().unwrap();
    let profile = sampler.finish().unwrap();
    assert!(profile.samples > 0, "{profile:?}");
    let d = Diagnosis {
        requests: REQUESTS,
        profile: Some(profile),
        ..Diagnosis::default()
    };
    let split = components::split(&d).unwrap();
    let truth = spent.as_secs_f64() * 1e6 / REQUESTS as f64;
    (split.of(component), truth, format!("{split:?}"))
}

fn within_10_percent(what: &str, (profiled, truth, split): (f64, f64, String)) {
    let off = (profiled - truth).abs() / truth;
    println!("{what}: {profiled:.2} µs per request profiled, {truth:.2} µs measured");
    assert!(
        off <= 0.10,
        "{what}: profiled {profiled:.2} µs per request, the server measured {truth:.2} µs; {split}"
    );
}

#[test]
fn each_component_matches_a_server_whose_split_is_known() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        println!("skipped: needs two CPUs, one for the server and one for its client");
        return;
    }
    if throng_lab::profile::on_path("perf").is_none() {
        println!("skipped: no perf on PATH");
        return;
    }
    // 180 to 220 µs of its own code per request.
    let spin = |r: u64| {
        let until = Instant::now() + Duration::from_nanos(180_000 + 40 * r);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    };
    within_10_percent("server code", measured(spin, Component::Server));

    // 5 to 15 opens and closes of a file per request, straight through
    // glibc so little but the calls runs (a stat would copy its answer out,
    // which the split counts as a copy).
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    let path = CString::new(file.to_str().unwrap()).unwrap();
    let files = move |r: u64| {
        for _ in 0..5 + r / 100 {
            // SAFETY: a NUL-terminated path; the descriptor is closed here.
            unsafe { libc::close(libc::open(path.as_ptr(), libc::O_RDONLY)) };
        }
    };
    within_10_percent("files", measured(files, Component::Files));
}
