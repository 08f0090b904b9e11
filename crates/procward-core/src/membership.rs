//! Membership by proof: whether a process is a job's, from something a stranger cannot have.
//!
//! A PID, a process group id or a session id is a number the kernel hands out again, and a
//! record is only what someone wrote. A process is a job's only when one of these says so:
//!
//! - **the job's cgroup**: it is in the cgroup procward created for the session (judged by
//!   [`crate::cgroup::owned`]); a process cannot leave it without the right to write
//!   procward's cgroup tree;
//! - **the session's mark**: its environment (`/proc/<pid>/environ`, the block its last
//!   `execve` got) holds `PROCWARD_SESSION_ID=<session id>:<nonce>`, with the 128-bit nonce
//!   the host drew when it started the job and exported to it. Every process of the job
//!   inherits it through `fork` and `exec` unless it replaces its environment. A job run by
//!   a procward inside another job carries the outer marks too, in
//!   `PROCWARD_OUTER_SESSION_IDS` (space-separated, innermost first), so the outer job's
//!   kill still proves it;
//! - **the host's own spawn**: the host that started a job and follows it as its child
//!   knows its identity from the spawn itself, not from a record (a child not reaped yet
//!   keeps its PID); it asks for no other proof of the root (`require_proof` off);
//! - **the kernel's own links from a proven process**: a descendant of a proven live root
//!   (its children lists, each child started no earlier than its parent), the root's own
//!   process group and session while the root lives (their number is the root's PID, which
//!   the live root holds), or that group through the root's pidfd (see [`crate::pidfd`]).
//!
//! What no proof reaches (SECURITY.md): a process that replaced its environment and left
//! the job's group and session after its parent died, outside a cgroup; and a process
//! whose environment cannot be read (another user's, or one that made itself not dumpable
//! as `ssh-agent` does), which only the cgroup proves.

/// Whether this platform can read another process's mark (Linux: `/proc/<pid>/environ`).
/// Where it cannot (macOS, other Unix systems), a live root is taken on its identity alone
/// and the check-to-signal window and unproven leftovers are listed limits (SECURITY.md).
pub const MARK_READABLE: bool = cfg!(target_os = "linux");

/// The variable that carries a job's own mark.
pub const MARK_VAR: &str = "PROCWARD_SESSION_ID";
/// The variable that carries the marks of the jobs a job runs inside (nested procward).
pub const OUTER_MARKS_VAR: &str = "PROCWARD_OUTER_SESSION_IDS";

/// Longest environment read (the kernel caps a process's arguments and environment at a
/// quarter of its stack limit; 8 MiB covers the default 8 MiB stack twice).
#[cfg(target_os = "linux")]
const MAX_ENVIRON: u64 = 8 << 20;

/// Whether `mark` has the shape of a session's mark: `proc_` + 12 lowercase hex digits, a
/// colon, 32 lowercase hex digits.
pub fn valid_mark(mark: &str) -> bool {
  let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
  match mark.strip_prefix("proc_").and_then(|m| m.split_once(':')) {
    Some((id, nonce)) => hex(id, 12) && hex(nonce, 32),
    None => false,
  }
}

/// Whether an environment block (NUL-separated `NAME=value` entries) carries `mark`, as the
/// job's own mark or one of its outer marks.
pub fn environ_carries(environ: &[u8], mark: &str) -> bool {
  let mark = mark.as_bytes();
  environ.split(|&b| b == 0).any(|entry| {
    if let Some(v) = entry.strip_prefix(MARK_VAR.as_bytes()).and_then(|r| r.strip_prefix(b"=")) {
      return v == mark;
    }
    if let Some(v) = entry.strip_prefix(OUTER_MARKS_VAR.as_bytes()).and_then(|r| r.strip_prefix(b"=")) {
      return v.split(|&b| b == b' ').any(|m| m == mark);
    }
    false
  })
}

/// Whether process `pid` carries `mark` in its environment right now. False when it does
/// not, when the environment cannot be read (gone, another user's, not dumpable), or
/// where the platform has no such read (every system but Linux).
pub fn carries_mark(pid: i32, mark: &str) -> bool {
  #[cfg(target_os = "linux")]
  {
    use std::io::Read;
    let Ok(Some(file)) = crate::sys::open_proc(pid, "environ") else { return false };
    let mut environ = Vec::new();
    if file.take(MAX_ENVIRON).read_to_end(&mut environ).is_err() {
      return false;
    }
    environ_carries(&environ, mark)
  }
  #[cfg(not(target_os = "linux"))]
  {
    let _ = (pid, mark);
    false
  }
}

/// Whether process `pid` is in the cgroup directory `dir` (its `cgroup.procs` lists it).
#[cfg(target_os = "linux")]
pub fn in_cgroup(pid: i32, dir: &std::path::Path) -> bool {
  crate::cgroup::members(dir).contains(&pid)
}

/// The live processes of this boot that carry one of `marks`, from one listing of `/proc`
/// (an environment read per process; a zombie's is empty; a process's environment and stat
/// are read through one descriptor of its `/proc` directory, so both are its own): what a kill of an ended job
/// finds of it outside its group, as a daemon that left with `setsid` after its parent
/// died. Each with the index of the mark it carries. Linux only (empty elsewhere).
pub fn marked_processes(marks: &[&str]) -> Vec<(usize, crate::probe::ProcessInfo)> {
  marked_processes_except(marks, &std::collections::HashSet::new())
}

/// [`marked_processes`], reading nothing of the PIDs in `known` (processes a kill has
/// already found through the kernel's links: their environments need not be read).
pub fn marked_processes_except(marks: &[&str], known: &std::collections::HashSet<i32>) -> Vec<(usize, crate::probe::ProcessInfo)> {
  #[cfg(target_os = "linux")]
  {
    let mut out = Vec::new();
    if marks.is_empty() {
      return out;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    let me = std::process::id() as i32;
    let (mut environ, mut stat) = (Vec::new(), Vec::new());
    for entry in dir.flatten() {
      let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
      if pid <= 1 || pid == me || known.contains(&pid) {
        continue;
      }
      // The environment and the stat through one descriptor of /proc/<pid>: both are that
      // process's, or unreadable once it is reaped, never a later holder's of its PID.
      let Ok(Some(dir)) = crate::sys::open_proc_dir(pid) else { continue };
      if !matches!(crate::sys::read_in(&dir, "environ", MAX_ENVIRON, &mut environ), Ok(true)) || memchr_mark(&environ).is_none() {
        continue;
      }
      let Some(i) = marks.iter().position(|m| environ_carries(&environ, m)) else { continue };
      if matches!(crate::sys::read_in(&dir, "stat", 4096, &mut stat), Ok(true)) {
        if let Some(info) = crate::sys::parse_stat(pid, &stat).filter(|p| !p.is_dead()) {
          out.push((i, info));
        }
      }
    }
    out
  }
  #[cfg(not(target_os = "linux"))]
  {
    let _ = (marks, known);
    Vec::new()
  }
}

/// Where the mark variable's name occurs in an environment block: the cheap test that skips
/// almost every process before the entries are split.
#[cfg(target_os = "linux")]
fn memchr_mark(environ: &[u8]) -> Option<usize> {
  let needle = b"PROCWARD_";
  environ.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
  use super::*;

  const MARK: &str = "proc_0123456789ab:0123456789abcdef0123456789abcdef";

  #[test]
  fn only_a_whole_mark_in_the_mark_variables_counts() {
    assert!(valid_mark(MARK));
    for bad in [
      "proc_0123456789ab",
      "proc_0123456789AB:0123456789abcdef0123456789abcdef",
      "proc_0123456789ab:0123",
      "x_0123456789ab:0123456789abcdef0123456789abcdef",
    ] {
      assert!(!valid_mark(bad), "{bad}");
    }
    let env = |s: &str| s.replace('|', "\0").into_bytes();
    assert!(environ_carries(&env(&format!("A=1|PROCWARD_SESSION_ID={MARK}|B=2")), MARK));
    assert!(environ_carries(&env(&format!("PROCWARD_OUTER_SESSION_IDS=proc_000000000000:{} {MARK}", "0".repeat(32))), MARK));
    // Longer, shorter, in another variable, or as a prefix of the name: not the mark.
    assert!(!environ_carries(&env(&format!("PROCWARD_SESSION_ID={MARK}0")), MARK));
    assert!(!environ_carries(&env(&format!("PROCWARD_SESSION_ID={}", &MARK[..MARK.len() - 1])), MARK));
    assert!(!environ_carries(&env(&format!("X={MARK}|PROCWARD_SESSION_IDX={MARK}")), MARK));
    assert!(!environ_carries(&env(&format!("PROCWARD_OUTER_SESSION_IDS={MARK}x")), MARK));
  }

  #[cfg(target_os = "linux")]
  #[test]
  fn a_process_is_proven_by_the_mark_it_inherited_and_not_by_another() {
    let mut marked = std::process::Command::new("sleep").arg("30").env(MARK_VAR, MARK).spawn().unwrap();
    let other = MARK.replace(":0", ":1");
    let mut plain = std::process::Command::new("sleep").arg("30").env(MARK_VAR, &other).spawn().unwrap();
    let (m, p) = (marked.id() as i32, plain.id() as i32);
    crate::testwait::until("both to exec", || carries_mark(m, MARK) && carries_mark(p, &other));
    assert!(!carries_mark(p, MARK));
    let found = marked_processes(&[&other, MARK]);
    assert!(found.iter().any(|(i, info)| *i == 1 && info.pid == m), "{found:?}");
    assert!(found.iter().any(|(i, info)| *i == 0 && info.pid == p), "{found:?}");
    for c in [&mut marked, &mut plain] {
      c.kill().unwrap();
      c.wait().unwrap();
    }
    assert!(!carries_mark(m, MARK));
  }
}
