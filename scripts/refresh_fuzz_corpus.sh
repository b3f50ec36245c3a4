#!/usr/bin/env bash
# Refreshes the fuzzers' seed corpora (tests/fuzz/corpus/NAME) from real traffic: runs
# test_fuzz_corpus_traffic (a vnfs client's work against vnfsd, recorded through a proxy)
# with VNFS_FUZZ_SEED_DIR, then keeps, per harness the recording feeds, the smallest inputs
# that cover the same features:
# - libFuzzer's -merge=1 of the recorded inputs into a directory that holds only the
#   harness's regression inputs (regression-*) keeps an input only when it adds coverage
#   features to those and to the inputs kept before it, trying the smallest first;
# - of what it keeps, the smallest first while their total stays within CAP bytes per
#   harness (default 32768), so the repository stays small whatever the client sends.
# server_requests is not merged, only capped: its recorded calls are also the traffic that
# test_server_hostile_load mutates (it needs at least 8 of them), and a merge keeps too few.
# Regression inputs always stay (they are not counted against CAP); recorded seeds are
# replaced. The RPC-over-RDMA header seeds come from tests/fuzz/rdma_header_seeds.py and the
# other harnesses' seeds are made by hand: this script leaves them alone.
#
# Usage: bash scripts/refresh_fuzz_corpus.sh [CAP]   (after default- and fuzz-preset builds,
#        when the CPU is otherwise free)
set -euo pipefail
cd "$(dirname "$0")/.."
cap=${1:-32768}
recorder=build/default/tests/fuzz_corpus/test_fuzz_corpus_traffic
[[ -x $recorder ]] || { echo "refresh_fuzz_corpus: build first: cmake --build --preset default --target test_fuzz_corpus_traffic" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/recorded"
VNFS_FUZZ_SEED_DIR=$tmp/recorded "$recorder" >/dev/null
for dir in "$tmp"/recorded/*/; do
  name=$(basename "$dir")
  fuzzer=build/fuzz/tests/fuzz/fuzz_$name
  [[ -x $fuzzer ]] || { echo "refresh_fuzz_corpus: build first: cmake --preset fuzz && cmake --build --preset fuzz" >&2; exit 1; }
  dst=tests/fuzz/corpus/$name
  mkdir -p "$dst"
  merged=$tmp/merged-$name
  mkdir "$merged"
  find "$dst" -type f -name 'regression-*' -exec cp {} "$merged/" \;
  if [[ $name == server_requests ]]; then
    cp "$dir"/* "$merged/"
  elif ! "$fuzzer" -merge=1 "$merged" "$dir" > "$tmp/merge-$name.log" 2>&1; then
    tail -n 20 "$tmp/merge-$name.log" >&2
    echo "refresh_fuzz_corpus: $name: the merge failed" >&2
    exit 1
  fi
  find "$dst" -type f ! -name 'regression-*' -delete
  total=0 kept=0
  while read -r size f; do
    (( total + size <= cap )) || break
    cp "$merged/$f" "$dst/$f"
    total=$(( total + size )) kept=$(( kept + 1 ))
  done < <(find "$merged" -type f ! -name 'regression-*' -printf '%s %f\n' | sort -n)
  echo "refresh_fuzz_corpus: $name: $kept of $(ls "$dir" | wc -l) recorded inputs kept ($total bytes," \
       "$(find "$merged" -type f ! -name 'regression-*' | wc -l) after the merge)," \
       "$(find "$dst" -type f -name 'regression-*' | wc -l) regression inputs"
done
