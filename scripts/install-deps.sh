#!/usr/bin/env bash
# Installs the Debian (bookworm) packages vnfs needs. Runs as root on a fresh machine with
# nothing but the base image, or with sudo. Idempotent: when every package is already
# installed it only checks and returns, without touching the network (no apt-get update).
#
#   bash scripts/install-deps.sh          everything: building, testing and benchmarking
#   bash scripts/install-deps.sh --demo   only what scripts/demo.sh needs: configuring the
#                                         `default` preset and building and running vnfs-demo
#
# To add a dependency, add its Debian package name to DEMO_PACKAGES (if configuring the
# default preset or the demo needs it) or to MORE_PACKAGES, in its group.
set -euo pipefail

DEMO_PACKAGES=(
  # toolchain (the default preset generates for Ninja; CMakeLists.txt links with lld, which
  # links 3-4 times faster than GNU ld, where it is installed)
  g++ cmake ninja-build pkg-config lld
  # libraries the SDK and vnfsd build against (find_package / pkg_check_modules REQUIRED in
  # CMakeLists.txt): Boost with program_options, OpenSSL, libtirpc, ISA-L
  libboost-dev libboost-program-options-dev libtirpc-dev libssl-dev
  libisal-dev  # vnfsd: CRC-32 of its transaction journal
  libibverbs-dev librdmacm-dev  # RPC-over-RDMA: the verbs fabric provider (transport/, REQUIRED)
  # configured with the default preset whatever is built: adapters/archive and adapters/bdb
  # (REQUIRED), tests/ (Catch2 and a Python 3 interpreter, REQUIRED while BUILD_TESTING is on)
  libarchive-dev libdb5.3-dev libdb5.3++-dev catch2 python3
  # apt over https mirrors
  ca-certificates
)

MORE_PACKAGES=(
  make
  # tests
  clang libclang-rt-14-dev      # the fuzzing preset: clang with libFuzzer and the sanitizers
  zlib1g-dev                    # fuzz_txn_journal: zlib's CRC-32, a second implementation to check vnfsd's against
  nfs-ganesha nfs-ganesha-vfs   # a real NFSv4.1 peer the tests start on loopback
  procps iproute2               # ps and ss, to inspect peers when a test fails
  curl                          # the HTTP example is fetched with it
  # benchmark plots
  python3-matplotlib
  # the libnfs baseline (bench/libnfs_baseline, bench/baseline_netns.sh): libnfs, and rpcbind
  # for NFSv3 in a private network namespace (util-linux gives unshare)
  libnfs-dev rpcbind util-linux
  # bsdtar for the archive adapter's round-trip tests
  libarchive-tools
  # Berkeley DB's utilities for the drop-in's tests
  db5.3-util
  xfsprogs                      # bench/txn_ramdisk.sh: XFS with reflinks on a RAM disk
)

case "${1:-}" in
  "") PACKAGES=("${DEMO_PACKAGES[@]}" "${MORE_PACKAGES[@]}") ;;
  --demo) PACKAGES=("${DEMO_PACKAGES[@]}") ;;
  *) printf 'usage: bash scripts/install-deps.sh [--demo]\n' >&2; exit 2 ;;
esac

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
