//! `perf script` output folded into stacks, as Brendan Gregg's
//! stackcollapse-perf folds it: one line per distinct stack, outermost
//! frame first, its sample count last. The process name leads each stack;
//! kernel frames end in `_[k]`, so a reader (and a classifier) tells them
//! from the server's own; a frame with no symbol is named by its module.

use std::collections::{BTreeMap, HashSet};
use std::io::BufRead;

/// What the samples of one sampler's window come to.
#[derive(Debug, Default, PartialEq)]
pub struct Folded {
    /// Each distinct stack of the kept processes and its samples.
    pub stacks: BTreeMap<String, u64>,
    pub samples: u64,
    pub kernel_frames: u64,
    pub kernel_frames_named: u64,
    pub user_frames: u64,
    pub user_frames_named: u64,
}

/// Folds `perf script -F comm,pid,tid,ip,sym,dso` output, keeping the
/// samples of the processes in `keep` (by process id, not thread id).
pub fn fold(script: impl BufRead, keep: &HashSet<i32>) -> std::io::Result<Folded> {
    let mut out = Folded::default();
    let mut sample: Option<(String, bool)> = None;
    let mut frames: Vec<String> = Vec::new();
    for line in script.lines() {
        let line = line?;
        if line.trim().is_empty() {
            out.close(&mut sample, &mut frames);
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            if let Some((_, true)) = sample {
                frames.push(out.frame(line.trim()));
            }
            continue;
        }
        out.close(&mut sample, &mut frames);
        sample = header(&line).map(|(comm, pid)| (comm, keep.contains(&pid)));
    }
    out.close(&mut sample, &mut frames);
    Ok(out)
}

impl Folded {
    fn close(&mut self, sample: &mut Option<(String, bool)>, frames: &mut Vec<String>) {
        if let Some((comm, true)) = sample.take() {
            let mut stack = clean(&comm);
            for f in frames.iter().rev() {
                stack.push(';');
                stack.push_str(f);
            }
            *self.stacks.entry(stack).or_default() += 1;
            self.samples += 1;
        }
        frames.clear();
    }

    /// One frame's name: `ip sym (dso)`, perf's order.
    fn frame(&mut self, line: &str) -> String {
        let rest = line.split_once(' ').map_or("", |(_, r)| r.trim());
        let (sym, dso) = match rest.rfind(" (") {
            Some(at) if rest.ends_with(')') => (&rest[..at], &rest[at + 2..rest.len() - 1]),
            _ => (rest, ""),
        };
        let named = !sym.is_empty() && sym != "[unknown]";
        if dso.starts_with("[kernel") || is_module(dso) {
            self.kernel_frames += 1;
            self.kernel_frames_named += u64::from(named);
            let name = if named {
                clean(sym)
            } else {
                format!("[{}]", clean(dso.trim_matches(['[', ']'])))
            };
            format!("{name}_[k]")
        } else {
            self.user_frames += 1;
            self.user_frames_named += u64::from(named);
            if named {
                clean(sym)
            } else if dso.is_empty() || dso == "[unknown]" {
                "[unknown]".to_string()
            } else {
                format!("[{}]", clean(dso.rsplit('/').next().unwrap_or(dso)))
            }
        }
    }
}

/// A kernel module's name as perf gives it (`[nf_conntrack]`), as opposed
/// to the special user mappings (`[vdso]`, `[heap]`, `[unknown]`).
fn is_module(dso: &str) -> bool {
    dso.starts_with('[')
        && !matches!(
            dso,
            "[unknown]" | "[vdso]" | "[vsyscall]" | "[heap]" | "[stack]" | "[anon]"
        )
}

/// `comm pid/tid` (comm may hold spaces): the process name and id.
fn header(line: &str) -> Option<(String, i32)> {
    let line = line.trim_end();
    let (comm, ids) = line.rsplit_once(char::is_whitespace)?;
    let pid = ids.split('/').next()?.parse().ok()?;
    Some((comm.trim().to_string(), pid))
}

/// A frame may not hold the folded format's separators.
fn clean(s: &str) -> String {
    s.replace(';', ":").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
nginx 812/812 
\tffffffff8134 do_sys_openat2 ([kernel.kallsyms])
\tffffffff8120 __x64_sys_openat ([kernel.kallsyms])
\t7f01 __libc_open64 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t55aa ngx_open_cached_file (/usr/sbin/nginx)

nginx 812/812 
\tffffffff8134 do_sys_openat2 ([kernel.kallsyms])
\tffffffff8120 __x64_sys_openat ([kernel.kallsyms])
\t7f01 __libc_open64 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t55aa ngx_open_cached_file (/usr/sbin/nginx)

swapper     0/0 
\tffffffff81 default_idle ([kernel.kallsyms])

cc1 900/901 
\t4011 [unknown] (/usr/lib/gcc/cc1)

nginx: worker 812/813 
\tffffffffc0 [unknown] ([nf_conntrack])
\t55ab [unknown] (/usr/sbin/nginx)
\t0 [unknown] ([unknown])
";

    #[test]
    fn stacks_fold_outermost_first_with_kernel_frames_marked() {
        let keep: HashSet<i32> = [812].into_iter().collect();
        let f = fold(SCRIPT.as_bytes(), &keep).unwrap();
        let stacks: Vec<(&str, u64)> = f.stacks.iter().map(|(k, &v)| (k.as_str(), v)).collect();
        assert_eq!(
            stacks,
            [
                ("nginx: worker;[unknown];[nginx];[nf_conntrack]_[k]", 1),
                (
                    "nginx;ngx_open_cached_file;__libc_open64;__x64_sys_openat_[k];do_sys_openat2_[k]",
                    2
                ),
            ]
        );
        // Neither the idle task's nor the compiler's.
        assert_eq!(f.samples, 3);
        assert_eq!((f.kernel_frames, f.kernel_frames_named), (5, 4));
        assert_eq!((f.user_frames, f.user_frames_named), (6, 4));
    }
}
