#!/usr/bin/env python3
"""Extracts the token rules of gitleaks' default rule set into procward's redaction engine.

    go mod download -json github.com/zricethezav/gitleaks/v8@v8.30.1   # prints "Dir"
    python3 scripts/redaction/extract-gitleaks.py <Dir>/config/gitleaks.toml v8.30.1

writes crates/procward-core/src/redact/gitleaks.rs: each rule's id, regex (RE2 syntax, which
the `regex` crate reads), keywords (the literal prefilter), minimum Shannon entropy of the
secret, secret group, and allowlists: regexes on the secret or on the whole match, and
stopwords, per rule and global (an allowlist entry that names file paths applies to files
only and is dropped). Left out, and listed in the generated file's header:
- rules that need a file path (gitleaks matches them on file names, procward sees output);
- the generic API-key rule: procward's own context rules (redact/assignments.ts and
  printers.ts) cover credential-named values with a list of what is not a secret instead of
  an entropy floor and a stopword list.
The rule set is data under the MIT licence (see NOTICE). Run again to refresh.
"""
import sys
import tomllib
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / 'crates/procward-core/src/redact/gitleaks.rs'


def raw(s: str) -> str:
    hashes = '#'
    while f'"{hashes}' in s:
        hashes += '#'
    return f'r{hashes}"{s}"{hashes}'


def main() -> None:
    source, version = Path(sys.argv[1]), sys.argv[2]
    config = tomllib.loads(source.read_text())
    kept, left = [], []
    for rule in config['rules']:
        why = 'needs a file path' if 'path' in rule or 'regex' not in rule else 'procward\'s context rules' if rule['id'] == 'generic-api-key' else None
        if why:
            left.append(f"{rule['id']} ({why})")
            continue
        kept.append(rule)
    lines = [
        f'//! Token rules of gitleaks {version} (MIT, Copyright (c) 2019 Zachary Rice; see NOTICE),',
        '//! extracted by scripts/redaction/extract-gitleaks.py: do not edit by hand.',
        f'//! {len(kept)} rules kept; left out: {", ".join(left)}.',
        '',
        'use super::Rule;',
        '',
        f'pub(super) const VERSION: &str = "{version}";',
        '',
        'pub(super) static RULES: &[Rule] = &[',
    ]
    for r in kept:
        keywords = ', '.join(f'"{k.lower()}"' for k in r.get('keywords', []))
        lists = [a for a in r.get('allowlists', []) if 'paths' not in a]
        on_secret = [x for a in lists if a.get('regexTarget', 'secret') == 'secret' for x in a.get('regexes', [])]
        on_match = [x for a in lists if a.get('regexTarget') == 'match' for x in a.get('regexes', [])]
        stop = [x.lower() for a in lists for x in a.get('stopwords', [])]
        lines.append(
            f'    Rule {{ id: "{r["id"]}", regex: {raw(r["regex"])}, keywords: &[{keywords}], entropy: {float(r.get("entropy", 0.0))}, secret_group: {int(r.get("secretGroup", 0))}, '
            f'allow_secret: &[{", ".join(raw(x) for x in on_secret)}], allow_match: &[{", ".join(raw(x) for x in on_match)}], stopwords: &[{", ".join(raw(x) for x in stop)}] }},'
        )
    g = config.get('allowlist', {})
    lines += [
        '];',
        '',
        '/// The global allowlist: regexes on the secret, and stopwords.',
        f'pub(super) static ALLOW_SECRET: &[&str] = &[{", ".join(raw(x) for x in g.get("regexes", []))}];',
        f'pub(super) static STOPWORDS: &[&str] = &[{", ".join(raw(x.lower()) for x in g.get("stopwords", []))}];',
        '',
    ]
    OUT.write_text('\n'.join(lines))
    print(f'{OUT}: {len(kept)} rules, {len(left)} left out')


if __name__ == '__main__':
    main()
