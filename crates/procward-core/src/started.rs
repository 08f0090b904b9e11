//! A started job as `spawn` returns it ([`Job`]), the sink wrapper that records its
//! output tail and its end as the reader hands them on ([`recording_sink`]), and the one
//! that runs a PTY job's output through its terminal emulator (`pty_sink`). Shared by the
//! Unix and Windows spawns; kept apart from [`job`](crate::job) (what a job is) so that the
//! input side ([`pty`](crate::pty)) can use `job`'s types without a cycle.

use crate::identity::Identity;
use crate::job::{EventSink, Input, JobEvent};
use crate::pty::JobInput;
use crate::status::ExitInfo;
use crate::tail::SharedTail;
use crate::terminal::{answering_sink, PtyTerminal, SharedTerminal};
use std::sync::{Arc, Mutex};

/// The job's end once the reader published it, shared with the job's handle.
pub type SharedExit = Arc<Mutex<Option<ExitInfo>>>;

/// A started job, returned by `spawn`. Its events (output, then exactly one exit) go to the
/// sink given to `spawn`: on Unix from the reactor thread that follows every job of the
/// process, on Windows from the job's capture thread.
#[derive(Debug)]
pub struct Job {
  /// PID of the direct child (the shell, or the supervisor in durable mode); also the
  /// process group id (and, on Unix, the session id).
  pub pid: i32,
  /// `(pid, start time, boot id)`; on Windows the start time is the creation time in
  /// 100 ns units since 1601.
  pub identity: Identity,
  /// The host's side of the job's stdin (pipe, PTY or pseudoconsole), when it has one.
  pub input: Option<JobInput>,
  /// The rolling tail of the job's output, filled by the reader.
  pub tail: SharedTail,
  /// The job's end once the reader published it (set just before the exit event is handed
  /// to the sink), so a host whose event loop has not run the event yet can still see it.
  pub exit: SharedExit,
  /// A PTY job's terminal emulator (its screen), fed by the reader; `None` without a PTY.
  pub terminal: Option<SharedTerminal>,
}

/// Wraps `sink` so that every output event is appended to `tail` first (and handed on
/// only when `forward`), and the exit is stored in `exit` just before it is handed on, so
/// a host whose event loop has not run the event yet can still see it.
pub(crate) fn recording_sink(tail: SharedTail, exit: SharedExit, forward: bool, mut sink: EventSink) -> EventSink {
  Box::new(move |ev: JobEvent| {
    match &ev {
      JobEvent::Output { text, .. } => {
        if let Ok(mut t) = tail.lock() {
          t.append(text);
        }
        if !forward {
          return;
        }
      }
      JobEvent::Exit(info) => {
        if let Ok(mut e) = exit.lock() {
          *e = Some(*info);
        }
      }
    }
    sink(ev)
  })
}

/// For a PTY job (`input` is `Input::Pty` and the job has an input side): its terminal
/// emulator, resized with the PTY from now on, and `sink` wrapped to feed it and answer the
/// job's queries through its input (see `terminal`). Other jobs keep `sink` as it is.
pub(crate) fn pty_sink(input: Input, side: Option<&mut JobInput>, sink: EventSink) -> (EventSink, Option<SharedTerminal>) {
  match (input, side) {
    (Input::Pty(size), Some(side)) => {
      let terminal = PtyTerminal::new(size, side.answerer());
      side.attach_terminal(terminal.clone());
      (answering_sink(terminal.clone(), sink), Some(terminal))
    }
    _ => (sink, None),
  }
}
