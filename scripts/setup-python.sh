#!/usr/bin/env bash
# Creates <repo>/.venv with the pinned Python environment (python/requirements.txt).
# Idempotent: when the venv already satisfies the pins it returns in about a second.
#   scripts/setup-python.sh          main environment (.venv: PyTensor 2.38, PyMC, nutpie)
#   scripts/setup-python.sh --pt3    also .venv-pt3 (PyTensor 3.0.x only) for exporter tests
# PYTHON selects the interpreter (default python3).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"

setup_venv() {  # setup_venv <dir> <requirements file>
  local venv="$1" req="$2" stamp
  stamp="$venv/.ember-requirements"
  if [ ! -x "$venv/bin/python" ]; then
    "$PYTHON" -m venv "$venv"
  fi
  # Keep the venv out of git even where .gitignore does not name it.
  [ -f "$venv/.gitignore" ] || echo '*' > "$venv/.gitignore"
  # Fast path: the same requirements file was installed before.
  if [ -f "$stamp" ] && cmp -s "$req" "$stamp"; then
    return 0
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
  cp "$req" "$stamp"
}

setup_venv "$ROOT/.venv" "$ROOT/python/requirements.txt"
if [ "${1:-}" = "--pt3" ]; then
  setup_venv "$ROOT/.venv-pt3" "$ROOT/python/requirements-pytensor3.txt"
fi
