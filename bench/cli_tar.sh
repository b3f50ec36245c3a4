#!/usr/bin/env bash
# `vnfs tar -c` of a generated source tree (1,000 files of 200 B..12 KB in 50 directories,
# ~6 MB) on vnfsd over loopback, and `vnfs tar -x` of that archive back into vnfsd, with
# the vectorized calls and with --scalar (each item as scalar calls): COMPOUNDs, operations
# and seconds, from `vnfs --stats`, into bench/results/cli_tar.json. Every extraction is
# checked with diff -r against the tree. Also unmodified bsdtar -x of the same archive
# through the preload library (adapters/archive), whose `vnfs tar -x -f -` child reports
# its --stats, and bsdtar -x to local disk for reference (seconds only).
# Usage: bash bench/cli_tar.sh [RUNS]   (default 3 runs of each mode)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
cmake --preset default >/dev/null
cmake --build --preset default -j2 --target vnfs vnfsd vnfs_bsdtar_preload >/dev/null
vnfs=build/default/tools/vnfs

work=$(mktemp -d /tmp/vnfs-cli-tar.XXXXXX)
vnfsd_pid=
cleanup() {
  if [ -n "$vnfsd_pid" ]; then kill "$vnfsd_pid" 2>/dev/null || true; wait "$vnfsd_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/export"
tree=$work/export/src
for d in $(seq -w 0 49); do
  dir=$tree/pkg$((10#$d / 10))/mod$d
  mkdir -p "$dir"
  for f in $(seq -w 0 19); do
    head -c $(( 200 + (10#$d * 20 + 10#$f) * 7919 % 11800 )) /dev/urandom | base64 > "$dir/file$f.c"
  done
done
files=$(find "$tree" -type f | wc -l)
dirs=$(find "$tree" -type d | wc -l)
bytes=$(find "$tree" -type f -printf '%s\n' | awk '{s += $1} END {print s}')

build/default/tools/vnfsd --export "$work/export" --listen 127.0.0.1:0 > "$work/vnfsd.out" &
vnfsd_pid=$!
for _ in $(seq 100); do grep -q listening "$work/vnfsd.out" && break; sleep 0.1; done
port=$(sed -n 's/^vnfsd listening on tcp:\/\/127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/vnfsd.out")
[ -n "$port" ] || { echo "cli_tar: vnfsd did not start" >&2; exit 1; }
url=nfs://127.0.0.1:$port

results=()
for run in $(seq "$runs"); do
  for mode in vectorized scalar; do
    flag=; [ $mode = scalar ] && flag=--scalar
    c=$($vnfs --stats $flag tar -c -f "$work/a_$mode$run.tar" "$url/src" | tail -1)
    x=$($vnfs --stats $flag tar -x -f "$work/a_$mode$run.tar" "$url/x_$mode$run" | tail -1)
    diff -r "$tree" "$work/export/x_$mode$run"
    results+=("{\"mode\":\"$mode\",\"run\":$run,\"operation\":\"archive\",\"stats\":$c}")
    results+=("{\"mode\":\"$mode\",\"run\":$run,\"operation\":\"extract\",\"stats\":$x}")
    echo "$mode run $run: archive $c; extract $x"
  done
  mkdir -p "$work/mnt/p$run" "$work/local$run"
  printf '#!/bin/sh\nexec %s --stats "$@"\n' "$PWD/$vnfs" > "$work/vnfs-stats"
  chmod +x "$work/vnfs-stats"
  p=$(VNFS_CLI="$work/vnfs-stats" VNFS_MAP="$work/mnt=$url" \
      LD_PRELOAD=$PWD/build/default/adapters/archive/libvnfs_bsdtar_preload.so \
      bsdtar -xf "$work/a_vectorized$run.tar" -C "$work/mnt/p$run" | tail -1)
  diff -r "$tree" "$work/export/p$run"
  t0=$(date +%s.%N); bsdtar -xf "$work/a_vectorized$run.tar" -C "$work/local$run"; t1=$(date +%s.%N)
  diff -r "$tree" "$work/local$run"
  results+=("{\"mode\":\"bsdtar_preload\",\"run\":$run,\"operation\":\"extract\",\"stats\":$p}")
  results+=("{\"mode\":\"bsdtar_local_disk\",\"run\":$run,\"operation\":\"extract\",\"seconds\":$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')}")
  echo "bsdtar run $run: through vnfs $p; to local disk $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}') s"
done

mkdir -p bench/results
{
  printf '{"bench":"cli_tar","files":%s,"directories":%s,"bytes":%s,"date":"%s","results":[\n' \
    "$files" "$dirs" "$bytes" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  (IFS=$'\n'; echo "${results[*]}" | sed '$!s/$/,/')
  printf ']}\n'
} > bench/results/cli_tar.json
echo "wrote bench/results/cli_tar.json"
