# Sourced by bench scripts that compare vnfsd with NFS-Ganesha 4.3: start_two_servers NAME
# makes $work/src/d with 1,000 x 1 KiB random files, starts ganesha.nfsd ($ganesha_bin, export
# $work/ganesha_export, pseudo path /export) and vnfsd (export $work/vnfsd_export), both on
# loopback, and sets gport and vport once both accept connections. Expects $work (a scratch
# directory) to be set; the servers' pids go to the array pids, which an EXIT trap installed
# here kills (by pid) before removing $work. NAME prefixes the error messages.
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

start_two_servers() {
  local name=$1

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
  [ -n "$vport" ] || { echo "$name: vnfsd did not start" >&2; exit 1; }
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$gport) 2>/dev/null && break; sleep 0.1; done
}
