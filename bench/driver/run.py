"""Runs the benchmark grid, one fresh subprocess per (backend, workload, size, repeat).

    python bench/driver/run.py [--quick] [--repeats N] [--only PREFIX] [--backends a,b] [--out FILE]

Repeats are interleaved (every spec once, then every spec again, ...) so each
repeat of each backend sees the same machine load, and a run cut short still
has at least one of everything. Results are rewritten to the output JSON after
every run; `report.py` turns them into docs/benchmarks.md and the plots.
Every run is under a wall-time cap and the RSS cap (default 2 GB); a run over a
cap is recorded as killed, never dropped.
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
LARGE_SIZES = [(24, 32), (36, 48), (48, 64)]
OTHER = [("eight_schools", {}), ("radon", {"counties": 12, "n": 120}), ("radon", {"counties": 100, "n": 100000})]


def probe(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")})
    return r.returncode == 0, r.stdout.strip()


def ember_modes():
    """ember's rows: the JIT's three modes and a warm disk cache when the module has the JIT, else one row."""
    ok, out = probe("import ember.nutpie, ember.native as n; j = n.jit_available; print(j() if callable(j) else j)")
    if not ok:
        sys.exit("ember's Python module (ember.nutpie + ember._core) does not import: set EMBER_NATIVE_DIR")
    if out.endswith("True"):
        return ["ember-auto", "ember-off", "ember-eager", "ember-warm"], True
    return ["ember-nojit"], False


def grid(args, ember, jit):
    """[(group, spec, caps, repeat)] in run order, most important first, so a run stopped by --deadline keeps
    what matters: the goal pair (nutpie-numba vs ember's default mode) with every repeat comes before
    ember's other modes, the sizes past the seed grid, and the PyTensor backends (once each)."""
    have_jax = probe("import jax")[0]
    ctx = ["pytensor-numba", "pytensor-c"] + (["pytensor-jax"] if have_jax else [])
    lead = ember[0]  # ember's default mode: the one the goals are judged on
    extra = [e for e in ember[1:] if e != "ember-warm"]
    sizes = SEED_SIZES[:1] if args.quick else SEED_SIZES
    large = LARGE_SIZES[:1] if args.quick else LARGE_SIZES
    other = OTHER[:2] if args.quick else OTHER
    R = args.repeats

    def seed(backends, reps, sample=False, only=None):
        out = []
        for rep in reps:
            for g, s in (sizes if only is None else only):
                for kind in ("gamma", "lognormal"):
                    for b in backends:
                        out.append(("seed", {"backend": b, "workload": kind, "params": {"groups": g, "shared": s},
                                             "tiered": b in TIERED, "sample": sample and rep == 0,
                                             "warm_after": b == "ember-auto" and rep == 0}, {}, rep))
        return out

    def oth(backends, reps, only=None):
        return [("other", {"backend": b, "workload": w, "params": p, "tiered": b in TIERED,
                           "sample": rep == 0 and b in ("nutpie-numba", lead) and p.get("n", 0) < 10**4}, {}, rep)
                for rep in reps for w, p in (other if only is None else only) for b in backends]

    def big(backends, sizes_=large):
        return [("large", {"backend": b, "workload": "lognormal", "params": {"groups": g, "shared": s},
                           "tiered": b in TIERED}, {"wall_cap_s": args.large_wall_cap}, 0)
                for b in backends for g, s in sizes_]

    main_pair = ["nutpie-numba", lead]
    rep = list(range(1, R))
    return (seed(main_pair, [0], sample=True) + oth(main_pair, [0])        # 1. the goal pair, once
            + big([lead], large[:2])                                       # 2. ember past the seed grid
            + seed(extra, [0], only=sizes[1:2]) + oth(extra, [0], only=[other[0], other[-1]])  # 3. ember's
            + seed(main_pair, rep[:1]) + oth(main_pair, rep[:1])           # 4. the goal pair again  other modes
            + seed(extra, [0], only=sizes[:1] + sizes[2:]) + oth(extra, [0], only=other[1:-1])
            + seed(main_pair, rep[1:]) + oth(main_pair, rep[1:])           # 5. the goal pair's other repeats
            + big(["nutpie-numba"])                                        # 6. nutpie past the seed grid
            + seed(ctx, [0]) + oth(ctx, [0])                               # 7. PyTensor's backends
            + big([lead], large[2:]) + big(ctx) + seed(extra, rep))        # 8. the rest


TIERED = ("ember-auto", "ember-eager", "ember-warm")


def size_str(p):
    return f"{p['groups']}x{p['shared']}"


def machine():
    return {"load_avg": os.getloadavg(), "nproc": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "time": time.strftime("%Y-%m-%d %H:%M:%S"),
            "unix_time": time.time()}


def versions():
    ok, out = probe("import json, numpy, pytensor, pymc, nutpie, numba; v = {m.__name__: m.__version__ for m in "
                    "(numpy, pytensor, pymc, nutpie, numba)}\ntry:\n import jax; v['jax'] = jax.__version__\n"
                    "except ImportError: pass\nprint(json.dumps(v))")
    return json.loads(out) if ok else {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smallest sizes only (checks the driver)")
    ap.add_argument("--repeats", type=int, default=3, help="of nutpie-numba and ember's default mode (others: once "
                    "unless time is left)")
    ap.add_argument("--only", default=None, help="run only groups starting with this")
    ap.add_argument("--backends", default=None, help="comma-separated: run only these backends")
    ap.add_argument("--append", action="store_true",
                    help="resume: keep every earlier run in --out and run only what it does not have")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "runs.json"))
    ap.add_argument("--wall-cap", type=float, default=420.0, help="seconds per run")
    ap.add_argument("--large-wall-cap", type=float, default=300.0, help="seconds per run past the seed grid")
    ap.add_argument("--rss-cap", type=float, default=2.0, help="GB of RSS (process tree) per run")
    ap.add_argument("--deadline", type=float, default=None,
                    help="unix time: start no run after it (runs not made are listed as skipped)")
    ap.add_argument("--curve-s", type=float, default=8.0, help="seconds of warm-up curve for the JIT modes")
    args = ap.parse_args()
    ember, jit = ember_modes()
    doc = {"machine_start": machine(), "ember_backend": ember, "ember_jit": jit, "versions": versions(),
           "args": vars(args), "runs": [], "skipped": []}
    bset = set(args.backends.split(",")) if args.backends else None
    if args.append and os.path.exists(args.out):
        with open(args.out) as f:
            old = json.load(f)
        for k in ("machine_start", "runs", "skipped"):
            doc[k] = old.get(k, doc[k])
    specs = [x for x in grid(args, ember, jit)
             if (not args.only or x[0].startswith(args.only)) and (not bset or x[1]["backend"] in bset)]
    if args.append:  # resume: what the earlier run already measured is not run again

        def ident(group, spec, rep):
            return json.dumps([group, spec["backend"], spec["workload"], spec["params"], rep], sort_keys=True)

        have = {ident(r["group"], r["spec"], r.get("repeat", 0)) for r in doc["runs"]}
        doc["skipped"] = [s for s in doc["skipped"] if s["why"] != "deadline"]
        specs = [x for x in specs if ident(x[0], x[1], x[3]) not in have]
    n_total = sum(2 if sp.get("warm_after") and jit else 1 for _, sp, _, _ in specs)
    print(f"{n_total} runs ({args.repeats} repeats of the main pair), ember: {', '.join(ember)}", flush=True)
    stopped = {}  # (backend, workload) -> the size it was stopped at by a cap: larger sizes are not tried
    done = 0

    def save():
        doc["machine_end"] = machine()
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(args.out + ".tmp", args.out)

    def record(group, spec, rep, r):
        s = summarize(r)
        doc["runs"].append({"group": group, "spec": spec, "repeat": rep, "load_avg_before": r["load_before"],
                            "summary": s, "error": r.get("error"), "wall_total_s": r["wall_total_s"],
                            "events": [e for e in r["events"] if e["event"] != "curve"]})
        print(f"[{done}/{n_total}] r{rep} {group} {spec['backend']} {spec['workload']} {spec['params']}: "
              f"{s['status']} ttfg={s.get('ttfg_s')} rss={s['peak_rss_gb']:.2f}GB "
              f"evals/s={s.get('evals_per_s')} wall={r['wall_total_s']:.1f}s", flush=True)
        if r.get("error"):
            print("   error:", r["error"].strip().splitlines()[-1][:300] if r["error"].strip() else "?", flush=True)
        save()
        return s

    for group, spec, caps, rep in specs:
        key = (spec["backend"], spec["workload"])
        if args.deadline and time.time() > args.deadline:
            doc["skipped"].append({"group": group, "spec": spec, "repeat": rep, "why": "deadline"})
            continue
        if key in stopped and "groups" in spec["params"] and \
                spec["params"]["groups"] > stopped[key][0]["groups"]:
            doc["skipped"].append({"group": group, "spec": spec, "repeat": rep,
                                   "why": f"stopped at {size_str(stopped[key][0])} ({stopped[key][1]})"})
            save()
            continue
        spec = {**spec, "curve_s": args.curve_s}
        kw = dict(wall_cap_s=caps.get("wall_cap_s", args.wall_cap), rss_cap_gb=args.rss_cap, python=sys.executable)
        cache = None
        if spec.pop("warm_after", False) and jit:  # the cold auto run fills a disk cache; a second process reads it
            cache = tempfile.mkdtemp(prefix="ember-bench-cache-")
            kw["ember_cache_dir"] = cache
        done += 1
        s = record(group, spec, rep, run_spec(spec, **kw))
        if s["status"].startswith("killed") and "groups" in spec["params"]:
            stopped[key] = (spec["params"], s["status"])
        if cache:
            wspec = {**spec, "backend": "ember-warm", "sample": False}
            if not bset or "ember-warm" in bset:
                done += 1
                record(group, wspec, rep, run_spec(wspec, **kw))
            shutil.rmtree(cache, ignore_errors=True)
    save()


if __name__ == "__main__":
    main()
