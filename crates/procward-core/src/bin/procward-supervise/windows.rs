//! The supervisor on Windows: the same command line and the same files as on Unix
//! (`session.json` before the job starts, `supervisor.json`, the rotating log, `exit.json`
//! written once whole), with Windows' own means:
//!
//! - the host starts it with `DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP` (and
//!   `CREATE_BREAKAWAY_FROM_JOB` where the host's job allows it): no console, so no
//!   Ctrl-C or Ctrl-Break of the host's console reaches it, and it outlives the host;
//! - two Job Objects, both `KILL_ON_JOB_CLOSE` and held by the supervisor alone, so the job
//!   survives the host and dies by a kill or with the supervisor:
//!   - its own, `Local\procward-job-<supervisor pid>-<supervisor start time>`, which it
//!     joins before the job starts. A durable session is followed and killed by the
//!     supervisor's identity (as on Unix), and the tree kill finds its tree by that name:
//!     `TerminateJobObject` of it ends the supervisor with the job, so no exit file is
//!     written (as a SIGKILL of the Unix group; the killer records the end, and a host that
//!     finds the supervisor gone without one reads the end as unknown, `lost`). The
//!     supervisor has no console, so a Ctrl-Break meant for it reaches nobody: such a kill
//!     goes straight to its forceful step;
//!   - the job's, nested in it: the job starts through `procward_core::windows::process::launch`,
//!     suspended, in a new process group with a hidden console of its own, in the Job Object
//!     `Local\procward-job-<job pid>-<job start time>`, then resumed. `TerminateJobObject`
//!     of that one ends the job alone: the supervisor records its end (the killer's exit
//!     code) in `exit.json`;
//! - a job that cannot start gets exit code 127, as on Unix;
//! - `supervisor.json` is the supervisor's identity (what hosts follow and kill, as on Unix)
//!   plus `"job":{"pid":…,"startTime":"…"}`, which names the job's process and so its Job
//!   Object and the process group that takes Ctrl-Break (readers of the identity ignore it);
//! - the job's stdin, with `--stdin-pipe <name>`, is a named pipe any host of the same user
//!   may write to (see `stdinpipe`), else the NUL device. A pipe that cannot be created
//!   (its name taken: pipe names are machine-wide) fails the start with exit code 127, so
//!   no host writes the job's input to whoever holds the name;
//! - one thread copies the output: an overlapped read of the job's output pipe and the job's
//!   process handle are waited for together (`WaitForMultipleObjects`). After the exit it
//!   drains by the same rule as Unix (idle 40 ms, at most 120 ms or 1 MiB), then writes the
//!   exit file with `GetExitCodeProcess`'s code (a DWORD read as an i32: a job ended by
//!   `TerminateJobObject(job, 1)` exits 1; Windows has no signals, so `signal` is null);
//! - it stays while the job's output pipe is held (late output still reaches the log) and
//!   while processes are left in the job (they would die with its handle), looking at the
//!   job every 250 ms once the pipe is closed.

use crate::ended::End;
use crate::output::Output;
use crate::stdinpipe::StdinPipe;
use crate::{failed_start, files, parse, record_session_first, Args};
use procward_core::job::SpawnOptions;
use procward_core::status::ExitInfo;
use procward_core::windows::jobobject::JobObject;
use procward_core::windows::pipe::OverlappedPipe;
use procward_core::windows::process::{launch, Launched, StdinFrom, Stdio};
use std::os::windows::io::{AsRawHandle, OwnedHandle};
use std::time::Duration;
use windows_sys::Win32::Foundation::{HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Threading::{GetExitCodeProcess, WaitForMultipleObjects, WaitForSingleObject, INFINITE};

/// Bytes read from the output pipe at a time.
const CHUNK: usize = 256 * 1024;
/// How often a job whose output pipe closed is looked at for processes left in it.
const EMPTY_TICK: Duration = Duration::from_millis(250);

pub fn main() {
  let args = parse();
  let identity = files::own_identity();
  let mut notes = record_session_first(&args, identity.as_deref(), Vec::new());
  // Ours before the job starts: the job is born in it (see the module docs).
  let _own_job = own_job().map_err(|e| notes.push(format!("cannot create the Job Object named after the supervisor: {e}"))).ok();
  let (stdin_pipe, stdin) = match &args.stdin_pipe {
    Some(name) => match StdinPipe::serve(name, args.exit.with_file_name("stdin-closed")) {
      Ok((served, job_end)) => (Some(served), StdinFrom::Handle(job_end)),
      Err(e) => {
        // Pipe names are machine-wide: a name we cannot create may be held by someone else,
        // who would then get everything hosts write to this job. The job does not start.
        notes.push(format!("cannot serve the stdin pipe {}: {e}; the job was not started", name.to_string_lossy()));
        failed_start(&args, notes);
      }
    },
    None => (None, StdinFrom::Null),
  };
  let opts = match job_options(&args) {
    Ok(opts) => opts,
    Err(e) => {
      notes.push(e);
      failed_start(&args, notes);
    }
  };
  let launched = match launch(&opts, Stdio::Pipe { stdin }) {
    Ok(l) => l,
    Err(e) => {
      notes.push(format!("cannot start {:?}: {e}", args.program));
      failed_start(&args, notes);
    }
  };
  // Written once the job runs, naming it (see the module docs).
  let with_job = files::with_job(identity.as_deref(), launched.pid as u32, launched.start_time);
  if let Err(note) = files::record_identity(&args.exit, with_job.as_deref()) {
    notes.push(note);
  }
  let Launched { process, job, output, pid, .. } = launched;
  let pipe = OverlappedPipe::new(output, CHUNK).map_err(|e| notes.push(format!("cannot read the job's output: {e}"))).ok();
  let out = Output::new(&args, notes);
  let deadline = args.timeout.map(|after| crate::deadline::Deadline::new(after, args.timeout_grace));
  std::process::exit(run(&args, Job { pid: pid as u32, process, job, pipe }, stdin_pipe, out, deadline))
}

/// The Job Object `Local\procward-job-<our pid>-<our start time>`, with us in it: every
/// process we start is born in it, the job's own Job Object nests inside it, and a killer
/// that knows only our identity (a durable session's) finds the whole tree by that name.
fn own_job() -> std::io::Result<JobObject> {
  use std::os::windows::io::BorrowedHandle;
  let pid = std::process::id();
  let me = procward_core::identity::identity(pid as i32)?.ok_or_else(|| std::io::Error::other("our own identity cannot be read"))?;
  let job = JobObject::create(pid, me.start_time)?;
  let current = unsafe { BorrowedHandle::borrow_raw(windows_sys::Win32::System::Threading::GetCurrentProcess()) };
  job.assign(current)?;
  Ok(job)
}

/// `<program> [args...]` as the job's shell, its arguments and its command (the last one);
/// the job inherits our working directory and environment, which the host chose for it.
fn job_options(args: &Args) -> Result<SpawnOptions, String> {
  let text =
    |s: &std::ffi::OsStr| s.to_str().map(str::to_owned).ok_or_else(|| format!("{s:?} is not valid Unicode; the job was not started"));
  let Some((command, shell_args)) = args.rest.split_last() else { return Err("no command given; the job was not started".into()) };
  let mut opts = SpawnOptions::new(text(command)?);
  opts.shell = args.program.clone().into();
  opts.shell_args = shell_args.iter().map(|a| text(a)).collect::<Result<_, _>>()?;
  Ok(opts)
}

/// What the copy loop holds of the running job.
struct Job {
  /// The job's process id, also its process group's (for the deadline's Ctrl-Break).
  pid: u32,
  process: OwnedHandle,
  /// Held until no process is left in it (see the module docs).
  job: JobObject,
  /// `None` once every holder closed the output pipe.
  pipe: Option<OverlappedPipe>,
}

/// Runs until the job has ended, its exit file is written, the output pipe is closed by its
/// last holder and no process is left in the job. Returns the supervisor's exit code: 0, or
/// 70 when the exit file could not be written because the session directory is gone.
/// A `deadline` that falls first sends the job's group Ctrl-Break and terminates its Job
/// Object after the grace period (see `deadline`).
fn run(args: &Args, running: Job, stdin: Option<StdinPipe>, mut out: Output, mut deadline: Option<crate::deadline::Deadline>) -> i32 {
  let Job { pid: job_pid, process, job, mut pipe } = running;
  let mut end = End::default();
  // When the deadline's forceful step is due (its grace period after the Ctrl-Break).
  let mut terminate_at: Option<std::time::Instant> = None;
  loop {
    if let Some(p) = &mut pipe {
      if p.start().is_err() {
        pipe = None;
      }
    }
    let mut handles: Vec<HANDLE> = Vec::with_capacity(2);
    if let Some(p) = &pipe {
      handles.push(p.event());
    }
    if !end.known() {
      handles.push(process.as_raw_handle());
    }
    let due = deadline.as_ref().filter(|_| !end.known()).and_then(crate::deadline::Deadline::left);
    let due =
      crate::deadline::sooner(due, terminate_at.filter(|_| !end.known()).map(|t| t.saturating_duration_since(std::time::Instant::now())));
    let wait = match crate::deadline::sooner(end.left(), due) {
      Some(left) => left.as_millis().saturating_add(1).min(u128::from(INFINITE - 1)) as u32,
      None if end.written() && pipe.is_none() => {
        if empty(&job) {
          out.finish();
          return 0;
        }
        EMPTY_TICK.as_millis() as u32
      }
      None => INFINITE,
    };
    if handles.is_empty() {
      std::thread::sleep(Duration::from_millis(wait.into()));
    } else {
      unsafe { WaitForMultipleObjects(handles.len() as u32, handles.as_ptr(), 0, wait) };
    }
    if let Some(d) = deadline.as_mut().filter(|_| !end.known()) {
      if d.due() {
        end.timed_out();
        if !d.grace.is_zero() {
          crate::deadline::ctrl_break(job_pid);
        }
        terminate_at = Some(std::time::Instant::now() + d.grace);
      }
    }
    if terminate_at.is_some_and(|t| std::time::Instant::now() >= t) {
      terminate_at = None;
      if !end.known() {
        unsafe { windows_sys::Win32::System::JobObjects::TerminateJobObject(job.handle().as_raw_handle() as HANDLE, 1) };
      }
    }
    if !end.known() && signalled(process.as_raw_handle()) {
      let info = exit_of(&process);
      // The job's stdin closes with it (as a host's pipe does).
      if let Some(s) = &stdin {
        s.job_ended();
      }
      end.ended(info);
    }
    if let Some(p) = &mut pipe {
      match p.finish() {
        Ok(Some([])) | Ok(None) => {}
        Ok(Some(bytes)) => {
          let n = bytes.len();
          out.write(bytes);
          end.read(n);
        }
        Err(_) => pipe = None,
      }
    }
    if !end.settle(pipe.is_some(), &args.exit) {
      return 70;
    }
  }
}

fn exit_of(process: &OwnedHandle) -> ExitInfo {
  let mut code = 0u32;
  if unsafe { GetExitCodeProcess(process.as_raw_handle(), &mut code) } == 0 {
    return ExitInfo { code: None, signal: None };
  }
  // As std and Node read it: the DWORD as an i32 (an NTSTATUS reads negative).
  ExitInfo::exited(code as i32)
}

/// Whether a waitable handle is signalled now.
fn signalled(h: HANDLE) -> bool {
  unsafe { WaitForSingleObject(h, 0) == WAIT_OBJECT_0 }
}

/// Whether no process is left in the job (an error counts as empty: nothing to wait for).
fn empty(job: &JobObject) -> bool {
  job.active_processes().map_or(true, |n| n == 0)
}
