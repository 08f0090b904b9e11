//! The job's input side on Windows (this is the crate's `pty` module there): a stdin pipe,
//! or the input of the job's pseudoconsole.
//!
//! Windows pipes have no non-blocking writes worth using (`PIPE_NOWAIT` is deprecated and
//! writes partially), and a write into the pipe of a job that does not read would block
//! the host's thread. So each input side has a writer thread: [`JobInput::write`] queues
//! the bytes and returns, the thread writes them in order with blocking writes, and no byte
//! is dropped while the job reads. Up to [`MAX_QUEUED`] bytes may wait; past that, `write`
//! fails as the Unix one does on a full pipe, and a failed write (the job exited) is
//! reported by the next call.
//!
//! EOF: closing a pipe job's input closes the pipe. A console has no end of input; console
//! programs reading lines (cmd's `set /p`, the C runtime's `fgets`) take Ctrl-Z at the start
//! of a line, then Enter, as it: `close` of a PTY job types `\x1a\r`.

use crate::error::{Error, Result};
use crate::terminal::{Answerer, SharedTerminal};
use crate::windows::conpty::PseudoConsole;
use std::io;
use std::os::windows::io::{AsRawHandle, OwnedHandle};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use windows_sys::Win32::Storage::FileSystem::WriteFile;

// Its home is `job` (Unix shares it); re-exported where the Unix `pty` module has it.
pub use crate::job::PtySize;

/// Bytes `write` may queue for a job that has not read them yet (16 MiB).
pub const MAX_QUEUED: usize = 16 << 20;

/// The kind of input a job has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
  /// A pipe to the job's stdin; closing it is EOF.
  Pipe,
  /// The pseudoconsole's input; EOF is Ctrl-Z and Enter.
  Pty,
}

enum Message {
  Data(Vec<u8>),
  /// Close the pipe (pipe jobs' EOF).
  Close,
}

/// What the writer thread tells the callers of `write`.
#[derive(Debug, Default)]
struct Shared {
  queued: usize,
  /// The first failed write: every later `write` fails with it.
  failed: Option<String>,
}

/// The host's side of a job's input. Dropping it ends the input and, for a PTY job, closes
/// the pseudoconsole (which ends what is still attached to it and the job's output).
#[derive(Debug)]
pub struct JobInput {
  kind: InputKind,
  /// The writer thread's queue; the thread ends once every sender is gone, so the
  /// terminal's answerer holds it weakly.
  tx: Option<Arc<Sender<Message>>>,
  shared: Arc<Mutex<Shared>>,
  /// A PTY job's pseudoconsole, shared with the writer thread, which closes it last.
  console: Option<Arc<Mutex<Option<PseudoConsole>>>>,
  /// A PTY's emulator, resized with it (see `terminal`).
  terminal: Option<SharedTerminal>,
}

impl JobInput {
  /// The input side over `handle` (the host's write end), with its writer thread
  /// (`procward-input-<pid>`). Errors: the thread could not start.
  pub(crate) fn new(pid: i32, handle: OwnedHandle, console: Option<PseudoConsole>) -> Result<Self> {
    let kind = if console.is_some() { InputKind::Pty } else { InputKind::Pipe };
    let console = console.map(|c| Arc::new(Mutex::new(Some(c))));
    let shared = Arc::new(Mutex::new(Shared::default()));
    let (tx, rx) = channel::<Message>();
    let (thread_shared, thread_console) = (shared.clone(), console.clone());
    std::thread::Builder::new()
      .name(format!("procward-input-{pid}"))
      .stack_size(128 * 1024)
      .spawn(move || {
        let mut handle = Some(handle);
        for message in rx {
          match message {
            Message::Data(bytes) => {
              let result = handle.as_ref().map_or(Ok(()), |h| write_all(h, &bytes));
              let mut s = thread_shared.lock().unwrap_or_else(|p| p.into_inner());
              s.queued -= bytes.len();
              if let Err(e) = result {
                s.failed.get_or_insert_with(|| format!("the job no longer reads its input: {e}"));
                handle = None;
              }
            }
            Message::Close => handle = None,
          }
        }
        // The host dropped its side: the input closes before the console does.
        drop(handle);
        if let Some(c) = thread_console {
          drop(c.lock().unwrap_or_else(|p| p.into_inner()).take());
        }
      })
      .map_err(|e| Error::io("starting the input thread", e))?;
    Ok(JobInput { kind, tx: Some(Arc::new(tx)), shared, console, terminal: None })
  }

  pub fn kind(&self) -> InputKind {
    self.kind
  }

  /// Queues all of `data` for the job, in order. Errors: `InvalidInput` once stdin is
  /// closed; `Io` when an earlier write failed (the job exited or closed its stdin), or when
  /// more than [`MAX_QUEUED`] bytes would wait (the job is not reading its input).
  pub fn write(&self, data: &[u8]) -> Result<()> {
    let tx = self.tx.as_ref().ok_or_else(|| Error::InvalidInput("stdin is closed".into()))?;
    queue(tx, &self.shared, data)
  }

  /// The emulator that follows this pseudoconsole's size from now on.
  pub(crate) fn attach_terminal(&mut self, terminal: SharedTerminal) {
    self.terminal = Some(terminal);
  }

  /// Writes a terminal's answers to this input, after the writes before them, without
  /// keeping the input open: once the host dropped it or closed it, they fail as `Closed`.
  pub(crate) fn answerer(&self) -> Answerer {
    use crate::job::{WriteError, WriteFailure};
    let tx = self.tx.as_ref().map(Arc::downgrade);
    let shared = self.shared.clone();
    Box::new(move |data, done| {
      let len = data.len();
      let result = match tx.as_ref().and_then(std::sync::Weak::upgrade) {
        Some(tx) => queue(&tx, &shared, &data).map(|()| len).map_err(|_| WriteFailure::Exited),
        None => Err(WriteFailure::Closed),
      };
      done(result.map_err(|failure| WriteError { written: 0, failure }))
    })
  }

  /// [`JobInput::write`] with its outcome handed to `done` at once, the Unix API's shape
  /// (`pty::JobInput::write_all` there): the bytes are queued for the writer thread, which
  /// waits for the job as long as it takes (`timeout` is not applied on Windows yet). A
  /// refused write reports 0 bytes written.
  pub fn write_all(&self, data: Vec<u8>, _timeout: std::time::Duration, done: crate::job::WriteDone) {
    use crate::job::{WriteError, WriteFailure};
    let len = data.len();
    done(self.write(&data).map(|()| len).map_err(|e| {
      let failure = match e {
        Error::InvalidInput(_) => WriteFailure::Closed,
        Error::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe => WriteFailure::Exited,
        Error::Io { source, .. } => WriteFailure::Io(source),
        other => WriteFailure::Io(io::Error::other(other.to_string())),
      };
      WriteError { written: 0, failure }
    }))
  }

  /// Ends the input once what is queued is written: closes the pipe, or types Ctrl-Z and
  /// Enter into a pseudoconsole. Errors: `InvalidInput` when a pipe is closed already.
  pub fn close(&mut self) -> Result<()> {
    match self.kind {
      InputKind::Pipe => {
        let tx = self.tx.take().ok_or_else(|| Error::InvalidInput("stdin is closed".into()))?;
        let _ = tx.send(Message::Close);
        Ok(())
      }
      InputKind::Pty => self.write(b"\x1a\r"),
    }
  }

  /// A terminal's foreground process group: none on Windows (a console has no such group;
  /// `signal` sends Ctrl-C through the console instead).
  pub fn foreground_group(&self) -> Option<i32> {
    None
  }

  /// Resizes the pseudoconsole (PTY only). Errors: `InvalidInput` for a pipe job;
  /// `Unsupported` where `ResizePseudoConsole` is a stub (Wine 8); `Io` with its HRESULT.
  pub fn resize(&self, size: PtySize) -> Result<()> {
    let console = self.console.as_ref().ok_or_else(|| Error::InvalidInput("resize needs a PTY session".into()))?;
    match console.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
      Some(c) => c.resize(size).map_err(|e| match e.kind() {
        io::ErrorKind::Unsupported => Error::Unsupported("resizing a pseudoconsole (this system's ConPTY does not implement it)"),
        _ => Error::io("resizing the terminal", e),
      })?,
      None => return Err(Error::InvalidInput("the terminal is closed".into())),
    }
    if let Some(t) = &self.terminal {
      t.resize(size);
    }
    Ok(())
  }
}

/// Queues `data` for the writer thread behind `tx`. Errors: `Io` when an earlier write
/// failed (the job exited or closed its stdin), or when more than [`MAX_QUEUED`] bytes
/// would wait (the job is not reading its input).
fn queue(tx: &Sender<Message>, shared: &Mutex<Shared>, data: &[u8]) -> Result<()> {
  let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
  if let Some(why) = &s.failed {
    return Err(Error::io("writing to the job's input", io::Error::new(io::ErrorKind::BrokenPipe, why.clone())));
  }
  if s.queued + data.len() > MAX_QUEUED {
    let why = format!("the job is not reading its input ({} bytes wait already)", s.queued);
    return Err(Error::io("writing to the job's input", io::Error::new(io::ErrorKind::WouldBlock, why)));
  }
  s.queued += data.len();
  drop(s);
  tx.send(Message::Data(data.to_vec())).map_err(|_| Error::io("writing to the job's input", io::ErrorKind::BrokenPipe.into()))
}

/// Writes all of `bytes` with blocking writes. Errors: `ERROR_NO_DATA` or
/// `ERROR_BROKEN_PIPE` once the reader is gone.
fn write_all(handle: &OwnedHandle, mut bytes: &[u8]) -> io::Result<()> {
  while !bytes.is_empty() {
    let mut n = 0u32;
    let len = bytes.len().min(1 << 20) as u32;
    if unsafe { WriteFile(handle.as_raw_handle(), bytes.as_ptr(), len, &mut n, std::ptr::null_mut()) } == 0 {
      return Err(io::Error::last_os_error());
    }
    bytes = &bytes[n as usize..];
  }
  Ok(())
}
