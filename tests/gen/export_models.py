"""Export nutpie's logp+grad graphs of ember.testing.models to tests/data/models.

For each model writes
  <name>.embg         the rewritten graph nutpie's numba backend would run
  <name>.values.json  10 points of the flat unconstrained vector and PyTensor's
                      logp and gradient there (PyTensor's Python
                      implementations run on the same rewritten graph,
                      cross-checked against nutpie's numba function and
                      PyMC's own unrewritten logp/dlogp)

Run: EMBER_NATIVE_DIR=build/jit/python/ember .venv/bin/python tests/gen/export_models.py [names...]
"""

import argparse
import collections
import json
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

import ember  # noqa: E402
from ember.testing.models import MODELS  # noqa: E402
from ember.testing.nutpie_graph import nutpie_logp  # noqa: E402

N_POINTS = 10
CROSS_CHECK_RTOL = 1e-8


def reference_fn(fn):
    """PyTensor's Python implementations (op.perform, scalar impl) on fn's rewritten graph."""
    from ember.testing.pytensor_eval import evaluate

    fgraph = fn.maker.fgraph
    n_out = len(fn.maker.outputs)
    shared = [c.data for c in fn.input_storage[1:]]
    return lambda x: evaluate(fgraph, [np.asarray(x), *shared])[:n_out]


def pymc_fns(model):
    return model.compile_logp(jacobian=True), model.compile_dlogp(jacobian=True)


def to_point(model, nl, x):
    point = {}
    for name, slc, shape in zip(nl.names, nl.slices, nl.shapes):
        point[name] = x[slc].reshape(shape)
    return point


def json_number(x):
    x = float(x)
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def close(a, b, rtol):
    a, b = np.asarray(a, dtype="float64"), np.asarray(b, dtype="float64")
    return np.allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.max(np.abs(b)))))


def export_model(name, out_dir):
    model = MODELS[name]()
    nl = nutpie_logp(model)
    doc, payload = ember.export_graph(nl.fn, name=name, output_names=["logp", "grad"])
    graph_bytes = ember.dumps(doc, payload, binary=True)
    logp_pm, dlogp_pm = pymc_fns(model)
    ref = reference_fn(nl.fn)

    rng = np.random.default_rng(12345)
    points, logps, grads = [], [], []
    for seed in range(N_POINTS):
        x = nl.initial_point(seed) + rng.normal(0.0, 0.5, size=nl.n_dim)
        logp, grad = ref(x)
        nut_logp, nut_grad = nl.fn(x)
        point = to_point(model, nl, x)
        pm_logp, pm_grad = logp_pm(point), dlogp_pm(point)
        for what, a, b in (("numba logp", nut_logp, logp), ("numba grad", nut_grad, grad),
                           ("pymc logp", pm_logp, logp), ("pymc grad", pm_grad, grad)):
            if not close(a, b, CROSS_CHECK_RTOL):
                raise RuntimeError(f"{name}: {what} disagrees with the Python linker at point {seed}")
        points.append([float(v) for v in x])
        logps.append(json_number(logp))
        grads.append([json_number(v) for v in np.asarray(grad)])

    values = {
        "model": name,
        "graph": f"{name}.embg",
        "input": nl.fn.maker.fgraph.inputs[0].name,
        "reference": "PyTensor op.perform / scalar impl (NumPy, SciPy) on the exported graph",
        "n_dim": int(nl.n_dim),
        "params": [{"name": n, "start": int(s.start), "stop": int(s.stop), "shape": [int(d) for d in sh]}
                   for n, s, sh in zip(nl.names, nl.slices, nl.shapes)],
        "points": points,
        "logp": logps,
        "grad": grads,
    }
    with open(os.path.join(out_dir, f"{name}.embg"), "wb") as f:
        f.write(graph_bytes)
    with open(os.path.join(out_dir, f"{name}.values.json"), "w") as f:
        json.dump(values, f, separators=(",", ":"))
    counts = collections.Counter(n["op"] if n["op"] != "Elemwise" else
                                 "Elemwise/" + n["attrs"]["scalar_op"]["op"] for n in doc["nodes"])
    return doc, len(graph_bytes), counts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="models to export (default: all)")
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "models"))
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    os.makedirs(args.out, exist_ok=True)
    for name in args.names or MODELS:
        doc, size, counts = export_model(name, args.out)
        ops = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        print(f"{name}: {len(doc['nodes'])} nodes, {len(doc['variables'])} variables, {size} bytes\n  {ops}",
              flush=True)


if __name__ == "__main__":
    main()
