"""The format of the math reference tables, tests/data/math/<function>.bin,
written by gen_math_reference.py and gen_math_reference_special.py and read
by tests/unit/math_table.hpp:

  8 bytes  magic b"EMBMATH1"
  uint32   arity (1 to 3), uint32 count            (little-endian)
  count records: arity float64 inputs, float64 ref, float32 err

ref is the exact result rounded to a double and err is (exact - ref) /
ulp(ref), exact as the generator computed it (|err| <= 0.5), so a computed
value's error in ulps is |(got - ref)/ulp(ref) - err|. err is 0 where ref is
non-finite or zero.
"""
import struct

import mpmath

MAGIC = b"EMBMATH1"


def ulp(v: float) -> mpmath.mpf:
    v = abs(v)
    if v < 2.2250738585072014e-308:
        return mpmath.mpf(2) ** -1074
    e = mpmath.floor(mpmath.log(mpmath.mpf(v), 2))
    # guard against log rounding at exact powers of two
    if mpmath.mpf(2) ** e > v:
        e -= 1
    if mpmath.mpf(2) ** (e + 1) <= v:
        e += 1
    return mpmath.mpf(2) ** (e - 52)


def write(path, arity, records):
    """records: (inputs, ref, err) with len(inputs) == arity."""
    body = b"".join(struct.pack("<%ddd f" % arity, *args, ref, err) for args, ref, err in records)
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<II", arity, len(records)) + body)
