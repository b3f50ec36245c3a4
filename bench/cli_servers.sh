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
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/src/d" "$work/ganesha_export" "$work/vnfsd_export" "$work/scratch/recov" "$work/scratch/ccache"
for i in $(seq -w 1 1000); do head -c 1024 /dev/urandom > "$work/src/d/f0$i"; done

gport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$work/ganesha.conf" <<CONF
NFS_CORE_PARAM { Protocols = 4; Bind_addr = 127.0.0.1; NFS_Port = $gport;
                 Enable_RQUOTA = false; Enable_NLM = false; Enable_UDP = false; }
NFS_KRB5 { Active_krb5 = false; CCacheDir = $work/scratch/ccache; }
NFSv4 { Graceless = true; Lease_Lifetime = 15; RecoveryRoot = $work/scratch/recov;
        Minor_Versions = 1, 2; Only_Numeric_Owners = true; }
EXPORT { Export_Id = 1; Path = $work/ganesha_export; Pseudo = /export; Protocols = 4;
         Access_Type = RW; Squash = No_Root_Squash; SecType = sys; FSAL { Name = VFS; } }
LOG { Default_Log_Level = EVENT; }
CONF
BLKID_FILE=$work/scratch/blkid "$ganesha_bin" -F -L "$work/ganesha.log" -f "$work/ganesha.conf" -p "$work/ganesha.pid" &
pids+=($!)
build/default/tools/vnfsd --export "$work/vnfsd_export" --listen 127.0.0.1:0 > "$work/vnfsd.out" &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$work/vnfsd.out" && break; sleep 0.1; done
vport=$(sed -n 's/^vnfsd listening on tcp:\/\/127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/vnfsd.out")
[ -n "$vport" ] || { echo "cli_servers: vnfsd did not start" >&2; exit 1; }
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$gport) 2>/dev/null && break; sleep 0.1; done

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
