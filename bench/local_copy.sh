#!/usr/bin/env bash
# file:// on its own: `vnfs cp -r file:///SRC file:///DST` of 1,000 x 1 KiB files in one
# directory beside GNU `cp -r SRC DST` of the same tree, on the same disk, the two taking
# turns (RUNS times each, a fresh destination every time). Every vnfs copy is checked with
# diff -r. Wall-clock seconds of each whole process, medians, and vnfs / cp; the system
# calls of one vnfs copy (strace -f -c, when strace is there) for where the time goes.
# Writes bench/results/local_copy.json (or OUT).
# Usage: bash bench/local_copy.sh [OUT] [RUNS]   (default 11 runs)
#   VNFS_BIN: another vnfs binary (e.g. of an earlier build) instead of build/default's.
#   LOCAL_COPY_DIR: where the trees go (default /tmp; e.g. /dev/shm leaves the disk out).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/local_copy.json}
runs=${2:-11}
if [ -z "${VNFS_BIN:-}" ]; then
  cmake --preset default >/dev/null
  cmake --build --preset default -j2 --target vnfs >/dev/null
fi
vnfs=${VNFS_BIN:-build/default/tools/vnfs}

work=$(mktemp -d "${LOCAL_COPY_DIR:-/tmp}/vnfs-local-copy.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/d"
for i in $(seq -w 1 1000); do head -c 1024 /dev/urandom > "$work/src/d/f0$i"; done

now() { date +%s.%N; }
vnfs_s=() cp_s=()
for run in $(seq "$runs"); do
  rm -rf "$work/vnfs_dst" "$work/cp_dst"
  t0=$(now); "$vnfs" cp -r "file://$work/src" "file://$work/vnfs_dst"; t1=$(now)
  vnfs_s+=("$(awk "BEGIN{print $t1 - $t0}")")
  t0=$(now); cp -r "$work/src" "$work/cp_dst"; t1=$(now)
  cp_s+=("$(awk "BEGIN{print $t1 - $t0}")")
  diff -r "$work/src" "$work/vnfs_dst"
  echo "run $run: vnfs ${vnfs_s[-1]} s, cp ${cp_s[-1]} s"
done

syscalls=null
if command -v strace >/dev/null; then
  rm -rf "$work/vnfs_dst"
  strace -f -c -o "$work/strace.txt" "$vnfs" cp -r "file://$work/src" "file://$work/vnfs_dst"
  # "name": calls, for every system call of the summary.
  syscalls="{$(awk '$NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ && $NF != "total" {
      printf "%s\"%s\":%s", sep, $NF, $4; sep = "," }' "$work/strace.txt")}"
fi

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
mv_=$(median "${vnfs_s[@]}")
mc=$(median "${cp_s[@]}")
mkdir -p "$(dirname "$out")"
printf '{"bench":"local_copy","files":1000,"file_bytes":1024,"vnfs":"%s","date":"%s","runs":%s,"vnfs_seconds":[%s],"cp_seconds":[%s],"vnfs_median":%s,"cp_median":%s,"ratio":%s,"vnfs_syscalls":%s}\n' \
  "$vnfs" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$runs" "$(IFS=,; echo "${vnfs_s[*]}")" "$(IFS=,; echo "${cp_s[*]}")" \
  "$mv_" "$mc" "$(awk "BEGIN{printf \"%.2f\", $mv_ / $mc}")" "$syscalls" > "$out"
echo "vnfs median $mv_ s, cp median $mc s; wrote $out"
