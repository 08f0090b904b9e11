//! Long commands: the script reaches the shell through an inherited descriptor, not `-c`.
//!
//! `execve` caps each argument at `MAX_ARG_STRLEN` (32 pages, 128 KiB on Linux) and all of
//! them with the environment at `ARG_MAX`, so a long command given to `-c` fails with
//! `E2BIG` and nothing runs (a heredoc written by a model easily passes 200 KB). A command
//! longer than [`SCRIPT_THRESHOLD`] is therefore written to a descriptor the shell inherits
//! as fd [`SCRIPT_FD`], and `-c` gets a stub that sources it: `. /dev/fd/3`. The script
//! starts with `exec 3<&-;` on its first line (the line numbers of the command stay as
//! they were), so the descriptor is closed before the command's first word and the job's
//! own children never inherit it. Never a file on disk (the unredacted command must not be
//! written anywhere) and never the job's stdin (it is the job's).
//!
//! - Linux (and Android, FreeBSD): a memfd (`memfd_create`, close-on-exec in the host; the
//!   child's copy on fd 3 is made by `dup2`, which clears the flag), sealed against writes.
//!   Opening `/dev/fd/3` opens the memfd anew at offset 0.
//! - Elsewhere (macOS has no memfd): a pipe, written by a thread of the host after the
//!   spawn, so a script longer than the pipe buffer is not a deadlock.
//!
//! What changes for a long command (short ones are as they always were): the shell runs it
//! as a sourced file, so bash no longer `exec`s its last command. A job whose last command
//! dies of a signal then reports the shell's exit status `128 + N` (as dash does for every
//! command), not the signal. `$0` and the positional parameters are as with `-c`. Only shells
//! of the POSIX family take the stub ([`sources_dot_scripts`]); any other gets `-c` as
//! before, up to `execve`'s limit.

use std::os::fd::OwnedFd;
use std::path::Path;

/// Commands longer than this many bytes go through [`SCRIPT_FD`] (64 KiB: half of Linux's
/// `MAX_ARG_STRLEN`, leaving `ARG_MAX` room for the environment); shorter ones through `-c`.
pub const SCRIPT_THRESHOLD: usize = 64 * 1024;

/// The descriptor the shell reads a long command from.
pub const SCRIPT_FD: i32 = 3;

/// What `-c` runs for a long command.
pub const STUB: &str = ". /dev/fd/3";

/// Put before the command, on its first line: closes the descriptor for everything the
/// command starts.
const PREFIX: &str = "exec 3<&-;";

/// Whether `shell` reads `. /dev/fd/3` and `exec 3<&-` as the POSIX shell language does
/// (by its file name: sh, bash, dash, zsh, ksh and their kin, busybox's ash).
pub fn sources_dot_scripts(shell: &Path) -> bool {
  let name = shell.file_name().and_then(|n| n.to_str()).unwrap_or_default();
  matches!(name, "sh" | "bash" | "dash" | "zsh" | "ksh" | "ksh93" | "mksh" | "oksh" | "loksh" | "pdksh" | "ash" | "yash" | "posh")
}

/// Whether `command` goes through the descriptor when run by `shell`.
pub fn needs_descriptor(command: &str, shell: &Path) -> bool {
  command.len() > SCRIPT_THRESHOLD && sources_dot_scripts(shell)
}

/// The descriptor holding the script for `command` (close-on-exec; [`launch`](crate::launch)
/// puts the child's copy on [`SCRIPT_FD`]), and, where it is a pipe, the thread writing it.
/// Errors: the memfd or pipe cannot be made or written (`EMFILE`, `ENOMEM`).
pub(crate) fn script_descriptor(command: &str) -> std::io::Result<Script> {
  let mut text = String::with_capacity(PREFIX.len() + command.len());
  text.push_str(PREFIX);
  text.push_str(command);
  #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
  {
    memfd(text.as_bytes()).map(|fd| Script { fd, writer: None })
  }
  #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
  {
    piped(text)
  }
}

/// A script's descriptor for the child, and the thread that fills it where it is a pipe.
pub(crate) struct Script {
  pub fd: OwnedFd,
  /// The host's writer of a pipe: started with the pipe, it blocks until the shell reads.
  #[allow(dead_code)]
  writer: Option<std::thread::JoinHandle<()>>,
}

#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn memfd(bytes: &[u8]) -> std::io::Result<OwnedFd> {
  use std::io::Write;
  use std::os::fd::{AsRawFd, FromRawFd};
  let fd = unsafe { libc::memfd_create(c"procward-command".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
  if fd < 0 {
    return Err(std::io::Error::last_os_error());
  }
  let fd = unsafe { OwnedFd::from_raw_fd(fd) };
  let mut file = std::fs::File::from(fd);
  file.write_all(bytes)?;
  let fd = OwnedFd::from(file);
  // The job reads what the host wrote, nothing else (best effort: sealing never fails a spawn).
  let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
  unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) };
  Ok(fd)
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
fn piped(text: String) -> std::io::Result<Script> {
  use std::io::Write;
  let (r, w) = crate::unixpipe::pipe_cloexec()?;
  // The shell reads the script to its end; the writer ends with it (or with EPIPE when the
  // job never reads it, which ends the thread too).
  let writer = std::thread::Builder::new().name("procward-script".into()).spawn(move || {
    let _ = std::fs::File::from(w).write_all(text.as_bytes());
  })?;
  Ok(Script { fd: r, writer: Some(writer) })
}
