//! What a job is, shared by the modules that start and follow one: [`spawn`](crate::spawn)
//! starts a job, [`launch`](crate::launch) starts its first process, [`reader`](crate::reader)
//! captures its output. Each of them imports this module and none of them imports another
//! in a circle (`spawn` calls `launch` and `reader`; those two know only this module).
//!
//! - [`SpawnOptions`], [`Capture`], [`Input`]: what to run and how;
//! - [`DrainOptions`]: how long to read after the direct child exited;
//! - [`JobEvent`] and [`EventSink`]: what the reader reports, and where to;
//! - [`Job`]: a started job (its PID, identity, input side, output tail and end);
//! - [`PtySize`]: a terminal's size, for `pty` on Unix and ConPTY on Windows;
//! - [`WriteDone`], [`WriteError`]: how a write to a job's input ends (`JobInput::write_all`
//!   in `pty`, on both platforms);
//! - `Launched` (crate-private, Unix): the started direct child, waited for exactly once
//!   (Windows has its own, `windows::process::Launched`, holding the process handle).

use crate::status::ExitInfo;
#[cfg(unix)]
use std::io;
#[cfg(unix)]
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::process::ExitStatus;
use std::time::Duration;

/// Terminal size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtySize {
  pub cols: u16,
  pub rows: u16,
}

impl Default for PtySize {
  fn default() -> Self {
    PtySize { cols: 120, rows: 40 }
  }
}

/// How long a write to a job's input waits while the job takes none of its bytes, unless
/// the caller says otherwise (30 s).
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a write to a job's input did not deliver all of its bytes.
#[derive(Debug)]
pub enum WriteFailure {
  /// Nobody reads the input any more: the job exited or closed its stdin (`EPIPE`; `EIO`
  /// from a terminal whose job is gone).
  Exited,
  /// The job took none of the bytes for this long: it is not reading its input.
  TimedOut(Duration),
  /// Queued behind a write that failed, and never started: none of its bytes were sent, so
  /// what reached the job is a prefix of what was written, in order.
  Dropped,
  /// The input was closed (EOF asked for, or the host let go of the job's input).
  Closed,
  /// Any other error of the write.
  Io(std::io::Error),
}

/// A write that stopped short: how many of its bytes reached the job, and why the rest did not.
#[derive(Debug)]
pub struct WriteError {
  pub written: usize,
  pub failure: WriteFailure,
}

impl std::fmt::Display for WriteError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    let n = self.written;
    match &self.failure {
      WriteFailure::Exited => write!(f, "the job no longer reads its input (it exited or closed it; {n} bytes written)"),
      WriteFailure::TimedOut(t) => {
        write!(f, "the job took none of its input for {} ms: it is not reading it ({n} bytes written)", t.as_millis())
      }
      WriteFailure::Dropped => write!(f, "not written: an earlier write to this input failed ({n} bytes written)"),
      WriteFailure::Closed => write!(f, "stdin is closed ({n} bytes written)"),
      WriteFailure::Io(e) => write!(f, "writing to the job's input: {e} ({n} bytes written)"),
    }
  }
}

impl From<WriteError> for crate::Error {
  fn from(e: WriteError) -> Self {
    let source = match &e.failure {
      WriteFailure::Exited => std::io::Error::from(std::io::ErrorKind::BrokenPipe),
      WriteFailure::TimedOut(_) => std::io::Error::from(std::io::ErrorKind::TimedOut),
      WriteFailure::Dropped => std::io::Error::from(std::io::ErrorKind::Interrupted),
      WriteFailure::Closed => return crate::Error::InvalidInput(e.to_string()),
      WriteFailure::Io(io) => std::io::Error::new(io.kind(), io.to_string()),
    };
    crate::Error::Io { context: e.to_string(), source }
  }
}

/// Receives how a write ended: `Ok(bytes)` once all of them reached the job's input (the
/// kernel's pipe or terminal buffer, not necessarily the job), or the [`WriteError`]. Called
/// once, on the caller's thread when the write finished at once, else on the thread that
/// finished it; it must return quickly.
pub type WriteDone = Box<dyn FnOnce(std::result::Result<usize, WriteError>) + Send>;

/// Where the job's output goes.
#[derive(Debug, Clone)]
pub enum Capture {
  /// One pipe for stdout and stderr, read by the reactor.
  Pipe,
  /// A log file (appended, created 0600) and an exit file written by the supervisor.
  Durable {
    /// Log file for merged stdout and stderr.
    log_path: PathBuf,
    /// Where the supervisor writes `{"code":N,"signal":null}` or `{"code":null,"signal":N}`.
    exit_path: PathBuf,
    /// Path of the `procward-supervise` executable.
    supervisor: PathBuf,
    /// The log rotates once a part holds this many bytes; one rotated part is kept (see
    /// `logfile`). 0: never rotate.
    log_part_bytes: u64,
    /// Give the job a FIFO at this path as stdin (created here, 0600), which any host may
    /// write to; the supervisor keeps it open until it gets SIGUSR1 (see the supervisor).
    stdin_fifo: Option<PathBuf>,
  },
}

/// What the job's stdin is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Input {
  /// `/dev/null` (the default): a job that reads stdin sees EOF at once.
  #[default]
  Null,
  /// A pipe the host writes to (`pty::JobInput`); closing it is EOF.
  Pipe,
  /// A pseudo-terminal for stdin, stdout and stderr (pipe capture only).
  Pty(PtySize),
}

/// The longest command procward runs, in bytes of UTF-8, on every platform (1 MiB). On
/// Unix a command over 64 KiB reaches the shell through an inherited descriptor, not `-c`
/// (see `script`); on Windows cmd.exe's own line limit (8191 characters) comes first.
pub const MAX_COMMAND_BYTES: usize = 1 << 20;

/// Errors: `InvalidInput` naming the limit for a command over [`MAX_COMMAND_BYTES`].
pub fn check_command_length(command: &str) -> crate::Result<()> {
  if command.len() > MAX_COMMAND_BYTES {
    return Err(crate::Error::InvalidInput(format!(
      "the command is {} bytes long; procward takes at most {MAX_COMMAND_BYTES} (1 MiB; pass longer scripts in a file)",
      command.len()
    )));
  }
  Ok(())
}

/// What to run and how.
#[derive(Debug, Clone)]
pub struct SpawnOptions {
  /// The command string, passed to the shell byte for byte: as one argument, or on Unix,
  /// over 64 KiB, through an inherited descriptor (see `script`). At most
  /// [`MAX_COMMAND_BYTES`].
  pub command: String,
  /// Shell executable. Default [`default_shell`].
  pub shell: PathBuf,
  /// Arguments before the command. Default [`default_shell_args`] of the shell: on Unix
  /// `["-c", "--"]` (`--` ends the shell's options, so a command that starts with `-` is a
  /// command, not an option); on Windows `["/d", "/s", "/c"]` for cmd.exe.
  pub shell_args: Vec<String>,
  /// Working directory; `None` inherits the host's.
  pub cwd: Option<PathBuf>,
  /// The complete environment; `None` inherits the host's.
  pub env: Option<Vec<(String, String)>>,
  pub capture: Capture,
  pub input: Input,
  pub drain: DrainOptions,
  /// A cgroup v2 directory the job joins before it execs (see `cgroup`); `None` for none.
  pub cgroup: Option<PathBuf>,
  /// Bytes of output the native tail keeps. Default 200 000.
  pub tail_limit: usize,
  /// Also hand output events to the sink (they always go to the tail). Default true.
  pub forward_output: bool,
  /// Durable mode: the session record (JSON) the supervisor writes to `session.json` beside
  /// the exit file, creating the session directory, before it starts the job (see
  /// `procward-supervise`). At most 60 000 bytes (it goes through a pipe). Default `None`:
  /// the host wrote it.
  pub session_record: Option<String>,
  /// Durable mode: the supervisor tree-kills the job this long after it started (see
  /// [`Deadline`]), with or without a host. Default `None`: no deadline.
  pub deadline: Option<Deadline>,
}

/// A durable job's kill-after deadline, enforced by its supervisor (`--timeout-ms`,
/// `--timeout-grace-ms`): once `after` has passed since the job started (the supervisor's
/// monotonic clock), SIGTERM to the job's tree, SIGKILL to what is left after `grace`, and
/// `"timedOut":true` in the exit file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
  pub after: std::time::Duration,
  pub grace: std::time::Duration,
}

impl Deadline {
  /// The supervisor's arguments that carry it.
  pub fn supervisor_args(&self) -> [String; 4] {
    ["--timeout-ms".into(), self.after.as_millis().to_string(), "--timeout-grace-ms".into(), self.grace.as_millis().to_string()]
  }
}

impl SpawnOptions {
  pub fn new(command: impl Into<String>) -> Self {
    let shell = default_shell();
    SpawnOptions {
      command: command.into(),
      shell_args: default_shell_args(&shell),
      shell,
      cwd: None,
      env: None,
      capture: Capture::Pipe,
      input: Input::Null,
      drain: DrainOptions::default(),
      cgroup: None,
      tail_limit: 200_000,
      forward_output: true,
      session_record: None,
      deadline: None,
    }
  }
}

/// Unix: `/bin/bash` when it exists, else `/bin/sh`.
///
/// bash runs the last simple command of `-c` with `exec`, so `sh -c '...'` or a lone
/// `node server.js` becomes the session leader itself and its own exit status (including
/// a death by signal) is what the session reports. dash (Debian's `/bin/sh`) forks instead,
/// and a child killed by SIGKILL then surfaces as the shell's `exit 137`.
#[cfg(unix)]
pub fn default_shell() -> PathBuf {
  let bash = PathBuf::from("/bin/bash");
  if bash.exists() {
    bash
  } else {
    PathBuf::from("/bin/sh")
  }
}

/// Windows: `%ComSpec%` (the system's command interpreter, set by Windows itself), else
/// `C:\Windows\System32\cmd.exe`.
#[cfg(windows)]
pub fn default_shell() -> PathBuf {
  std::env::var_os("ComSpec").filter(|s| !s.is_empty()).map_or_else(|| PathBuf::from(r"C:\Windows\System32\cmd.exe"), PathBuf::from)
}

/// The arguments that come before the command for `shell` when the caller gives none.
///
/// Unix: `["-c", "--"]` for every shell. Windows, by the shell's file name (case does not
/// matter, `.exe` optional): `cmd` gets `["/d", "/s", "/c"]` (no AutoRun commands from the
/// registry; `/s`: the quotes around the command are stripped and the rest is kept as it
/// is); `powershell` and `pwsh` get `["-NoProfile", "-NonInteractive", "-Command"]`;
/// anything else (`bash`, `sh`, ...) gets `["-c"]`.
pub fn default_shell_args(shell: &Path) -> Vec<String> {
  let args: &[&str] = if cfg!(windows) {
    match ShellKind::of(shell) {
      ShellKind::Cmd => &["/d", "/s", "/c"],
      ShellKind::PowerShell => &["-NoProfile", "-NonInteractive", "-Command"],
      ShellKind::Other => &["-c"],
    }
  } else {
    &["-c", "--"]
  };
  args.iter().map(|a| a.to_string()).collect()
}

/// Which family a shell belongs to, by its file name: it decides the default arguments and,
/// on Windows, how the command is quoted on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellKind {
  /// `cmd` / `cmd.exe`.
  Cmd,
  /// `powershell` / `pwsh` (with or without `.exe`).
  PowerShell,
  /// Any other shell (`bash`, `sh`, ...), which parses its command line as the C runtime does.
  Other,
}

impl ShellKind {
  /// The family of `shell`, from its file name without the extension, case-insensitively.
  pub fn of(shell: &Path) -> Self {
    // A Windows path may reach a Unix build (tests): both separators end the directory.
    let name = shell.to_string_lossy();
    let file = name.rsplit(['/', '\\']).next().unwrap_or_default().to_ascii_lowercase();
    match file.strip_suffix(".exe").unwrap_or(&file) {
      "cmd" => ShellKind::Cmd,
      "powershell" | "pwsh" => ShellKind::PowerShell,
      _ => ShellKind::Other,
    }
  }
}

/// One thing that happened to a job, in order: output events, then exactly one exit,
/// then (pipe mode only) possibly late output from descendants still holding the pipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEvent {
  /// Decoded text. `late` is true for output read after the exit was published.
  Output { text: String, late: bool },
  /// The direct child's end (durable mode: the job's end as the supervisor recorded it).
  Exit(ExitInfo),
}

/// How long to keep reading after the direct child exited, before publishing the exit.
#[derive(Debug, Clone)]
pub struct DrainOptions {
  /// Publish once the pipe has been idle this long. Default 40 ms.
  pub idle: Duration,
  /// Publish at the latest this long after the exit. Default 120 ms.
  pub max_wait: Duration,
  /// Publish after this many bytes were read after the exit. Default 1 MiB.
  pub byte_cap: usize,
}

impl Default for DrainOptions {
  fn default() -> Self {
    DrainOptions { idle: Duration::from_millis(40), max_wait: Duration::from_millis(120), byte_cap: 1 << 20 }
  }
}

/// Receives a job's events, on the reactor thread that follows every job of the process:
/// a sink should return quickly (while it blocks, no job's output is read), and it must
/// never wait for something that waits for the reactor (another job's event, say).
pub type EventSink = Box<dyn FnMut(JobEvent) + Send + 'static>;

/// A started process this host is the parent of: wait for it exactly once.
#[cfg(unix)]
#[derive(Debug)]
pub(crate) struct Launched {
  pub pid: i32,
  status: Option<ExitStatus>,
}

#[cfg(unix)]
impl Launched {
  pub fn new(pid: i32) -> Self {
    Launched { pid, status: None }
  }

  fn waitpid(&mut self, flags: libc::c_int) -> io::Result<Option<ExitStatus>> {
    if let Some(s) = self.status {
      return Ok(Some(s));
    }
    loop {
      let mut raw = 0;
      let r = unsafe { libc::waitpid(self.pid, &mut raw, flags) };
      if r == self.pid {
        let s = ExitStatus::from_raw(raw);
        self.status = Some(s);
        return Ok(Some(s));
      }
      if r == 0 {
        return Ok(None);
      }
      let e = io::Error::last_os_error();
      if e.kind() != io::ErrorKind::Interrupted {
        return Err(e);
      }
    }
  }

  /// The exit status if the process has ended (it is reaped then), else `None`.
  /// Errors: `ECHILD` when someone else reaped it.
  pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
    self.waitpid(libc::WNOHANG)
  }

  /// Blocks until the process ends and reaps it.
  pub fn wait(&mut self) -> io::Result<ExitStatus> {
    self.waitpid(0).map(|s| s.expect("a blocking waitpid returns a status"))
  }
}
