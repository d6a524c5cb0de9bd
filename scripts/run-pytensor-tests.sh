#!/usr/bin/env bash
# Runs PyTensor 2.38.3's own test files with the default mode set to EMBER.
#   scripts/run-pytensor-tests.sh [test file ...]     (default: the files below)
# PyTensor's sdist does not ship tests/scalar or tests/tensor, so the tests come
# from the git tag rel-2.38.3 (PYTENSOR_GIT: a local clone/mirror to read it from;
# otherwise a shallow clone from GitHub). Everything goes to a temp dir
# (EMBER_PT_WORK to keep it); nothing is added to the repository.
# Needs: .venv-py311 (scripts/setup-python.sh py311) and ember._core (pip install . or
# EMBER_NATIVE_DIR=<build>/python/ember). Prints passed/failed/skipped per file
# and writes the per-test outcomes to $WORK/results/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv-py311/bin/python}"
TAG=rel-2.38.3
WORK="${EMBER_PT_WORK:-$(mktemp -d /tmp/ember-pytensor-tests.XXXXXX)}"
PER_FILE_TIMEOUT="${PER_FILE_TIMEOUT:-900}"
FILES=("$@")
if [ ${#FILES[@]} -eq 0 ]; then
  FILES=(tests/scalar/test_basic.py tests/tensor/test_elemwise.py tests/tensor/test_math.py
         tests/tensor/test_math_scipy.py tests/tensor/test_subtensor.py tests/tensor/test_basic.py
         tests/tensor/test_shape.py tests/tensor/test_special.py)
fi

"$PY" -c "import pytensor; assert pytensor.__version__.startswith('2.38.3'), pytensor.__version__"
if [ ! -d "$WORK/src/tests" ]; then
  mkdir -p "$WORK/src"
  if [ -n "${PYTENSOR_GIT:-}" ]; then
    git -C "$PYTENSOR_GIT" archive "$TAG" tests conftest.py | tar -x -C "$WORK/src"
  else
    git clone -q --depth 1 --branch "$TAG" https://github.com/pymc-devs/pytensor "$WORK/clone"
    (cd "$WORK/clone" && tar -c tests conftest.py) | tar -x -C "$WORK/src"
  fi
  # Make EMBER the default mode before any test module is imported (several
  # capture the mode at import time; PYTENSOR_FLAGS only takes built-in names).
  cat >> "$WORK/src/conftest.py" <<'PYEOF'


import os as _os

# PyTensor's pytest_sessionstart adds these flags, but too late once pytensor
# is imported here: add them first.
_os.environ["PYTENSOR_FLAGS"] = ",".join(
    f for f in (_os.environ.get("PYTENSOR_FLAGS", ""), "warn__ignore_bug_before=all,on_opt_error=raise,"
                "on_shape_error=raise,cmodule__warn_no_version=True") if f)

import pytensor as _pytensor
import ember as _ember

_pytensor.config.mode = _ember.EMBER
PYEOF
  printf '[pytest]\nxfail_strict = true\n' > "$WORK/src/pytest.ini"
fi

mkdir -p "$WORK/results"
cd "$WORK/src"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
# No C compiler for PyTensor: the reference modes the tests compare against run
# Python implementations instead of compiling C for every dtype (hours on 2
# cores); tests that need the C backend skip themselves.
export PYTENSOR_FLAGS="cxx=${PYTENSOR_FLAGS:+,$PYTENSOR_FLAGS}"
printf '%-36s %7s %7s %7s %7s %7s\n' file passed failed errors skipped xfail
for f in "${FILES[@]}"; do
  name="$(echo "$f" | tr '/' '_')"
  timeout "$PER_FILE_TIMEOUT" "$PY" -m pytest -q -p no:cacheprovider "$f" \
    --junitxml="$WORK/results/$name.xml" > "$WORK/results/$name.log" 2>&1 || true
  "$PY" - "$WORK/results/$name.xml" "$f" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
path, f = sys.argv[1], sys.argv[2]
try:
    s = ET.parse(path).getroot()
except Exception:
    # Timed out or crashed: count the progress characters pytest printed so far.
    import re
    log = open(path[:-4] + ".log", errors="replace").read()
    prog = "".join(m.group(1) for m in re.finditer(r"^([.FEsxX]+)(?:\s*\[\s*\d+%\])?\s*$", log, re.M))
    n = {c: prog.count(c) for c in ".FEsx"}
    print(f"{f:<36} {n['.']:>7} {n['F']:>7} {n['E']:>7} {n['s']:>7} {n['x']:>7}  (partial: stopped after "
          f"{len(prog)} tests)"); sys.exit()
s = s if s.tag == "testsuite" else s.find("testsuite")
tests, fail, err, skip = (int(s.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
xfail = sum(1 for c in s.iter("testcase") for k in c if k.tag == "skipped" and "xfail" in (k.get("type", "") + k.get("message", "")))
print(f"{f:<36} {tests - fail - err - skip:>7} {fail:>7} {err:>7} {skip - xfail:>7} {xfail:>7}")
PYEOF
done
"$PY" "$ROOT/scripts/classify-pytest-failures.py" "$WORK"/results/*.xml > "$WORK/results/causes.txt" || true
echo "details: $WORK/results (causes.txt groups failures by cause)"
