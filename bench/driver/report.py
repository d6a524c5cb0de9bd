"""bench/results/runs.json (+ micro.txt, timing.json) -> docs/benchmarks.md and docs/img/bench_*.png.

    python bench/driver/report.py [--results DIR] [--md FILE]   (plots go to img/ beside FILE)
"""

import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RESULTS = os.path.join(ROOT, "bench", "results")
IMG = os.path.join(ROOT, "docs", "img")
REF = "nutpie-numba"
EMBER_ORDER = ["ember-auto", "ember-off", "ember-eager", "ember-warm", "ember-nojit"]
PEER_ORDER = ["nutpie-numba", "pytensor-numba", "pytensor-c", "pytensor-jax"]
FIELDS = ("ttfg_s", "compile_s", "peak_rss_gb", "tree_peak_rss_gb", "evals_per_s", "sample_s", "null_call_us",
          "baseline_rss_kb", "n_dim", "graph_ready_s", "logp", "vm_peak_kb", "cpu_us_per_eval", "ctypes_evals_per_s")
PHASES = {1: "goal pair (nutpie-numba, ember's default mode), repeat 1, with sampling and ember-warm",
          2: "goal pair, repeat 2", 3: "goal pair, repeat 3 (and further)",
          4: "memory-cap ladder: seed LogNormal past the seed grid", 5: "ember's other JIT modes, once",
          6: "PyTensor's backends, once", 7: "largest sizes, only if time is left"}


def order(b):
    return (EMBER_ORDER + PEER_ORDER).index(b) if b in EMBER_ORDER + PEER_ORDER else 99


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def collect(runs):
    """One row per (group, backend, workload, params): medians over its ok repeats (over all if none is ok)."""
    by = {}
    for r in runs:
        for e in r.get("events", []):  # ember.nutpie reports its own split (PyTensor part vs export+load)
            if e["event"] == "compiled" and e.get("timings") and "graph_ready_s" not in r["summary"]:
                r["summary"]["graph_ready_s"] = e["timings"].get("pytensor")
        sp = r["spec"]
        by.setdefault((r["group"], sp["backend"], sp["workload"], tuple(sorted(sp["params"].items()))), []).append(r)
    rows = []
    for k, rs in by.items():
        ss = [r["summary"] for r in rs]
        ok = [s for s in ss if s["status"] == "ok"]
        use = ok or ss
        bad = sorted({s["status"] for s in ss if s["status"] != "ok"})
        row = {"group": k[0], "backend": k[1], "workload": k[2], "params": dict(k[3]), "n": len(rs),
               "n_ok": len(ok), "status": "ok" if ok else "; ".join(bad), "failures": bad}
        for f in FIELDS:
            row[f] = med([s.get(f) for s in use])
        for f in ("ttfg_s", "evals_per_s"):
            vals = [s[f] for s in use if s.get(f) is not None]
            row[f + "_range"] = (min(vals), max(vals)) if len(vals) > 1 else None
        row["sample_compile"] = med([s.get("compile_s") for s in use if s.get("sample_s")])
        row["n_sample"] = sum(1 for s in use if s.get("sample_s"))
        row["sample_wall"] = med([(s.get("compile_s") or 0) + s["sample_s"] for s in use if s.get("sample_s")])
        row["wall_total_s"] = med([r["wall_total_s"] for r in rs])
        row["load"] = med([r["load_avg_before"][0] for r in rs])
        mid = sorted(use, key=lambda s: s.get("ttfg_s") or 0)[len(use) // 2]  # the median run's curve and stats
        row["curve"] = mid.get("curve")
        row["jit_stats"] = mid.get("jit_stats")
        row["tier_curve"] = mid.get("tier_curve")
        row["jit_after"] = next((x.get("jit_stats_after_sample") for x in use if x.get("jit_stats_after_sample")), None)
        rows.append(row)
    return rows


def fmt(x, d=2):
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{d}f}"


def rng(r, f, d=1):
    v = r.get(f + "_range")
    return f"{fmt(v[0], d)}–{fmt(v[1], d)}" if v else "–"


def net_rate(row):
    """Evaluations/s with the Python+ctypes loop's own per-call cost removed (runs before the C timing loop
    measured a no-op call's cost; later runs have none to remove)."""
    r, null = row["evals_per_s"], row["null_call_us"]
    if r is None or null is None:
        return r
    per = 1e6 / r - null
    return 1e6 / per if per > 0 else None


def incr(r):
    """Peak RSS above the process's RSS once PyMC was imported and the model built (GB)."""
    if r is None or r["peak_rss_gb"] is None or r["baseline_rss_kb"] is None:
        return None
    return r["peak_rss_gb"] - r["baseline_rss_kb"] / 2**20


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def tput_ratio(r, ref):
    """Like with like: both through the same ctypes loop -> net of its measured cost; else gross rates."""
    if ref is None:
        return None
    if r["null_call_us"] is not None and ref["null_call_us"] is not None:
        return ratio(net_rate(r), net_rate(ref))
    return ratio(r["evals_per_s"], ref["evals_per_s"])


def find(rows, group, backend, workload, params):
    for r in rows:
        if r["group"] == group and r["backend"] == backend and r["workload"] == workload and r["params"] == params:
            return r
    return None


def size(p):
    return f"{p['groups']}x{p['shared']}"


def tiers_str(j):
    if not j or not j.get("composites"):
        return "–"
    t = j.get("tiers", {})
    return f"{j['composites']}: " + " ".join(f"t{k}={v}" for k, v in sorted(t.items()))


def settle_time(r):
    """Seconds after the model was handed over when the tier counts last changed (warm-up done)."""
    tc = r.get("tier_curve")
    if not tc or not r.get("jit_stats") or not r["jit_stats"].get("compiles"):
        return None
    last = tc[-1][1]
    t = tc[0][0]
    for ts, tiers, _ in tc:
        if tiers != last:
            t = None
        elif t is None:
            t = ts
    return t


# -- plots -------------------------------------------------------------------------------------------


def plots(rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(IMG, exist_ok=True)
    made = []
    seed = [r for r in rows if r["group"] == "seed" and r["workload"] == "lognormal" and r["curve"]]
    sizes = sorted({(r["params"]["groups"], r["params"]["shared"]) for r in seed})
    if sizes:
        show = [sizes[0], sizes[-1]] if len(sizes) > 1 else sizes
        fig, axes = plt.subplots(1, len(show), figsize=(6.5 * len(show), 4.5), squeeze=False)
        for ax, (g, s) in zip(axes[0], show):
            for r in sorted(seed, key=lambda r: order(r["backend"])):
                if (r["params"]["groups"], r["params"]["shared"]) != (g, s):
                    continue
                ts = [r["ttfg_s"] * 0.999 if r["ttfg_s"] else r["curve"][0][0]] + [c[0] for c in r["curve"]]
                vs = [0.0] + [c[1] for c in r["curve"]]
                ax.step(ts, vs, where="post", label=r["backend"],
                        linestyle="-" if r["backend"].startswith("ember") else "--")
            ax.set_xscale("log")
            ax.set_ylim(bottom=0)
            ax.set_xlabel("seconds since the model was handed over (log)")
            ax.set_ylabel("logp+gradient evaluations / s\n(median ~0.5 ms batch per 0.25 s bin)")
            ax.set_title(f"Warm-up: seed LogNormal {g}x{s} (median run)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(IMG, "bench_warmup.png"), dpi=100)
        made.append("bench_warmup.png")
        plt.close(fig)
    for field, name, ylabel in (("ttfg_s", "bench_ttfg.png", "time to first gradient (s, log)"),
                                ("peak_rss_gb", "bench_rss.png", "peak RSS (GB, log)")):
        fig, ax = plt.subplots(figsize=(8, 5))
        series = {}
        for r in rows:
            if r["group"] in ("seed", "large") and r[field] is not None and r["status"] == "ok":
                if r["backend"] in ("ember-warm",):
                    continue
                series.setdefault((r["backend"], r["workload"]), {})[r["params"]["groups"] * r["params"]["shared"]] = r[field]
        for (b, w), pts in sorted(series.items(), key=lambda x: (order(x[0][0]), x[0][1])):
            xs = sorted(pts)
            ax.plot(xs, [pts[x] for x in xs], marker="o" if w == "gamma" else "s",
                    linestyle="-" if w == "gamma" else "--", label=f"{b} {w}")
        killed = [r for r in rows if r["group"] in ("seed", "large") and r["status"] != "ok"
                  and r["backend"] != "ember-warm"]
        for i, r in enumerate(killed):  # where a cap stopped it: its RSS then, or the wall time it had used
            x = r["params"]["groups"] * r["params"]["shared"]
            y = r["tree_peak_rss_gb"] if field == "peak_rss_gb" else r.get("wall_total_s")
            ax.axvline(x, color="grey", alpha=0.2)
            if y:
                ax.scatter([x], [y], marker="x", color="red", zorder=5,
                           label="stopped by a cap (value then)" if i == 0 else None)
                ax.annotate(r["backend"], (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
        if field == "peak_rss_gb":
            ax.axhline(2.0, color="red", linestyle=":", label="2 GB cap")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("model size: groups x shared (log); grey line: a backend stopped by a cap there")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(IMG, name), dpi=100)
        made.append(name)
        plt.close(fig)
    return made


# -- report ------------------------------------------------------------------------------------------


def main():  # noqa: C901
    import argparse

    global IMG
    ap = argparse.ArgumentParser()
    global RESULTS
    ap.add_argument("--results", default=RESULTS, help="directory of runs.json, micro.txt and timing.json")
    ap.add_argument("--runs", default=None, help="default: RESULTS/runs.json")
    ap.add_argument("--md", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    args_ = ap.parse_args()
    IMG = os.path.join(os.path.dirname(os.path.abspath(args_.md)), "img")
    RESULTS = args_.results
    with open(args_.runs or os.path.join(RESULTS, "runs.json")) as f:
        doc = json.load(f)
    rows = collect(doc["runs"])
    ember = doc.get("ember_backend") or ["ember-nojit"]
    lead = ember[0]
    jit = doc.get("ember_jit", False)
    args = doc.get("args", {})
    out = []
    w = out.append
    ms, me = doc["machine_start"], doc.get("machine_end", doc["machine_start"])
    dur = (me.get("unix_time", 0) - ms.get("unix_time", 0)) / 60 if ms.get("unix_time") else None
    loads = [r["load"] for r in rows if r["load"] is not None]
    w("# Benchmarks\n")
    w("Generated by `bench/driver/run_all.sh` (driver: `bench/driver/`, raw results: `bench/results/runs.json`, "
      "`bench/results/micro.txt`). Do not edit by hand.\n")
    w(f"Machine: {ms['nproc']} cores, {ms['platform']}, Python {ms['python']}; "
      + ", ".join(f"{k} {v}" for k, v in doc.get("versions", {}).items()) + ". "
      f"Run {ms['time']} – {me['time']}" + (f" ({dur:.0f} min for the model runs)" if dur else "") + ". "
      + (f"**Load average** (1 min) at start {ms['load_avg'][0]:.1f}, at end {me['load_avg'][0]:.1f}, "
         f"median before a run {statistics.median(loads):.1f}, max {max(loads):.1f}. " if loads else ""))
    tpath = os.path.join(RESULTS, "timing.json")
    if os.path.exists(tpath):
        with open(tpath) as f:
            t = json.load(f)
        w(f"`run_all.sh` took {t['total_s'] / 60:.0f} min: setup and build {t['setup_and_build_s']} s, C++ "
          f"micro-benchmarks {t['micro_s']} s, model grid {t['grid_s'] / 60:.0f} min"
          + (f" ({t['note']})" if t.get("note") else "") + ". ")
    bud = doc.get("budget") or {}
    if bud.get("deadline"):
        t0 = bud["t0"]
        w(f"Budget (enforced by the driver, counted from `run_all.sh`'s start): no run starts after "
          f"{(bud['deadline'] - t0) / 60:.0f} min, none runs past {(bud['finish'] - t0) / 60:.0f} min. ")
    w("(the machine has 2 cores and is shared: other sessions build while this runs, so absolute times are "
      "inflated and noisy; every backend ran interleaved in the same run, so the ratios are the useful part).\n")
    w(f"Ember rows: {', '.join(f'`{e}`' for e in ember)} — ember's Python module (`ember.nutpie`, `ember._core`) "
      + ("built with the LLVM JIT. `ember-auto` is the default (interpreter at once, hot Composites compiled in "
         "the background), `ember-off` the interpreter only, `ember-eager` compiles every Composite to the top "
         "tier before the first call, `ember-warm` is a second `auto` process reading the disk cache the "
         "`ember-auto` run before it filled. **The goals are judged on `ember-auto`.**"
         if jit else "built WITHOUT the JIT (interpreter only).") + "\n")
    w("## Method\n")
    c_loop = any("C timing loop" in (r["summary"].get("steady_source") or "") for r in doc["runs"])
    w(f"* Every (backend, model, size) runs in a fresh subprocess with fresh caches (`NUMBA_CACHE_DIR`, PyTensor "
      f"`compiledir`, `EMBER_CACHE_DIR` in a new temp dir). `nutpie-numba` and `{lead}` (the goal pair) run "
      f"{args.get('repeats', '?')} times on the seed grid and the other workloads, one repeat per phase, each "
      "repeat's models in the same interleaved order so every repeat sees similar machine load; ember's other "
      "modes, the PyTensor backends (context, not goal targets) and the sizes past the seed grid run **once** "
      "(`n` in the tables = runs made). Tables show **medians**.\n"
      "* Run order (most important first, so a run cut short by the budget keeps what matters): "
      + "; ".join(f"{k}. {v}" for k, v in PHASES.items()) + ". The phases' times are in the table below.\n"
      "* Clock starts after the PyMC model is built (imports and model construction excluded); "
      "**ttfg** = time from the model to the first logp+gradient value (for nutpie: `compile_pymc_model` then "
      "one call of its C logp function).\n"
      "* **peak_rss_GB** = `ru_maxrss` of the child from `wait4`. The Python process with PyMC imported and "
      "the model built is ~0.35-0.45 GB of every backend's figure: `incr_GB` is the peak minus that baseline.\n"
      f"* Caps on **every** run: {args.get('wall_cap', 420):.0f} s wall ({args.get('large_wall_cap', 300):.0f} s "
      f"past the seed grid) and {args.get('rss_cap', 2.0):g} GB RSS. The RSS cap is a watchdog that sums the "
      "resident memory of the child's process tree every 50 ms (RSS; PSS while there are several processes, so "
      "a forked child's copy-on-write pages count once) and SIGKILLs the tree above the cap — a hard limit on "
      "resident memory that needs no cgroup (this machine's cgroups belong to its sandbox, so none was created). "
      "`prlimit --as` was not used: it "
      "limits address space, and every backend reserves far more than it touches (this run's VmPeak: "
      + vm_peak_note(rows) + "), so an address-space cap fails runs that need a fraction of it. "
      "A killed run is recorded as killed, never dropped. Near the end of the budget a run's wall cap is cut "
      "so that it ends in time; such a kill says so.")
    if c_loop:
        w("* Steady-state throughput (`evals/s`): nutpie's and ember's nutpie-ABI C function pointer is called from "
          "a small C timing loop (`bench/driver/ctimer.py`, the same loop as `side_by_side.py`; no Python or "
          "ctypes per call) in batches of about 0.5 ms at nutpie's initial point; rate = 1 / the **median** batch's "
          "time per call over the last 2 s of the loop. On a shared "
          "machine the median batch is one the scheduler did not interrupt, where a rate over wall-clock time falls "
          "with the load. The loop runs "
          f"{args.get('curve_s', 8):g} s after the first gradient for `ember-auto`/`ember-warm` (the JIT keeps "
          f"swapping in compiled kernels) and {args.get('steady_s', 2.5):g} s for every other backend. The "
          "PyTensor backends have no C entry point: their batches are timed in Python around "
          "`Function.__call__` (`trust_input`), so their rate includes Python's call overhead and is not "
          "comparable 1:1 with the C-loop rows. `CPU us/eval` = process CPU time per call (all threads: "
          "ember may split large nodes across cores, and ember-auto's JIT compiles on another thread). "
          "`ctypes evals/s` = the old method, kept as a cross-check: 0.5 s of a Python loop of ctypes calls, rate "
          "over wall-clock time.\n"
          "* Warm-up curve: the same loop's batches in 0.25 s bins from the first gradient; each point = the bin's "
          "median batch, plotted against time since the model was handed over.")
    else:
        w("* Steady state: a Python loop calling the compiled function (nutpie and ember: the same ctypes call of "
          "the nutpie-ABI C function pointer; PyTensor: `Function.__call__` with `trust_input`); rate = median of "
          "0.25 s bins over the last 2 s; ember's JIT modes are followed for "
          f"{args.get('curve_s', 12):g} s after the first gradient first. The ctypes loop's own cost per call "
          "(measured on a no-op C function of the same signature) is removed in `net evals/s`; the nutpie/ember "
          "throughput ratio uses the net rates.")
    w("* Sampling wall = ttfg-phase compile time + `nutpie.sample(chains=4, tune=1000, draws=1000, cores=2)`, "
      "in the same process after the steady-state loop, in the first repeat only.\n")
    w(phase_table(doc))
    seed_rows = sorted([r for r in rows if r["group"] == "seed"],
                       key=lambda r: (r["params"]["groups"], r["workload"], order(r["backend"])))
    if c_loop:
        rate_hdr = "CPU us/eval | ctypes evals/s"

        def rate_cols(r):
            return f"{fmt(r['cpu_us_per_eval'], 2)} | {fmt(r['ctypes_evals_per_s'], 0)}"
    else:
        rate_hdr = "net evals/s"

        def rate_cols(r):
            return fmt(net_rate(r), 0)
    ncol = rate_hdr.count("|")
    w("## Seed grid\n")
    w("Laid out like the seed report's table (`wall_s` = time to first gradient). Ratios are against "
      "`nutpie-numba` on the same row's model.\n")
    w(f"| how | kind | groups | shared | peak_rss_GB | wall_s | n | wall_s range | incr_GB | evals/s | {rate_hdr} | "
      "ttfg ratio | RSS ratio | incr ratio | throughput ratio | JIT composites: tiers | JIT peak MB | status |")
    w("|" + "---|" * (18 + ncol))
    for r in seed_rows:
        ref = find(rows, "seed", REF, r["workload"], r["params"])
        j = r["jit_stats"]
        w(f"| {r['backend']} | {r['workload']} | {r['params']['groups']} | {r['params']['shared']} | "
          f"{fmt(r['peak_rss_gb'])} | {fmt(r['ttfg_s'], 1)} | {r['n']} | {rng(r, 'ttfg_s')} | {fmt(incr(r), 3)} | "
          f"{fmt(r['evals_per_s'], 0)} | {rate_cols(r)} | {fmt(ratio(r['ttfg_s'], ref and ref['ttfg_s']), 3)} | "
          f"{fmt(ratio(r['peak_rss_gb'], ref and ref['peak_rss_gb']), 2)} | {fmt(ratio(incr(r), incr(ref)), 3)} | "
          f"{fmt(tput_ratio(r, ref), 2)} | {tiers_str(j)} | "
          f"{fmt(j and j.get('peak_bytes') and j['peak_bytes'] / 2**20, 1)} | {status(r)} |")
    w("")
    eb = [r for r in rows if r["backend"].startswith("ember") and r["graph_ready_s"] is not None]
    if eb:
        w("### Where ember's time to first gradient goes\n")
        w("`prep` = `ember.nutpie.compile_pymc_model`'s Python part: PyMC's logp/gradient graph, PyTensor's "
          "rewrites and nutpie's own `_make_functions` (the same work nutpie does before numba); `ember` = export "
          "+ load + first call (for `ember-eager` this includes compiling every Composite).\n")
        w("| how | model | size | ttfg_s | prep_s | ember_s | ember_s / nutpie ttfg |")
        w("|---|---|---|---|---|---|---|")
        for r in sorted(eb, key=lambda r: (r["group"], r["workload"], sorted(r["params"].items()), order(r["backend"]))):
            if r["group"] != "seed":
                continue
            own = r["ttfg_s"] - r["graph_ready_s"] if r["ttfg_s"] is not None else None
            ref = find(rows, r["group"], REF, r["workload"], r["params"])
            w(f"| {r['backend']} | {r['workload']} | {size(r['params'])} | {fmt(r['ttfg_s'], 2)} | "
              f"{fmt(r['graph_ready_s'], 2)} | {fmt(own, 3)} | {fmt(ratio(own, ref and ref['ttfg_s']), 4)} |")
        w("")
    jr = [r for r in rows if r["jit_stats"] and r["group"] in ("seed", "other", "large")]
    if jr:
        w("### Ember's JIT (median run)\n")
        w("`settled_s` = seconds after the model was handed over when the tier counts stopped changing; "
          "`first/steady` = evaluations/s in the first 0.25 s after the first gradient and at the end.\n")
        w("| how | model | params | composites: tiers | compiles | compile_s (sum) | JIT peak MB | code KB | "
          "cache hits/misses | settled_s | first evals/s | steady evals/s | after sampling: tiers, JIT peak MB |")
        w("|" + "---|" * 13)
        for r in sorted(jr, key=lambda r: (r["group"] != "seed", r["workload"], sorted(r["params"].items()),
                                           order(r["backend"]))):
            j = r["jit_stats"]
            first = r["curve"][0][1] if r["curve"] else None
            w(f"| {r['backend']} | {r['workload']} | {pstr(r['params'])} | {tiers_str(j)} | {j.get('compiles')} | "
              f"{fmt(j.get('compile_seconds'), 2)} | {fmt((j.get('peak_bytes') or 0) / 2**20, 1)} | "
              f"{fmt((j.get('resident_code_bytes') or 0) / 1024, 0)} | {j.get('cache_hits')}/{j.get('cache_misses')} | "
              f"{fmt(settle_time(r), 1)} | {fmt(first, 0)} | {fmt(r['evals_per_s'], 0)} | "
              + (f"{tiers_str(r['jit_after'])}, {fmt((r['jit_after'].get('peak_bytes') or 0) / 2**20, 1)} |"
                 if r["jit_after"] else "– |"))
        w("")
    w("## LogNormal / Gamma peak-memory ratio\n")
    w("| how | groups | shared | gamma GB | lognormal GB | ratio | gamma incr GB | lognormal incr GB | incr ratio |")
    w("|---|---|---|---|---|---|---|---|---|")
    for r in sorted(seed_rows, key=lambda r: (order(r["backend"]), r["params"]["groups"])):
        if r["workload"] != "gamma":
            continue
        ln = find(rows, "seed", r["backend"], "lognormal", r["params"])
        if ln:
            w(f"| {r['backend']} | {r['params']['groups']} | {r['params']['shared']} | {fmt(r['peak_rss_gb'])} | "
              f"{fmt(ln['peak_rss_gb'])} | {fmt(ratio(ln['peak_rss_gb'], r['peak_rss_gb']), 2)} | "
              f"{fmt(incr(r), 3)} | {fmt(incr(ln), 3)} | {fmt(ratio(incr(ln), incr(r)), 2)} |")
    w("")
    w("## Other workloads\n")
    w("Eight schools (non-centered), a radon-style hierarchical model (12 counties, 120 observations), and the "
      "same radon model over 10^5 observations (vector-heavy: every logp/gradient call runs its element-wise "
      "likelihood over 10^5 values).\n")
    w(f"| how | model | params | n_dim | peak_rss_GB | ttfg_s | n | evals/s | {rate_hdr} | ttfg ratio | RSS ratio | "
      "throughput ratio | status |")
    w("|" + "---|" * (13 + ncol))
    for r in sorted([r for r in rows if r["group"] == "other"],
                    key=lambda r: (r["workload"], sorted(r["params"].items()), order(r["backend"]))):
        ref = find(rows, "other", REF, r["workload"], r["params"])
        w(f"| {r['backend']} | {r['workload']} | {pstr(r['params'])} | {fmt(r['n_dim'], 0)} | {fmt(r['peak_rss_gb'])} | "
          f"{fmt(r['ttfg_s'], 1)} | {r['n']} | {fmt(r['evals_per_s'], 0)} | {rate_cols(r)} | "
          f"{fmt(ratio(r['ttfg_s'], ref and ref['ttfg_s']), 3)} | "
          f"{fmt(ratio(r['peak_rss_gb'], ref and ref['peak_rss_gb']), 2)} | {fmt(tput_ratio(r, ref), 2)} | {status(r)} |")
    w("")
    sam = [r for r in rows if r["sample_wall"] is not None]
    w("## End-to-end sampling (4 chains, 1000 tune + 1000 draws, including compilation)\n")
    sload = [r["load_avg_before"][0] for r in doc["runs"] if r["summary"].get("sample_s")]
    w("From the first repeat only (1-min load average before these runs: "
      + (f"{min(sload):.1f}–{max(sload):.1f}" if sload else "–") + "), both backends side by side; `compile_s` is "
      "that run's own compile time.\n")
    w("| how | model | params | n | compile_s | sample_s | wall_s | ratio vs nutpie |")
    w("|---|---|---|---|---|---|---|---|")
    for r in sorted(sam, key=lambda r: (r["group"], r["workload"], sorted(r["params"].items()), order(r["backend"]))):
        ref = find(rows, r["group"], REF, r["workload"], r["params"])
        w(f"| {r['backend']} | {r['workload']} | {pstr(r['params'])} | {r['n_sample']} | {fmt(r['sample_compile'], 1)} | "
          f"{fmt(r['sample_s'], 1)} | {fmt(r['sample_wall'], 1)} | "
          f"{fmt(ratio(r['sample_wall'], ref and ref['sample_wall']), 2)} |")
    w("")
    w(f"## Seed LogNormal under the {args.get('rss_cap', 2.0):g} GB memory cap, every backend, growing size\n")
    w("Seed sizes are the seed-grid runs (they ran under the same caps); the larger sizes ran once, for ember's "
      "default mode and nutpie-numba only (the other backends are not planned there: the hour's budget), each "
      "backend moving to the next size only while it finished the previous one.\n")
    ml = [r for r in rows if r["workload"] == "lognormal" and r["group"] in ("seed", "large")
          and r["backend"] != "ember-warm"]
    for s in doc.get("skipped", []):
        if s["group"] == "large" and s["repeat"] == 0:
            timed = s["why"] == "deadline" or s["why"].startswith("budget")
            ml.append({"backend": s["spec"]["backend"], "params": s["spec"]["params"],
                       "status": "not run (time budget)" if timed else "not tried: " + s["why"],
                       "peak_rss_gb": None, "tree_peak_rss_gb": None, "ttfg_s": None, "n": 0, "failures": []})
    backs = sorted({r["backend"] for r in ml}, key=order)
    sizes_ = sorted({(r["params"]["groups"], r["params"]["shared"]) for r in ml})
    w("| how | " + " | ".join(f"{g}x{s}" for g, s in sizes_) + " |")
    w("|---|" + "---|" * len(sizes_))
    for b in backs:
        cells = []
        for g, s in sizes_:
            r = next((r for r in ml if r["backend"] == b and r["params"] == {"groups": g, "shared": s}), None)
            if r is None:
                cells.append("–")
            elif r["status"] == "ok":
                cells.append(f"ok, {fmt(r['peak_rss_gb'])} GB, {fmt(r['ttfg_s'], 1)} s")
            else:
                pk = f", at {fmt(r['tree_peak_rss_gb'])} GB" if r.get("tree_peak_rss_gb") else ""
                cells.append(f"**{r['status']}**{pk}")
        w(f"| {b} | " + " | ".join(cells) + " |")
    w("")
    w("## Goals vs measured\n")
    w(goals(rows, lead, args))
    w("## Caveats\n")
    for g in caveats(doc, rows, jit):
        w(f"* {g}")
    w("")
    micro = os.path.join(RESULTS, "micro.txt")
    if os.path.exists(micro):
        w("## C++ micro-benchmarks\n")
        w("What the benchmarks printed (`bench/results/micro.txt`; ratio columns as each benchmark defines them):\n")
        w("```")
        with open(micro) as f:
            for line in f:
                w(line.rstrip())
        w("```\n")
    try:
        made = plots(rows)
        w("## Plots\n")
        for m in made:
            w(f"![{m}](img/{m})\n")
    except ImportError as e:
        w(f"(plots skipped: {e})\n")
    with open(args_.md, "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote", args_.md)


def phase_table(doc):
    """Per phase of the run order: runs made, runs not made, wall time; then every run not made and why."""
    runs, sk = doc["runs"], doc.get("skipped", [])
    if not any("phase" in r for r in runs):
        return ""
    lines = ["### Phases and what was not run\n", "| phase | what | runs made | not run | wall min |",
             "|---|---|---|---|---|"]
    for ph in sorted({r["phase"] for r in runs if "phase" in r} | {s["phase"] for s in sk if "phase" in s}):
        made = [r for r in runs if r.get("phase") == ph]
        lines.append(f"| {ph} | {PHASES.get(ph, '')} | {len(made)} | {sum(1 for s in sk if s.get('phase') == ph)} | "
                     f"{sum(r['wall_total_s'] for r in made) / 60:.1f} |")
    lines.append("")
    if sk:
        lines.append("Not run:\n")
        for s in sk:
            sp = s["spec"]
            lines.append(f"* phase {s.get('phase', '?')}: {sp['backend']} {sp['workload']} {pstr(sp['params'])} "
                         f"(repeat {s['repeat'] + 1}) — {s['why']}")
    else:
        lines.append("Every planned run was made.")
    return "\n".join(lines) + "\n"


def pstr(p):
    return ", ".join(f"{k}={v}" for k, v in p.items()) if p else ""


def status(r):
    s = f"{r['n_ok']}/{r['n']} ok" if r["n_ok"] else r["status"]
    if r["n_ok"] and r["failures"]:
        s += " (" + "; ".join(r["failures"]) + ")"
    return s


def vm_peak_note(rows):
    by = {}
    for r in rows:
        if r["vm_peak_kb"]:
            by.setdefault(r["backend"], []).append(r["vm_peak_kb"] / 2**20)
    return ", ".join(f"{b} {min(v):.1f}–{max(v):.1f} GB" for b, v in sorted(by.items(), key=lambda x: order(x[0]))) or "n/a"


def goals(rows, lead, args):
    lines = [f"Judged on `{lead}` against `nutpie-numba`, medians, seed grid unless noted.\n",
             "| goal | target | measured | met? |", "|---|---|---|---|"]

    def pairs(group, b=lead):
        for r in rows:
            if r["group"] == group and r["backend"] == b:
                ref = find(rows, group, REF, r["workload"], r["params"])
                if ref:
                    yield r, ref

    def lab(r):
        return f"{r['workload'][:3]} {size(r['params'])}" if "groups" in r["params"] else \
            f"{r['workload']}{' ' + pstr(r['params']) if r['params'] else ''}"

    def add(goal, target, vals, test, worst_fmt):
        vals = [(x, r) for x, r in vals if x is not None]
        if not vals:
            lines.append(f"| {goal} | {target} | not measured | – |")
            return
        ok = all(test(x) for x, _ in vals)
        lines.append(f"| {goal} | {target} | " + ", ".join(f"{lab(r)}: {x:.3g}" for x, r in vals) +
                     f" | {'yes' if ok else 'no — ' + worst_fmt([x for x, _ in vals])} |")

    add("time to first gradient", "<= 0.01x", [(ratio(r["ttfg_s"], ref["ttfg_s"]), r) for r, ref in pairs("seed")],
        lambda x: x <= 0.01, lambda v: f"worst {max(v) / 0.01:.0f}x over")
    add("(supplement) ember's own part of it (export + load + first call; PyTensor prep excluded)", "<= 0.01x",
        [(ratio(r["ttfg_s"] - r["graph_ready_s"], ref["ttfg_s"]) if r["ttfg_s"] and r["graph_ready_s"] else None, r)
         for r, ref in pairs("seed")], lambda x: x <= 0.01, lambda v: f"worst {max(v) / 0.01:.1f}x over")
    add("peak RSS (whole Python process)", "<= 0.2x",
        [(ratio(r["peak_rss_gb"], ref["peak_rss_gb"]), r) for r, ref in pairs("seed")],
        lambda x: x <= 0.2, lambda v: f"worst {max(v) / 0.2:.1f}x over")
    add("(supplement) RSS added above the Python+PyMC baseline", "<= 0.2x",
        [(ratio(incr(r), incr(ref)), r) for r, ref in pairs("seed")], lambda x: x <= 0.2,
        lambda v: f"worst {max(v) / 0.2:.1f}x over")
    lg = []
    for r in rows:
        if r["group"] == "seed" and r["backend"] == lead and r["workload"] == "gamma":
            ln = find(rows, "seed", lead, "lognormal", r["params"])
            if ln:
                lg.append((ratio(ln["peak_rss_gb"], r["peak_rss_gb"]), {**r, "workload": "ln/ga"}))
    add("LogNormal/Gamma peak-RSS ratio", "<= 1.1 at every size", lg, lambda x: x <= 1.1,
        lambda v: f"worst {max(v):.2f}")
    add("steady-state throughput (seed grid + other workloads)", ">= 1.0x",
        [(tput_ratio(r, ref), r) for r, ref in list(pairs("seed")) + list(pairs("other"))],
        lambda x: x >= 1.0, lambda v: f"worst {min(v):.2f}x")
    add("end-to-end sampling wall", "<= 0.5x",
        [(ratio(r["sample_wall"], ref["sample_wall"]), r) for r, ref in pairs("seed")],
        lambda x: x <= 0.5, lambda v: f"worst {max(v):.2f}x")
    ml = [(1.0 if r["status"] == "ok" else 0.0, {**r, "workload": "lognormal"}) for r in rows
          if r["backend"] == lead and r["workload"] == "lognormal" and r["group"] in ("seed", "large")]
    lines.append(f"| finishes every size under {args.get('rss_cap', 2.0):g} GB | all ok | "
                 + ", ".join(f"{size(r['params'])}: {status(r)}" for _, r in ml) + " | "
                 + ("yes" if ml and all(x == 1.0 for x, _ in ml) else "no" if ml else "–") + " |")
    return "\n".join(lines) + "\n"


def caveats(doc, rows, jit):
    out = []
    c_loop = any("C timing loop" in (r["summary"].get("steady_source") or "") for r in doc["runs"])
    sk = [s for s in doc.get("skipped", []) if s["why"] == "deadline"]
    if sk and not any("phase" in r for r in doc["runs"]):  # newer runs list these under "Phases"
        names = sorted({f"{s['group']} {s['spec']['backend']} {s['spec']['workload']} {pstr(s['spec']['params'])}"
                        f" (repeat {s['repeat']})" for s in sk})
        out.append(f"Not run, the run's deadline had passed ({len(sk)} runs): " + "; ".join(names[:40])
                   + (" ..." if len(names) > 40 else ""))
    warm = []
    for r in doc["runs"]:
        if r["spec"]["backend"] == "ember-warm" and r["summary"].get("evals_per_s"):
            a = next((x for x in doc["runs"] if x["spec"]["backend"] == "ember-auto" and x["group"] == r["group"]
                      and x["spec"]["workload"] == r["spec"]["workload"] and x["spec"]["params"] == r["spec"]["params"]
                      and x.get("repeat") == r.get("repeat") and x["summary"].get("evals_per_s")), None)
            if a:
                warm.append(f"{r['spec']['workload'][:3]} {size(r['spec']['params'])}: "
                            f"{r['summary']['evals_per_s'] / a['summary']['evals_per_s']:.2f}x")
    if warm:
        out.append("`ember-warm` ran only right after the first repeat's `ember-auto` run (under the same load), "
                   "so compare it with that run, not with the medians: warm / cold steady rate " + ", ".join(warm) + ".")
    ones = sorted({f"{r['backend']} {r['workload']} {pstr(r['params'])}" for r in rows
                   if r["n"] == 1 and r["group"] != "large" and r["backend"] in EMBER_ORDER + [REF]})
    if ones:
        out.append("Single runs (n=1) among ember's and nutpie-numba's rows: " + "; ".join(ones))
    out += ["ember's time to first gradient is mostly PyTensor/PyMC work in Python (building the logp and gradient "
            "graphs and rewriting them, as nutpie does before numba); the engine's own part is in the breakdown "
            "table. The <= 1/100 goal cannot be met while that Python part stays in ember's path.",
            "Peak RSS is of the whole Python process: PyMC+PyTensor+nutpie imported with the model built is about "
            "0.35-0.45 GB of every backend's figure, so the <= 1/5 goal cannot be met at these sizes by any engine "
            "running inside that process; `incr_GB` shows what compiling added.",
            ("Throughput of nutpie's and ember's rows is measured without Python in the loop (C timing loop), as "
             "nutpie's sampler calls them; the PyTensor rows' rate includes Python's call overhead." if c_loop else
             "The throughput loop calls through ctypes from Python (~5-10 us per call, measured and removed in the "
             "net rates); nutpie's sampler calls the same C functions without Python."),
            f"On this stack ({', '.join(f'{k} {v}' for k, v in doc.get('versions', {}).items())}) nutpie's "
            "LogNormal/Gamma memory ratio stays near 1 at the seed sizes; the seed report's 3.4x blow-up was on "
            "PyTensor 3.0.5, whose numba wrapper differs."]
    return out


if __name__ == "__main__":
    sys.exit(main())
