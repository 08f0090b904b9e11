//! `procward-supervise --log <output.log> [--part-bytes <n>] [--stdin-fifo <path>]
//! [--stdin-pipe <name>] [--session-record <session.json>] <exit-file> <program> [args...]`
//!
//! The parent of a durable job. It runs `<program> [args...]` (the job: `sh -c <command>`)
//! and:
//! - with `--session-record`, first creates the session directory and writes the record the
//!   host sent on stdin, with our identity as its `pid` and `identity`, to `session.json`
//!   (by a temporary file and a rename), and only then
//!   starts the job: no job runs without its record on disk, and the host's event loop never
//!   waits for the disk to create them (on a metadata-bound disk each new inode costs
//!   0.3-1 ms). If they cannot be written the job is not started: the exit file says 127
//!   when the directory exists, else nothing is written and hosts see the job `lost`;
//! - records its own identity in `supervisor.json` beside the exit file once the job runs;
//! - owns the job's output: stdout and stderr go to a pipe that it copies into the log,
//!   rotating parts of `--part-bytes` (0 = never; see `procward_core::logfile`). The log is
//!   created with the first byte of output (or a note of the supervisor's own), after the
//!   job started: a job that writes nothing has no log, which readers take for empty;
//! - waits for the job, keeps reading until the pipe has been idle 40 ms (at most 120 ms or
//!   1 MiB after the exit, like the host's own reader), then writes the job's exact end —
//!   exit code or terminating signal, and when — to `<exit-file>` (one write to a new file,
//!   which readers take as written only once it is whole). A shell wrapper cannot
//!   do this: `$?` is 128+N for both "killed by signal N" and `exit 128+N`;
//! - with `--stdin-fifo`, gives the job the read end of that FIFO as stdin and keeps a write
//!   end open itself, so the job sees no EOF between writers: any host may open the FIFO and
//!   write (the job's input outlives the host that started it), and SIGUSR1 to the
//!   supervisor closes its write end, so the job gets EOF once no writer is left (it is
//!   also closed when the job ends, for a background reader of the same stdin). The
//!   host starts the supervisor with SIGUSR1 blocked; it is unblocked once the handler and
//!   the write end exist, so an early request is held, not fatal;
//! - stays until the last holder of the pipe (a grandchild such as `sleep 30 &`) closes it,
//!   so late output still reaches the log and nobody gets SIGPIPE; the exit file, not the
//!   supervisor's own exit, is the job's end.
//!
//! One thread does all of it: the output pipe and a self-pipe written by the SIGCHLD handler
//! are polled together (a second thread cost a thread start and a hand-over per job, which
//! a loaded machine schedules late).
//!
//! It ignores SIGHUP, SIGINT, SIGTERM and SIGPIPE so that the host's exit and the SIGTERM
//! of a tree kill (which reaches the whole process group) leave it alive to record how the
//! job ended (through a handler that does nothing, so the job gets default dispositions). A
//! SIGKILL of the group ends it too, and then no exit file is written (the killer knows what
//! it did). A SIGKILL of the supervisor alone closes the job's output pipe: its next write
//! fails with EPIPE/SIGPIPE.
//!
//! On Windows (`procward-supervise/windows.rs`) the command line and the files are the same;
//! the job runs in Job Objects the supervisor holds, its stdin is the named pipe of
//! `--stdin-pipe` (`procward-supervise/stdinpipe.rs`; `--stdin-fifo` is Unix-only), and
//! `--ctrl-break <pid>` is the tree kill's graceful step (`procward-supervise/ctrlbreak.rs`).
//!
//! `procward-supervise --guardian` (Unix, `procward-supervise/guardian.rs`) is another role:
//! one per host, it tree-kills the host's in-memory jobs once the host has ended.

#[cfg(not(any(unix, windows)))]
fn main() {
  eprintln!("procward-supervise: durable jobs are not supported on this platform");
  std::process::exit(70);
}

#[cfg(unix)]
fn main() {
  guardian::run_if_asked();
  unix::main()
}

#[cfg(unix)]
#[path = "procward-supervise/guardian.rs"]
mod guardian;

#[cfg(windows)]
fn main() {
  ctrlbreak::run_if_asked();
  windows::main()
}

#[cfg(windows)]
#[path = "procward-supervise/ctrlbreak.rs"]
mod ctrlbreak;

#[cfg(any(unix, windows))]
#[path = "procward-supervise/files.rs"]
mod files;

#[cfg(any(unix, windows))]
#[path = "procward-supervise/output.rs"]
mod output;

#[cfg(any(unix, windows))]
#[path = "procward-supervise/ended.rs"]
mod ended;

#[cfg(any(unix, windows))]
#[path = "procward-supervise/deadline.rs"]
mod deadline;

#[cfg(unix)]
#[path = "procward-supervise/copy.rs"]
mod copy;

#[cfg(windows)]
#[path = "procward-supervise/windows.rs"]
mod windows;

#[cfg(windows)]
#[path = "procward-supervise/stdinpipe.rs"]
mod stdinpipe;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// The command line, the same on every platform (each takes the stdin flag it knows).
pub struct Args {
  pub log: PathBuf,
  pub part_bytes: u64,
  /// Unix: the job's stdin FIFO.
  #[cfg_attr(not(unix), allow(dead_code))]
  stdin_fifo: Option<PathBuf>,
  /// Windows: the name of the named pipe to serve as the job's stdin.
  #[cfg_attr(not(windows), allow(dead_code))]
  stdin_pipe: Option<OsString>,
  session_record: Option<PathBuf>,
  /// `--timeout-ms`: the job's kill-after deadline, from its start (see `deadline`).
  #[cfg_attr(not(any(unix, windows)), allow(dead_code))]
  timeout: Option<Duration>,
  /// `--timeout-grace-ms`: between the deadline's SIGTERM and SIGKILL. Default 2 s.
  #[cfg_attr(not(any(unix, windows)), allow(dead_code))]
  timeout_grace: Duration,
  pub exit: PathBuf,
  program: OsString,
  rest: Vec<OsString>,
}

fn usage() -> ! {
  eprintln!("usage: procward-supervise --log <output.log> [--part-bytes <n>] [--stdin-fifo <path>] [--stdin-pipe <name>] [--session-record <session.json>] [--timeout-ms <n> [--timeout-grace-ms <n>]] <exit-file> <program> [args...]");
  std::process::exit(64);
}

fn parse() -> Args {
  let mut args = std::env::args_os().skip(1).peekable();
  let (mut log, mut part_bytes, mut stdin_fifo, mut stdin_pipe, mut session_record) = (None, 0u64, None, None, None);
  let (mut timeout, mut timeout_grace) = (None, Duration::from_secs(2));
  let millis = |v: &OsString| v.to_str().and_then(|v| v.parse::<u64>().ok()).map(Duration::from_millis).unwrap_or_else(|| usage());
  while let Some(flag) = args.peek().and_then(|a| a.to_str()).filter(|a| a.starts_with("--")).map(str::to_owned) {
    args.next();
    let value = args.next().unwrap_or_else(|| usage());
    match flag.as_str() {
      "--log" => log = Some(PathBuf::from(value)),
      "--stdin-fifo" => stdin_fifo = Some(PathBuf::from(value)),
      "--stdin-pipe" => stdin_pipe = Some(value),
      "--session-record" => session_record = Some(PathBuf::from(value)),
      "--part-bytes" => part_bytes = value.to_str().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage()),
      "--timeout-ms" => timeout = Some(millis(&value)).filter(|d| !d.is_zero()).or_else(|| usage()),
      "--timeout-grace-ms" => timeout_grace = millis(&value),
      _ => usage(),
    }
  }
  let (Some(log), Some(exit), Some(program)) = (log, args.next(), args.next()) else { usage() };
  Args {
    log,
    part_bytes,
    stdin_fifo,
    stdin_pipe,
    session_record,
    timeout,
    timeout_grace,
    exit: PathBuf::from(exit),
    program,
    rest: args.collect(),
  }
}

/// With `--session-record`, writes `session.json` (with our identity) before anything
/// starts; when it cannot be written, starts nothing (see [`failed_start`]).
#[cfg(any(unix, windows))]
fn record_session_first(args: &Args, identity: Option<&str>, mut notes: Vec<String>) -> Vec<String> {
  if let Some(path) = &args.session_record {
    if let Err(e) = files::read_record().and_then(|record| files::record_session(path, &record, identity)) {
      notes.push(format!("cannot record the session in {}: {e}; the job was not started", path.display()));
      failed_start(args, notes);
    }
  }
  notes
}

/// Starts nothing and ends: the exit file says 127 (the job could not start) unless the
/// session directory is gone.
#[cfg(any(unix, windows))]
fn failed_start(args: &Args, notes: Vec<String>) -> ! {
  drop(output::Output::new(args, notes));
  std::process::exit(if files::write_exit(&args.exit, &procward_core::status::ExitInfo::exited(127).to_json()) { 0 } else { 70 })
}

#[cfg(unix)]
mod unix {
  use crate::copy;
  use crate::files;
  use crate::output::Output;
  pub use crate::Args;
  use crate::{failed_start, parse, record_session_first};
  use procward_core::spawn::pipe_cloexec;
  use std::fs::File;
  use std::os::fd::IntoRawFd;
  use std::process::{Command, Stdio};
  use std::sync::atomic::{AtomicI32, Ordering};

  extern "C" fn ignore(_: libc::c_int) {}

  /// Our write end of the job's stdin FIFO (-1: none, or closed).
  static STDIN_KEEPER: AtomicI32 = AtomicI32::new(-1);

  /// SIGUSR1: close our write end of the stdin FIFO (close(2) is async-signal-safe).
  pub extern "C" fn close_stdin(_: libc::c_int) {
    let fd = STDIN_KEEPER.swap(-1, Ordering::SeqCst);
    if fd >= 0 {
      unsafe { libc::close(fd) };
    }
  }

  /// Opens the FIFO for the job (read end, blocking) and for us (write end, kept).
  fn open_stdin_fifo(path: &std::path::Path) -> std::io::Result<(File, File)> {
    use std::os::unix::fs::OpenOptionsExt;
    // A non-blocking open for reading succeeds without a writer; then ours cannot block.
    let read = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let keep = std::fs::OpenOptions::new().write(true).open(path)?;
    nix::fcntl::fcntl(&read, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()))?;
    Ok((read, keep))
  }

  fn unblock_usr1() {
    unsafe {
      let mut set: libc::sigset_t = std::mem::zeroed();
      libc::sigemptyset(&mut set);
      libc::sigaddset(&mut set, libc::SIGUSR1);
      libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
  }

  /// A handler that does nothing for SIGHUP, SIGINT and SIGTERM, not SIG_IGN: handlers fall
  /// back to the default at execve (and the job's pre_exec hook resets every disposition
  /// anyway). SIGPIPE is ignored by the Rust runtime already. SIGUSR1 closes the stdin FIFO.
  fn install_handlers() {
    unsafe {
      let mut sa: libc::sigaction = std::mem::zeroed();
      sa.sa_sigaction = ignore as *const () as libc::sighandler_t;
      sa.sa_flags = libc::SA_RESTART;
      for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
        libc::sigaction(sig, &sa, std::ptr::null_mut());
      }
      sa.sa_sigaction = close_stdin as *const () as libc::sighandler_t;
      libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
    }
  }

  pub fn main() {
    let args = parse();
    install_handlers();
    // What goes into the log once it exists (it is created after the job starts).
    let identity = files::own_identity();
    let mut notes = record_session_first(&args, identity.as_deref(), Vec::new());
    let children = match copy::Children::watch() {
      Ok(c) => c,
      Err(e) => {
        notes.push(format!("cannot watch the job's end: {e}"));
        failed_start(&args, notes);
      }
    };
    let (out_r, out_w) = match pipe_cloexec() {
      Ok(p) => p,
      Err(e) => {
        notes.push(format!("cannot create the output pipe: {e}"));
        failed_start(&args, notes);
      }
    };
    let mut cmd = Command::new(&args.program);
    cmd.args(&args.rest);
    if let Some(fifo) = &args.stdin_fifo {
      match open_stdin_fifo(fifo) {
        Ok((read, keep)) => {
          cmd.stdin(Stdio::from(read));
          STDIN_KEEPER.store(keep.into_raw_fd(), Ordering::SeqCst);
        }
        Err(e) => {
          notes.push(format!("cannot open the stdin FIFO {}: {e}; stdin is /dev/null", fifo.display()));
          cmd.stdin(Stdio::null());
        }
      }
    } else if args.session_record.is_some() {
      // Our stdin was the record's pipe.
      cmd.stdin(Stdio::null());
    }
    unblock_usr1();
    // Default dispositions and an empty mask for the job. Without this hook std would use
    // glibc's posix_spawn, which leaves glibc's internal signals 32 and 33 ignored.
    #[cfg(target_os = "linux")]
    unsafe {
      use std::os::unix::process::CommandExt;
      cmd.pre_exec(|| {
        procward_core::launch::reset_signal_dispositions();
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        Ok(())
      });
    }
    match out_w.try_clone() {
      Ok(w2) => cmd.stdout(Stdio::from(out_w)).stderr(Stdio::from(w2)),
      Err(e) => {
        notes.push(format!("cannot duplicate the output pipe: {e}"));
        failed_start(&args, notes);
      }
    };
    // A child subreaper (Linux 3.4+) adopts the job's orphans (double forks, `(cmd &)`), so
    // they stay descendants of the session and a tree kill still finds them.
    #[cfg(target_os = "linux")]
    unsafe {
      libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let spawned = cmd.spawn();
    // Our copies of the write ends must go, or the pipe never reaches EOF.
    drop(cmd);
    let job = match spawned {
      Ok(child) => child.id() as libc::pid_t,
      Err(e) => {
        notes.push(format!("cannot start {:?}: {e}", args.program));
        failed_start(&args, notes);
      }
    };
    // Written once the job runs, so the file system's latency overlaps the job's start. It
    // names the job too (its zombie still has its start time if it ended already).
    let job_start = match procward_core::probe::probe_one(job) {
      procward_core::probe::Probe::Found(p) => Some(p.start_time),
      _ => None,
    };
    let recorded = match job_start {
      Some(start) => files::with_job(identity.as_deref(), job as u32, start),
      None => identity.clone(),
    };
    if let Err(note) = files::record_identity(&args.exit, recorded.as_deref()) {
      notes.push(note);
    }
    let out = Output::new(&args, notes);
    let deadline = args.timeout.map(|after| crate::deadline::Deadline::new(after, args.timeout_grace));
    let code = copy::run(&args, job, out_r, children, out, deadline);
    std::process::exit(code)
  }
}
