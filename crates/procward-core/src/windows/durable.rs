//! Durable jobs on Windows, the host's side: [`spawn`] for [`Capture::Durable`].
//!
//! The host starts `procward-supervise.exe` (see its `windows` module) with the same
//! arguments as on Unix, and the same protocol: the session record goes to the supervisor's
//! stdin through an anonymous pipe, which the host writes once the supervisor runs and then
//! closes; the supervisor writes it to `session.json` with its own identity before it starts
//! the job. The host learns the supervisor's identity from the process handle
//! (`CreateProcessW` hands it over, so there is no PID race) and returns it as the
//! [`Job`]'s: as on Unix, a durable session is followed and killed by its supervisor's
//! identity, and `supervisor.json`'s `job` key names the job's own process and Job Object.
//!
//! The supervisor is created with `DETACHED_PROCESS` (no console: no Ctrl-C or Ctrl-Break
//! of the host's console reaches it), `CREATE_NEW_PROCESS_GROUP` and
//! `CREATE_BREAKAWAY_FROM_JOB`, so a host that runs inside a Job Object that kills on close
//! (a terminal, a CI runner) does not take it along; a job that forbids breaking away
//! refuses that flag (`ERROR_ACCESS_DENIED`) and the supervisor is created again without it
//! (it then lives as long as the host's job). It inherits exactly two handles (its stdin
//! and the NUL device for its stdout and stderr, `PROC_THREAD_ATTRIBUTE_HANDLE_LIST`): never
//! the host's own standard handles, which would keep the host's parent waiting on its output
//! for as long as the job runs. Its working directory and environment are the job's.
//!
//! stdin: with `stdin_fifo` (the session's `stdin` path), the supervisor serves the named
//! pipe `\\.\pipe\procward-<session id>-stdin`, the session id being the name of the
//! directory that path is in ([`stdin_pipe_name`]); nothing is created at the path itself.
//!
//! Following: Windows has no inotify for the log, so one thread per durable job looks at
//! the log and the exit file every 15 ms while output comes, backing off to every 120 ms
//! while the job is quiet, and wakes at once when the supervisor exits (it waits on the
//! supervisor's process handle between looks). It delivers what the Unix reactor does: the
//! log's new output (across rotations), the exit as soon as `exit.json` is whole (even while
//! the supervisor stays on for a grandchild holding the output pipe), late output after it,
//! and an unknown end (no code) when the supervisor is gone without an exit file.

use crate::error::{Error, Result};
use crate::identity::{self, Identity};
use crate::job::{Capture, EventSink, Input, JobEvent, SpawnOptions};
use crate::logfile::LogFollower;
use crate::started::{recording_sink, Job, SharedExit};
use crate::status::ExitInfo;
use crate::tail::Tail;
use crate::utf8::Utf8Decoder;
use crate::windows::cmdline::{command_line, environment_block, find_program, wide};
use crate::windows::pipe::{input_pipe, null_device, set_inheritable};
use crate::windows::process::{create_process, creation_time, AttributeList, INHERIT_LOCK};
use std::fs::File;
use std::io::{self, Write};
use std::mem::{size_of, zeroed};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use windows_sys::Win32::Foundation::{ERROR_ACCESS_DENIED, ERROR_DIRECTORY, HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Threading::{
  TerminateProcess, WaitForSingleObject, CREATE_BREAKAWAY_FROM_JOB, CREATE_NEW_PROCESS_GROUP, CREATE_UNICODE_ENVIRONMENT, DETACHED_PROCESS,
  EXTENDED_STARTUPINFO_PRESENT, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, STARTF_USESTDHANDLES, STARTUPINFOEXW,
};

/// The first wait between looks at the log, and the one after news.
const TICK: Duration = Duration::from_millis(15);
/// The longest wait between looks while the job is quiet.
const IDLE_TICK: Duration = Duration::from_millis(120);
/// Bytes read from the log at a time.
const CHUNK: usize = 64 * 1024;
/// Most bytes of a session record handed to the supervisor (as on Unix).
const MAX_RECORD_BYTES: usize = 60_000;

/// The named pipe that serves the stdin of the durable job whose stdin path is `stdin_path`
/// (`<state>\sessions\<id>\stdin`): `\\.\pipe\procward-<id>-stdin`.
pub fn stdin_pipe_name(stdin_path: &Path) -> String {
  let id = stdin_path.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
  format!(r"\\.\pipe\procward-{id}-stdin")
}

/// Starts the job under `procward-supervise.exe` and a thread that follows its files.
///
/// Errors: `InvalidInput` for a PTY job, a stdin pipe (a durable job's input is its
/// `stdin_fifo`), a record over 60 000 bytes, a command line over its limit (the job's:
/// 8191 characters for cmd.exe; the supervisor's: 32 766); `Io` with `ENOENT` when the
/// shell or the working directory is missing, or when the supervisor cannot be started,
/// handed the record or followed (it is terminated then).
pub fn spawn(opts: SpawnOptions, sink: EventSink) -> Result<Job> {
  let Capture::Durable { log_path, exit_path, supervisor, log_part_bytes, stdin_fifo } = &opts.capture else {
    return Err(Error::InvalidInput("not a durable job".into()));
  };
  match opts.input {
    Input::Pty(_) => return Err(Error::InvalidInput("a PTY session cannot be durable: the terminal closes with the host".into())),
    Input::Pipe => return Err(Error::InvalidInput("a durable job's stdin is its stdin pipe (stdin_fifo), not the host's".into())),
    Input::Null => {}
  }
  let record = opts.session_record.as_deref();
  if record.is_some_and(|r| r.len() > MAX_RECORD_BYTES) {
    return Err(Error::InvalidInput(format!("a session record over {MAX_RECORD_BYTES} bytes is written by the host, not the supervisor")));
  }
  // As on Unix, the shell is found (and the job's line checked) before anything starts.
  let shell =
    find_program(&opts.shell, opts.env.as_deref()).map_err(|e| Error::io(format!("finding the shell {}", opts.shell.display()), e))?;
  command_line(&shell, &opts.shell_args, &opts.command)?;
  let text = |p: &Path| p.to_string_lossy().into_owned();
  let mut args = vec!["--log".into(), text(log_path), "--part-bytes".into(), log_part_bytes.to_string()];
  if let Some(path) = stdin_fifo {
    args.extend(["--stdin-pipe".into(), stdin_pipe_name(path)]);
  }
  if record.is_some() {
    args.extend(["--session-record".into(), text(&exit_path.with_file_name("session.json"))]);
  }
  if let Some(deadline) = &opts.deadline {
    args.extend(deadline.supervisor_args());
  }
  args.extend([text(exit_path), text(&shell)]);
  args.extend(opts.shell_args.iter().cloned());
  let mut line = command_line(supervisor, &args, &opts.command)?;

  let what = || {
    let cwd = opts.cwd.as_ref().map_or_else(|| "the host's cwd".to_string(), |c| c.display().to_string());
    format!("starting {} in {cwd}", supervisor.display())
  };
  if let Some(cwd) = &opts.cwd {
    if !cwd.is_dir() {
      return Err(Error::io(what(), io::Error::from_raw_os_error(ERROR_DIRECTORY as i32)));
    }
  }
  let env = opts.env.as_deref().map(environment_block).transpose()?;
  let (record_w, stdin) = match record {
    Some(_) => {
      let (w, r) = input_pipe().map_err(|e| Error::io("creating the session record pipe", e))?;
      (Some(w), r)
    }
    None => (None, null_device(false).map_err(|e| Error::io("opening NUL", e))?),
  };
  let stdout = null_device(true).map_err(|e| Error::io("opening NUL", e))?;
  let process =
    start_detached(supervisor, &mut line, env.as_deref(), opts.cwd.as_deref(), [&stdin, &stdout]).map_err(|e| Error::io(what(), e))?;
  drop((stdin, stdout));
  let pid = process_id(&process);
  let abandon = |e: Error| {
    unsafe { TerminateProcess(process.as_raw_handle(), 1) };
    e
  };
  // Written now that a reader runs: the pipe's buffer may be smaller than the record.
  if let (Some(w), Some(r)) = (record_w, record) {
    File::from(w).write_all(r.as_bytes()).map_err(|e| abandon(Error::io("writing the session record pipe", e)))?;
  }
  let start_time = creation_time(&process).map_err(|e| abandon(Error::io(format!("reading the creation time of {pid}"), e)))?;
  let boot_id = identity::boot_id().map_err(|e| abandon(Error::io("reading the boot id", e)))?;
  let identity = Identity { pid, start_time, boot_id };
  let tail = Tail::shared(opts.tail_limit);
  let exit: SharedExit = Arc::new(Mutex::new(None));
  let sink = recording_sink(tail.clone(), exit.clone(), opts.forward_output, sink);
  let follower = Follower::new(log_path, exit_path.clone(), sink);
  let handle = process.try_clone().map_err(|e| abandon(Error::io("duplicating the supervisor's handle", e)))?;
  std::thread::Builder::new()
    .name("procward-durable".into())
    .spawn(move || follower.run(handle))
    .map_err(|e| abandon(Error::io("starting the log thread", e)))?;
  Ok(Job { pid, identity, input: None, tail, exit, terminal: None })
}

fn process_id(process: &OwnedHandle) -> i32 {
  unsafe { windows_sys::Win32::System::Threading::GetProcessId(process.as_raw_handle()) as i32 }
}

/// `CreateProcessW` of the supervisor with the flags of the module docs, inheriting exactly
/// `stdin` and `stdout` (also its stderr); retried without `CREATE_BREAKAWAY_FROM_JOB` when
/// the host's job forbids it. Returns the process handle.
fn start_detached(
  program: &Path,
  line: &mut [u16],
  env: Option<&[u16]>,
  cwd: Option<&Path>,
  [stdin, stdout]: [&OwnedHandle; 2],
) -> io::Result<OwnedHandle> {
  let inherited: [HANDLE; 2] = [stdin.as_raw_handle(), stdout.as_raw_handle()];
  let mut attributes = AttributeList::one(PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherited.as_ptr().cast(), size_of::<[HANDLE; 2]>())?;
  let mut si: STARTUPINFOEXW = unsafe { zeroed() };
  si.StartupInfo.cb = size_of::<STARTUPINFOEXW>() as u32;
  si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
  (si.StartupInfo.hStdInput, si.StartupInfo.hStdOutput, si.StartupInfo.hStdError) = (inherited[0], inherited[1], inherited[1]);
  si.lpAttributeList = attributes.ptr();
  let app = wide(program.as_os_str());
  let cwd = cwd.map(|c| wide(c.as_os_str()));
  let flags = DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP | CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT;
  let _guard = INHERIT_LOCK.lock().unwrap_or_else(|p| p.into_inner());
  let created = set_inheritable(stdin, true).and_then(|()| set_inheritable(stdout, true)).and_then(|()| {
    let mut result = Err(io::Error::from_raw_os_error(ERROR_ACCESS_DENIED as i32));
    for flags in [flags | CREATE_BREAKAWAY_FROM_JOB, flags] {
      result = create_process(&app, line, true, flags, env, cwd.as_deref(), &si);
      if !matches!(&result, Err(e) if e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32)) {
        break;
      }
    }
    result
  });
  let _ = set_inheritable(stdin, false);
  let _ = set_inheritable(stdout, false);
  let pi = created?;
  drop(unsafe { OwnedHandle::from_raw_handle(pi.hThread) });
  Ok(unsafe { OwnedHandle::from_raw_handle(pi.hProcess) })
}

/// Most bytes of an exit file read (the supervisor writes a few dozen).
const MAX_EXIT_BYTES: u64 = 4096;

/// The job's end as the exit file records it: the file opened without following a link
/// planted at its name (`FILE_FLAG_OPEN_REPARSE_POINT`, then only a regular file is read),
/// and at most [`MAX_EXIT_BYTES`] of it, so that neither a link nor a huge file put in the
/// session directory is taken for the job's end or read again at every look.
fn read_exit(path: &Path) -> Option<ExitInfo> {
  use std::io::Read;
  use std::os::windows::fs::OpenOptionsExt;
  use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT;
  let file = std::fs::OpenOptions::new().read(true).custom_flags(FILE_FLAG_OPEN_REPARSE_POINT).open(path).ok()?;
  if !file.metadata().ok()?.is_file() {
    return None;
  }
  let mut text = String::new();
  file.take(MAX_EXIT_BYTES).read_to_string(&mut text).ok()?;
  ExitInfo::from_json(&text)
}

/// The thread that follows one durable job's files (see the module docs).
struct Follower {
  log: LogFollower,
  exit_path: PathBuf,
  sink: EventSink,
  decoder: Utf8Decoder,
  published: bool,
}

impl Follower {
  fn new(log_path: &Path, exit_path: PathBuf, sink: EventSink) -> Self {
    Follower { log: LogFollower::new(log_path), exit_path, sink, decoder: Utf8Decoder::new(), published: false }
  }

  /// Hands what the log gained to the sink; true when it gained bytes.
  fn pump(&mut self, late: bool, buf: &mut [u8]) -> bool {
    let (decoder, sink) = (&mut self.decoder, &mut self.sink);
    let mut news = false;
    self.log.read_new(buf, &mut |bytes| {
      news = true;
      let text = decoder.decode(bytes);
      if !text.is_empty() {
        sink(JobEvent::Output { text, late });
      }
    });
    news
  }

  fn flush(&mut self, late: bool) {
    let rest = self.decoder.finish();
    if !rest.is_empty() {
      (self.sink)(JobEvent::Output { text: rest, late });
    }
  }

  /// Looks at the log and the exit file until the supervisor is gone.
  fn run(mut self, supervisor: OwnedHandle) {
    let mut buf = vec![0u8; CHUNK];
    let mut tick = TICK;
    loop {
      let news = self.pump(self.published, &mut buf);
      let gone = unsafe { WaitForSingleObject(supervisor.as_raw_handle(), 0) } == WAIT_OBJECT_0;
      if !self.published {
        let recorded = read_exit(&self.exit_path);
        // Without an exit file the job's end is unknown: the supervisor's own exit code
        // says nothing about the job.
        if let Some(info) = recorded.or(gone.then_some(ExitInfo { code: None, signal: None })) {
          self.pump(false, &mut buf);
          if gone {
            self.flush(false);
          }
          (self.sink)(JobEvent::Exit(info));
          self.published = true;
        }
      }
      if gone {
        self.pump(true, &mut buf);
        self.flush(true);
        return;
      }
      tick = if news { TICK } else { (tick * 2).min(IDLE_TICK) };
      unsafe { WaitForSingleObject(supervisor.as_raw_handle(), tick.as_millis() as u32) };
    }
  }
}
