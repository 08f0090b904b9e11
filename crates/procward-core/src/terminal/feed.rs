//! Feeding a PTY job's output to its emulator away from the thread that reads it.
//!
//! Emulation costs about 100 times what reading and decoding the output costs (`vt100`
//! draws every character into its grid), and the reader is the reactor that follows every
//! job of the host: a PTY job printing as fast as it can would hold it from the others. So
//! the reader only queues the output ([`answering_sink`]), and one thread for every PTY
//! job of the process (`procward-terminal`) feeds the queues to their emulators and writes
//! the answers.
//!
//! Drawing is bounded by work (cells touched, `terminal/cost.rs`), not by bytes: nine bytes
//! of REP draw a whole screen. The thread gives each job with queued output a turn of at
//! most [`TURN_WORK`] cells, then puts it back at the end of the line (round robin), so a
//! job flooding its terminal with cheap-to-send, costly-to-draw sequences delays the
//! others' answers by one turn, not by its whole queue. `screen` draws what is queued first
//! (up to [`SCREEN_CATCH_UP`] cells of work, so a caller's thread, Node's event loop, waits
//! a few milliseconds at most), so it shows all output read so far unless a flood keeps
//! the terminal thread behind; then [`Screen::pending_bytes`] says how much is not drawn
//! yet. The emulator's lock is held for one slice of a chunk at a time, never for a whole
//! queue.
//!
//! A job's queue holds at most [`MAX_BACKLOG`] bytes: a job that prints faster than its
//! emulator draws loses the oldest of it, and its emulator starts over from a blank screen
//! with what is left (a screen is a few KiB: what scrolled away is no loss; modes a TUI set
//! in the lost part are). The newest output is never dropped, so the query a program sends
//! last, before it waits for the answer, is always answered.

use super::{Answerer, Screen, Terminal};
use crate::job::{EventSink, JobEvent, PtySize};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// Most bytes of output a PTY job's queue holds before its oldest bytes are dropped (1 MiB).
pub const MAX_BACKLOG: usize = 1 << 20;

/// Most work (cells touched, `terminal/cost.rs`) `screen` and `resize` spend drawing
/// queued output before they read or resize the screen: 16 Ki cells, an eighth of a screen
/// of the largest size or 200 lines of 80 columns, a few milliseconds of drawing. They may
/// also wait for one turn of the terminal thread ([`TURN_WORK`]) to end.
pub const SCREEN_CATCH_UP: u64 = 16 << 10;

/// Most work (cells touched) the terminal thread spends on one job before it turns to the
/// next job with output queued (and lets a `screen` call have the emulator): 16 Ki cells.
pub const TURN_WORK: u64 = 16 << 10;

/// Most answer bytes on their way to the job's input at once: a job that asks and never
/// reads (its input full) gets no more answers queued in the host, as a terminal whose
/// input is full gets none to it.
pub(super) const MAX_IN_FLIGHT: usize = 4096;

/// Output read but not yet drawn.
#[derive(Default)]
struct Backlog {
  chunks: VecDeque<Vec<u8>>,
  bytes: usize,
  /// Bytes were dropped since the last feed: start over from a blank screen.
  dropped: bool,
}

/// A PTY job's terminal: its emulator, the output queued for it, and where its answers go.
/// Shared by the job's reader (which queues), the terminal thread (which feeds) and the
/// job's handle (which reads the screen and resizes).
pub struct PtyTerminal {
  terminal: Mutex<Terminal>,
  backlog: Mutex<Backlog>,
  /// Handed to the terminal thread and not fed since.
  scheduled: AtomicBool,
  /// `screen` or `resize` calls waiting for the emulator: the terminal thread lets them
  /// have it first (a mutex is not fair, and the thread would take it back turn after turn).
  callers: AtomicUsize,
  answer: Answerer,
  in_flight: Arc<AtomicUsize>,
}

impl std::fmt::Debug for PtyTerminal {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.write_str("PtyTerminal")
  }
}

/// A PTY job's terminal, shared by its reader, the terminal thread and its handle.
pub type SharedTerminal = Arc<PtyTerminal>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
  m.lock().unwrap_or_else(|p| p.into_inner())
}

impl PtyTerminal {
  /// A blank terminal of `size` whose answers go to `answer`.
  pub(crate) fn new(size: PtySize, answer: Answerer) -> SharedTerminal {
    Arc::new(PtyTerminal {
      terminal: Mutex::new(Terminal::new(size)),
      backlog: Mutex::new(Backlog::default()),
      scheduled: AtomicBool::new(false),
      callers: AtomicUsize::new(0),
      answer,
      in_flight: Arc::new(AtomicUsize::new(0)),
    })
  }

  /// What the screen shows now: all output read so far is drawn, unless drawing it would
  /// take more than [`SCREEN_CATCH_UP`] cells of work (then the terminal thread is still
  /// drawing a flood, and [`Screen::pending_bytes`] says how many bytes wait).
  pub fn screen(&self) -> Screen {
    self.callers.fetch_add(1, Ordering::AcqRel);
    let terminal = self.catch_up(SCREEN_CATCH_UP);
    self.callers.fetch_sub(1, Ordering::AcqRel);
    let mut screen = terminal.screen();
    screen.pending_bytes = lock(&self.backlog).bytes;
    screen
  }

  /// Follows a resize of the PTY (after the output [`PtyTerminal::screen`] would draw).
  pub fn resize(&self, size: PtySize) {
    self.callers.fetch_add(1, Ordering::AcqRel);
    let mut terminal = self.catch_up(SCREEN_CATCH_UP);
    self.callers.fetch_sub(1, Ordering::AcqRel);
    terminal.resize(size);
  }

  /// Output waits to be drawn.
  fn behind(&self) -> bool {
    lock(&self.backlog).bytes > 0
  }

  /// Queues output for the emulator; true when the terminal thread must be told.
  fn queue(&self, bytes: &[u8]) -> bool {
    let mut b = lock(&self.backlog);
    b.bytes += bytes.len();
    b.chunks.push_back(bytes.to_vec());
    while b.bytes > MAX_BACKLOG && b.chunks.len() > 1 {
      let old = b.chunks.pop_front().expect("more than one chunk");
      b.bytes -= old.len();
      b.dropped = true;
    }
    drop(b);
    !self.scheduled.swap(true, Ordering::AcqRel)
  }

  /// Draws queued output, a slice of a chunk at a time, until the queue is empty or `work`
  /// cells of work (`terminal/cost.rs`) were spent, and sends the answers it asks for;
  /// returns the emulator, locked. A chunk is taken from the queue under the emulator's
  /// lock (what is left of it goes back to the front), so output is drawn in the order it
  /// was read whoever catches up.
  fn catch_up(&self, work: u64) -> MutexGuard<'_, Terminal> {
    let mut spent = 0u64;
    loop {
      let mut terminal = lock(&self.terminal);
      let next = {
        let mut b = lock(&self.backlog);
        let chunk = b.chunks.pop_front();
        b.bytes -= chunk.as_ref().map_or(0, Vec::len);
        (chunk, std::mem::take(&mut b.dropped))
      };
      let (Some(mut chunk), dropped) = next else { return terminal };
      if dropped {
        let s = terminal.screen();
        *terminal = Terminal::new(PtySize { cols: s.cols, rows: s.rows });
      }
      let (fed, cost, answers) = terminal.feed_bounded(&chunk, work.saturating_sub(spent));
      if fed < chunk.len() {
        chunk.drain(..fed);
        let mut b = lock(&self.backlog);
        b.bytes += chunk.len();
        b.chunks.push_front(chunk);
      }
      self.send(answers);
      spent += cost;
      if spent >= work {
        return terminal;
      }
    }
  }

  /// Hands answers to the job's input, unless too many are on their way already. A failed
  /// answer (the input is closed, the job is gone) is dropped: a terminal does not fail
  /// because its program stopped reading.
  fn send(&self, answers: Vec<u8>) {
    let len = answers.len();
    if len == 0 || self.in_flight.load(Ordering::Acquire) + len > MAX_IN_FLIGHT {
      return;
    }
    self.in_flight.fetch_add(len, Ordering::AcqRel);
    let in_flight = self.in_flight.clone();
    (self.answer)(
      answers,
      Box::new(move |_| {
        in_flight.fetch_sub(len, Ordering::AcqRel);
      }),
    );
  }
}

/// The terminal thread's queue of terminals with output to draw (started on first use).
fn thread() -> Option<&'static Mutex<Sender<Weak<PtyTerminal>>>> {
  static THREAD: OnceLock<Option<Mutex<Sender<Weak<PtyTerminal>>>>> = OnceLock::new();
  THREAD
    .get_or_init(|| {
      let (tx, rx) = channel::<Weak<PtyTerminal>>();
      let again = tx.clone();
      let started = std::thread::Builder::new().name("procward-terminal".into()).stack_size(256 * 1024).spawn(move || {
        for terminal in rx {
          if let Some(t) = terminal.upgrade() {
            // Cleared first: output queued from now on schedules another turn.
            t.scheduled.store(false, Ordering::Release);
            if t.callers.load(Ordering::Acquire) == 0 {
              drop(t.catch_up(TURN_WORK));
            } else {
              // A screen() caller draws this turn's share itself.
              std::thread::yield_now();
            }
            // Not done in one turn: back to the end of the line, after the other jobs.
            if t.behind() && !t.scheduled.swap(true, Ordering::AcqRel) && again.send(terminal).is_err() {
              t.scheduled.store(false, Ordering::Release);
            }
          }
        }
      });
      started.ok().map(|_| Mutex::new(tx))
    })
    .as_ref()
}

/// Wraps `sink` so that every output event (late output too) is queued for `terminal`'s
/// emulator, which the terminal thread feeds (see the module docs); without that thread
/// (it could not start) the output is drawn here, on the reader's thread.
pub(crate) fn answering_sink(terminal: SharedTerminal, mut sink: EventSink) -> EventSink {
  Box::new(move |ev: JobEvent| {
    if let JobEvent::Output { text, .. } = &ev {
      if terminal.queue(text.as_bytes()) {
        let handed = thread().is_some_and(|tx| lock(tx).send(Arc::downgrade(&terminal)).is_ok());
        if !handed {
          terminal.scheduled.store(false, Ordering::Release);
          drop(terminal.catch_up(u64::MAX));
        }
      }
    }
    sink(ev)
  })
}
