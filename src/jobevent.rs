//! A job's events as JavaScript receives them (`onEvent` of `spawn`, `NativeJob`).

use napi::bindgen_prelude::Buffer;
use napi_derive::napi;
use procward_core as core;

/// One event of a job: `output` (text, `late` when read after the exit was published) or
/// `exit` (exactly once: `exitCode`, or `signal` with `signalNumber`).
#[napi(object)]
pub struct JobEvent {
  /// `"output"` or `"exit"`.
  #[napi(ts_type = "'output' | 'exit'")]
  pub kind: String,
  /// Output as UTF-8 bytes (already decoded and re-encoded: split characters reassembled,
  /// invalid bytes as U+FFFD). Handed over without a copy, so JS pays for text only when it
  /// reads it.
  pub data: Option<Buffer>,
  pub late: Option<bool>,
  pub exit_code: Option<i32>,
  /// Terminating signal name, e.g. `SIGKILL`.
  pub signal: Option<String>,
  pub signal_number: Option<i32>,
}

impl From<core::job::JobEvent> for JobEvent {
  fn from(ev: core::job::JobEvent) -> Self {
    match ev {
      core::job::JobEvent::Output { text, late } => JobEvent {
        kind: "output".into(),
        data: Some(text.into_bytes().into()),
        late: Some(late),
        exit_code: None,
        signal: None,
        signal_number: None,
      },
      core::job::JobEvent::Exit(info) => JobEvent {
        kind: "exit".into(),
        data: None,
        late: None,
        exit_code: info.code,
        signal: info.signal.map(core::status::signal_name),
        signal_number: info.signal,
      },
    }
  }
}
