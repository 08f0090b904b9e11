//! A durable job's log on disk, capped by rotation.
//!
//! Files, beside each other in the session directory (all 0600):
//! - `output.log`: the current part, appended by the supervisor;
//! - `output.log.1`: the previous part (one rotated part is kept and stays readable);
//! - `log-state.json`: written atomically at each rotation (see [`LogState`]).
//!
//! A part is rotated once it holds `part_bytes` bytes, at the first line break within 4 KiB
//! after that point (so parts usually end on a whole line; a longer line is cut). Rotation creates the
//! new part as `output.log.next`, records both inodes in `log-state.json`, renames
//! `output.log` to `output.log.1` (dropping the part before it) and then `output.log.next`
//! to `output.log`. A reader that finds inodes other than the recorded ones caught a
//! rotation half-way and reads again. Disk use per session stays below
//! `2 × (part_bytes + 4 KiB)`.
//!
//! On Windows the same files are written the same way; "inode" is the file index
//! (`nFileIndexHigh:nFileIndexLow`, Node's `ino` there), "0600" the session directory's
//! private ACL, and a part open in a reader is renamed thanks to `FILE_SHARE_DELETE` (see
//! `parts` for how a rotation deals with a dropped part that a reader still holds).

mod parts;

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// What `log-state.json` holds: `{"rotations":2,"droppedBytes":…,"droppedLines":…,
/// "lostBytes":0,"rotatedIno":…,"currentIno":…}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogState {
  /// Rotations so far.
  pub rotations: u64,
  /// Bytes of parts deleted by later rotations (the oldest output), never readable again.
  pub dropped_bytes: u64,
  /// Line breaks in those dropped parts.
  pub dropped_lines: u64,
  /// Bytes of output that could not be written (disk full, I/O error).
  pub lost_bytes: u64,
  /// Inode of `output.log.1` (st_ino), 0 before the first rotation.
  pub rotated_ino: u64,
  /// Inode of `output.log` as of the last rotation.
  pub current_ino: u64,
}

impl LogState {
  pub fn to_json(&self) -> String {
    format!(
      "{{\"rotations\":{},\"droppedBytes\":{},\"droppedLines\":{},\"lostBytes\":{},\"rotatedIno\":{},\"currentIno\":{}}}\n",
      self.rotations, self.dropped_bytes, self.dropped_lines, self.lost_bytes, self.rotated_ino, self.current_ino
    )
  }
}

/// `output.log.1` for `output.log`.
pub fn rotated_path(log: &Path) -> PathBuf {
  let mut p = log.as_os_str().to_owned();
  p.push(".1");
  PathBuf::from(p)
}

/// `log-state.json` beside the log.
pub fn state_path(log: &Path) -> PathBuf {
  log.with_file_name("log-state.json")
}

/// Replaces `path` with `text` (0600) by a rename, so a reader sees the old or the new
/// state, never a torn one. Not fsynced: the state is advisory and rewritten at every
/// rotation, and a small cap would otherwise make the job wait on the disk at every part.
fn replace_state(path: &Path, text: &str) -> std::io::Result<()> {
  let tmp = path.with_extension(format!("tmp{}", std::process::id()));
  // A leftover temporary file (a crash between write and rename) is removed first; the new
  // one is created exclusively and never through a symlink planted at its name.
  let _ = std::fs::remove_file(&tmp);
  let written = parts::create_new(&tmp).and_then(|mut f| f.write_all(text.as_bytes()));
  let renamed = written.and_then(|()| parts::rename(&tmp, path));
  if renamed.is_err() {
    let _ = std::fs::remove_file(&tmp);
  }
  renamed
}

/// How far past a part's limit a rotation looks for a line break (bytes).
const LINE_SLACK: usize = 4096;

/// The writing side, owned by the supervisor: appends output and rotates parts.
pub struct RotatingLog {
  path: PathBuf,
  /// 0: never rotate.
  part_bytes: u64,
  file: File,
  written: u64,
  lines: u64,
  /// Bytes and line breaks of `output.log.1`.
  rotated: Option<(u64, u64)>,
  state: LogState,
}

impl RotatingLog {
  /// Opens (creates, 0600) `path` for appending; output already in it counts toward the part.
  pub fn open(path: &Path, part_bytes: u64) -> std::io::Result<Self> {
    let file = parts::open_append(path)?;
    let written = file.metadata()?.len();
    Ok(RotatingLog { path: path.to_owned(), part_bytes, file, written, lines: 0, rotated: None, state: LogState::default() })
  }

  /// Appends `data`, rotating when the part is full. A failed write is counted in
  /// `lostBytes` (recorded at the next rotation and by [`RotatingLog::finish`]) and never
  /// stops the job: its output keeps being read.
  pub fn write(&mut self, mut data: &[u8]) {
    while !data.is_empty() {
      let room = if self.part_bytes == 0 { u64::MAX } else { self.part_bytes.saturating_sub(self.written) };
      // Cut after the first line break at or past the limit, looking at most LINE_SLACK
      // bytes further; a longer line is cut at the limit.
      let cut = if (data.len() as u64) < room {
        data.len()
      } else {
        let from = (room as usize).saturating_sub(1);
        let window = &data[from..data.len().min(from + LINE_SLACK)];
        window.iter().position(|&b| b == b'\n').map_or(from + 1, |i| from + i + 1)
      };
      let (now, rest) = data.split_at(cut.max(1));
      match self.file.write_all(now) {
        Ok(()) => {
          self.written += now.len() as u64;
          self.lines += now.iter().filter(|&&b| b == b'\n').count() as u64;
        }
        Err(_) => self.state.lost_bytes += now.len() as u64,
      }
      data = rest;
      if self.part_bytes > 0 && self.written >= self.part_bytes {
        if let Err(e) = self.rotate() {
          // Keep appending to the full part rather than lose output.
          self.note(&format!("cannot rotate {}: {e}", self.path.display()));
          self.part_bytes = 0;
        }
      }
    }
  }

  fn rotate(&mut self) -> std::io::Result<()> {
    let next_path = {
      let mut p = self.path.as_os_str().to_owned();
      p.push(".next");
      PathBuf::from(p)
    };
    let _ = std::fs::remove_file(&next_path);
    let next = parts::open_append(&next_path)?;
    if let Some((bytes, lines)) = self.rotated.take() {
      self.state.dropped_bytes += bytes;
      self.state.dropped_lines += lines;
    }
    self.state.rotations += 1;
    self.state.rotated_ino = parts::identity(&self.file)?.0;
    self.state.current_ino = parts::identity(&next)?.0;
    replace_state(&state_path(&self.path), &self.state.to_json())?;
    parts::drop_part(&rotated_path(&self.path), self.state.rotations);
    parts::rename(&self.path, &rotated_path(&self.path))?;
    parts::rename(&next_path, &self.path)?;
    self.rotated = Some((self.written, self.lines));
    self.file = next;
    self.written = 0;
    self.lines = 0;
    Ok(())
  }

  /// Makes the log this process's stderr too, so its own messages land in it.
  pub fn capture_stderr(&self) {
    parts::redirect_stderr(&self.file);
  }

  /// Writes a line of the supervisor's own into the log (`procward-supervise: …`).
  pub fn note(&mut self, text: &str) {
    let line = format!("procward-supervise: {text}\n");
    let _ = self.file.write_all(line.as_bytes());
    self.written += line.len() as u64;
  }

  /// Records lost output in `log-state.json` (there is nothing to record otherwise).
  pub fn finish(&mut self) {
    if self.state.lost_bytes > 0 {
      let _ = replace_state(&state_path(&self.path), &self.state.to_json());
    }
  }
}

/// The reading side for a host that tails a running job: reads everything new, following
/// the log across rotations (like `tail -F`).
pub struct LogFollower {
  path: PathBuf,
  file: Option<(File, u64)>,
}

impl LogFollower {
  pub fn new(path: &Path) -> Self {
    LogFollower { path: path.to_owned(), file: None }
  }

  /// Hands every byte written since the last call to `out`, in order, across rotations.
  /// Returns quietly when the log does not exist (yet) or is mid-rotation.
  pub fn read_new(&mut self, buf: &mut [u8], out: &mut dyn FnMut(&[u8])) {
    loop {
      if self.file.is_none() {
        let Some(part) = parts::open_part(&self.path) else { return };
        self.file = Some(part);
      }
      let Some((file, ino)) = self.file.as_mut() else { return };
      drain(file, buf, out);
      match parts::id_at(&self.path) {
        // Rotated: the supervisor no longer writes to the old part, so what it wrote
        // between our read and its rename is all that is left of it.
        Some(now) if now != *ino => {
          drain(file, buf, out);
          // Two rotations since the last read: the part in between is `output.log.1` now.
          let left = *ino;
          self.file = parts::open_part(&rotated_path(&self.path)).filter(|(_, i)| *i != left && *i != now);
        }
        _ => return,
      }
    }
  }
}

fn drain(file: &mut File, buf: &mut [u8], out: &mut dyn FnMut(&[u8])) {
  loop {
    match file.read(buf) {
      Ok(0) | Err(_) => return,
      Ok(n) => out(&buf[..n]),
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("procward-logfile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("output.log")
  }

  fn numbered(from: usize, to: usize) -> String {
    (from..to).map(|i| format!("line {i:05}\n")).collect()
  }

  #[test]
  fn keeps_two_parts_counts_what_it_dropped_and_ends_parts_on_whole_lines() {
    let log = scratch("rotate");
    let mut w = RotatingLog::open(&log, 1000).unwrap();
    // 11 bytes a line, written in chunks of 7 lines: 5000 lines in all.
    for chunk in 0..(5000 / 7 + 1) {
      w.write(numbered(chunk * 7, ((chunk + 1) * 7).min(5000)).as_bytes());
    }
    let state = std::fs::read_to_string(state_path(&log)).unwrap();
    let current = std::fs::read_to_string(&log).unwrap();
    let rotated = std::fs::read_to_string(rotated_path(&log)).unwrap();
    assert!(rotated.len() >= 1000 && rotated.len() < 1000 + 77, "rotated part is {} bytes", rotated.len());
    assert!(rotated.ends_with('\n') && rotated.starts_with("line "));
    let kept = format!("{rotated}{current}");
    assert!(kept.ends_with("line 04999\n"));
    let dropped: u64 = state.split("\"droppedBytes\":").nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
    let dropped_lines: u64 = state.split("\"droppedLines\":").nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
    assert_eq!(dropped as usize + kept.len(), 5000 * 11);
    assert_eq!(dropped_lines as usize + kept.lines().count(), 5000);
    assert!(kept.starts_with(&format!("line {dropped_lines:05}\n")), "first kept line follows the dropped ones");
    assert!(state.contains(&format!("\"rotatedIno\":{}", parts::id_at(&rotated_path(&log)).unwrap())));
    assert!(state.contains(&format!("\"currentIno\":{}", parts::id_at(&log).unwrap())));
    // Every file 0600 (on Unix), and no temporary left behind by the state's replacements.
    let dir = log.parent().unwrap();
    let names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(
      {
        let mut n = names.clone();
        n.sort();
        n
      },
      ["log-state.json", "output.log", "output.log.1"]
    );
    #[cfg(unix)]
    for n in names {
      use std::os::unix::fs::PermissionsExt;
      assert_eq!(std::fs::metadata(dir.join(n)).unwrap().permissions().mode() & 0o777, 0o600);
    }
  }

  #[test]
  fn parts_rotate_while_a_reader_holds_them_open() {
    // A host reading a part (std and Node open with FILE_SHARE_DELETE on Windows) must not
    // stop the rotations that rename it and then drop it.
    let log = scratch("heldopen");
    let mut w = RotatingLog::open(&log, 100).unwrap();
    w.write(numbered(0, 5).as_bytes());
    let first = File::open(&log).unwrap();
    // 11-byte lines: a part ends after its tenth.
    w.write(numbered(5, 20).as_bytes());
    let second = File::open(rotated_path(&log)).unwrap();
    w.write(numbered(20, 40).as_bytes());
    let rotated = std::fs::read_to_string(rotated_path(&log)).unwrap();
    let current = std::fs::read_to_string(&log).unwrap();
    assert_eq!(format!("{rotated}{current}"), numbered(30, 40));
    assert!(std::fs::read_to_string(state_path(&log)).unwrap().starts_with("{\"rotations\":4,"));
    // The readers still read the parts they opened, dropped since.
    for (mut part, lines) in [(first, numbered(0, 10)), (second, numbered(10, 20))] {
      let mut text = String::new();
      part.read_to_string(&mut text).unwrap();
      assert_eq!(text, lines);
    }
  }

  #[test]
  fn a_follower_reads_every_byte_once_across_rotations() {
    let log = scratch("follow");
    let mut w = RotatingLog::open(&log, 500).unwrap();
    let mut f = LogFollower::new(&log);
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64];
    for chunk in 0..300 {
      w.write(numbered(chunk * 3, chunk * 3 + 3).as_bytes());
      // Read only now and then, so up to two rotations pass between reads (a follower that
      // falls three parts behind loses the part that was dropped meanwhile).
      if chunk % 25 == 0 {
        f.read_new(&mut buf, &mut |b| got.extend_from_slice(b));
      }
    }
    f.read_new(&mut buf, &mut |b| got.extend_from_slice(b));
    assert_eq!(String::from_utf8(got).unwrap(), numbered(0, 900));
  }

  #[test]
  fn a_line_longer_than_the_slack_is_cut_at_the_limit() {
    let log = scratch("longline");
    let mut w = RotatingLog::open(&log, 1000).unwrap();
    w.write(&vec![b'x'; 256 * 1024]);
    assert_eq!(std::fs::metadata(rotated_path(&log)).unwrap().len(), 1000);
    assert!(std::fs::metadata(&log).unwrap().len() <= 1000);
  }

  #[test]
  fn part_bytes_zero_never_rotates() {
    let log = scratch("norotate");
    let mut w = RotatingLog::open(&log, 0).unwrap();
    w.write(numbered(0, 1000).as_bytes());
    assert_eq!(std::fs::read_to_string(&log).unwrap(), numbered(0, 1000));
    assert!(!rotated_path(&log).exists() && !state_path(&log).exists());
  }

  #[cfg(unix)]
  #[test]
  fn parts_are_never_opened_through_a_symlink_a_hard_link_or_as_a_fifo() {
    let log = scratch("links");
    let secret = log.with_file_name("secret");
    std::fs::write(&secret, "not the job's output\n").unwrap();
    std::os::unix::fs::symlink(&secret, &log).unwrap();
    // The writer refuses the planted link (ELOOP) and leaves its target alone.
    assert_eq!(RotatingLog::open(&log, 0).err().map(|e| e.raw_os_error()), Some(Some(libc::ELOOP)));
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "not the job's output\n");
    // The follower reads nothing through it.
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64];
    LogFollower::new(&log).read_new(&mut buf, &mut |b| got.extend_from_slice(b));
    assert!(got.is_empty());
    // Nor through a hard link to another file.
    std::fs::remove_file(&log).unwrap();
    std::fs::hard_link(&secret, &log).unwrap();
    LogFollower::new(&log).read_new(&mut buf, &mut |b| got.extend_from_slice(b));
    assert!(got.is_empty());
    // Nor from a FIFO in the log's place (an open without O_NONBLOCK would hang here).
    std::fs::remove_file(&log).unwrap();
    nix::unistd::mkfifo(&log, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    LogFollower::new(&log).read_new(&mut buf, &mut |b| got.extend_from_slice(b));
    assert!(got.is_empty());
  }
}
