#!/usr/bin/env bash
# CTest test "install_consumer": the installed SDK, used as an outside project uses it.
#
#   run_consumer_test.sh BUILD_DIR CONSUMER_PROJECT_DIR CXX "EXTRA_FLAGS"
#
# 1. cmake --install BUILD_DIR into a temporary prefix; checks the layout (headers,
#    static libraries, CMake package, vnfs.pc, programs) and that nothing internal leaked.
# 2. Moves the prefix elsewhere (both the CMake package and vnfs.pc must be relocatable).
# 3. Compiles every installed header on its own (each is self-contained and includes only
#    installed headers).
# 4. Builds CONSUMER_PROJECT_DIR with find_package(vnfs), and its main.cpp with
#    `pkg-config --cflags --libs vnfs`.
# 5. Runs both programs against file:// and against the installed vnfsd (nfs://).
# The Berkeley DB and TPIE adapters the same way: vnfs::bdb and vnfs-bdb.pc build bdb_consumer,
# vnfs::tpie and vnfs-tpie.pc build tpie_consumer (no TPIE needed); and the
# embedded server: vnfs::server and vnfs-server.pc build server_consumer, which runs its own.
# EXTRA_FLAGS go to compiling and linking (the sanitizer flags of an instrumented build).
set -uo pipefail

build=$1
project=$2
cxx=$3
flags=${4:-}

work=$(mktemp -d /tmp/vnfs-consumer-XXXXXX)
vnfsd_pid=""
cleanup() {
  [[ -n "$vnfsd_pid" ]] && kill -TERM "$vnfsd_pid" 2>/dev/null && wait "$vnfsd_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() {
  failed=$((failed + 1))
  echo "FAIL: $*"
}
check() {  # check WHAT COMMAND...: the command must succeed
  local what=$1
  shift
  if "$@" >"$work/last.log" 2>&1; then ok; else fail "$what"; cat "$work/last.log"; fi
}
step() { printf '\n== %s\n' "$*"; }
# Checks that may run side by side (compiles): check_bg starts one in the background, two at
# a time (the project's machines have two cores); checks_done waits for them and counts them
# in the order they were started.
bg_whats=()
check_bg() {  # check_bg WHAT COMMAND...
  while (($(jobs -rp | wc -l) >= 2)); do wait -n; done
  local i=${#bg_whats[@]}
  bg_whats+=("$1")
  shift
  ("$@" >"$work/bg$i.log" 2>&1; echo $? >"$work/bg$i.rc") &
}
checks_done() {
  wait
  local i
  for i in "${!bg_whats[@]}"; do
    if [[ $(cat "$work/bg$i.rc" 2>/dev/null) == 0 ]]; then ok; else fail "${bg_whats[i]}"; cat "$work/bg$i.log"; fi
    rm -f "$work/bg$i.rc" "$work/bg$i.log"
  done
  bg_whats=()
}
finish() {
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
  exit
}

step "cmake --install $build --prefix <tmp>"
if ! cmake --install "$build" --prefix "$work/installed" >"$work/install.log" 2>&1; then
  fail "cmake --install"
  cat "$work/install.log"
  finish
fi
ok
mv "$work/installed" "$work/prefix"
prefix=$work/prefix

step "layout"
lib_a=$(find "$prefix" -name libvnfs_client.a | head -1)
libdir=$(dirname "${lib_a:-$prefix/lib/none}")
for f in include/vnfs/client.hpp include/vnfs/completion_group.hpp include/vnfs/memory_region.hpp \
         include/vnfs/file.hpp include/vnfs/file_stat.hpp include/vnfs/error.hpp \
         include/vnfs/embedded_server.hpp include/vnfs/url.hpp include/vnfs/nfs4/status.hpp \
         bin/vnfsd bin/vnfs bin/vnfs-demo; do
  check "installed $f" test -e "$prefix/$f"
done
for f in libvnfs_client.a libvnfs_transport.a libvnfs_protocol.a pkgconfig/vnfs.pc \
         libvnfs_server.a libvnfs_server_fs.a pkgconfig/vnfs-server.pc \
         cmake/vnfs/vnfsConfig.cmake cmake/vnfs/vnfsConfigVersion.cmake cmake/vnfs/vnfs-targets.cmake; do
  check "installed <libdir>/$f" test -e "$libdir/$f"
done
for f in include/vnfs/bdb/attach.hpp include/vnfs/bdb/vnfs_map.hpp; do
  check "installed $f" test -e "$prefix/$f"
done
for f in libvnfs_bdb.a libvnfs_bdb_preload.so pkgconfig/vnfs-bdb.pc; do
  check "installed <libdir>/$f" test -e "$libdir/$f"
done
for f in include/vnfs/tpie/raw_file_accessor.hpp include/vnfs/tpie/mounts.hpp \
         include/vnfs/tpie/override/tpie/file_accessor/file_accessor.h \
         include/vnfs/tpie/override/tpie/file_accessor/vnfs_accessor.h; do
  check "installed $f" test -e "$prefix/$f"
done
for f in libvnfs_tpie.a pkgconfig/vnfs-tpie.pc; do
  check "installed <libdir>/$f" test -e "$libdir/$f"
done
# Of the protocol layers only nfs4/status.hpp, which error.hpp refers to: the xdr, rpc and
# transport headers, and the rest of nfs4, are no public header's business.
check "no protocol or transport headers installed beyond nfs4/status.hpp" \
  test "$(cd "$prefix/include/vnfs" && find xdr rpc nfs4 transport -name '*.hpp' 2>/dev/null)" = nfs4/status.hpp
# Internal headers (src/) and test helpers stay out; so does the build tree's path.
check "no internal headers installed" test -z "$(find "$prefix/include" -path '*/server/*' -o -path '*/client/*' -o -path '*/vnfs/test/*')"
src_root=$(cd "$project/../../.." && pwd)
check "no build or source paths in the CMake package or vnfs.pc" \
  bash -c "! grep -rlF -e '$build' -e '$src_root' '$libdir/cmake' '$libdir/pkgconfig'"

step "every installed header compiles on its own"
mkdir -p "$work/headers"
n=0
while IFS= read -r h; do
  rel=${h#"$prefix/include/"}
  n=$((n + 1))
  printf '#include <%s>\n' "$rel" >"$work/headers/$n.cpp"
  check_bg "header $rel is self-contained" \
    "$cxx" -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I"$prefix/include" "$work/headers/$n.cpp"
done < <(find "$prefix/include" -name '*.hpp' | sort)
checks_done

step "find_package(vnfs) build"
check "configure consumer with find_package(vnfs)" \
  cmake -S "$project" -B "$work/cmake-build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags"
check_bg "build consumer with find_package(vnfs)" cmake --build "$work/cmake-build" -j2

step "pkg-config build"
export PKG_CONFIG_PATH=$libdir/pkgconfig
check "pkg-config --modversion vnfs" bash -c 'pkg-config --modversion vnfs | grep -qE "^[0-9]+\.[0-9]+\.[0-9]+$"'
pc_flags=$(pkg-config --cflags --libs vnfs)
echo "pkg-config --cflags --libs vnfs: $pc_flags"
# shellcheck disable=SC2086  # the flags are words
check_bg "build consumer with pkg-config" \
  "$cxx" -std=c++20 -Wall -Wextra -Werror $flags "$project/main.cpp" -o "$work/consumer-pc" $pc_flags

pc_bdb_flags=$(pkg-config --cflags --libs vnfs-bdb)
echo "pkg-config --cflags --libs vnfs-bdb: $pc_bdb_flags"
# shellcheck disable=SC2086  # the flags are words
check_bg "build bdb_consumer with pkg-config" \
  "$cxx" -std=c++20 -Wall -Wextra -Werror $flags "$project/bdb_consumer.cpp" -o "$work/bdb_consumer-pc" $pc_bdb_flags -ldb-5.3

pc_tpie_flags=$(pkg-config --cflags --libs vnfs-tpie)
echo "pkg-config --cflags --libs vnfs-tpie: $pc_tpie_flags"
# shellcheck disable=SC2086  # the flags are words
check_bg "build tpie_consumer with pkg-config" \
  "$cxx" -std=c++20 -Wall -Wextra -Werror $flags "$project/tpie_consumer.cpp" -o "$work/tpie_consumer-pc" $pc_tpie_flags

pc_server_flags=$(pkg-config --cflags --libs vnfs-server)
echo "pkg-config --cflags --libs vnfs-server: $pc_server_flags"
# shellcheck disable=SC2086  # the flags are words
check_bg "build server_consumer with pkg-config" \
  "$cxx" -std=c++20 -Wall -Wextra -Werror $flags "$project/server_consumer.cpp" -o "$work/server_consumer-pc" $pc_server_flags

checks_done

step "run the embedded-server consumers"
for c in cmake-build/server_consumer server_consumer-pc; do
  check "$c" "$work/$c"
done

consumers=()
for c in cmake-build/consumer consumer-pc cmake-build/bdb_consumer bdb_consumer-pc \
         cmake-build/tpie_consumer tpie_consumer-pc; do
  [[ -x "$work/$c" ]] && consumers+=("$work/$c")
done
[[ ${#consumers[@]} -eq 6 ]] || finish

step "run against file://"
mkdir -p "$work/files"
for c in "${consumers[@]}"; do
  check "${c#"$work/"} file://" "$c" "file://$work/files"
done

step "run against the installed vnfsd"
mkdir -p "$work/export"
"$prefix/bin/vnfsd" --export "$work/export" --listen 127.0.0.1:0 >"$work/vnfsd.log" 2>&1 &
vnfsd_pid=$!
url=""
for _ in $(seq 300); do
  url=$(grep -o -m1 -E 'tcp://127\.0\.0\.1:[0-9]+' "$work/vnfsd.log") && break
  kill -0 "$vnfsd_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$url" ]]; then
  fail "installed vnfsd did not start"
  cat "$work/vnfsd.log"
  finish
fi
for c in "${consumers[@]}"; do
  check "${c#"$work/"} nfs://" "$c" "nfs://${url#tcp://}/"
done
kill -TERM "$vnfsd_pid"
wait "$vnfsd_pid"
check "installed vnfsd exits 0 on SIGTERM" test $? -eq 0
vnfsd_pid=""

finish
