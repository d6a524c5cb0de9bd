#!/usr/bin/env bash
# Creates the two pinned Python environments Ember is tested on:
#   .venv        primary: the newest Python >= 3.12 found; PyMC 6 / PyTensor 3.3
#                (python/requirements-pymc6.txt)
#   .venv-py311  compatibility: Python 3.11; PyMC 5.28 / PyTensor 2.38
#                (python/requirements-pymc5.txt)
# Usage: scripts/setup-python.sh [all|primary|py311]   (default all)
# Idempotent: a venv that already has its interpreter and pins returns in about a second.
# Interpreters: PYTHON (primary) and PYTHON311 override; otherwise python3 when it
# fits, else the newest fitting one on PATH, in /usr/bin, /usr/local/bin or pyenv.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
which="${1:-all}"

py_version() {  # "major minor patch" of an interpreter, or nothing when it does not run
  "$1" -c 'import sys; print(*sys.version_info[:3])' 2>/dev/null || true
}

py_real() {  # the interpreter itself, not a shim that may resolve differently later
  "$1" -c 'import sys; print(sys.executable)'
}

candidates() {
  local m d v p
  for m in 15 14 13 12 11; do
    command -v "python3.$m" 2>/dev/null || true
    for d in /usr/local/bin /usr/bin; do [ -x "$d/python3.$m" ] && echo "$d/python3.$m"; done
  done
  # pyenv's shims refuse versions that are not selected; ask pyenv for the real paths.
  if command -v pyenv >/dev/null 2>&1; then
    for v in $(pyenv versions --bare 2>/dev/null); do
      p="$(pyenv prefix "$v" 2>/dev/null)/bin/python3" || continue
      [ -x "$p" ] && echo "$p"
    done
  fi
  return 0
}

fits() {  # fits <minor-min> <minor-max> <major> <minor>
  [ "$3" = 3 ] && [ "$4" -ge "$1" ] && [ "$4" -le "$2" ]
}

find_python() {  # find_python <label> <override> <minor-min> <minor-max>: prints the interpreter
  local label="$1" override="$2" lo="$3" hi="$4" v best="" best_key=-1 key c
  local want="3.$lo"; [ "$hi" -gt "$lo" ] && want=">= 3.$lo"
  if [ -n "$override" ]; then
    read -r -a v <<<"$(py_version "$override")"
    if [ ${#v[@]} -eq 3 ] && fits "$lo" "$hi" "${v[@]:0:2}"; then py_real "$override"; return 0; fi
    [ ${#v[@]} -eq 3 ] && v="Python ${v[0]}.${v[1]}.${v[2]}" || v="not a working Python"
    echo "setup-python: $5=$override is $v; the $label stack needs Python $want" >&2
    return 1
  fi
  read -r -a v <<<"$(py_version python3)"
  if [ ${#v[@]} -eq 3 ] && fits "$lo" "$hi" "${v[@]:0:2}"; then py_real python3; return 0; fi
  while read -r c; do
    [ -n "$c" ] || continue
    read -r -a v <<<"$(py_version "$c")"
    [ ${#v[@]} -eq 3 ] && fits "$lo" "$hi" "${v[@]:0:2}" || continue
    key=$(( v[1] * 10000 + v[2] ))
    if [ "$key" -gt "$best_key" ]; then best="$c"; best_key="$key"; fi
  done < <(candidates)
  if [ -z "$best" ]; then
    echo "setup-python: no Python $want found (python3, python3.X on PATH, /usr/bin, /usr/local/bin, pyenv)." >&2
    echo "  Install one, or point the variable $5 at its interpreter." >&2
    return 1
  fi
  py_real "$best"
}

setup_venv() {  # setup_venv <dir> <interpreter> <requirements file> [file installed with --no-deps]
  local venv="$1" python="$2" req="$3" nodeps="${4:-}" stamp want have
  stamp="$venv/.ember-requirements"
  want="$(printf 'python %s\n' "$(py_version "$python")"; cat "$req" ${nodeps:+"$nodeps"})"
  # A venv of another Python (e.g. an older .venv) is rebuilt, not patched.
  if [ -x "$venv/bin/python" ]; then
    have="$(py_version "$venv/bin/python")"
    if [ "$have" != "$(py_version "$python")" ]; then
      echo "setup-python: $venv has Python ${have:-?}, recreating it with $python" >&2
      rm -rf "$venv"
    fi
  fi
  if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
  fi
  # Keep the venv out of git even where .gitignore does not name it.
  [ -f "$venv/.gitignore" ] || echo '*' > "$venv/.gitignore"
  # Fast path: the same interpreter and requirements were installed before.
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
  if [ -n "$nodeps" ]; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$nodeps"
  fi
  printf '%s\n' "$want" > "$stamp"
}

case "$which" in all|primary|py311) ;; *) echo "usage: $0 [all|primary|py311]" >&2; exit 2 ;; esac
if [ "$which" != py311 ]; then
  py="$(find_python primary "${PYTHON:-}" 12 99 PYTHON)"
  setup_venv "$ROOT/.venv" "$py" "$ROOT/python/requirements-pymc6.txt" "$ROOT/python/requirements-pymc6-nodeps.txt"
fi
if [ "$which" != primary ]; then
  py="$(find_python compatibility "${PYTHON311:-}" 11 11 PYTHON311)"
  setup_venv "$ROOT/.venv-py311" "$py" "$ROOT/python/requirements-pymc5.txt"
fi
