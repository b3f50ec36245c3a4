#!/usr/bin/env bash
# papers/000 Figures 9-11 with the vnfs command line: cp -r of a source tree to vnfsd,
# ls -lR of it, tar -c of it to a local archive, tar -x of that archive back to vnfsd and
# rm -r of both copies, vectorized and with --scalar, through vnfs-netdelay at each one-way
# delay D (RTT 2D). The extracted copy is compared with the source tree (diff -r). The tree
# is generated from papers/000's statistics (53,640 files averaging 11.6 KB, 3,604
# directories, 23 symlinks) scaled by --scale.
# COMPOUNDs, operations and seconds per command come from `vnfs --stats`.
#
# Usage: bash bench/cli_tree.sh [--scale 0.005] [--delays 0.1,0.6,2.6] [--runs 1]
#          [--out bench/results/cli_tree.json]
# vnfsd and each proxy are started here and stopped by pid (also on failure); every vnfs
# command is bounded by `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=0.005
delays=0.1,0.6,2.6
runs=1
out=bench/results/cli_tree.json
while (($#)); do
  case $1 in
    --scale) scale=$2; shift 2 ;;
    --delays) delays=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cli_tree.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
cmake --build --preset default -j2 --target vnfs vnfsd vnfs-netdelay >/dev/null
vnfs=build/default/tools/vnfs

work=$(mktemp -d /tmp/vnfs-cli-tree.XXXXXX)
vnfsd_pid=
proxy_pid=
stop_pid() {  # stop_pid PID: SIGTERM, then wait for it
  [ -n "$1" ] || return 0
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
cleanup() {
  stop_pid "$proxy_pid"
  stop_pid "$vnfsd_pid"
  rm -rf "$work"
}
trap cleanup EXIT

# The tree (bench/make_tree.py): deterministic.
tree=$work/tree
counts=$(/usr/bin/python3 bench/make_tree.py "$tree" "$scale")
read -r files dirs links bytes <<<"$counts"
echo "tree: $files files, $dirs directories, $links symlinks, $bytes bytes" >&2

mkdir "$work/export"
build/default/tools/vnfsd --export "$work/export" --listen 127.0.0.1:0 > "$work/vnfsd.out" &
vnfsd_pid=$!
for _ in $(seq 100); do grep -q listening "$work/vnfsd.out" && break; sleep 0.1; done
port=$(sed -n 's/^vnfsd listening on tcp:\/\/127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/vnfsd.out")
[ -n "$port" ] || { echo "cli_tree: vnfsd did not start" >&2; exit 1; }

results=()
IFS=, read -ra delay_list <<<"$delays"
for d in "${delay_list[@]}"; do
  build/default/tools/vnfs-netdelay --listen 127.0.0.1:0 --to 127.0.0.1:$port --delay-ms "$d" > "$work/proxy.out" &
  proxy_pid=$!
  for _ in $(seq 100); do grep -q listening "$work/proxy.out" && break; sleep 0.1; done
  pport=$(sed -n 's/^netdelay listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/proxy.out")
  [ -n "$pport" ] || { echo "cli_tree: vnfs-netdelay did not start" >&2; exit 1; }
  url=nfs://127.0.0.1:$pport
  for run in $(seq "$runs"); do
    for mode in vectorized scalar; do
      flag=; [ $mode = scalar ] && flag=--scalar
      dst=t_${mode}_${d}_$run
      cp_s=$(timeout 600 $vnfs --stats $flag cp -r "$tree" "$url/$dst" | tail -1)
      ls_s=$(timeout 600 $vnfs --stats $flag ls -l -R "$url/$dst" | tail -1)
      tar_s=$(timeout 600 $vnfs --stats $flag tar -c -f "$work/$dst.tar" "$url/$dst" | tail -1)
      untar_s=$(timeout 600 $vnfs --stats $flag tar -x -f "$work/$dst.tar" "$url/${dst}_x" | tail -1)
      diff -r --no-dereference "$tree" "$work/export/${dst}_x" >&2 || { echo "cli_tree: tar -x of $dst differs" >&2; exit 1; }
      rm -f "$work/$dst.tar"
      rm_s=$(timeout 600 $vnfs --stats $flag rm -r "$url/$dst" | tail -1)
      timeout 600 $vnfs $flag rm -r "$url/${dst}_x"
      [ ! -e "$work/export/$dst" ] && [ ! -e "$work/export/${dst}_x" ] || { echo "cli_tree: rm -r left $dst" >&2; exit 1; }
      for pair in "cp-r:$cp_s" "ls-lR:$ls_s" "tar-c:$tar_s" "tar-x:$untar_s" "rm-r:$rm_s"; do
        results+=("{\"delay_ms\":$d,\"rtt_ms\":$(awk "BEGIN{print 2*$d}"),\"mode\":\"$mode\",\"run\":$run,\"command\":\"${pair%%:*}\",\"stats\":${pair#*:}}")
      done
      echo "D=$d $mode run $run: cp -r $cp_s; ls -lR $ls_s; tar -c $tar_s; tar -x $untar_s; rm -r $rm_s" >&2
    done
  done
  stop_pid "$proxy_pid"
  proxy_pid=
done

mkdir -p "$(dirname "$out")"
{
  printf '{"bench":"cli_tree","scale":%s,"files":%s,"directories":%s,"symlinks":%s,"bytes":%s,"date":"%s","results":[\n' \
    "$scale" "$files" "$dirs" "$links" "$bytes" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  (IFS=$'\n'; echo "${results[*]}" | sed '$!s/$/,/')
  printf ']}\n'
} > "$out"
echo "wrote $out" >&2
