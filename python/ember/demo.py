"""`python -m ember demo`: sample the seed report's hierarchical LogNormal
model with nutpie running on Ember.

Shows the time from a built PyMC model to its first gradient, a live status
line while sampling and a posterior summary. `--compare` also measures
nutpie's numba backend on the same model; each backend's compile time and
peak memory are measured in a fresh subprocess (cold caches for both).
"""

import argparse
import ctypes
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

LOGP_SIG = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_uint64, ctypes.POINTER(ctypes.c_double),
                            ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double), ctypes.c_void_p)


def call_logp(address, user_data, x):
    """One call through a nutpie-style logp pointer: (rc, logp, grad)."""
    x = np.ascontiguousarray(x, dtype="float64")
    grad = np.empty_like(x)
    logp = ctypes.c_double(0.0)
    fn = LOGP_SIG(address)
    rc = fn(x.size, x.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
            grad.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), ctypes.byref(logp), user_data)
    return rc, logp.value, grad


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return peak_rss_mb()


def build_model(args):
    from .testing.models import seed_lognormal

    return seed_lognormal(seed=args.seed, groups=args.groups, shared=args.shared,
                          n_per_group=args.n_per_group)


def compile_backend(model, backend):
    """(compiled model, logp address, user_data) for 'ember' or 'numba'."""
    if backend == "ember":
        from . import native
        from .nutpie import compile_pymc_model

        compiled = compile_pymc_model(model)
        return compiled, native.logp_address, compiled.logp_program.nutpie_handle()
    import nutpie

    compiled = nutpie.compile_pymc_model(model, backend="numba")
    return compiled, compiled.compiled_logp_func.address, compiled.user_data.ctypes.data


def time_to_first_gradient(model, backend):
    t0 = time.perf_counter()
    compiled, address, user_data = compile_backend(model, backend)
    t1 = time.perf_counter()
    x0 = compiled.initial_point_func(0)
    rc, logp, _ = call_logp(address, user_data, x0)
    t2 = time.perf_counter()
    if rc != 0:
        raise RuntimeError(f"{backend}: first logp call returned {rc}")
    return compiled, {"compile_s": t1 - t0, "first_gradient_s": t2 - t0, "logp0": logp}


# -- measurement child ---------------------------------------------------------

def measure(args):
    """Runs in a fresh process: prints one JSON line for one backend."""
    import pymc  # noqa: F401  (imports are not the backend's cost)
    import pytensor  # noqa: F401

    if args.measure == "numba":
        import numba  # noqa: F401
        import nutpie  # noqa: F401
    else:
        from . import native  # noqa: F401
    model = build_model(args)
    base = current_rss_mb()
    _, stats = time_to_first_gradient(model, args.measure)
    stats.update(backend=args.measure, peak_rss_mb=peak_rss_mb(), base_rss_mb=base)
    print(json.dumps(stats))


def run_child(args, backend):
    env = dict(os.environ)
    tmp = tempfile.mkdtemp(prefix=f"ember-demo-{backend}-")
    env["NUMBA_CACHE_DIR"] = tmp  # cold caches, as the seed report measured
    env["PYTENSOR_FLAGS"] = f"compiledir={tmp}" + (("," + env["PYTENSOR_FLAGS"]) if env.get("PYTENSOR_FLAGS") else "")
    cmd = [sys.executable, "-m", "ember", "demo", "--measure", backend, "--groups", str(args.groups),
           "--shared", str(args.shared), "--n-per-group", str(args.n_per_group), "--seed", str(args.seed)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{backend} measurement failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the demo ------------------------------------------------------------------

# nutpie renders this with its template engine; the callback parses it.
_STATUS_TEMPLATE = ("{{ total_finished_draws }} {{ total_draws }} {{ finished_chains }} "
                    "{% for chain in chains %}{{ chain.divergences }} {% endfor %}")


class StatusLine:
    def __init__(self, program, stream=sys.stdout):
        self.program, self.stream = program, stream
        self.t_last, self.calls_last = time.perf_counter(), program.nutpie_calls()
        self.rate = 0.0
        self.jit = bool(program.options.get("jit_active"))
        self.last = ""

    def tiers(self):
        """'interpreter', or Composites per tier and JIT memory against its budget."""
        if not self.jit:
            return "tier: interpreter"
        from . import native

        st = native.jit_stats()
        per = [0, 0, 0]
        for c in st.get("composites", []):
            per[min(max(int(c.get("tier", 0)), 0), 2)] += 1
        mb = 1 << 20
        return (f"Composites interp/T1/T2 {per[0]}/{per[1]}/{per[2]}  JIT memory "
                f"{st.get('resident_code_bytes', 0) / 1024:.0f} KB code, peak {st.get('peak_bytes', 0) / mb:.0f}"
                f"/{st.get('budget_bytes', 0) / mb:.0f} MB budget")

    def __call__(self, text):
        try:
            parts = text.split()
            done, total = int(parts[0]), int(parts[1])
            divs = sum(int(p) for p in parts[3:])
        except (ValueError, IndexError):
            return
        now, calls = time.perf_counter(), self.program.nutpie_calls()
        if now - self.t_last > 0.05:
            self.rate = (calls - self.calls_last) / (now - self.t_last)
            self.t_last, self.calls_last = now, calls
        self.last = (f"draws {done}/{total}  divergences {divs}  gradients/s {self.rate:,.0f}  "
                     f"total gradients {calls:,}  {self.tiers()}")
        self.stream.write("\r" + self.last.ljust(110))
        self.stream.flush()


def demo(args):
    import arviz as az
    import nutpie

    print(f"model: seed LogNormal, {args.groups} groups x {args.n_per_group} obs, {args.shared} shared "
          f"parameters (python/ember/testing/models.py)")
    t_build = time.perf_counter()
    model = build_model(args)
    t_built = time.perf_counter()
    compiled, stats = time_to_first_gradient(model, "ember")
    tm = compiled.timings
    print(f"built the PyMC model in {t_built - t_build:.2f} s; from model to first gradient "
          f"{stats['first_gradient_s']:.2f} s")
    stages = ("cache_key", "initial_point", "model_logp", "rewrites", "gradient", "export", "load", "first_call")
    print("stages (s): " + ", ".join(f"{k} {tm[k]:.3f}" for k in stages if k in tm)
          + f"; program cache {'hit' if tm['cache_hit'] else 'miss'}")
    opts = compiled.logp_program.options
    jit = (f"JIT {opts['jit']}, budget {opts['jit_memory'] >> 20} MB" if opts["jit_active"]
           else "interpreter only (JIT " + ("off)" if _jit_available() else "not built)"))
    print(f"logp graph: {compiled.logp_program.num_nodes} nodes, {compiled.n_dim} parameters; {jit}")

    status = StatusLine(compiled.logp_program)
    t0 = time.perf_counter()
    trace = nutpie.sample(compiled.with_progress(_STATUS_TEMPLATE, status, 200), draws=args.draws,
                          tune=args.tune, chains=args.chains, cores=args.cores, seed=args.seed)
    dt = time.perf_counter() - t0
    calls = compiled.logp_program.nutpie_calls()
    print(f"\rsampled {args.chains} chains x {args.tune}+{args.draws} in {dt:.1f} s, {calls:,} gradients "
          f"({calls / dt:,.0f}/s)".ljust(100))
    summary = az.summary(trace, var_names=[v for v in trace.posterior.data_vars
                                           if v.startswith(("theta_", "cv_")) and not v.endswith("__")],
                         kind="all", round_to=3)
    print(summary.to_string())
    divs = int(trace.sample_stats["diverging"].sum())
    print(f"divergences after tuning: {divs}")
    if status.jit:
        print("after sampling: " + status.tiers())

    if args.compare:
        print("\ncompare (each backend in a fresh process, cold caches; growth = peak RSS minus RSS "
              "after importing PyMC and building the model):")
        rows = [run_child(args, b) for b in ("ember", "numba")]
        print(f"{'backend':<8} {'compile s':>10} {'first grad s':>13} {'peak RSS MB':>12} {'growth MB':>10}")
        for r in rows:
            print(f"{r['backend']:<8} {r['compile_s']:>10.2f} {r['first_gradient_s']:>13.2f} "
                  f"{r['peak_rss_mb']:>12.0f} {r['peak_rss_mb'] - r['base_rss_mb']:>10.0f}")
        ratio = rows[1]["first_gradient_s"] / max(rows[0]["first_gradient_s"], 1e-9)
        print(f"numba / ember time to first gradient: {ratio:.1f}x "
              f"(logp at the start: ember {rows[0]['logp0']:.6f}, numba {rows[1]['logp0']:.6f})")


def _jit_available():
    from . import native

    return bool(native.jit_available)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m ember")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="sample the seed LogNormal model with nutpie on ember")
    d.add_argument("--compare", action="store_true", help="also measure nutpie's numba backend")
    d.add_argument("--groups", type=int, default=6)
    d.add_argument("--shared", type=int, default=8)
    d.add_argument("--n-per-group", type=int, default=20)
    d.add_argument("--draws", type=int, default=500)
    d.add_argument("--tune", type=int, default=500)
    d.add_argument("--chains", type=int, default=2)
    d.add_argument("--cores", type=int, default=2)
    d.add_argument("--seed", type=int, default=1)
    d.add_argument("--measure", choices=["ember", "numba"], help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.measure:
        measure(args)
    else:
        demo(args)


if __name__ == "__main__":
    main()
