#!/usr/bin/env bash
# Refreshes the fuzzers' seed corpora (tests/fuzz/corpus/NAME) from real traffic: runs
# test_fuzz_corpus_traffic (a vnfs client's work against vnfsd, recorded through a proxy)
# with VNFS_FUZZ_SEED_DIR, then keeps at most KEEP seeds per harness, the smallest first, so
# the repository stays small. The RPC-over-RDMA seeds come from
# tests/fuzz/rdma_header_seeds.py instead (the proxy sees no RDMA traffic).
#
# Usage: bash scripts/refresh_fuzz_corpus.sh [KEEP]   (after a default-preset build)
set -euo pipefail
cd "$(dirname "$0")/.."
keep=${1:-40}
bin=build/default/tests/fuzz_corpus/test_fuzz_corpus_traffic
[[ -x $bin ]] || { echo "refresh_fuzz_corpus: build first: cmake --build --preset default --target test_fuzz_corpus_traffic" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
VNFS_FUZZ_SEED_DIR=$tmp "$bin" >/dev/null
for dir in "$tmp"/*/; do
  name=$(basename "$dir")
  dst=tests/fuzz/corpus/$name
  mkdir -p "$dst"
  # Regression inputs (named regression-*) stay; recorded seeds are replaced.
  find "$dst" -type f ! -name 'regression-*' -delete
  ls -S -r "$dir" | head -n "$keep" | while read -r f; do cp "$dir/$f" "$dst/$f"; done
  echo "refresh_fuzz_corpus: $name: $(ls "$dst" | wc -l) seeds"
done
