//! The killer's side of a job's Job Object: opened by the name the job's identity gives it
//! (`Local\procward-job-<pid>-<start_time>`, see [`JobObject::name`]), from any process of
//! the same session, so no handle has to be passed around.
//!
//! A kill opens it with `JOB_OBJECT_QUERY | JOB_OBJECT_TERMINATE` only: it lists the members
//! (`JobObjectBasicProcessIdList`), asks whether a process is in it (`IsProcessInJob`) and
//! ends them all at once (`TerminateJobObject`). The job is created with
//! `KILL_ON_JOB_CLOSE`, so if the holder closed its handle meanwhile, closing ours (the last)
//! ends whatever is left too.

use super::killprocess::{Process, TERMINATED_EXIT_CODE};
use crate::windows::jobobject::JobObject;
use std::io;
use std::mem::size_of;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use windows_sys::Win32::Foundation::{ERROR_FILE_NOT_FOUND, ERROR_MORE_DATA, HANDLE};
use windows_sys::Win32::System::JobObjects::{
  IsProcessInJob, JobObjectBasicProcessIdList, OpenJobObjectW, QueryInformationJobObject, TerminateJobObject,
  JOBOBJECT_BASIC_PROCESS_ID_LIST,
};
use windows_sys::Win32::System::Threading::GetCurrentProcess;

// Job Object access rights (winnt.h; windows-sys keeps them in its large SystemServices).
const JOB_OBJECT_QUERY: u32 = 0x0004;
const JOB_OBJECT_TERMINATE: u32 = 0x0008;

/// A job's Job Object, opened by name for a kill.
#[derive(Debug)]
pub(crate) struct KillJob {
  handle: OwnedHandle,
}

impl KillJob {
  /// Opens the job of the root `(pid, start_time)`. `Ok(None)`: no such job (none was
  /// created, or every holder closed it and it ended).
  pub(crate) fn open(pid: i32, start_time: u64) -> io::Result<Option<KillJob>> {
    let name: Vec<u16> = JobObject::name(pid as u32, start_time).encode_utf16().chain(std::iter::once(0)).collect();
    let raw = unsafe { OpenJobObjectW(JOB_OBJECT_QUERY | JOB_OBJECT_TERMINATE, 0, name.as_ptr()) };
    if raw.is_null() {
      let err = io::Error::last_os_error();
      return if err.raw_os_error() == Some(ERROR_FILE_NOT_FOUND as i32) { Ok(None) } else { Err(err) };
    }
    Ok(Some(KillJob { handle: unsafe { OwnedHandle::from_raw_handle(raw) } }))
  }

  /// The PIDs in the job now.
  pub(crate) fn members(&self) -> io::Result<Vec<i32>> {
    // The list is a header of two u32 then one usize per PID; grow until it fits.
    let mut room = 64usize;
    loop {
      let header = size_of::<JOBOBJECT_BASIC_PROCESS_ID_LIST>() - size_of::<usize>();
      let mut buf = vec![0usize; room + header.div_ceil(size_of::<usize>())];
      let bytes = (buf.len() * size_of::<usize>()) as u32;
      let list = buf.as_mut_ptr().cast::<JOBOBJECT_BASIC_PROCESS_ID_LIST>();
      let ok = unsafe { QueryInformationJobObject(self.raw(), JobObjectBasicProcessIdList, list.cast(), bytes, std::ptr::null_mut()) };
      let (assigned, listed) = unsafe { ((*list).NumberOfAssignedProcesses as usize, (*list).NumberOfProcessIdsInList as usize) };
      if ok == 0 && io::Error::last_os_error().raw_os_error() != Some(ERROR_MORE_DATA as i32) {
        return Err(io::Error::last_os_error());
      }
      if ok != 0 && listed >= assigned {
        let ids = unsafe { std::slice::from_raw_parts(std::ptr::addr_of!((*list).ProcessIdList).cast::<usize>(), listed) };
        return Ok(ids.iter().map(|&p| p as i32).collect());
      }
      room = assigned.max(room * 2) + 16;
    }
  }

  /// Whether `process` (a held handle, so its PID is its own) is in this job: asked with
  /// `IsProcessInJob`, or looked up in the member list when the handle's rights do not
  /// allow the question.
  pub(crate) fn holds(&self, process: &Process) -> bool {
    let mut inside = 0;
    if unsafe { IsProcessInJob(process.raw(), self.raw(), &mut inside) } != 0 {
      return inside != 0;
    }
    self.members().is_ok_and(|m| m.contains(&process.pid))
  }

  /// Whether the calling process is in this job: terminating the job would end the host.
  pub(crate) fn holds_host(&self) -> bool {
    let mut inside = 0;
    let asked = unsafe { IsProcessInJob(GetCurrentProcess(), self.raw(), &mut inside) } != 0;
    // Unanswered: assume the worst, and end the job's members one by one.
    !asked || inside != 0
  }

  /// Terminates every process in the job (`TerminateJobObject`, exit code 1).
  pub(crate) fn terminate(&self) -> io::Result<()> {
    if unsafe { TerminateJobObject(self.raw(), TERMINATED_EXIT_CODE) } == 0 {
      return Err(io::Error::last_os_error());
    }
    Ok(())
  }

  fn raw(&self) -> HANDLE {
    self.handle.as_raw_handle()
  }
}
