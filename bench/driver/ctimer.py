"""A C timing loop over a nutpie-ABI logp function pointer (no Python or ctypes per call).

`build(dir)` compiles it once (run.py does so per grid and passes the .so to every child in
EMBER_BENCH_TIMER_SO); `load()` opens it, compiling into a temp dir when no path is given.
`Caller.batch(n)` times n back-to-back calls and returns the wall time per call; the median of many
short batches is the rate of a batch the scheduler did not interrupt, which a rate over wall-clock
time is not on a shared machine.
"""

import ctypes
import os
import subprocess
import tempfile

import numpy as np

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

ENV = "EMBER_BENCH_TIMER_SO"


def build(directory=None):
    """Compiles the timer; returns the .so path."""
    d = directory or tempfile.mkdtemp(prefix="ember-timer-")
    src, so = os.path.join(d, "timer.c"), os.path.join(d, "timer.so")
    with open(src, "w") as f:
        f.write(TIMER_C)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", so, src], check=True)
    return so


def load(path=None):
    path = path or os.environ.get(ENV) or build()
    lib = ctypes.CDLL(path)
    lib.time_calls.restype = ctypes.c_int64
    lib.time_calls.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                               ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_double),
                               ctypes.POINTER(ctypes.c_double)]
    return lib


class Caller:
    """Times batches of calls of one logp function pointer at one point x."""

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

    def batch_size(self, target_ns=5e5):
        """Calls per batch of about target_ns (from the fastest of 5 single calls)."""
        return max(1, int(target_ns / max(min(self.batch(1, record=False) for _ in range(5)), 1.0)))
