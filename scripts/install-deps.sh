#!/usr/bin/env bash
# Installs every Debian (bookworm) package that building, testing and benchmarking vnfs
# needs. Runs as root on a fresh machine with nothing but the base image, or with sudo.
# Idempotent: when every package is already installed it only checks and returns, without
# touching the network (no apt-get update).
#
# To add a dependency, add its Debian package name to PACKAGES below, in its group.
set -euo pipefail

PACKAGES=(
  # toolchain
  g++ cmake ninja-build pkg-config make
  # libraries the SDK and vnfsd build against
  libboost-dev libboost-program-options-dev libtirpc-dev libssl-dev
  libibverbs-dev librdmacm-dev  # RPC-over-RDMA: the verbs fabric provider
  # tests
  catch2
  clang libclang-rt-14-dev      # the fuzzing preset: clang with libFuzzer and the sanitizers
  nfs-ganesha nfs-ganesha-vfs   # a real NFSv4.1 peer the tests start on loopback
  procps iproute2               # ps and ss, to inspect peers when a test fails
  curl                          # the HTTP example is fetched with it
  # benchmark plots
  python3 python3-matplotlib
  # the libnfs baseline (bench/libnfs_baseline, bench/baseline_netns.sh): libnfs, and rpcbind
  # for NFSv3 in a private network namespace (util-linux gives unshare)
  libnfs-dev rpcbind util-linux
  # adapters/archive, and bsdtar for its round-trip tests
  libarchive-dev libarchive-tools
  # adapters/bdb: Berkeley DB 5.3 (C and C++) and its utilities for the drop-in's tests
  libdb5.3-dev libdb5.3++-dev db5.3-util
  # apt over https mirrors
  ca-certificates
)

log() { printf 'install-deps: %s\n' "$*"; }

# Prints the packages of PACKAGES that are not fully installed.
missing_packages() {
  local p status
  for p in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    if [[ "$status" != "install ok installed" ]]; then
      printf '%s\n' "$p"
    fi
  done
}

mapfile -t missing < <(missing_packages)
if [[ ${#missing[@]} -eq 0 ]]; then
  log "all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

log "missing: ${missing[*]}"
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    log "not root and no sudo: install these packages by hand: ${missing[*]}" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
log "apt-get update"
"${SUDO[@]}" apt-get update -q
log "apt-get install ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"

mapfile -t still_missing < <(missing_packages)
if [[ ${#still_missing[@]} -ne 0 ]]; then
  log "still not installed: ${still_missing[*]}" >&2
  exit 1
fi
log "done"
