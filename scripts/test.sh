#!/usr/bin/env bash
# The project's one test command: installs the dependencies, then for each CMake preset
# (default: "default", then "asan" = AddressSanitizer + UndefinedBehaviorSanitizer, then
# "fuzz" = every libFuzzer harness of tests/fuzz for a bounded time under clang's ASan and
# UBSan) configures, builds and runs every test with CTest. Exits non-zero on the first
# failure.
#
#   bash scripts/test.sh            # both presets, as CI does
#   bash scripts/test.sh default    # only the named presets
#
# Build parallelism stays at 2: the project's machines have 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

presets=("$@")
[[ ${#presets[@]} -gt 0 ]] || presets=(default asan fuzz)

step() { printf '\n=== test.sh: %s\n' "$*"; }

step "installing dependencies"
bash scripts/install-deps.sh

for preset in "${presets[@]}"; do
  step "[$preset] configure"
  cmake --preset "$preset"
  step "[$preset] build"
  cmake --build --preset "$preset" -j2
  step "[$preset] test"
  ctest --preset "$preset" --no-tests=error
  # CI's machines may have little free disk (one run ran out building its second preset):
  # there, a preset's build tree goes as soon as its tests passed.
  if [[ ${CI:-} == true ]]; then
    step "[$preset] removing build/$preset (CI)"
    rm -rf "build/$preset"
  fi
done

step "all tests passed (presets: ${presets[*]})"
