#!/usr/bin/env bash
# Builds the benchmarks (preset default: optimized), runs them, plots the results into
# bench/results/ and regenerates bench/README.md from them.
#
# Usage: bash bench/run.sh [--quick]
#   --quick  bounded run (well under 10 minutes on 2 cores): shorter runs, fewer files,
#            fewer sizes; the full run takes longer (see bench/README.md for its duration).
# Each step's duration is printed and written to bench/results/run_times.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$a' (see --help)" >&2; exit 2 ;;
  esac
done
bash scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j2 --target compound_rate client_io netdelay_rtt rdma_io vnfs_experiments \
  libnfs_baseline vnfs vnfsd vnfs-netdelay
cmake --build --preset default -j2 --target filebench_personalities
py=/usr/bin/python3  # Debian's python3 (with python3-matplotlib), not whichever is first on PATH
b=build/default/bench
r=bench/results
mkdir -p $r
times=$r/run_times.txt
: > $times
t_all=$SECONDS
step() {  # step NAME COMMAND...: runs it, records its duration
  local name=$1 t=$SECONDS
  shift
  echo "== $name" >&2
  "$@"
  echo "$name $((SECONDS - t)) s" | tee -a $times >&2
}
if ((quick)); then
  cr=(--seconds 1); ci=(--seconds 1); nr=(--pings 300 --seconds 2 --runs 1 --bytes 1073741824)
  ex=(--quick); bl=(--files 100 --repeat 3); ri=(--seconds 1.5 --file-mib 128 --sizes 4K,8K,16K,32K,64K,128K,256K,512K,1M --depths 1 --readahead 16); ct=(--scale 0.005 --runs 1)
else
  cr=(); ci=(); nr=(); ex=(); bl=(--files 1000 --repeat 3); ri=(--seconds 3 --sizes 4K,8K,16K,32K,64K,128K,256K,512K,1M,2M,4M --depths 1,16 --readahead 16); ct=(--scale 0.02 --runs 3)
fi
# papers/000 Figures 6-8 through vnfs-netdelay: vectorized vs scalar, against vnfsd and Ganesha.
step vnfs_experiments $b/vnfs_experiments "${ex[@]}" --out $r/vnfs_experiments.json
$py bench/plot_vnfs_experiments.py $r/vnfs_experiments.json
# papers/000 Figure 12: Filebench NFS-Server, File-Server, Varmail, scalar vs vectorized flows.
fb=(); ((quick)) && fb=(--quick)
step filebench_personalities $b/filebench_personalities "${fb[@]}" --out $r/filebench_personalities.json
$py bench/plot_filebench_personalities.py $r/filebench_personalities.json $r/filebench_personalities.png
# COMPOUNDs/s of vnfsd and Ganesha (getattr, 4 KiB read) over 1 and 16 connections.
step compound_rate $b/compound_rate "${cr[@]}" --out $r/compound_rate.json
$py bench/plot_compound_rate.py $r/compound_rate.json $r/compound_rate.png
# vnfs::client 4 KiB reads (registered vs plain memory, queue depth 1/8/64) against vnfsd.
step client_io $b/client_io "${ci[@]}" --out $r/client_io.json
$py bench/plot_client_io.py $r/client_io.json $r/client_io.png
# vnfs-netdelay, the latency emulator: the RTT it adds at D = 0, 0.1, 0.6, 2.6 ms (goal 2 x D)
# and its throughput on one connection at D = 0 and 2.6 ms.
step netdelay_rtt $b/netdelay_rtt "${nr[@]}" --throughput-delays 0,2.6 --out $r/netdelay_rtt.json
$py bench/plot_netdelay_rtt.py $r/netdelay_rtt.json $r/netdelay_rtt.png
# The libnfs baseline (NFSv3, synchronous API) against NFS-Ganesha in a private network
# namespace with rpcbind: directly, and through vnfs-netdelay at D = 0, 0.1, 0.6, 2.6 ms.
step libnfs_baseline bash bench/baseline_netns.sh "${bl[@]}" --out-dir $r
$py bench/summarize_libnfs_baseline.py $r
# vnfs cp -r of 1,000 small files to vnfsd and back, vectorized vs --scalar (COMPOUNDs, seconds).
step cli_copy bash bench/cli_copy.sh
# papers/000 Figures 9-11: vnfs cp -r, ls -lR, rm -r of a generated source tree through
# vnfs-netdelay at RTT 0.2, 1.2, 5.2 ms, vectorized vs --scalar.
step cli_tree bash bench/cli_tree.sh "${ct[@]}" --out $r/cli_tree.json
# vnfs tar -c/-x of 1,000 files through vnfsd, vectorized vs --scalar, and bsdtar -x through the preload.
step cli_tar bash bench/cli_tar.sh
# papers/003 Figures 3-4: direct reads of 4 KiB..1 MiB blocks (full: ..4 MiB) over TCP and
# RPC-over-RDMA/cma against vnfsd, random at depth 1 (full: also 16) and sequential with a
# 16-block read-ahead window (bandwidth, client CPU %, s/GiB), and 1,000 small files scalar vs one vread.
step rdma_io $b/rdma_io "${ri[@]}" --out $r/rdma_io.json
$py bench/plot_rdma_io.py $r/rdma_io.json $r/rdma_io.png
echo "total $((SECONDS - t_all)) s" | tee -a $times >&2
cmd="bash bench/run.sh"
((quick)) && cmd+=" --quick"
$py bench/make_readme.py $r bench/README.md "$cmd (total $((SECONDS - t_all)) s; steps in bench/results/run_times.txt)"
