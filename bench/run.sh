#!/usr/bin/env bash
# Builds the benchmarks (preset default: optimized), runs them and plots the results into
# bench/results/. Usage: bash bench/run.sh [extra compound_rate options, e.g. --seconds 5]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j2 --target compound_rate vnfsd
build/default/bench/compound_rate --out bench/results/compound_rate.json "$@"
# Debian's python3 (with python3-matplotlib), not whichever python3 is first on PATH.
/usr/bin/python3 bench/plot_compound_rate.py bench/results/compound_rate.json bench/results/compound_rate.png
# vnfs::client 4 KiB reads (registered vs plain memory, queue depth 1/8/64) against vnfsd.
cmake --build --preset default -j2 --target client_io vnfsd && build/default/bench/client_io --out bench/results/client_io.json && /usr/bin/python3 bench/plot_client_io.py bench/results/client_io.json bench/results/client_io.png
# vnfs-netdelay, the latency emulator: the RTT it adds at D = 0, 0.1, 0.6, 2.6 ms (goal 2 x D)
# and its throughput on one connection at D = 0 and 2.6 ms.
cmake --build --preset default -j2 --target netdelay_rtt vnfs-netdelay && build/default/bench/netdelay_rtt --throughput-delays 0,2.6 --out bench/results/netdelay_rtt.json && /usr/bin/python3 bench/plot_netdelay_rtt.py bench/results/netdelay_rtt.json bench/results/netdelay_rtt.png
# The libnfs baseline (NFSv3, synchronous API) against NFS-Ganesha in a private network
# namespace with rpcbind: directly, and through vnfs-netdelay at D = 0, 0.1, 0.6, 2.6 ms.
cmake --build --preset default -j2 --target libnfs_baseline vnfs-netdelay && bash bench/baseline_netns.sh --files 100 --repeat 3 --out-dir bench/results && /usr/bin/python3 bench/summarize_libnfs_baseline.py bench/results
# vnfs cp -r of 1,000 small files to vnfsd and back, vectorized vs --scalar (COMPOUNDs, seconds).
bash bench/cli_copy.sh
# vnfs tar -c/-x of 1,000 files through vnfsd, vectorized vs --scalar, and bsdtar -x through the preload.
bash bench/cli_tar.sh
# Direct reads 64 KiB..4 MiB at queue depth 1..64 over TCP and RPC-over-RDMA/cma against
# vnfsd (bandwidth, client CPU s/GiB), and 1,000 small files scalar vs one vread.
cmake --build --preset default -j2 --target rdma_io vnfsd && build/default/bench/rdma_io --seconds 2 --out bench/results/rdma_io.json && /usr/bin/python3 bench/plot_rdma_io.py bench/results/rdma_io.json bench/results/rdma_io.png
