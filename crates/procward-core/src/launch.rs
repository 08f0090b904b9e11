//! Starting a job's first process, and waiting for it.
//!
//! On Linux the job starts with `clone(CLONE_VM | CLONE_VFORK)` (glibc's `clone` wrapper),
//! the way glibc's own `posix_spawn` does: the host's address space is shared, not copied,
//! until the child calls `execve`. A Node host has a large address space, and `fork` (what
//! `child_process.spawn` and a Rust `pre_exec` hook use) spends most of a short job's start
//! copying its page tables and then taking copy-on-write faults. `posix_spawn` itself is
//! not enough: it can neither join a cgroup before `execve` nor set a controlling terminal.
//!
//! The child runs `child_main` on its own stack, sharing the host's memory while the
//! host's thread is suspended: it only makes system calls on data the host prepared
//! (no allocation, no locks), in this order: default disposition for every signal, a new
//! session (`setsid`), joining the job's cgroup, stdin/stdout/stderr (`dup2`), a long
//! command's script on fd 3 (`dup2`, which clears close-on-exec; see `script`), the PTY as
//! controlling terminal, the working directory, an empty signal mask, `execve`. A failing
//! step reports its errno through the shared memory and the child exits with 127.
//!
//! Elsewhere `spawn` uses `fork` + `exec` with a `pre_exec` hook; both paths end in a
//! `Launched`.

use crate::job::Launched;
use crate::script::SCRIPT_FD;
#[cfg(target_os = "linux")]
use std::io;

/// What to start: program, full argv, environment, working directory, the descriptors
/// that become stdin, stdout and stderr, and optionally a cgroup and a PTY.
#[cfg(target_os = "linux")]
pub(crate) struct SpawnRequest<'a> {
  pub program: &'a std::path::Path,
  /// Arguments after argv\[0\] (which is the program).
  pub args: &'a [std::ffi::OsString],
  pub env: &'a [(String, String)],
  pub cwd: Option<&'a std::path::Path>,
  pub stdio: [std::os::fd::RawFd; 3],
  /// A long command's script (close-on-exec here): the child gets it on fd 3.
  pub script: Option<std::os::fd::RawFd>,
  /// The job's cgroup directory (`O_DIRECTORY`): the child is created inside it
  /// (`clone3` with `CLONE_INTO_CGROUP`, Linux 5.7+), so no migration is needed.
  pub cgroup_dir: Option<std::os::fd::RawFd>,
  /// Its `cgroup.procs`, to write "0" into before `execve` where `clone3` cannot be used.
  pub cgroup_procs: Option<std::os::fd::RawFd>,
  /// Make stdin (a PTY slave) the controlling terminal.
  pub controlling_tty: bool,
  /// Start with SIGUSR1 blocked (the durable-job supervisor), else with an empty mask.
  pub block_usr1: bool,
}

/// Everything the child needs, prepared by the host: raw pointers into host memory.
#[cfg(target_os = "linux")]
struct ChildPlan {
  program: *const libc::c_char,
  argv: *const *const libc::c_char,
  envp: *const *const libc::c_char,
  cwd: *const libc::c_char,
  stdio: [libc::c_int; 3],
  /// The script's descriptor (never 0-2), or -1.
  script: libc::c_int,
  cgroup_procs: libc::c_int,
  controlling_tty: bool,
  block_usr1: bool,
  /// Written by the child when a step fails: the step's errno.
  errno: libc::c_int,
}

/// The child's side (see the module docs). Runs on its own stack in the host's memory.
#[cfg(target_os = "linux")]
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
  unsafe {
    let plan = &mut *(arg as *mut ChildPlan);
    let fail = |plan: &mut ChildPlan| -> ! {
      plan.errno = *libc::__errno_location();
      if plan.errno == 0 {
        plan.errno = libc::EIO;
      }
      libc::_exit(127)
    };
    // Signals stay blocked until just before execve, so no handler of the host can run
    // here meanwhile.
    reset_signal_dispositions();
    if libc::setsid() < 0 {
      fail(plan);
    }
    if plan.cgroup_procs >= 0 {
      // Best effort: a job outside its cgroup is still contained by session and snapshot.
      libc::write(plan.cgroup_procs, b"0\n".as_ptr().cast(), 2);
    }
    for (target, &fd) in plan.stdio.iter().enumerate() {
      if libc::dup2(fd, target as libc::c_int) < 0 {
        fail(plan);
      }
    }
    if plan.script >= 0 && inherit_script(plan.script) < 0 {
      fail(plan);
    }
    if plan.controlling_tty && libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
      fail(plan);
    }
    if !plan.cwd.is_null() && libc::chdir(plan.cwd) < 0 {
      fail(plan);
    }
    let mut mask: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut mask);
    if plan.block_usr1 {
      libc::sigaddset(&mut mask, libc::SIGUSR1);
    }
    libc::sigprocmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut());
    libc::execve(plan.program, plan.argv, plan.envp);
    fail(plan)
  }
}

/// Puts `fd` on [`SCRIPT_FD`] without close-on-exec, in the child between fork and exec
/// (async-signal-safe calls only). Returns -1 with `errno` set on failure.
fn inherit_script(fd: libc::c_int) -> libc::c_int {
  unsafe {
    if fd == SCRIPT_FD {
      libc::fcntl(fd, libc::F_SETFD, 0)
    } else {
      libc::dup2(fd, SCRIPT_FD)
    }
  }
}

/// Sets every signal's disposition to the default, glibc's internal 32 and 33 included (a
/// process started by glibc's `posix_spawn` ignores them, and an ignored disposition
/// survives `execve`). Raw system calls only, so it is safe between `fork`/`clone` and
/// `execve`: glibc's `sigaction()` refuses 32 and 33, and an all-zero kernel
/// `struct sigaction` is SIG_DFL with no flags and an empty mask on every architecture.
#[cfg(target_os = "linux")]
pub fn reset_signal_dispositions() {
  let dfl = [0u64; 4];
  for sig in 1..=64 {
    if sig != libc::SIGKILL && sig != libc::SIGSTOP {
      unsafe { libc::syscall(libc::SYS_rt_sigaction, sig, dfl.as_ptr(), std::ptr::null_mut::<u64>(), 8usize) };
    }
  }
}

/// `struct clone_args` of clone3(2), up to `cgroup` (CLONE_ARGS_SIZE_VER2, 88 bytes).
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
  flags: u64,
  pidfd: u64,
  child_tid: u64,
  parent_tid: u64,
  exit_signal: u64,
  stack: u64,
  stack_size: u64,
  tls: u64,
  set_tid: u64,
  set_tid_size: u64,
  cgroup: u64,
}

/// `clone3(CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP)` with the child on `stack` running
/// [`child_main`]`(arg)`. glibc has no wrapper for it, so the system call and the child's
/// first call are written out per architecture, the way glibc's own `clone3` is. Returns
/// the PID, or -1 (any failure: no clone3, no CLONE_INTO_CGROUP, a cgroup that went away)
/// and the caller falls back to `clone` plus a write to `cgroup.procs`.
#[cfg(target_os = "linux")]
unsafe fn clone3_into_cgroup(stack: *mut libc::c_void, cgroup_dir: libc::c_int, arg: *mut libc::c_void) -> libc::pid_t {
  const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
  // The same number on x86_64 and aarch64 (not every libc target defines SYS_clone3).
  #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
  const SYS_CLONE3: libc::c_long = 435;
  let mut args = CloneArgs {
    flags: (libc::CLONE_VM | libc::CLONE_VFORK) as u64 | CLONE_INTO_CGROUP,
    exit_signal: libc::SIGCHLD as u64,
    stack: stack as u64,
    stack_size: CHILD_STACK as u64,
    cgroup: cgroup_dir as u64,
    ..Default::default()
  };
  let f: extern "C" fn(*mut libc::c_void) -> libc::c_int = child_main;
  let ret: i64;
  #[cfg(target_arch = "x86_64")]
  unsafe {
    // The child returns from `syscall` with rax = 0 on its own stack: it calls f(arg) and
    // never comes back (execve or _exit); `ud2` would trap if it did.
    std::arch::asm!(
      "syscall",
      "test rax, rax",
      "jnz 2f",
      "xor ebp, ebp",
      "mov rdi, r12",
      "call r13",
      "ud2",
      "2:",
      inlateout("rax") SYS_CLONE3 => ret,
      in("rdi") &raw mut args,
      in("rsi") std::mem::size_of::<CloneArgs>(),
      in("r12") arg,
      in("r13") f,
      lateout("rcx") _,
      lateout("r11") _,
      options(nostack),
    );
  }
  #[cfg(target_arch = "aarch64")]
  unsafe {
    std::arch::asm!(
      "svc #0",
      "cbnz x0, 2f",
      "mov x29, xzr",
      "mov x30, xzr",
      "mov x0, x9",
      "blr x10",
      "brk #1",
      "2:",
      inlateout("x0") &raw mut args => ret,
      in("x1") std::mem::size_of::<CloneArgs>(),
      in("x8") SYS_CLONE3,
      in("x9") arg,
      in("x10") f,
      options(nostack),
    );
  }
  #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
  {
    let _ = (&mut args, f, arg);
    ret = -1;
  }
  if ret < 0 {
    -1
  } else {
    ret as libc::pid_t
  }
}

/// Stack of the child between `clone` and `execve`.
#[cfg(target_os = "linux")]
const CHILD_STACK: usize = 128 * 1024;

/// Starts `req` (see the module docs). Errors: the errno of the failing step (`ENOENT` for
/// a missing program or cwd, `EMFILE`, `EAGAIN`, …); the child is reaped then.
#[cfg(target_os = "linux")]
pub(crate) fn spawn_vfork(req: &SpawnRequest) -> io::Result<Launched> {
  use std::ffi::{CString, OsStr};
  use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
  use std::os::unix::ffi::OsStrExt;
  let c = |s: &OsStr| {
    CString::new(s.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "an argument, variable or path contains a NUL byte"))
  };
  let program = c(req.program.as_os_str())?;
  let mut argv = vec![program.clone()];
  for a in req.args {
    argv.push(c(a)?);
  }
  let envp = req.env.iter().map(|(k, v)| c(OsStr::new(&format!("{k}={v}")))).collect::<io::Result<Vec<_>>>()?;
  let cwd = req.cwd.map(|p| c(p.as_os_str())).transpose()?;
  let ptrs = |v: &[CString]| v.iter().map(|s| s.as_ptr()).chain(std::iter::once(std::ptr::null())).collect::<Vec<_>>();
  let (argv_p, envp_p) = (ptrs(&argv), ptrs(&envp));
  // Sources must not be 0-2, or one dup2 would overwrite another's source.
  let mut moved: Vec<OwnedFd> = Vec::new();
  let mut stdio = req.stdio;
  let mut script = req.script.unwrap_or(-1);
  for fd in stdio.iter_mut().chain(std::iter::once(&mut script).filter(|s| **s >= 0)) {
    if *fd < 3 {
      let high = unsafe { libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 3) };
      if high < 0 {
        return Err(io::Error::last_os_error());
      }
      moved.push(unsafe { OwnedFd::from_raw_fd(high) });
      *fd = moved.last().map_or(high, AsRawFd::as_raw_fd);
    }
  }
  let mut plan = ChildPlan {
    program: program.as_ptr(),
    argv: argv_p.as_ptr(),
    envp: envp_p.as_ptr(),
    cwd: cwd.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
    stdio,
    script,
    cgroup_procs: req.cgroup_procs.unwrap_or(-1),
    controlling_tty: req.controlling_tty,
    block_usr1: req.block_usr1,
    errno: 0,
  };

  unsafe {
    let stack = libc::mmap(
      std::ptr::null_mut(),
      CHILD_STACK,
      libc::PROT_READ | libc::PROT_WRITE,
      libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
      -1,
      0,
    );
    if stack == libc::MAP_FAILED {
      return Err(io::Error::last_os_error());
    }
    // No signal handler of the host may run in the child while it shares the host's
    // memory: block everything around the clone (the child unblocks before execve).
    let mut all: libc::sigset_t = std::mem::zeroed();
    let mut old: libc::sigset_t = std::mem::zeroed();
    libc::sigfillset(&mut all);
    libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    let top = (stack as usize + CHILD_STACK) & !15;
    // Straight into the cgroup where the kernel can: joining it later (a write to
    // cgroup.procs) waits for an RCU grace period, about 10 ms on an otherwise idle host.
    let mut pid = -1;
    if let Some(dir) = req.cgroup_dir {
      let procs = std::mem::replace(&mut plan.cgroup_procs, -1);
      pid = clone3_into_cgroup(stack, dir, (&raw mut plan).cast());
      if pid < 0 {
        plan.cgroup_procs = procs;
      }
    }
    if pid < 0 {
      pid = libc::clone(child_main, top as *mut libc::c_void, libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD, (&raw mut plan).cast());
    }
    let clone_error = io::Error::last_os_error();
    libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    libc::munmap(stack, CHILD_STACK);
    if pid < 0 {
      return Err(clone_error);
    }
    // CLONE_VFORK: we run again once the child called execve or exited.
    let errno = std::ptr::read_volatile(&plan.errno);
    let mut child = Launched::new(pid);
    if errno != 0 {
      let _ = child.wait();
      return Err(io::Error::from_raw_os_error(errno));
    }
    Ok(child)
  }
}

#[cfg(not(target_os = "linux"))]
/// `fork` + `exec` with a `pre_exec` hook: `setsid`, joining the cgroup, the PTY's
/// controlling terminal, default signal dispositions and an empty mask.
pub(crate) fn fork_exec(
  opts: &crate::job::SpawnOptions,
  program: &std::path::Path,
  args: &[std::ffi::OsString],
  stdio: [&std::os::fd::OwnedFd; 3],
  script: Option<&std::os::fd::OwnedFd>,
  cgroup_procs: Option<&std::fs::File>,
) -> std::io::Result<Launched> {
  use std::os::unix::process::CommandExt;
  use std::process::{Command, Stdio};
  let mut cmd = Command::new(program);
  cmd.args(args);
  let [i, o, e] = stdio;
  cmd.stdin(Stdio::from(i.try_clone()?)).stdout(Stdio::from(o.try_clone()?)).stderr(Stdio::from(e.try_clone()?));
  if let Some(cwd) = &opts.cwd {
    cmd.current_dir(cwd);
  }
  if let Some(env) = &opts.env {
    cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
  }
  let is_pty = matches!(opts.input, crate::job::Input::Pty(_));
  let block_usr1 = matches!(opts.capture, crate::job::Capture::Durable { .. });
  let cgroup_fd = cgroup_procs.map(std::os::fd::AsRawFd::as_raw_fd);
  // Above 0-2, which the child's stdio takes before the hook runs.
  let script = script.map(|fd| fd.try_clone()).transpose()?;
  let script_fd = match &script {
    Some(fd) if std::os::fd::AsRawFd::as_raw_fd(fd) < 3 => {
      let high = unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(fd), libc::F_DUPFD_CLOEXEC, 3) };
      if high < 0 {
        return Err(std::io::Error::last_os_error());
      }
      Some(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(high) })
    }
    _ => script,
  };
  let script_raw = script_fd.as_ref().map(std::os::fd::AsRawFd::as_raw_fd);
  unsafe {
    cmd.pre_exec(move || {
      if let Some(fd) = script_raw {
        if inherit_script(fd) < 0 {
          return Err(std::io::Error::last_os_error());
        }
      }
      if libc::setsid() < 0 {
        return Err(std::io::Error::last_os_error());
      }
      if let Some(fd) = cgroup_fd {
        // Best effort: a job outside its cgroup is still contained by session and snapshot.
        libc::write(fd, b"0\n".as_ptr().cast(), 2);
      }
      if is_pty {
        crate::pty::take_controlling_terminal()?;
      }
      reset_signals_in_child();
      if block_usr1 {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGUSR1);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
      }
      Ok(())
    });
  }
  let child = cmd.spawn()?;
  drop(script_fd);
  Ok(Launched::new(child.id() as i32))
}

#[cfg(not(target_os = "linux"))]
/// Resets signal state in the child between fork and exec. Only async-signal-safe calls.
fn reset_signals_in_child() {
  unsafe {
    for sig in 1..32 {
      if sig != libc::SIGKILL && sig != libc::SIGSTOP {
        libc::signal(sig, libc::SIG_DFL);
      }
    }
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
  }
}
