#!/usr/bin/env bash
# The README's demo command: installs the dependencies it needs (install-deps.sh --demo:
# not the test peers, fuzzing or benchmark tools), builds the one program the demo
# runs (target vnfs-demo of the `default` preset, not the tests and benchmarks) and runs it (build/default/tools/vnfs-demo), which serves a scratch export with
# the embedded vnfsd, walks through real NFSv4.1 COMPOUNDs against it over TCP, then does the
# same through the client API and shows the vectorized calls against the scalar ones.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== demo.sh: %s\n' "$*"; }

step "installing dependencies"
bash scripts/install-deps.sh --demo
step "configure and build vnfs-demo (preset default)"
cmake --preset default
cmake --build --preset default -j2 --target vnfs-demo

step "running build/default/tools/vnfs-demo"
exec build/default/tools/vnfs-demo
