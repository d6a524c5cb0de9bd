"""Which PyTensor ops run natively on Ember and which through the Python
fallback, for every op type PyTensor's numba backend dispatches.

    python -m ember.coverage [--out docs/coverage.md]

The op list is `numba_funcify.registry` after importing
`pytensor.link.numba.dispatch` (numba's coverage is the target); the
scalar ops are every concrete ScalarOp class in pytensor.scalar. A status
comes from the exporter's own tables (ember/export.py, ember/scalar_ops.py);
the covering tests from `@pytest.mark.covers(...)` marks in tests/python.
"""

import argparse
import ast
import os
import sys

# Registered types that never reach a PyMC logp/gradient/expand graph on Ember's mode.
_NOT_IN_LOGP = {
    "object": "numba's generic object-mode fallback, not an op",
    "ScalarOp": "generic entry for scalar ops (listed in the scalar table)",
    "AbstractFunctionGraph": "inner-graph container, not an op",
    "FusedElemwise": "made by numba-only fusion rewrites",
    "ScalarCAReduce": "made by numba-only scalarize rewrites",
    "ScalarSubtensor": "made by numba-only scalarize rewrites",
    "ScalarizedElemwise": "made by numba-only scalarize rewrites",
    "ScalarizedJoin": "made by numba-only scalarize rewrites",
    "BlockwiseWithCoreShape": "made by numba-only rewrites",
    "RandomVariable": "random sampling: not in logp graphs (PyMC replaces RVs by value variables)",
    "RandomVariableWithCoreShape": "random sampling, numba-only form",
}
_EXCLUDED_MODULES = {
    "pytensor.sparse": "sparse matrices (PyMC logp graphs are dense)",
    "pytensor.typed_list": "typed lists (not produced by PyMC)",
}


def _repo_tests_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    d = os.path.join(os.path.dirname(os.path.dirname(here)), "tests", "python")
    return d if os.path.isdir(d) else None


def covering_tests(tests_dir=None):
    """op name -> ["file::test", ...] from @pytest.mark.covers("Op", ...) marks."""
    tests_dir = tests_dir or _repo_tests_dir()
    out = {}
    if not tests_dir:
        return out
    for fname in sorted(os.listdir(tests_dir)):
        if not (fname.startswith("test_") and fname.endswith(".py")):
            continue
        tree = ast.parse(open(os.path.join(tests_dir, fname)).read())
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            for dec in node.decorator_list:
                if (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)
                        and dec.func.attr == "covers"):
                    for a in dec.args:
                        if isinstance(a, ast.Constant) and isinstance(a.value, str):
                            out.setdefault(a.value, []).append(f"{fname}::{node.name}")
    return out


def _mro_names(cls):
    return [c.__name__ for c in cls.__mro__]


def tensor_op_status(cls):
    """(status, note) for a tensor op class: native, inlined, partly native, or fallback."""
    from .export import _CORE_ATTRS, HANDLERS
    from .scalar_ops import REDUCE_OPS

    names = _mro_names(cls)
    name = cls.__name__
    if name == "Blockwise":
        return "native / fallback", ("native for core ops " + ", ".join(sorted(_CORE_ATTRS))
                                     + ", AdvancedSubtensor(1) of one int vector; others fallback")
    if name == "Elemwise":
        return "native / fallback", "native when every scalar op is (table below)"
    if name == "CAReduce":
        return "native / fallback", "native for " + ", ".join(sorted(REDUCE_OPS)) + "; others fallback"
    if name == "Scan":
        return "native / fallback", ("inner function as a nested graph, run as a sub-program; fallback "
                                     "(Scan.perform) when an inner op has no native kernel")
    if any(n in HANDLERS for n in names):
        return "native", ""
    if "OpFromGraph" in names:
        return "native (inlined)", "inner graph exported in its place; inner ops as listed here"
    if "LazyIfElse" in names:
        return "native (inlined)", "both branches' inner graphs exported, then a lazy IfElse"
    subs = sorted({c.__name__ for c in _all_subclasses(cls) if any(n in HANDLERS for n in _mro_names(c))})
    if subs:
        return "native / fallback", "native: " + ", ".join(subs) + "; other subclasses fallback"
    return "fallback", "op.perform through a PythonCallback node"


def scalar_op_status(cls):
    from .scalar_ops import RENAMED, SUPPORTED

    name = RENAMED.get(cls.__name__, cls.__name__)
    if any(n in ("Composite", "ScalarLoop") for n in _mro_names(cls)):
        return "native", "exported as a Composite / ScalarLoop body"
    return ("native", "") if name in SUPPORTED else ("fallback", "the Elemwise holding it runs through the fallback")


def numba_op_types():
    import pytensor.link.numba.dispatch  # noqa: F401  (registers every dispatcher)
    from pytensor.link.numba.dispatch.basic import numba_funcify

    return list(numba_funcify.registry.keys())


def _all_subclasses(cls):
    out, stack = [], [cls]
    while stack:
        for s in stack.pop().__subclasses__():
            out.append(s)
            stack.append(s)
    return out


def scalar_op_types():
    import pytensor.scalar.basic as sb
    import pytensor.scalar.loop  # noqa: F401
    import pytensor.scalar.math  # noqa: F401

    seen, out = set(), []
    stack = [sb.ScalarOp]
    while stack:
        c = stack.pop()
        for s in c.__subclasses__():
            if s in seen:
                continue
            seen.add(s)
            stack.append(s)
            mod = s.__module__
            base = s.__subclasses__() and scalar_op_status(s)[0] != "native"  # a base class
            if mod.startswith("pytensor.scalar") and not base and not s.__name__.startswith("_"):
                out.append(s)
    return out


def rows():
    """(tensor rows, excluded rows, scalar rows): dicts with name, module, status, note, tests."""
    from pytensor.scalar.basic import ScalarOp

    tests = covering_tests()
    tensor, excluded = [], []
    for cls in sorted(numba_op_types(), key=lambda c: (c.__module__, c.__name__)):
        mod = cls.__module__
        if issubclass(cls, ScalarOp) and cls is not ScalarOp:
            continue  # in the scalar table
        why = _NOT_IN_LOGP.get(cls.__name__) or next(
            (r for m, r in _EXCLUDED_MODULES.items() if mod.startswith(m)), None)
        row = {"name": cls.__name__, "module": mod}
        if why:
            excluded.append({**row, "note": why})
            continue
        status, note = tensor_op_status(cls)
        tensor.append({**row, "status": status, "note": note, "tests": tests.get(cls.__name__, [])})
    scalar = []
    for cls in sorted(scalar_op_types(), key=lambda c: c.__name__):
        status, note = scalar_op_status(cls)
        scalar.append({"name": cls.__name__, "module": cls.__module__, "status": status, "note": note,
                       "tests": tests.get(cls.__name__, [])})
    listed = {r["name"] for r in tensor}
    from .export import HANDLERS

    extra = [{"name": n, "tests": tests.get(n, [])} for n in sorted(HANDLERS) if n not in listed
             and n not in _NOT_IN_LOGP]
    return tensor, excluded, scalar, extra


def render():
    import pytensor

    tensor, excluded, scalar, extra = rows()

    def table(rs, cols):
        lines = ["| " + " | ".join(h for h, _ in cols) + " |", "|" + "---|" * len(cols)]
        for r in rs:
            lines.append("| " + " | ".join(fn(r) for _, fn in cols) + " |")
        return "\n".join(lines)

    def tests_cell(r):
        return "<br>".join(f"`{t}`" for t in r["tests"]) or "—"

    n_native = sum(r["status"].startswith("native") for r in tensor)
    n_sc = sum(r["status"] == "native" for r in scalar)
    out = [
        "# Op coverage",
        "",
        "Generated by `python -m ember.coverage --out docs/coverage.md` "
        f"(PyTensor {pytensor.__version__}). Every op type PyTensor's numba backend dispatches "
        "(`numba_funcify.registry`) that can appear in a PyMC logp, gradient or expand graph, "
        "and whether Ember runs it natively or through the Python fallback "
        "(`python/ember/fallback.py`: the op's own `perform` in a `PythonCallback` node, "
        "GIL held, serialised per op, with a `FallbackWarning`). Every fallback op is covered "
        "by the fallback's own tests (`test_fallback.py`); the tests column names the tests "
        "written for that op (`@pytest.mark.covers`).",
        "",
        f"Tensor ops: {len(tensor)}, {n_native} native or partly native. "
        f"Scalar ops: {len(scalar)}, {n_sc} native.",
        "",
        "## Tensor ops",
        "",
        table(tensor, [("op", lambda r: f"`{r['name']}`"), ("module", lambda r: r["module"]),
                       ("status", lambda r: r["status"]), ("note", lambda r: r["note"]),
                       ("tests", tests_cell)]),
        "",
        "## Scalar ops (inside Elemwise)",
        "",
        table(scalar, [("op", lambda r: f"`{r['name']}`"), ("status", lambda r: r["status"]),
                       ("tests", tests_cell)]),
        "",
        "## Native ops outside numba's registry",
        "",
        "Op classes the exporter maps by name that numba dispatches through a base class, "
        "or that only other PyTensor/PyMC versions define (e.g. PyMC 5's `PosDefMatrix`, "
        "PyTensor 2.x's `SoftmaxGrad`).",
        "",
        table(extra, [("op", lambda r: f"`{r['name']}`"), ("tests", tests_cell)]),
        "",
        "## Registered but not in PyMC logp graphs",
        "",
        table(excluded, [("op", lambda r: f"`{r['name']}`"), ("module", lambda r: r["module"]),
                         ("why", lambda r: r["note"])]),
        "",
    ]
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ember.coverage", description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the markdown here (default: stdout)")
    args = ap.parse_args(argv)
    text = render()
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
