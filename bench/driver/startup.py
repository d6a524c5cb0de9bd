"""Model to first gradient and to nutpie's first draw, cold and warm, in fresh processes; the report of it.

    python bench/driver/startup.py startup [--workloads seed:6x8,seed:15x20,radon,eight_schools]
        [--backends ember,ember-stabilize,ember-fast_run,numba,jax] [--reps 3] [--out bench/results/startup.json]
    python bench/driver/startup.py report [--results bench/results/startup.json] [--md docs/benchmarks.md]

startup: per workload (the seed grid's hierarchical LogNormal, `seed:GROUPSxSHARED`; radon; eight schools,
non-centered; all from ember.testing.models; or `suite:NAME`, a model of bench/suite/models.py) and repetition, each backend in turn (the order rotates per
repetition) runs twice in fresh processes: "cold" with empty caches (EMBER_CACHE_DIR, NUMBA_CACHE_DIR, PyTensor's
compiledir and JAX's compilation cache in a new temporary directory), then "warm" with the caches the cold run
filled. Backends: `ember` (ember.nutpie.compile_pymc_model, its default preparation, "native": Ember differentiates
model.logp()), `ember-native`, `ember-stabilize` and `ember-fast_run` (the same with that prepare: "stabilize" is
PyTensor's gradient, "fast_run" PyTensor's fast_run pass; cold only), `numba` and `jax` (nutpie.compile_pymc_model with
that backend; JAX runs in .venv-jax, made by bench/driver/setup-jax.sh, and is skipped when that is absent).
A child times, from a built pm.Model: ttfg = compile plus one logp+gradient call at the initial point;
first draw = that plus nutpie.sample(draws=1, tune=1, chains=1). RSS growth = peak RSS minus the RSS after
importing pymc, nutpie and the backend. Ember's stage breakdown is `compiled.timings`. Every run is appended to
--out as it ends, so sizes can be added by later invocations; `report` takes medians of the primary stack's runs
and writes the "Startup: model to first draw" section of docs/benchmarks.md between its markers.

(The steady-state cost of each preparation, side by side: bench/suite/prepare_ab.py.)

Run with the primary stack, e.g.
  EMBER_NATIVE_DIR=build/jit/python/ember PYTHONPATH=python .venv/bin/python bench/driver/startup.py startup
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RESULTS = os.path.join(ROOT, "bench", "results", "startup.json")
JAX_PYTHON = os.path.join(ROOT, ".venv-jax", "bin", "python")
MODES = {"ember": ("cold", "warm"), "ember-native": ("cold",), "ember-stabilize": ("cold",), "ember-fast_run": ("cold",),
         "numba": ("cold", "warm"), "jax": ("cold", "warm")}
EMBER_BACKENDS = ("ember", "ember-native", "ember-stabilize", "ember-fast_run")
EMBER_OWN = ("cache_key", "export", "cache_store", "load", "first_call")
BEGIN, END = "<!-- startup:begin -->", "<!-- startup:end -->"


def _rss_kb(field="VmRSS"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _build(workload):
    from ember.testing import models

    if workload.startswith("seed:"):
        groups, shared = _size(workload[5:])
        return models.seed_lognormal(seed=0, groups=groups, shared=shared)
    if workload.startswith("suite:"):
        sys.path.insert(0, os.path.join(ROOT, "bench", "suite"))
        import models as suite

        return suite.build(workload[6:])
    return {"radon": models.radon, "eight_schools": models.eight_schools_noncentered}[workload](seed=0)


def child(args):
    """One run: prints a JSON line."""
    import numpy as np
    import pymc
    import nutpie

    versions = {"python": platform.python_version(), "pymc": pymc.__version__, "nutpie": nutpie.__version__}
    if args.backend.startswith("ember"):
        import ember.nutpie as enutpie
        from ember import native  # noqa: F401
    elif args.backend == "numba":
        import numba
        versions["numba"] = numba.__version__
    else:
        import jax
        versions["jax"] = jax.__version__
    import pytensor
    versions["pytensor"] = pytensor.__version__

    base_kb = _rss_kb()
    model = _build(args.workload)
    t0 = time.perf_counter()
    if args.backend.startswith("ember"):
        prepare = args.backend[len("ember-"):] if args.backend.startswith("ember-") else None
        compiled = enutpie.compile_pymc_model(model, prepare=prepare)  # ends with one logp+gradient call
    elif args.backend == "numba":
        sys.path.insert(0, HERE)
        from child import c_logp_caller

        compiled = nutpie.compile_pymc_model(model, backend="numba")
        x0 = np.asarray(compiled.initial_point_func(1), dtype="float64")
        c_logp_caller(compiled.compiled_logp_func.address, compiled.user_data.ctypes.data, compiled.n_dim)(x0)
    else:
        compiled = nutpie.compile_pymc_model(model, backend="jax", gradient_backend="jax")
        x0 = np.asarray(compiled._make_initial_points(1), dtype="float64")
        compiled._make_logp_func()(x0, **compiled._shared_data)
    t1 = time.perf_counter()
    trace = nutpie.sample(compiled, draws=1, tune=1, chains=1, cores=1, seed=1, progress_bar=False)
    t2 = time.perf_counter()
    assert trace.posterior.sizes["draw"] == 1
    out = {"backend": args.backend, "workload": args.workload, "ttfg_s": t1 - t0, "first_draw_s": t2 - t0,
           "rss_growth_mb": (_rss_kb("VmHWM") - base_kb) / 1024.0, "base_rss_mb": base_kb / 1024.0,
           "versions": versions}
    if args.backend.startswith("ember"):
        out["timings"] = dict(compiled.timings)
        out["prepare"] = prepare or enutpie.DEFAULT_PREPARE
    print("RESULT " + json.dumps(out), flush=True)


def _run_child(backend, workload, env, timeout):
    python = JAX_PYTHON if backend == "jax" else sys.executable
    cmd = [python, os.path.abspath(__file__), "child", "--backend", backend, "--workload", workload]
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if out.returncode != 0:
        return {"error": out.stderr.strip()[-2000:]}
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
    return dict(json.loads(line[len("RESULT "):]), process_s=time.perf_counter() - t0)


def _cache_env(tmp):
    env = dict(os.environ, EMBER_CACHE_DIR=os.path.join(tmp, "ember"), NUMBA_CACHE_DIR=os.path.join(tmp, "numba"),
               PYTENSOR_FLAGS=f"compiledir={os.path.join(tmp, 'pytensor')}", JAX_PLATFORMS="cpu",
               JAX_COMPILATION_CACHE_DIR=os.path.join(tmp, "jax"), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    return env


def _append(path, run):
    import fcntl

    with open(path + ".lock", "w") as lock:  # another stack's invocation may append at the same time
        fcntl.flock(lock, fcntl.LOCK_EX)
        doc = json.load(open(path)) if os.path.exists(path) else {"runs": []}
        doc["runs"].append(run)
        with open(path + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(path + ".tmp", path)


def startup(args):
    backends = list(args.backends)
    if "jax" in backends and not os.path.exists(JAX_PYTHON):
        print(f"nutpie-JAX skipped: {JAX_PYTHON} not found (bench/driver/setup-jax.sh makes it)", flush=True)
        backends.remove("jax")
    for workload in args.workloads:
        for rep in range(args.first_rep, args.first_rep + args.reps):
            k = rep % len(backends)
            for backend in backends[k:] + backends[:k]:  # rotate, so load drifts hit every backend alike
                tmp = tempfile.mkdtemp(prefix="ember-startup-")
                try:
                    for mode in MODES[backend]:
                        load = os.getloadavg()[0]
                        r = _run_child(backend, workload, _cache_env(tmp), args.timeout)
                        r.update(backend=backend, workload=workload, mode=mode, rep=rep, load_before=load,
                                 at=time.strftime("%Y-%m-%dT%H:%M:%S"))
                        _append(args.out, r)
                        print(_format_run(r), flush=True)
                        if "error" in r:
                            break
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)


def _format_run(r):
    head = f"{r['workload']:>10} {r['backend']:<15} {r['mode']:<4} rep {r['rep']}"
    if "error" in r:
        return f"{head}  FAILED: {r['error'][-300:]}"
    s = (f"{head}  ttfg {r['ttfg_s']:7.2f} s  first draw {r['first_draw_s']:7.2f} s  "
         f"RSS growth {r['rss_growth_mb']:6.0f} MB  (load {r['load_before']:.1f})")
    if "timings" in r:
        t = r["timings"]
        s += "  [" + ", ".join(f"{k} {t[k]:.2f}" for k in ("model_logp", "rewrites", "gradient", "initial_point",
                                                            "export", "load", "first_call", "cache_key") if k in t)
        s += ", hit]" if t.get("cache_hit") else "]"
    return s


# -- report ---------------------------------------------------------------------------------------------------


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _rows(runs):
    """(workload, backend, mode) -> medians."""
    groups = {}
    for r in runs:
        if "error" not in r:
            groups.setdefault((r["workload"], r["backend"], r["mode"]), []).append(r)
    rows = {}
    for key, rs in groups.items():
        row = {f: _median(r[f] for r in rs) for f in ("ttfg_s", "first_draw_s", "rss_growth_mb")}
        row["n"] = len(rs)
        if "timings" in rs[0]:
            keys = sorted({k for r in rs for k, v in r["timings"].items() if isinstance(v, float)})
            row["timings"] = {k: _median(r["timings"].get(k) for r in rs) for k in keys}
            row["pytensor_s"] = _median(sum(r["timings"].get(k, 0.0) for k in ("model_logp", "rewrites", "gradient"))
                                        for r in rs)
            row["own_s"] = _median(sum(r["timings"].get(k, 0.0) for k in EMBER_OWN) for r in rs)
            row["own_share"] = _median(sum(r["timings"].get(k, 0.0) for k in EMBER_OWN) / r["first_draw_s"]
                                       for r in rs)
            row["cold_ratio"] = _median(r["first_draw_s"] / sum(r["timings"].get(k, 0.0) for k in
                                                                ("model_logp", "rewrites", "gradient")) for r in rs
                                        if not r["timings"].get("cache_hit"))
            row["hits"] = sum(1 for r in rs if r["timings"].get("cache_hit"))
        rows[key] = row
    return rows


def _workload_order(w):
    if w.startswith("seed:"):
        g, p = _size(w[5:])
        return (0, g * p)
    return (1, w)


def _f(x, fmt="{:.2f}"):
    return "–" if x is None else fmt.format(x)


def report(args):
    doc = json.load(open(args.results))
    runs = [r for r in doc["runs"] if r.get("versions", {}).get("python", "").startswith(args.python)]
    other = [r for r in doc["runs"] if r not in runs and "error" not in r]
    rows = _rows(runs)
    workloads = sorted({w for w, _, _ in rows}, key=_workload_order)
    backends = [b for b in MODES if any(k[1] == b for k in rows)]
    v = next(r["versions"] for r in runs if "versions" in r and r["backend"] == "numba")
    jv = next((r["versions"]["jax"] for r in runs if "jax" in r.get("versions", {})), None)
    loads = [r["load_before"] for r in runs]
    at = sorted(r["at"] for r in runs)
    L = [BEGIN, "## Startup: model to first draw", "",
         "Generated by `PYTHONPATH=python .venv/bin/python bench/driver/startup.py report` from "
         "`bench/results/startup.json`, which `bench/driver/startup.py startup` appends its runs to (JAX: "
         "`bench/driver/setup-jax.sh` makes `.venv-jax`); findings by hand in `bench/results/startup_notes.md`. "
         "Do not edit by hand.", "",
         f"Stack: Python {v['python']}, PyMC {v['pymc']}, PyTensor {v['pytensor']}, nutpie {v['nutpie']}, "
         f"numba {v['numba']}" + (f", JAX {jv}" if jv else ", JAX not installed") + f". Runs {at[0]} – {at[-1]}; "
         f"2 cores shared with other jobs, load average (1 min) before a run median {statistics.median(loads):.1f}, "
         f"max {max(loads):.1f}: absolute times are inflated, backends run interleaved so the ratios are the "
         "useful figures.", "",
         "Method: every run is a fresh process from a built `pm.Model`. **cold**: empty caches (ember's program "
         "cache, numba's cache, PyTensor's compiledir, JAX's compilation cache, all in a new temporary directory); "
         "**warm**: a second process on the same model with the caches the cold run filled. **ttfg**: compile and "
         "one logp+gradient call at the initial point; **first draw**: that plus `nutpie.sample(draws=1, tune=1, "
         "chains=1)`. **RSS growth**: peak RSS minus RSS after importing pymc, nutpie and the backend. "
         "`ember` is `ember.nutpie.compile_pymc_model` with its default preparation, which each run records as "
         "`prepare` (runs without the field used `\"stabilize\"`): `\"native\"`, `model.logp()` as PyMC builds "
         "it, differentiated and stabilized in ember's loader, or `\"stabilize\"`, PyTensor's canonicalize, "
         "stabilize, `pt.grad` and specialize, the rest in ember's loader; `ember-native` and `ember-stabilize` "
         "name one; `ember-fast_run` is `prepare=\"fast_run\"` (PyTensor's whole fast_run pass). Medians over "
         "`n` runs.", "",
         "| workload | backend | mode | n | ttfg s | first draw s | RSS growth MB |", "|---|---|---|---|---|---|---|"]
    for w in workloads:
        for b in backends:
            for m in MODES[b]:
                r = rows.get((w, b, m))
                if r:
                    L.append(f"| {w} | {b} | {m} | {r['n']} | {_f(r['ttfg_s'])} | {_f(r['first_draw_s'])} | "
                             f"{_f(r['rss_growth_mb'], '{:.0f}')} |")
    stages = ("model_logp", "rewrites", "gradient", "initial_point", "cache_key", "export", "cache_store", "load",
              "first_call")
    L += ["", "### Where ember's time goes (medians, seconds)", "",
          "`compiled.timings`; **sampler** = first draw minus ttfg (nutpie's sampler set-up and one draw); "
          "**ember's own** = " + " + ".join(f"`{s}`" for s in EMBER_OWN) + ".", "",
          "| workload | backend | mode | " + " | ".join(stages) + " | ember's own | sampler | first draw |",
          "|---" * (len(stages) + 6) + "|"]
    for w in workloads:
        for b in EMBER_BACKENDS:
            for m in MODES[b]:
                r = rows.get((w, b, m))
                if r:
                    t = r["timings"]
                    L.append(f"| {w} | {b} | {m} | " + " | ".join(_f(t.get(s), "{:.3f}") for s in stages) +
                             f" | {_f(r['own_s'], '{:.3f}')} | {_f(r['first_draw_s'] - r['ttfg_s'])} | "
                             f"{_f(r['first_draw_s'])} |")
    L += ["", "### Against the goals", "",
          "**cold** = ember cold first draw / (its `model_logp` + `rewrites` + `gradient`), goal ≤ 1.15; "
          "**own** = ember's own share of the cold first draw, goal ≤ 10 %; **warm** = ember warm first draw / "
          "nutpie-numba warm first draw, goal ≤ 0.01 (and against numba cold); **RSS** = ember cold RSS growth / "
          "nutpie-numba cold RSS growth, goal ≤ 0.2. Also the cold first draw against nutpie-numba and nutpie-JAX "
          "(< 1: ember faster). **warm ttfg** compares the times to first gradient, without nutpie's sampler.", "",
          "| workload | backend | cold | own | warm / numba warm | warm / numba cold | warm ttfg / numba warm ttfg | "
          "RSS | cold / numba cold | cold / JAX cold | warm / JAX warm |", "|---|---|---|---|---|---|---|---|---|---|---|"]

    def ratio(a, b, fmt="{:.2f}"):
        return "–" if a is None or b is None else fmt.format(a / b)

    for w in workloads:
        nc, nw = rows.get((w, "numba", "cold"), {}), rows.get((w, "numba", "warm"), {})
        jc, jw = rows.get((w, "jax", "cold"), {}), rows.get((w, "jax", "warm"), {})
        for b in EMBER_BACKENDS:
            c = rows.get((w, b, "cold"))
            if not c:
                continue
            wm = rows.get((w, b, "warm"), {})
            L.append(f"| {w} | {b} | {_f(c['cold_ratio'])} | {_f(100 * c['own_share'], '{:.1f} %')} | "
                     f"{ratio(wm.get('first_draw_s'), nw.get('first_draw_s'), '{:.3f}')} | "
                     f"{ratio(wm.get('first_draw_s'), nc.get('first_draw_s'), '{:.3f}')} | "
                     f"{ratio(wm.get('ttfg_s'), nw.get('ttfg_s'), '{:.3f}')} | "
                     f"{ratio(c['rss_growth_mb'], nc.get('rss_growth_mb'))} | "
                     f"{ratio(c['first_draw_s'], nc.get('first_draw_s'))} | "
                     f"{ratio(c['first_draw_s'], jc.get('first_draw_s'))} | "
                     f"{ratio(wm.get('first_draw_s'), jw.get('first_draw_s'), '{:.3f}')} |")
    if args.notes and os.path.exists(args.notes):
        L += ["", open(args.notes).read().strip()]
    if other:
        ov = other[0]["versions"]
        L += ["", f"Compatibility stack (Python {ov['python']}, PyMC {ov['pymc']}, PyTensor {ov['pytensor']}, "
                  f"nutpie {ov['nutpie']}): the same script, once per backend, not in the tables above:", ""]
        L += [f"* {r['workload']} {r['backend']} {r['mode']}: ttfg {r['ttfg_s']:.2f} s, first draw "
              f"{r['first_draw_s']:.2f} s, RSS growth {r['rss_growth_mb']:.0f} MB" for r in other]
    failed = [r for r in doc["runs"] if "error" in r]
    if failed:
        L += ["", "Failed runs:", ""] + [f"* {r['workload']} {r['backend']} {r['mode']} rep {r['rep']}: "
                                          f"{r['error'].splitlines()[-1][:200]}" for r in failed]
    L.append(END)
    block = "\n".join(L) + "\n"
    text = open(args.md).read()
    if BEGIN in text and END in text:
        text = text.split(BEGIN, 1)[0] + block + text.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    with open(args.md, "w") as f:
        f.write(text)
    print("wrote", args.md)


def _size(s):
    g, p = s.lower().split("x")
    return int(g), int(p)


def main(argv=None):
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("child")
    c.add_argument("--backend", choices=list(MODES), required=True)
    c.add_argument("--workload", required=True)
    s = sub.add_parser("startup")
    s.add_argument("--workloads", default="seed:6x8,radon,eight_schools,seed:15x20,seed:18x24,seed:36x48")
    s.add_argument("--backends", default="ember,ember-stabilize,ember-fast_run,numba,jax")
    s.add_argument("--reps", type=int, default=3)
    s.add_argument("--first-rep", type=int, default=0, help="number of the first repetition (when adding runs)")
    s.add_argument("--timeout", type=float, default=1800)
    s.add_argument("--out", default=RESULTS)
    r = sub.add_parser("report")
    r.add_argument("--results", default=RESULTS)
    r.add_argument("--md", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    r.add_argument("--python", default="3.13", help="the primary stack's Python version prefix")
    r.add_argument("--notes", default=os.path.join(ROOT, "bench", "results", "startup_notes.md"),
                   help="hand-written findings appended to the section")
    args = p.parse_args(argv)
    if args.cmd == "child":
        return child(args)
    if args.cmd == "startup":
        args.workloads = args.workloads.split(",")
        args.backends = args.backends.split(",")
        return startup(args)
    return report(args)


if __name__ == "__main__":
    main()
