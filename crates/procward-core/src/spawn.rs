//! Spawning a job: `<shell> <shell_args...> <command>` in a new session (`setsid`), so its
//! process group id equals its PID and a tree kill can address the whole group.
//!
//! Two capture modes:
//! - [`Capture::Pipe`]: stdout and stderr share one pipe (merged in arrival order); the
//!   reactor (one thread for every job) drains it without ever hanging on a grandchild that
//!   keeps the pipe open.
//! - [`Capture::Durable`]: the job is started under `procward-supervise`, which copies its
//!   output into a rotating log file and writes its exact exit status to an exit file; the
//!   job's pipe ends in the supervisor, not the host, so the job survives the host (no
//!   SIGPIPE) and its output and exit status outlive it. The reactor follows the log while
//!   the host lives.
//!
//! A command over 64 KiB reaches a POSIX shell through an inherited descriptor instead of
//! `-c` (see `script`); at most 1 MiB ([`crate::job::MAX_COMMAND_BYTES`]) on every platform.
//!
//! stdin is `/dev/null`. Every signal disposition is reset to default and the signal mask
//! cleared in the child (Node ignores SIGPIPE, and ignored dispositions survive `exec`).

use crate::error::{Error, Result};
use crate::identity::identity_of_child;
use crate::job::{check_command_length, Launched};
use crate::pty::{self, InputKind, JobInput};
use crate::reactor::{self, Followed};
use crate::reader::{LogCapture, PipeCapture};
use crate::script;
use crate::started::{pty_sink, recording_sink};
use crate::tail::Tail;
use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

// Their home is `job`; re-exported where they were first published.
pub use crate::job::{default_shell, Capture, EventSink, Input, SpawnOptions};
pub use crate::started::Job;
pub use crate::unixpipe::pipe_cloexec;

/// Output pipe capacity requested from the kernel (bytes).
#[cfg(target_os = "linux")]
const PIPE_SIZE: libc::c_int = 256 * 1024;

/// Starts the job and hands its capture to the reactor (started with the first job).
///
/// Errors: `InvalidInput` for an empty command or one over 1 MiB (the message names the
/// limit); `Io` when the pipe, the log file, the script's descriptor, the spawn
/// or the exec fails (for example `ENOENT` for a missing shell or cwd, `EMFILE` when the
/// host is out of file descriptors), or when the reactor cannot start; the job is killed
/// and reaped then.
pub fn spawn(opts: SpawnOptions, sink: EventSink) -> Result<Job> {
  if opts.command.is_empty() {
    return Err(Error::InvalidInput("command is empty".into()));
  }
  check_command_length(&opts.command)?;
  if matches!(opts.input, Input::Pty(_)) && matches!(opts.capture, Capture::Durable { .. }) {
    return Err(Error::InvalidInput("a PTY session cannot be durable: the terminal closes with the host".into()));
  }
  // The shell is found before anything starts, the same way for both modes: a durable job
  // must not "start" only for its supervisor to report that the shell is missing.
  let shell = find_program(&opts.shell, &opts).map_err(|e| Error::io(format!("finding the shell {}", opts.shell.display()), e))?;
  let script = match script::needs_descriptor(&opts.command, &shell) {
    true => Some(script::script_descriptor(&opts.command).map_err(|e| Error::io("passing the command through a descriptor", e))?),
    false => None,
  };
  let (program, args) = command_line(&opts, &shell, script.is_some());
  let dup = |fd: &OwnedFd, what: &str| fd.try_clone().map_err(|e| Error::io(format!("duplicating the {what}"), e));

  // The job's stdin, stdout and stderr, and the host's ends of them.
  let (stdin, mut input, pty_master) = match opts.input {
    // The supervisor reads the session record from its stdin (and gives the job /dev/null).
    Input::Null if matches!(opts.capture, Capture::Durable { .. }) && opts.session_record.is_some() => {
      (record_pipe(opts.session_record.as_deref().unwrap_or_default())?, None, None)
    }
    Input::Null => (dev_null(false)?, None, None),
    Input::Pipe => {
      let (r, w) = pipe_cloexec().map_err(|e| Error::io("creating the stdin pipe", e))?;
      (r, Some(JobInput::new(w, InputKind::Pipe)?), None)
    }
    Input::Pty(size) => {
      let (master, slave) = pty::open(size)?;
      let reader = dup(&master, "PTY")?;
      (slave, Some(JobInput::new(master, InputKind::Pty)?), Some(reader))
    }
  };
  let (stdout, stderr, read_end) = match &opts.capture {
    Capture::Pipe if pty_master.is_some() => (dup(&stdin, "PTY")?, dup(&stdin, "PTY")?, pty_master),
    Capture::Pipe => {
      let (r, w) = pipe_cloexec().map_err(|e| Error::io("creating the output pipe", e))?;
      // A larger pipe means fewer, larger reads under output floods (Linux; best effort).
      #[cfg(target_os = "linux")]
      unsafe {
        libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&r), libc::F_SETPIPE_SZ, PIPE_SIZE);
      }
      (dup(&w, "output pipe")?, w, Some(r))
    }
    Capture::Durable { stdin_fifo, .. } => {
      if let Some(fifo) = stdin_fifo {
        nix::unistd::mkfifo(fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))
          .map_err(|e| Error::io(format!("creating the stdin FIFO {}", fifo.display()), e.into()))?;
      }
      // The supervisor creates the log and copies the job's output into it (its own last
      // words go there too); the host only follows it.
      (dev_null(true)?, dev_null(true)?, None)
    }
  };
  // Opened before the spawn: the job starts inside its cgroup, or joins it before execve.
  let cgroup_procs = opts.cgroup.as_ref().and_then(|dir| OpenOptions::new().write(true).open(dir.join("cgroup.procs")).ok());
  let cgroup_dir = cgroup_procs.as_ref().and(opts.cgroup.as_ref()).and_then(|dir| {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY).open(dir).ok()
  });
  let stdio = [&stdin, &stdout, &stderr];

  // The command itself stays out of error messages: it may carry secrets.
  let what = || {
    let cwd = opts.cwd.as_ref().map_or_else(|| "the host's cwd".to_string(), |c| c.display().to_string());
    format!("starting {} in {cwd}", opts.shell.display())
  };
  let script_fd = script.as_ref().map(|s| &s.fd);
  let mut child = launch(&opts, &program, &args, stdio, script_fd, cgroup_procs.as_ref(), cgroup_dir.as_ref()).map_err(|e| match e.raw_os_error() {
    Some(libc::E2BIG) => Error::io(
      format!("{}: the command ({} bytes) is over execve's limit for one argument, and only a POSIX shell (sh, bash, dash, zsh, ksh) takes a long command through a descriptor", what(), opts.command.len()),
      e,
    ),
    _ => Error::io(what(), e),
  })?;
  drop((cgroup_procs, cgroup_dir, script));
  // The job's ends must close here, or the output pipe never reaches EOF.
  drop((stdin, stdout, stderr));
  let pid = child.pid;
  // From here on the job runs: a failure must not leave it running untracked.
  let identity = match identity_of_child(pid) {
    Ok(id) => id,
    Err(e) => {
      abandon(&mut child);
      return Err(Error::io(format!("reading identity of {pid}"), e));
    }
  };
  let pidfd = pidfd_open(pid);
  let tail = Tail::shared(opts.tail_limit);
  let exit = Arc::new(Mutex::new(None));
  let sink = recording_sink(tail.clone(), exit.clone(), opts.forward_output, sink);
  // A PTY's output goes through its emulator, which answers the job's queries.
  let (sink, terminal) = pty_sink(opts.input, input.as_mut(), sink);

  let followed: Box<dyn Followed> = match (read_end, opts.capture) {
    (Some(r), _) => {
      // The reactor reads until EAGAIN. A PTY master's copy shares its file description
      // with the input side, which is non-blocking already.
      if let Err(e) = crate::unixpipe::nonblocking(&r) {
        abandon(&mut child);
        return Err(Error::io("making the output pipe non-blocking", e));
      }
      Box::new(PipeCapture::new(r, child, pidfd, opts.drain, sink))
    }
    (None, Capture::Durable { log_path, exit_path, .. }) => Box::new(LogCapture::new(log_path, exit_path, child, pidfd, sink)),
    (None, Capture::Pipe) => unreachable!("pipe capture always has a read end"),
  };
  if let Err(e) = reactor::follow(followed) {
    // The capture (and with it the child's handle) was dropped: kill and reap by PID.
    abandon(&mut Launched::new(pid));
    return Err(Error::io("starting the reactor", e));
  }
  Ok(Job { pid, identity, input, tail, exit, terminal })
}

/// The program and its arguments: `<shell> <shell_args...> <command>` (or the stub that
/// sources the command's descriptor, `by_descriptor`), under the supervisor for durable jobs.
fn command_line(opts: &SpawnOptions, shell: &std::path::Path, by_descriptor: bool) -> (PathBuf, Vec<OsString>) {
  let mut args: Vec<OsString> = Vec::new();
  let program = match &opts.capture {
    Capture::Pipe => shell.to_owned(),
    Capture::Durable { log_path, exit_path, supervisor, log_part_bytes, stdin_fifo } => {
      args.extend(["--log".into(), log_path.into(), "--part-bytes".into(), log_part_bytes.to_string().into()]);
      if let Some(fifo) = stdin_fifo {
        args.extend(["--stdin-fifo".into(), fifo.into()]);
      }
      if opts.session_record.is_some() {
        args.extend(["--session-record".into(), exit_path.with_file_name("session.json").into()]);
      }
      if let Some(deadline) = &opts.deadline {
        args.extend(deadline.supervisor_args().map(OsString::from));
      }
      args.extend([exit_path.into(), shell.into()]);
      supervisor.clone()
    }
  };
  args.extend(opts.shell_args.iter().map(OsString::from));
  args.push(if by_descriptor { script::STUB.into() } else { opts.command.clone().into() });
  (program, args)
}

/// The executable `name` stands for: a path with a `/` as it is (relative to the host's
/// cwd), a bare name looked up in the job's `PATH` (the host's when the job's environment
/// is inherited; `/usr/bin:/bin` without one), as `execvp` would. Errors: `ENOENT` when
/// nothing is found, `EACCES` for a file that is not executable.
fn find_program(name: &std::path::Path, opts: &SpawnOptions) -> std::io::Result<PathBuf> {
  use std::os::unix::ffi::OsStrExt;
  let executable = |p: &std::path::Path| -> std::io::Result<()> {
    let meta = std::fs::metadata(p)?;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| std::io::Error::from_raw_os_error(libc::ENOENT))?;
    if !meta.is_file() || unsafe { libc::access(c.as_ptr(), libc::X_OK) } != 0 {
      return Err(std::io::Error::from_raw_os_error(libc::EACCES));
    }
    Ok(())
  };
  if name.as_os_str().as_bytes().contains(&b'/') {
    executable(name)?;
    return Ok(std::path::absolute(name).unwrap_or_else(|_| name.to_owned()));
  }
  let path = match &opts.env {
    Some(env) => env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| OsString::from(v)),
    None => std::env::var_os("PATH"),
  }
  .unwrap_or_else(|| "/usr/bin:/bin".into());
  let mut denied = None;
  for dir in std::env::split_paths(&path).filter(|d| d.is_absolute()) {
    let candidate = dir.join(name);
    match executable(&candidate) {
      Ok(()) => return Ok(candidate),
      Err(e) if e.raw_os_error() == Some(libc::EACCES) => denied = Some(e),
      Err(_) => {}
    }
  }
  Err(denied.unwrap_or_else(|| std::io::Error::from_raw_os_error(libc::ENOENT)))
}

/// Most bytes of a session record handed to the supervisor: what a pipe holds by default
/// (64 KiB) with room to spare, so the write below never blocks.
const MAX_RECORD_BYTES: usize = 60_000;

/// A pipe holding `record`, its write end closed: the supervisor's stdin, read to EOF.
/// Errors: `InvalidInput` for a record over [`MAX_RECORD_BYTES`]; `Io` when the pipe
/// cannot be made or written.
fn record_pipe(record: &str) -> Result<OwnedFd> {
  if record.len() > MAX_RECORD_BYTES {
    return Err(Error::InvalidInput(format!("a session record over {MAX_RECORD_BYTES} bytes is written by the host, not the supervisor")));
  }
  let (r, w) = pipe_cloexec().map_err(|e| Error::io("creating the session record pipe", e))?;
  std::fs::File::from(w).write_all(record.as_bytes()).map_err(|e| Error::io("writing the session record pipe", e))?;
  Ok(r)
}

/// `/dev/null`, close-on-exec, for reading or writing.
fn dev_null(write: bool) -> Result<OwnedFd> {
  let f = OpenOptions::new().read(!write).write(write).open("/dev/null").map_err(|e| Error::io("opening /dev/null", e))?;
  Ok(OwnedFd::from(f))
}

/// Starts the job's first process: `clone(CLONE_VM | CLONE_VFORK)` on Linux, `fork` +
/// `exec` elsewhere (see `launch`).
fn launch(
  opts: &SpawnOptions,
  program: &std::path::Path,
  args: &[OsString],
  stdio: [&OwnedFd; 3],
  script: Option<&OwnedFd>,
  cgroup_procs: Option<&std::fs::File>,
  cgroup_dir: Option<&std::fs::File>,
) -> std::io::Result<Launched> {
  #[cfg(target_os = "linux")]
  {
    use std::os::fd::AsRawFd;
    // The given environment, or the host's.
    let env = opts
      .env
      .clone()
      .unwrap_or_else(|| std::env::vars_os().map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned())).collect());
    crate::launch::spawn_vfork(&crate::launch::SpawnRequest {
      program,
      args,
      env: &env,
      cwd: opts.cwd.as_deref(),
      stdio: stdio.map(|fd| fd.as_raw_fd()),
      script: script.map(|fd| fd.as_raw_fd()),
      cgroup_dir: cgroup_dir.map(|f| f.as_raw_fd()),
      cgroup_procs: cgroup_procs.map(|f| f.as_raw_fd()),
      controlling_tty: matches!(opts.input, Input::Pty(_)),
      // The supervisor unblocks SIGUSR1 (close stdin) once it can handle it.
      block_usr1: matches!(opts.capture, Capture::Durable { .. }),
    })
  }
  #[cfg(not(target_os = "linux"))]
  {
    let _ = cgroup_dir;
    crate::launch::fork_exec(opts, program, args, stdio, script, cgroup_procs)
  }
}

/// Kills and reaps a job whose start could not be completed (its group was created by us).
/// By number: the child is ours and not reaped yet, so its PID, and its group's number, are
/// no one else's.
fn abandon(child: &mut Launched) {
  unsafe {
    libc::kill(-child.pid, libc::SIGKILL);
    libc::kill(child.pid, libc::SIGKILL);
  }
  let _ = child.wait();
}

/// A pidfd (Linux 5.3+) becomes readable when the process exits, so exit is noticed without
/// a polling tick even while a grandchild keeps the output pipe open. `None` elsewhere.
fn pidfd_open(pid: i32) -> Option<OwnedFd> {
  #[cfg(target_os = "linux")]
  return crate::pidfd::PidFd::open(pid).ok().map(crate::pidfd::PidFd::into_owned);
  #[cfg(not(target_os = "linux"))]
  {
    let _ = pid;
    None
  }
}
