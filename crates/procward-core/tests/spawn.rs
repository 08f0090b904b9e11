//! Spawn and capture with real processes (DESIGN section 4).
#![cfg(unix)]

use procward_core::reader::JobEvent;
use procward_core::spawn::{spawn, Capture, SpawnOptions};
use procward_core::status::ExitInfo;
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn run(opts: SpawnOptions) -> (procward_core::spawn::Job, mpsc::Receiver<JobEvent>) {
  let (tx, rx) = mpsc::channel();
  let job = spawn(opts, Box::new(move |ev| drop(tx.send(ev)))).unwrap();
  (job, rx)
}

/// Collects output until the exit event; returns (output, exit, time of exit).
fn until_exit(rx: &mpsc::Receiver<JobEvent>) -> (String, ExitInfo) {
  let mut out = String::new();
  loop {
    match rx.recv_timeout(Duration::from_secs(10)).expect("no exit within 10 s") {
      JobEvent::Output { text, .. } => out.push_str(&text),
      JobEvent::Exit(info) => return (out, info),
    }
  }
}

#[test]
fn exit_is_published_while_a_grandchild_holds_the_pipe() {
  let start = Instant::now();
  let (_job, rx) = run(SpawnOptions::new("echo started; sleep 30 & echo bg=$!; exit 0"));
  let (out, exit) = until_exit(&rx);
  assert!(start.elapsed() < Duration::from_millis(1500), "took {:?}", start.elapsed());
  assert_eq!(exit, ExitInfo::exited(0));
  let mut lines = out.lines();
  assert_eq!(lines.next(), Some("started"));
  let bg: i32 = lines.next().unwrap().strip_prefix("bg=").unwrap().parse().unwrap();
  // Waiting did not kill the grandchild.
  assert!(procward_core::probe::probe_one(bg).is_alive());
  unsafe { libc::kill(bg, libc::SIGKILL) };
}

#[test]
fn a_character_split_across_writes_is_reassembled() {
  let (_job, rx) = run(SpawnOptions::new("printf 'caf\\303'; sleep 0.2; printf '\\251 ok\\n'"));
  let (out, exit) = until_exit(&rx);
  assert_eq!(out, "café ok\n");
  assert_eq!(exit.code, Some(0));
}

#[test]
fn a_signal_death_is_never_exit_code_zero() {
  let (_job, rx) = run(SpawnOptions::new("echo before; kill -KILL $$"));
  let (out, exit) = until_exit(&rx);
  assert_eq!(out, "before\n");
  assert_eq!(exit, ExitInfo::signalled(libc::SIGKILL));
}

#[test]
fn stdout_and_stderr_are_merged_and_a_full_pipe_never_blocks() {
  let (_job, rx) = run(SpawnOptions::new("head -c 1000000 /dev/zero | tr '\\0' x >&2; echo out-done"));
  let (out, exit) = until_exit(&rx);
  assert_eq!(exit.code, Some(0));
  assert_eq!(out.len(), 1_000_000 + "out-done\n".len());
  assert!(out.ends_with("xout-done\n"));
}

#[test]
fn the_job_leads_its_own_session() {
  let (job, rx) = run(SpawnOptions::new("sleep 0.3"));
  let info = match procward_core::probe::probe_one(job.pid) {
    procward_core::probe::Probe::Found(i) => i,
    other => panic!("{other:?}"),
  };
  assert_eq!(info.pgid, job.pid);
  until_exit(&rx);
}

#[test]
fn stdin_is_dev_null() {
  let (_job, rx) = run(SpawnOptions::new("cat; echo rc=$?"));
  let (out, _) = until_exit(&rx);
  assert_eq!(out, "rc=0\n");
}

#[test]
fn missing_cwd_is_a_clear_error() {
  let mut opts = SpawnOptions::new("true");
  opts.cwd = Some("/definitely/not/here".into());
  let err = spawn(opts, Box::new(|_| {})).unwrap_err();
  assert_eq!(err.code(), "ENOENT");
}

fn supervisor() -> std::path::PathBuf {
  std::path::PathBuf::from(env!("CARGO_BIN_EXE_procward-supervise"))
}

#[test]
fn durable_job_records_exact_exit_code_and_signal() {
  let dir = std::env::temp_dir().join(format!("procward-core-test-{}", std::process::id()));
  std::fs::create_dir_all(&dir).unwrap();
  for (cmd, want, name) in [
    ("echo out; echo err >&2; exit 7", ExitInfo::exited(7), "a"),
    ("echo before; kill -KILL $$", ExitInfo::signalled(9), "b"),
    ("exit 137", ExitInfo::exited(137), "c"),
  ] {
    let log_path = dir.join(format!("{name}.log"));
    let exit_path = dir.join(format!("{name}.exit"));
    let mut opts = SpawnOptions::new(cmd);
    opts.capture = Capture::Durable {
      log_path: log_path.clone(),
      exit_path: exit_path.clone(),
      supervisor: supervisor(),
      log_part_bytes: 0,
      stdin_fifo: None,
    };
    let (_job, rx) = run(opts);
    let (_out, exit) = until_exit(&rx);
    assert_eq!(exit, want, "{cmd}");
    let recorded = std::fs::read_to_string(&exit_path).unwrap();
    assert_eq!(ExitInfo::from_json(&recorded), Some(want));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&log_path).unwrap().permissions().mode() & 0o777, 0o600);
  }
  let log = std::fs::read_to_string(dir.join("a.log")).unwrap();
  assert_eq!(log, "out\nerr\n");
  std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn durable_supervisor_adopts_double_forked_orphans_so_they_stay_in_the_tree() {
  let dir = std::env::temp_dir().join(format!("procward-core-orphan-{}", std::process::id()));
  std::fs::create_dir_all(&dir).unwrap();
  let mut opts = SpawnOptions::new("(setsid sleep 30 &); echo forked; sleep 30");
  opts.capture = Capture::Durable {
    log_path: dir.join("log"),
    exit_path: dir.join("exit"),
    supervisor: supervisor(),
    log_part_bytes: 0,
    stdin_fifo: None,
  };
  let (job, rx) = run(opts);
  let deadline = Instant::now() + Duration::from_secs(5);
  // The orphan escaped both the group (setsid) and its parent (the subshell exited), yet
  // it was adopted by the supervisor, so it is still a descendant of the session.
  let tree = loop {
    let t: Vec<_> = procward_core::tree::descendants(job.pid).unwrap().into_iter().filter(|p| !p.is_dead()).collect();
    if t.iter().any(|p| p.ppid == job.pid && p.pgid != job.pid) || Instant::now() > deadline {
      break t;
    }
    std::thread::sleep(Duration::from_millis(20));
  };
  let orphan = tree.iter().find(|p| p.ppid == job.pid && p.pgid != job.pid).expect("orphan adopted by the supervisor");
  let report = procward_core::kill::kill_tree(&job.identity, &Default::default()).unwrap();
  assert!(report.signalled.contains(&orphan.pid), "{report:?}");
  assert!(report.survivors.is_empty());
  let (_, exit) = until_exit(&rx);
  assert_eq!(exit, ExitInfo::signalled(libc::SIGTERM));
  std::fs::remove_dir_all(&dir).unwrap();
}

fn durable(cmd: &str, dir: &std::path::Path, part_bytes: u64) -> SpawnOptions {
  std::fs::create_dir_all(dir).unwrap();
  let mut opts = SpawnOptions::new(cmd);
  opts.capture = Capture::Durable {
    log_path: dir.join("output.log"),
    exit_path: dir.join("exit.json"),
    supervisor: supervisor(),
    log_part_bytes: part_bytes,
    stdin_fifo: None,
  };
  opts
}

#[test]
fn durable_exit_is_published_while_a_grandchild_holds_the_pipe_and_its_late_output_is_logged() {
  let dir = std::env::temp_dir().join(format!("procward-core-durable-orphan-{}", std::process::id()));
  let start = Instant::now();
  let (job, rx) = run(durable("echo started; (sleep 0.6; echo late) & exit 3", &dir, 0));
  let (out, exit) = until_exit(&rx);
  let published = start.elapsed();
  assert!(published < Duration::from_millis(500), "exit took {published:?}");
  assert_eq!((out.as_str(), exit), ("started\n", ExitInfo::exited(3)));
  assert_eq!(std::fs::read_to_string(dir.join("exit.json")).ok().and_then(|t| ExitInfo::from_json(&t)), Some(ExitInfo::exited(3)));
  // The supervisor stays for the grandchild, whose output arrives late, once.
  assert!(procward_core::probe::probe_one(job.pid).is_alive());
  match rx.recv_timeout(Duration::from_secs(5)).unwrap() {
    JobEvent::Output { text, late } => assert_eq!((text.as_str(), late), ("late\n", true)),
    other => panic!("{other:?}"),
  }
  assert_eq!(std::fs::read_to_string(dir.join("output.log")).unwrap(), "started\nlate\n");
  std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn durable_log_rotates_keeps_one_part_and_the_host_still_sees_every_line() {
  let dir = std::env::temp_dir().join(format!("procward-core-durable-rotate-{}", std::process::id()));
  // About 6 KB every 30 ms into 8 KiB parts: at most one rotation between two reads of the
  // host's follower (15 ms tick), which keeps up with up to two.
  let cmd = "for i in $(seq 0 39); do seq $((i*1000+1)) $((i*1000+1000)); sleep 0.03; done";
  let (_job, rx) = run(durable(cmd, &dir, 8 * 1024));
  let (out, exit) = until_exit(&rx);
  assert_eq!(exit, ExitInfo::exited(0));
  // The host followed the log across every rotation.
  let want: String = (1..=40000).map(|i| format!("{i}\n")).collect();
  assert!(out == want, "host saw {} bytes, want {}", out.len(), want.len());
  let current = std::fs::read_to_string(dir.join("output.log")).unwrap();
  let rotated = std::fs::read_to_string(dir.join("output.log.1")).unwrap();
  assert!(current.len() < 16 * 1024 && rotated.len() >= 8 * 1024 && rotated.len() < 16 * 1024, "{} + {}", rotated.len(), current.len());
  assert!(rotated.ends_with('\n') && format!("{rotated}{current}").ends_with("39999\n40000\n"));
  let state = std::fs::read_to_string(dir.join("log-state.json")).unwrap();
  let dropped: usize = state.split("\"droppedBytes\":").nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
  assert_eq!(dropped + rotated.len() + current.len(), want.len(), "{state}");
  std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn stdin_pipe_write_then_close_gives_eof() {
  let mut opts = SpawnOptions::new("cat; echo after-eof");
  opts.input = procward_core::spawn::Input::Pipe;
  let (mut job, rx) = run(opts);
  let input = job.input.as_mut().unwrap();
  input.write(b"hello\n").unwrap();
  input.close().unwrap();
  let (out, exit) = until_exit(&rx);
  assert_eq!(out, "hello\nafter-eof\n");
  assert_eq!(exit.code, Some(0));
  // Writing after the end is an error, never a crash.
  assert!(job.input.as_ref().unwrap().write(b"x").is_err());
}

#[test]
fn writing_to_an_exited_job_is_epipe_not_a_crash() {
  let mut opts = SpawnOptions::new("exit 0");
  opts.input = procward_core::spawn::Input::Pipe;
  let (job, rx) = run(opts);
  until_exit(&rx);
  let err = job.input.as_ref().unwrap().write(b"late\n").unwrap_err();
  assert!(err.to_string().contains("Broken pipe") || err.code() == "EIO", "{err}");
}

#[test]
fn pty_job_is_a_terminal_of_the_requested_size_and_answers_a_prompt() {
  let mut opts = SpawnOptions::new("test -t 0 && test -t 1 && echo tty; stty size; read name; echo \"hi $name\"");
  opts.input = procward_core::spawn::Input::Pty(procward_core::pty::PtySize { cols: 100, rows: 30 });
  let (job, rx) = run(opts);
  let input = job.input.as_ref().unwrap();
  std::thread::sleep(Duration::from_millis(200));
  input.write(b"ada\n").unwrap();
  let (out, exit) = until_exit(&rx);
  assert_eq!(exit.code, Some(0));
  let plain = out.replace("\r\n", "\n");
  assert!(plain.contains("tty\n30 100\n"), "{plain:?}");
  assert!(plain.contains("hi ada"), "{plain:?}");
}

#[test]
fn output_of_a_process_substitution_after_the_shell_exits_arrives_before_the_exit_once() {
  let mut opts = SpawnOptions::new("exec > >(cat; sleep 30); echo done");
  opts.shell = "/bin/bash".into();
  let (_job, rx) = run(opts);
  let (out, exit) = until_exit(&rx);
  assert_eq!(exit.code, Some(0));
  assert_eq!(out, "done\n");
  // Nothing is delivered twice afterwards.
  std::thread::sleep(Duration::from_millis(100));
  let late: String = rx.try_iter().filter_map(|e| if let JobEvent::Output { text, .. } = e { Some(text) } else { None }).collect();
  assert_eq!(late, "");
}

#[cfg(target_os = "linux")]
#[test]
fn with_a_cgroup_a_double_forked_setsid_daemon_of_a_pipe_job_is_still_killed() {
  // Cgroups are named for a session: `proc_` + 12 hex digits.
  let name = format!("proc_{:012x}", 0x7e57_0000_0000u64 + u64::from(std::process::id()));
  let Some(cgroup) = procward_core::cgroup::create(&name) else {
    eprintln!("skipped: this host may not create cgroups (containment falls back to the snapshot)");
    return;
  };
  let mut opts = SpawnOptions::new("(setsid sleep 31 &); echo forked; sleep 30");
  opts.cgroup = Some(cgroup.clone());
  let (job, rx) = run(opts);
  let deadline = Instant::now() + Duration::from_secs(5);
  // Until the daemon has left the process tree: a live member in its own session (setsid)
  // whose parent is no longer in the job (the subshell exited, so it was reparented).
  let daemon = loop {
    let members = procward_core::cgroup::members(&cgroup);
    let table = procward_core::probe::process_table().unwrap();
    let found =
      table.iter().find(|p| members.contains(&p.pid) && !p.is_dead() && p.pgid == p.pid && p.pid != job.pid && !members.contains(&p.ppid));
    if let Some(p) = found {
      break p.pid;
    }
    assert!(Instant::now() < deadline, "no daemon outside the tree: members {members:?}");
    std::thread::sleep(Duration::from_millis(20));
  };
  let tree: Vec<i32> = procward_core::tree::descendants(job.pid).unwrap().iter().map(|p| p.pid).collect();
  assert!(!tree.contains(&daemon));
  let claim = procward_core::kill::CgroupClaim { recorded: name.clone(), session: name.clone() };
  let opts = procward_core::kill::KillOptions { cgroup: Some(claim), grace: Duration::from_millis(300), ..Default::default() };
  let report = procward_core::kill::kill_tree(&job.identity, &opts).unwrap();
  assert!(report.signalled.contains(&daemon), "daemon {daemon}: {report:?}");
  assert!(report.survivors.is_empty());
  until_exit(&rx);
  let deadline = Instant::now() + Duration::from_secs(3);
  while !procward_core::cgroup::remove(&name, &name) && Instant::now() < deadline {
    std::thread::sleep(Duration::from_millis(20));
  }
  assert!(!cgroup.exists());
}

#[cfg(target_os = "linux")]
#[test]
fn the_job_leads_a_new_session_with_default_signals_and_an_empty_mask() {
  // The test harness ignores SIGPIPE; block SIGUSR1 in this thread too. Neither may reach
  // the job (ignored dispositions and the mask survive execve).
  unsafe {
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    libc::sigaddset(&mut set, libc::SIGUSR1);
    libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
  }
  let (job, rx) = run(SpawnOptions::new("grep -E '^Sig(Ign|Blk)' /proc/self/status; exec cat /proc/self/stat"));
  unsafe {
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    libc::sigaddset(&mut set, libc::SIGUSR1);
    libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
  }
  let (out, exit) = until_exit(&rx);
  assert_eq!(exit, ExitInfo::exited(0));
  let mut lines = out.lines();
  assert_eq!(lines.next(), Some("SigBlk:\t0000000000000000"));
  assert_eq!(lines.next(), Some("SigIgn:\t0000000000000000"));
  // /proc/<pid>/stat after the last ')': state, ppid, pgrp, session.
  let stat = lines.next().unwrap();
  let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
  assert_eq!((fields[2], fields[3]), (job.pid.to_string().as_str(), job.pid.to_string().as_str()), "{stat}");
}

#[test]
fn durable_stdin_fifo_takes_writes_from_anyone_and_sigusr1_to_the_supervisor_ends_it() {
  let dir = std::env::temp_dir().join(format!("procward-core-durable-stdin-{}", std::process::id()));
  let mut opts = durable("read a; echo got $a; cat; echo after-eof", &dir, 0);
  let fifo = dir.join("stdin");
  if let Capture::Durable { stdin_fifo, .. } = &mut opts.capture {
    *stdin_fifo = Some(fifo.clone());
  }
  let (job, rx) = run(opts);
  use std::io::Write;
  use std::os::unix::fs::{FileTypeExt, PermissionsExt};
  let meta = std::fs::metadata(&fifo).unwrap();
  assert!(meta.file_type().is_fifo());
  assert_eq!(meta.permissions().mode() & 0o777, 0o600);
  // Two writers, one after the other (as two CLI invocations would be): no EOF between them.
  std::fs::OpenOptions::new().write(true).open(&fifo).unwrap().write_all(b"first\n").unwrap();
  std::thread::sleep(Duration::from_millis(200));
  std::fs::OpenOptions::new().write(true).open(&fifo).unwrap().write_all(b"second\n").unwrap();
  std::thread::sleep(Duration::from_millis(200));
  assert!(rx.try_iter().all(|e| !matches!(e, JobEvent::Exit(_))), "the job saw EOF before close");
  unsafe { libc::kill(job.pid, libc::SIGUSR1) };
  let (_, exit) = until_exit(&rx);
  assert_eq!(exit, ExitInfo::exited(0));
  assert_eq!(std::fs::read_to_string(dir.join("output.log")).unwrap(), "got first\nsecond\nafter-eof\n");
  std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_close_request_right_after_the_spawn_is_held_not_fatal() {
  let dir = std::env::temp_dir().join(format!("procward-core-durable-early-usr1-{}", std::process::id()));
  let mut opts = durable("cat; echo eof", &dir, 0);
  if let Capture::Durable { stdin_fifo, .. } = &mut opts.capture {
    *stdin_fifo = Some(dir.join("stdin"));
  }
  let (job, rx) = run(opts);
  // Before the supervisor has even loaded: it starts with SIGUSR1 blocked.
  unsafe { libc::kill(job.pid, libc::SIGUSR1) };
  let (_, exit) = until_exit(&rx);
  assert_eq!(exit, ExitInfo::exited(0));
  assert_eq!(std::fs::read_to_string(dir.join("output.log")).unwrap(), "eof\n");
  std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_durable_job_also_starts_with_default_signals_and_an_empty_mask() {
  let dir = std::env::temp_dir().join(format!("procward-core-durable-signals-{}", std::process::id()));
  let (_job, rx) = run(durable("grep -E '^Sig(Blk|Ign)' /proc/self/status", &dir, 0));
  let (_, exit) = until_exit(&rx);
  assert_eq!(exit, ExitInfo::exited(0));
  assert_eq!(std::fs::read_to_string(dir.join("output.log")).unwrap(), "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
  std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_shell_is_found_before_anything_starts_in_both_modes() {
  let dir = std::env::temp_dir().join(format!("procward-core-shell-{}", std::process::id()));
  std::fs::create_dir_all(&dir).unwrap();
  // A planted `sh` in the job's cwd is never picked up for a bare name.
  let planted = dir.join("sh");
  std::fs::write(&planted, "#!/bin/sh\necho planted\n").unwrap();
  use std::os::unix::fs::PermissionsExt;
  std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
  for durable_mode in [false, true] {
    let mode = |cmd: &str, shell: &str| {
      let mut o = if durable_mode { durable(cmd, &dir.join("d"), 0) } else { SpawnOptions::new(cmd) };
      o.shell = shell.into();
      o.cwd = Some(dir.clone());
      o
    };
    let (_job, rx) = run(mode("echo real", "sh"));
    let (out, exit) = until_exit(&rx);
    if !durable_mode {
      assert_eq!((out.as_str(), exit), ("real\n", ExitInfo::exited(0)));
    }
    let err = spawn(mode("echo x", "/nonexistent/sh"), Box::new(|_| {})).unwrap_err();
    assert_eq!(err.code(), "ENOENT", "durable {durable_mode}: {err}");
    let err = spawn(mode("echo x", "/etc/passwd"), Box::new(|_| {})).unwrap_err();
    assert_eq!(err.code(), "EACCES", "durable {durable_mode}: {err}");
    let err = spawn(mode("echo x", "no-such-shell-anywhere"), Box::new(|_| {})).unwrap_err();
    assert_eq!(err.code(), "ENOENT", "durable {durable_mode}: {err}");
  }
  assert_eq!(std::fs::read_to_string(dir.join("d").join("output.log")).unwrap(), "real\n");
  std::fs::remove_dir_all(&dir).unwrap();
}
