"""Model to first draw, in fresh processes; and the steady-state cost of each graph preparation.

    python bench/driver/startup.py startup [--sizes 6x8,15x20,18x24] [--reps 3] [--out FILE.json]
    python bench/driver/startup.py throughput [--models radon,seed_lognormal,...] [--out FILE.json]

startup: the hierarchical LogNormal model (ember.models, groups x shared
parameters) from a built pm.Model to nutpie's first draw, per run in a fresh
process: ember cold (empty program and JIT caches), ember warm (the program
cache filled by an untimed run), nutpie's numba backend cold (empty numba and
PyTensor caches). Medians of --reps runs; ember's stage breakdown is
`compiled.timings`; RSS growth is the peak RSS minus the RSS after importing
pymc, nutpie and the backend.

throughput: per model, ember Programs of both preparations ("stabilize",
"fast_run") timed from one C loop over the nutpie-ABI pointer (ctimer.py),
alternating short batches; the median ns per logp+gradient call of each.

Run with the primary stack, e.g.
  EMBER_NATIVE_DIR=build/py313/python/ember PYTHONPATH=python /tmp/v313/bin/python bench/driver/startup.py startup
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _rss_kb(field="VmRSS"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def child(args):
    """One run: prints a JSON line."""
    import pymc  # noqa: F401
    import nutpie

    if args.backend == "ember":
        import ember.nutpie as enutpie  # noqa: F401
        from ember import native  # noqa: F401
    else:
        import numba  # noqa: F401
    from ember.testing import models

    base_kb = _rss_kb()
    groups, shared = args.size
    model = models.seed_lognormal(seed=0, groups=groups, shared=shared)
    t0 = time.perf_counter()
    if args.backend == "ember":
        compiled = enutpie.compile_pymc_model(model)
    else:
        compiled = nutpie.compile_pymc_model(model, backend="numba")
    t1 = time.perf_counter()
    trace = nutpie.sample(compiled, draws=1, tune=1, chains=1, cores=1, seed=1, progress_bar=False)
    t2 = time.perf_counter()
    assert trace.posterior.sizes["draw"] == 1
    out = {"backend": args.backend, "size": f"{groups}x{shared}", "compile_s": t1 - t0,
           "first_draw_s": t2 - t0, "rss_growth_mb": (_rss_kb("VmHWM") - base_kb) / 1024.0,
           "base_rss_mb": base_kb / 1024.0}
    if args.backend == "ember":
        out["timings"] = {k: v for k, v in compiled.timings.items()}
    print("RESULT " + json.dumps(out), flush=True)


def _run_child(backend, size, env):
    cmd = [sys.executable, os.path.abspath(__file__), "child", "--backend", backend, "--size", f"{size[0]}x{size[1]}"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{backend} {size}: {out.stderr[-3000:]}")
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def _fresh_env(tmp, **extra):
    env = dict(os.environ, **extra)
    env["NUMBA_CACHE_DIR"] = os.path.join(tmp, "numba")
    env["PYTENSOR_FLAGS"] = f"compiledir={os.path.join(tmp, 'pytensor')}"
    return env


def _median_row(runs):
    row = {"compile_s": statistics.median(r["compile_s"] for r in runs),
           "first_draw_s": statistics.median(r["first_draw_s"] for r in runs),
           "rss_growth_mb": statistics.median(r["rss_growth_mb"] for r in runs), "runs": runs}
    if "timings" in runs[0]:
        keys = [k for k, v in runs[0]["timings"].items() if isinstance(v, float)]
        row["timings"] = {k: statistics.median(r["timings"].get(k, 0.0) for r in runs) for k in keys}
        row["cache_hit"] = [r["timings"]["cache_hit"] for r in runs]
    return row


def startup(args):
    results = []
    for size in args.sizes:
        for mode in ("ember cold", "ember warm", "nutpie-numba cold"):
            runs = []
            warm_dir = tempfile.mkdtemp(prefix="ember-startup-warm-")
            try:
                if mode == "ember warm":
                    _run_child("ember", size, _fresh_env(warm_dir, EMBER_CACHE_DIR=warm_dir))
                for _ in range(args.reps):
                    tmp = tempfile.mkdtemp(prefix="ember-startup-")
                    try:
                        cache = warm_dir if mode == "ember warm" else tmp
                        backend = "numba" if mode.startswith("nutpie") else "ember"
                        runs.append(_run_child(backend, size, _fresh_env(tmp, EMBER_CACHE_DIR=cache)))
                    finally:
                        shutil.rmtree(tmp, ignore_errors=True)
            finally:
                shutil.rmtree(warm_dir, ignore_errors=True)
            row = dict(_median_row(runs), size=f"{size[0]}x{size[1]}", mode=mode)
            results.append(row)
            print(_format_row(row), flush=True)
    return results


def _format_row(r):
    s = (f"{r['size']:>6} {r['mode']:<18} first draw {r['first_draw_s']:7.2f} s  compile {r['compile_s']:7.2f} s  "
         f"RSS growth {r['rss_growth_mb']:6.0f} MB")
    if "timings" in r:
        t = r["timings"]
        s += "  [" + ", ".join(f"{k} {t[k]:.2f}" for k in ("model_logp", "rewrites", "gradient", "export", "load",
                                                            "first_call", "initial_point", "cache_key") if k in t) + "]"
    return s


def throughput(args):
    sys.path.insert(0, HERE)
    import ctimer

    import ember.nutpie as enutpie
    from ember import native
    from ember.testing import models

    lib = ctimer.load()
    results = []
    for name in args.models:
        model = models.MODELS[name](seed=0)
        progs = {}
        for prep in ("stabilize", "fast_run"):
            t0 = time.perf_counter()
            c = enutpie.compile_pymc_model(model, prepare=prep, cache=False)
            progs[prep] = (c, time.perf_counter() - t0)
        x = progs["fast_run"][0].initial_point_func(0)
        callers = {p: ctimer.Caller(lib, p, native.logp_address, c.logp_program.nutpie_handle(), x)
                   for p, (c, _) in progs.items()}
        n = {p: c.batch_size() for p, c in callers.items()}
        t_end = time.perf_counter() + args.seconds
        while time.perf_counter() < t_end:  # alternate, so load changes hit both alike
            for p, c in callers.items():
                c.batch(n[p])
        row = {"model": name}
        for p, c in callers.items():
            row[p] = {"ns_per_call": statistics.median(c.wall), "nodes": progs[p][0].logp_program.num_nodes,
                      "prepare_s": progs[p][1],
                      "rewrites_s": progs[p][0].timings.get("rewrites"), "export_s": progs[p][0].timings.get("export")}
        row["stabilize_over_fast_run"] = row["stabilize"]["ns_per_call"] / row["fast_run"]["ns_per_call"]
        results.append(row)
        print(f"{name:<24} stabilize {row['stabilize']['ns_per_call'] / 1e3:9.2f} us ({row['stabilize']['nodes']} nodes, "
              f"prepare {row['stabilize']['prepare_s']:.1f} s)  fast_run {row['fast_run']['ns_per_call'] / 1e3:9.2f} us "
              f"({row['fast_run']['nodes']} nodes, prepare {row['fast_run']['prepare_s']:.1f} s)  ratio "
              f"{row['stabilize_over_fast_run']:.2f}", flush=True)
    return results


def _size(s):
    g, p = s.lower().split("x")
    return int(g), int(p)


def main(argv=None):
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("child")
    c.add_argument("--backend", choices=["ember", "numba"], required=True)
    c.add_argument("--size", type=_size, required=True)
    s = sub.add_parser("startup")
    s.add_argument("--sizes", default="6x8,15x20,18x24")
    s.add_argument("--reps", type=int, default=3)
    s.add_argument("--out")
    t = sub.add_parser("throughput")
    t.add_argument("--models", default="eight_schools_noncentered,radon,logistic_glm,seed_lognormal,seed_gamma,"
                                       "seed_lognormal_large")
    t.add_argument("--seconds", type=float, default=3.0)
    t.add_argument("--out")
    args = p.parse_args(argv)
    if args.cmd == "child":
        return child(args)
    if args.cmd == "startup":
        args.sizes = [_size(x) for x in args.sizes.split(",")]
        res = startup(args)
    else:
        args.models = args.models.split(",")
        res = throughput(args)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
