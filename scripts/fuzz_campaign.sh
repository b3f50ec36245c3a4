#!/usr/bin/env bash
# One longer fuzz campaign: runs harness NAME (built by the fuzz preset) for at most SECONDS
# (and at most RUNS executions) from its seed corpus, into build/fuzz/campaigns/NAME.log with
# the command on its first line; what it discovers goes to build/fuzz/campaigns/corpus-NAME
# and crashes to build/fuzz/campaigns/crash-NAME-*. The run's record (its command, time and
# libFuzzer's final stats, and any crash summary) goes to tests/fuzz/campaigns/NAME.log, which
# is committed: campaigns take hours, longer than a machine may keep build/, and
# scripts/reliability_table.py reports them from there.
# Run it when the CPU is otherwise free, or at idle priority (chrt -i 0 nice -n 19 bash ...).
# Stopped early with SIGINT, libFuzzer still prints its final stats: the run counts as far
# as it went.
# With --continue, the campaign goes on where its last run stopped (libFuzzer starts again
# from the corpus the earlier runs left here, or from the seeds on a new machine): the last
# run's record is kept as NAME.part-K.log, and the reliability table reports every run and
# their total. Without it, a new campaign starts and the records of earlier runs are removed.
#
# Usage: bash scripts/fuzz_campaign.sh [--continue] NAME SECONDS [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
resume=0
if [[ ${1:-} == --continue ]]; then resume=1; shift; fi
name=$1 seconds=$2 runs=${3:-10000000}
bin=build/fuzz/tests/fuzz/fuzz_$name
[[ -x $bin ]] || { echo "fuzz_campaign: build first: cmake --preset fuzz && cmake --build --preset fuzz" >&2; exit 1; }
out=build/fuzz/campaigns
record=tests/fuzz/campaigns
mkdir -p "$out/corpus-$name" "$record"
if (( resume )); then
  [[ -f $record/$name.log ]] || { echo "fuzz_campaign: no earlier run of $name to continue ($record/$name.log)" >&2; exit 1; }
  k=1
  while [[ -e $record/$name.part-$k.log ]]; do k=$((k + 1)); done
  mv "$record/$name.log" "$record/$name.part-$k.log"
else
  rm -f "$record/$name".part-*.log
fi
cmd=("$bin" -max_total_time="$seconds" -runs="$runs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
     -artifact_prefix="$out/crash-$name-" "$out/corpus-$name" "tests/fuzz/corpus/$name")
{
  echo "# command: ${cmd[*]}"
  echo "# seconds: $seconds"
} > "$out/$name.log"
start=$(date +%s)
status=0
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "${cmd[@]}" >> "$out/$name.log" 2>&1 || status=$?
# The time it really ran (less than SECONDS when it reached RUNS first).
sed -i "2s/.*/# seconds: $(( $(date +%s) - start ))/" "$out/$name.log"
{
  head -n 2 "$out/$name.log"
  grep -E '^stat::|^SUMMARY: |ERROR: libFuzzer|libFuzzer: run interrupted' "$out/$name.log" || true
} > "$record/$name.log"
cat "$record/$name.log"
exit $status
