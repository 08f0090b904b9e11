//! Output capture on Windows: one thread per job, which never hangs on an orphaned
//! grandchild and never loses the end.
//!
//! Windows has no readiness API for anonymous pipes (no epoll, no `poll`): a thread either
//! blocks in `ReadFile` or waits on handles. So each job gets one thread that keeps an
//! overlapped read pending on the output pipe and waits, in one `WaitForMultipleObjects`,
//! for that read and for the job's process handle. The rules are those of the Unix
//! reader (`reader.rs`):
//!
//! - the exit comes from the process handle, never from pipe EOF (a grandchild started
//!   with `start /b` inherits the pipe and may hold it for as long as it runs);
//! - once the process has exited, what is left is read until the pipe is idle for
//!   `drain.idle`, or `drain.max_wait` passed, or `drain.byte_cap` bytes were read; then
//!   the exit is published (its code from `GetExitCodeProcess`);
//! - output read after that is late output, until every holder closed the pipe;
//! - output is decoded as UTF-8 incrementally (a character split across reads is kept
//!   whole; an invalid byte becomes U+FFFD; a truncated one at EOF one U+FFFD).
//!
//! The thread holds the job's Job Object until the job is empty, so a grandchild is
//! neither waited for nor killed by the end of its parent (only a kill, or the end of the
//! host, ends it: `KILL_ON_JOB_CLOSE`).

use super::jobobject::JobObject;
use super::pipe::OverlappedPipe;
use crate::job::{DrainOptions, EventSink, JobEvent};
use crate::status::ExitInfo;
use crate::utf8::Utf8Decoder;
use std::io;
use std::os::windows::io::{AsRawHandle, OwnedHandle};
use std::time::{Duration, Instant};
use windows_sys::Win32::Foundation::{HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Threading::{GetExitCodeProcess, WaitForMultipleObjects, WaitForSingleObject, INFINITE};

/// Bytes read at a time.
const CHUNK: usize = 64 * 1024;
/// How often an ended job's Job Object is checked for processes left in it (doubling up
/// to [`EMPTY_TICK_MAX`]).
const EMPTY_TICK: Duration = Duration::from_millis(50);
const EMPTY_TICK_MAX: Duration = Duration::from_secs(2);

/// What the capture thread follows.
pub(crate) struct Capture {
  pub pid: i32,
  pub process: OwnedHandle,
  pub job: JobObject,
  pub output: OwnedHandle,
  pub drain: DrainOptions,
  pub sink: EventSink,
}

/// Starts the job's capture thread (`procward-job-<pid>`).
///
/// Errors: the OS error of `CreateEventW` or of the thread's creation; the capture (with
/// the process handle and the Job Object, whose close then ends the job) is dropped.
pub(crate) fn follow(capture: Capture) -> io::Result<()> {
  let Capture { pid, process, job, output, drain, sink } = capture;
  let pipe = OverlappedPipe::new(output, CHUNK)?;
  let state =
    Drain { drain, sink, decoder: Utf8Decoder::new(), exit: None, exit_at: Instant::now(), quiet_since: Instant::now(), after_exit: 0 };
  std::thread::Builder::new().name(format!("procward-job-{pid}")).stack_size(256 * 1024).spawn(move || {
    run(pipe, &process, state);
    drop(process);
    hold_until_empty(job);
  })?;
  Ok(())
}

/// Where the capture stands between the exit and its publication.
struct Drain {
  drain: DrainOptions,
  sink: EventSink,
  decoder: Utf8Decoder,
  /// The exit once the process handle signalled, until it is published (then `None` and
  /// `published` below).
  exit: Option<ExitInfo>,
  exit_at: Instant,
  /// The last read after the exit (or the exit itself): the idle window starts here.
  quiet_since: Instant,
  after_exit: usize,
}

fn signalled(h: HANDLE) -> bool {
  unsafe { WaitForSingleObject(h, 0) == WAIT_OBJECT_0 }
}

fn exit_info(process: &OwnedHandle) -> ExitInfo {
  let mut code = 0u32;
  if unsafe { GetExitCodeProcess(process.as_raw_handle(), &mut code) } == 0 {
    return ExitInfo { code: None, signal: None };
  }
  // As Rust's std and Node's own `code` on Windows: the DWORD, seen as an i32 (an NTSTATUS
  // such as 0xC000013A, STATUS_CONTROL_C_EXIT, reads negative).
  ExitInfo::exited(code as i32)
}

/// Milliseconds until `at`, rounded up (so a wake-up never comes before it).
fn millis_until(at: Instant, now: Instant) -> u32 {
  let left = at.saturating_duration_since(now);
  (left.as_micros().div_ceil(1000)).min(u128::from(INFINITE - 1)) as u32
}

/// The capture loop: output, then exactly one exit, then late output until EOF.
fn run(mut pipe: OverlappedPipe, process: &OwnedHandle, mut st: Drain) {
  let mut eof = false;
  let mut published = false;
  loop {
    if !eof && pipe.start().is_err() {
      eof = true;
    }
    let mut handles: Vec<HANDLE> = Vec::with_capacity(2);
    // The read comes first: on an exit, what the job wrote before it is read before its end.
    if !eof {
      handles.push(pipe.event());
    }
    if st.exit.is_none() && !published {
      handles.push(process.as_raw_handle());
    }
    let timeout = match st.exit {
      Some(_) => millis_until((st.quiet_since + st.drain.idle).min(st.exit_at + st.drain.max_wait), Instant::now()),
      None => INFINITE,
    };
    if !handles.is_empty() {
      unsafe { WaitForMultipleObjects(handles.len() as u32, handles.as_ptr(), 0, timeout) };
    }
    let now = Instant::now();
    let mut read_now = false;
    if !eof {
      match pipe.finish() {
        Ok(Some(bytes)) => {
          read_now = true;
          let text = st.decoder.decode(bytes);
          if !text.is_empty() {
            (st.sink)(JobEvent::Output { text, late: published });
          }
          if st.exit.is_some() {
            st.after_exit += bytes.len();
            st.quiet_since = now;
          }
        }
        Ok(None) => {}
        // ERROR_BROKEN_PIPE: the last holder closed the pipe.
        Err(_) => eof = true,
      }
    }
    // Never from pipe EOF alone: a job may close its output and go on running.
    if st.exit.is_none() && !published && signalled(process.as_raw_handle()) {
      st.exit = Some(exit_info(process));
      (st.exit_at, st.quiet_since) = (now, now);
    }
    if let Some(info) = st.exit {
      let idle = !read_now && now >= st.quiet_since + st.drain.idle;
      if eof || idle || st.after_exit >= st.drain.byte_cap || now >= st.exit_at + st.drain.max_wait {
        if eof {
          flush(&mut st, false);
        }
        (st.sink)(JobEvent::Exit(info));
        st.exit = None;
        published = true;
      }
    }
    if published && eof {
      // The last holder of the pipe closed it: what the decoder holds is late output.
      flush(&mut st, true);
      return;
    }
  }
}

/// Hands what the decoder still holds (a truncated character becomes U+FFFD) to the sink.
fn flush(st: &mut Drain, late: bool) {
  let rest = st.decoder.finish();
  if !rest.is_empty() {
    (st.sink)(JobEvent::Output { text: rest, late });
  }
}

/// Keeps the Job Object open while processes are left in it (they closed the output but
/// run on), so the end of the output does not kill them; then closes it.
fn hold_until_empty(job: JobObject) {
  let mut tick = EMPTY_TICK;
  while job.active_processes().is_ok_and(|n| n > 0) {
    std::thread::sleep(tick);
    tick = (tick * 2).min(EMPTY_TICK_MAX);
  }
}
