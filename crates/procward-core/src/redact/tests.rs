use super::*;

fn found(text: &str) -> Vec<&str> {
  token_spans(text.as_bytes()).iter().map(|s| &text[s.start..s.end]).collect()
}

#[test]
#[cfg_attr(target_arch = "aarch64", ignore = "compiling 216 regexes in a debug build takes minutes under qemu; the x86_64 runs check it")]
fn every_rule_of_the_rule_set_compiles() {
  let (name, ok, total) = rule_set();
  assert!(name.starts_with("gitleaks v"), "{name}");
  assert!(total >= 200, "{total} rules");
  assert_eq!(ok, total, "rules the regex crate refuses");
}

#[test]
fn vendor_tokens_are_found_and_their_secret_group_is_the_span() {
  // Fake tokens (random characters in each vendor's published shape).
  let gh = "ghp_R8cK2mQ9vT4xW7zL1nB5pH3sD6fJ0aY2uE8i";
  assert_eq!(found(&format!("remote: token {gh} rejected")), vec![gh]);
  let slack = "xoxb-5523459792831-1999056692257-QR5e7sV5RYfhyxwdOUx4W1op";
  assert!(found(&format!("SLACK_BOT_TOKEN={slack}")).contains(&slack));
  let pypi = format!("pypi-AgEIcHlwaS5vcmc{}", "Hx7qZ2mN9vK4tR8wB3yL6pD1sF5gJ0aC".repeat(2));
  assert!(found(&format!("password = {pypi}")).iter().any(|s| s.contains(&pypi[..40])));
}

#[test]
fn procward_rules_find_tokens_the_rule_set_misses() {
  let notion = "ntn_yyn2iY47lMhHQ8sVa9J0OHUeeF6NHQbSUtNT142ojzDiD3";
  assert_eq!(found(&format!("notion client {notion}")), vec![notion]);
  let telegram = "7089342082:AA618EO5-hpiHzqLrVZSZUpYC8-EG8CxyzA";
  assert_eq!(found(&format!("https://api.telegram.org/bot{telegram}/sendMessage")), vec![telegram]);
}

#[test]
fn text_without_any_keyword_finds_nothing() {
  let log = "2024-06-01T12:00:00Z INFO GET /api/v1/items 200 took=12ms\n".repeat(1000);
  assert!(token_spans(log.as_bytes()).is_empty());
}

#[test]
fn bytes_that_are_not_utf8_around_a_token_do_not_hide_it() {
  let mut text = b"\xd6\xd0\xce\xc4 ".to_vec();
  text.extend_from_slice(b"ghp_R8cK2mQ9vT4xW7zL1nB5pH3sD6fJ0aY2uE8i \xff\xfe");
  let spans = token_spans(&text);
  assert_eq!(spans.len(), 1);
  assert_eq!(&text[spans[0].start..spans[0].end], b"ghp_R8cK2mQ9vT4xW7zL1nB5pH3sD6fJ0aY2uE8i");
}

#[test]
fn entropy_is_in_bits_per_byte() {
  assert_eq!(entropy(b""), 0.0);
  assert_eq!(entropy(b"aaaa"), 0.0);
  assert!((entropy(b"abcd") - 2.0).abs() < 1e-9);
}
