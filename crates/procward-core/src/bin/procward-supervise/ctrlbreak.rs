//! `procward-supervise --ctrl-break <group>@<pid>[,<pid>...]...` (and `--ctrl-c`): the
//! graceful step of a Windows tree kill (see `procward_core::kill`).
//!
//! For each argument: detach from any console, attach to the console of the first listed
//! PID that has one (`AttachConsole`), ignore Ctrl-C in this process
//! (`SetConsoleCtrlHandler(NULL, TRUE)`), send the event, and print one line on the
//! standard output the host started us with: `<group> ok <pid>...` with the PIDs attached to
//! that console (`GetConsoleProcessList`, this helper left out), or `<group> err <os error>
//! <step>`. Exit status 0 when every group got its event, 1 otherwise, 2 on bad arguments.
//!
//! - `--ctrl-break`: `CTRL_BREAK_EVENT` to process group `<group>`.
//! - `--ctrl-c`: `CTRL_C_EVENT`, which Windows cannot aim at one group: sent to group 0
//!   (every process on the console), and to `<group>` too, because Wine reads group 0 as the
//!   caller's own group (on Windows, Ctrl-C to a nonzero group reaches nobody).
//!
//! The host starts this helper detached (`DETACHED_PROCESS`) in a group of its own, so the
//! host's console never sees the event, and neither group holds the helper.

use std::fs::File;
use std::io::Write;
use std::mem::ManuallyDrop;
use std::os::windows::io::{AsRawHandle, FromRawHandle};
use windows_sys::Win32::System::Console::{
  AttachConsole, FreeConsole, GenerateConsoleCtrlEvent, SetConsoleCtrlHandler, CTRL_BREAK_EVENT, CTRL_C_EVENT,
};

/// Runs the console mode and exits when the first argument asks for it; returns otherwise.
pub fn run_if_asked() {
  let mut args = std::env::args().skip(1);
  let event = match args.next().as_deref() {
    Some("--ctrl-break") => CTRL_BREAK_EVENT,
    Some("--ctrl-c") => CTRL_C_EVENT,
    _ => return,
  };
  // Attaching may replace the standard handles with the console's: keep the host's pipe.
  let mut out = ManuallyDrop::new(unsafe { File::from_raw_handle(std::io::stdout().as_raw_handle()) });
  let mut report = String::new();
  let mut all_sent = true;
  for spec in args {
    let Some((group, attach)) = parse(&spec) else {
      eprintln!("procward-supervise: bad --ctrl-break target {spec:?} (want <group>@<pid>[,<pid>...])");
      std::process::exit(2);
    };
    let line = match send(event, group, &attach) {
      Ok(members) => {
        let pids: Vec<String> = members.iter().map(u32::to_string).collect();
        format!("{group} ok {}", pids.join(" "))
      }
      Err((code, step)) => {
        all_sent = false;
        format!("{group} err {code} {step}")
      }
    };
    report.push_str(line.trim_end());
    report.push('\n');
  }
  let _ = out.write_all(report.as_bytes());
  std::process::exit(if all_sent { 0 } else { 1 });
}

fn parse(spec: &str) -> Option<(u32, Vec<u32>)> {
  let (group, attach) = spec.split_once('@').unwrap_or((spec, spec));
  let group = group.parse().ok()?;
  let attach = attach.split(',').map(str::parse).collect::<Result<Vec<u32>, _>>().ok()?;
  Some((group, attach))
}

/// Attaches to the first console it can among `attach`'s and sends `event` to `group`.
/// Err: the OS error and the step that failed.
fn send(event: u32, group: u32, attach: &[u32]) -> Result<Vec<u32>, (i32, &'static str)> {
  let mut attached = false;
  let mut err = 0;
  for &pid in attach {
    unsafe { FreeConsole() };
    if unsafe { AttachConsole(pid) } != 0 {
      attached = true;
      break;
    }
    err = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
  }
  if !attached {
    return Err((err, "attach"));
  }
  unsafe { SetConsoleCtrlHandler(None, 1) };
  let sent = if event == CTRL_C_EVENT {
    let everyone = unsafe { GenerateConsoleCtrlEvent(CTRL_C_EVENT, 0) } != 0;
    let the_group = unsafe { GenerateConsoleCtrlEvent(CTRL_C_EVENT, group) } != 0;
    everyone || the_group
  } else {
    unsafe { GenerateConsoleCtrlEvent(event, group) != 0 }
  };
  let result = if sent { Ok(console_members()) } else { Err((std::io::Error::last_os_error().raw_os_error().unwrap_or(0), "send")) };
  unsafe { FreeConsole() };
  result
}

/// The processes attached to the current console, this one left out.
fn console_members() -> Vec<u32> {
  let me = std::process::id();
  procward_core::guard::console_processes().into_iter().map(|p| p as u32).filter(|&p| p != me).collect()
}
