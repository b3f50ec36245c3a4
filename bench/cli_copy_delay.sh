#!/usr/bin/env bash
# `vnfs cp -r` between local disk and a server, both ways, through vnfs-netdelay: 1,000 x
# 1 KiB files in one directory, local → server and server → local, against vnfsd and
# NFS-Ganesha 4.3 (needs root and ganesha.nfsd; both started here on loopback, with one
# proxy each, stopped by pid). Each run is the whole `vnfs --stats` process timed by the
# wall clock (start, NFSv4.1 session, listing, the copy, the local side, the end), with its
# COMPOUNDs; also the same copies with no proxy (0 ms), which leaves the local side and the
# servers' time. Every copy back is checked with diff -r. libnfs's side of the comparison
# is bench/baseline_netns.sh (NFSv3 needs a namespace of its own).
# The two servers take turns run by run (vnfsd first in odd runs, Ganesha in even ones): on
# an ext4 without a journal, creating files costs more for a few seconds after files were
# deleted nearby (the allocator skips recently deleted inodes one by one), so whoever runs
# right after the set-up, or after another program's clean-up, pays for it; taking turns
# spreads that over both servers.
# Writes bench/results/cli_copy_delay.json (or OUT).
# Usage: bash bench/cli_copy_delay.sh [OUT] [RUNS] [DELAY_MS]   (default 3 runs, 2.8 ms each way)
#   VNFS_BIN: another vnfs binary (e.g. of an earlier build) instead of build/default's.
#   TMPDIR: where the exports and the local trees go (default /tmp); the JSON names its
#   file system type (scratch_fs), e.g. tmpfs to leave the disk out.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/cli_copy_delay.json}
runs=${2:-3}
delay=${3:-2.8}
if [ -z "${VNFS_BIN:-}" ]; then
  cmake --preset default >/dev/null
  cmake --build --preset default -j2 --target vnfs vnfsd vnfs-netdelay >/dev/null
fi
vnfs=${VNFS_BIN:-build/default/tools/vnfs}
ganesha_bin=${GANESHA_BIN:-$(command -v ganesha.nfsd || echo /usr/bin/ganesha.nfsd)}
[ "$(id -u)" = 0 ] && [ -x "$ganesha_bin" ] || { echo "cli_copy_delay: needs root and ganesha.nfsd" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/vnfs-cli-copy-delay.XXXXXX")
scratch_fs=$(findmnt -n -f -o FSTYPE -T "$work" || stat -f -c %T "$work")
source bench/two_servers.sh
start_two_servers cli_copy_delay

proxy() {  # NAME TARGET_PORT: starts a proxy (its pid in pids); its port in proxy_port
  build/default/tools/vnfs-netdelay --listen 127.0.0.1:0 --to "127.0.0.1:$2" --delay-ms "$delay" > "$work/proxy-$1.out" &
  pids+=($!)
  for _ in $(seq 100); do grep -qs '^netdelay listening' "$work/proxy-$1.out" && break; sleep 0.1; done
  proxy_port=$(sed -n 's/^netdelay listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/proxy-$1.out")
}
proxy vnfsd "$vport"; vproxy=$proxy_port
proxy ganesha "$gport"; gproxy=$proxy_port
[ -n "$vproxy" ] && [ -n "$gproxy" ] || { echo "cli_copy_delay: a proxy did not start" >&2; exit 1; }

now() { date +%s.%N; }
results=()
n=0
timed() {  # SERVER RTT DIRECTION RUN ARGS...: one whole vnfs process
  local server=$1 rtt=$2 direction=$3 run=$4; shift 4
  local t0 t1 stats
  t0=$(now); stats=$("$vnfs" --stats "$@" | tail -1); t1=$(now)
  local s; s=$(awk "BEGIN{print $t1 - $t0}")
  results+=("{\"server\":\"$server\",\"rtt_ms\":$rtt,\"direction\":\"$direction\",\"run\":$run,\"wall_seconds\":$s,\"stats\":$stats}")
  echo "$server rtt $rtt ms $direction run $run: $s s $stats"
}
rtt=$(awk "BEGIN{print 2 * $delay}")
for mode in direct proxy; do
  for run in $(seq "$runs"); do
    order="vnfsd ganesha"; [ $((run % 2)) = 0 ] && order="ganesha vnfsd"
    for server in $order; do
      port=$vport; [ $server = ganesha ] && port=$gport
      r=0
      if [ $mode = proxy ]; then port=$vproxy; [ $server = ganesha ] && port=$gproxy; r=$rtt; fi
      url=nfs://127.0.0.1:$port; [ $server = ganesha ] && url=$url/export
      n=$((n + 1))
      timed "$server" "$r" to_server "$run" cp -r "$work/src/d" "$url/t$n"
      timed "$server" "$r" from_server "$run" cp -r "$url/t$n" "$work/back$n"
      diff -r "$work/src/d" "$work/back$n"
    done
  done
done

mkdir -p "$(dirname "$out")"
{
  printf '{"bench":"cli_copy_delay","files":1000,"file_bytes":1024,"delay_ms":%s,"vnfs":"%s","scratch_fs":"%s","date":"%s","results":[\n' \
    "$delay" "$vnfs" "$scratch_fs" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  (IFS=$'\n'; echo "${results[*]}" | sed '$!s/$/,/')
  echo "]}"
} > "$out"
echo "wrote $out"
