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
    let Ok(Some(dir)) = crate::sys::open_proc_dir(pid) else { return false };
    let mut environ = Vec::new();
    matches!(read_environ(&dir, &mut environ, std::time::Instant::now() + EXEC_WAIT), Ok(true)) && environ_carries(&environ, mark)
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
    // One wait for execs under way for the whole scan: a job whose processes keep their
    // environment unreadable (unmapped pages) cannot make a kill wait per process.
    let deadline = std::time::Instant::now() + EXEC_WAIT;
    for entry in dir.flatten() {
      let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
      if pid <= 1 || pid == me || known.contains(&pid) {
        continue;
      }
      // The environment and the stat through one descriptor of /proc/<pid>: both are that
      // process's, or unreadable once it is reaped, never a later holder's of its PID.
      let Ok(Some(dir)) = crate::sys::open_proc_dir(pid) else { continue };
      if !matches!(read_environ(&dir, &mut environ, deadline), Ok(true)) || memchr_mark(&environ).is_none() {
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

/// Reads the environment of the process whose `/proc/<pid>` directory `dir` is (see
/// [`crate::sys::read_in`]: `Ok(false)` once it is gone), whole even across an `execve`.
///
/// An `environ` file reads the memory map the process had when it was opened: an exec
/// after the open leaves the read an old map being torn down, which reads empty or cut
/// short. During the exec itself the new map has no environment yet and reads empty. Either
/// way the block the process is being given may carry a mark. So a read shorter than the
/// environment `/proc/<pid>/stat` gives (fields 50 and 51, `env_start` and `env_end`; both
/// 0 while an exec builds the new map) is made again, with a fresh open, while the process
/// lives and is no kernel thread, until `deadline` (a read, or a scan of `/proc`, waits
/// [`EXEC_WAIT`] at most in all). A usual environment costs one read; an empty or cut one,
/// a stat read more.
#[cfg(target_os = "linux")]
fn read_environ(dir: &std::fs::File, out: &mut Vec<u8>, deadline: std::time::Instant) -> std::io::Result<bool> {
  // Room for a usual environment in one read: the kernel copies it page by page within it.
  out.reserve(ENVIRON_CHUNK);
  let mut stat = Vec::new();
  // When the stat first gave an empty environment (see below).
  let mut empty_since = None;
  for attempt in 0.. {
    // `false`: no such process, or (seen during an exec) no memory map to read just then.
    let read = crate::sys::read_in(dir, "environ", MAX_ENVIRON, out)?;
    if read && (out.last() == Some(&0) || out.len() as u64 == MAX_ENVIRON) {
      return Ok(true);
    }
    // Empty or cut: a kernel thread, a zombie, an `env -i` process, or an exec under way.
    if !crate::sys::read_in(dir, "stat", 4096, &mut stat)? {
      return Ok(false);
    }
    let now = std::time::Instant::now();
    let whole = match env_span(&stat) {
      Some(EnvSpan::Building) => false,
      // The exec sets `env_start` and `env_end` to one address before it lays the entries
      // out: an empty span is believed (`env -i`) once it has lasted [`EMPTY_SETTLE`].
      Some(EnvSpan::Bytes(0)) => read && now.duration_since(*empty_since.get_or_insert(now)) >= EMPTY_SETTLE,
      Some(EnvSpan::Bytes(n)) => read && out.len() as u64 >= n,
      None => true,
    };
    if whole || now >= deadline {
      return Ok(read);
    }
    if attempt > 0 {
      std::thread::sleep(std::time::Duration::from_micros(200));
    }
  }
  unreachable!("the loop returns")
}

/// How long an empty environment span must last to be taken as empty (see [`read_environ`]).
#[cfg(target_os = "linux")]
const EMPTY_SETTLE: std::time::Duration = std::time::Duration::from_millis(2);

/// Bytes reserved for an environment read (see [`read_environ`]).
#[cfg(target_os = "linux")]
const ENVIRON_CHUNK: usize = 64 << 10;

/// Longest wait for an `execve` under way to give a process its new environment (see
/// [`read_environ`]): the kernel does it in microseconds, a loaded machine may take longer.
#[cfg(target_os = "linux")]
const EXEC_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// A live user process's environment, as its `/proc/<pid>/stat` gives it.
#[cfg(target_os = "linux")]
#[derive(Debug, PartialEq)]
enum EnvSpan {
  /// An exec is building the new memory map (`env_end`, field 51, still 0).
  Building,
  /// `env_end - env_start` (fields 51 and 50) bytes.
  Bytes(u64),
}

/// The environment a stat text gives; `None` for a zombie, a dead process, a kernel thread
/// (field 9, `flags`, with `PF_KTHREAD`) or a text that is no stat line.
#[cfg(target_os = "linux")]
fn env_span(stat: &[u8]) -> Option<EnvSpan> {
  const PF_KTHREAD: u64 = 0x0020_0000;
  let close = stat.iter().rposition(|&b| b == b')')?;
  let fields: Vec<&str> = std::str::from_utf8(&stat[close + 1..]).ok()?.split_ascii_whitespace().collect();
  // After ')': field 3 (state) is at index 0, so field N at index N - 3.
  let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
  let state = fields.first()?.chars().next()?;
  if matches!(state, 'Z' | 'X' | 'x') || field(9)? & PF_KTHREAD != 0 {
    return None;
  }
  match (field(50)?, field(51)?) {
    (_, 0) => Some(EnvSpan::Building),
    (start, end) => Some(EnvSpan::Bytes(end.saturating_sub(start))),
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

  #[cfg(target_os = "linux")]
  #[test]
  fn the_environment_span_of_a_stat_line() {
    // Fields 3.. of a real line (a `sh` after its exec), with flags (9), env_start (50) and env_end (51) set below.
    let line = |state: char, flags: u64, start: u64, end: u64| {
      let mut f: Vec<String> =
        "R 1 2 3 0 -1 0 144 0 0 0 0 0 0 0 20 0 1 0 1060046 524288 36 1 2 3 4 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 5 6 7 8 9 10 11 0"
          .split(' ')
          .map(String::from)
          .collect();
      f[0] = state.to_string();
      f[9 - 3] = flags.to_string();
      f[50 - 3] = start.to_string();
      f[51 - 3] = end.to_string();
      format!("42 (a) b)) {}\n", f.join(" ")).into_bytes()
    };
    assert_eq!(env_span(&line('S', 0x40_0000, 100, 2712)), Some(EnvSpan::Bytes(2612)));
    assert_eq!(env_span(&line('R', 0, 300, 300)), Some(EnvSpan::Bytes(0)));
    assert_eq!(env_span(&line('R', 0, 0, 0)), Some(EnvSpan::Building));
    assert_eq!(env_span(&line('Z', 0, 100, 200)), None);
    assert_eq!(env_span(&line('S', 0x20_0000, 0, 0)), None, "a kernel thread");
    assert_eq!(env_span(b"no stat line"), None);
  }

  #[cfg(target_os = "linux")]
  #[test]
  fn a_process_with_an_empty_environment_carries_no_mark() {
    let mut child = std::process::Command::new("sleep").arg("30").env_clear().spawn().unwrap();
    let pid = child.id() as i32;
    crate::testwait::until("the exec", || std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with("sleep")));
    let carries = carries_mark(pid, MARK);
    let found = marked_processes(&[MARK]).iter().any(|(_, p)| p.pid == pid);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!((carries, found), (false, false));
  }

  #[cfg(target_os = "linux")]
  #[test]
  fn a_process_in_the_middle_of_an_exec_still_carries_its_mark() {
    // While the kernel builds a new image, `/proc/<pid>/environ` reads empty (the new
    // memory map has no environment yet): a kill's scan at that instant must not miss a job's
    // daemon. The process re-executes itself 400 times; every read while it lives carries.
    let dir = std::env::temp_dir().join(format!("procward-reexec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("reexec.sh");
    std::fs::write(&script, "n=${N:-0}; if [ $n -lt 400 ]; then N=$((n+1)) exec sh \"$0\"; fi\n").unwrap();
    let mark = MARK.replace(":0", ":7");
    let mut child = std::process::Command::new("sh").arg(&script).env(MARK_VAR, &mark).spawn().unwrap();
    let pid = child.id() as i32;
    let live = || crate::sys::read_stat(pid).ok().flatten().is_some_and(|p| !p.is_dead());
    let (mut reads, mut missed, mut scan_missed) = (0, 0, 0);
    while live() {
      let carries = carries_mark(pid, &mark);
      let scanned = reads % 8 != 0 || marked_processes(&[mark.as_str()]).iter().any(|(_, p)| p.pid == pid);
      // Counted only when it still lives after the read (an exit makes the read empty too).
      if live() {
        reads += 1;
        missed += usize::from(!carries);
        scan_missed += usize::from(!scanned);
      }
    }
    child.wait().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(reads > 50, "too few reads to tell: {reads}");
    assert_eq!((missed, scan_missed), (0, 0), "of {reads} reads of a live process, these missed its mark");
  }
}
