"""Export the logp+grad graphs of ember's model suite WITHOUT PyTensor's fast_run
rewrites, to tests/data/models_unfused.

The graphs are nutpie's own (`nutpie.compile_pymc._make_functions`: logp
rewritten with canonicalize+stabilize, pt.grad, gradients joined, one flat
`_unconstrained_point` input), compiled with an empty rewrite query, so
Ember's load-time passes (engine/program/passes/) see what PyTensor would have
handed fast_run. PyMC's parameter checks become `switch(cond, logp, -inf)` as
PyMC's compile does in every mode. The inputs are laid out as in
tests/data/models/<name>.embg, whose values.json is the reference for both.

Run: .venv/bin/python tests/gen/export_models_unfused.py [names...]
"""

import argparse
import collections
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

import ember  # noqa: E402

try:
    from ember.testing.models import MODELS  # noqa: E402
except ImportError:
    from ember.models import MODELS  # noqa: E402


def unfused_logp(model):
    from nutpie.compile_pymc import _make_functions
    from pymc.initial_point import make_initial_point_fn
    from pymc.logprob.utils import local_check_parameter_to_ninf_switch
    from pytensor.compile.mode import Mode
    from pytensor.graph.rewriting.basic import in2out
    from pytensor.graph.rewriting.db import RewriteDatabaseQuery

    point_fn = make_initial_point_fn(model=model, default_strategy="support_point",
                                     jitter_rvs=set(model.free_RVs), return_transformed=True)
    mode = Mode(linker="py", optimizer=RewriteDatabaseQuery(include=[])).register(
        (in2out(local_check_parameter_to_ninf_switch), -1))
    res = _make_functions(model, mode=mode, compute_grad=True, join_expanded=True,
                          pymc_initial_point_fn=point_fn)
    return res[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="models to export (default: all)")
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "models_unfused"))
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    os.makedirs(args.out, exist_ok=True)
    for name in args.names or MODELS:
        fn = unfused_logp(MODELS[name]())
        doc, payload = ember.export_graph(fn, name=name, output_names=["logp", "grad"])
        data = ember.dumps(doc, payload, binary=True)
        with open(os.path.join(args.out, f"{name}.embg"), "wb") as f:
            f.write(data)
        counts = collections.Counter(n["op"] if n["op"] != "Elemwise" else
                                     "Elemwise/" + n["attrs"]["scalar_op"]["op"] for n in doc["nodes"])
        ops = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        print(f"{name}: {len(doc['nodes'])} nodes, {len(doc['variables'])} variables, {len(data)} bytes\n  {ops}",
              flush=True)


if __name__ == "__main__":
    main()
