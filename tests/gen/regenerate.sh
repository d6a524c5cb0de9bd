#!/usr/bin/env bash
# Regenerates the fixtures in tests/data: tests/gen/regenerate.sh [set ...]
# (default: every set, in the order below). Afterwards `git status tests/data`
# lists what changed; a changed fixture needs a reason before it is committed.
#
#   set             generator                      needs                     time (2 cores)
#   hierarchical    gen_hierarchical.py            NumPy                     seconds
#   ops_index       gen_fixtures_ops_index.py      NumPy                     seconds
#   ops_reduce      gen_fixtures_ops_reduce.py     NumPy, SciPy              seconds
#   math            gen_math_reference.py          mpmath                    seconds
#   math_special    gen_math_reference_special.py  mpmath                    about a minute
#   scalar_loop     gen_fixtures_scalar_loop.py    PyTensor 2.38, mpmath     under a minute
#   models          export_models.py               PyMC 5, nutpie (numba)    about 15 minutes
#   models_unfused  export_models_unfused.py       PyMC 6, nutpie            under a minute
#
# Interpreters: the fixtures were made with the pinned stacks of
# scripts/setup-python.sh, so each set runs with the one that reproduces it:
# .venv-py311 (PyTensor 2.38; its SciPy also gives ops_reduce's float32 LAPACK
# results bit for bit), except models_unfused, made with .venv. The graph
# exporters (scalar_loop and the models) read the op tables a build generates:
# EMBER_NATIVE_DIR, by default build/py311/python/ember (scripts/build.sh py311,
# or `ninja -C build/py311 ember_py_tables` for the tables alone).
#
# Not bit for bit today: models_unfused's four seed_* graphs, whose observed
# data differ in the last bits from the checked-in ones (which differ that way
# from tests/data/models' graphs too). Every other fixture comes out the same.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
gen="$root/tests/gen"
py311="$root/.venv-py311/bin/python"
py="$root/.venv/bin/python"
native="${EMBER_NATIVE_DIR:-$root/build/py311/python/ember}"
all=(hierarchical ops_index ops_reduce math math_special scalar_loop models models_unfused)

fail() { echo "regenerate.sh: $*" >&2; exit 1; }
need() { [ -x "$1" ] || fail "no $1 (scripts/setup-python.sh)"; }
need_tables() { [ -f "$native/_tables.py" ] || fail "no $native/_tables.py (scripts/build.sh py311, or set EMBER_NATIVE_DIR)"; }
# The checked-in graphs of a set: an exporter's default is every model, and not
# every model has an unfused graph (docs/passes.md).
graphs() { for f in "$root/tests/data/$1"/*.embg; do basename "$f" .embg; done; }

for set in "${@:-${all[@]}}"; do
  echo "== $set"
  case "$set" in
    hierarchical) need "$py311"; "$py311" "$gen/gen_hierarchical.py" ;;
    ops_index) need "$py311"; "$py311" "$gen/gen_fixtures_ops_index.py" ;;
    ops_reduce) need "$py311"; "$py311" "$gen/gen_fixtures_ops_reduce.py" ;;
    math) need "$py311"; "$py311" "$gen/gen_math_reference.py" ;;
    math_special) need "$py311"; "$py311" "$gen/gen_math_reference_special.py" ;;
    scalar_loop)
      need "$py311"; need_tables
      EMBER_NATIVE_DIR="$native" PYTHONPATH="$root/python" "$py311" "$gen/gen_fixtures_scalar_loop.py" ;;
    models)
      need "$py311"; need_tables
      EMBER_NATIVE_DIR="$native" "$py311" "$gen/export_models.py" $(graphs models) ;;
    models_unfused)
      need "$py"; need_tables
      EMBER_NATIVE_DIR="$native" "$py" "$gen/export_models_unfused.py" $(graphs models_unfused) ;;
    *) fail "unknown set '$set' (sets: ${all[*]})" ;;
  esac
done
