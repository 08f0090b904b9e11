//! The pipes between the host and a job, and the NUL device.
//!
//! Anonymous pipes (`CreatePipe`) cannot do overlapped I/O, so a thread blocked reading one
//! could not also wait for the job's exit. The output pipe is therefore a named pipe whose
//! host end is opened with `FILE_FLAG_OVERLAPPED` (the reader waits for a read and the
//! process handle at once) and whose job end is an ordinary synchronous handle (what
//! console programs, and a pseudoconsole, expect). Rust's standard library builds its
//! pipes the same way. Every handle is created non-inheritable; `process::launch` lets the
//! job inherit its ends only for the `CreateProcessW` call itself.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::ptr::null;
use std::sync::atomic::{AtomicU64, Ordering};
use windows_sys::Win32::Foundation::{
  GetLastError, SetHandleInformation, ERROR_ACCESS_DENIED, ERROR_IO_PENDING, ERROR_PIPE_BUSY, GENERIC_READ, GENERIC_WRITE, HANDLE,
  HANDLE_FLAG_INHERIT, INVALID_HANDLE_VALUE, WAIT_OBJECT_0,
};
use windows_sys::Win32::Storage::FileSystem::{
  CreateFileW, ReadFile, FILE_FLAG_FIRST_PIPE_INSTANCE, FILE_FLAG_OVERLAPPED, FILE_SHARE_READ, FILE_SHARE_WRITE, OPEN_EXISTING,
  PIPE_ACCESS_INBOUND,
};
use windows_sys::Win32::System::Pipes::{
  CreateNamedPipeW, CreatePipe, PIPE_READMODE_BYTE, PIPE_REJECT_REMOTE_CLIENTS, PIPE_TYPE_BYTE, PIPE_WAIT,
};
use windows_sys::Win32::System::Threading::{CreateEventW, WaitForSingleObject};
use windows_sys::Win32::System::IO::{CancelIoEx, GetOverlappedResult, OVERLAPPED};

/// Bytes the output pipe buffers (a hint to the system).
const PIPE_BUFFER: u32 = 64 * 1024;

fn owned(h: HANDLE) -> io::Result<OwnedHandle> {
  if h.is_null() || h == INVALID_HANDLE_VALUE {
    return Err(io::Error::last_os_error());
  }
  Ok(unsafe { OwnedHandle::from_raw_handle(h) })
}

fn wide(s: &str) -> Vec<u16> {
  s.encode_utf16().chain(std::iter::once(0)).collect()
}

/// A new output pipe: `(host end, job end)`. The host end reads, overlapped; the job end
/// writes, synchronously. Both non-inheritable.
///
/// The pipe's name is `\\.\pipe\procward-<host pid>-<counter>`, created with
/// `FILE_FLAG_FIRST_PIPE_INSTANCE` (a name someone else holds is skipped, never joined) and
/// one instance, so the job end is the only client. Errors: the OS error of
/// `CreateNamedPipeW` or `CreateFileW` (`ERROR_TOO_MANY_OPEN_FILES`, say).
pub fn output_pipe() -> io::Result<(OwnedHandle, OwnedHandle)> {
  static NEXT: AtomicU64 = AtomicU64::new(0);
  loop {
    let name = wide(&format!(r"\\.\pipe\procward-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    let server = unsafe {
      CreateNamedPipeW(
        name.as_ptr(),
        PIPE_ACCESS_INBOUND | FILE_FLAG_OVERLAPPED | FILE_FLAG_FIRST_PIPE_INSTANCE,
        PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS,
        1,
        PIPE_BUFFER,
        PIPE_BUFFER,
        0,
        null(),
      )
    };
    let server = match owned(server) {
      Ok(s) => s,
      Err(e) if matches!(e.raw_os_error().map(|c| c as u32), Some(ERROR_ACCESS_DENIED | ERROR_PIPE_BUSY)) => continue,
      Err(e) => return Err(e),
    };
    let client = unsafe { CreateFileW(name.as_ptr(), GENERIC_WRITE, 0, null(), OPEN_EXISTING, 0, std::ptr::null_mut()) };
    return Ok((server, owned(client)?));
  }
}

/// A new input pipe: `(host end, job end)`. The host end writes, the job end reads; both
/// synchronous and non-inheritable. Errors: the OS error of `CreatePipe`.
pub fn input_pipe() -> io::Result<(OwnedHandle, OwnedHandle)> {
  let (mut read, mut write) = (std::ptr::null_mut(), std::ptr::null_mut());
  if unsafe { CreatePipe(&mut read, &mut write, null(), 0) } == 0 {
    return Err(io::Error::last_os_error());
  }
  let read = owned(read)?;
  Ok((owned(write)?, read))
}

/// The NUL device, for reading (a job's stdin that is at EOF at once) or writing.
pub fn null_device(write: bool) -> io::Result<OwnedHandle> {
  let access = if write { GENERIC_WRITE } else { GENERIC_READ };
  let h = unsafe {
    CreateFileW(wide("NUL").as_ptr(), access, FILE_SHARE_READ | FILE_SHARE_WRITE, null(), OPEN_EXISTING, 0, std::ptr::null_mut())
  };
  owned(h)
}

/// Lets child processes inherit `h` (or stops them). Errors: the OS error.
pub fn set_inheritable(h: &OwnedHandle, inherit: bool) -> io::Result<()> {
  if unsafe { SetHandleInformation(h.as_raw_handle(), HANDLE_FLAG_INHERIT, if inherit { HANDLE_FLAG_INHERIT } else { 0 }) } == 0 {
    return Err(io::Error::last_os_error());
  }
  Ok(())
}

/// Reads an overlapped handle (the host end of [`output_pipe`]) one read at a time, so a
/// thread can wait for "a read completed" ([`OverlappedPipe::event`]) together with other
/// handles (the job's process) in one `WaitForMultipleObjects`.
pub struct OverlappedPipe {
  handle: OwnedHandle,
  /// Manual-reset; `ReadFile` resets it when a read starts, the system sets it when the
  /// read completes.
  event: OwnedHandle,
  /// Boxed: the system writes to it while a read is pending, so it must not move.
  overlapped: Box<OVERLAPPED>,
  buf: Vec<u8>,
  pending: bool,
}

// The handles and the buffer belong to the reader alone; it may move to the reader's thread.
unsafe impl Send for OverlappedPipe {}

impl OverlappedPipe {
  /// Wraps `handle` (opened with `FILE_FLAG_OVERLAPPED`), reading at most `chunk` bytes at
  /// a time. Errors: the OS error of `CreateEventW`.
  pub fn new(handle: OwnedHandle, chunk: usize) -> io::Result<Self> {
    let event = owned(unsafe { CreateEventW(null(), 1, 0, null()) })?;
    let mut overlapped: Box<OVERLAPPED> = Box::new(unsafe { std::mem::zeroed() });
    overlapped.hEvent = event.as_raw_handle();
    Ok(OverlappedPipe { handle, event, overlapped, buf: vec![0; chunk], pending: false })
  }

  /// The event signalled when the pending read completes.
  pub fn event(&self) -> HANDLE {
    self.event.as_raw_handle()
  }

  /// Starts a read unless one is pending. Errors: the read's (`ERROR_BROKEN_PIPE`: every
  /// writer closed its end, the end of the output).
  pub fn start(&mut self) -> io::Result<()> {
    if self.pending {
      return Ok(());
    }
    let len = self.buf.len().min(u32::MAX as usize) as u32;
    let ok = unsafe { ReadFile(self.handle.as_raw_handle(), self.buf.as_mut_ptr(), len, std::ptr::null_mut(), &mut *self.overlapped) };
    // Done at once or pending: either way the event is set when it is done.
    if ok != 0 || unsafe { GetLastError() } == ERROR_IO_PENDING {
      self.pending = true;
      return Ok(());
    }
    Err(io::Error::last_os_error())
  }

  /// The bytes of the pending read once it completed, `Ok(None)` while it is still
  /// pending (or none was started). Errors: the read's (`ERROR_BROKEN_PIPE` at the end).
  pub fn finish(&mut self) -> io::Result<Option<&[u8]>> {
    if !self.pending || unsafe { WaitForSingleObject(self.event(), 0) } != WAIT_OBJECT_0 {
      return Ok(None);
    }
    self.pending = false;
    let mut n = 0u32;
    if unsafe { GetOverlappedResult(self.handle.as_raw_handle(), &*self.overlapped, &mut n, 0) } == 0 {
      return Err(io::Error::last_os_error());
    }
    Ok(Some(&self.buf[..n as usize]))
  }
}

impl Drop for OverlappedPipe {
  fn drop(&mut self) {
    if self.pending {
      // The system must be done with the buffer and the OVERLAPPED before they are freed.
      let mut n = 0u32;
      unsafe {
        CancelIoEx(self.handle.as_raw_handle(), &*self.overlapped);
        GetOverlappedResult(self.handle.as_raw_handle(), &*self.overlapped, &mut n, 1);
      }
    }
  }
}
