#!/usr/bin/env bash
# `vnfs cp -r` of a generated tree of 1,000 small files in 41 directories to vnfsd and back
# over loopback, with the vectorized calls and with --scalar (each item as scalar calls):
# COMPOUNDs, operations and seconds per copy, from `vnfs --stats`, into
# bench/results/cli_copy.json. Every copy back is checked with diff -r.
# Usage: bash bench/cli_copy.sh [RUNS]   (default 3 runs of each mode and direction)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
cmake --preset default >/dev/null
cmake --build --preset default -j2 --target vnfs vnfsd >/dev/null
vnfs=build/default/tools/vnfs

work=$(mktemp -d /tmp/vnfs-cli-copy.XXXXXX)
vnfsd_pid=
cleanup() {
  if [ -n "$vnfsd_pid" ]; then kill "$vnfsd_pid" 2>/dev/null || true; wait "$vnfsd_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# 20 directories, each with a subdirectory; 25 files in each of the 40; sizes 0..4095 bytes.
tree=$work/tree
for d in $(seq -w 0 19); do
  mkdir -p "$tree/d$d/sub"
  for f in $(seq -w 0 49); do
    sub=; [ $((10#$f % 2)) = 0 ] && sub=sub/
    head -c $(( (10#$d * 50 + 10#$f) * 37 % 4096 )) /dev/urandom > "$tree/d$d/${sub}f$f"
  done
done
files=$(find "$tree" -type f | wc -l)
dirs=$(find "$tree" -type d | wc -l)
bytes=$(find "$tree" -type f -printf '%s\n' | awk '{s += $1} END {print s}')

mkdir "$work/export"
build/default/tools/vnfsd --export "$work/export" --listen 127.0.0.1:0 > "$work/vnfsd.out" &
vnfsd_pid=$!
for _ in $(seq 100); do grep -q listening "$work/vnfsd.out" && break; sleep 0.1; done
port=$(sed -n 's/^vnfsd listening on tcp:\/\/127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/vnfsd.out")
[ -n "$port" ] || { echo "cli_copy: vnfsd did not start" >&2; exit 1; }
url=nfs://127.0.0.1:$port

results=()
for run in $(seq "$runs"); do
  for mode in vectorized scalar; do
    flag=; [ $mode = scalar ] && flag=--scalar
    there=$($vnfs --stats $flag cp -r "$tree" "$url/t_$mode$run" | tail -1)
    back=$($vnfs --stats $flag cp -r "$url/t_$mode$run" "$work/back_$mode$run" | tail -1)
    diff -r "$tree" "$work/back_$mode$run"
    results+=("{\"mode\":\"$mode\",\"run\":$run,\"direction\":\"to_vnfsd\",\"stats\":$there}")
    results+=("{\"mode\":\"$mode\",\"run\":$run,\"direction\":\"from_vnfsd\",\"stats\":$back}")
    echo "$mode run $run: to vnfsd $there; back $back"
  done
done

mkdir -p bench/results
{
  printf '{"bench":"cli_copy","files":%s,"directories":%s,"bytes":%s,"date":"%s","results":[\n' \
    "$files" "$dirs" "$bytes" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  (IFS=$'\n'; echo "${results[*]}" | sed '$!s/$/,/')
  printf ']}\n'
} > bench/results/cli_copy.json
echo "wrote bench/results/cli_copy.json"
