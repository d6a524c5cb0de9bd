"""Many small fits on a local Dask cluster with ember.dask, and the time to a
first draw in a fresh process: python bench/driver/dask_batch.py [--n 8] [--reps 3]
[--workers 1,2] [--draws 300] [--tune 300] [--chains 2] [--json OUT]

Batch: N radon-style hierarchical regressions (ember.testing.models.radon, 12
counties x 120 observations, different simulated data per task: seed = task
index), fitted by ember.dask.sample_many on a LocalCluster of W worker
processes with one thread each. Each cluster is started and its workers have
imported PyMC/nutpie/ember before the clock starts; one cache directory is
shared by the workers, empty for each cluster size; the batch is timed --reps times (wall clock): the
first is cold (every model prepared and compiled), the median of the others warm.

First draw: from the start of a fresh process (a new Dask worker's task, or a
new `python` for the plain backends) to nutpie.sample(draws=1, tune=1,
chains=1, return_raw_trace=True) returning: imports, building the model,
compiling, sampling.
Backends: ember on a fresh Dask worker (one per worker of a new 2-worker
cluster), ember in a plain process, nutpie's numba backend
(nutpie.compile_pymc_model(model)) in a plain process. "cold": empty PyTensor,
numba and ember cache directories; "warm": the same directories again.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def first_draw(backend, seed=0):
    """Runs in the fresh process; returns the split of its time to a first draw."""
    t0 = time.perf_counter()
    import nutpie
    import pymc  # noqa: F401

    import ember.testing.models
    import ember.nutpie
    t1 = time.perf_counter()
    model = ember.testing.models.radon(seed=seed)
    t2 = time.perf_counter()
    compiled = ember.nutpie.compile_pymc_model(model) if backend == "ember" else nutpie.compile_pymc_model(model)
    t3 = time.perf_counter()
    # The raw trace: converting it to arviz costs 1-7 s the first time (lazy imports), which is not sampling.
    nutpie.sample(compiled, draws=1, tune=1, chains=1, cores=1, seed=1, progress_bar=False, return_raw_trace=True)
    t4 = time.perf_counter()
    return {"imports": t1 - t0, "build": t2 - t1, "compile": t3 - t2, "sample": t4 - t3, "total": t4 - t0,
            "pid": os.getpid()}


def _env(caches):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.join(ROOT, "python"), env.get("PYTHONPATH")) if p)
    env["EMBER_CACHE_DIR"] = os.path.join(caches, "ember")
    env["NUMBA_CACHE_DIR"] = os.path.join(caches, "numba")
    env["PYTENSOR_FLAGS"] = f"compiledir={os.path.join(caches, 'pytensor')}"
    return env


def first_draw_plain(backend, caches):
    code = ("import json, sys; sys.path.insert(0, %r); import dask_batch; "
            "print(json.dumps(dask_batch.first_draw(%r)))" % (os.path.dirname(os.path.abspath(__file__)), backend))
    out = subprocess.run([sys.executable, "-c", code], env=_env(caches), capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cluster(n_workers, env):
    from distributed import LocalCluster

    keys = ("PYTHONPATH", "EMBER_NATIVE_DIR", "EMBER_CACHE_DIR", "NUMBA_CACHE_DIR", "PYTENSOR_FLAGS")
    return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                        env={k: env[k] for k in keys if k in env})


def first_draw_dask(caches):
    """One task per worker of a new 2-worker cluster; also the cluster's start-up."""
    t0 = time.perf_counter()
    with _cluster(2, _env(caches)) as cluster, cluster.get_client() as client:
        client.wait_for_workers(2)
        started = time.perf_counter() - t0
        workers = sorted(client.scheduler_info()["workers"])
        futures = [client.submit(first_draw, "ember", workers=[w], pure=False) for w in workers]
        runs = client.gather(futures)
    for r in runs:
        r["cluster_start"] = started
    return runs


def _warm_up():
    import ember.nutpie  # noqa: F401
    import nutpie  # noqa: F401
    import pymc  # noqa: F401


def batch(n_workers, n, reps, sample_kwargs, caches):
    import ember.dask
    import ember.testing.models

    times = []
    with _cluster(n_workers, _env(caches)) as cluster, cluster.get_client() as client:
        client.wait_for_workers(n_workers)
        client.gather([client.submit(_warm_up, workers=[w], pure=False) for w in client.scheduler_info()["workers"]])
        for _ in range(reps):
            t = time.perf_counter()
            traces = ember.dask.sample_many(ember.testing.models.radon, [{"seed": i} for i in range(n)], client=client,
                                            **sample_kwargs)
            times.append(time.perf_counter() - t)
            assert len(traces) == n
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument("--tune", type=int, default=300)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--skip-batch", action="store_true")
    ap.add_argument("--skip-first-draw", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    sample_kwargs = dict(draws=args.draws, tune=args.tune, chains=args.chains, seed=1)
    out = {"args": vars(args), "load_before": os.getloadavg(), "cpus": os.cpu_count()}

    if not args.skip_batch:
        out["batch"] = {}
        with tempfile.TemporaryDirectory(prefix="ember-dask-bench-") as caches:
            for w in [int(x) for x in args.workers.split(",")]:
                # Each cluster size starts from empty caches: its first batch prepares and compiles every
                # model (cold), the later ones find the shared cache filled (warm).
                ts = batch(w, args.n, args.reps, sample_kwargs, os.path.join(caches, f"w{w}"))
                warm = ts[1:] or ts
                out["batch"][w] = {"wall_s": ts, "cold_s": ts[0], "warm_median_s": statistics.median(warm)}
                print(f"batch N={args.n} on {w} worker(s): cold {ts[0]:.1f} s, warm median "
                      f"{statistics.median(warm):.1f} s ({', '.join(f'{t:.1f}' for t in ts)})", flush=True)

    if not args.skip_first_draw:
        out["first_draw"] = {}
        with tempfile.TemporaryDirectory(prefix="ember-dask-bench-") as caches:
            # Each backend has its own cache directories: empty for "cold", its own again for "warm".
            own = {b: os.path.join(caches, b) for b in ("dask", "ember", "numba")}
            for state in ("cold", "warm"):
                res = {"ember-dask-worker": first_draw_dask(own["dask"]),
                       "ember-process": [first_draw_plain("ember", own["ember"])],
                       "nutpie-numba-process": [first_draw_plain("numba", own["numba"])]}
                out["first_draw"][state] = res
                for name, runs in res.items():
                    for r in runs:
                        print(f"first draw {state:4s} {name:22s} total {r['total']:6.2f} s  (imports {r['imports']:.2f}, "
                              f"build {r['build']:.2f}, compile {r['compile']:.2f}, sample {r['sample']:.2f})"
                              + (f"  cluster start {r['cluster_start']:.2f} s" if "cluster_start" in r else ""),
                              flush=True)
    out["load_after"] = os.getloadavg()
    print(f"load average before {out['load_before'][0]:.1f}, after {out['load_after'][0]:.1f} on {os.cpu_count()} CPUs")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
