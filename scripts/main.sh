#!/usr/bin/env bash
# The main job: install what is needed, build, run the bundled example graph,
# then sample a PyMC model through nutpie on ember (python -m ember demo).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/setup-python.sh" primary
bash "$root/scripts/build.sh" jit
ember="$root/build/jit/ember"
graph="$root/tests/data/hierarchical_logp.json"
"$ember" info "$graph"
"$ember" run "$graph" --random-inputs 1 --repeat 1000 --timeline
EMBER_NATIVE_DIR="$root/build/jit/python/ember" PYTHONPATH="$root/python" \
  "$root/.venv/bin/python" -m ember demo "$@"
