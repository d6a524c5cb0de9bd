"""Run the model suite against nutpie's numba and JAX backends:
python bench/suite/run.py [--only a,b] [--repeats N] [--cap SECONDS] [--out FILE] [--append | --replace] [--no-jax]

Every (model, repeat) runs in its own subprocess (child.py) under a wall cap, so
one hang loses one run; the results file is rewritten after every run. Repeats
go round the whole suite, so each model's repeats see different moments of the
machine's load. nutpie-JAX runs next, in .venv-jax (bench/driver/setup-jax.sh
makes it; skipped when absent), in a subprocess of its own (jax_child.py).
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "driver"))
sys.path.insert(0, HERE)

import ctimer  # noqa: E402

JAX_PYTHON = os.path.join(ROOT, ".venv-jax", "bin", "python")


def versions():
    out = subprocess.run([sys.executable, "-c", "import numpy, pytensor, pymc, nutpie, numba; print(' '.join("
                          "f'{m.__name__} {m.__version__}' for m in (numpy, pytensor, pymc, nutpie, numba)))"],
                         capture_output=True, text=True)
    return out.stdout.strip()


def run_one(name, repeat, cap, timer_so, blas_threads=None):
    with tempfile.TemporaryDirectory(prefix=f"suite-{name}-") as d:
        state = os.path.join(d, "state.json")
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(d, "numba"), EMBER_CACHE_DIR=os.path.join(d, "ember"),
                   PYTENSOR_FLAGS=f"compiledir={os.path.join(d, 'pytensor')}", **{ctimer.ENV: timer_so})
        if blas_threads:
            env.update({v: str(blas_threads) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")})
        load = os.getloadavg()[0]
        t = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, os.path.join(HERE, "child.py"), name, state, d], env=env,
                               capture_output=True, text=True, timeout=cap)
            status = "ok" if p.returncode == 0 else f"exit {p.returncode}"
            err = p.stderr
        except subprocess.TimeoutExpired as e:
            status, err = f"killed after {cap} s", (e.stderr or b"").decode(errors="replace") if isinstance(
                e.stderr, bytes) else (e.stderr or "")
        res = json.load(open(state)) if os.path.exists(state) else {}
    res.update(model=name, repeat=repeat, status=res.get("status", status) if status == "ok" else status,
               wall_s=round(time.perf_counter() - t, 1), load_before=round(load, 2))
    if status != "ok":
        res["stderr_tail"] = err[-1500:]
    return res


def run_jax(name, cap):
    """nutpie-JAX's time per call on one model (jax_child.py), or its failure."""
    with tempfile.TemporaryDirectory(prefix=f"suite-jax-{name}-") as d:
        state = os.path.join(d, "state.json")
        env = dict(os.environ, JAX_PLATFORMS="cpu", PYTENSOR_FLAGS=f"compiledir={os.path.join(d, 'pytensor')}",
                   JAX_COMPILATION_CACHE_DIR=os.path.join(d, "jax"))
        try:
            p = subprocess.run([JAX_PYTHON, os.path.join(HERE, "jax_child.py"), name, state], env=env,
                               capture_output=True, text=True, timeout=cap)
            status, err = ("ok" if p.returncode == 0 else f"exit {p.returncode}"), p.stderr
        except subprocess.TimeoutExpired:
            status, err = f"killed after {cap} s", ""
        res = json.load(open(state)) if os.path.exists(state) else {}
    res["status"] = res.get("status", status) if status == "ok" else status
    if status != "ok":
        res["stderr_tail"] = err[-1500:]
    return res


def main():
    import models

    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cap", type=float, default=240)
    ap.add_argument("--budget-min", type=float, default=55, help="no run starts after this many minutes")
    ap.add_argument("--blas-threads", type=int, help="BLAS/OpenMP threads of every run (default: the libraries')")
    ap.add_argument("--append", action="store_true", help="add the runs to those already in --out")
    ap.add_argument("--replace", action="store_true",
                    help="as --append, but the runs of the models run now replace their earlier ones")
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    ap.add_argument("--no-jax", action="store_true", help="skip nutpie-JAX even when .venv-jax exists")
    a = ap.parse_args()
    names = [n for n in a.only.split(",") if n] or list(models.MODELS)
    unknown = set(names) - set(models.MODELS)
    if unknown:
        sys.exit(f"unknown models: {', '.join(sorted(unknown))}")
    start = time.time()
    doc = {"started": datetime.datetime.now().isoformat(timespec="seconds"), "machine": {
        "cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
        "versions": versions()}, "load_start": os.getloadavg(), "blas_threads": a.blas_threads, "runs": []}
    if (a.append or a.replace) and os.path.exists(a.out):
        with open(a.out) as f:
            old = json.load(f)
        doc["runs"] = [r for r in old["runs"] if not (a.replace and r.get("model") in names)]
        doc.update({k: old[k] for k in ("started", "load_start", "skipped") if k in old})
    timer_so = ctimer.build(tempfile.mkdtemp(prefix="suite-timer-"))
    skipped = doc.setdefault("skipped", [])
    for r in range(a.repeats):
        for name in names:
            if time.time() - start > a.budget_min * 60:
                skipped.append(f"{name}#{r + 1}")
                continue
            res = run_one(name, r + 1, a.cap, timer_so, a.blas_threads)
            res["blas_threads"] = a.blas_threads
            if not a.no_jax and os.path.exists(JAX_PYTHON):
                res["jax"] = run_jax(name, a.cap)
            doc["runs"].append(res)
            print(f"[{(time.time() - start) / 60:5.1f} min] {name} #{r + 1}: {res['status']}"
                  f" ratio {res.get('ratio_auto', '-')}", flush=True)
            doc.update(finished=datetime.datetime.now().isoformat(timespec="seconds"), load_end=os.getloadavg(),
                       skipped=skipped)
            with open(a.out, "w") as f:
                json.dump(doc, f, indent=1)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
