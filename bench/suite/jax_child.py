"""nutpie-JAX on one suite model, in .venv-jax: python jax_child.py MODEL STATE_JSON

Compiles MODEL with nutpie's JAX backend (JAX's own gradient, as
bench/driver/startup.py does) and times the function nutpie's sampler calls,
`make_logp_func()(x, **shared)`, at its own initial point (the JAX model
orders the variables differently from the numba one, so its jittered point
is not theirs): median per call over 151 batches of ~0.5 ms. That function
is Python around a jitted XLA call, as nutpie calls it, so the figure
includes the Python dispatch nutpie pays. It runs in its own process and venv, so it is not interleaved with the
other backends: its ratios are across processes.
"""

import json
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

REPS = 151
TARGET_S = 5e-4


def main():
    warnings.filterwarnings("ignore")
    name, state_path = sys.argv[1:3]
    import jax
    import models
    import nutpie

    res = {"versions": {"jax": jax.__version__, "nutpie": nutpie.__version__}}
    model = models.build(name)
    t = time.perf_counter()
    jc = nutpie.compile_pymc_model(model, backend="jax", gradient_backend="jax")
    x0 = np.asarray(jc._make_initial_points(1), dtype="float64")
    logp = jc._make_logp_func()
    shared = jc._shared_data
    lp, grad = logp(x0, **shared)
    res.update(compile_s=time.perf_counter() - t, logp=lp, grad_norm=float(np.linalg.norm(grad)))
    for _ in range(20):
        logp(x0, **shared)
    one = min(_timed(logp, x0, shared, 1)[0] for _ in range(5))
    n = max(1, int(TARGET_S / max(one, 1e-7)))
    wall, cpu = zip(*(_timed(logp, x0, shared, n) for _ in range(REPS)))
    res.update(median_us=float(np.median(wall)) * 1e6, cpu_us=float(np.median(cpu)) * 1e6, batch=n, status="ok")
    with open(state_path, "w") as f:
        json.dump(res, f)


def _timed(fn, x, shared, n):
    w, c = time.perf_counter(), time.process_time()
    for _ in range(n):
        fn(x, **shared)
    return (time.perf_counter() - w) / n, (time.process_time() - c) / n


if __name__ == "__main__":
    main()
