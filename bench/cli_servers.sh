#!/usr/bin/env bash
# Third-party servers: COMPOUNDs and operations of `vnfs --stats` cp -r (there and back),
# ls -lR, tar -c, tar -x and rm -r of 1,000 x 1 KiB files in one directory, against vnfsd and
# NFS-Ganesha 4.3 (needs root and ganesha.nfsd; started here on loopback, stopped by pid).
# The copy back is checked with diff -r. Writes bench/results/cli_servers.json (or OUT).
# Usage: bash bench/cli_servers.sh [OUT]
#   VNFS_BIN: another vnfs binary (e.g. of an earlier build) instead of build/default's.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/cli_servers.json}
cmake --preset default >/dev/null
cmake --build --preset default -j2 --target vnfs vnfsd >/dev/null
vnfs=${VNFS_BIN:-build/default/tools/vnfs}
ganesha_bin=${GANESHA_BIN:-$(command -v ganesha.nfsd || echo /usr/bin/ganesha.nfsd)}
[ "$(id -u)" = 0 ] && [ -x "$ganesha_bin" ] || { echo "cli_servers: needs root and ganesha.nfsd" >&2; exit 1; }

work=$(mktemp -d /tmp/vnfs-cli-servers.XXXXXX)
source bench/two_servers.sh
start_two_servers cli_servers

results=()
for server in vnfsd ganesha; do
  url=nfs://127.0.0.1:$vport; [ $server = ganesha ] && url=nfs://127.0.0.1:$gport/export
  run() {  # NAME ARGS...: one command's --stats line
    local name=$1; shift
    local stats; stats=$("$vnfs" --stats "$@" | tail -1)
    results+=("{\"server\":\"$server\",\"command\":\"$name\",\"stats\":$stats}")
    echo "$server $name: $stats"
  }
  run "cp -r to" cp -r "$work/src/d" "$url/d"
  run "cp -r from" cp -r "$url/d" "$work/back_$server"
  diff -r "$work/src/d" "$work/back_$server"
  run "ls -lR" ls -lR "$url/d"
  run "tar -c" tar -c -f "$work/$server.tar" "$url/d"
  run "tar -x" tar -x -f "$work/$server.tar" "$url/x"
  run "rm -r" rm -r "$url/d"
done

mkdir -p "$(dirname "$out")"
{
  printf '{"bench":"cli_servers","files":1000,"file_bytes":1024,"vnfs":"%s","date":"%s","results":[\n' \
    "$vnfs" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  (IFS=$'\n'; echo "${results[*]}" | sed '$!s/$/,/')
  echo "]}"
} > "$out"
echo "wrote $out"
