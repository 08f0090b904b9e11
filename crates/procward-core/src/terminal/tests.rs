use super::repeat::RepeatGuard;
use super::*;
use crate::job::JobEvent;
use std::num::NonZeroU16;
use std::sync::{mpsc, Arc, Mutex};

fn term() -> Terminal {
  Terminal::new(PtySize { cols: 80, rows: 24 })
}

/// The answers to `input` fed in one piece, as text.
fn ask(t: &mut Terminal, input: &str) -> String {
  String::from_utf8(t.feed(input.as_bytes())).unwrap()
}

#[test]
fn the_cursor_position_is_reported_one_based_where_the_program_moved_it() {
  let mut t = term();
  assert_eq!(ask(&mut t, "\x1b[2J\x1b[5;10Hhello"), "");
  assert_eq!(ask(&mut t, "\x1b[6n"), "\x1b[5;15R");
  assert_eq!(ask(&mut t, "\x1b[?6n"), "\x1b[?5;15;1R");
  // A fresh screen: the top left.
  assert_eq!(ask(&mut term(), "\x1b[6n"), "\x1b[1;1R");
  // Text that ends on the last column waits to wrap: the last column is reported.
  let mut t = term();
  assert_eq!(ask(&mut t, &format!("\x1b[3;1H{}\x1b[6n", "x".repeat(80))), "\x1b[3;80R");
}

#[test]
fn a_query_split_across_reads_is_answered_once_it_is_whole() {
  let mut t = term();
  assert_eq!(ask(&mut t, "ab\x1b"), "");
  assert_eq!(ask(&mut t, "[6n"), "\x1b[1;3R");
  assert_eq!(ask(&mut t, "\x1b["), "");
  assert_eq!(ask(&mut t, "?"), "");
  assert_eq!(ask(&mut t, "6"), "");
  assert_eq!(ask(&mut t, "n"), "\x1b[?1;3;1R");
  assert_eq!(ask(&mut t, "\x1b]11;"), "");
  // vte ends an OSC string at the ESC of its ST.
  assert_eq!(ask(&mut t, "?\x1b"), "\x1b]11;rgb:ffff/ffff/ffff\x1b\\");
  assert_eq!(ask(&mut t, "\\"), "");
}

/// Asks each query in turn of one terminal and checks its answer.
fn answers(t: &mut Terminal, table: &[(&str, &str)]) {
  for (query, answer) in table {
    assert_eq!(ask(t, query), *answer, "{query:?}");
  }
}

#[test]
fn status_attributes_version_and_sizes_are_answered() {
  let version = format!("\x1bP>|procward({})\x1b\\", env!("CARGO_PKG_VERSION"));
  answers(
    &mut term(),
    &[
      ("\x1b[5n", "\x1b[0n"),
      ("\x1b[c", "\x1b[?62;22c"),
      ("\x1b[0c", "\x1b[?62;22c"),
      ("\x1b[>c", "\x1b[>1;0;0c"),
      ("\x1b[>0c", "\x1b[>1;0;0c"),
      ("\x1b[=c", "\x1bP!|00000000\x1b\\"),
      ("\x1b[>q", &version),
      ("\x1b[18t", "\x1b[8;24;80t"),
      ("\x1b[19t", "\x1b[9;24;80t"),
      ("\x1b]10;?\x07", "\x1b]10;rgb:0000/0000/0000\x1b\\"),
      // Several queries in one read are answered in order.
      ("\x1b[5n\x1b[6n\x1b[c", "\x1b[0n\x1b[1;1R\x1b[?62;22c"),
    ],
  );
}

#[test]
fn modes_are_reported_as_they_stand() {
  let mut t = term();
  answers(
    &mut t,
    &[
      ("\x1b[?2004$p", "\x1b[?2004;2$y"),
      ("\x1b[?2004h\x1b[?2004$p", "\x1b[?2004;1$y"),
      ("\x1b[?25$p", "\x1b[?25;1$y"),
      ("\x1b[?25l\x1b[?25$p", "\x1b[?25;2$y"),
      ("\x1b[?1049h\x1b[?1049$p", "\x1b[?1049;1$y"),
      ("\x1b[?1000h\x1b[?1000$p\x1b[?1003$p", "\x1b[?1000;1$y\x1b[?1003;2$y"),
      ("\x1b[?7$p", "\x1b[?7;3$y"),
      // Unknown modes, and ANSI modes, are "not recognised".
      ("\x1b[?31337$p", "\x1b[?31337;0$y"),
      ("\x1b[4$p", "\x1b[4;0$y"),
    ],
  );
  let s = t.screen();
  assert!(!s.cursor_visible && s.alternate_screen, "{s:?}");
}

#[test]
fn queries_that_would_echo_text_the_job_chose_or_that_have_no_honest_answer_stay_unanswered() {
  let mut t = term();
  for q in
    ["\x1b]2;evil\x07\x1b[21t", "\x1b]52;c;?\x07", "\x1b[14t", "\x1b[?u", "\x1bP+q544e\x1b\\", "\x1b]4;1;?\x07", "\x1b[7n", "\x1b[1c"]
  {
    assert_eq!(ask(&mut t, q), "", "{q:?}");
  }
}

#[test]
fn a_flood_of_queries_gets_at_most_4_kib_of_answers_a_feed() {
  let mut t = term();
  let answers = t.feed("\x1b[6n".repeat(10_000).as_bytes());
  assert!(answers.len() <= queries::MAX_ANSWER_BYTES && answers.len() > 4000, "{}", answers.len());
  assert!(answers.starts_with(b"\x1b[1;1R"));
  // The next feed is answered again.
  assert_eq!(ask(&mut t, "\x1b[5n"), "\x1b[0n");
}

#[test]
fn the_screen_holds_what_a_person_would_see() {
  let mut t = term();
  t.feed(b"first line\r\nsecond\x1b[2J\x1b[5;10Hhello\x1b[1;1H\xe4\xb8\xad|");
  let s = t.screen();
  assert_eq!((s.rows, s.cols, s.lines.len()), (24, 80, 24));
  assert_eq!(s.lines[4], "         hello");
  assert_eq!(s.lines[0], "中|");
  assert!(s.lines[1..4].iter().all(String::is_empty), "{:?}", s.lines);
  assert_eq!((s.cursor_row, s.cursor_col), (0, 3));
  assert!(s.cursor_visible && !s.alternate_screen);
}

#[test]
fn resize_follows_the_pty_within_the_limits() {
  let mut t = term();
  t.feed(b"\x1b[2;2Hab");
  t.resize(PtySize { cols: 100, rows: 30 });
  let s = t.screen();
  assert_eq!((s.rows, s.cols, s.lines.len()), (30, 100, 30));
  assert_eq!(s.lines[1], " ab");
  assert_eq!(ask(&mut t, "\x1b[18t"), "\x1b[8;30;100t");
  t.resize(PtySize { cols: u16::MAX, rows: u16::MAX });
  assert_eq!((t.screen().rows, t.screen().cols), (MAX_ROWS, MAX_COLS));
  let t = Terminal::new(PtySize { cols: 0, rows: 0 });
  assert_eq!((t.screen().rows, t.screen().cols), (1, 1));
}

#[test]
fn the_answering_sink_queues_output_for_the_terminal_which_answers_once_and_passes_output_on_unchanged() {
  let (answers_tx, answers_rx) = mpsc::channel::<Vec<u8>>();
  let (events_tx, events_rx) = mpsc::channel();
  // Answers are never completed: the in-flight cap holds the rest back.
  let held = Arc::new(Mutex::new(Vec::new()));
  let keep = held.clone();
  let answers_tx = Mutex::new(answers_tx);
  let answer: Answerer = Box::new(move |bytes, done| {
    answers_tx.lock().unwrap().send(bytes).unwrap();
    keep.lock().unwrap().push(done);
  });
  let terminal = PtyTerminal::new(PtySize { cols: 80, rows: 24 }, answer);
  let mut sink = answering_sink(terminal.clone(), Box::new(move |ev| events_tx.send(ev).unwrap()));
  sink(JobEvent::Output { text: "x\x1b".into(), late: false });
  sink(JobEvent::Output { text: "[6n".into(), late: true });
  // The screen draws what is queued first: the answer has been sent once it returns.
  assert_eq!(terminal.screen().lines[0], "x");
  assert_eq!(answers_rx.try_recv().unwrap(), b"\x1b[1;2R");
  assert!(answers_rx.try_recv().is_err());
  let texts: Vec<JobEvent> = events_rx.try_iter().collect();
  assert_eq!(texts, [JobEvent::Output { text: "x\x1b".into(), late: false }, JobEvent::Output { text: "[6n".into(), late: true }]);
  // Unanswered writes pile up to the cap, then answers are dropped.
  for _ in 0..2000 {
    sink(JobEvent::Output { text: "\x1b[6n".into(), late: false });
  }
  terminal.screen();
  let queued: usize = answers_rx.try_iter().map(|a| a.len()).sum::<usize>() + 6;
  assert!(queued <= feed::MAX_IN_FLIGHT && queued > feed::MAX_IN_FLIGHT - 6, "{queued}");
  // Once the job takes them, answers flow again.
  for done in held.lock().unwrap().drain(..) {
    done(Ok(0));
  }
  sink(JobEvent::Output { text: "\x1b[5n".into(), late: false });
  terminal.screen();
  assert_eq!(answers_rx.try_recv().unwrap(), b"\x1b[0n");
}

#[test]
fn output_past_the_backlog_drops_the_oldest_and_keeps_the_newest() {
  // 3 MiB of lines: the terminal thread draws what it keeps up with, the queue drops the
  // oldest of the rest; either way the screen ends with the newest lines.
  let terminal = PtyTerminal::new(PtySize { cols: 80, rows: 24 }, Box::new(|_, done| done(Ok(0))));
  let mut sink = answering_sink(terminal.clone(), Box::new(|_| {}));
  let line = format!("{}\r\n", "y".repeat(78));
  for _ in 0..(3 * MAX_BACKLOG / line.len()) {
    sink(JobEvent::Output { text: line.clone(), late: false });
  }
  sink(JobEvent::Output { text: "last".into(), late: false });
  // screen() draws 64 KiB at most itself; the terminal thread draws the rest.
  let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
  let s = loop {
    let s = terminal.screen();
    if s.lines[23] == "last" || std::time::Instant::now() > deadline {
      break s;
    }
    std::thread::sleep(std::time::Duration::from_millis(10));
  };
  assert_eq!(s.lines[23], "last", "{:?}", s.lines);
  assert_eq!(s.lines[22], "y".repeat(78));
}

/// The rows and cursor `input` leaves on a bare vt100 parser of 80x24 (no REP bound).
fn unbounded(input: &str) -> (Vec<String>, (u16, u16)) {
  let mut p = vt100::Parser::new(NonZeroU16::new(24).unwrap(), NonZeroU16::new(80).unwrap(), 0);
  p.process(input.as_bytes());
  (p.screen().rows(0, 80).collect(), p.screen().cursor_position())
}

#[test]
fn a_repeat_over_the_screen_is_drawn_bounded_with_the_same_screen_and_cursor() {
  for input in [
    "x\x1b[65535b",
    "ab\x1b[5;7Hz\x1b[2000b",
    "\x1b[3;4r\x1b[3;1Hq\x1b[40000;2b",
    "\x1b[10;10H\u{4e2d}\x1b[9999b",
    "y\x1b[1919b",
    "y\x1b[1921b",
  ] {
    let mut t = term();
    t.feed(input.as_bytes());
    let s = t.screen();
    let (lines, cursor) = unbounded(input);
    assert_eq!(s.lines, lines, "{input:?}");
    assert_eq!((s.cursor_row, s.cursor_col), cursor, "{input:?}");
  }
}

#[test]
fn a_repeat_count_is_lowered_also_when_its_sequence_is_split_across_feeds() {
  let mut guard = RepeatGuard::default();
  let mut out = Vec::new();
  for part in ["x\x1b", "[6", "5535", "b", "tail\x1b[3b\x1b[?65535b\x1b[65535;1b"] {
    out.extend_from_slice(&guard.filter(part.as_bytes(), 24, 80));
  }
  // 1920 cells + (65535 - 1920) % 80 = 1920 + 15.
  assert_eq!(String::from_utf8(out).unwrap(), "x\x1b[1935btail\x1b[3b\x1b[?65535b\x1b[1935;1b");
  // Only the parameters wait for the final byte: ESC and [ are handed on at once.
  assert_eq!(&*guard.filter(b"\x1b[12", 24, 80), b"\x1b[");
  assert_eq!(&*guard.filter(b"\r3n", 24, 80), b"\r123n");
  // Text without ESC is passed on untouched, without a copy.
  assert!(matches!(guard.filter(b"plain", 24, 80), std::borrow::Cow::Borrowed(_)));
  // A parameter list longer than 64 bytes is handed on unheld, its first parameter bounded.
  let long = format!("\x1b[{}b", "1;".repeat(40));
  assert_eq!(&*guard.filter(long.as_bytes(), 24, 80), long.as_bytes());
  let long = format!("\x1b[65535{}b", ";1".repeat(40));
  assert_eq!(String::from_utf8(guard.filter(long.as_bytes(), 24, 80).into_owned()).unwrap(), format!("\x1b[1935{}b", ";1".repeat(40)));
}

#[test]
fn soft_wrapped_rows_are_marked_and_hard_line_ends_are_not() {
  let mut t = Terminal::new(PtySize { cols: 40, rows: 6 });
  t.feed(format!("{}\r\nshort\r\n{}x", "a".repeat(100), "b".repeat(40)).as_bytes());
  let s = t.screen();
  assert_eq!(s.wrapped, vec![true, true, false, false, true, false], "{:?}", s.lines);
  assert_eq!(s.lines[0..3].concat(), "a".repeat(100));
  assert_eq!(s.lines[5], "x");
  assert_eq!(s.pending_bytes, 0);
}

#[test]
fn a_repeat_flood_of_one_job_leaves_another_job_answered_and_screen_bounded() {
  // 1 MiB of `x ESC[65535b` on the largest screen: ~7.6 G cells of drawing queued.
  let flood = PtyTerminal::new(PtySize { cols: 512, rows: 256 }, Box::new(|_, done| done(Ok(0))));
  let mut flood_sink = answering_sink(flood.clone(), Box::new(|_| {}));
  let rep = "x\x1b[65535b".repeat(4096);
  for _ in 0..(MAX_BACKLOG / rep.len()) {
    flood_sink(JobEvent::Output { text: rep.clone(), late: false });
  }
  // screen() draws a bounded amount of work and says how much is left.
  let s = flood.screen();
  assert!(s.pending_bytes > 0, "a flood this size is not drawn in one screen() call");
  assert_eq!(s.lines[0].chars().next(), Some('x'));
  // Another job's query is answered by the terminal thread while the flood is queued.
  let (tx, rx) = mpsc::channel::<Vec<u8>>();
  let tx = Mutex::new(tx);
  let other = PtyTerminal::new(
    PtySize { cols: 80, rows: 24 },
    Box::new(move |a, done| {
      let _ = tx.lock().unwrap().send(a);
      done(Ok(0));
    }),
  );
  let mut other_sink = answering_sink(other.clone(), Box::new(|_| {}));
  other_sink(JobEvent::Output { text: "ab\x1b[6n".into(), late: false });
  // A condition to wait for, not a deadline on speed: without turns it would take hours.
  let answer = rx.recv_timeout(std::time::Duration::from_secs(120)).expect("the other job's query is answered");
  assert_eq!(answer, b"\x1b[1;3R");
  assert!(flood.screen().pending_bytes > 0, "the flood is still being drawn");
}
