//! A pseudoconsole job's screen: conhost's VT stream drawn by the same emulator as a Unix
//! PTY's. Run under Wine by `scripts/platforms/windows.sh` (or `cargo test` on Windows).
#![cfg(windows)]

mod windows_common;

use procward_core::job::{Input, PtySize, SpawnOptions};
use procward_core::status::ExitInfo;
use windows_common::{start, until_exit};

#[test]
fn the_screen_shows_what_a_console_program_printed() {
  let mut opts = SpawnOptions::new("echo procward-screen");
  // `jobkid console` hands cmd the console's handles (Wine 8 gives a pseudoconsole's first
  // process none); it is built by `cargo test` beside the test executables.
  let exe = std::env::current_exe().unwrap();
  opts.shell = exe.parent().and_then(|deps| deps.parent()).unwrap().join("examples").join("jobkid.exe");
  opts.shell_args = ["console", "cmd", "/d", "/s", "/c"].map(String::from).to_vec();
  opts.input = Input::Pty(PtySize { cols: 90, rows: 20 });
  let (job, rx) = start(opts);
  let (out, exit) = until_exit(&rx);
  assert_eq!(exit, ExitInfo::exited(0), "{out:?}");
  let screen = job.terminal.as_ref().expect("a PTY job has a terminal").screen();
  assert_eq!((screen.cols, screen.rows, screen.lines.len()), (90, 20, 20));
  assert!(screen.lines.iter().any(|l| l.trim_end() == "procward-screen"), "{:?} from {out:?}", screen.lines);
}
