#!/usr/bin/env bash
# Creates .venv-jax: the primary stack's pins (python/requirements-pymc6.txt, and -nodeps.txt as scripts/setup-python.sh installs it) plus JAX from PyPI, for the
# nutpie-JAX baseline of bench/driver/startup.py and bench/suite/run.py. Kept apart from .venv so JAX never changes what the tests see.
# Usage: bench/driver/setup-jax.sh   (idempotent; PYTHON overrides the interpreter, default .venv's)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$ROOT/.venv-jax"
PY="${PYTHON:-$("$ROOT/.venv/bin/python" -c 'import sys; print(sys._base_executable)')}"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
[ -f "$VENV/.gitignore" ] || echo '*' > "$VENV/.gitignore"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$ROOT/python/requirements-pymc6.txt" jax
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$ROOT/python/requirements-pymc6-nodeps.txt"
"$VENV/bin/python" -c 'import jax, pymc, nutpie; print("jax", jax.__version__, "pymc", pymc.__version__, "nutpie", nutpie.__version__)'
