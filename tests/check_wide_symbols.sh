#!/bin/sh
# The AVX-512 copy of the math library must define no inline (weak) code
# outside namespace ember_wide: the linker keeps one copy of each weak
# symbol, and an AVX-512 one would then run on CPUs without AVX-512. Code
# of xsimd's AVX-512 types (unoptimized builds) exists in this copy only.
# Usage: check_wide_symbols.sh OBJECT...
[ $# -gt 0 ] || { echo "no objects given"; exit 1; }
syms=$(nm -C --defined-only "$@") || { echo "nm failed"; exit 1; }
bad=$(printf '%s\n' "$syms" | awk '$2 ~ /^[WVuw]$/' | grep -v 'ember_wide::' | grep -v 'avx512' | grep -v 'DW.ref.__gxx_personality_v0')
if [ -n "$bad" ]; then
  echo "weak symbols outside ember_wide in the wide math copy:"
  echo "$bad"
  exit 1
fi
echo "wide math copy: no shared inline code ($# objects)"
