#!/usr/bin/env bash
# The README's demo command: installs the dependencies, builds the `default` preset and
# runs the demo program (build/default/tools/vnfs-demo), which serves a scratch export with
# the embedded vnfsd and uses it through the SDK. Arguments are passed on to vnfs-demo.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== demo.sh: %s\n' "$*"; }

step "installing dependencies"
bash scripts/install-deps.sh
step "configure and build (preset default)"
cmake --preset default
cmake --build --preset default -j2

demo=build/default/tools/vnfs-demo
if [[ ! -x "$demo" ]]; then
  echo "demo.sh: vnfs-demo not built ($demo is missing): the demo program does not exist yet" >&2
  exit 1
fi
step "running $demo $*"
exec "$demo" "$@"
