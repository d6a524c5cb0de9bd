"""Runs the benchmark grid, one fresh subprocess per (backend, workload, size, repeat).

    python bench/driver/run.py [--quick | --smoke] [--plan] [--repeats N] [--only GROUP] [--backends a,b]
                               [--out FILE] [--budget-min 55] [--finish-min 58]

Runs go in phases, most important first (see grid()): the goal pair's repeats, each repeat's models in the
same interleaved order so every repeat sees similar machine load, then the memory-cap ladder, ember's other
modes, PyTensor's backends, and the largest sizes if time is left. The budget is enforced here: no run starts
later than --budget-min after t0 (run_all.sh's start), and none may still be running at --finish-min (its
wall cap is cut; a run the earlier results say needs longer is skipped and a shorter one tried). Whatever was
not run is recorded in "skipped" with the reason; the report lists it. Results are rewritten to the output
JSON after every run; `report.py` turns them into docs/benchmarks.md and the plots.
Every run is under a wall-time cap and the RSS cap (default 2 GB); a run over a cap is recorded as killed,
never dropped.
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
import ctimer  # noqa: E402
from budget import Estimates, plan_table, total  # noqa: E402
from runner import run_spec, summarize  # noqa: E402

SEED_SIZES = [(6, 8), (12, 16), (18, 24)]
LARGE_SIZES = [(24, 32), (36, 48), (48, 64)]
OTHER = [("eight_schools", {}), ("radon", {"counties": 12, "n": 120}), ("radon", {"counties": 100, "n": 100000})]
# Backends whose rate keeps changing after the first gradient (ember's JIT compiling in the background): their
# throughput loop follows them for --curve-s. ember-eager compiles everything before its first call.
TIERED = ("ember-auto", "ember-warm")
REF = "nutpie-numba"


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
    """[(phase, group, spec, caps, repeat)] in run order, most important first, so a run stopped by the budget
    keeps what matters. Phases:
      1-3  the goal pair (nutpie-numba and ember's default mode) on the seed grid and the other workloads, one
           repeat per phase (the repeats' models interleaved the same way, so each repeat sees similar load);
           the first repeat also samples, and ember-warm runs right after each seed-grid ember-auto run;
      4    the memory-cap ladder: seed LogNormal past the seed grid, ember's default mode then nutpie;
      5    ember's other JIT modes (off, eager), once;
      6    PyTensor's NUMBA, C and (when it imports) JAX modes, once: context, not goal targets;
      7    only if time is left: the largest sizes (ember at 48x64, nutpie at 36x48)."""
    have_jax = probe("import jax")[0]
    ctx = ["pytensor-numba", "pytensor-c"] + (["pytensor-jax"] if have_jax else [])
    lead = ember[0]  # ember's default mode: the one the goals are judged on
    extra = [e for e in ember[1:] if e != "ember-warm"]
    sizes, large, other = SEED_SIZES, LARGE_SIZES, OTHER
    if args.quick:  # every phase and code path, on the smallest models
        sizes, large, other = SEED_SIZES[:1], [(9, 12), (12, 16)], OTHER[:2]
    if args.smoke:  # one model per backend
        sizes, large, other = [], [(9, 12)], OTHER[:1]

    def spec(b, w, p, sample=False, warm=False):
        return {"backend": b, "workload": w, "params": p, "tiered": b in TIERED, "sample": sample,
                "warm_after": warm and jit and "ember-warm" in ember}

    def goal(phase, rep):
        out = []
        for g, s in sizes:
            for kind in ("gamma", "lognormal"):
                for b in (REF, lead):
                    out.append((phase, "seed", spec(b, kind, {"groups": g, "shared": s}, rep == 0,
                                                   b == lead and rep == 0), {}, rep))
        for w, p in other:
            for b in (REF, lead):
                out.append((phase, "other", spec(b, w, p, rep == 0 and p.get("n", 0) < 10**4), {}, rep))
        return out

    def once(phase, backends):
        return ([(phase, "seed", spec(b, kind, {"groups": g, "shared": s}), {}, 0)
                 for g, s in sizes for kind in ("gamma", "lognormal") for b in backends]
                + [(phase, "other", spec(b, w, p), {}, 0) for w, p in other for b in backends])

    def big(phase, b, sizes_):
        return [(phase, "large", spec(b, "lognormal", {"groups": g, "shared": s}), {"wall_cap_s": args.large_wall_cap},
                 0) for g, s in sizes_]

    out = []
    for rep in range(args.repeats):
        out += goal(1 + min(rep, 2), rep)
    out += big(4, lead, large[:2]) + big(4, REF, large[:1])
    out += once(5, extra) + once(6, ctx)
    out += big(7, lead, large[2:]) + big(7, REF, large[1:2])
    return out


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


def main():  # noqa: C901
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="every phase on the smallest models (checks the driver)")
    ap.add_argument("--smoke", action="store_true", help="one small model per backend (checks the driver faster)")
    ap.add_argument("--plan", action="store_true", help="print the planned runs with their estimated times; run none")
    ap.add_argument("--repeats", type=int, default=None, help="of nutpie-numba and ember's default mode (others: "
                    "once); default 3, 2 with --quick, 1 with --smoke")
    ap.add_argument("--only", default=None, help="run only groups starting with this")
    ap.add_argument("--backends", default=None, help="comma-separated: run only these backends")
    ap.add_argument("--append", action="store_true",
                    help="resume: keep every earlier run in --out and run only what it does not have")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "runs.json"))
    ap.add_argument("--estimates", default=os.path.join(ROOT, "bench", "results", "runs.json"),
                    help="an earlier runs.json: expected run times (read before --out is written)")
    ap.add_argument("--wall-cap", type=float, default=420.0, help="seconds per run")
    ap.add_argument("--large-wall-cap", type=float, default=300.0, help="seconds per run past the seed grid")
    ap.add_argument("--rss-cap", type=float, default=2.0, help="GB of RSS (process tree) per run")
    ap.add_argument("--t0", type=float, default=None,
                    help="unix time the budget counts from (default: $EMBER_BENCH_T0, set by run_all.sh, else now)")
    ap.add_argument("--budget-min", type=float, default=55.0,
                    help="start no run later than this many minutes after t0 (0: no budget)")
    ap.add_argument("--finish-min", type=float, default=58.0,
                    help="no run may still be running this many minutes after t0: its wall cap is cut to end "
                    "then, and a run expected to need longer is not started")
    ap.add_argument("--deadline", type=float, default=None, help="unix time: start no run after it (overrides "
                    "--budget-min)")
    ap.add_argument("--curve-s", type=float, default=8.0,
                    help="seconds ember's auto/warm modes are followed after the first gradient")
    ap.add_argument("--steady-s", type=float, default=2.5,
                    help="seconds of throughput loop after the first gradient for the other backends")
    args = ap.parse_args()
    if args.repeats is None:
        args.repeats = 1 if args.smoke else 2 if args.quick else 3
    t0 = args.t0 or float(os.environ.get("EMBER_BENCH_T0") or time.time())
    deadline = args.deadline or (t0 + 60 * args.budget_min if args.budget_min else None)
    finish = (max(deadline, t0 + 60 * args.finish_min) if args.deadline is None else deadline + 180) \
        if deadline else None
    est = Estimates(args.estimates)  # before --out (often the same file) is rewritten
    ember, jit = ember_modes()
    bset = set(args.backends.split(",")) if args.backends else None
    specs = [x for x in grid(args, ember, jit)
             if (not args.only or x[1].startswith(args.only)) and (not bset or x[2]["backend"] in bset)]
    for x in specs:
        x[2]["curve_s"], x[2]["steady_s"] = args.curve_s, args.steady_s

    def cap(caps):
        return caps.get("wall_cap_s", args.wall_cap)

    def expect(spec, caps):
        return est.run(spec, cap(caps), args.curve_s, args.steady_s)

    def warm_of(spec):
        return {**spec, "backend": "ember-warm", "sample": False, "warm_after": False}

    if args.plan:
        rows = []
        for ph, group, spec, caps, rep in specs:
            rows.append((ph, group, spec, rep, expect(spec, caps)))
            if spec.get("warm_after"):
                rows.append((ph, group, warm_of(spec), rep, expect(warm_of(spec), caps)))
        cum = 0.0
        for ph, group, spec, rep, e in rows:
            t = total(e)
            cum += t or 0
            print(f"{ph} r{rep} {group:5} {spec['backend']:14} {spec['workload']:13} {json.dumps(spec['params']):32} "
                  + (f"{t:6.0f} s ({e['how']})" if t else "     ? s") + f"  cum {cum / 60:5.1f} min")
        print("\n".join(plan_table(rows)))
        print(f"fixed per run {est.fixed:.1f} s; loaded/quiet ttfg ratio: "
              + ", ".join(f"{b} {v:.1f}" for b, v in sorted(est.scale.items())))
        return
    doc = {"machine_start": machine(), "ember_backend": ember, "ember_jit": jit, "versions": versions(),
           "args": vars(args), "budget": {"t0": t0, "deadline": deadline, "finish": finish}, "runs": [],
           "skipped": []}
    if args.append and os.path.exists(args.out):
        with open(args.out) as f:
            old = json.load(f)
        for k in ("machine_start", "runs", "skipped", "budget"):
            doc[k] = old.get(k, doc[k])
    if args.append:  # resume: what the earlier run already measured is not run again

        def ident(group, spec, rep):
            return json.dumps([group, spec["backend"], spec["workload"], spec["params"], rep], sort_keys=True)

        doc["runs"] = [r for r in doc["runs"] if "time budget" not in r["summary"]["status"]]  # cut short: again
        have = {ident(r["group"], r["spec"], r.get("repeat", 0)) for r in doc["runs"]}
        doc["skipped"] = [s for s in doc["skipped"] if s["why"] != "deadline" and not s["why"].startswith("budget")]
        specs = [x for x in specs if ident(x[1], x[2], x[4]) not in have]
    n_total = sum(2 if sp.get("warm_after") else 1 for _, _, sp, _, _ in specs)
    print(f"{n_total} runs ({args.repeats} repeats of the main pair), ember: {', '.join(ember)}"
          + (f"; no run starts after {time.strftime('%H:%M:%S', time.localtime(deadline))}, none runs past "
             f"{time.strftime('%H:%M:%S', time.localtime(finish))}" if deadline else ""), flush=True)
    stopped = {}  # (backend, workload) -> the size it was stopped at by a cap: larger sizes are not tried
    done = 0

    def save():
        doc["machine_end"] = machine()
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(args.out + ".tmp", args.out)

    def skip(ph, group, spec, rep, why):
        spec = {k: v for k, v in spec.items() if k != "warm_after"}
        doc["skipped"].append({"phase": ph, "group": group, "spec": spec, "repeat": rep, "why": why})
        save()

    def budget_ok(ph, group, spec, caps, rep):
        """None when the run may start, else why not; also the wall cap it gets."""
        now = time.time()
        if deadline and now > deadline:
            return "deadline", None
        wall = cap(caps)
        if finish:
            e = total(expect(spec, caps))
            left = finish - now
            if e is not None:  # the estimates are for a quiet machine: runs at load 15 took ~4x as long
                e *= max(1.0, (os.getloadavg()[0] + 1) / 4)
            if e is not None and e > left:
                return f"budget: expected ~{e:.0f} s at the current load, {left:.0f} s left", None
            wall = min(wall, left)
        return None, wall

    def record(ph, group, spec, rep, r, clipped):
        s = summarize(r)
        if clipped and s["status"].startswith("killed: wall_cap"):
            s["status"] = f"killed: wall_cap ({r['wall_cap_s']:.0f} s: the run's remaining time budget)"
        doc["runs"].append({"phase": ph, "group": group, "spec": spec, "repeat": rep,
                            "load_avg_before": r["load_before"], "summary": s, "error": r.get("error"),
                            "wall_total_s": r["wall_total_s"], "wall_cap_s": r["wall_cap_s"],
                            "events": [e for e in r["events"] if e["event"] != "curve"]})
        print(f"[{done}/{n_total}] p{ph} r{rep} {group} {spec['backend']} {spec['workload']} {spec['params']}: "
              f"{s['status']} ttfg={s.get('ttfg_s')} rss={s['peak_rss_gb']:.2f}GB "
              f"evals/s={s.get('evals_per_s')} wall={r['wall_total_s']:.1f}s "
              f"(t+{(time.time() - t0) / 60:.1f} min)", flush=True)
        if r.get("error"):
            print("   error:", r["error"].strip().splitlines()[-1][:300] if r["error"].strip() else "?", flush=True)
        save()
        return s

    timer_dir = tempfile.mkdtemp(prefix="ember-bench-timer-")
    os.environ[ctimer.ENV] = ctimer.build(timer_dir)  # every child loads this one build of the C timing loop
    for ph, group, spec, caps, rep in specs:
        key = (spec["backend"], spec["workload"])
        if key in stopped and "groups" in spec["params"] and \
                spec["params"]["groups"] > stopped[key][0]["groups"]:
            skip(ph, group, spec, rep, f"stopped at {size_str(stopped[key][0])} ({stopped[key][1]})")
            continue
        why, wall = budget_ok(ph, group, spec, caps, rep)
        if why:
            skip(ph, group, spec, rep, why)
            if spec.get("warm_after"):
                skip(ph, group, warm_of(spec), rep, why)
            continue
        spec = dict(spec)
        kw = dict(wall_cap_s=wall, rss_cap_gb=args.rss_cap, python=sys.executable)
        cache = None
        if spec.pop("warm_after", False):  # the cold auto run fills a disk cache; a second process reads it
            cache = tempfile.mkdtemp(prefix="ember-bench-cache-")
            kw["ember_cache_dir"] = cache
        done += 1
        s = record(ph, group, spec, rep, run_spec(spec, **kw), wall < cap(caps))
        if s["status"].startswith("killed") and "groups" in spec["params"] and "time budget" not in s["status"]:
            stopped[key] = (spec["params"], s["status"])
        if cache:
            wspec = warm_of(spec)
            wspec.pop("warm_after")
            if not bset or "ember-warm" in bset:
                why, wall = budget_ok(ph, group, wspec, caps, rep)
                if why:
                    skip(ph, group, wspec, rep, why)
                else:
                    done += 1
                    record(ph, group, wspec, rep, run_spec(wspec, **{**kw, "wall_cap_s": wall}), wall < cap(caps))
            shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(timer_dir, ignore_errors=True)
    save()


if __name__ == "__main__":
    main()
