#!/usr/bin/env bash
# bench/txn_syscalls.sh — what one transaction costs vnfsd in system calls, counted exactly
# (no timing: the counts do not depend on the machine's load). For each kind of
# bench/txn_cost (create1k, span1k, overwrite1m) it starts this build's vnfsd on a scratch
# export on loopback, prepares the files, attaches `strace -f -C` to every thread of vnfsd
# around one run of N transactions and one run of none (connection set-up only), and prints,
# per system call of interest, (calls in the run of N - calls in the run of none) / N.
# The files of the state directory are listed after each kind.
#
#   bash bench/txn_syscalls.sh [N]          (N: transactions per kind, default 200)
# Environment: BUILD (default build/default), VNFSD_BIN, TXN_COST_BIN, KINDS.
set -euo pipefail
N=${1:-200}
BUILD=${BUILD:-build/default}
VNFSD=${VNFSD_BIN:-$BUILD/tools/vnfsd}
COST=${TXN_COST_BIN:-$BUILD/bench/txn_cost}
KINDS=${KINDS:-create1k span1k overwrite1m}
CALLS="futex fsync fdatasync syncfs sync_file_range openat unlinkat linkat renameat2 mkdirat getdents64 pwrite64 write ftruncate"
work=$(mktemp -d /tmp/txn_syscalls.XXXXXX)
vpid=""
cleanup() {
  if [ -n "$vpid" ]; then kill "$vpid" 2>/dev/null || true; wait "$vpid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# counts FILE: "name calls" per line from strace -c's table
counts() { awk '/^% time/ { t = 1 } t && $1 ~ /^[0-9.]+$/ && NF >= 5 { print $NF, $4 }' "$1"; }

traced_run() {  # traced_run OUT KIND COUNT DIR
  local out=$1 kind=$2 count=$3 dir=$4
  strace -f -C -o "$out" -p "$vpid" 2>/dev/null &
  local spid=$!
  sleep 1  # strace attaches to every thread before the run starts
  "$COST" "nfs://127.0.0.1:$port/" "$dir" "$kind" "$count" --run > "$work/run.json"
  sleep 0.5
  kill -INT "$spid"
  wait "$spid" || true
}

for kind in $KINDS; do
  export_dir="$work/export-$kind"
  mkdir -p "$export_dir"
  port=$((20000 + RANDOM % 20000))
  "$VNFSD" --export "$export_dir" --listen "127.0.0.1:$port" > "$work/vnfsd.out" 2>&1 &
  vpid=$!
  for _ in $(seq 50); do grep -q listening "$work/vnfsd.out" && break; sleep 0.1; done
  grep -q listening "$work/vnfsd.out" || { cat "$work/vnfsd.out"; exit 1; }
  "$COST" "nfs://127.0.0.1:$port/" d "$kind" $((N + 1)) --prepare
  "$COST" "nfs://127.0.0.1:$port/" one "$kind" 1 --prepare
  "$COST" "nfs://127.0.0.1:$port/" warm "$kind" 1 --prepare
  # A first transaction creates the state directory: not part of the cost per transaction.
  "$COST" "nfs://127.0.0.1:$port/" warm "$kind" 1 --run > /dev/null
  traced_run "$work/none.txt" "$kind" 1 one  # set-up and one transaction
  traced_run "$work/many.txt" "$kind" $((N + 1)) d
  kill "$vpid"; wait "$vpid" 2>/dev/null || true; vpid=""
  echo "== $kind: per transaction, over $N transactions ($(cat "$work/run.json"))"
  join <(counts "$work/none.txt" | sort) <(counts "$work/many.txt" | sort) -a2 -e0 -o 0,1.2,2.2 |
    while read -r name none many; do
      case " $CALLS " in *" $name "*) awk -v n="$name" -v a="$none" -v b="$many" -v k="$N" \
        'BEGIN { printf "  %-16s %8.2f\n", n, (b - a) / k }' ;; esac
    done
  # Files created and removed in the state directory (names that are not the client's
  # numbered files).
  for f in none many; do
    eval "cre_$f=\$(grep 'openat(.*O_CREAT' \"$work/$f.txt\" | grep -vc '\"[0-9]*\"' || true)"
  done
  awk -v a="$cre_none" -v b="$cre_many" -v k="$N" 'BEGIN { printf "  %-16s %8.2f\n", "creat(state dir)", (b - a) / k }'
  echo "  state directory after the run: $(ls "$export_dir/.vnfsd-txn" | tr '\n' ' ')"
done
