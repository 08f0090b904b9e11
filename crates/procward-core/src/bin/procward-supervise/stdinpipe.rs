//! A durable job's stdin on Windows: a named pipe that any host of the same user may write,
//! in place of the Unix FIFO.
//!
//! The supervisor creates `--stdin-pipe <name>` (hosts use `\\.\pipe\procward-<session id>-stdin`)
//! with one instance only (`FILE_FLAG_FIRST_PIPE_INSTANCE`: a name someone else holds is
//! refused, never joined), `PIPE_REJECT_REMOTE_CLIENTS`, and a DACL that grants access to
//! this process's user alone (the default one lets every user read it and its creator's
//! group create instances). The job's stdin is the read end of an anonymous pipe whose write
//! end this module keeps, so the job sees no EOF between writers.
//!
//! One thread serves the pipe, so the output copy loop never waits for it: it accepts one
//! connection at a time (others wait for the instance, as `WaitNamedPipe` and Node's
//! `net.connect` do), copies everything the writer sends into the job's stdin until the
//! writer disconnects, and accepts the next. A write is therefore one connection, kept whole
//! and in order with other hosts' writes.
//!
//! Closing: a host writes the session's `stdin-closed` marker file and then connects once
//! and disconnects without writing (the connection only wakes this thread). Before each
//! connection (the first one too: a close may come before the pipe exists) the thread looks
//! for the marker; once it exists, it closes the job's stdin (EOF once the job read what was
//! sent before) and the pipe itself (later writers find no pipe). A marker written while a
//! write is being copied takes effect after that write, so nothing sent before the close
//! request is lost. When the job ends, its stdin is closed too ([`StdinPipe::job_ended`]),
//! as on Unix.

use std::fs::File;
use std::io::{self, Read, Write};
use std::mem::{size_of, zeroed};
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use windows_sys::Win32::Foundation::{GetLastError, ERROR_NO_DATA, ERROR_PIPE_CONNECTED, GENERIC_ALL, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::Security::{
  AddAccessAllowedAce, GetLengthSid, GetTokenInformation, InitializeAcl, InitializeSecurityDescriptor, SetSecurityDescriptorDacl,
  TokenUser, ACCESS_ALLOWED_ACE, ACL, ACL_REVISION, PSECURITY_DESCRIPTOR, SECURITY_ATTRIBUTES, SECURITY_DESCRIPTOR, TOKEN_QUERY,
  TOKEN_USER,
};
use windows_sys::Win32::Storage::FileSystem::{FILE_FLAG_FIRST_PIPE_INSTANCE, PIPE_ACCESS_INBOUND};
use windows_sys::Win32::System::Pipes::{
  ConnectNamedPipe, CreateNamedPipeW, DisconnectNamedPipe, PIPE_READMODE_BYTE, PIPE_REJECT_REMOTE_CLIENTS, PIPE_TYPE_BYTE, PIPE_WAIT,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

/// `SECURITY_DESCRIPTOR_REVISION` (winnt.h; windows-sys keeps it in a large feature).
const SECURITY_DESCRIPTOR_REVISION: u32 = 1;
/// Bytes the pipe buffers each way (a hint to the system).
const PIPE_BUFFER: u32 = 64 * 1024;

/// The job's stdin writer, shared by the serving thread and the copy loop.
struct Keeper {
  /// `None` once closed.
  writer: Mutex<Option<File>>,
  /// Set when the job ended: the serving thread closes the writer after the write under way.
  closing: AtomicBool,
}

/// The served pipe. Dropping it changes nothing: the thread lives as long as the process.
pub struct StdinPipe {
  keeper: Arc<Keeper>,
}

impl StdinPipe {
  /// Creates the pipe `name` (see the module docs), and the anonymous pipe whose read end
  /// is returned for the job. The thread starts serving at once; `closed_marker` is the
  /// session's `stdin-closed` file.
  ///
  /// Errors: the OS error of `CreateNamedPipeW` (`ERROR_ACCESS_DENIED` when the name is
  /// taken), of building the DACL, of the anonymous pipe, or of starting the thread.
  pub fn serve(name: &std::ffi::OsStr, closed_marker: PathBuf) -> io::Result<(StdinPipe, OwnedHandle)> {
    let server = create_server(name)?;
    let (write, job_end) = procward_core::windows::pipe::input_pipe()?;
    let keeper = Arc::new(Keeper { writer: Mutex::new(Some(File::from(write))), closing: AtomicBool::new(false) });
    let served = keeper.clone();
    std::thread::Builder::new().name("stdin-pipe".into()).spawn(move || run(server, &served, &closed_marker))?;
    Ok((StdinPipe { keeper }, job_end))
  }

  /// The job ended: its stdin closes now, or after the write under way (which fails
  /// anyway once no one holds the read end).
  pub fn job_ended(&self) {
    self.keeper.closing.store(true, Ordering::SeqCst);
    if let Ok(mut w) = self.keeper.writer.try_lock() {
      *w = None;
    }
  }
}

/// Accepts writers one after another until a close request (or the job's end) closes the
/// job's stdin; then closes the pipe by returning (the server handle is dropped).
fn run(server: OwnedHandle, keeper: &Keeper, closed_marker: &std::path::Path) {
  let mut buf = vec![0u8; PIPE_BUFFER as usize];
  // The marker is looked for before each connection, the first included: a close asked for
  // before the pipe existed found no pipe to wake us with.
  while !closed_marker.exists() && !keeper.closing.load(Ordering::SeqCst) {
    // A writer that connected before this call is connected (ERROR_PIPE_CONNECTED), one that
    // also closed already left its bytes to read (ERROR_NO_DATA).
    let connected = unsafe { ConnectNamedPipe(server.as_raw_handle(), std::ptr::null_mut()) } != 0
      || matches!(unsafe { GetLastError() }, ERROR_PIPE_CONNECTED | ERROR_NO_DATA);
    if !connected {
      break;
    }
    copy_one(&server, keeper, &mut buf);
    unsafe { DisconnectNamedPipe(server.as_raw_handle()) };
  }
  if let Ok(mut w) = keeper.writer.lock() {
    *w = None;
  }
}

/// Copies what one writer sends into the job's stdin, until it disconnects.
fn copy_one(server: &OwnedHandle, keeper: &Keeper, buf: &mut [u8]) {
  // Borrowed for the reads; the handle stays the server's.
  let mut client = std::mem::ManuallyDrop::new(unsafe { File::from_raw_handle(server.as_raw_handle()) });
  loop {
    let n = match client.read(buf) {
      Ok(0) | Err(_) => return,
      Ok(n) => n,
    };
    let Ok(mut w) = keeper.writer.lock() else { return };
    let delivered = w.as_mut().is_some_and(|f| f.write_all(&buf[..n]).is_ok());
    if !delivered || keeper.closing.load(Ordering::SeqCst) {
      // The job is gone (or going): later bytes have no reader. The writer sees the pipe
      // break when we disconnect.
      *w = None;
      return;
    }
  }
}

/// The server end of the pipe, inbound, one instance, owner-only, local clients only.
fn create_server(name: &std::ffi::OsStr) -> io::Result<OwnedHandle> {
  let wide: Vec<u16> = name.encode_wide().chain(std::iter::once(0)).collect();
  let dacl = OwnerOnly::new()?;
  let h: HANDLE = unsafe {
    CreateNamedPipeW(
      wide.as_ptr(),
      PIPE_ACCESS_INBOUND | FILE_FLAG_FIRST_PIPE_INSTANCE,
      PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS,
      1,
      PIPE_BUFFER,
      PIPE_BUFFER,
      0,
      &dacl.attributes,
    )
  };
  if h.is_null() || h == INVALID_HANDLE_VALUE {
    return Err(io::Error::last_os_error());
  }
  Ok(unsafe { OwnedHandle::from_raw_handle(h) })
}

/// Security attributes whose DACL allows this process's user alone (everything).
struct OwnerOnly {
  attributes: SECURITY_ATTRIBUTES,
  // What `attributes` points into: kept alive, and not moved (boxed).
  _descriptor: Box<SECURITY_DESCRIPTOR>,
  _acl: Vec<u64>,
  _token_user: Vec<u64>,
}

impl OwnerOnly {
  fn new() -> io::Result<Self> {
    let fail = || Err(io::Error::last_os_error());
    // The user's SID, from the process token.
    let mut token: HANDLE = std::ptr::null_mut();
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
      return fail();
    }
    let token = unsafe { OwnedHandle::from_raw_handle(token) };
    let mut len = 0u32;
    unsafe { GetTokenInformation(token.as_raw_handle(), TokenUser, std::ptr::null_mut(), 0, &mut len) };
    let mut token_user = vec![0u64; (len as usize).div_ceil(8)];
    if unsafe { GetTokenInformation(token.as_raw_handle(), TokenUser, token_user.as_mut_ptr().cast(), len, &mut len) } == 0 {
      return fail();
    }
    let sid = unsafe { (*token_user.as_ptr().cast::<TOKEN_USER>()).User.Sid };
    // One ACE: ACCESS_ALLOWED_ACE ends with the SID's first u32.
    let acl_bytes = size_of::<ACL>() + size_of::<ACCESS_ALLOWED_ACE>() - size_of::<u32>() + unsafe { GetLengthSid(sid) } as usize;
    let mut acl = vec![0u64; acl_bytes.div_ceil(8)];
    let acl_ptr = acl.as_mut_ptr().cast::<ACL>();
    if unsafe { InitializeAcl(acl_ptr, acl_bytes as u32, ACL_REVISION) } == 0
      || unsafe { AddAccessAllowedAce(acl_ptr, ACL_REVISION, GENERIC_ALL, sid) } == 0
    {
      return fail();
    }
    let mut descriptor: Box<SECURITY_DESCRIPTOR> = Box::new(unsafe { zeroed() });
    let sd: PSECURITY_DESCRIPTOR = (&mut *descriptor as *mut SECURITY_DESCRIPTOR).cast();
    if unsafe { InitializeSecurityDescriptor(sd, SECURITY_DESCRIPTOR_REVISION) } == 0
      || unsafe { SetSecurityDescriptorDacl(sd, 1, acl_ptr, 0) } == 0
    {
      return fail();
    }
    let attributes = SECURITY_ATTRIBUTES { nLength: size_of::<SECURITY_ATTRIBUTES>() as u32, lpSecurityDescriptor: sd, bInheritHandle: 0 };
    Ok(OwnerOnly { attributes, _descriptor: descriptor, _acl: acl, _token_user: token_user })
  }
}
