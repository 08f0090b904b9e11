//! The one error type of the core. The binding maps each variant to a JS error code.

use std::fmt;
use std::io;

/// What went wrong in a core operation.
#[derive(Debug)]
pub enum Error {
  /// An OS call failed; `context` says which one and on what.
  Io { context: String, source: io::Error },
  /// The caller passed something unusable (empty command, bad option value).
  InvalidInput(String),
  /// The operation is not implemented on this platform (yet).
  Unsupported(&'static str),
  /// The operation cannot be done in the object's present state (a terminal in raw mode has
  /// no end of input); nothing was changed. The message says why.
  NotPossible(String),
}

/// Result alias for the core.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
  pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
    Error::Io { context: context.into(), source }
  }

  /// A short, stable code for the error kind (`EIO`-style names for OS errors).
  pub fn code(&self) -> String {
    #[cfg(windows)]
    if let Error::Io { source, .. } = self {
      if let Some(code) = source.raw_os_error().and_then(windows_code) {
        return code.into();
      }
    }
    match self {
      Error::Io { source, .. } => match source.raw_os_error() {
        Some(libc::EMFILE) => "EMFILE".into(),
        Some(libc::ENFILE) => "ENFILE".into(),
        Some(libc::ENOENT) => "ENOENT".into(),
        Some(libc::EACCES) => "EACCES".into(),
        Some(libc::EPERM) => "EPERM".into(),
        Some(libc::ESRCH) => "ESRCH".into(),
        Some(libc::EAGAIN) => "EAGAIN".into(),
        Some(libc::E2BIG) => "E2BIG".into(),
        Some(libc::ENOMEM) => "ENOMEM".into(),
        _ => "EIO".into(),
      },
      Error::InvalidInput(_) => "EINVAL".into(),
      Error::Unsupported(_) | Error::NotPossible(_) => "ENOTSUP".into(),
    }
  }
}

/// The `errno`-style name of a Win32 error code (Windows' `raw_os_error`), for the codes
/// that mean the same as one of [`Error::code`]'s names.
#[cfg(windows)]
fn windows_code(raw: i32) -> Option<&'static str> {
  use windows_sys::Win32::Foundation as w;
  Some(match raw as u32 {
    w::ERROR_FILE_NOT_FOUND | w::ERROR_PATH_NOT_FOUND | w::ERROR_DIRECTORY | w::ERROR_INVALID_NAME => "ENOENT",
    w::ERROR_ACCESS_DENIED => "EACCES",
    w::ERROR_TOO_MANY_OPEN_FILES => "EMFILE",
    w::ERROR_NOT_ENOUGH_MEMORY | w::ERROR_OUTOFMEMORY => "ENOMEM",
    w::ERROR_BROKEN_PIPE | w::ERROR_NO_DATA => "EPIPE",
    w::ERROR_FILENAME_EXCED_RANGE => "E2BIG",
    _ => return None,
  })
}

impl fmt::Display for Error {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match self {
      Error::Io { context, source } => write!(f, "{context}: {source}"),
      Error::InvalidInput(msg) => write!(f, "invalid input: {msg}"),
      Error::Unsupported(what) => write!(f, "not supported on this platform: {what}"),
      Error::NotPossible(why) => f.write_str(why),
    }
  }
}

impl std::error::Error for Error {
  fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
    match self {
      Error::Io { source, .. } => Some(source),
      _ => None,
    }
  }
}
