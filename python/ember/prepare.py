"""From a pm.Model to the graphs nutpie samples, through PyMC's public API.

    layout = build_layout(model, point, var_names)        # names, slices, shapes, dims, coords
    logp_fg, t = logp_graph(model, layout, prepare)        # (_unconstrained_point, shared...) -> (logp, grad)
    expand_fg = expand_graph(model, layout, prepare)       # _unconstrained_point -> expanded draw
    doc, payload = export_for_ember(fg, ...)

nutpie's semantics: one float64 input of static length `n_dim`, sliced and
reshaped per value variable (in `model.free_RVs` order); logp rewritten with
canonicalize + stabilize, then differentiated; the gradient a Join of the
raveled gradients; parameter checks become `switch(cond, logp, -inf)` (PyMC's
compile does that); the expand output the flat point followed by the
untransformed variables and Deterministics.

`prepare` picks what PyTensor does after that:
  "native": nothing. model.logp() is exported as PyMC builds it, with a
      "gradient" directive (docs/graph-format.md): Ember's loader turns the
      parameter checks into -inf switches, stabilizes, differentiates and
      lays out the flat point (engine/program/grad/). A graph with an op
      Ember cannot differentiate falls back to "stabilize" (ember/nutpie.py).
  "stabilize": nothing but the rewrites the exporter needs (EXPORT_REWRITES);
      fusion and the rest are left to Ember's loader.
  "fast_run": PyTensor's fast_run pipeline (fusion into Composites), as
      nutpie's numba backend compiles it, less SLOW_REWRITES.
Nothing here compiles code (no C, no numba) and nothing evaluates a graph
with PyTensor: small evaluations (shapes, dim lengths) run on Ember.
"""

import time
from dataclasses import dataclass, field
from math import prod

import numpy as np

PREPARE_MODES = ("native", "stabilize", "fast_run")
# After the gradient, on logp and gradient together: the gradient's graph needs
# the stabilizing rewrites too, and some logp forms become stable only once
# specialize has normalized them (log1p(-1 * sigmoid(x)) -> -softplus(x) needs
# mul(-1, x) -> neg(x)); canonicalize folds constant index helpers.
# reassociate_matmul_chain (PyTensor 3; an unknown name selects nothing on 2.x)
# orders chains of matrix products by cost: the gradient of a latent GP
# multiplies L.T by an outer product, one 40x40x40 product more without it.
POST_GRADIENT_REWRITES = ("ShapeOpt", "canonicalize", "stabilize", "specialize", "reassociate_matmul_chain")
# With a Scan in the graph, also PyTensor's scan rewrites (tag "scan"): they
# push work that depends only on sequences or non-sequences out of the loop
# into vector ops and prune the loop's inputs and outputs, which no pass of
# Ember's does (GARCH(1,1): 5 -> 2 ops per forward step, 13 -> 7 per gradient
# step). Not the in-place one: Ember writes fresh outputs.
SCAN_REWRITES = ("scan",)
SCAN_EXCLUDED = ("scan_make_inplace",)
UNCONSTRAINED_PARAMETER = "unconstrained_parameter"  # nutpie's coordinate of the flat point


# Rewrites making ops Ember cannot run (C-only, BLAS), as the EMBER mode
# excludes them; local_usmm (cxx_only, in specialize) would also have PyTensor
# test-compile C code to detect a BLAS library.
from .linker import INCOMPATIBLE_REWRITES  # noqa: E402

# Left out of every PyTensor pass here, fast_run included: a*x + a*y ->
# a*(x+y) is quadratic in the terms of a sum and was a quarter to a third of
# the rewrite time on the seed models; it saves multiplications, not accuracy,
# and Ember's own passes do the clean-up.
SLOW_REWRITES = ("local_greedy_distributor",)
_EXCLUDED = (*INCOMPATIBLE_REWRITES, *SLOW_REWRITES)


def without_traces():
    """A context in which PyTensor records no creation traceback on new
    variables and nodes. PyTensor walks the Python stack for every one it
    makes (config.traceback__limit frames after skipping its own), and over
    model.logp(), the rewrites and the gradient that walk was about a third
    of the time; the traces only decorate error messages."""
    from pytensor import config

    return config.change_flags(traceback__limit=0)


def _graph_inputs(outputs):
    try:
        from pytensor.graph.traversal import graph_inputs
    except ImportError:  # PyTensor 2.x before the traversal module
        from pytensor.graph.basic import graph_inputs
    return list(graph_inputs(outputs))


def _shared_inputs(outputs):
    from pytensor.compile.sharedvalue import SharedVariable

    seen, out = set(), []
    for v in _graph_inputs(outputs):
        if isinstance(v, SharedVariable) and v not in seen:
            seen.add(v)
            out.append(v)
    return out


def function_graph(inputs, outputs):
    """A FunctionGraph over inputs plus the shared variables the outputs use."""
    from pytensor.graph.fg import FunctionGraph

    shared = [v for v in _shared_inputs(outputs) if v not in inputs]
    return FunctionGraph([*inputs, *shared], list(outputs), clone=True)


# -- rewrites the exporter needs ----------------------------------------------------


def _export_node_rewriters():
    """Blockwise without batch dims -> its core op (pt.grad builds them after
    canonicalize ran); OpFromGraph (AllocDiag, the SymbolicOps of PyTensor 3)
    -> its inner graph, which PyTensor 3 freezes and the exporter cannot clone."""
    from pytensor.compile.builders import OpFromGraph
    from pytensor.graph.rewriting.basic import node_rewriter
    from pytensor.tensor.rewriting.blockwise import local_useless_unbatched_blockwise

    try:
        from pytensor.compile.rewriting import inline_ofg_node
    except ImportError:  # PyTensor 2.x
        from pytensor.tensor.rewriting.ofg import inline_ofg_node

    @node_rewriter([OpFromGraph])
    def inline_op_from_graph(fgraph, node):
        return inline_ofg_node(node)

    return [local_useless_unbatched_blockwise, inline_op_from_graph]


EXPORT_REWRITES = ("local_useless_unbatched_blockwise", "inline_op_from_graph")


def apply_export_rewrites(fgraph):
    from pytensor.graph.rewriting.basic import in2out

    in2out(*_export_node_rewriters()).rewrite(fgraph)
    return fgraph


def _check_parameter_rewriter(model):
    """PyMC's compile turns CheckParameterValue into -inf switches (or drops
    them when model.check_bounds is False): the same here."""
    from pymc.logprob.utils import local_check_parameter_to_ninf_switch, local_remove_check_parameter

    return local_check_parameter_to_ninf_switch if model.check_bounds else local_remove_check_parameter


# -- small evaluations on Ember --------------------------------------------------


def evaluate(outputs):
    """Values of graphs without free inputs (constants and shared variables
    only), run on Ember after constant folding."""
    from pytensor.graph import rewrite_graph
    from pytensor.graph.basic import Constant

    outputs = list(outputs)
    if not outputs:
        return []
    folded = rewrite_graph(outputs, include=("canonicalize",))
    folded = folded if isinstance(folded, (list, tuple)) else [folded]
    if all(isinstance(v, Constant) for v in folded):
        return [np.asarray(v.data) for v in folded]
    from . import native
    from .export import export_graph

    fg = apply_export_rewrites(function_graph([], folded))
    doc, payload = export_graph(fg)
    return native.Program.from_document(doc, payload, source="<evaluate>", jit="off")()


def _dim_length(model, name):
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant

    v = model.dim_lengths[name]
    if isinstance(v, Constant):
        return int(v.data)
    if isinstance(v, SharedVariable):
        return int(v.get_value())
    return int(evaluate([v])[0])


# -- the layout ------------------------------------------------------------------


@dataclass
class Layout:
    """The flat point and the expanded draw, as nutpie's own path lays them out."""

    names: list  # value variables (free_RVs order), then untransformed RVs and Deterministics
    slices: list  # (start, stop) in the expanded draw
    shapes: list  # tuples
    n_dim: int
    n_expanded: int
    reparameterized_names: list  # value variables that have a transform
    dims: dict = field(default_factory=dict)
    coords: dict = field(default_factory=dict)  # name -> list of values

    @property
    def shape_info(self):
        return (list(self.names), [slice(a, b) for a, b in self.slices], [tuple(s) for s in self.shapes])

    def to_dict(self):
        return {"names": list(self.names), "slices": [list(s) for s in self.slices],
                "shapes": [list(s) for s in self.shapes], "n_dim": self.n_dim,
                "n_expanded": self.n_expanded, "reparameterized_names": list(self.reparameterized_names),
                "dims": {k: list(v) for k, v in self.dims.items()},
                "coords": {k: _coord_to_json(vals) for k, vals in self.coords.items()}}

    @classmethod
    def from_dict(cls, d):
        return cls(names=list(d["names"]), slices=[tuple(s) for s in d["slices"]],
                   shapes=[tuple(s) for s in d["shapes"]], n_dim=int(d["n_dim"]),
                   n_expanded=int(d["n_expanded"]), reparameterized_names=list(d["reparameterized_names"]),
                   dims={k: tuple(v) for k, v in d["dims"].items()},
                   coords={k: _coord_from_json(v) for k, v in d["coords"].items()})


def _coord_to_json(vals):
    """A coordinate's values for the program cache's JSON manifest: dates and
    durations (a time series' index) as ISO strings with their dtype."""
    arr = np.asarray(vals)
    if arr.dtype == object and len(vals) and hasattr(vals[0], "to_datetime64"):  # pandas Timestamps
        arr = np.array([v.to_datetime64() for v in vals])
    if arr.dtype.kind in "mM":
        return {"dtype": arr.dtype.str, "iso": [str(v) for v in arr]}
    return [v.item() if isinstance(v, np.generic) else v for v in vals]


def _coord_from_json(v):
    if isinstance(v, dict):
        return list(np.array(v["iso"], dtype=np.dtype(v["dtype"])))
    return list(v)


def _remaining_vars(model, value_names, var_names):
    remaining = [v for v in model.unobserved_value_vars if v.name not in value_names]
    if var_names is not None:
        keep = set(var_names)
        remaining = [v for v in remaining if v.name in keep]
    return remaining


def _shapes_of(model, variables, point):
    """Shapes of the value variables' functions at `point` (transformed
    values by name): static where PyTensor knows them, else evaluated."""
    import pytensor.tensor as pt
    from pytensor.graph.replace import clone_replace

    shapes, unknown = {}, []
    for v in variables:
        static = v.type.shape
        if all(d is not None for d in static):
            shapes[v.name] = tuple(int(d) for d in static)
        else:
            unknown.append(v)
    if unknown:
        givens = {vv: pt.constant(np.asarray(point[vv.name], dtype=vv.dtype))
                  for vv in model.value_vars if vv.name in point}
        exprs = clone_replace([pt.as_tensor(v).shape for v in unknown], givens)
        for v, s in zip(unknown, evaluate(exprs)):
            shapes[v.name] = tuple(int(d) for d in np.asarray(s).ravel())
    return shapes


def build_layout(model, point, var_names=None, *, dims_for_reparameterized=True):
    """nutpie's layout for `model`; `point` maps value variable names to
    arrays (an initial point) and fixes the shapes. With
    dims_for_reparameterized (nutpie >= 0.16.11), a transformed value gets its
    RV's dims when the shapes agree."""
    value_vars = [model.rvs_to_values[rv] for rv in model.free_RVs]
    names = [v.name for v in value_vars]
    shapes = [tuple(np.shape(point[n])) for n in names]
    slices, count = [], 0
    for s in shapes:
        slices.append((count, count + prod(s)))
        count += prod(s)
    n_dim = count
    remaining = _remaining_vars(model, set(names), var_names)
    rshapes = _shapes_of(model, remaining, point)
    for v in remaining:
        names.append(v.name)
        shapes.append(rshapes[v.name])
        slices.append((count, count + prod(rshapes[v.name])))
        count += prod(rshapes[v.name])
    reparam = [model.rvs_to_values[rv].name for rv in model.free_RVs
               if model.rvs_to_transforms.get(rv) is not None]

    coords = {}
    for name, vals in model.coords.items():
        coords[name] = list(range(_dim_length(model, name))) if vals is None else list(vals)
    if UNCONSTRAINED_PARAMETER in coords:
        raise ValueError(f"Model contains invalid name '{UNCONSTRAINED_PARAMETER}'.")
    flat_names = []
    value_names = {v.name for v in model.value_vars}
    for base, shape in zip(names, shapes):
        if base not in value_names:
            continue
        for idx in np.ndindex(*shape):
            flat_names.append(f"{base}_{'.'.join(str(i) for i in idx)}" if idx else base)
    coords[UNCONSTRAINED_PARAMETER] = flat_names

    dims = {k: tuple(v) for k, v in model.named_vars_to_dims.items()}
    if dims_for_reparameterized:
        shape_by_name = dict(zip(names, shapes))
        value_to_rv = {v.name: rv.name for v, rv in model.values_to_rvs.items()}
        for value_name in reparam:
            rv_name = value_to_rv.get(value_name)
            if rv_name in dims and shape_by_name.get(rv_name) == shape_by_name.get(value_name):
                dims[value_name] = dims[rv_name]
    return Layout(names=names, slices=slices, shapes=shapes, n_dim=n_dim, n_expanded=count,
                  reparameterized_names=reparam, dims=dims, coords=coords)


# -- the graphs --------------------------------------------------------------------


def _flat_point(model, layout):
    """The flat input and each value variable's replacement (a reshaped slice)."""
    import pytensor.tensor as pt

    joined = pt.TensorType("float64", shape=(layout.n_dim,))(name="_unconstrained_point")
    variables, replacements = [], {}
    for rv, (a, b), shape in zip(model.free_RVs, layout.slices, layout.shapes):
        piece = joined[a:b]
        variables.append(piece)
        # An int64 shape even for scalars (as_tensor(()) would be a float vector).
        shp = pt.constant(np.asarray(shape, dtype="int64").reshape(len(shape)))
        replacements[model.rvs_to_values[rv]] = pt.reshape(piece, shp, ndim=len(shape)).astype(rv.dtype)
    return joined, variables, replacements


def _as_tensor(v):
    import pytensor.tensor as pt

    try:
        return pt.as_tensor(v, allow_xtensor_conversion=True)
    except TypeError:  # PyTensor without xtensor
        return pt.as_tensor(v)


def _fast_run_mode(model):
    from pytensor.compile.mode import Mode as PtMode
    from pytensor.graph.rewriting.db import RewriteDatabaseQuery

    from .linker import EmberLinker

    return PtMode(EmberLinker(load=False), RewriteDatabaseQuery(include=["fast_run"], exclude=list(SLOW_REWRITES)))


def _has_scan(fgraph):
    from pytensor.scan.op import Scan

    return any(isinstance(node.op, Scan) for node in fgraph.apply_nodes)


def logp_graph(model, layout, prepare="stabilize"):
    """(graph, seconds per stage) of logp and gradient over the flat point:
    a FunctionGraph ("stabilize") or an export-only pytensor Function ("fast_run")."""
    import pytensor.tensor as pt
    from pytensor.graph import rewrite_graph
    from pytensor.graph.replace import clone_replace

    if prepare not in PREPARE_MODES:
        raise ValueError(f"prepare must be one of {PREPARE_MODES}, not {prepare!r}")
    t = {}
    t0 = time.perf_counter()
    logp = model.logp()
    t1 = time.perf_counter()
    rewrites = ["canonicalize", "stabilize"]
    if not model.check_bounds:
        rewrites.append("local_remove_check_parameter")
    logp = rewrite_graph(logp, include=rewrites, exclude=_EXCLUDED)
    t2 = time.perf_counter()
    value_vars = [model.rvs_to_values[rv] for rv in model.free_RVs]
    grads = pt.grad(logp, value_vars)
    grad = pt.concatenate([_as_tensor(g).ravel() for g in grads])
    joined, _, replacements = _flat_point(model, layout)
    logp, grad = clone_replace([logp, grad], replacements)
    t3 = time.perf_counter()
    t.update(model_logp=t1 - t0, rewrites=t2 - t1, gradient=t3 - t2)
    if prepare == "fast_run":
        from pymc.pytensorf import compile as compile_pymc

        with model:
            graph = compile_pymc((joined,), (logp, grad), mode=_fast_run_mode(model))
    else:
        from pytensor.graph.rewriting.basic import in2out

        graph = function_graph([joined], [logp, grad])
        in2out(_check_parameter_rewriter(model)).rewrite(graph)
        include, exclude = POST_GRADIENT_REWRITES, _EXCLUDED
        if _has_scan(graph):
            include, exclude = (*include, *SCAN_REWRITES), (*exclude, *SCAN_EXCLUDED)
        rewrite_graph(graph, include=include, exclude=exclude)
        apply_export_rewrites(graph)
    t["rewrites"] += time.perf_counter() - t3
    return graph, t


def native_logp_graph(model, layout):
    """(FunctionGraph of model.logp() over the value variables and shared data,
    its gradient directive, seconds per stage) for Ember's own differentiation."""
    t0 = time.perf_counter()
    logp = model.logp()
    t1 = time.perf_counter()
    value_vars = [model.rvs_to_values[rv] for rv in model.free_RVs]
    graph = apply_export_rewrites(function_graph(value_vars, [logp]))
    directive = {"wrt": [{"input": k, "shape": [int(d) for d in shape]}
                         for k, shape in enumerate(layout.shapes[:len(value_vars)])],
                 "point": "_unconstrained_point", "check_bounds": bool(model.check_bounds)}
    t2 = time.perf_counter()
    return graph, directive, {"model_logp": t1 - t0, "rewrites": t2 - t1, "gradient": 0.0}


def expand_graph(model, layout, prepare="stabilize"):
    """The flat point -> [flat point, untransformed values, Deterministics] joined into one vector."""
    import pytensor.tensor as pt
    from pytensor.graph.replace import clone_replace

    joined, variables, replacements = _flat_point(model, layout)
    k = len(model.free_RVs)
    by_name = {v.name: v for v in model.unobserved_value_vars}
    remaining = [by_name[n] for n in layout.names[k:]]
    out = pt.concatenate([*[v.ravel() for v in variables], *[_as_tensor(v).ravel() for v in remaining]])
    if prepare == "fast_run":
        from pymc.pytensorf import compile as compile_pymc

        with model:
            return compile_pymc((joined,), [out], givens=list(replacements.items()),
                                mode=_fast_run_mode(model))
    (out,) = clone_replace([out], replacements)
    return apply_export_rewrites(function_graph([joined], [out]))
