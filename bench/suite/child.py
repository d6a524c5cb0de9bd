"""One suite run in a fresh process: python child.py MODEL STATE_JSON TMPDIR

Compiles MODEL with nutpie's numba backend and with ember (clock: model to
first gradient), times both function pointers side by side from the C loop
(ember on `auto` after a warm-up, then a second ember Program on `off`), and
profiles ember's logp graph per node with node_profile. STATE_JSON is rewritten
after every stage, so a run killed by the parent's cap keeps what it reached.
"""

import json
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "driver"))
sys.path.insert(0, HERE)

from ctimer import Caller, load as timer_lib  # noqa: E402
from side_by_side import agreement, alternate, warm_up  # noqa: E402

WARMUP_S = 3.0
REPS = 151
PROFILE_CALLS = 400
NODE_PROFILE = os.environ.get("EMBER_NODE_PROFILE", os.path.join(ROOT, "build", "jit", "bench", "node_profile"))


class State(dict):
    def __init__(self, path):
        super().__init__()
        self.path = path

    def save(self, **kw):
        self.update(kw)
        with open(self.path + ".tmp", "w") as f:
            json.dump(self, f)
        os.replace(self.path + ".tmp", self.path)


def medians(callers):
    return {c.name: {"median_us": float(np.median(c.wall)) / 1e3, "cpu_us": float(np.median(c.cpu)) / 1e3}
            for c in callers}


def side_by_side(numba, ember, reps):
    for c in (numba, ember):
        c.wall, c.cpu = [], []
    sizes = alternate([numba, ember], reps)
    m = medians([numba, ember])
    m["batch"] = sizes
    m["ratio"] = m[numba.name]["median_us"] / m[ember.name]["median_us"]
    return m


def jit_tiers():
    from ember import native

    stats = native.jit_stats()
    tiers = {}
    for c in stats.get("composites", []) if isinstance(stats.get("composites"), list) else []:
        t = f"t{c.get('tier', 0)}"
        tiers[t] = tiers.get(t, 0) + 1
    return tiers


# Op names may hold spaces: "Elemwise (fused: 77 nodes from node 0)" is a run fused at load.
ROW = re.compile(r"^\s+node\s+(\d+)\s+(.+?)\s+out\s+(.+?)\s+([\d.]+) us\s+([\d.]+)%\s*(\S.*)?$")
OP = re.compile(r"^\s+(.+?)\s+([\d.]+) us\s+([\d.]+)%$")
FUSED = re.compile(r" \(fused: \d+ nodes from node \d+\)")


def describe(node):
    """A graph node's kernel in a few words: an Elemwise's scalar op (a Composite's commonest inner ops)."""
    attrs = node.get("attrs", {})
    inner = attrs.get("scalar_op") or attrs.get("core_op") or {}
    if "nodes" in inner:
        counts = {}
        for n in inner["nodes"]:
            counts[n["op"]] = counts.get(n["op"], 0) + 1
        top = sorted(counts, key=lambda o: -counts[o])[:4]
        return f"{inner.get('op', 'Composite')}[{len(inner['nodes'])}: {','.join(top)}]"
    return inner.get("op", "")


SMALL = 32  # elements: a node this small costs its fixed per-node overhead, not its work


def elements(shape):
    """Elements of a node_profile shape: "()" 1, "(600, 4)" 2400."""
    dims = [int(d) for d in shape.strip("()").split(",") if d.strip()]
    n = 1
    for d in dims:
        n *= d
    return n


def profile(graph, x_path, doc=None):
    """node_profile's per-op sums (interpreter: EMBER_JIT=off) and its costliest nodes."""
    out = subprocess.run([NODE_PROFILE, graph, x_path, str(PROFILE_CALLS)], capture_output=True, text=True,
                         timeout=90, env=dict(os.environ, EMBER_JIT="off"), check=True).stdout
    lines = out.splitlines()
    head = re.search(r"(\d+) nodes, \d+ calls; median call ([\d.]+) us, sum of node medians ([\d.]+) us", lines[0])
    split = lines.index("per op:")
    nodes = [dict(node=int(m[1]), op=m[2], shape=m[3], us=float(m[4]), pct=float(m[5]), kernel=m[6] or "")
             for m in map(ROW.match, lines[1:split]) if m]
    for n in nodes:  # node_profile names a step's Composite; other ops by the file's node
        if not n["kernel"] and doc and 0 <= n["node"] < len(doc["nodes"]):
            n["kernel"] = describe(doc["nodes"][n["node"]])
    ops = {}
    for m in map(OP.match, lines[split + 1:]):
        if m:
            o = ops.setdefault(FUSED.sub(" (fused)", m[1]), [0.0, 0.0])
            o[0] += float(m[2])
            o[1] += float(m[3])
    ops = sorted(([k, *v] for k, v in ops.items()), key=lambda r: -r[1])
    small = sum(n["pct"] for n in nodes if elements(n["shape"]) <= SMALL)
    return {"format": 2, "steps": int(head[1]), "call_us": float(head[2]), "sum_us": float(head[3]),
            "small_pct": round(small, 1),
            "top_ops": [dict(op=o, us=round(u, 2), pct=round(p, 1)) for o, u, p in ops[:6]],
            "top_nodes": nodes[:5], "raw": lines[:split + 1][:30] + lines[split:]}


class CaptureLogp:
    """The compiled model keeps only loaded Programs: keep the logp document as it is loaded."""

    def __init__(self, native):
        self.native, self.graph, self.callbacks = native, None, ()

    def __enter__(self):
        cls = self.native.Program
        self.orig = cls.__dict__["from_document"]

        def from_document(_, doc, payload=b"", *, source="<memory>", callbacks=(), **options):
            if source == "<nutpie logp>":  # JSON text when it came from ember's program cache
                self.graph = (json.loads(doc) if isinstance(doc, str) else doc, payload)
                self.callbacks = callbacks  # the Python nodes of a graph with a fallback
            return self.orig.__func__(cls, doc, payload, source=source, callbacks=callbacks, **options)

        cls.from_document = classmethod(from_document)
        return self

    def __exit__(self, *exc):
        self.native.Program.from_document = self.orig


def first_call(caller):
    """[] when the first logp call succeeds, else [its error] (the other backend still runs once)."""
    try:
        caller.batch(1, record=False)
        return []
    except RuntimeError as e:
        return [str(e)]


def main():
    warnings.filterwarnings("ignore")
    name, state_path, tmp = sys.argv[1:4]
    st = State(state_path)
    import models
    import nutpie

    import ember.nutpie as en
    from ember import native
    from ember.export import UnsupportedGraphError, dumps

    model = models.build(name)
    lib = timer_lib()
    t = time.perf_counter()
    nc = nutpie.compile_pymc_model(model, backend="numba")
    x0 = np.asarray(nc.initial_point_func(1), dtype="float64")
    numba = Caller(lib, "nutpie-numba", nc.compiled_logp_func.address, nc.user_data.ctypes.data, x0)
    failed = first_call(numba)
    st.save(status="numba compiled", n_dim=len(x0), compile_s={"nutpie-numba": time.perf_counter() - t})

    t = time.perf_counter()
    try:
        with CaptureLogp(native) as cap:
            ec = en.compile_pymc_model(model, jit="auto")
    except UnsupportedGraphError as e:
        st.save(status="unsupported: " + ", ".join(sorted(e.problems)))
        return
    ember = Caller(lib, "ember-auto", native.logp_address, ec.logp_program.nutpie_handle(), x0)
    failed += first_call(ember)
    st["compile_s"]["ember"] = time.perf_counter() - t
    st.save(status="ember compiled", ember_timings=ec.timings, graph_nodes=len(cap.graph[0]["nodes"]))
    if failed:
        st.save(status="logp failed at nutpie's initial point: " + "; ".join(failed),
                logp_at_x0={c.name: float(c.logp[0]) for c in (numba, ember)})
        return

    for c in (numba, ember):
        for _ in range(20):
            c.batch(1, record=False)
    logp_diff, grad_diff = agreement(numba, ember)
    st.save(rel_diff={"logp": logp_diff, "grad_max": grad_diff})
    warm_up(ember, WARMUP_S)
    auto = side_by_side(numba, ember, REPS)
    st.save(status="auto timed", auto=auto, ratio_auto=round(auto["ratio"], 3), jit_tiers=jit_tiers())

    doc, payload = cap.graph
    graph, x_path = os.path.join(tmp, "logp.embg"), os.path.join(tmp, "x.npy")
    with open(graph, "wb") as f:
        f.write(dumps(doc, payload))
    np.save(x_path, x0)
    off_prog = native.Program.from_document(doc, payload, source="<suite logp>", jit="off", callbacks=cap.callbacks)
    off = Caller(lib, "ember-off", native.logp_address, off_prog.nutpie_handle(), x0)
    for _ in range(20):
        off.batch(1, record=False)
    res_off = side_by_side(numba, off, REPS)
    st.save(status="off timed", off=res_off, ratio_off=round(res_off["ratio"], 3))

    if cap.callbacks:  # bench/node_profile loads graphs without Python nodes only
        st.save(status="ok", profile_skipped=f"{len(cap.callbacks)} Python callback(s)")
    else:
        st.save(profile=profile(graph, x_path, doc), status="ok")


if __name__ == "__main__":
    main()
