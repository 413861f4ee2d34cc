//! Where a request's microseconds go: a server's sampled stacks, each
//! given to one of a few components by its frames' names, read from the
//! innermost frame out (a copy inside the network stack is a copy; a
//! kernel frame no rule names leaves the stack to the frames around it),
//! and the samples turned into CPU per request.
//!
//! The rules are names the Linux kernel, glibc and the TLS libraries use;
//! a stack whose kernel frames none of them names is `Other`, and user
//! code that is neither a copy, TLS nor a wait is the server's own. One
//! kind of stack names no call though it is inside one: glibc's
//! cancellation helpers, which a threaded server's every open, close, read
//! or send calls and whose caller frame-pointer unwinding loses; their
//! samples are shared out by the calls the same round counted.

use std::collections::BTreeMap;

use throng_model::{Diagnosis, StackProfile};

/// The fixed set a request's CPU is split into, in the order a table
/// lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Component {
    /// The network stack, sending and receiving, and waiting on sockets.
    Network,
    /// Opening, stat-ing, reading and closing files; the page cache.
    Files,
    /// Bytes copied, to or from the kernel or within a process.
    Copies,
    /// The server's own code (and its libraries') in user space.
    Server,
    Tls,
    /// Switching tasks, waking them, and waiting on futexes and timers.
    Scheduler,
    /// Kernel work no rule names: entries, interrupts, memory management.
    Other,
}

impl Component {
    pub const ALL: [Component; 7] = [
        Component::Network,
        Component::Files,
        Component::Copies,
        Component::Server,
        Component::Tls,
        Component::Scheduler,
        Component::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Component::Network => "network",
            Component::Files => "files and page cache",
            Component::Copies => "memory copies",
            Component::Server => "server code",
            Component::Tls => "TLS",
            Component::Scheduler => "scheduler and wake-ups",
            Component::Other => "other kernel",
        }
    }

    /// Its colour wherever the report draws components: an index into
    /// the charts' palette, grey for what no rule names.
    pub fn color(self) -> usize {
        match self {
            Component::Network => 0,
            Component::Files => 1,
            Component::Copies => 2,
            Component::Server => 3,
            Component::Tls => 4,
            Component::Scheduler => 5,
            Component::Other => 7,
        }
    }
}

/// Kernel frames by name prefix. Copies and scheduling come first: they
/// are read before the path they sit in only because a stack is read from
/// its innermost frame.
const KERNEL: &[(Component, &[&str])] = &[
    // The syscall counting's own tracepoints, run inside every syscall of
    // the same round: not the call's cost.
    (Component::Other, &["perf_", "__perf"]),
    (
        Component::Copies,
        &[
            "copy_user",
            "_copy_to_user",
            "_copy_from_user",
            "copy_to_user",
            "copy_from_user",
            "__copy_",
            "memcpy",
            "__memcpy",
            "memmove",
            "__memmove",
            "rep_movs",
            "copy_page",
            "skb_copy_datagram",
            "csum_partial_copy",
            "copy_to_iter",
            "copy_from_iter",
            "_copy_to_iter",
            "_copy_from_iter",
            "copyout",
            "copyin",
        ],
    ),
    (
        Component::Tls,
        &["tls_", "aesni_", "gcm_", "crypto_", "chacha", "poly1305"],
    ),
    (
        Component::Scheduler,
        &[
            "schedule",
            "__schedule",
            "try_to_wake_up",
            "ttwu_",
            "finish_task_switch",
            "pick_next_task",
            "__wake_up",
            "wake_up_",
            "enqueue_task",
            "dequeue_task",
            "futex_",
            "do_futex",
            "__x64_sys_futex",
            "sched_",
            "update_curr",
            "psi_",
            "hrtimer_wakeup",
            "do_nanosleep",
            "__switch_to",
            "context_switch",
            "ep_poll_callback",
            "__x64_sys_sched_yield",
            "select_task_rq",
            "check_preempt",
            "resched_",
        ],
    ),
    (
        Component::Files,
        &[
            "do_sys_open",
            "do_filp_open",
            "path_openat",
            "link_path_walk",
            "walk_component",
            "lookup_",
            "__lookup",
            "d_alloc",
            "dput",
            "__fput",
            "fput",
            "filp_close",
            "close_fd",
            "__close_fd",
            "vfs_",
            "filemap_",
            "generic_file_",
            "ext4_",
            "xfs_",
            "btrfs_",
            "ovl_",
            "shmem_",
            "page_cache_",
            "do_statx",
            "cp_new_stat",
            "cp_statx",
            "__x64_sys_newfstat",
            "__x64_sys_openat",
            "__x64_sys_open",
            "__x64_sys_close",
            "__x64_sys_statx",
            "__x64_sys_newstat",
            "__x64_sys_newlstat",
            "__do_sys_newfstat",
            "__do_sys_statx",
            "__do_sys_newstat",
            "do_dentry_open",
            "may_open",
            "inode_permission",
            "generic_permission",
            "alloc_empty_file",
            "fd_install",
            "get_unused_fd",
            "alloc_fd",
            "complete_walk",
            "step_into",
            "path_lookupat",
            "filename_lookup",
            "getname",
            "putname",
            "mntput",
            "path_put",
            "terminate_walk",
            "do_open",
            "do_sendfile",
            "splice_",
            "do_splice",
            "__x64_sys_pread",
            "ksys_pread",
            "iterate_dir",
        ],
    ),
    (
        Component::Network,
        &[
            "tcp_",
            "__tcp",
            "inet_",
            "__inet",
            "sock_",
            "__sock",
            "sk_",
            "__sk",
            "skb_",
            "__skb",
            "kfree_skb",
            "consume_skb",
            "ip_",
            "__ip",
            "ipv4_",
            "ip6_",
            "dev_",
            "__dev",
            "netif_",
            "__netif",
            "net_rx",
            "__napi",
            "napi_",
            "loopback_",
            "process_backlog",
            "__sys_",
            "__x64_sys_sendto",
            "__x64_sys_recvfrom",
            "__x64_sys_accept",
            "__x64_sys_sendmsg",
            "__x64_sys_recvmsg",
            "__x64_sys_shutdown",
            "__x64_sys_setsockopt",
            "__x64_sys_getsockopt",
            "__x64_sys_epoll",
            "ep_",
            "do_epoll",
            "unix_",
            "udp_",
            "nf_",
            "nft_",
            "ipt_",
            "lock_sock",
            "release_sock",
            "__release_sock",
            "security_socket",
            "do_sys_poll",
            "__x64_sys_poll",
            "__x64_sys_ppoll",
            "sockfd_",
            "__x64_sys_socket",
            "__x64_sys_connect",
            "move_addr_to",
        ],
    ),
];

/// User frames by name: what a server's own code calls.
fn user(frame: &str) -> Option<Component> {
    let f = frame;
    if f.contains("memcpy") || f.contains("memmove") {
        return Some(Component::Copies);
    }
    const TLS: &[&str] = &[
        "SSL_",
        "ssl3_",
        "ssl_",
        "tls1_",
        "tls13_",
        "tls_",
        "EVP_",
        "evp_",
        "aesni_",
        "aes_",
        "gcm_",
        "ChaCha20",
        "chacha20_",
        "Poly1305",
        "poly1305_",
        "ossl_",
        "bn_",
        "BN_",
        "ec_",
        "EC_",
        "x25519",
        "sha256_block",
        "sha512_block",
        "gnutls_",
        "mbedtls_",
    ];
    if TLS.iter().any(|p| f.starts_with(p))
        || ["rustls::", "aws_lc", "ring::", "aes_gcm", "aes_hw"]
            .iter()
            .any(|p| f.contains(p))
    {
        return Some(Component::Tls);
    }
    let call = wrapped_call(f);
    const WAITS: &[&str] = &[
        "futex",
        "sched_yield",
        "nanosleep",
        "clock_nanosleep",
        "usleep",
        "lll_lock_wait",
        "pthread_cond_wait",
        "pthread_cond_timedwait",
        "pthread_cond_signal",
        "pthread_cond_broadcast",
    ];
    if FILES.contains(&call) {
        Some(Component::Files)
    } else if NETWORK.contains(&call) {
        Some(Component::Network)
    } else if WAITS.contains(&call) {
        Some(Component::Scheduler)
    } else {
        None
    }
}

/// Calls on files, by the name of their wrapper or syscall.
pub(crate) const FILES: &[&str] = &[
    "open",
    "openat",
    "close",
    "stat",
    "fstat",
    "lstat",
    "fstatat",
    "newfstatat",
    "statx",
    "pread",
    "access",
    "readlink",
];
/// Calls on sockets and the waits for them.
pub(crate) const NETWORK: &[&str] = &[
    "recv",
    "recvfrom",
    "recvmsg",
    "send",
    "sendto",
    "sendmsg",
    "accept",
    "accept4",
    "epoll_wait",
    "epoll_pwait",
    "epoll_ctl",
    "shutdown",
    "setsockopt",
    "getsockopt",
    "socket",
    "connect",
    "writev",
    "readv",
    "read",
    "write",
    "sendfile",
    "poll",
    "ppoll",
    "select",
    "pselect",
    "getsockname",
    "getpeername",
];

/// glibc's name for a syscall's wrapper as the call's own:
/// `__GI___libc_write` and `__libc_open64` become `write` and `open`.
pub(crate) fn wrapped_call(frame: &str) -> &str {
    let mut f = frame.trim_start_matches('_');
    while let Some(r) = f.strip_prefix("GI_").or_else(|| f.strip_prefix("libc_")) {
        f = r.trim_start_matches('_');
    }
    let f = f.strip_suffix("_nocancel").unwrap_or(f);
    f.strip_suffix("64").unwrap_or(f)
}

/// The calls glibc makes cancellation points, by their wrapped names: in a
/// process with more than one thread their wrappers call
/// `__pthread_enable_asynccancel` before the syscall and
/// `__pthread_disable_asynccancel` after it.
const CANCELLABLE: &[&str] = &[
    "open",
    "openat",
    "close",
    "read",
    "write",
    "readv",
    "writev",
    "pread",
    "pwrite",
    "preadv",
    "pwritev",
    "recv",
    "recvfrom",
    "recvmsg",
    "recvmmsg",
    "send",
    "sendto",
    "sendmsg",
    "sendmmsg",
    "accept",
    "accept4",
    "connect",
    "epoll_wait",
    "epoll_pwait",
    "poll",
    "ppoll",
    "select",
    "pselect",
    "pselect6",
    "nanosleep",
    "clock_nanosleep",
];

/// Whether a stack was sampled in glibc's cancellation helpers around a
/// syscall. They are leaves that keep no frame pointer, and glibc is built
/// without them, so the wrapper that called them (which names the call) is
/// lost from the stack: the sample belongs to a call, but not to one the
/// stack can name.
pub fn in_lost_call(stack: &str) -> bool {
    stack.rsplit(';').next().is_some_and(|leaf| {
        !leaf.ends_with("_[k]")
            && (leaf.ends_with("enable_asynccancel") || leaf.ends_with("disable_asynccancel"))
    })
}

/// The component a call of this (syscall or wrapper) name is given.
fn component_of_call(name: &str) -> Option<Component> {
    let call = wrapped_call(name);
    if FILES.contains(&call) {
        Some(Component::Files)
    } else if NETWORK.contains(&call) {
        Some(Component::Network)
    } else if ["nanosleep", "clock_nanosleep"].contains(&call) {
        Some(Component::Scheduler)
    } else {
        None
    }
}

/// How the samples of lost calls are shared out: each cancellable call
/// pays for the same two helpers, so each component's share is its part of
/// the cancellable calls the same round counted. None when the count names
/// none: the samples then stay the server's own, as their frames say.
fn lost_call_shares(calls: &BTreeMap<String, f64>) -> Option<Vec<(Component, f64)>> {
    let mut shares: Vec<(Component, f64)> = Vec::new();
    for (name, per) in calls {
        if !CANCELLABLE.contains(&wrapped_call(name)) || *per <= 0.0 {
            continue;
        }
        let Some(c) = component_of_call(name) else {
            continue;
        };
        match shares.iter_mut().find(|(k, _)| *k == c) {
            Some((_, v)) => *v += per,
            None => shares.push((c, *per)),
        }
    }
    let all: f64 = shares.iter().map(|(_, v)| v).sum();
    (all > 0.0).then(|| shares.into_iter().map(|(c, v)| (c, v / all)).collect())
}

/// The component of one folded stack (`comm;outer;...;inner`, kernel
/// frames ending in `_[k]`).
pub fn classify(stack: &str) -> Component {
    let frames: Vec<&str> = stack.split(';').skip(1).collect();
    let mut saw_kernel = false;
    for frame in frames.iter().rev() {
        if let Some(k) = frame.strip_suffix("_[k]") {
            saw_kernel = true;
            if let Some((c, _)) = KERNEL
                .iter()
                .find(|(_, prefixes)| prefixes.iter().any(|p| k.starts_with(p)))
            {
                return *c;
            }
        } else if let Some(c) = user(frame) {
            return c;
        }
    }
    match (saw_kernel, frames.last()) {
        // Inside the kernel with no frame named: its entry, an interrupt.
        (true, Some(inner)) if inner.ends_with("_[k]") => Component::Other,
        _ => Component::Server,
    }
}

/// The folded stacks of a stored profile, `stack count` lines; `None` for
/// an absent profile or one that cannot be read back.
pub fn folded(p: &StackProfile) -> Option<String> {
    use base64::Engine as _;
    use std::io::Read as _;
    if p.absent.is_some() {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&p.folded_gz)
        .ok()?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// `stack count` lines as pairs; a line without a count is skipped.
pub fn lines(folded: &str) -> impl Iterator<Item = (&str, u64)> {
    folded.lines().filter_map(|l| {
        let (stack, n) = l.rsplit_once(' ')?;
        Some((stack, n.parse().ok()?))
    })
}

/// A server's CPU per request in microseconds, split by component (every
/// component, zeros included, in [`Component::ALL`]'s order).
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    pub us: Vec<(Component, f64)>,
}

impl Split {
    pub fn total(&self) -> f64 {
        self.us.iter().map(|(_, v)| v).sum()
    }

    pub fn of(&self, c: Component) -> f64 {
        self.us
            .iter()
            .find(|(k, _)| *k == c)
            .map_or(0.0, |(_, v)| *v)
    }
}

/// The split of folded stacks sampled every `period_ns` of CPU over
/// `requests` requests.
pub fn split_folded(folded: &str, period_ns: u64, requests: u64) -> Split {
    split_counted(folded, period_ns, requests, &BTreeMap::new())
}

/// [`split_folded`], with the syscalls per request counted over the same
/// round: the samples of calls a stack cannot name are shared out by them.
pub fn split_counted(
    folded: &str,
    period_ns: u64,
    requests: u64,
    calls: &BTreeMap<String, f64>,
) -> Split {
    let shares = lost_call_shares(calls);
    let mut samples = [0.0f64; Component::ALL.len()];
    let mut add = |c: Component, n: f64| {
        if let Some(k) = Component::ALL.iter().position(|x| *x == c) {
            samples[k] += n;
        }
    };
    for (stack, n) in lines(folded) {
        match &shares {
            Some(shares) if in_lost_call(stack) => {
                for (c, share) in shares {
                    add(*c, n as f64 * share);
                }
            }
            _ => add(classify(stack), n as f64),
        }
    }
    let per = |n: f64| {
        if requests == 0 {
            0.0
        } else {
            n * period_ns as f64 / 1e3 / requests as f64
        }
    };
    Split {
        us: Component::ALL
            .iter()
            .zip(samples)
            .map(|(c, n)| (*c, per(n)))
            .collect(),
    }
}

/// A diagnosis's split, when it holds a profile that can be read.
pub fn split(d: &Diagnosis) -> Option<Split> {
    let p = d.profile.as_ref()?;
    let text = folded(p)?;
    Some(split_counted(
        &text,
        p.period_ns,
        d.requests,
        &d.syscalls_per_request,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stack_goes_to_the_innermost_frame_a_rule_names() {
        let cases = [
            // Opening the file, wherever inside the open it was sampled.
            ("nginx;ngx_open_file;__libc_open64;entry_SYSCALL_64_[k];__x64_sys_openat_[k];do_sys_openat2_[k];kmem_cache_alloc_[k]", Component::Files),
            // Leaving the kernel after an open: the wrapper says which call.
            ("nginx;ngx_open_file;__libc_open64;entry_SYSCALL_64_[k];syscall_exit_to_user_mode_[k]", Component::Files),
            ("nginx;ngx_writev;__GI___writev;entry_SYSCALL_64_[k];do_syscall_64_[k]", Component::Network),
            ("nginx;ngx_writev;writev;entry_SYSCALL_64_[k];do_writev_[k];vfs_writev_[k];sock_write_iter_[k];tcp_sendmsg_[k];_copy_from_iter_[k]", Component::Copies),
            ("nginx;ngx_writev;writev;entry_SYSCALL_64_[k];do_writev_[k];vfs_writev_[k];sock_write_iter_[k];tcp_sendmsg_[k];_raw_spin_lock_bh_[k]", Component::Network),
            ("nginx;ngx_process_events;epoll_wait;entry_SYSCALL_64_[k];__x64_sys_epoll_wait_[k];schedule_hrtimeout_range_[k];schedule_[k];__schedule_[k]", Component::Scheduler),
            ("nginx;ngx_http_parse_request_line", Component::Server),
            ("nginx;[nginx];[unknown]", Component::Server),
            ("nginx;ngx_http_header_filter;__memmove_avx_unaligned_erms", Component::Copies),
            ("nginx;ngx_ssl_write;SSL_write;ssl3_write_bytes;aesni_gcm_encrypt", Component::Tls),
            ("nginx;asm_sysvec_apic_timer_interrupt_[k];hrtimer_interrupt_[k]", Component::Other),
            ("lighttpd;fdevent_poll;__GI___poll;entry_SYSCALL_64_[k];do_syscall_64_[k]", Component::Network),
            ("worker;std::sys::fs::stat;statx;entry_SYSCALL_64_[k];do_statx_[k];vfs_statx_[k];link_path_walk_[k]", Component::Files),
            ("worker;__GI___close_nocancel;entry_SYSCALL_64_[k];syscall_exit_to_user_mode_[k]", Component::Files),
        ];
        for (stack, want) in cases {
            assert_eq!(classify(stack), want, "{stack}");
        }
    }

    #[test]
    fn a_lost_calls_samples_are_shared_by_the_counted_calls() {
        let folded = "\
srv;__libc_open64;entry_SYSCALL_64_[k];do_sys_openat2_[k] 50
srv;[unknown];__GI___pthread_disable_asynccancel 30
srv;start_thread;__GI___pthread_enable_asynccancel 10
srv;main;spin 20
";
        assert!(in_lost_call(
            "srv;[unknown];__GI___pthread_disable_asynccancel"
        ));
        assert!(in_lost_call("srv;__libc_enable_asynccancel"));
        assert!(!in_lost_call("srv;__libc_open64;entry_SYSCALL_64_[k]"));
        // Three file calls a request (openat, close twice over) for each
        // network one (recvfrom); fstat is no cancellation point.
        let calls: BTreeMap<String, f64> = [
            ("openat", 1.5),
            ("close", 1.5),
            ("recvfrom", 1.0),
            ("newfstatat", 7.0),
            ("futex", 4.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        // 110 samples of 100 µs over 100 requests: 110 µs a request, the
        // helpers' 40 µs three parts files, one part network.
        let s = split_counted(folded, 100_000, 100, &calls);
        assert_eq!(s.of(Component::Files), 80.0);
        assert_eq!(s.of(Component::Network), 10.0);
        assert_eq!(s.of(Component::Server), 20.0);
        assert_eq!(s.total(), 110.0);
        // With no count, the helpers stay the server's code, as before.
        let s = split_folded(folded, 100_000, 100);
        assert_eq!(s.of(Component::Files), 50.0);
        assert_eq!(s.of(Component::Server), 60.0);
        assert_eq!(s.of(Component::Network), 0.0);
    }

    #[test]
    fn samples_become_microseconds_per_request() {
        let folded = "\
nginx;ngx_open_file;__libc_open64;entry_SYSCALL_64_[k];do_sys_openat2_[k] 30
nginx;ngx_http_parse_request_line 50
nginx;ngx_writev;writev;entry_SYSCALL_64_[k];tcp_sendmsg_[k] 20
";
        // 100 samples of 100 µs over 1000 requests: 10 µs a request.
        let s = split_folded(folded, 100_000, 1000);
        assert_eq!(s.total(), 10.0);
        assert_eq!(s.of(Component::Files), 3.0);
        assert_eq!(s.of(Component::Server), 5.0);
        assert_eq!(s.of(Component::Network), 2.0);
        assert_eq!(s.of(Component::Tls), 0.0);
        assert_eq!(split_folded(folded, 100_000, 0).total(), 0.0);
    }
}
