//! Close-on-exec pipes and non-blocking descriptors for the Unix spawn, the input writer, the long-command script and the
//! supervisor (published as `spawn::pipe_cloexec`).

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use std::os::fd::OwnedFd;

/// A pipe whose both ends are close-on-exec, so no other child inherits them.
pub fn pipe_cloexec() -> std::io::Result<(OwnedFd, OwnedFd)> {
  #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
  {
    Ok(nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?)
  }
  #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
  {
    // No pipe2 (macOS): a fork on another thread between pipe and fcntl could inherit
    // the ends; procward spawns from the JS thread only, which keeps that window closed.
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    let (r, w) = nix::unistd::pipe()?;
    fcntl(&r, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    fcntl(&w, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    Ok((r, w))
  }
}

/// Sets `O_NONBLOCK` on a descriptor (for the host's input side).
pub(crate) fn nonblocking(fd: &OwnedFd) -> std::io::Result<()> {
  let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
  fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
  Ok(())
}
