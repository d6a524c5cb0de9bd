#!/usr/bin/env bash
# Runs PyTensor's own test files in mode NUMBA and in mode EMBER, and compares them.
#   scripts/run-pytensor-tests.sh [test file or folder ...]     (default: the list below)
# PYTHON      interpreter whose PyTensor is tested (default .venv: PyTensor 3.3;
#             .venv-py311: PyTensor 2.38). It needs ember._core: pip install . or
#             EMBER_NATIVE_DIR=<build>/python/ember.
# MODES       modes to run (default "NUMBA EMBER"); JOBS runs that many files at once.
# PYTENSOR_GIT  a local clone to take the tests from (else a shallow clone from GitHub);
#             PYTENSOR_TAG overrides the tag, by default rel-<installed version>, or in
#             a local clone the newest rel-X.Y.* tag not newer than it.
# PyTensor's sdist ships no tests, so they come from git into a temp dir
# (EMBER_PT_WORK to keep or reuse it); nothing is added to the repository.
# Writes $WORK/results/<MODE>/*.xml and prints the comparison
# (scripts/compare-pytensor-tests.py) with failures grouped by cause.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
MODES="${MODES:-NUMBA EMBER}"
JOBS="${JOBS:-1}"
WORK="${EMBER_PT_WORK:-$(mktemp -d /tmp/ember-pytensor-tests.XXXXXX)}"
PER_FILE_TIMEOUT="${PER_FILE_TIMEOUT:-1800}"
FILES=("$@")
if [ ${#FILES[@]} -eq 0 ]; then
  FILES=(tests/scalar/test_basic.py tests/scalar/test_loop.py tests/tensor/test_elemwise.py
         tests/tensor/test_math.py tests/tensor/test_math_scipy.py tests/tensor/test_subtensor.py
         tests/tensor/test_basic.py tests/tensor/test_shape.py tests/tensor/test_special.py
         tests/scan/test_basic.py tests/tensor/test_extra_ops.py tests/tensor/linalg
         tests/tensor/test_sort.py tests/test_ifelse.py)
fi

VERSION="$("$PY" -c "import pytensor; print(pytensor.__version__.split('+')[0])")"
if [ -z "${PYTENSOR_TAG:-}" ]; then
  PYTENSOR_TAG="rel-$VERSION"
  if [ -n "${PYTENSOR_GIT:-}" ] && ! git -C "$PYTENSOR_GIT" rev-parse -q --verify "$PYTENSOR_TAG" >/dev/null; then
    # the newest tag of the same minor release before it ("~" sorts first in sort -V)
    PYTENSOR_TAG="$( (git -C "$PYTENSOR_GIT" tag -l "rel-${VERSION%.*}.*"; echo "rel-$VERSION~") |
      sort -V | sed -n "/^rel-$VERSION~\$/q;p" | tail -1)"
  fi
fi
[ -n "$PYTENSOR_TAG" ] || { echo "no PyTensor tag for $VERSION in $PYTENSOR_GIT" >&2; exit 1; }
echo "PyTensor $VERSION, tests from $PYTENSOR_TAG, modes: $MODES, work dir $WORK"

if [ ! -d "$WORK/src/tests" ]; then
  mkdir -p "$WORK/src"
  if [ -n "${PYTENSOR_GIT:-}" ]; then
    git -C "$PYTENSOR_GIT" archive "$PYTENSOR_TAG" tests conftest.py | tar -x -C "$WORK/src"
  else
    git clone -q --depth 1 --branch "$PYTENSOR_TAG" https://github.com/pymc-devs/pytensor "$WORK/clone"
    (cd "$WORK/clone" && tar -c tests conftest.py) | tar -x -C "$WORK/src"
  fi
  # Set the default mode before any test module is imported (several capture
  # it at import time; PYTENSOR_FLAGS only takes built-in names).
  cat >> "$WORK/src/conftest.py" <<'PYEOF'


import os as _os

# PyTensor's pytest_sessionstart adds these flags, but too late once pytensor
# is imported here: add them first.
_os.environ["PYTENSOR_FLAGS"] = ",".join(
    f for f in (_os.environ.get("PYTENSOR_FLAGS", ""), "warn__ignore_bug_before=all,on_opt_error=raise,"
                "on_shape_error=raise,cmodule__warn_no_version=True") if f)

import pytensor as _pytensor

if _os.environ["PT_TEST_MODE"] == "EMBER":
    import warnings as _warnings

    import pytest as _pytest

    import ember as _ember

    _pytensor.config.mode = _ember.EMBER

    @_pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(item):
        # Files that turn warnings into errors exempt numba's object-mode
        # fallback warning; Ember's fallback warning is its counterpart.
        with _warnings.catch_warnings():
            _warnings.filterwarnings("ignore", category=_ember.FallbackWarning)
            yield
else:
    _pytensor.config.mode = _os.environ["PT_TEST_MODE"]
PYEOF
  printf '[pytest]\nxfail_strict = true\n' > "$WORK/src/pytest.ini"
fi

export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
# No C compiler for PyTensor: the reference modes the tests compare against run
# Python implementations instead of compiling C for every dtype (hours on 2
# cores); tests that need the C backend skip themselves. Both modes see the same.
export PYTENSOR_FLAGS="cxx=${PYTENSOR_FLAGS:+,$PYTENSOR_FLAGS}"
export PY WORK PER_FILE_TIMEOUT
run_one() {  # run_one MODE FILE
  local name; name="$(echo "${2%/}" | tr '/' '_')"
  mkdir -p "$WORK/results/$1"
  ( cd "$WORK/src" && PT_TEST_MODE="$1" timeout "$PER_FILE_TIMEOUT" "$PY" -m pytest -q -p no:cacheprovider \
      "$2" --junitxml="$WORK/results/$1/$name.xml" > "$WORK/results/$1/$name.log" 2>&1 ) || true
  echo "done: $1 $2"
}
export -f run_one
for f in "${FILES[@]}"; do for m in $MODES; do printf '%s %s\n' "$m" "$f"; done; done |
  xargs -P "$JOBS" -L 1 bash -c 'run_one "$0" "$1"'
"$PY" "$ROOT/scripts/compare-pytensor-tests.py" "$WORK/results" "${FILES[@]}"
echo "details: $WORK/results/<MODE>/ (logs, JUnit XML)"
