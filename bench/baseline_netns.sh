#!/usr/bin/env bash
# The libnfs baseline over NFSv3 against NFS-Ganesha, directly and through vnfs-netdelay.
#
# NFSv3 needs rpcbind (Ganesha registers MOUNT with it, or exits), and rpcbind must not be
# touched on the host. So everything runs inside a private network and mount namespace
# made here (unshare): a tmpfs on /run, loopback up, rpcbind, Ganesha serving a scratch
# directory over NFSv3 and NFSv4 on fixed ports, then
#   1. libnfs_baseline directly, finding the ports through rpcbind (portmapper), and
#   2. for each --delays D: two vnfs-netdelay proxies (one for NFS, one for MOUNT) and
#      libnfs_baseline through them, the ports given in the URL (nfsport=, mountport=)
#      since the portmapper would hand out Ganesha's own ports; and, through the same NFS
#      proxy, what a user runs to copy those files: the whole `vnfs --stats cp -r` process
#      (start, NFSv4.1 session, listing, local writes) timed by the wall clock, beside
#      libnfs_baseline's copy phase (mount, listing, reads, local writes).
# Every process started is stopped by its pid (SIGTERM, then SIGKILL after a grace); each
# step is bounded by `timeout`, the whole run by --timeout. The namespace disappears with
# its last process. Needs root. The scratch (Ganesha's export, both clients' local copies)
# is made under $TMPDIR (default /tmp).
#
# Usage: bash bench/baseline_netns.sh [--delays 0,0.1,0.6,2.6] [--files 100] [--size 1024]
#          [--repeat 3] [--out-dir bench/results] [--timeout SECONDS] [--build DIR]
# Results: OUT_DIR/libnfs_baseline-direct.json, OUT_DIR/libnfs_baseline-netdelay-D.json and
# OUT_DIR/vnfs_cp-netdelay-D.json (the vnfs cp -r runs).
set -euo pipefail

delays="0,0.1,0.6,2.6"
files=100
size=1024
repeat=3
out_dir="bench/results"
total_timeout=1800
build_dir="build/default"
inside=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --delays) delays="$2"; shift 2 ;;
    --files) files="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --out-dir) out_dir="$2"; shift 2 ;;
    --timeout) total_timeout="$2"; shift 2 ;;
    --build) build_dir="$2"; shift 2 ;;
    --inside-namespace) inside=1; shift ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "baseline_netns.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

log() { printf 'baseline_netns: %s\n' "$*" >&2; }

if [[ $inside -eq 0 ]]; then
  # ---- on the host: check, then re-run this script inside new namespaces ----
  cd "$(dirname "$0")/.."
  [[ $(id -u) -eq 0 ]] || { log "needs root (unshare, Ganesha's open_by_handle_at)"; exit 1; }
  for b in "$build_dir/bench/libnfs_baseline" "$build_dir/tools/vnfs-netdelay" "$build_dir/tools/vnfs"; do
    [[ -x $b ]] || { log "missing $b: cmake --build --preset default --target libnfs_baseline vnfs-netdelay vnfs"; exit 1; }
  done
  for p in rpcbind rpcinfo ganesha.nfsd unshare ip; do
    command -v "$p" >/dev/null || { log "missing $p: bash scripts/install-deps.sh"; exit 1; }
  done
  mkdir -p "$out_dir"
  out_dir=$(realpath "$out_dir")
  build_dir=$(realpath "$build_dir")
  exec timeout --kill-after=10 "$total_timeout" \
    unshare --mount --net --fork --propagation private \
    bash "$(realpath "$0")" --inside-namespace --delays "$delays" --files "$files" --size "$size" \
      --repeat "$repeat" --out-dir "$out_dir" --build "$build_dir"
fi

# ---- inside the namespaces ----
nfs_port=2049
mnt_port=20048
scratch=$(mktemp -d "${TMPDIR:-/tmp}/vnfs-baseline-XXXXXX")
pids=()   # everything started here, stopped in reverse order

stop_pid() {  # SIGTERM, up to 5 s, then SIGKILL; by pid only
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  log "pid $pid ignored SIGTERM; SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_pid "${pids[i]}"; done
  rm -rf "$scratch"
}
trap cleanup EXIT

# Waits up to $1 tenths of a second for the command in "${@:2}" to succeed.
wait_until() {
  local tenths=$1 i
  shift
  for ((i = 0; i < tenths; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

mount -t tmpfs -o mode=0755 tmpfs /run   # rpcbind's socket and lock; private to this namespace
ip link set lo up

rpcbind -f &
pids+=($!)
wait_until 100 rpcinfo -p 127.0.0.1 || { log "rpcbind did not answer"; exit 1; }

mkdir -p "$scratch/export" "$scratch/recov" "$scratch/ccache"
cat >"$scratch/ganesha.conf" <<EOF
# No Bind_addr: inside a fresh network namespace 127.0.0.1 does not resolve for Ganesha.
NFS_CORE_PARAM {
    Protocols = 3, 4;
    NFS_Port = $nfs_port;
    MNT_Port = $mnt_port;
    Enable_RQUOTA = false;
    Enable_NLM = false;
    Enable_UDP = false;
}
NFS_KRB5 { Active_krb5 = false; CCacheDir = $scratch/ccache; }
NFSv4 {
    Graceless = true;
    RecoveryRoot = $scratch/recov;
    Only_Numeric_Owners = true;
}
EXPORT {
    Export_Id = 1;
    Path = $scratch/export;
    Pseudo = /export;
    Protocols = 3, 4;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
EOF
BLKID_FILE="$scratch/blkid.tab" ganesha.nfsd -F -L "$scratch/ganesha.log" -f "$scratch/ganesha.conf" \
  -p "$scratch/ganesha.pid" &
pids+=($!)
mount_registered() { rpcinfo -p 127.0.0.1 | grep -q ' 100005 .* tcp .* '"$mnt_port"; }
if ! wait_until 200 mount_registered; then
  log "Ganesha did not register MOUNT with rpcbind; its log:"
  tail -n 30 "$scratch/ganesha.log" >&2 || true
  exit 1
fi
log "rpcbind and Ganesha (NFSv3+v4, export $scratch/export) up in a private network namespace"

driver=("$build_dir/bench/libnfs_baseline" --files "$files" --size "$size" --repeat "$repeat")
export_path="$scratch/export"   # NFSv3 MOUNT takes the export's Path

log "direct (ports from rpcbind)"
timeout --kill-after=5 600 "${driver[@]}" --url "nfs://127.0.0.1$export_path?version=3" \
  --label "direct, ports from rpcbind" --out "$out_dir/libnfs_baseline-direct.json"

# vnfs_copy_runs D URL OUT: --repeat runs of the whole `vnfs --stats cp -r URL` into a fresh
# local directory, each timed by the wall clock and checked with diff -r against the export;
# writes OUT as JSON (seconds and the --stats line of each run).
vnfs_copy_runs() {
  local d=$1 url=$2 out=$3 r runs="" t0 t1 stats
  for ((r = 0; r < repeat; r++)); do
    rm -rf "$scratch/vnfs-copy"
    t0=$(date +%s.%N)
    stats=$(timeout --kill-after=5 600 "$build_dir/tools/vnfs" --stats cp -r "$url" "$scratch/vnfs-copy" | tail -n 1)
    t1=$(date +%s.%N)
    diff -r "$export_path/libnfs-baseline" "$scratch/vnfs-copy" >/dev/null ||
      { log "vnfs cp -r: the copy differs from the export"; exit 1; }
    runs+="${runs:+, }{\"wall_seconds\": $(awk "BEGIN{print $t1 - $t0}"), \"stats\": $stats}"
    log "vnfs cp -r at D = $d ms, run $((r + 1)): $(awk "BEGIN{print $t1 - $t0}") s"
  done
  rm -rf "$scratch/vnfs-copy"
  printf '{"benchmark": "vnfs_cp", "delay_ms": %s, "files": %s, "size": %s, "url": "%s", "runs": [%s]}\n' \
    "$d" "$files" "$size" "$url" "$runs" >"$out"
}

IFS=, read -r -a delay_list <<<"$delays"
for d in "${delay_list[@]}"; do
  n=${#pids[@]}
  # Command substitution runs in a subshell, which cannot add to pids: start the
  # proxies here and read their ports from their output files.
  "$build_dir/tools/vnfs-netdelay" --listen 127.0.0.1:0 --to "127.0.0.1:$nfs_port" --delay-ms "$d" \
    >"$scratch/proxy-nfs.out" &
  pids+=($!)
  "$build_dir/tools/vnfs-netdelay" --listen 127.0.0.1:0 --to "127.0.0.1:$mnt_port" --delay-ms "$d" \
    >"$scratch/proxy-mnt.out" &
  pids+=($!)
  ready_port() { sed -n 's/^netdelay listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$1"; }
  wait_until 100 grep -q '^netdelay listening on' "$scratch/proxy-nfs.out" || { log "NFS proxy not ready"; exit 1; }
  wait_until 100 grep -q '^netdelay listening on' "$scratch/proxy-mnt.out" || { log "MOUNT proxy not ready"; exit 1; }
  p_nfs=$(ready_port "$scratch/proxy-nfs.out")
  p_mnt=$(ready_port "$scratch/proxy-mnt.out")
  log "through vnfs-netdelay, D = $d ms (RTT + $(awk "BEGIN{print 2*$d}") ms): nfsport=$p_nfs mountport=$p_mnt"
  timeout --kill-after=5 600 "${driver[@]}" --keep \
    --url "nfs://127.0.0.1$export_path?version=3&nfsport=$p_nfs&mountport=$p_mnt" \
    --label "vnfs-netdelay one-way delay $d ms" --out "$out_dir/libnfs_baseline-netdelay-$d.json"
  vnfs_copy_runs "$d" "nfs://127.0.0.1:$p_nfs/export/libnfs-baseline" "$out_dir/vnfs_cp-netdelay-$d.json"
  # The files libnfs left (--keep), removed over NFSv4.1 without the proxy.
  timeout --kill-after=5 300 "$build_dir/tools/vnfs" rm -r "nfs://127.0.0.1:$nfs_port/export/libnfs-baseline"
  # Stop this delay's two proxies now (they are the last two pids).
  for ((i = ${#pids[@]} - 1; i >= n; i--)); do stop_pid "${pids[i]}"; done
  pids=("${pids[@]:0:n}")
done
log "done; results in $out_dir"
