"""One benchmark run, in a fresh process: python child.py SPEC_JSON EVENTS_FILE

Builds the model, then (clock starts) compiles it with one backend, takes the
first gradient, and keeps evaluating it to record the warm-up curve and the
steady-state rate (nutpie's and ember's function pointer from a C timing loop,
ctimer.py; PyTensor's functions from Python); optionally samples with nutpie. Every milestone is appended
to EVENTS_FILE as one JSON line at once, so a run killed by the parent's caps
still leaves what it reached.
"""

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ctimer  # noqa: E402


class Events:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def __call__(self, event, **data):
        data["event"] = event
        self.f.write(json.dumps(data) + "\n")
        self.f.flush()


def vm_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


LOGP_SIG = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_void_p)


def c_logp_caller(address, user_data_ptr, n_dim):
    """A Python callable around a nutpie-ABI logp function pointer."""
    fn = LOGP_SIG(address)
    grad = np.empty(n_dim)
    logp = np.empty(1)
    gp, lp = grad.ctypes.data, logp.ctypes.data

    def call(x):
        rc = fn(n_dim, x.ctypes.data, gp, lp, user_data_ptr)
        if rc != 0:
            raise RuntimeError(f"logp returned {rc}")
        return logp[0], grad

    return call


def nutpie_flat_point(model, seed=1):
    from pymc.initial_point import make_initial_point_fn

    return make_initial_point_fn(model=model, default_strategy="support_point", jitter_rvs=set(model.free_RVs),
                                 return_transformed=True)


# -- backends: each returns (call(x) -> (logp, grad), x0, extra dict, compiled-or-None) ---------------


def make_functions(model, mode):
    from ember._nutpie_compat import make_functions

    n_dim, _, logp_fn, _, init_fn, *_ = make_functions(
        model, mode=mode, compute_grad=True, join_expanded=True, pymc_initial_point_fn=nutpie_flat_point(model))
    return n_dim, logp_fn, init_fn


def backend_nutpie_numba(model, spec, ev):
    import nutpie

    compiled = nutpie.compile_pymc_model(model, backend="numba")
    ev("compiled", t=time.perf_counter() - T0)
    ptr = (compiled.compiled_logp_func.address, compiled.user_data.ctypes.data)
    call = c_logp_caller(*ptr, compiled.n_dim)
    x0 = np.asarray(compiled.initial_point_func(1), dtype="float64")
    return call, x0, {"ptr": ptr}, compiled


def backend_nutpie_jax(model, spec, ev):
    import nutpie

    compiled = nutpie.compile_pymc_model(model, backend="jax", gradient_backend="jax")
    ev("compiled", t=time.perf_counter() - T0)
    return None, None, {"note": "jax: sampling wall only"}, compiled


def _pytensor_backend(mode):
    def backend(model, spec, ev):
        n_dim, fn, init_fn = make_functions(model, mode)
        fn.trust_input = True
        ev("compiled", t=time.perf_counter() - T0)
        x0 = np.asarray(init_fn(1), dtype="float64")
        return (lambda x: fn(x)), x0, {}, None

    return backend


def graph_only_mode():
    """NUMBA mode's rewrites (the graph nutpie runs) without numba compilation: the Python linker."""
    from pytensor.compile.mode import Mode, get_mode

    return Mode(linker="py", optimizer=get_mode("NUMBA").provided_optimizer)


def backend_ember_cli(model, spec, ev):
    """Until ember's Python module lands: export nutpie's graph, run it with the C++ CLI."""
    import ember

    n_dim, fn, init_fn = make_functions(model, graph_only_mode())
    ev("graph_ready", t=time.perf_counter() - T0)
    tmp = tempfile.mkdtemp(prefix="ember-bench-")
    gpath = os.path.join(tmp, "model.embg")
    ember.export(fn, gpath)
    ev("exported", t=time.perf_counter() - T0, graph_bytes=os.path.getsize(gpath))
    x0 = np.asarray(init_fn(1), dtype="float64")
    xpath = os.path.join(tmp, "x.npy")
    np.save(xpath, x0)
    cli = spec["ember_cli"]
    info = subprocess.run([cli, "info", gpath], capture_output=True, text=True)
    in_name = _first_input_name(info.stdout)
    base = [cli, "run", gpath, "--input", f"{in_name}={xpath}"]
    r = subprocess.run(base + ["--repeat", "1"], capture_output=True, text=True)
    t_first = time.perf_counter() - T0
    if r.returncode != 0:
        raise RuntimeError(f"ember run failed: {r.stderr.strip()[-500:]}")
    ev("first_gradient", t=t_first, cli_line=r.stdout.strip().splitlines()[-1])
    # Steady state from the CLI's own timing loop (median call time, no Python in the loop).
    n_rep = spec.get("cli_repeat", 2000)
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb=%M"] + base + ["--repeat", str(n_rep)], capture_output=True,
                       text=True)
    last = r.stdout.strip().splitlines()[-1]
    med_us = float(last.split("median of")[1].split("calls")[1].split("us")[0])
    rss = [ln for ln in r.stderr.splitlines() if ln.startswith("maxrss_kb=")]
    ev("steady", evals_per_s=1e6 / med_us, median_us=med_us, source="ember CLI --repeat loop",
       wall_s=time.perf_counter() - t, cli_line=last, cli_maxrss_kb=int(rss[0].split("=")[1]) if rss else None)
    logp = float([ln for ln in r.stdout.splitlines() if ln.split() and ln.split()[0] != "load"][0]
                 .split("sum=")[1].split()[0])
    ev("logp_check", ember_logp=logp)
    return None, x0, {"graph": gpath}, None


def _first_input_name(info_text):
    # `ember info` lists inputs; take the first named one (nutpie's flat point).
    for line in info_text.splitlines():
        s = line.strip()
        if "_unconstrained_point" in s:
            return "_unconstrained_point"
    return "_unconstrained_point"


def backend_ember(model, spec, ev):
    """ember's Python API (ember.nutpie.compile_pymc_model); the JIT mode comes from EMBER_JIT (set by the runner)."""
    import ember.nutpie as en

    compiled = en.compile_pymc_model(model)
    ev("compiled", t=time.perf_counter() - T0, timings=getattr(compiled, "timings", None))
    from ember import native

    ptr = (native.logp_address, compiled.logp_program.nutpie_handle())
    call = c_logp_caller(*ptr, compiled.n_dim)
    x0 = np.asarray(compiled.initial_point_func(1), dtype="float64")
    return call, x0, {"ptr": ptr}, compiled


def jit_summary():
    """ember's compile-service counters, condensed (None without the JIT)."""
    try:
        from ember import native

        if not native.jit_available:
            return None
        st = native.jit_stats()
    except Exception:
        return None
    comps = st.get("composites", [])
    tiers = {}
    for c in comps:
        tiers[str(c.get("tier", 0))] = tiers.get(str(c.get("tier", 0)), 0) + 1
    cache = st.get("cache", {}) or {}
    return {"composites": len(comps), "tiers": tiers, "compiles": st.get("compiles"),
            "failures": st.get("failures"), "peak_bytes": st.get("peak_bytes"),
            "resident_code_bytes": st.get("resident_code_bytes"), "budget_bytes": st.get("budget_bytes"),
            "rejected_slower": st.get("rejected_slower"), "evictions": st.get("evictions"),
            "compile_seconds": sum(c.get("compile_seconds", 0) or 0 for c in comps),
            "cache_hits": cache.get("hits"), "cache_misses": cache.get("misses"),
            "instructions": sum(c.get("instructions", 0) or 0 for c in comps)}


BACKENDS = {
    "nutpie-numba": backend_nutpie_numba,
    "nutpie-jax": backend_nutpie_jax,
    "pytensor-numba": _pytensor_backend("NUMBA"),
    "pytensor-c": _pytensor_backend("CVM"),  # FAST_RUN is numba from PyTensor 3
    "pytensor-jax": _pytensor_backend("JAX"),
    "ember-cli": backend_ember_cli,
    "ember-nojit": backend_ember,
    "ember-auto": backend_ember,
    "ember-off": backend_ember,
    "ember-eager": backend_ember,
    "ember-warm": backend_ember,
}


def follow_s(spec):
    """How long the throughput loop runs after the first gradient: a tiered backend (ember's JIT in auto mode)
    keeps speeding up after it, so it is followed for curve_s; the others are flat after the first gradient."""
    return spec.get("curve_s", 8.0) if spec.get("tiered") else spec.get("steady_s", 2.5)


class PyCaller:
    """ctimer.Caller's interface for a Python callable (PyTensor's Function): batches timed in Python."""

    def __init__(self, fn, x):
        self.fn, self.x = fn, x
        self.wall, self.cpu = [], []

    def batch(self, n, record=True):
        fn, x = self.fn, self.x
        w0, c0 = time.perf_counter_ns(), time.process_time_ns()
        for _ in range(n):
            fn(x)
        w, c = time.perf_counter_ns() - w0, time.process_time_ns() - c0
        if record:
            self.wall.append(w / n)
            self.cpu.append(c / n)
        return w / n

    def batch_size(self, target_ns=5e5):
        return max(1, int(target_ns / max(min(self.batch(1, record=False) for _ in range(5)), 1.0)))


def throughput(caller, ev, spec, t_first, source):
    """Warm-up curve and steady state from batches of ~0.5 ms of back-to-back calls.

    One curve point per bin_s of wall time since T0: [t, evaluations/s of the bin's median batch, evaluations/s
    over the bin's wall time]. Steady = the median batch over the last steady_window_s. On a shared machine
    the median batch is one the scheduler did not interrupt; the wall-clock rate falls with the load."""
    bin_s, window = spec.get("bin_s", 0.25), spec.get("steady_window_s", 2.0)
    until = t_first + follow_s(spec)
    track = spec["backend"].startswith("ember") and jit_summary() is not None
    tiers, next_tiers = [], 0.0
    n = caller.batch_size()
    curve, ends = [], []  # ends[i]: time since T0 at the end of batch i
    now = time.perf_counter() - T0
    while now < until:
        b0, k0, bin_end = now, len(caller.wall), now + bin_s
        while now < bin_end:
            caller.batch(n)
            now = time.perf_counter() - T0
            ends.append(now)
        per = caller.wall[k0:]
        curve.append([round(now, 4), 1e9 / float(np.median(per)), len(per) * n / (now - b0)])
        if track and now >= next_tiers:  # between bins: not inside any timed batch
            j = jit_summary()
            tiers.append([round(now, 3), j["tiers"], j["compiles"]])
            next_tiers = now + 1.0
            now = time.perf_counter() - T0
    tail = [i for i, t in enumerate(ends) if t >= until - window] or list(range(len(ends)))
    wall = float(np.median([caller.wall[i] for i in tail]))
    cpu = float(np.median([caller.cpu[i] for i in tail]))
    ev("curve", curve=curve)
    if tiers:
        ev("tier_curve", points=tiers)
    ev("steady", evals_per_s=1e9 / wall, median_us=wall / 1e3, cpu_us=cpu / 1e3, batch=n, batches=len(tail),
       window_s=window, source=source)


def ctypes_loop(call, x0, ev, secs=0.5):
    """The old method, kept as a cross-check: a Python loop of ctypes calls, rate over wall-clock time."""
    x, k, t = x0.copy(), 0, time.perf_counter()
    while time.perf_counter() - t < secs:
        call(x)
        k += 1
    ev("ctypes_loop", evals_per_s=k / (time.perf_counter() - t))


def main():
    global T0
    spec = json.loads(sys.argv[1])
    ev = Events(sys.argv[2])
    import warnings

    warnings.filterwarnings("ignore")
    t_imp = time.perf_counter()
    import pymc  # noqa: F401  (import cost is not part of the compile)
    import pytensor  # noqa: F401

    if spec["backend"].startswith("nutpie") or spec["backend"].startswith("pytensor"):
        import nutpie  # noqa: F401
    import workloads

    model = workloads.build(spec["workload"], spec["params"])
    ev("model_built", import_and_build_s=time.perf_counter() - t_imp, rss_kb=vm_kb("VmRSS"),
       n_free_rvs=len(model.free_RVs))
    timer = ctimer.load()  # compiled by run.py once per grid (EMBER_BENCH_TIMER_SO), else here: before the clock
    T0 = time.perf_counter()
    call, x0, extra, compiled = BACKENDS[spec["backend"]](model, spec, ev)
    if call is not None:
        logp, grad = call(x0)
        t_first = time.perf_counter() - T0
        ev("first_gradient", t=t_first, logp=float(logp), n_dim=int(len(grad)))
        if "ptr" in extra:  # nutpie's and ember's nutpie-ABI function pointer
            throughput(ctimer.Caller(timer, spec["backend"], *extra["ptr"], x0), ev, spec, t_first,
                       "C timing loop over the nutpie-ABI function pointer")
            ctypes_loop(call, x0, ev)
        else:
            throughput(PyCaller(call, x0), ev, spec, t_first, "Python loop of the compiled PyTensor function")
    if spec["backend"].startswith("ember"):
        j = jit_summary()
        if j is not None:
            ev("jit_stats", **j)
    ev("rss", vm_hwm_kb=vm_kb("VmHWM"), vm_peak_kb=vm_kb("VmPeak"))
    if spec.get("sample") and compiled is not None:
        import nutpie

        t = time.perf_counter()
        nutpie.sample(compiled, chains=4, tune=1000, draws=1000, cores=2, progress_bar=False, seed=1)
        ev("sampled", sample_s=time.perf_counter() - t, wall_incl_compile_s=time.perf_counter() - T0)
        j = jit_summary() if spec["backend"].startswith("ember") else None
        if j is not None:
            ev("jit_stats_after_sample", **j)
        ev("rss", vm_hwm_kb=vm_kb("VmHWM"), vm_peak_kb=vm_kb("VmPeak"))
    ev("done", t=time.perf_counter() - T0)


T0 = 0.0
if __name__ == "__main__":
    main()
