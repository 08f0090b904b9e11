//! Starting a job's first process on Windows: [`launch`].
//!
//! The order is what makes containment hold: `CreateProcessW` with `CREATE_SUSPENDED` (the
//! job's code has not run yet, so it has started nothing), then the Job Object named after
//! its identity is created and the process assigned to it, then its main thread resumed.
//! Everything the job starts from then on is in the job.
//!
//! Flags: `CREATE_NEW_PROCESS_GROUP` (the job leads a process group whose id is its PID,
//! the target of `CTRL_BREAK_EVENT`), `CREATE_NO_WINDOW` for pipe jobs (a console of its
//! own, without a window, so Ctrl-Break never reaches the host's console), and
//! `CREATE_UNICODE_ENVIRONMENT`. A PTY job is attached to a pseudoconsole instead of a
//! console of its own (`PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE`).
//!
//! Handles: only the job's own ends of its pipes are inherited
//! (`PROC_THREAD_ATTRIBUTE_HANDLE_LIST`), and they are inheritable only while one
//! `CreateProcessW` runs, under a lock, so two jobs started at once never hold each other's
//! pipes open.

use super::cmdline::{command_line, environment_block, find_program, wide};
use super::conpty::PseudoConsole;
use super::jobobject::JobObject;
use super::pipe;
use crate::error::{Error, Result};
use crate::job::{PtySize, SpawnOptions};
use std::io;
use std::mem::{size_of, zeroed};
use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle, OwnedHandle};
use std::sync::Mutex;
use windows_sys::Win32::Foundation::{ERROR_DIRECTORY, FILETIME, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Threading::{
  CreateProcessW, DeleteProcThreadAttributeList, GetProcessTimes, InitializeProcThreadAttributeList, ResumeThread, TerminateProcess,
  UpdateProcThreadAttribute, CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW, CREATE_SUSPENDED, CREATE_UNICODE_ENVIRONMENT,
  EXTENDED_STARTUPINFO_PRESENT, PROCESS_CREATION_FLAGS, PROCESS_INFORMATION, PROC_THREAD_ATTRIBUTE_HANDLE_LIST,
  PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE, STARTF_USESTDHANDLES, STARTUPINFOEXW,
};

/// Where a pipe job's stdin comes from.
#[derive(Debug)]
pub enum StdinFrom {
  /// The NUL device: a job that reads stdin sees EOF at once.
  Null,
  /// A new pipe; the host's write end is [`Launched::input`].
  Pipe,
  /// A handle the caller opened (a named pipe, a file), readable, synchronous.
  Handle(OwnedHandle),
}

/// The job's stdin, stdout and stderr.
#[derive(Debug)]
pub enum Stdio {
  /// stdout and stderr share one new pipe (merged in arrival order), read through
  /// [`Launched::output`]; stdin as given.
  Pipe { stdin: StdinFrom },
  /// A new pseudoconsole of this size: the job's console; [`Launched::output`] reads its
  /// screen, [`Launched::input`] types into it.
  Pty(PtySize),
}

/// A started job: its first process, running, inside its Job Object.
#[derive(Debug)]
pub struct Launched {
  /// The process id; also the id of the process group it leads.
  pub pid: i32,
  /// Its creation time (100 ns units since 1601-01-01, as `identity` reports it).
  pub start_time: u64,
  /// The process handle (all access): its exit is signalled here.
  pub process: OwnedHandle,
  /// The Job Object `Local\procward-job-<pid>-<start_time>`; dropping the last handle to
  /// it terminates what is still in it.
  pub job: JobObject,
  /// The host's end of the output: overlapped, read (see `pipe::output_pipe`).
  pub output: OwnedHandle,
  /// The host's end of the job's stdin (pipe) or of the pseudoconsole's input: synchronous,
  /// write. `None` for [`StdinFrom::Null`] and [`StdinFrom::Handle`].
  pub input: Option<OwnedHandle>,
  /// The pseudoconsole of a PTY job; closing it ends its output.
  pub(crate) console: Option<PseudoConsole>,
}

/// Serializes the moments when the job's pipe ends are inheritable (see the module docs).
pub(crate) static INHERIT_LOCK: Mutex<()> = Mutex::new(());

/// Starts `<opts.shell> <opts.shell_args...> <opts.command>` (see `cmdline` for the
/// quoting) suspended, assigns it to its new Job Object, and resumes it.
///
/// Uses `shell`, `shell_args`, `command`, `cwd` and `env` of `opts` (the capture and input
/// of `opts` are the caller's business: `stdio` says what the job gets).
///
/// Errors (the command never appears in them; it may hold secrets):
/// - `InvalidInput`: the command line is over its limit (8191 characters for cmd.exe) or
///   holds a NUL; an unusable environment entry;
/// - `Io` with `ENOENT`: the shell is not found ("finding the shell ..."), the working
///   directory does not exist ("starting ... in ...");
/// - `Io`: a pipe, the pseudoconsole, `CreateProcessW`, the Job Object or the resume
///   failed; a process that was created is terminated then.
pub fn launch(opts: &SpawnOptions, stdio: Stdio) -> Result<Launched> {
  let shell =
    find_program(&opts.shell, opts.env.as_deref()).map_err(|e| Error::io(format!("finding the shell {}", opts.shell.display()), e))?;
  let what = || {
    let cwd = opts.cwd.as_ref().map_or_else(|| "the host's cwd".to_string(), |c| c.display().to_string());
    format!("starting {} in {cwd}", opts.shell.display())
  };
  if let Some(cwd) = &opts.cwd {
    if !cwd.is_dir() {
      return Err(Error::io(what(), io::Error::from_raw_os_error(ERROR_DIRECTORY as i32)));
    }
  }
  let mut line = command_line(&shell, &opts.shell_args, &opts.command)?;
  let env = opts.env.as_deref().map(environment_block).transpose()?;

  // The job's ends (closed here once it started) and the host's.
  let (output, output_job) = pipe::output_pipe().map_err(|e| Error::io("creating the output pipe", e))?;
  let (input, stdin_job, console) = match stdio {
    Stdio::Pipe { stdin: StdinFrom::Null } => (None, pipe::null_device(false).map_err(|e| Error::io("opening NUL", e))?, None),
    Stdio::Pipe { stdin: StdinFrom::Handle(h) } => (None, h, None),
    Stdio::Pipe { stdin: StdinFrom::Pipe } | Stdio::Pty(_) => {
      let (host, job) = pipe::input_pipe().map_err(|e| Error::io("creating the stdin pipe", e))?;
      let console = match stdio {
        Stdio::Pty(size) => Some(PseudoConsole::new(size, &job, &output_job).map_err(|e| match e.kind() {
          io::ErrorKind::Unsupported => Error::Unsupported("PTY sessions before Windows 10 1809 (no ConPTY)"),
          _ => Error::io("creating a pseudoconsole", e),
        })?),
        _ => None,
      };
      (Some(host), job, console)
    }
  };

  let created = create_suspended(&shell, &mut line, env.as_deref(), opts, [&stdin_job, &output_job], console.as_ref());
  // The job has its own copies now (or conhost has, for a PTY): ours must close, or the
  // output pipe never reaches EOF.
  drop((stdin_job, output_job));
  let (process, thread, pid) = created.map_err(|e| Error::io(what(), e))?;
  let started = contain(&process, &thread, pid);
  match started {
    Ok((start_time, job)) => Ok(Launched { pid: pid as i32, start_time, process, job, output, input, console }),
    Err(e) => {
      // Suspended or not yet contained: it never ran outside its job, or ran only alone.
      unsafe { TerminateProcess(process.as_raw_handle(), 1) };
      Err(e)
    }
  }
}

/// Reads the creation time, creates the Job Object, assigns the process and resumes it.
fn contain(process: &OwnedHandle, thread: &OwnedHandle, pid: u32) -> Result<(u64, JobObject)> {
  let start_time = creation_time(process).map_err(|e| Error::io(format!("reading the creation time of {pid}"), e))?;
  let job = JobObject::create(pid, start_time)
    .map_err(|e| Error::io(format!("creating the Job Object {}", JobObject::name(pid, start_time)), e))?;
  job.assign(process.as_handle()).map_err(|e| Error::io(format!("assigning {pid} to its Job Object"), e))?;
  if unsafe { ResumeThread(thread.as_raw_handle()) } == u32::MAX {
    return Err(Error::io(format!("resuming {pid}"), io::Error::last_os_error()));
  }
  Ok((start_time, job))
}

/// A process's creation time in 100 ns units since 1601-01-01 (`GetProcessTimes`).
pub fn creation_time(process: &OwnedHandle) -> io::Result<u64> {
  let mut t: [FILETIME; 4] = unsafe { zeroed() };
  let [created, exited, kernel, user] = &mut t;
  if unsafe { GetProcessTimes(process.as_raw_handle(), created, exited, kernel, user) } == 0 {
    return Err(io::Error::last_os_error());
  }
  Ok((u64::from(t[0].dwHighDateTime) << 32) | u64::from(t[0].dwLowDateTime))
}

/// A `PROC_THREAD_ATTRIBUTE_LIST` holding one attribute, freed on drop.
pub(crate) struct AttributeList {
  buf: Vec<usize>,
}

impl AttributeList {
  /// A list with `attribute` set to `value` (`size` bytes), which must outlive the list.
  pub(crate) fn one(attribute: u32, value: *const std::ffi::c_void, size: usize) -> io::Result<Self> {
    let mut bytes = 0usize;
    unsafe { InitializeProcThreadAttributeList(std::ptr::null_mut(), 1, 0, &mut bytes) };
    let mut list = AttributeList { buf: vec![0usize; bytes.div_ceil(size_of::<usize>())] };
    if unsafe { InitializeProcThreadAttributeList(list.ptr(), 1, 0, &mut bytes) } == 0 {
      return Err(io::Error::last_os_error());
    }
    if unsafe { UpdateProcThreadAttribute(list.ptr(), 0, attribute as usize, value, size, std::ptr::null_mut(), std::ptr::null()) } == 0 {
      let e = io::Error::last_os_error();
      unsafe { DeleteProcThreadAttributeList(list.ptr()) };
      list.buf.clear();
      return Err(e);
    }
    Ok(list)
  }

  pub(crate) fn ptr(&mut self) -> *mut std::ffi::c_void {
    self.buf.as_mut_ptr().cast()
  }
}

impl Drop for AttributeList {
  fn drop(&mut self) {
    if !self.buf.is_empty() {
      unsafe { DeleteProcThreadAttributeList(self.ptr()) };
    }
  }
}

/// `CreateProcessW` with the flags of the module docs; `(process, main thread, pid)`.
fn create_suspended(
  shell: &std::path::Path,
  line: &mut [u16],
  env: Option<&[u16]>,
  opts: &SpawnOptions,
  [stdin, output]: [&OwnedHandle; 2],
  console: Option<&PseudoConsole>,
) -> io::Result<(OwnedHandle, OwnedHandle, u32)> {
  let mut si: STARTUPINFOEXW = unsafe { zeroed() };
  si.StartupInfo.cb = size_of::<STARTUPINFOEXW>() as u32;
  // A PTY job inherits no handles: invalid standard handles make Windows give it the
  // pseudoconsole's (without STARTF_USESTDHANDLES it would get the host's values, which
  // may be redirected to files: wezterm's fix). Wine 8 leaves them invalid instead: there,
  // only a program that opens CONIN$/CONOUT$ itself reaches the pseudoconsole.
  si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
  (si.StartupInfo.hStdInput, si.StartupInfo.hStdOutput, si.StartupInfo.hStdError) =
    (INVALID_HANDLE_VALUE, INVALID_HANDLE_VALUE, INVALID_HANDLE_VALUE);
  let mut flags = CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP | CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT;
  let inherited: [HANDLE; 2] = [stdin.as_raw_handle(), output.as_raw_handle()];
  let mut attributes = match console {
    Some(c) => {
      let hpc = c.raw();
      // The attribute's value is the HPCON itself, not a pointer to it.
      AttributeList::one(PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE, hpc as *const std::ffi::c_void, size_of::<isize>())?
    }
    None => {
      flags |= CREATE_NO_WINDOW;
      (si.StartupInfo.hStdInput, si.StartupInfo.hStdOutput, si.StartupInfo.hStdError) = (inherited[0], inherited[1], inherited[1]);
      AttributeList::one(PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherited.as_ptr().cast(), size_of::<[HANDLE; 2]>())?
    }
  };
  si.lpAttributeList = attributes.ptr();
  let app = wide(shell.as_os_str());
  let cwd = opts.cwd.as_ref().map(|c| wide(c.as_os_str()));
  let inherit = console.is_none();
  let ok = {
    let _guard = INHERIT_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if inherit {
      pipe::set_inheritable(stdin, true)?;
      if let Err(e) = pipe::set_inheritable(output, true) {
        let _ = pipe::set_inheritable(stdin, false);
        return Err(e);
      }
    }
    let created = create_process(&app, line, inherit, flags, env, cwd.as_deref(), &si);
    if inherit {
      let _ = pipe::set_inheritable(stdin, false);
      let _ = pipe::set_inheritable(output, false);
    }
    created
  };
  let pi = ok?;
  Ok(unsafe { (OwnedHandle::from_raw_handle(pi.hProcess), OwnedHandle::from_raw_handle(pi.hThread), pi.dwProcessId) })
}

/// `CreateProcessW(app, line, no security attributes, inherit, flags, env, cwd, si)`: the
/// process and thread handles (the caller owns them) and ids. Errors: the OS error.
pub(crate) fn create_process(
  app: &[u16],
  line: &mut [u16],
  inherit: bool,
  flags: PROCESS_CREATION_FLAGS,
  env: Option<&[u16]>,
  cwd: Option<&[u16]>,
  si: &STARTUPINFOEXW,
) -> io::Result<PROCESS_INFORMATION> {
  let mut pi: PROCESS_INFORMATION = unsafe { zeroed() };
  let ok = unsafe {
    CreateProcessW(
      app.as_ptr(),
      line.as_mut_ptr(),
      std::ptr::null(),
      std::ptr::null(),
      i32::from(inherit),
      flags,
      env.map_or(std::ptr::null(), |e| e.as_ptr().cast()),
      cwd.map_or(std::ptr::null(), <[u16]>::as_ptr),
      &si.StartupInfo,
      &mut pi,
    )
  };
  if ok == 0 {
    return Err(io::Error::last_os_error());
  }
  Ok(pi)
}
