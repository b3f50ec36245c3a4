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
# vnfs cp -r of 1,000 small files to vnfsd and back, vectorized vs --scalar (COMPOUNDs, seconds).
bash bench/cli_copy.sh
