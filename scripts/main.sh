#!/usr/bin/env bash
# The main job: install what is needed, build, run the bundled example.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh" jit
ember="$root/build/jit/ember"
graph="$root/tests/data/hierarchical_logp.json"
"$ember" info "$graph"
"$ember" run "$graph" --random-inputs 1 --repeat 1000
