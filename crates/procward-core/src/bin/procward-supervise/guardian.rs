//! `procward-supervise --guardian`: ends the jobs of a host that ended (Unix).
//!
//! The jobs of an in-memory registry (no state directory) can be reached by their host
//! alone: if they outlived it (a Ctrl-C, a crash, a SIGKILL of the host), nothing could ever
//! find them again, and a dev server would hold its port under PID 1. `PR_SET_PDEATHSIG` is
//! no answer: it reaches the direct child only (not `sleep 60 &` below it), and fires when
//! the spawning *thread* exits, not the process.
//!
//! So each host starts one guardian, in a session of its own (a Ctrl-C or a hangup of the
//! host's terminal never reaches it), and keeps the write end of its stdin open; the kernel
//! closes that end however the host ends, SIGKILL included. The host writes one line per
//! job it guards, and one when a job ended:
//!
//! ```text
//! + <pid> <start time> <session id>|- [<mark>]   a job (its leader's identity; its
//!                                                 cgroup's session; the session's mark)
//! - <pid> <start time>                            that job ended
//! ```
//!
//! At end of file the guardian tree-kills every job still listed with the core's kill
//! (snapshot, SIGTERM, 2 s grace, SIGKILL), by identity and through the guard: a leader whose
//! PID now names another process is never signalled, nor PID <= 1, the guardian, its group,
//! session or ancestors; the job's cgroup (named for its session, created by procward) is
//! killed with it, and so is every process that carries the session's mark (see
//! `procward_core::membership`). Then it exits. A line it cannot read is skipped.

use procward_core::kill::{kill_trees, CgroupClaim, KillOptions, KillRequest};
use procward_core::Identity;
use std::collections::HashMap;
use std::io::BufRead;
use std::time::Duration;

/// Runs the guardian and exits when the command line asks for it; returns otherwise.
pub fn run_if_asked() {
  if std::env::args_os().nth(1).is_some_and(|a| a == "--guardian") {
    std::process::exit(run(std::io::stdin().lock()));
  }
}

/// One guarded job: its leader, the session its cgroup is named for, and its mark.
type Guarded = HashMap<(i32, u64), (Option<String>, Option<String>)>;

/// Reads the host's lines until end of file, then kills what is still listed. Returns the
/// exit code: 0, or 70 when the boot id cannot be read (nothing can be judged, so nothing
/// is signalled).
fn run(input: impl BufRead) -> i32 {
  ignore_terminal_signals();
  let mut jobs = Guarded::new();
  for line in input.split(b'\n') {
    let Ok(line) = line else { break };
    apply(&mut jobs, &String::from_utf8_lossy(&line));
  }
  // The boot id as the identity module reads it (a job of another boot is never judged ours).
  let Some(boot_id) = procward_core::identity::identity(std::process::id() as i32).ok().flatten().map(|me| me.boot_id) else {
    return 70;
  };
  let requests: Vec<KillRequest> = jobs
    .into_iter()
    .map(|((pid, start_time), (session, mark))| KillRequest {
      root: Identity { pid, start_time, boot_id: boot_id.clone() },
      cgroup: session.map(|s| CgroupClaim::new(s, None)),
      mark,
    })
    .collect();
  if !requests.is_empty() {
    // The lines came from the host that started these jobs (over its own pipe, not from a
    // record): the identities are the spawn's, so no other proof of a root is asked for;
    // the marks find what the jobs left outside their trees.
    let opts = KillOptions { grace: Duration::from_secs(2), require_session_leader: true, ..Default::default() };
    let _ = kill_trees(&requests, &opts);
  }
  0
}

/// One line of the host's: a job to guard, or one that ended.
fn apply(jobs: &mut Guarded, line: &str) {
  let mut words = line.split_ascii_whitespace();
  let (Some(op), Some(pid), Some(start)) = (words.next(), words.next(), words.next()) else { return };
  let (Ok(pid), Ok(start)) = (pid.parse::<i32>(), start.parse::<u64>()) else { return };
  match op {
    "+" => {
      let session = words.next().filter(|s| *s != "-").map(str::to_string);
      let mark = words.next().filter(|m| procward_core::membership::valid_mark(m)).map(str::to_string);
      jobs.insert((pid, start), (session, mark));
    }
    "-" => {
      jobs.remove(&(pid, start));
    }
    _ => {}
  }
}

/// A hangup or an interrupt meant for the host's terminal must not end the guardian before
/// it did its work (it runs in a session of its own, so neither should reach it anyway).
fn ignore_terminal_signals() {
  for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGPIPE] {
    // SAFETY: SIG_IGN for signals whose default would end the process; no handler runs.
    unsafe { libc::signal(sig, libc::SIG_IGN) };
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn lines_add_and_remove_jobs_and_bad_lines_are_skipped() {
    let mut jobs = Guarded::new();
    let mark = format!("proc_0123456789ab:{}", "5".repeat(32));
    let lines = [format!("+ 100 5 proc_0123456789ab {mark}"), "+ 200 6 -".into(), "+ 300 7".into(), "- 200 6".into(), "+ x 1 -".into()];
    let more = ["* 400 8", "+ 500", "", "+ 600 9 - proc_0123456789ab:nothex"];
    for line in lines.iter().map(String::as_str).chain(more) {
      apply(&mut jobs, line);
    }
    let mut listed: Vec<_> = jobs.into_iter().collect();
    listed.sort();
    // A malformed mark is no mark: that job's leader is then signalled only through its cgroup.
    assert_eq!(
      listed,
      vec![((100, 5), (Some("proc_0123456789ab".to_string()), Some(mark))), ((300, 7), (None, None)), ((600, 9), (None, None))]
    );
  }
}
