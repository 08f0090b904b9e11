//! The Job Object that contains a job's process tree.
//!
//! Every job runs inside a Job Object created for it before it runs (it starts suspended,
//! is assigned, then resumed), so every process it starts is in the job too, including
//! those that leave its process group or console. The job's name comes from the job's
//! identity, `Local\procward-job-<pid>-<start_time>` (start time: the creation time as
//! `identity` reports it, 100 ns units since 1601), so any process of the same session
//! can open it by name (`OpenJobObjectW`) to kill the tree, and a reused PID never names
//! the old job.
//!
//! The job is created with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`: when the last handle to it
//! closes, every process still in it is terminated. Whoever holds the handle keeps the tree
//! alive (the host for pipe and PTY jobs, `procward-supervise.exe` for durable ones), and a
//! host that dies takes its non-durable jobs with it instead of leaving them unowned.

use std::io;
use std::mem::{size_of, zeroed};
use std::os::windows::io::{AsRawHandle, BorrowedHandle, FromRawHandle, OwnedHandle};
use windows_sys::Win32::Foundation::{GetLastError, ERROR_ALREADY_EXISTS};
use windows_sys::Win32::System::JobObjects::{
  AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation,
  QueryInformationJobObject, SetInformationJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
  JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};

/// An open handle to a job's Job Object. Dropping the last handle to the job terminates
/// every process still in it (`KILL_ON_JOB_CLOSE`).
#[derive(Debug)]
pub struct JobObject {
  handle: OwnedHandle,
}

impl JobObject {
  /// The job's name in the session namespace: `Local\procward-job-<pid>-<start_time>`.
  pub fn name(pid: u32, start_time: u64) -> String {
    format!(r"Local\procward-job-{pid}-{start_time}")
  }

  /// Creates the job named after `(pid, start_time)` with `KILL_ON_JOB_CLOSE`.
  ///
  /// Errors: the OS error of `CreateJobObjectW` or `SetInformationJobObject`;
  /// `ERROR_ALREADY_EXISTS` when a job of that name exists already (never joined: someone
  /// else made it).
  pub fn create(pid: u32, start_time: u64) -> io::Result<JobObject> {
    let name: Vec<u16> = Self::name(pid, start_time).encode_utf16().chain(std::iter::once(0)).collect();
    let raw = unsafe { CreateJobObjectW(std::ptr::null(), name.as_ptr()) };
    if raw.is_null() {
      return Err(io::Error::last_os_error());
    }
    let existed = unsafe { GetLastError() } == ERROR_ALREADY_EXISTS;
    let job = JobObject { handle: unsafe { OwnedHandle::from_raw_handle(raw) } };
    if existed {
      return Err(io::Error::from_raw_os_error(ERROR_ALREADY_EXISTS as i32));
    }
    let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { zeroed() };
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    let ok = unsafe {
      SetInformationJobObject(
        job.handle.as_raw_handle(),
        JobObjectExtendedLimitInformation,
        (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
        size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
      )
    };
    if ok == 0 {
      return Err(io::Error::last_os_error());
    }
    Ok(job)
  }

  /// Puts a process (a handle with `PROCESS_SET_QUOTA | PROCESS_TERMINATE`) in the job.
  /// Errors: the OS error of `AssignProcessToJobObject` (`ERROR_ACCESS_DENIED` when the
  /// process is in a job that allows no nesting, before Windows 8).
  pub fn assign(&self, process: BorrowedHandle<'_>) -> io::Result<()> {
    if unsafe { AssignProcessToJobObject(self.handle.as_raw_handle(), process.as_raw_handle()) } == 0 {
      return Err(io::Error::last_os_error());
    }
    Ok(())
  }

  /// How many processes are in the job now (`ActiveProcesses` of its accounting).
  pub fn active_processes(&self) -> io::Result<u32> {
    let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { zeroed() };
    let ok = unsafe {
      QueryInformationJobObject(
        self.handle.as_raw_handle(),
        JobObjectBasicAccountingInformation,
        (&mut info as *mut JOBOBJECT_BASIC_ACCOUNTING_INFORMATION).cast(),
        size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
        std::ptr::null_mut(),
      )
    };
    if ok == 0 {
      return Err(io::Error::last_os_error());
    }
    Ok(info.ActiveProcesses)
  }

  /// The job's handle, for the calls this type does not wrap (`TerminateJobObject`, say).
  pub fn handle(&self) -> BorrowedHandle<'_> {
    use std::os::windows::io::AsHandle;
    self.handle.as_handle()
  }
}
