//! The token engine of redaction: credentials known by their own shape (vendor tokens, cloud
//! keys), from the rule set a maintained secret scanner ships (gitleaks, extracted into
//! [`gitleaks`] by `scripts/redaction/extract-gitleaks.py`).
//!
//! Matching is on bytes (`regex::bytes`, with ASCII classes and case folding: the tokens are
//! ASCII, and Unicode `\w` made the rule set's automata a hundred times slower to build), so
//! output that is not UTF-8 is read too. A literal
//! prefilter runs first, as secret scanners do: one Aho–Corasick pass finds every rule's
//! keywords (ASCII case-insensitive), and only the rules whose keyword occurs run their
//! regex, so text with no candidate costs that one linear pass. A rule's regex is compiled
//! the first time its keyword is seen.
//!
//! procward's own context rules (assignments in every syntax, key blocks, URL credentials,
//! command flags) are still in the TypeScript layer (`ts/policy/redact/`): this module is the
//! first part of the redaction engine's move into the core.

#[rustfmt::skip]
mod gitleaks;
mod own;

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex::bytes::{Regex, RegexBuilder};

/// One rule of the rule set.
pub(crate) struct Rule {
  /// The rule set's name for it (`github-pat`).
  pub(crate) id: &'static str,
  /// RE2 syntax, read by the `regex` crate.
  pub(crate) regex: &'static str,
  /// Lower-case literals one of which the text must hold for the rule to run.
  pub(crate) keywords: &'static [&'static str],
  /// Minimum Shannon entropy (bits per byte) of the secret; 0 for none.
  pub(crate) entropy: f64,
  /// The capture group that is the secret; 0: the first non-empty group, or the whole match.
  pub(crate) secret_group: usize,
  /// A secret any of these matches is not one (an example, a placeholder).
  pub(crate) allow_secret: &'static [&'static str],
  /// A match any of these matches holds no secret.
  pub(crate) allow_match: &'static [&'static str],
  /// A secret holding any of these (lower case) is not one.
  pub(crate) stopwords: &'static [&'static str],
}

/// A secret found: a byte range of the text, and the rule that found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenSpan {
  pub start: usize,
  pub end: usize,
  pub rule: &'static str,
}

struct Engine {
  /// The rule set's rules, then procward's own (`own`).
  rules: Vec<&'static Rule>,
  keywords: AhoCorasick,
  /// For each keyword (by pattern index), the rules it starts.
  owners: Vec<Vec<usize>>,
  /// Rules with no keyword: they always run.
  always: Vec<usize>,
  /// Each rule's regex and allowlists, compiled on first use; `None` when the `regex` crate
  /// refuses the rule's regex (an allowlist regex it refuses is left out).
  compiled: Vec<OnceLock<Option<Compiled>>>,
  /// The global allowlist's regexes on the secret.
  allow: Vec<Regex>,
}

struct Compiled {
  regex: Regex,
  allow_secret: Vec<Regex>,
  allow_match: Vec<Regex>,
}

fn regexes(sources: &[&str]) -> Vec<Regex> {
  sources.iter().filter_map(|s| build(s)).collect()
}

fn build(source: &str) -> Option<Regex> {
  RegexBuilder::new(source).unicode(false).size_limit(64 << 20).build().ok()
}

fn engine() -> &'static Engine {
  static ENGINE: OnceLock<Engine> = OnceLock::new();
  ENGINE.get_or_init(|| {
    let mut words: Vec<&'static str> = Vec::new();
    let mut owners: Vec<Vec<usize>> = Vec::new();
    let mut always = Vec::new();
    let rules: Vec<&'static Rule> = gitleaks::RULES.iter().chain(own::RULES).collect();
    for (i, rule) in rules.iter().enumerate() {
      if rule.keywords.is_empty() {
        always.push(i);
      }
      for k in rule.keywords {
        match words.iter().position(|w| w == k) {
          Some(at) => owners[at].push(i),
          None => {
            words.push(k);
            owners.push(vec![i]);
          }
        }
      }
    }
    let keywords = AhoCorasick::builder().ascii_case_insensitive(true).build(&words).expect("the rule set's keywords are literals");
    let compiled = rules.iter().map(|_| OnceLock::new()).collect();
    let allow = regexes(gitleaks::ALLOW_SECRET);
    Engine { rules, keywords, owners, always, compiled, allow }
  })
}

fn compiled(i: usize) -> Option<&'static Compiled> {
  engine().compiled[i]
    .get_or_init(|| {
      let rule = engine().rules[i];
      Some(Compiled { regex: build(rule.regex)?, allow_secret: regexes(rule.allow_secret), allow_match: regexes(rule.allow_match) })
    })
    .as_ref()
}

/// Whether an allowlist of the rule, or the global one, says the secret is none.
fn allowed(rule: &Rule, c: &Compiled, secret: &[u8], whole: &[u8]) -> bool {
  let lower = secret.to_ascii_lowercase();
  let holds = |w: &&str| lower.windows(w.len().max(1)).any(|x| x == w.as_bytes());
  c.allow_secret.iter().chain(&engine().allow).any(|r| r.is_match(secret))
    || c.allow_match.iter().any(|r| r.is_match(whole))
    || rule.stopwords.iter().chain(gitleaks::STOPWORDS).any(holds)
}

/// Shannon entropy of `bytes`, in bits per byte (what the rule set's `entropy` floors mean).
pub fn entropy(bytes: &[u8]) -> f64 {
  if bytes.is_empty() {
    return 0.0;
  }
  let mut counts = [0usize; 256];
  for &b in bytes {
    counts[b as usize] += 1;
  }
  let n = bytes.len() as f64;
  counts
    .iter()
    .filter(|&&c| c > 0)
    .map(|&c| {
      let p = c as f64 / n;
      -p * p.log2()
    })
    .sum()
}

/// Every secret the rule set finds in `text`, as byte ranges sorted by start (overlapping
/// ranges of different rules are merged by the caller's masking, which skips a range that
/// starts inside one already masked).
pub fn token_spans(text: &[u8]) -> Vec<TokenSpan> {
  let e = engine();
  let mut run = vec![false; e.rules.len()];
  for &i in &e.always {
    run[i] = true;
  }
  for m in e.keywords.find_overlapping_iter(text) {
    for &i in &e.owners[m.pattern().as_usize()] {
      run[i] = true;
    }
  }
  let mut spans = Vec::new();
  for (i, rule) in e.rules.iter().enumerate() {
    if !run[i] {
      continue;
    }
    let Some(c) = compiled(i) else { continue };
    for caps in c.regex.captures_iter(text) {
      let secret = if rule.secret_group > 0 { caps.get(rule.secret_group) } else { caps.iter().skip(1).flatten().find(|g| !g.is_empty()) }
        .or_else(|| caps.get(0));
      let Some(secret) = secret else { continue };
      if secret.is_empty() || (rule.entropy > 0.0 && entropy(secret.as_bytes()) < rule.entropy) {
        continue;
      }
      if allowed(rule, c, secret.as_bytes(), &caps[0]) {
        continue;
      }
      spans.push(TokenSpan { start: secret.start(), end: secret.end(), rule: rule.id });
    }
  }
  spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
  // The same range found by two rules (the rule set's and procward's own) is one secret.
  spans.dedup_by_key(|s| (s.start, s.end));
  spans
}

/// The rule set's name and version (`gitleaks v8.30.1`).
pub fn rule_set_name() -> String {
  format!("gitleaks {}", gitleaks::VERSION)
}

/// The rule set's name, and how many of its rules the `regex` crate compiles out of how many
/// (each is compiled to count it: call it from a test or a report, not on a hot path).
pub fn rule_set() -> (String, usize, usize) {
  let total = engine().rules.len();
  let ok = (0..total).filter(|&i| compiled(i).is_some()).count();
  (rule_set_name(), ok, total)
}

#[cfg(test)]
mod tests;
