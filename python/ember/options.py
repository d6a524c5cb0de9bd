"""Engine options, shared by ember.Program, ember.Mode and ember.nutpie.

`jit` ("off" | "auto" | "eager"), `jit_memory` (bytes, or a string such as
"512M" / "2G"), `parallel_threshold` (elements). Unset options come from the
environment (EMBER_JIT, EMBER_JIT_MEMORY). The JIT options are accepted and
recorded now; the engine applies them once it exposes the JIT
(`Program.options["jit_active"]` says whether it did).
"""

import os

import numpy as np

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_memory(value):
    """Bytes from an int or a string like "512M", "2G", "1.5G"."""
    if value is None or isinstance(value, (int, np.integer)):
        return None if value is None else int(value)
    s = str(value).strip().upper().removesuffix("B").removesuffix("I")
    unit = s[-1] if s and s[-1] in _UNITS else ""
    try:
        n = float(s[: len(s) - len(unit)])
    except ValueError:
        raise ValueError(f"jit_memory: cannot read {value!r} (use bytes or e.g. '512M', '2G')") from None
    if n < 0:
        raise ValueError(f"jit_memory must be >= 0, got {value!r}")
    return int(n * _UNITS[unit])


def resolve_options(jit=None, jit_memory=None, parallel_threshold=None):
    """The option dict for the engine; unset values come from EMBER_JIT / EMBER_JIT_MEMORY."""
    opts = {}
    jit = jit if jit is not None else os.environ.get("EMBER_JIT")
    if jit is not None:
        jit = str(jit).lower()
        if jit not in ("off", "auto", "eager"):
            raise ValueError(f"jit must be 'off', 'auto' or 'eager', not {jit!r}")
        opts["jit"] = jit
    mem = jit_memory if jit_memory is not None else os.environ.get("EMBER_JIT_MEMORY")
    if mem is not None:
        opts["jit_memory"] = parse_memory(mem)
    if parallel_threshold is not None:
        opts["parallel_threshold"] = int(parallel_threshold)
    return opts
