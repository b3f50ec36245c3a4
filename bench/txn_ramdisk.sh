#!/usr/bin/env bash
# papers/002 Figures 4-6 on the storage its figures assume: bench/txn_overhead with every
# export on XFS (reflink=1) in a file on /dev/shm, loop-mounted here. A flush there costs
# next to nothing, as on TC-NFS's capacitor-backed SSD (papers/002 §3; its Figure 9 ran
# on such a RAM disk), and range backups are reflinks (FICLONERANGE): what is left of
# txn / plain is the transactions' own work. Needs root (mount), mkfs.xfs and --size-gib of
# free memory; the mount and the image are removed on exit, also on failure.
#
# Usage: bash bench/txn_ramdisk.sh [--size-gib 6] [--out bench/results/txn_overhead-ramdisk.json]
#          [-- txn_overhead options, default: --figures 4]
set -euo pipefail
cd "$(dirname "$0")/.."
size_gib=6
out=bench/results/txn_overhead-ramdisk.json
extra=(--figures 4)
while (($#)); do
  case $1 in
    --size-gib) size_gib=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "txn_ramdisk.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bin=build/default/bench/txn_overhead
[ -x "$bin" ] || { echo "txn_ramdisk.sh: $bin is not built (cmake --build --preset default)" >&2; exit 1; }
command -v mkfs.xfs > /dev/null || { echo "txn_ramdisk.sh: mkfs.xfs is missing (apt-get install xfsprogs)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "txn_ramdisk.sh: mounting the RAM disk needs root" >&2; exit 1; }

image=$(mktemp /dev/shm/vnfs-txn-ramdisk.XXXXXX)
mnt=$(mktemp -d /tmp/vnfs-txn-ramdisk.XXXXXX)
mounted=
cleanup() {
  [ -z "$mounted" ] || umount "$mnt" || true
  rmdir "$mnt" 2>/dev/null || true
  rm -f "$image"
}
trap cleanup EXIT
truncate -s "${size_gib}G" "$image"
mkfs.xfs -q -m reflink=1 "$image"
mount -o loop "$image" "$mnt"
mounted=1
chmod 1777 "$mnt"
TMPDIR=$mnt "$bin" "${extra[@]}" --out "$out"
