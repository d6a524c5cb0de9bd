"""Scalar op names Ember understands, and PyTensor class names that map to them.

SUPPORTED and REDUCE_OPS come from interp/scalar_ops.def (ember.tables).
"""

from . import tables

SUPPORTED = frozenset(tables.SCALAR_OPS)

# PyTensor class name -> Ember name, where they differ. PyTensor's instances
# are `scalar_maximum`/`scalar_minimum` but the classes are Maximum/Minimum.
RENAMED = {
    "Maximum": "ScalarMaximum",
    "Minimum": "ScalarMinimum",
}

# Scalar ops a CAReduce may carry (format: `CAReduce.scalar_op`).
REDUCE_OPS = frozenset(tables.REDUCE_OPS)
# Of those, the ones that are only reduction ops (not in interp/scalar_ops.def).
REDUCE_ONLY = frozenset(tables.REDUCE_ONLY_OPS)


def ember_name(scalar_op):
    """Ember's name for a PyTensor scalar op instance, or None if unsupported."""
    name = type(scalar_op).__name__
    name = RENAMED.get(name, name)
    return name if name in SUPPORTED else None
