"""The tables of interp/scalar_ops.def and interp/dtype.def, as the build
generated them (ember/_tables.py, python/src/gen_tables.cpp).

SCALAR_OPS  scalar op name -> (arity, kind), in the table's order
REDUCE_OPS  the scalar ops a CAReduce may carry
REDUCE_ONLY_OPS  those of them that are no scalar op row (the reduction implements them)
DTYPES      dtype name -> (item size, "float" | "int" | "bool"), in wire order
"""

from ._built import import_built

_t = import_built(
    "_tables",
    "ember's generated tables (_tables.py) are missing: run `pip install .` at the repository root, or "
    "set EMBER_NATIVE_DIR to <build>/python/ember of a CMake build with -DEMBER_BUILD_PYTHON=ON")

SCALAR_OPS = dict(_t.SCALAR_OPS)
REDUCE_OPS = tuple(_t.REDUCE_OPS)
REDUCE_ONLY_OPS = tuple(_t.REDUCE_ONLY_OPS)
DTYPES = dict(_t.DTYPES)
INT_DTYPES = frozenset(n for n, (_, kind) in DTYPES.items() if kind == "int")
ITEMSIZE = {n: size for n, (size, _) in DTYPES.items()}
