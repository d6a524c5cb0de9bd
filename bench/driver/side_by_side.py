"""Steady-state gradient throughput of ember vs nutpie's numba backend, side by side
in one process: python side_by_side.py WORKLOAD [PARAMS_JSON] [--reps N] [--warmup SECONDS]

--warmup calls ember alone in a loop for that long before timing (its JIT in
`auto` mode compiles in the background meanwhile).

Both backends are called through their nutpie logp function pointers from a
small C timing loop (no Python or ctypes per call), in alternating batches of
about 0.5 ms; each reports the median time per call over the batches. On a
shared machine the median batch is the one the scheduler did not interrupt,
which a rate over wall-clock time (child.py's Python loop) is not: that rate
falls with the machine's load, whichever backend it measures.
Also reports CPU time per call (all threads: ember may split large nodes
across cores with TBB; nutpie's numba code is single-threaded).
"""

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

TIMER_C = r"""
#include <stdint.h>
#include <time.h>
typedef int64_t (*logp_fn)(uint64_t, const double*, double*, double*, const void*);
static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
/* Calls fn n times; writes wall and process-CPU nanoseconds; returns the last rc. */
int64_t time_calls(logp_fn fn, uint64_t dim, const double* x, double* g, double* lp, const void* ud,
                   int64_t n, double* wall_ns, double* cpu_ns) {
  int64_t rc = 0;
  double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
  for (int64_t i = 0; i < n; ++i) rc |= fn(dim, x, g, lp, ud);
  *wall_ns = now(CLOCK_MONOTONIC) - w0;
  *cpu_ns = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
  return rc;
}
"""


def timer_lib():
    d = tempfile.mkdtemp(prefix="ember-timer-")
    src, so = os.path.join(d, "timer.c"), os.path.join(d, "timer.so")
    with open(src, "w") as f:
        f.write(TIMER_C)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", so, src], check=True)
    lib = ctypes.CDLL(so)
    lib.time_calls.restype = ctypes.c_int64
    lib.time_calls.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                               ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_double),
                               ctypes.POINTER(ctypes.c_double)]
    return lib


class Caller:
    def __init__(self, lib, name, address, user_data, x):
        self.lib, self.name, self.address, self.ud = lib, name, address, user_data
        self.x = np.ascontiguousarray(x, dtype="float64")
        self.grad = np.empty(len(x))
        self.logp = np.empty(1)
        self.wall, self.cpu = [], []

    def batch(self, n, record=True):
        w, c = ctypes.c_double(), ctypes.c_double()
        rc = self.lib.time_calls(self.address, len(self.x), self.x.ctypes.data, self.grad.ctypes.data,
                                 self.logp.ctypes.data, self.ud, n, ctypes.byref(w), ctypes.byref(c))
        if rc != 0:
            raise RuntimeError(f"{self.name}: logp returned {rc}")
        if record:
            self.wall.append(w.value / n)
            self.cpu.append(c.value / n)
        return w.value / n


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
    t_end = time.perf_counter() + warmup
    while time.perf_counter() < t_end:
        b.batch(200, record=False)
    logp_diff = abs(a.logp[0] - b.logp[0]) / max(1.0, abs(a.logp[0]))
    grad_diff = float(np.max(np.abs(a.grad - b.grad) / np.maximum(1.0, np.abs(a.grad))))
    sizes = {c.name: max(1, int(5e5 / max(min(c.batch(1, record=False) for _ in range(5)), 1.0))) for c in callers}
    for _ in range(reps):
        for c in callers:
            c.batch(sizes[c.name])
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
