//! A small real program that the Windows spawn tests (`tests/windows_spawn.rs`) run as a
//! job where cmd.exe has no tool for the behaviour (Wine ships neither `more` nor a
//! `findstr` that reads stdin). `cargo test` builds it beside the tests.
//!
//! - `jobkid cat`: copies stdin to stdout until EOF, flushing every read;
//! - `jobkid split`: writes "café ✓\n" in three writes that cut both characters apart;
//! - `jobkid hold <seconds>`: prints `pid=<its pid>` and sleeps (a grandchild holding the
//!   output pipe, when started with `start /b`);
//! - `jobkid size`: prints `size=<columns>x<rows>` of its console window (Windows), then
//!   again after every line it reads, until EOF;
//! - `jobkid console <program> <args...>`: makes its console (`CONIN$`, `CONOUT$`) its
//!   standard handles, runs the program with them and exits with its exit code. Wine 8
//!   connects a pseudoconsole's first process to the console but leaves it without standard
//!   handles (Windows gives it the console's); started through this, the program gets them.

use std::io::{BufRead, Read, Write};
use std::time::Duration;

fn main() {
  let args: Vec<String> = std::env::args().skip(1).collect();
  let mut out = std::io::stdout().lock();
  match args.first().map(String::as_str) {
    Some("cat") => {
      let mut stdin = std::io::stdin().lock();
      let mut buf = vec![0u8; 64 * 1024];
      loop {
        let n = stdin.read(&mut buf).expect("reading stdin");
        if n == 0 {
          break;
        }
        out.write_all(&buf[..n]).and_then(|_| out.flush()).expect("writing stdout");
      }
    }
    Some("split") => {
      for part in [&b"caf\xc3"[..], b"\xa9 \xe2\x9c", b"\x93\n"] {
        out.write_all(part).and_then(|_| out.flush()).expect("writing stdout");
        std::thread::sleep(Duration::from_millis(150));
      }
    }
    Some("hold") => {
      let secs: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(30);
      writeln!(out, "pid={}", std::process::id()).and_then(|_| out.flush()).expect("writing stdout");
      std::thread::sleep(Duration::from_secs(secs));
    }
    Some("size") => {
      let print = |out: &mut std::io::StdoutLock| {
        let (cols, rows) = console_size();
        writeln!(out, "size={cols}x{rows}").and_then(|_| out.flush()).expect("writing stdout");
      };
      print(&mut out);
      for line in std::io::stdin().lock().lines() {
        if line.is_err() {
          break;
        }
        print(&mut out);
      }
    }
    Some("console") => std::process::exit(run_on_console(&args[1..])),
    _ => {
      eprintln!("usage: jobkid cat | split | hold <seconds> | size | console <program> <args...>");
      std::process::exit(2);
    }
  }
}

/// The console window's size in cells, `(0, 0)` without a console (or off Windows).
fn console_size() -> (i32, i32) {
  #[cfg(windows)]
  unsafe {
    use windows_sys::Win32::System::Console::{GetConsoleScreenBufferInfo, GetStdHandle, CONSOLE_SCREEN_BUFFER_INFO, STD_OUTPUT_HANDLE};
    let mut info: CONSOLE_SCREEN_BUFFER_INFO = std::mem::zeroed();
    if GetConsoleScreenBufferInfo(GetStdHandle(STD_OUTPUT_HANDLE), &mut info) != 0 {
      let w = &info.srWindow;
      return (i32::from(w.Right - w.Left) + 1, i32::from(w.Bottom - w.Top) + 1);
    }
  }
  (0, 0)
}

/// Runs `args` with the console's input and output as its standard handles; its exit code.
fn run_on_console(args: &[String]) -> i32 {
  let open = |name: &str, write: bool| {
    std::fs::OpenOptions::new().read(true).write(write).open(name).unwrap_or_else(|e| panic!("opening {name}: {e}"))
  };
  let (input, output) = (open("CONIN$", true), open("CONOUT$", true));
  let errors = output.try_clone().expect("duplicating CONOUT$");
  let status = std::process::Command::new(&args[0])
    .args(&args[1..])
    .stdin(input)
    .stdout(output)
    .stderr(errors)
    .status()
    .expect("starting the program");
  status.code().unwrap_or(1)
}
