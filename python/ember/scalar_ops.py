"""Scalar op names Ember understands, and PyTensor class names that map to them.

SUPPORTED mirrors the second column of interp/scalar_ops.def (a test checks
that the two agree).
"""

SUPPORTED = frozenset("""
Identity Neg Abs Sign Add Mul Sub TrueDiv IntDiv Mod Pow Sqr Sqrt Reciprocal
Exp Exp2 Expm1 Log Log2 Log10 Log1p Sin Cos Tan ArcSin ArcCos ArcTan ArcTan2
Sinh Cosh Tanh ArcSinh ArcCosh ArcTanh Sigmoid Softplus Log1mexp Erf Erfc Erfcx
Erfinv Erfcinv Gamma GammaLn Psi TriGamma GammaInc GammaIncC I0 I1 I0e I1e J0 J1
BetaInc XlogX XlogY0 Floor Ceil Trunc RoundHalfToEven RoundHalfAwayFromZero
ScalarMaximum ScalarMinimum Clip Switch Second LT GT LE GE EQ NEQ AND OR XOR
Invert IsNan IsInf Cast
""".split())

# PyTensor class name -> Ember name, where they differ. PyTensor's instances
# are `scalar_maximum`/`scalar_minimum` but the classes are Maximum/Minimum.
RENAMED = {
    "Maximum": "ScalarMaximum",
    "Minimum": "ScalarMinimum",
}

# Scalar ops a CAReduce may carry (format: `CAReduce.scalar_op`).
REDUCE_OPS = frozenset({"Add", "Mul", "ScalarMaximum", "ScalarMinimum", "AND", "OR", "MulWithoutZeros"})
# Of those, the ones that are only reduction ops (not in interp/scalar_ops.def).
REDUCE_ONLY = frozenset({"MulWithoutZeros"})


def ember_name(scalar_op):
    """Ember's name for a PyTensor scalar op instance, or None if unsupported."""
    name = type(scalar_op).__name__
    name = RENAMED.get(name, name)
    return name if name in SUPPORTED else None
