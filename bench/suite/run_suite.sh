#!/bin/sh
# Runs the suite and regenerates its report. Native pieces: EMBER_NATIVE_DIR (ember._core)
# and EMBER_NODE_PROFILE (bench/node_profile), default build/jit.
set -e
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export EMBER_NATIVE_DIR="${EMBER_NATIVE_DIR:-$PWD/build/jit/python/ember}"
.venv/bin/python bench/suite/run.py "$@"
.venv/bin/python bench/suite/report.py
