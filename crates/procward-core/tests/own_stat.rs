//! Our own stat through the core is the one every other process reads (issue 15, arm64 under
//! qemu-user). qemu answers an emulated process's own open of `/proc/self/stat` or
//! `/proc/<its pid>/stat` itself (state `0`, process group 0, a start time of its own clock),
//! so an identity read by absolute path never matches what the host or a second host sees.
//! A child `cat` (a native process, never emulated) prints the kernel's line.
#![cfg(target_os = "linux")]

use procward_core::identity::identity;
use procward_core::probe::{probe_one, Probe};
use std::process::Command;

/// Fields 3 (state), 5 (process group) and 22 (start time, clock ticks since boot) of the
/// stat line `cat` prints for `pid`, counted after the last `)`.
fn stat_seen_by_a_child(pid: u32) -> (char, i32, u64) {
  let out = Command::new("cat").arg(format!("/proc/{pid}/stat")).output().expect("running cat");
  assert!(out.status.success(), "cat /proc/{pid}/stat: {out:?}");
  let text = String::from_utf8(out.stdout).unwrap();
  let rest = &text[text.rfind(')').expect("a stat line") + 1..];
  let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
  // After ')': index 0 is field 3, so field N is at index N - 3.
  (fields[0].chars().next().unwrap(), fields[2].parse().unwrap(), fields[19].parse().unwrap())
}

#[test]
fn our_own_stat_is_the_one_every_other_process_reads() {
  let me = std::process::id();
  let Probe::Found(ours) = probe_one(me as i32) else { panic!("our own PID {me} was not found") };
  let (state, pgid, start_time) = stat_seen_by_a_child(me);
  assert_eq!(ours.pgid, pgid, "process group: ours {ours:?}, the child saw {pgid}");
  assert_eq!(ours.start_time, start_time, "start time: ours {ours:?}, the child saw {start_time}");
  assert_ne!(ours.pgid, 0, "qemu's fake stat has process group 0");
  assert!(ours.state.is_ascii_alphabetic(), "state {:?} (qemu's fake is '0'; the child saw {state:?})", ours.state);
  // The identity a supervisor writes for itself and a host records as its own.
  let id = identity(me as i32).unwrap().expect("our own identity");
  assert_eq!((id.pid, id.start_time), (me as i32, start_time));
}
