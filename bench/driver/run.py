"""Runs the benchmark grid, one fresh subprocess per (backend, workload, size).

    python bench/driver/run.py [--quick] [--only PREFIX] [--out bench/results/runs.json]

Results are appended run by run to the output JSON (rewritten after each run),
so an interrupted grid keeps what it measured. `report.py` turns it into
docs/benchmarks.md and the plots.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from runner import run_spec, summarize  # noqa: E402

SEED_SIZES = [(6, 8), (12, 16), (18, 24)]
LARGE_SIZES = [(24, 32), (36, 48)]


def ember_backend():
    """The Python API when ember.nutpie exists, else the exported graph + C++ CLI."""
    r = subprocess.run([sys.executable, "-c", "import ember.nutpie, ember.native as n; j = n.jit_available; print(j() if callable(j) else j)"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")})
    if r.returncode != 0:
        return "ember-cli", False
    return "ember", r.stdout.strip().endswith("True")


def grid(args, ember, jit=False):
    """(group, spec, caps) triples, cheapest first so a cut-short run still covers every workload."""
    out = []
    peers = ["nutpie-numba", "pytensor-numba", "pytensor-c"]
    sizes = SEED_SIZES[:2] if args.quick else SEED_SIZES
    for g, s in sizes:
        for kind in ("gamma", "lognormal"):
            p = {"groups": g, "shared": s}
            for b in peers + [ember]:
                if args.quick and b != "nutpie-numba" and b != ember and (g, s) != sizes[0]:
                    continue
                out.append(("seed", {"backend": b, "workload": kind, "params": p, "tiered": b == "ember",
                                     "sample": b in ("nutpie-numba", "ember") and (g, s) == sizes[0]}, {}))
            if ember == "ember" and jit:  # the JIT's modes, and a second process on a warm disk cache
                for jit in ("off", "eager"):
                    out.append((f"seed-jit-{jit}", {"backend": ember, "workload": kind, "params": p, "jit": jit,
                                                    "tiered": True}, {}))
                out.append(("seed-warm", {"backend": ember, "workload": kind, "params": p, "warm_cache": True,
                                          "tiered": True}, {}))
    for w, p in (("eight_schools", {}), ("radon", {"counties": 12, "n": 120}), ("radon", {"counties": 100, "n": 100000})):
        for b in ["nutpie-numba", ember] + ([] if args.quick else ["pytensor-c"]):
            out.append(("other", {"backend": b, "workload": w, "params": p,
                                  "sample": b in ("nutpie-numba", "ember") and w == "eight_schools"}, {}))
    # Memory limit: the seed LogNormal under a 2 GB RSS cap. nutpie at the seed sizes is the seed group's
    # run (its tree peak is compared with the cap in the report); here only the sizes past the seed grid.
    for g, s in ([] if args.quick else SEED_SIZES) + LARGE_SIZES[: 1 if args.quick else 2]:
        for b in (ember, "nutpie-numba"):
            if b == "nutpie-numba" and (g, s) in SEED_SIZES:
                continue
            out.append(("memlimit", {"backend": b, "workload": "lognormal", "params": {"groups": g, "shared": s}},
                        {"rss_cap_gb": 2.0}))
    return out


def machine():
    return {"load_avg": os.getloadavg(), "nproc": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "time": time.strftime("%Y-%m-%d %H:%M:%S")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=None, help="run only groups starting with this")
    ap.add_argument("--backends", default=None, help="comma-separated: run only these backends")
    ap.add_argument("--fill", action="store_true", help="keep finished runs; run only specs without one")
    ap.add_argument("--append", action="store_true", help="add repeats: keep every earlier run")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "runs.json"))
    ap.add_argument("--wall-cap", type=float, default=420.0)
    ap.add_argument("--ember-cli", default=os.path.join(ROOT, "build", "nojit", "ember"))
    args = ap.parse_args()
    ember, jit = ember_backend()
    doc = {"machine_start": machine(), "ember_backend": ember, "ember_jit": jit, "runs": []}
    bset = set(args.backends.split(",")) if args.backends else None

    def selected(group, backend):
        return (not args.only or group.startswith(args.only)) and (not bset or backend in bset)

    if os.path.exists(args.out) and args.append:
        with open(args.out) as f:
            old = json.load(f)
        doc["machine_start"] = old["machine_start"]
        doc["runs"] = old["runs"]
    elif os.path.exists(args.out) and (args.only or bset):  # redo a part, keep the rest
        with open(args.out) as f:
            old = json.load(f)
        doc["machine_start"] = old["machine_start"]
        doc["runs"] = [r for r in old["runs"] if not selected(r["group"], r["spec"]["backend"])]
    specs = [x for x in grid(args, ember, jit) if selected(x[0], x[1]["backend"])]
    if args.fill and os.path.exists(args.out):
        with open(args.out) as f:
            old = json.load(f)
        doc["machine_start"] = old["machine_start"]
        doc["runs"] = [r for r in old["runs"] if r["summary"]["status"] != "error"]
        def ident(group, spec):
            return json.dumps([group, spec["backend"], spec["workload"], spec["params"], spec.get("jit"),
                               spec.get("warm_cache")], sort_keys=True)

        have = {ident(r["group"], r["spec"]) for r in doc["runs"]}
        specs = [x for x in specs if ident(x[0], x[1]) not in have]
    print(f"{len(specs)} runs, ember backend: {ember}", flush=True)
    for i, (group, spec, caps) in enumerate(specs):
        spec = {**spec, "ember_cli": args.ember_cli}
        load = os.getloadavg()
        kw = dict(wall_cap_s=caps.get("wall_cap_s", args.wall_cap), rss_cap_gb=caps.get("rss_cap_gb"),
                  python=sys.executable)
        if spec.get("warm_cache"):  # prime a disk cache in one process, measure a second one on it
            kw["ember_cache_dir"] = tempfile.mkdtemp(prefix="ember-bench-cache-")
            run_spec(spec, **kw)
        r = run_spec(spec, **kw)
        if spec.get("warm_cache"):
            shutil.rmtree(kw["ember_cache_dir"], ignore_errors=True)
        s = summarize(r)
        doc["runs"].append({"group": group, "spec": spec, "load_avg_before": load, "summary": s,
                            "error": r.get("error"), "wall_total_s": r["wall_total_s"],
                            "events": [e for e in r["events"] if e["event"] != "curve"]})
        print(f"[{i + 1}/{len(specs)}] {group} {spec['backend']} {spec['workload']} {spec['params']}: "
              f"{s['status']} ttfg={s.get('ttfg_s')} rss={s['peak_rss_gb']:.2f}GB "
              f"evals/s={s.get('evals_per_s')} wall={r['wall_total_s']:.1f}s", flush=True)
        if r.get("error"):
            print("   error:", r["error"].strip().splitlines()[-1][:300], flush=True)
        doc["machine_end"] = machine()
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
