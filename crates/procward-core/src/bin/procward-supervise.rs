//! `procward-supervise --log <output.log> [--part-bytes <n>] [--stdin-fifo <path>] <exit-file> <program> [args...]`
//!
//! The parent of a durable job. It runs `<program> [args...]` (the job: `sh -c <command>`)
//! and:
//! - records its own identity in `supervisor.json` beside the exit file when it starts;
//! - owns the job's output: stdout and stderr go to a pipe that it copies into the log,
//!   rotating parts of `--part-bytes` (0 = never; see `procward_core::logfile`);
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
//! It ignores SIGHUP, SIGINT, SIGTERM and SIGPIPE so that the host's exit and the SIGTERM
//! of a tree kill (which reaches the whole process group) leave it alive to record how the
//! job ended (through a handler that does nothing, so the job gets default dispositions). A SIGKILL of the group ends it
//! too, and then no exit file is written (the killer knows what it did). A SIGKILL of the
//! supervisor alone closes the job's output pipe: its next write fails with EPIPE/SIGPIPE.

#[cfg(not(unix))]
fn main() {
  eprintln!("procward-supervise: durable jobs are not supported on this platform yet");
  std::process::exit(70);
}

#[cfg(unix)]
fn main() {
  unix::main()
}

#[cfg(unix)]
mod unix {
  use nix::poll::PollTimeout;
  use procward_core::job::DrainOptions;
  use procward_core::logfile::RotatingLog;
  use procward_core::reader::poll_ready;
  use procward_core::spawn::pipe_cloexec;
  use procward_core::status::ExitInfo;
  use std::ffi::OsString;
  use std::fs::File;
  use std::io::{ErrorKind, Read, Write};
  use std::os::fd::IntoRawFd;
  use std::os::fd::{AsFd, OwnedFd};
  use std::os::unix::fs::OpenOptionsExt;
  use std::path::PathBuf;
  use std::process::{Command, Stdio};
  use std::sync::atomic::{AtomicI32, Ordering};
  use std::sync::mpsc;
  use std::time::{Duration, Instant};

  struct Args {
    log: PathBuf,
    part_bytes: u64,
    stdin_fifo: Option<PathBuf>,
    exit: PathBuf,
    program: OsString,
    rest: Vec<OsString>,
  }

  fn usage() -> ! {
    eprintln!("usage: procward-supervise --log <output.log> [--part-bytes <n>] [--stdin-fifo <path>] <exit-file> <program> [args...]");
    std::process::exit(64);
  }

  fn parse() -> Args {
    let mut args = std::env::args_os().skip(1).peekable();
    let (mut log, mut part_bytes, mut stdin_fifo) = (None, 0u64, None);
    while let Some(flag) = args.peek().and_then(|a| a.to_str()).filter(|a| a.starts_with("--")).map(str::to_owned) {
      args.next();
      let value = args.next().unwrap_or_else(|| usage());
      match flag.as_str() {
        "--log" => log = Some(PathBuf::from(value)),
        "--stdin-fifo" => stdin_fifo = Some(PathBuf::from(value)),
        "--part-bytes" => part_bytes = value.to_str().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage()),
        _ => usage(),
      }
    }
    let (Some(log), Some(exit), Some(program)) = (log, args.next(), args.next()) else { usage() };
    Args { log, part_bytes, stdin_fifo, exit: PathBuf::from(exit), program, rest: args.collect() }
  }

  /// Reaps every child (the job and adopted orphans) until the job itself has ended.
  fn wait_for(job: libc::pid_t) -> ExitInfo {
    loop {
      let mut status = 0;
      let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
      if pid == job {
        return if libc::WIFSIGNALED(status) {
          ExitInfo::signalled(libc::WTERMSIG(status))
        } else {
          ExitInfo::exited(libc::WEXITSTATUS(status))
        };
      }
      if pid < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
        // ECHILD: the job is gone without a status we could read.
        return ExitInfo::exited(127);
      }
    }
  }

  /// Copies the job's output into the log until the pipe's last writer closes it. After
  /// `exited` becomes readable it reports on `drained` once the output has settled.
  fn copy_output(pipe: OwnedFd, exited: OwnedFd, mut log: RotatingLog, drained: mpsc::Sender<()>) {
    let drain = DrainOptions::default();
    let mut pipe = File::from(pipe);
    let mut buf = vec![0u8; 256 * 1024];
    let mut exit_at: Option<Instant> = None;
    let mut after_exit = 0usize;
    let mut reported = false;
    loop {
      let wait = match exit_at {
        Some(at) if !reported => {
          PollTimeout::try_from(drain.idle.min(drain.max_wait.saturating_sub(at.elapsed())).as_millis() as i32).unwrap_or(PollTimeout::ZERO)
        }
        _ => PollTimeout::NONE,
      };
      let other = if exit_at.is_none() { Some(exited.as_fd()) } else { None };
      let Some((pipe_ready, exit_ready)) = poll_ready(pipe.as_fd(), other, wait) else { continue };
      let just_exited = exit_ready && exit_at.is_none();
      if just_exited {
        exit_at = Some(Instant::now());
      }
      let mut eof = false;
      if pipe_ready {
        match pipe.read(&mut buf) {
          Ok(0) => eof = true,
          Ok(n) => {
            log.write(&buf[..n]);
            if exit_at.is_some() {
              after_exit += n;
            }
          }
          Err(e) if e.kind() == ErrorKind::Interrupted => {}
          Err(_) => eof = true,
        }
      }
      if let (Some(at), false) = (exit_at, reported) {
        let idle = !pipe_ready && !just_exited;
        if eof || idle || after_exit >= drain.byte_cap || at.elapsed() >= drain.max_wait {
          let _ = drained.send(());
          reported = true;
        }
      }
      if eof {
        break;
      }
    }
    log.finish();
  }

  extern "C" fn ignore(_: libc::c_int) {}

  /// Our write end of the job's stdin FIFO (-1: none, or closed).
  static STDIN_KEEPER: AtomicI32 = AtomicI32::new(-1);

  /// SIGUSR1: close our write end of the stdin FIFO (close(2) is async-signal-safe).
  extern "C" fn close_stdin(_: libc::c_int) {
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

  pub fn main() {
    let args = parse();
    // A handler that does nothing, not SIG_IGN: handlers fall back to the default at
    // execve (and the job's pre_exec hook resets every disposition anyway). SIGPIPE is
    // ignored by the Rust runtime already.
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
    let mut log = match RotatingLog::open(&args.log, args.part_bytes) {
      Ok(l) => l,
      Err(e) => {
        eprintln!("procward-supervise: cannot open {}: {e}", args.log.display());
        std::process::exit(70);
      }
    };
    log.capture_stderr();
    let pipes = pipe_cloexec().and_then(|out| Ok((out, pipe_cloexec()?)));
    let ((out_r, out_w), (exited_r, exited_w)) = match pipes {
      Ok(p) => p,
      Err(e) => {
        log.note(&format!("cannot create pipes: {e}"));
        finish(&args, ExitInfo::exited(127));
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
        Err(e) => log.note(&format!("cannot open the stdin FIFO {}: {e}; stdin is /dev/null", fifo.display())),
      }
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
        log.note(&format!("cannot duplicate the output pipe: {e}"));
        finish(&args, ExitInfo::exited(127));
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
    if let Err(e) = &spawned {
      log.note(&format!("cannot start {:?}: {e}", args.program));
    }
    // Who we are, for a host that must find this job without a checkpoint entry (its host
    // crashed between the spawn and the checkpoint write). Written once the job runs, so
    // the file system's latency overlaps the job's start; one write to a new file, neither
    // renamed nor fsynced: a reader takes a partial file for "not written yet", and after a
    // reboot the identity is void anyway (boot id).
    if let Ok(Some(me)) = procward_core::identity::identity(std::process::id() as i32) {
      let text = format!("{{\"pid\":{},\"startTime\":\"{}\",\"bootId\":\"{}\"}}\n", me.pid, me.start_time, me.boot_id);
      let path = args.exit.with_file_name("supervisor.json");
      if let Err(e) = write_new(&path, &text) {
        log.note(&format!("cannot record identity in {}: {e}", path.display()));
      }
    }
    let (drained_tx, drained_rx) = mpsc::channel();
    let copier = std::thread::Builder::new().stack_size(128 * 1024).spawn(move || copy_output(out_r, exited_r, log, drained_tx));
    let copier = match copier {
      Ok(c) => c,
      Err(e) => {
        eprintln!("procward-supervise: cannot start the output copier: {e}");
        std::process::exit(70);
      }
    };
    let info = match spawned {
      Ok(child) => wait_for(child.id() as libc::pid_t),
      Err(_) => ExitInfo::exited(127),
    };
    // The job's stdin closes with it (as a host's pipe does): a background reader of the
    // same stdin gets EOF instead of waiting for a writer that will never come.
    close_stdin(libc::SIGUSR1);
    let ended_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    // Tell the copier the job ended; it answers once the output has settled (or at EOF).
    drop(File::from(exited_w).write_all(b"x"));
    let _ = drained_rx.recv();
    if !write_exit(&args.exit, &info.to_json_at(ended_at)) {
      std::process::exit(70);
    }
    let _ = copier.join();
  }

  /// Writes the exit file, retrying while it cannot be written (a full disk, no inodes):
  /// every 50 ms at first, backing off to every 5 s, for as long as this process lives. The
  /// job's end is known only here, and a host takes a supervisor that is gone without an exit
  /// file for `lost`; while we retry, hosts see the job running. A failed attempt's partial
  /// file is removed (readers take it for "not yet" meanwhile). Gives up (false) only when
  /// the session directory is gone: the session was pruned or removed, and no one will read
  /// the file.
  fn write_exit(path: &std::path::Path, text: &str) -> bool {
    let mut delay = Duration::from_millis(50);
    let mut reported = false;
    loop {
      match write_new(path, text) {
        Ok(()) => return true,
        Err(e) if e.kind() == ErrorKind::NotFound => {
          let _ = writeln!(std::io::stderr(), "procward-supervise: cannot write {}: {e}; the session directory is gone", path.display());
          return false;
        }
        Err(e) => {
          if !reported {
            // Not eprintln!, which panics when stderr (the log, on the same full disk) fails.
            let _ = writeln!(std::io::stderr(), "procward-supervise: cannot write {}: {e}; retrying until it can", path.display());
            reported = true;
          }
          // Ours (a partial write) or not, a file there that is not our end must go: the
          // supervisor alone writes the exit file.
          let _ = std::fs::remove_file(path);
        }
      }
      std::thread::sleep(delay);
      delay = (delay * 2).min(Duration::from_secs(5));
    }
  }

  /// `supervisor.json` and the exit file: one write to a new file (0600). Cheaper than a
  /// rename on a metadata-bound disk, and as safe for readers: both texts end with `}` and a
  /// newline, and a reader takes anything shorter for "not written yet". Not fsynced: they
  /// must outlive the host, whose crash leaves the page cache intact; a power loss ends the
  /// job too, and then its end is `lost` at worst.
  fn write_new(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    f.write_all(text.as_bytes())
  }

  fn finish(args: &Args, info: ExitInfo) -> ! {
    std::process::exit(if write_exit(&args.exit, &info.to_json()) { 0 } else { 70 })
  }
}
