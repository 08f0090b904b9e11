//! How a log part is opened, identified and renamed, per platform.
//!
//! - Unix: files are created 0600 and never opened through a symlink (`O_NOFOLLOW`); a reader
//!   never blocks on a FIFO planted at a part's name (`O_NONBLOCK`); a part's identity is its
//!   inode (`st_ino`), and a rename replaces its target even while someone reads it.
//! - Windows: a part is opened with `FILE_FLAG_OPEN_REPARSE_POINT` (a symlink or junction at
//!   its name is opened as itself, then refused) and with every share mode, `FILE_SHARE_DELETE`
//!   included: a file open elsewhere can be renamed or deleted only when every handle on it
//!   allows that. std and Node (libuv) both open files that way, so the supervisor may rotate
//!   a part while a host reads it. Replacing a *target* that is still open is refused without
//!   POSIX rename semantics (Wine, older Windows): the old `output.log.1` is therefore first
//!   renamed aside to a name of its own and deleted (its name and space go when its last
//!   reader closes it), and a rename refused by a sharing violation (a reader that opened the
//!   file without `FILE_SHARE_DELETE`, such as a virus scanner) is tried again for up to
//!   100 ms. A part's identity is its file index (`nFileIndexHigh:nFileIndexLow`, what Node
//!   reports as `ino`). There are no FIFOs among files and no file modes: a part inherits the
//!   ACL of the session directory, which is private to its user.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// Opens (creates) a part for appending, never through a symlink at its name.
pub(super) fn open_append(path: &Path) -> io::Result<File> {
  let mut options = OpenOptions::new();
  options.create(true).append(true);
  open_private(&mut options, path)
}

/// Creates a new file (0600 on Unix) for writing; fails when something exists at `path`.
pub(super) fn create_new(path: &Path) -> io::Result<File> {
  let mut options = OpenOptions::new();
  options.write(true).create_new(true);
  open_private(&mut options, path)
}

/// Opens a part for reading: not through a symlink at its name, without blocking on a FIFO
/// planted there, and only when it is a regular file with one link (a hard link planted at
/// its name would show another file's content; the supervisor's parts are only ever renamed,
/// never linked). Returns the file and its identity.
pub(super) fn open_part(path: &Path) -> Option<(File, u64)> {
  let mut options = OpenOptions::new();
  options.read(true);
  #[cfg(unix)]
  {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
  }
  #[cfg(windows)]
  {
    use std::os::windows::fs::OpenOptionsExt;
    options.custom_flags(windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT);
  }
  let f = options.open(path).ok()?;
  let meta = f.metadata().ok()?;
  let (id, links) = identity(&f).ok()?;
  (meta.is_file() && !meta.file_type().is_symlink() && links == 1).then_some((f, id))
}

/// The identity (inode or file index) of the part now at `path`, `None` when there is none.
pub(super) fn id_at(path: &Path) -> Option<u64> {
  #[cfg(unix)]
  {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| m.ino())
  }
  #[cfg(windows)]
  {
    // std does not give the file index of a path on stable: open it for its attributes only.
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem::{FILE_FLAG_OPEN_REPARSE_POINT, FILE_READ_ATTRIBUTES};
    let f = OpenOptions::new().access_mode(FILE_READ_ATTRIBUTES).custom_flags(FILE_FLAG_OPEN_REPARSE_POINT).open(path).ok()?;
    identity(&f).ok().map(|(id, _)| id)
  }
}

/// The identity (inode or file index) of an open part and its number of links.
pub(super) fn identity(file: &File) -> io::Result<(u64, u64)> {
  #[cfg(unix)]
  {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata()?;
    Ok((meta.ino(), meta.nlink()))
  }
  #[cfg(windows)]
  {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::{GetFileInformationByHandle, BY_HANDLE_FILE_INFORMATION};
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    if unsafe { GetFileInformationByHandle(file.as_raw_handle(), &mut info) } == 0 {
      return Err(io::Error::last_os_error());
    }
    Ok((((info.nFileIndexHigh as u64) << 32) | info.nFileIndexLow as u64, info.nNumberOfLinks as u64))
  }
}

/// Opens with `options`, privately and never through a link (see the module docs).
fn open_private(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
  #[cfg(unix)]
  {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NOFOLLOW).mode(0o600).open(path)
  }
  #[cfg(windows)]
  {
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem::{FILE_FLAG_OPEN_REPARSE_POINT, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE};
    let f =
      options.share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE).custom_flags(FILE_FLAG_OPEN_REPARSE_POINT).open(path)?;
    if f.metadata()?.file_type().is_symlink() {
      // ELOOP's meaning: the name is a link, and it is not followed.
      return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is a symbolic link", path.display())));
    }
    Ok(f)
  }
}

/// Renames `from` to `to`, replacing `to` (see the module docs for Windows).
pub(super) fn rename(from: &Path, to: &Path) -> io::Result<()> {
  #[cfg(unix)]
  {
    std::fs::rename(from, to)
  }
  #[cfg(windows)]
  {
    use windows_sys::Win32::Foundation::{ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION};
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(100);
    loop {
      match std::fs::rename(from, to) {
        Err(e)
          if matches!(e.raw_os_error(), Some(c) if c == ERROR_SHARING_VIOLATION as i32 || c == ERROR_ACCESS_DENIED as i32)
            && std::time::Instant::now() < deadline =>
        {
          std::thread::sleep(std::time::Duration::from_millis(5));
        }
        other => return other,
      }
    }
  }
}

/// Deletes the part at `path` (if any) so that a rename may take its name. On Windows it is
/// first renamed aside (`<name>.gone-<pid>-<n>`), since a deleted file that a reader still
/// holds keeps its name until that reader closes it. `n` makes the aside name unique.
pub(super) fn drop_part(path: &Path, n: u64) {
  #[cfg(unix)]
  {
    // rename(2) replaces the target, open or not.
    let _ = (path, n);
  }
  #[cfg(windows)]
  {
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".gone-{}-{n}", std::process::id()));
    if rename(path, Path::new(&aside)).is_ok() {
      let _ = std::fs::remove_file(&aside);
    }
  }
}

/// Makes `file` this process's stderr too (a copy of its descriptor or handle, so that it
/// stays valid after the part is closed by a rotation).
pub(super) fn redirect_stderr(file: &File) {
  #[cfg(unix)]
  {
    use std::os::fd::AsRawFd;
    unsafe { libc::dup2(file.as_raw_fd(), 2) };
  }
  #[cfg(windows)]
  {
    use std::os::windows::io::IntoRawHandle;
    use windows_sys::Win32::System::Console::{SetStdHandle, STD_ERROR_HANDLE};
    if let Ok(copy) = file.try_clone() {
      // The copy is leaked on purpose: it is stderr from now on. std looks stderr up at
      // every write, so eprintln! and panics land in the log.
      unsafe { SetStdHandle(STD_ERROR_HANDLE, copy.into_raw_handle()) };
    }
  }
}
