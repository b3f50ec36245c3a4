#!/usr/bin/env bash
# papers/002 Figures 13-14 with the vnfs command line: cp -r of a source tree to vnfsd, ls -lR
# of the copy, tar -x of its archive to vnfsd and rm -r of both, through vnfs-netdelay at each
# one-way delay D (RTT 2D), against two vnfsd: "plain" (--no-transactions: vnfs cp -r, vnfs
# tar -x) and "txn" (vnfs cp -r --atomic, vnfs tar -x --atomic: each one transaction; ls -lR
# and rm -r there are ordinary, non-transactional COMPOUNDs on a server with transactions).
# Also `vnfs --scalar tar -x` against "txn" (the scalar path: each entry as scalar calls),
# for the goal "atomic untar >= 100 x the scalar path at 5.2 ms". Every copy and extraction
# is compared with the tree (diff -r). The tree is bench/make_tree.py's (papers/000's
# statistics scaled by --scale). COMPOUNDs, operations and seconds come from `vnfs --stats`.
#
# Usage: bash bench/txn_tree.sh [--scale 0.02] [--delays 0.1,2.6] [--runs 2]
#          [--scalar-delays 0.1,2.6] [--out bench/results/txn_tree.json]
# Servers and proxies are started here and stopped by pid (also on failure); every vnfs
# command is bounded by `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=0.02
delays=0.1,2.6
scalar_delays=0.1,2.6
runs=2
out=bench/results/txn_tree.json
while (($#)); do
  case $1 in
    --scale) scale=$2; shift 2 ;;
    --delays) delays=$2; shift 2 ;;
    --scalar-delays) scalar_delays=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "txn_tree.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
vnfs=build/default/tools/vnfs
for b in $vnfs build/default/tools/vnfsd build/default/tools/vnfs-netdelay; do
  [ -x "$b" ] || { echo "txn_tree.sh: $b is not built (cmake --build --preset default)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/vnfs-txn-tree.XXXXXX)
pids=()
stop_pid() {  # stop_pid PID: SIGTERM, then wait for it
  [ -n "$1" ] || return 0
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
cleanup() {
  for p in "${pids[@]}"; do stop_pid "$p"; done
  rm -rf "$work"
}
trap cleanup EXIT

started_port=
start() {  # start NAME COMMAND...: runs it in the background until its ready line; sets started_port
  local name=$1
  shift
  "$@" > "$work/$name.out" &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$work/$name.out" && break; sleep 0.1; done
  local p
  p=$(sed -n 's/^.*listening on [a-z]*:*\/*127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/$name.out" | head -1)
  [ -n "$p" ] || { echo "txn_tree.sh: $name did not start" >&2; exit 1; }
  started_port=$p
}

tree=$work/tree
read -r files dirs links bytes <<<"$(/usr/bin/python3 bench/make_tree.py "$tree" "$scale")"
echo "tree: $files files, $dirs directories, $links symlinks, $bytes bytes" >&2
$vnfs tar -c -f "$work/tree.tar" "$tree"

declare -A port
for mode in plain txn; do
  mkdir "$work/export-$mode"
  flag=; [ $mode = plain ] && flag=--no-transactions
  start vnfsd-$mode build/default/tools/vnfsd --export "$work/export-$mode" --listen 127.0.0.1:0 $flag
  port[$mode]=$started_port
done

# One timed command: its --stats line. sync first (untimed), so that no command pays for data
# an earlier one left dirty (a transaction's commit flushes the file system: syncfs).
timed() {
  sync
  timeout "$1" $vnfs --stats "${@:2}" | tail -1
}
results=()
record() {  # record MODE DELAY RUN COMMAND STATS
  results+=("{\"server\":\"$1\",\"delay_ms\":$2,\"rtt_ms\":$(awk "BEGIN{print 2*$2}"),\"run\":$3,\"command\":\"$4\",\"stats\":$5}")
}
IFS=, read -ra delay_list <<<"$delays"
for d in "${delay_list[@]}"; do
  declare -A url
  proxies=()
  for mode in plain txn; do
    start proxy-$mode-$d build/default/tools/vnfs-netdelay --listen 127.0.0.1:0 --to 127.0.0.1:${port[$mode]} --delay-ms "$d"
    proxies+=("${pids[-1]}")
    url[$mode]=nfs://127.0.0.1:$started_port
  done
  for run in $(seq "$runs"); do
    for mode in plain txn; do
      atomic=; [ $mode = txn ] && atomic=--atomic
      dst=t_${d}_$run
      exp=$work/export-$mode
      cp_s=$(timed 600 cp -r $atomic "$tree" "${url[$mode]}/$dst")
      diff -r --no-dereference "$tree" "$exp/$dst" >&2 || { echo "txn_tree.sh: cp -r to $mode differs" >&2; exit 1; }
      ls_s=$(timed 600 ls -l -R "${url[$mode]}/$dst")
      untar_s=$(timed 600 tar -x $atomic -f "$work/tree.tar" "${url[$mode]}/${dst}_x")
      diff -r --no-dereference "$tree" "$exp/${dst}_x" >&2 || { echo "txn_tree.sh: tar -x to $mode differs" >&2; exit 1; }
      rm_s=$(timed 600 rm -r "${url[$mode]}/$dst")
      timeout 600 $vnfs rm -r "${url[$mode]}/${dst}_x"
      [ ! -e "$exp/$dst" ] && [ ! -e "$exp/${dst}_x" ] || { echo "txn_tree.sh: rm -r left $dst" >&2; exit 1; }
      for pair in "cp-r:$cp_s" "ls-lR:$ls_s" "tar-x:$untar_s" "rm-r:$rm_s"; do
        record $mode "$d" "$run" "${pair%%:*}" "${pair#*:}"
      done
      echo "D=$d $mode run $run: cp -r $atomic $cp_s; ls -lR $ls_s; tar -x $atomic $untar_s; rm -r $rm_s" >&2
    done
    if [[ ",$scalar_delays," == *",$d,"* ]]; then
      s=$(timed 900 --scalar tar -x -f "$work/tree.tar" "${url[txn]}/s_${d}_$run")
      diff -r --no-dereference "$tree" "$work/export-txn/s_${d}_$run" >&2 || { echo "txn_tree.sh: scalar tar -x differs" >&2; exit 1; }
      timeout 600 $vnfs rm -r "${url[txn]}/s_${d}_$run"
      record scalar "$d" "$run" tar-x "$s"
      echo "D=$d scalar run $run: tar -x $s" >&2
    fi
  done
  for p in "${proxies[@]}"; do stop_pid "$p"; done
done

mkdir -p "$(dirname "$out")"
{
  printf '{"bench":"txn_tree","scale":%s,"files":%s,"directories":%s,"symlinks":%s,"bytes":%s,"date":"%s","results":[\n' \
    "$scale" "$files" "$dirs" "$links" "$bytes" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  (IFS=$'\n'; echo "${results[*]}" | sed '$!s/$/,/')
  printf ']}\n'
} > "$out"
echo "wrote $out" >&2
