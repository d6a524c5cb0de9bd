"""Engine options, shared by ember.Program, ember.Mode and ember.nutpie.

`jit` ("off" | "auto" | "eager"), `jit_memory` (bytes, or a string such as
"512M" / "1.5G"), `parallel_threshold` (elements). Unset options come from the
environment (EMBER_JIT, EMBER_JIT_MEMORY), which the engine also reads
itself. The JIT options configure the engine's process-wide compile service
(one budget for all Programs) when a Program is loaded;
`Program.options["jit_active"]` says whether the JIT is built in and on.

Modes and sizes are read by the engine's own parsers (interp/option_parse.hpp,
through ember._core) once the native module is loaded; before that (ember.Mode
at import, the exporter alone) by the fallback below, which
tests/python/test_options.py checks against them.
"""

import os
import re
import sys

import numpy as np

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# blanks, a decimal number, blanks, an optional unit (K, Ki, ...), an optional B, blanks
_SIZE = re.compile(r"[ \t]*((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
                   r"[ \t]*(?:([KMGTkmgt])[iI]?)?[bB]?[ \t]*")


def _native():
    # Never imported from here: the exporter and ember.Mode work without it.
    core = sys.modules.get(f"{__package__}._core")
    return core if core is not None and hasattr(core, "parse_size") else None


def _fallback_size(text, what):
    m = _SIZE.fullmatch(text)
    if m:
        n = float(m[1]) * _UNITS[(m[2] or "").upper()]
        if n < 2.0**64:
            return int(n)
    raise ValueError(f"{what}: '{text}' is not a size such as 4096, 256M or 1.5G")


def _fallback_jit_mode(text, what):
    t = text.lower() if text.isascii() else text
    if t == "off" or text == "0":
        return "off"
    if t in ("auto", "eager"):
        return t
    raise ValueError(f"{what}: '{text}' is not off, auto or eager")


def parse_size(text, what="jit_memory"):
    """Bytes from a string like "4096", "512M", "1.5G" (K, M, G, T: powers of 1024)."""
    core = _native()
    return core.parse_size(text, what) if core else _fallback_size(text, what)


def parse_jit_mode(text, what="jit"):
    """"off", "auto" or "eager" from any case of those ("0" is off)."""
    core = _native()
    return core.parse_jit_mode(text, what) if core else _fallback_jit_mode(text, what)


def parse_memory(value, what="jit_memory"):
    """Bytes from an int or a string like "512M", "2G", "1.5G"."""
    if value is None or isinstance(value, (int, np.integer)):
        return None if value is None else int(value)
    return parse_size(str(value), what)


def resolve_options(jit=None, jit_memory=None, parallel_threshold=None):
    """The option dict for the engine; unset values come from EMBER_JIT / EMBER_JIT_MEMORY."""
    opts = {}
    if jit is not None:
        opts["jit"] = parse_jit_mode(str(jit), "jit")
    elif os.environ.get("EMBER_JIT") is not None:
        opts["jit"] = parse_jit_mode(os.environ["EMBER_JIT"], "EMBER_JIT")
    if jit_memory is not None:
        opts["jit_memory"] = parse_memory(jit_memory, "jit_memory")
    elif os.environ.get("EMBER_JIT_MEMORY") is not None:
        opts["jit_memory"] = parse_memory(os.environ["EMBER_JIT_MEMORY"], "EMBER_JIT_MEMORY")
    if parallel_threshold is not None:
        opts["parallel_threshold"] = int(parallel_threshold)
    return opts
