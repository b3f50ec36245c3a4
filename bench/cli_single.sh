#!/usr/bin/env bash
# Single-file commands: `vnfs --stats cat` and `vnfs --stats stat` of one 1 KiB file d/f00001
# on vnfsd over loopback: COMPOUNDs and operations from `vnfs --stats` (session set-up
# included: EXCHANGE_ID and CREATE_SESSION, whose RECLAIM_COMPLETE and lease time ride on the
# command's COMPOUND; the teardown, DESTROY_SESSION and DESTROY_CLIENTID, comes after the line
# is printed). The output of cat is checked.
# Writes bench/results/cli_single.json (or OUT).
# Usage: bash bench/cli_single.sh [OUT]
#   VNFS_BIN, VNFSD_BIN: other binaries (e.g. of an earlier build) instead of build/default's.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/cli_single.json}
if [ -z "${VNFS_BIN:-}" ] || [ -z "${VNFSD_BIN:-}" ]; then
  cmake --preset default >/dev/null
  cmake --build --preset default -j2 --target vnfs vnfsd >/dev/null
fi
vnfs=${VNFS_BIN:-build/default/tools/vnfs}
vnfsd=${VNFSD_BIN:-build/default/tools/vnfsd}

work=$(mktemp -d /tmp/vnfs-cli-single.XXXXXX)
vnfsd_pid=
cleanup() {
  if [ -n "$vnfsd_pid" ]; then kill "$vnfsd_pid" 2>/dev/null || true; wait "$vnfsd_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/export/d"
head -c 1024 /dev/urandom > "$work/export/d/f00001"
"$vnfsd" --export "$work/export" --listen 127.0.0.1:0 > "$work/vnfsd.out" &
vnfsd_pid=$!
for _ in $(seq 100); do grep -q listening "$work/vnfsd.out" && break; sleep 0.1; done
port=$(sed -n 's/^vnfsd listening on tcp:\/\/127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/vnfsd.out")
[ -n "$port" ] || { echo "cli_single: vnfsd did not start" >&2; exit 1; }
file=nfs://127.0.0.1:$port/d/f00001

"$vnfs" --stats cat "$file" > "$work/cat.out"
head -c 1024 "$work/cat.out" | cmp - "$work/export/d/f00001"
cat_stats=$(tail -1 "$work/cat.out")
stat_stats=$("$vnfs" --stats stat "$file" | tail -1)
echo "cat: $cat_stats"
echo "stat: $stat_stats"

mkdir -p "$(dirname "$out")"
printf '{"bench":"cli_single","vnfs":"%s","date":"%s","results":[\n{"command":"cat","stats":%s},\n{"command":"stat","stats":%s}\n]}\n' \
  "$vnfs" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$cat_stats" "$stat_stats" > "$out"
echo "wrote $out"
