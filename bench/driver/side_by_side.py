"""Steady-state gradient throughput of ember vs nutpie's numba backend, side by side
in one process: python side_by_side.py WORKLOAD [PARAMS_JSON] [--reps N] [--warmup SECONDS]

--warmup calls ember alone in a loop for that long before timing (its JIT in
`auto` mode compiles in the background meanwhile).

Both backends are called through their nutpie logp function pointers from a
small C timing loop (no Python or ctypes per call), in alternating batches of
about 0.5 ms; each reports the median time per call over the batches. On a
shared machine the median batch is the one the scheduler did not interrupt,
which a rate over wall-clock time (a plain Python loop) is not: that rate
falls with the machine's load, whichever backend it measures.
Also reports CPU time per call (all threads: ember may split large nodes
across cores with TBB; nutpie's numba code is single-threaded).
"""

import json
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from ctimer import Caller, load as timer_lib  # noqa: E402  (the C timing loop, shared with child.py)


def warm_up(caller, seconds):
    """Calls one backend alone for `seconds` (ember's JIT compiles in the background meanwhile)."""
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        caller.batch(200, record=False)


def agreement(a, b):
    """Relative difference of b's logp and gradient from a's at the last call."""
    logp_diff = float(abs(a.logp[0] - b.logp[0]) / max(1.0, abs(a.logp[0])))
    grad_diff = float(np.max(np.abs(a.grad - b.grad) / np.maximum(1.0, np.abs(a.grad))))
    return logp_diff, grad_diff


def alternate(callers, reps):
    """reps rounds of one ~0.5 ms batch per caller, in turn; returns the batch sizes."""
    sizes = {c.name: c.batch_size() for c in callers}
    for _ in range(reps):
        for c in callers:
            c.batch(sizes[c.name])
    return sizes


def main():
    warnings.filterwarnings("ignore")
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    reps, warmup = 201, 0.0
    if "--reps" in sys.argv:
        reps = int(sys.argv[sys.argv.index("--reps") + 1])
        args = [a for a in args if a != str(reps)]
    if "--warmup" in sys.argv:
        w = sys.argv[sys.argv.index("--warmup") + 1]
        warmup = float(w)
        args = [a for a in args if a != w]
    workload = args[0]
    params = json.loads(args[1]) if len(args) > 1 else {}
    import nutpie

    import ember.nutpie as en
    import workloads
    from ember import native

    model = workloads.build(workload, params)
    t = time.perf_counter()
    nc = nutpie.compile_pymc_model(model, backend="numba")
    t_nutpie = time.perf_counter() - t
    t = time.perf_counter()
    ec = en.compile_pymc_model(model)
    t_ember = time.perf_counter() - t
    x0 = np.asarray(nc.initial_point_func(1), dtype="float64")
    lib = timer_lib()
    callers = [Caller(lib, "nutpie-numba", nc.compiled_logp_func.address, nc.user_data.ctypes.data, x0),
               Caller(lib, "ember", native.logp_address, ec.logp_program.nutpie_handle(), x0)]
    for c in callers:
        for _ in range(20):
            c.batch(1, record=False)
    a, b = callers
    warm_up(b, warmup)
    logp_diff, grad_diff = agreement(a, b)
    sizes = alternate(callers, reps)
    res = {"workload": workloads.label(workload, params), "n_dim": len(x0), "reps": reps,
           "compile_s": {"nutpie-numba": round(t_nutpie, 2), "ember": round(t_ember, 2)},
           "logp": {"nutpie-numba": float(a.logp[0]), "ember": float(b.logp[0])},
           "rel_diff": {"logp": logp_diff, "grad_max": grad_diff}, "load_avg": os.getloadavg()}
    for c in callers:
        res[c.name] = {"median_us": float(np.median(c.wall)) / 1e3, "cpu_us": float(np.median(c.cpu)) / 1e3,
                       "batch": sizes[c.name]}
    n_us, e_us = res["nutpie-numba"]["median_us"], res["ember"]["median_us"]
    res["ember/nutpie throughput"] = n_us / e_us
    res["ember/nutpie per CPU time"] = res["nutpie-numba"]["cpu_us"] / res["ember"]["cpu_us"]
    print(json.dumps(res))


if __name__ == "__main__":
    main()
