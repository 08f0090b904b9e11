#!/usr/bin/env bash
# macOS (issue 15): compile check only, nothing runs here. For x86_64-apple-darwin and
# aarch64-apple-darwin: `cargo check` of the core with every target (library, tests,
# procward-supervise, examples) and of the binding. No macOS SDK or linker is needed for a
# check, so it proves the Rust compiles against the libc/nix/mio APIs of macOS, not that it
# links or behaves.
# Usage: scripts/platforms/macos-check.sh   (after scripts/platforms/setup.sh)
set -euo pipefail
SCRIPT_NAME=macos-check
source "$(dirname "$0")/common.sh"

TARGETS=(x86_64-apple-darwin aarch64-apple-darwin)
require cargo
installed="$(rustup target list --installed)"
for target in "${TARGETS[@]}"; do
  grep -qx "$target" <<<"$installed" || require "rustup-target-$target"
done

# check TARGET: both crates checked; rustc's warnings are counted and listed (the Linux lint
# denies them, this check reports them: a warning here is code the cfg of macOS leaves unused).
check() {
  local target="$1" log="$PLATFORMS/macos-check-$target.log" rc=0
  mkdir -p "$PLATFORMS"
  {
    cargo check -q -j "$CARGO_JOBS" -p procward-core --all-targets --target "$target" &&
      cargo check -q -j "$CARGO_JOBS" -p procward-node --target "$target"
  } >"$log" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || cat "$log" >&2
  local sites
  sites="$(grep -A1 '^warning: ' "$log" | sed -nE 's/^ *--> ([^:]+:[0-9]+).*/\1/p' | sort -u)"
  echo "[$SCRIPT_NAME] $target: $(grep -c . <<<"$sites") warning site(s) $(tr '\n' ' ' <<<"$sites")"
  return "$rc"
}

failed=0
for target in "${TARGETS[@]}"; do
  step "cargo check $target" check "$target" || failed=1
done
finish
exit "$failed"
