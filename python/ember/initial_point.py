"""Seeded initial points of a pm.Model, evaluated on Ember.

PyMC's `make_initial_point_fn` compiles its expression with PyTensor; here the
same expression (`pymc.initial_point.make_initial_point_expression`, the
same arguments) is split at its random draws (jitter, "prior" strategies):

    stage 1..L   an Ember program computes the sizes and parameters of the
                 draws whose inputs are known, NumPy draws them
    final        an Ember program computes the transformed values

Draws follow PyTensor's RandomVariable.perform (a copy of the input
generator, op.rng_fn, the output dtype) and PyMC's reseeding (one PCG64 per
shared generator, spawned from SeedSequence(seed) in find_rng_nodes order),
so the points are PyMC's. A plan is plain data (graph documents, pickled
RandomVariable ops) and goes into the program cache.
"""

import base64
import copy
import pickle
from dataclasses import dataclass

import numpy as np

from .fallback import python_inner_functions


@dataclass
class Draw:
    op: object  # the RandomVariable
    dtype: str
    rng: tuple  # ("root", k) or ("draw", j): the generator it draws from
    size: tuple  # ("const", value) | ("out", k) | ("none",)
    params: list  # same forms as size


@dataclass
class Stage:
    graph: object  # (doc or JSON text, payload) of its program, or None (nothing to compute)
    draws: list  # Draw, in order
    program: object = None  # the loaded ember Program


class InitialPointPlan:
    def __init__(self, names, stages, final, n_rngs):
        self.names = names  # transformed value names, model.free_RVs order
        self.stages = stages
        self.final_graph = final  # (doc or JSON text, payload)
        self.final = None  # its Program, once loaded
        self.n_rngs = n_rngs

    # -- building ----------------------------------------------------------------

    @classmethod
    def from_model(cls, model, *, overrides=None, jitter_rvs=None, default_strategy="support_point"):
        from pymc.initial_point import convert_str_to_rv_dict, make_initial_point_expression
        from pymc.pytensorf import replace_rng_nodes
        from pymc.util import get_transformed_name

        strategies = {**model.rvs_to_initial_values, **convert_str_to_rv_dict(model, overrides or {})}
        exprs = make_initial_point_expression(
            free_rvs=model.free_RVs, rvs_to_transforms=model.rvs_to_transforms,
            initval_strategies=strategies, jitter_rvs=jitter_rvs, default_strategy=default_strategy,
            return_transformed=True)
        exprs = replace_rng_nodes(exprs)
        names = []
        for rv in model.free_RVs:
            tr = model.rvs_to_transforms[rv]
            names.append(get_transformed_name(rv.name, tr) if tr is not None else rv.name)
        from .export import UnsupportedGraphError

        try:
            return cls._split(names, exprs)
        except UnsupportedGraphError:
            # Draws Ember cannot run (PyTensor 3's LKJ prior draw is a Scan of
            # RandomVariables): PyMC's own function, on PyTensor's pure-Python VM.
            return PyMCInitialPoint(model, overrides, jitter_rvs, default_strategy)

    @classmethod
    def _split(cls, names, exprs):
        from pymc.pytensorf import collect_default_updates, find_rng_nodes
        from pytensor.graph.basic import Constant
        from pytensor.graph.fg import FunctionGraph
        from pytensor.graph.replace import clone_replace
        from pytensor.graph.rewriting.basic import in2out
        from pytensor.tensor.random.op import RandomVariable
        from pytensor.tensor.rewriting.basic import constant_folding

        from .export import export_graph
        from .prepare import _export_node_rewriters, apply_export_rewrites, function_graph

        # Draws hidden in OpFromGraphs (SymbolicRandomVariable: LKJ, ...) come
        # out; constant index helpers (Eye, tril indices) fold; sizes taken
        # from statically known shapes need no stage of their own.
        fg = FunctionGraph(outputs=list(exprs), clone=True)
        # PyMC seeds the generators in the order its compiled function
        # reaches them: outputs, then the generator updates (first met, by output).
        in2out(_static_shape_rewriter()).rewrite(fg)
        updates = []
        for e in fg.outputs:
            updates.extend(u for u in collect_default_updates(outputs=[e]).values() if u not in updates)
        rngs = find_rng_nodes([*fg.outputs, *updates])
        in2out(*_export_node_rewriters(), _static_shape_rewriter(), constant_folding).rewrite(fg)
        exprs = list(fg.outputs)
        rv_nodes = [n for n in fg.toposort() if isinstance(n.op, RandomVariable)]
        index = {n: j for j, n in enumerate(rv_nodes)}
        # A draw's level: 1 + the deepest draw its generator, size and parameters depend on.
        level = {}
        for n in rv_nodes:
            deps = [a.owner for a in _ancestors_to_draws(n.inputs, index)]
            level[n] = 1 + max((level[d] for d in deps), default=0)
        rv_nodes.sort(key=lambda n: (level[n], index[n]))  # the order draws run in
        index = {n: j for j, n in enumerate(rv_nodes)}
        placeholders = {n.outputs[1]: n.outputs[1].type() for n in rv_nodes}
        drawn_order = []  # rv nodes in the order their values become program inputs

        def program(outputs, name):
            outs = clone_replace(outputs, placeholders) if outputs else []
            ins = [placeholders[n.outputs[1]] for n in drawn_order]
            return export_graph(apply_export_rewrites(function_graph(ins, outs)), name=name)

        stages = []
        for lv in range(1, max(level.values(), default=0) + 1):
            nodes = [n for n in rv_nodes if level[n] == lv]
            outputs, draws = [], []

            def ref(v):
                if isinstance(v, Constant) or v.type.__class__.__name__ == "NoneTypeT":
                    data = getattr(v, "data", None)
                    return ("none",) if data is None else ("const", np.asarray(data))
                outputs.append(v)
                return ("out", len(outputs) - 1)

            for n in nodes:
                rng_in = n.inputs[0]
                src = (("draw", index[rng_in.owner]) if rng_in.owner is not None and rng_in.owner in index
                       else ("root", rngs.index(rng_in)))
                draws.append(Draw(op=n.op, dtype=n.outputs[1].dtype, rng=src, size=ref(n.inputs[1]),
                                  params=[ref(p) for p in n.inputs[2:]]))
            doc = program(outputs, f"initial_point_stage{lv}") if outputs else None
            stages.append(Stage(graph=doc, draws=draws))
            drawn_order.extend(nodes)
        final = program(list(exprs), "initial_point")
        return cls(names, stages, final, len(rngs))

    # -- running -------------------------------------------------------------------

    def load(self, **options):
        from . import native

        if self.final is None:
            for k, st in enumerate(self.stages):
                if st.graph is not None:
                    st.program = native.Program.from_document(*st.graph, source=f"<initial point stage {k + 1}>",
                                                              **options)
            self.final = native.Program.from_document(*self.final_graph, source="<initial point>", **options)
        return self

    def __call__(self, seed=None):
        """dict name -> transformed initial value, as PyMC's function returns."""
        try:
            from pytensor.tensor.random.type import custom_rng_deepcopy
        except ImportError:
            custom_rng_deepcopy = copy.deepcopy
        self.load()
        roots = [np.random.Generator(np.random.PCG64(s))
                 for s in np.random.SeedSequence(seed).spawn(self.n_rngs)]
        values, after = [], []  # drawn values (program inputs), generator after each draw
        for stage in self.stages:
            outs = stage.program(*values) if stage.program is not None else []

            def val(r):
                return None if r[0] == "none" else r[1] if r[0] == "const" else outs[r[1]]

            for d in stage.draws:
                rng = roots[d.rng[1]] if d.rng[0] == "root" else after[d.rng[1]]
                rng = custom_rng_deepcopy(rng)
                size = val(d.size)
                v = d.op.rng_fn(rng, *[val(p) for p in d.params], None if size is None else tuple(size))
                values.append(np.asarray(v, dtype=d.dtype))
                after.append(rng)
        return dict(zip(self.names, self.final(*values)))

    # -- storing -------------------------------------------------------------------

    def to_dict(self, write_graph):
        """A JSON-able description; write_graph(name, (doc, payload)) stores a program
        and returns its file name."""
        def enc(r):
            if r[0] == "const":
                return ["const", base64.b64encode(pickle.dumps(r[1])).decode()]
            return list(r)

        stages = []
        for k, s in enumerate(self.stages):
            stages.append({
                "program": None if s.graph is None else write_graph(f"initial_point_stage{k + 1}", s.graph),
                "draws": [{"op": base64.b64encode(pickle.dumps(d.op)).decode(), "dtype": d.dtype,
                           "rng": list(d.rng), "size": enc(d.size), "params": [enc(p) for p in d.params]}
                          for d in s.draws]})
        return {"names": self.names, "n_rngs": self.n_rngs, "stages": stages,
                "final": write_graph("initial_point", self.final_graph)}

    @classmethod
    def from_dict(cls, d, read_graph, model=None):
        if d.get("kind") == "pymc":
            return PyMCInitialPoint(model, *d["args"]) if model is not None else None
        def dec(r):
            if r[0] == "const":
                return ("const", pickle.loads(base64.b64decode(r[1])))
            return tuple(r)

        stages = []
        for s in d["stages"]:
            draws = [Draw(op=pickle.loads(base64.b64decode(x["op"])), dtype=x["dtype"], rng=tuple(x["rng"]),
                          size=dec(x["size"]), params=[dec(p) for p in x["params"]]) for x in s["draws"]]
            stages.append(Stage(graph=None if s["program"] is None else read_graph(s["program"]), draws=draws))
        return cls(list(d["names"]), stages, read_graph(d["final"]), int(d["n_rngs"]))


class PyMCInitialPoint:
    """PyMC's make_initial_point_fn compiled for PyTensor's Python VM
    (FAST_COMPILE: no C thunks, no numba), for initial points Ember cannot run."""

    def __init__(self, model, overrides, jitter_rvs, default_strategy):
        from pymc.initial_point import make_initial_point_fn
        from pytensor.compile.mode import FAST_COMPILE

        if FAST_COMPILE.linker.c_thunks:
            raise ValueError("initial point: PyTensor's FAST_COMPILE mode would compile C")
        names = sorted(getattr(rv, "name", rv) for rv in jitter_rvs or ())
        self.args = [overrides, names, default_strategy]
        jitter = {model[n] for n in names}
        with python_inner_functions():
            self.fn = make_initial_point_fn(model=model, overrides=overrides, jitter_rvs=jitter,
                                            default_strategy=default_strategy, return_transformed=True)
        self.stages = []

    def load(self, **options):
        return self

    def __call__(self, seed=None):
        return self.fn(seed)

    def to_dict(self, write_graph):
        return {"kind": "pymc", "args": self.args}


def _ancestors_to_draws(variables, index):
    """Draw outputs reachable from variables without passing through another draw."""
    seen, stack, found = set(), list(variables), []
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v.owner is None:
            continue
        if v.owner in index:
            found.append(v)
            continue
        stack.extend(v.owner.inputs)
    return found


def flat_point_function(plan, names, shapes, lock=None):
    """seed -> the flat float64 point in `names` order (nutpie's wrapper)."""
    import threading

    lock = lock or threading.Lock()
    total = int(sum(np.prod(s, dtype=int) for s in shapes))

    def initial_point(seed=None):
        with lock:
            values = plan(seed)
        flat = np.empty(total, dtype="float64")
        cursor = 0
        for name, shape in zip(names, shapes):
            v = np.asarray(values[name])
            if tuple(v.shape) != tuple(shape):
                raise ValueError(f"Size of initial value for {name} is {v.shape}, expected {shape}")
            flat[cursor:cursor + v.size] = v.ravel().astype("float64")
            cursor += v.size
        return flat

    return initial_point


def _static_shape_rewriter():
    from pytensor.graph.rewriting.basic import node_rewriter
    from pytensor.tensor.basic import constant
    from pytensor.tensor.shape import Shape, Shape_i

    @node_rewriter([Shape, Shape_i])
    def static_shape(fgraph, node):
        shape = node.inputs[0].type.shape
        if isinstance(node.op, Shape_i):
            d = shape[node.op.i]
            return None if d is None else [constant(np.asarray(d, dtype=node.outputs[0].dtype))]
        if any(d is None for d in shape):
            return None
        return [constant(np.asarray(shape, dtype=node.outputs[0].dtype))]

    return static_shape
