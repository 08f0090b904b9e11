//! How a job ended: an exit code or a terminating signal, never both, and a signal death is
//! never reported as exit code 0.

/// The end of a process, as `waitpid` reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
  /// The exit code, when the process called `exit`.
  pub code: Option<i32>,
  /// The signal number, when a signal terminated it.
  pub signal: Option<i32>,
}

impl ExitInfo {
  pub fn exited(code: i32) -> Self {
    ExitInfo { code: Some(code), signal: None }
  }

  pub fn signalled(signal: i32) -> Self {
    ExitInfo { code: None, signal: Some(signal) }
  }

  #[cfg(unix)]
  pub fn from_status(status: std::process::ExitStatus) -> Self {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
      (Some(code), _) => Self::exited(code),
      (None, Some(sig)) => Self::signalled(sig),
      // Stopped/continued statuses are never final; treat as unknown signal 0 defensively.
      (None, None) => ExitInfo { code: None, signal: None },
    }
  }

  /// The JSON line the durable supervisor writes to the exit file:
  /// `{"code":7,"signal":null}` or `{"code":null,"signal":9}`.
  pub fn to_json(&self) -> String {
    fn n(v: Option<i32>) -> String {
      v.map_or_else(|| "null".to_string(), |v| v.to_string())
    }
    format!("{{\"code\":{},\"signal\":{}}}\n", n(self.code), n(self.signal))
  }

  /// [`ExitInfo::to_json`] plus when the job ended, in milliseconds since the Unix epoch:
  /// `{"code":0,"signal":null,"exitedAt":1795951855732}` (the durable job's exit file).
  pub fn to_json_at(&self, exited_at_ms: u128) -> String {
    let plain = self.to_json();
    format!("{},\"exitedAt\":{exited_at_ms}}}\n", plain.trim_end().trim_end_matches('}'))
  }

  /// Parses what [`ExitInfo::to_json`] or [`ExitInfo::to_json_at`] wrote (other keys are
  /// ignored). `None` for anything else.
  pub fn from_json(text: &str) -> Option<Self> {
    let t = text.trim();
    let body = t.strip_prefix('{')?.strip_suffix('}')?;
    let mut info = ExitInfo { code: None, signal: None };
    for part in body.split(',') {
      let (k, v) = part.split_once(':')?;
      let key = k.trim().trim_matches('"');
      if key != "code" && key != "signal" {
        continue;
      }
      let v = v.trim();
      let v = if v == "null" { None } else { Some(v.parse::<i32>().ok()?) };
      if key == "code" {
        info.code = v;
      } else {
        info.signal = v;
      }
    }
    (info.code.is_some() != info.signal.is_some()).then_some(info)
  }
}

/// The conventional name of a signal number (`SIGKILL` for 9), or `SIG<n>` when unnamed.
pub fn signal_name(sig: i32) -> String {
  #[cfg(unix)]
  if let Ok(s) = nix::sys::signal::Signal::try_from(sig) {
    return s.as_str().to_string();
  }
  format!("SIG{sig}")
}

/// The number of a signal name (`SIGTERM`, `TERM`, case-insensitive), if this platform has it.
pub fn signal_number(name: &str) -> Option<i32> {
  #[cfg(unix)]
  {
    let upper = name.to_ascii_uppercase();
    let full = if upper.starts_with("SIG") { upper } else { format!("SIG{upper}") };
    return full.parse::<nix::sys::signal::Signal>().ok().map(|s| s as i32);
  }
  #[allow(unreachable_code)]
  {
    let _ = name;
    None
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn json_round_trip() {
    for info in [ExitInfo::exited(7), ExitInfo::signalled(9), ExitInfo::exited(0)] {
      assert_eq!(ExitInfo::from_json(&info.to_json()), Some(info));
      assert_eq!(ExitInfo::from_json(&info.to_json_at(1_795_951_855_732)), Some(info));
    }
    assert_eq!(ExitInfo::exited(3).to_json_at(1_795_951_855_732), "{\"code\":3,\"signal\":null,\"exitedAt\":1795951855732}\n");
    assert_eq!(ExitInfo::from_json("garbage"), None);
    assert_eq!(ExitInfo::from_json("{\"code\":null,\"signal\":null}"), None);
  }

  #[cfg(unix)]
  #[test]
  fn names_and_numbers() {
    assert_eq!(signal_name(9), "SIGKILL");
    assert_eq!(signal_number("term"), Some(15));
    assert_eq!(signal_number("SIGKILL"), Some(9));
    assert_eq!(signal_number("NOPE"), None);
  }
}
