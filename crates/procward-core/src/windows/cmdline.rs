//! What `CreateProcessW` gets: the command line, the environment block and the shell's
//! full path.
//!
//! Windows passes a process one string, not an argument vector; each program splits it
//! itself. So the command line is built for the shell that will read it:
//!
//! - `cmd.exe` (with `/s`, as in the default `/d /s /c`): `"<shell>" /d /s /c "<command>"`.
//!   With `/s`, cmd strips the first and the last quote of what follows `/c` and runs the
//!   rest as it is, so the command reaches cmd byte for byte (quotes, `&`, `%VAR%` included).
//!   cmd itself runs only up to the first line break, so a command with a line break before
//!   its last line is refused rather than cut short without a word. The line may not be longer than
//!   cmd.exe's 8191 characters ([`CMD_MAX_CHARS`]).
//! - Any other shell (PowerShell's `-Command`, Git Bash's `-c`): every argument, the
//!   command too, quoted by the C runtime's rules (those of `CommandLineToArgvW`), which
//!   PowerShell and MSYS also follow. The line may not be longer than `CreateProcessW`'s
//!   32 767 characters ([`MAX_CHARS`], its last one the terminating NUL).
//! - A batch file (`.bat`, `.cmd`) is refused as the shell: Windows runs it through
//!   `cmd.exe /c`, which does not read the C runtime's quoting, so no quoting of ours could
//!   keep the command one argument.

use crate::error::{Error, Result};
use crate::job::ShellKind;
use std::ffi::OsStr;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The longest command line `cmd.exe` runs, in UTF-16 code units (its documented limit).
pub const CMD_MAX_CHARS: usize = 8191;
/// The longest command line `CreateProcessW` takes, in UTF-16 code units, without the NUL.
pub const MAX_CHARS: usize = 32_766;

/// The command line of `<shell> <args...> <command>`, NUL-terminated UTF-16, quoted for
/// the shell's family (see the module docs).
///
/// Errors: `InvalidInput` when the command or an argument holds a NUL, when a command for
/// cmd.exe has a line break before its last line (cmd would drop the rest without a word;
/// line breaks at the end are harmless and kept), when the line is
/// longer than the limit of the shell that reads it (8191 for cmd.exe, 32 766 otherwise), or
/// when the shell is a batch file (`.bat`, `.cmd`): `CreateProcessW` runs one through
/// `cmd.exe /c`, which reads the C runtime's quoting its own way, so a `"` and a `&` in the
/// command would start a command of their own (the "BatBadBut" flaw).
pub fn command_line(shell: &Path, args: &[String], command: &str) -> Result<Vec<u16>> {
  if command.contains('\0') || args.iter().any(|a| a.contains('\0')) {
    return Err(Error::InvalidInput("the command and the shell arguments may not contain NUL".into()));
  }
  let extension = shell.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
  if matches!(extension.as_deref(), Some("bat" | "cmd")) {
    return Err(Error::InvalidInput(format!(
      "the shell {} is a batch file, which cmd.exe would run with the command's quotes read its own way: \
       use cmd.exe as the shell and call the batch file in the command",
      shell.display()
    )));
  }
  let kind = ShellKind::of(shell);
  if kind == ShellKind::Cmd && command.trim_end_matches(['\r', '\n', ' ', '\t']).contains('\n') {
    return Err(Error::InvalidInput(
      "cmd.exe runs only the first line of a command (it stops at the line break): join the lines with & (or &&), \
       or write them to a .cmd file and call it"
        .into(),
    ));
  }
  // A path cannot hold a quote, so the program needs no escaping inside its quotes.
  let mut line: Vec<u16> = Vec::new();
  line.push(u16::from(b'"'));
  line.extend(shell.as_os_str().encode_wide());
  line.push(u16::from(b'"'));
  for arg in args {
    line.push(u16::from(b' '));
    push_quoted(&mut line, arg);
  }
  line.push(u16::from(b' '));
  if kind == ShellKind::Cmd {
    line.push(u16::from(b'"'));
    line.extend(command.encode_utf16());
    line.push(u16::from(b'"'));
  } else {
    push_quoted(&mut line, command);
  }
  let (limit, who) = if kind == ShellKind::Cmd { (CMD_MAX_CHARS, "cmd.exe") } else { (MAX_CHARS, "CreateProcessW") };
  if line.len() > limit {
    return Err(Error::InvalidInput(format!(
      "the command line is {} characters long; {who} takes at most {limit} (pass long scripts in a file)",
      line.len()
    )));
  }
  line.push(0);
  Ok(line)
}

/// Appends `arg` so that `CommandLineToArgvW` (and the C runtime) read it back unchanged:
/// as it is when it holds no blank and no quote, else in quotes, with each quote escaped
/// by a backslash and the backslashes before a quote (or before the closing quote) doubled.
fn push_quoted(line: &mut Vec<u16>, arg: &str) {
  if !arg.is_empty() && !arg.contains([' ', '\t', '\n', '\x0b', '"']) {
    line.extend(arg.encode_utf16());
    return;
  }
  let backslash = u16::from(b'\\');
  line.push(u16::from(b'"'));
  let mut backslashes = 0usize;
  for unit in arg.encode_utf16() {
    if unit == backslash {
      backslashes += 1;
      continue;
    }
    let doubled = if unit == u16::from(b'"') { 2 * backslashes + 1 } else { backslashes };
    line.extend(std::iter::repeat_n(backslash, doubled));
    line.push(unit);
    backslashes = 0;
  }
  line.extend(std::iter::repeat_n(backslash, 2 * backslashes));
  line.push(u16::from(b'"'));
}

/// The environment block of `CreateProcessW` (with `CREATE_UNICODE_ENVIRONMENT`):
/// `NAME=value` strings in UTF-16, each NUL-terminated, sorted by name case-insensitively
/// as Windows requires, and a final NUL. Windows names are case-insensitive: of two names
/// that differ only in case, the first given wins.
///
/// Errors: `InvalidInput` for an empty name, a name with `=` after its first character
/// (Windows' own `=C:` entries start with one), or a NUL anywhere.
pub fn environment_block(env: &[(String, String)]) -> Result<Vec<u16>> {
  let mut entries: Vec<(String, &str, &str)> = Vec::with_capacity(env.len());
  for (name, value) in env {
    if name.is_empty() || name.chars().skip(1).any(|c| c == '=') || name.contains('\0') || value.contains('\0') {
      return Err(Error::InvalidInput(format!("unusable environment variable name or value: {name:?}")));
    }
    entries.push((name.to_uppercase(), name, value));
  }
  // A stable sort keeps the given order among names equal but for case.
  entries.sort_by(|a, b| a.0.cmp(&b.0));
  entries.dedup_by(|later, earlier| later.0 == earlier.0);
  let mut block = Vec::new();
  for (_, name, value) in entries {
    block.extend(name.encode_utf16());
    block.push(u16::from(b'='));
    block.extend(value.encode_utf16());
    block.push(0);
  }
  // An empty environment is two NULs; otherwise one more after the last string's.
  if block.is_empty() {
    block.push(0);
  }
  block.push(0);
  Ok(block)
}

/// `path` as a NUL-terminated UTF-16 string.
pub fn wide(path: &OsStr) -> Vec<u16> {
  path.encode_wide().chain(std::iter::once(0)).collect()
}

/// The executable `name` stands for: a path with a directory as it is (relative to the
/// host's cwd), a bare name looked up in the job's `PATH` (the host's when the job's
/// environment is inherited), never in the current directory. A name without an
/// extension is also tried with `.exe`. Errors: `ERROR_FILE_NOT_FOUND` when nothing is
/// found.
pub fn find_program(name: &Path, env: Option<&[(String, String)]>) -> io::Result<PathBuf> {
  let candidates = |p: &Path| {
    let mut c = vec![p.to_path_buf()];
    if p.extension().is_none() {
      c.push(p.with_extension("exe"));
    }
    c
  };
  let not_found = || io::Error::from_raw_os_error(windows_sys::Win32::Foundation::ERROR_FILE_NOT_FOUND as i32);
  if name.components().count() > 1 || name.is_absolute() {
    let found = candidates(name).into_iter().find(|c| c.is_file()).ok_or_else(not_found)?;
    return Ok(std::path::absolute(&found).unwrap_or(found));
  }
  let path = match env {
    Some(env) => env.iter().find(|(k, _)| k.eq_ignore_ascii_case("PATH")).map(|(_, v)| v.into()),
    None => std::env::var_os("PATH"),
  }
  .unwrap_or_default();
  std::env::split_paths(&path)
    .filter(|d| d.is_absolute())
    .flat_map(|d| candidates(&d.join(name)))
    .find(|c| c.is_file())
    .ok_or_else(not_found)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn line(shell: &str, args: &[&str], command: &str) -> String {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let mut l = command_line(Path::new(shell), &args, command).unwrap();
    assert_eq!(l.pop(), Some(0));
    String::from_utf16(&l).unwrap()
  }

  #[test]
  fn cmd_gets_the_command_in_outer_quotes_byte_for_byte() {
    assert_eq!(
      line(r"C:\Windows\System32\cmd.exe", &["/d", "/s", "/c"], r#"echo "a b" & echo 100% \"x\""#),
      r#""C:\Windows\System32\cmd.exe" /d /s /c "echo "a b" & echo 100% \"x\"""#
    );
  }

  #[test]
  fn other_shells_get_c_runtime_quoting() {
    let bash = r"C:\Program Files\Git\bin\bash.exe";
    assert_eq!(line(bash, &["-c"], "echo hi"), format!(r#""{bash}" -c "echo hi""#));
    assert_eq!(line(bash, &["-c"], r#"a\"b"#), format!(r#""{bash}" -c "a\\\"b""#));
    assert_eq!(line(bash, &["-c"], r"dir\ "), format!(r#""{bash}" -c "dir\ ""#));
    assert_eq!(line(bash, &["-c"], r"ends\"), format!(r#""{bash}" -c ends\"#));
    assert_eq!(line(bash, &["-c"], ""), format!(r#""{bash}" -c """#));
    assert_eq!(line("pwsh.exe", &["-Command"], r#"Write-Output "x""#), r#""pwsh.exe" -Command "Write-Output \"x\"""#);
  }

  #[test]
  fn the_limits_are_per_shell_and_named_in_the_error() {
    let cmd = r"C:\Windows\System32\cmd.exe";
    let args = ["/d".to_string(), "/s".to_string(), "/c".to_string()];
    let fixed = command_line(Path::new(cmd), &args, "").unwrap().len() - 1;
    assert!(command_line(Path::new(cmd), &args, &"x".repeat(CMD_MAX_CHARS - fixed)).is_ok());
    let err = command_line(Path::new(cmd), &args, &"x".repeat(CMD_MAX_CHARS - fixed + 1)).unwrap_err().to_string();
    assert!(err.contains("8191") && err.contains("cmd.exe"), "{err}");
    let err = command_line(Path::new("bash.exe"), &["-c".into()], &"x".repeat(MAX_CHARS)).unwrap_err().to_string();
    assert!(err.contains("32766"), "{err}");
    assert!(command_line(Path::new(cmd), &args, "a\0b").is_err());
  }

  #[test]
  fn cmd_refuses_a_second_line_and_keeps_a_trailing_line_break() {
    let cmd = r"C:\Windows\System32\cmd.exe";
    let args = ["/d".to_string(), "/s".to_string(), "/c".to_string()];
    for two_lines in ["cd build\nnpm test", "a\r\nb", "a\n\n  b\r\n"] {
      let err = command_line(Path::new(cmd), &args, two_lines).unwrap_err().to_string();
      assert!(err.contains("first line"), "{two_lines:?}: {err}");
    }
    assert!(command_line(Path::new(cmd), &args, "echo hi\r\n").is_ok());
    assert!(command_line(Path::new("bash.exe"), &["-c".into()], "echo a\necho b").is_ok());
  }

  #[test]
  fn a_batch_file_is_no_shell() {
    for shell in [r"C:\tools\wrap.bat", r"C:\tools\wrap.CMD"] {
      let err = command_line(Path::new(shell), &[], "x").unwrap_err().to_string();
      assert!(err.contains("batch file") && err.contains(shell), "{err}");
    }
    assert!(command_line(Path::new(r"C:\Windows\System32\cmd.exe"), &[], "x").is_ok());
  }

  #[test]
  fn the_environment_block_is_sorted_case_insensitively_without_duplicates() {
    let env: Vec<(String, String)> =
      [("b", "2"), ("A", "1"), ("Path", "p"), ("PATH", "q"), ("=C:", "C:\\")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let block = environment_block(&env).unwrap();
    let text = String::from_utf16(&block).unwrap();
    assert_eq!(text, "=C:=C:\\\0A=1\0b=2\0Path=p\0\0");
    assert_eq!(environment_block(&[]).unwrap(), vec![0, 0]);
    assert!(environment_block(&[("A=B".into(), "x".into())]).is_err());
    assert!(environment_block(&[(String::new(), "x".into())]).is_err());
  }
}
