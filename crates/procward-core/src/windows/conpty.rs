//! Pseudoconsoles (ConPTY), for PTY jobs on Windows.
//!
//! A pseudoconsole is a console whose screen is a VT stream: `conhost.exe` reads the job's
//! keyboard input from one pipe and writes what the job draws, as text and VT sequences,
//! to another. The job is attached to it through `PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE` and
//! sees an ordinary console (its stdin, stdout and stderr are console handles).
//!
//! - Input: bytes written to the input pipe are typed keys. Enter is CR; the end of input
//!   for a console program reading lines (cmd's `set /p`, a C runtime `fgets`) is Ctrl-Z at
//!   the start of a line followed by Enter, so `close` of a PTY job writes `\x1a\r`.
//! - Output: conhost holds the output pipe, not the job: it reaches EOF only once the
//!   pseudoconsole is closed (`ClosePseudoConsole`, when the host drops the job's input
//!   side), which also ends whatever is still attached to it.
//! - `CreatePseudoConsole` exists from Windows 10 1809 on. It is looked up at run time, so
//!   the addon still loads on older systems, where a PTY job fails with `Unsupported`.
//!
//! wezterm's `portable-pty` wraps the same calls, but it starts the process itself and
//! cannot start it suspended, so the job could run (and start children) before it is in
//! its Job Object; procward creates the process itself (`process::launch`).

use crate::job::PtySize;
use std::io;
use std::os::windows::io::{AsRawHandle, OwnedHandle};
use std::sync::OnceLock;
use windows_sys::core::HRESULT;
use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::Console::{COORD, HPCON};
use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};

type CreateFn = unsafe extern "system" fn(COORD, HANDLE, HANDLE, u32, *mut HPCON) -> HRESULT;
type ResizeFn = unsafe extern "system" fn(HPCON, COORD) -> HRESULT;
type CloseFn = unsafe extern "system" fn(HPCON);

struct Api {
  create: CreateFn,
  resize: ResizeFn,
  close: CloseFn,
}

/// The ConPTY functions of kernel32, or `None` before Windows 10 1809.
fn api() -> Option<&'static Api> {
  static API: OnceLock<Option<Api>> = OnceLock::new();
  API
    .get_or_init(|| unsafe {
      let name: Vec<u16> = "kernel32.dll\0".encode_utf16().collect();
      let module = GetModuleHandleW(name.as_ptr());
      if module.is_null() {
        return None;
      }
      let create = GetProcAddress(module, c"CreatePseudoConsole".as_ptr().cast())?;
      let resize = GetProcAddress(module, c"ResizePseudoConsole".as_ptr().cast())?;
      let close = GetProcAddress(module, c"ClosePseudoConsole".as_ptr().cast())?;
      type Any = unsafe extern "system" fn() -> isize;
      Some(Api {
        create: std::mem::transmute::<Any, CreateFn>(create),
        resize: std::mem::transmute::<Any, ResizeFn>(resize),
        close: std::mem::transmute::<Any, CloseFn>(close),
      })
    })
    .as_ref()
}

fn coord(size: PtySize) -> COORD {
  COORD { X: size.cols.min(i16::MAX as u16) as i16, Y: size.rows.min(i16::MAX as u16) as i16 }
}

/// An HRESULT as an I/O error: a wrapped Win32 error as that error, `E_NOTIMPL` (Wine's
/// `ResizePseudoConsole`) as `ErrorKind::Unsupported`, anything else as it is.
fn hresult_error(hr: HRESULT) -> io::Error {
  let code = hr as u32;
  if code == 0x8000_4001 {
    io::Error::new(io::ErrorKind::Unsupported, "not implemented by this system's ConPTY (E_NOTIMPL)")
  } else if code & 0xFFFF_0000 == 0x8007_0000 {
    io::Error::from_raw_os_error((code & 0xFFFF) as i32)
  } else {
    io::Error::other(format!("HRESULT {code:#010x}"))
  }
}

/// An open pseudoconsole; dropping it closes it (`ClosePseudoConsole`), which ends the
/// processes still attached and lets the output pipe reach EOF.
#[derive(Debug)]
pub(crate) struct PseudoConsole {
  hpc: HPCON,
}

// An HPCON is a handle: usable from any thread; resize and close are serialized by its owner.
unsafe impl Send for PseudoConsole {}

impl PseudoConsole {
  /// Opens a pseudoconsole of `size` that reads keys from `input` and writes the screen to
  /// `output` (both synchronous pipe ends; conhost keeps its own copies, so the caller
  /// closes these once the job is started). Errors: `Unsupported` (as `ErrorKind`) without
  /// ConPTY, else the HRESULT of `CreatePseudoConsole`.
  pub(crate) fn new(size: PtySize, input: &OwnedHandle, output: &OwnedHandle) -> io::Result<Self> {
    let api = api().ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, "ConPTY needs Windows 10 1809 or later"))?;
    let mut hpc: HPCON = 0;
    let hr = unsafe { (api.create)(coord(size), input.as_raw_handle(), output.as_raw_handle(), 0, &mut hpc) };
    if hr < 0 {
      return Err(hresult_error(hr));
    }
    Ok(PseudoConsole { hpc })
  }

  /// The value `PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE` takes.
  pub(crate) fn raw(&self) -> HPCON {
    self.hpc
  }

  /// Resizes the console's screen buffer. Errors: the HRESULT of `ResizePseudoConsole`
  /// (`ErrorKind::Unsupported` where it is a stub, as in Wine 8).
  pub(crate) fn resize(&self, size: PtySize) -> io::Result<()> {
    let api = api().expect("a pseudoconsole exists, so ConPTY does");
    let hr = unsafe { (api.resize)(self.hpc, coord(size)) };
    if hr < 0 {
      return Err(hresult_error(hr));
    }
    Ok(())
  }
}

impl Drop for PseudoConsole {
  fn drop(&mut self) {
    if let Some(api) = api() {
      unsafe { (api.close)(self.hpc) };
    }
  }
}
