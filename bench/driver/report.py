"""bench/results/runs.json (+ micro.txt) -> docs/benchmarks.md and docs/img/bench_*.png.

    python bench/driver/report.py
"""

import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RESULTS = os.path.join(ROOT, "bench", "results")
IMG = os.path.join(ROOT, "docs", "img")
REF = "nutpie-numba"


def key(run):
    sp = run["spec"]
    p = sp["params"]
    return (run["group"], sp["backend"], sp["workload"], tuple(sorted(p.items())))


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def collect(runs):
    """Median over repeats of the same (group, backend, workload, params)."""
    by = {}
    for r in runs:
        for e in r.get("events", []):  # ember.nutpie reports its own split (PyTensor part vs export+load)
            if e["event"] == "compiled" and e.get("timings") and "graph_ready_s" not in r["summary"]:
                r["summary"]["graph_ready_s"] = e["timings"].get("pytensor")
        by.setdefault(key(r), []).append(r)
    rows = []
    for k, rs in by.items():
        ss = [r["summary"] for r in rs]
        ok = [s for s in ss if s["status"] == "ok"]
        use = ok or ss
        row = {"group": k[0], "backend": k[1], "workload": k[2], "params": dict(k[3]), "n": len(rs),
               "n_ok": len(ok), "status": "ok" if ok else ss[-1]["status"]}
        for f in ("ttfg_s", "compile_s", "peak_rss_gb", "tree_peak_rss_gb", "evals_per_s", "sample_s",
                  "null_call_us", "cli_maxrss_kb", "baseline_rss_kb", "n_dim", "graph_ready_s", "logp"):
            row[f] = med([s.get(f) for s in use])
        # A killed run's peak is where it was stopped: report it as a lower bound.
        row["logp"] = use[0].get("logp", use[0].get("ember_logp"))
        row["curve"] = use[0].get("curve")
        row["jit_stats"] = use[0].get("jit_stats")
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


def net_rate(row):
    """Evaluations/s with the Python+ctypes loop's own per-call cost removed (when measured)."""
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


def lp(r, rows):
    ref = find(rows, r["group"], REF, r["workload"], r["params"])
    if r["logp"] is None or ref is None or ref["logp"] is None:
        return "–"
    return f"{r['logp']:.10g} / {ref['logp']:.10g}"


def tput_ratio(r, ref):
    """Throughput ratio, like with like: rates measured without Python loop cost (CLI loop, or net of the
    measured no-op call) against nutpie's net rate; Python-loop rates against nutpie's gross rate."""
    if ref is None:
        return None
    if r["null_call_us"] is not None or r["backend"] == "ember-cli":
        return ratio(net_rate(r), net_rate(ref))
    return ratio(r["evals_per_s"], ref["evals_per_s"])


def find(rows, group, backend, workload, params):
    for r in rows:
        if r["group"] == group and r["backend"] == backend and r["workload"] == workload and r["params"] == params:
            return r
    return None


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def plots(rows, ember):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(IMG, exist_ok=True)
    made = []
    # Warm-up curves: seed LogNormal at each size, every backend with a curve.
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for r in rows:
        if r["group"] == "seed" and r["workload"] == "lognormal" and r["curve"]:
            ts = [0.5] + [t for t, _ in r["curve"]]
            vs = [0.0] + [v for _, v in r["curve"]]
            ax.step(ts, vs, where="post",
                    label=f"{r['backend']} g={r['params']['groups']} s={r['params']['shared']}")
        if r["group"] == "seed" and r["workload"] == "lognormal" and r["backend"] == "ember-cli" and r["ttfg_s"]:
            t = r["ttfg_s"]
            ax.step([0.5, t, t * 1.5], [0, r["evals_per_s"], r["evals_per_s"]], where="post", linestyle="--",
                    label=f"ember-cli g={r['params']['groups']} (derived: CLI median after first gradient)")
    ax.set_xscale("log")
    ax.set_xlim(left=0.5)
    ax.set_xlabel("seconds since the model was handed over (log); solid: Python+ctypes loop, dashed: C++ loop")
    ax.set_ylabel("gradient evaluations / s")
    ax.set_title("Warm-up: seed LogNormal model")
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, "bench_warmup.png"), dpi=110)
    made.append("bench_warmup.png")
    plt.close(fig)
    for field, name, ylabel in (("ttfg_s", "bench_ttfg.png", "time to first gradient (s, log)"),
                                ("peak_rss_gb", "bench_rss.png", "peak RSS (GB, log)")):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        series = {}
        for r in rows:
            if r["group"] in ("seed", "memlimit") and r[field] is not None and r["status"] == "ok":
                series.setdefault((r["backend"], r["workload"]), {})[r["params"]["groups"] * r["params"]["shared"]] = r[field]
        for (b, w), pts in sorted(series.items()):
            xs = sorted(pts)
            ax.plot(xs, [pts[x] for x in xs], marker="o" if w == "gamma" else "s",
                    linestyle="-" if w == "gamma" else "--", label=f"{b} {w}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("model size: groups x shared (log)")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(IMG, name), dpi=110)
        made.append(name)
        plt.close(fig)
    return made


def main():  # noqa: C901
    with open(os.path.join(RESULTS, "runs.json")) as f:
        doc = json.load(f)
    rows = collect(doc["runs"])
    ember = doc.get("ember_backend", "ember-cli")
    jit = doc.get("ember_jit", False)
    out = []
    w = out.append
    ms, me = doc["machine_start"], doc.get("machine_end", doc["machine_start"])
    w("# Benchmarks\n")
    w("Generated by `bench/driver/run_all.sh` (driver: `bench/driver/`, raw results: `bench/results/runs.json`, "
      "`bench/results/micro.txt`). Do not edit by hand.\n")
    w(f"Machine: {ms['nproc']} cores, {ms['platform']}, Python {ms['python']}. Run {ms['time']} – {me['time']}. "
      f"**Load average** at start {', '.join(f'{x:.1f}' for x in ms['load_avg'])}; at end "
      f"{', '.join(f'{x:.1f}' for x in me['load_avg'])} (the machine is shared: other sessions compile while "
      f"this runs, so absolute times are inflated and noisy; ratios measured back to back are the useful part).\n")
    w(f"Ember was measured through: **{ember}**" + (
        " — the Python module (`ember._core`, `ember.nutpie`) had not landed, so ember's path is: nutpie's own "
        "graph preparation (`_make_functions`, PyTensor rewrites, with the Python linker instead of numba) → "
        "`ember.export` → the C++ CLI `ember run` (interpreter only, no JIT: `EMBER_WITH_JIT=OFF`). "
        "Steady-state rate for ember-cli is the CLI's own timing loop (median call); its warm-up curve is "
        "derived (no JIT: flat after the first call)." if ember == "ember-cli" else "") + "\n")
    w("## Method\n")
    w("* Every (backend, model, size) runs in a fresh subprocess with fresh caches: `NUMBA_CACHE_DIR`, PyTensor "
      "`compiledir` and `EMBER_CACHE_DIR` in a new temp dir.\n"
      "* Clock starts after the PyMC model is built (imports and model construction excluded); "
      "**ttfg** = time from the model to the first logp+gradient value.\n"
      "* **peak_rss_GB** = `ru_maxrss` of the child from `wait4` (max over the child and descendants it waited "
      "for, e.g. ember's CLI; the Python process with PyMC imported is ~0.35 GB of every backend's number). "
      "**tree_GB** = the largest *sum* of RSS over the process tree sampled every 50 ms (includes concurrent "
      "`gcc` children of PyTensor's C backend).\n"
      "* Caps: wall time per run (default 420 s) and, for the memory-limit rows, an RSS watchdog that kills "
      "the process tree when its summed RSS exceeds 2 GB (cgroup-free; `RLIMIT_AS` is not used because "
      "numba/LLVM reserve far more address space than they touch). A killed run is reported, not dropped.\n"
      "* Steady-state rate: Python loop calling the compiled function (nutpie: its C `logp` function pointer via "
      "ctypes; PyTensor: `Function.__call__` with `trust_input`), median of 0.25 s bins over the last 2 s. "
      "For nutpie the cost of the loop itself was measured on a no-op function of the same signature "
      "(`null_call_us`) and removed in `net evals/s`.\n"
      "* Sampling wall = compile time + `nutpie.sample(chains=4, tune=1000, draws=1000, cores=2)`.\n")
    # Seed table
    w("## Seed grid (time to first gradient and peak memory)\n")
    w("Laid out like the seed report's table; `wall_s` = time from model to first gradient.\n")
    w("`incr_GB` = peak RSS minus the RSS after imports and model construction (what compiling added).\n")
    w("| how | kind | groups | shared | peak_rss_GB | wall_s | tree_GB | incr_GB | evals/s | net evals/s | "
      "ttfg ratio vs nutpie | RSS ratio vs nutpie | incr ratio vs nutpie | throughput ratio vs nutpie | status |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    seed_rows = sorted([r for r in rows if r["group"] == "seed"],
                       key=lambda r: (r["backend"], r["params"]["groups"], r["workload"]))
    for r in seed_rows:
        ref = find(rows, "seed", REF, r["workload"], r["params"])
        nr = net_rate(r)
        nref = net_rate(ref) if ref else None
        w(f"| {r['backend']} | {r['workload']} | {r['params']['groups']} | {r['params']['shared']} | "
          f"{fmt(r['peak_rss_gb'])} | {fmt(r['ttfg_s'], 1)} | {fmt(r['tree_peak_rss_gb'])} | {fmt(incr(r), 3)} | "
          f"{fmt(r['evals_per_s'], 0)} | {fmt(nr, 0)} | {fmt(ratio(r['ttfg_s'], ref and ref['ttfg_s']), 3)} | "
          f"{fmt(ratio(r['peak_rss_gb'], ref and ref['peak_rss_gb']), 2)} | {fmt(ratio(incr(r), incr(ref)), 3)} | {fmt(tput_ratio(r, ref), 2)} | "
          f"{r['status']} (n={r['n']}) |")
    w("")
    # Ember breakdown
    eb = [r for r in rows if r["backend"] in ("ember", "ember-cli") and r["group"] in ("seed", "other", "memlimit")]
    if eb:
        w("### Where ember's time to first gradient goes\n")
        w("| how | kind | params | ttfg_s | of which Python graph prep (shared with nutpie) | ember's own part "
          "(export + load + first call) | ember process RSS (MB) | logp at nutpie's start point: ember / nutpie |")
        w("|---|---|---|---|---|---|---|---|")
        for r in sorted(eb, key=lambda r: (r["backend"], r["workload"], sorted(r["params"].items()))):
            gr = r.get("graph_ready_s")
            own = r["ttfg_s"] - gr if r["ttfg_s"] is not None and gr is not None else None
            w(f"| {r['backend']} | {r['workload']} | {r['params']} | {fmt(r['ttfg_s'], 2)} | {fmt(gr, 2)} | {fmt(own, 3)} | "
              f"{fmt(r['cli_maxrss_kb'] and r['cli_maxrss_kb'] / 1024, 1)} | {lp(r, rows)} |")
        w("")
    # LogNormal / Gamma
    w("## LogNormal / Gamma peak-memory ratio\n")
    w("| how | groups | shared | gamma GB | lognormal GB | ratio |")
    w("|---|---|---|---|---|---|")
    for r in seed_rows:
        if r["workload"] != "gamma":
            continue
        ln = find(rows, "seed", r["backend"], "lognormal", r["params"])
        if ln:
            w(f"| {r['backend']} | {r['params']['groups']} | {r['params']['shared']} | {fmt(r['peak_rss_gb'])} | "
              f"{fmt(ln['peak_rss_gb'])} | {fmt(ratio(ln['peak_rss_gb'], r['peak_rss_gb']), 2)} |")
    w("")
    # Other workloads
    w("## Other workloads\n")
    w("| how | model | params | n_dim | peak_rss_GB | ttfg_s | evals/s | net evals/s | ttfg ratio | RSS ratio | "
      "throughput ratio | status |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in [r for r in rows if r["group"] == "other"]:
        ref = find(rows, "other", REF, r["workload"], r["params"])
        nr, nref = net_rate(r), (net_rate(ref) if ref else None)
        w(f"| {r['backend']} | {r['workload']} | {r['params'] or ''} | {fmt(r['n_dim'], 0)} | {fmt(r['peak_rss_gb'])} | "
          f"{fmt(r['ttfg_s'], 1)} | {fmt(r['evals_per_s'], 0)} | {fmt(nr, 0)} | "
          f"{fmt(ratio(r['ttfg_s'], ref and ref['ttfg_s']), 3)} | {fmt(ratio(r['peak_rss_gb'], ref and ref['peak_rss_gb']), 2)} | "
          f"{fmt(tput_ratio(r, ref), 2)} | {r['status']} |")
    w("")
    # Sampling
    sam = [r for r in rows if r["sample_s"] is not None]
    w("## End-to-end sampling (4 chains, 1000 tune + 1000 draws, including compilation)\n")
    if sam:
        w("| how | model | params | compile_s | sample_s | wall_s | ratio vs nutpie |")
        w("|---|---|---|---|---|---|---|")
        for r in sam:
            wall = (r["compile_s"] or 0) + r["sample_s"]
            ref = find(rows, r["group"], REF, r["workload"], r["params"])
            rw = (ref["compile_s"] or 0) + ref["sample_s"] if ref and ref["sample_s"] else None
            w(f"| {r['backend']} | {r['workload']} | {r['params'] or ''} | {fmt(r['compile_s'], 1)} | "
              f"{fmt(r['sample_s'], 1)} | {fmt(wall, 1)} | {fmt(ratio(wall, rw), 2)} |")
    if ember == "ember-cli":
        w("\nEmber cannot sample yet: nutpie needs `ember.nutpie.compile_pymc_model` (not landed).\n")
    w("")
    # Memory limit
    w("## Seed LogNormal under a 2 GB memory limit (RSS watchdog on the process tree)\n")
    w("| how | groups | shared | status | peak_rss_GB | tree_GB | ttfg_s |")
    w("|---|---|---|---|---|---|---|")
    ml = [r for r in rows if r["group"] == "memlimit"]
    for r in rows:  # nutpie at the seed sizes: its uncapped seed run, judged against the cap
        if r["group"] == "seed" and r["backend"] == REF and r["workload"] == "lognormal":
            over = (r["tree_peak_rss_gb"] or 0) > 2.0
            ml.append({**r, "status": ("over 2 GB" if over else "under 2 GB") + " (uncapped seed run)"})
    for r in sorted(ml, key=lambda r: (r["backend"], r["params"]["groups"])):
        w(f"| {r['backend']} | {r['params']['groups']} | {r['params']['shared']} | {r['status']} | "
          f"{fmt(r['peak_rss_gb'])} | {fmt(r['tree_peak_rss_gb'])} | {fmt(r['ttfg_s'], 1)} |")
    w("")
    # Goals
    w("## Goals vs measured\n")
    w(goals(rows, ember))
    w("## What is missing / caveats\n")
    gaps = []
    if ember == "ember-cli":
        gaps += ["Ember was measured without its JIT and without its Python module: no warm-up curve was measured "
                 "for ember (the plotted one is derived), no tier counts or JIT peak memory, no warm-disk-cache "
                 "run, and no end-to-end sampling run (nutpie cannot drive ember until `ember.nutpie` lands).",
                 "Ember's time to first gradient includes nutpie's own graph preparation in Python (PyTensor "
                 "rewrites, gradient, and C-mode compilation of PyMC's initial-point function), which ember shares "
                 "with every backend; the breakdown table shows ember's own part separately."]
    else:
        gaps += ["Ember was measured through `ember.nutpie.compile_pymc_model` and `ember._core`"
                 + (" with the JIT." if jit else " built WITHOUT the JIT (`EMBER_WITH_JIT=OFF`): interpreter only, "
                    "so its warm-up curve is flat, there are no tier counts or JIT peak memory, and the JIT modes "
                    "and warm-disk-cache runs were not made."),
                 "ember.nutpie prepares the graph with PyTensor's `fast_run` rewrites (no C/numba code), plus "
                 "PyMC's initial-point function; that Python part is most of ember's time to first gradient "
                 "(breakdown table). ember-cli rows use NUMBA mode's rewrites with the Python linker instead."]
    gaps += ["Peak RSS is of the whole Python process; PyMC+PyTensor+nutpie imported with the model built is "
             "about 0.35-0.4 GB of every backend's figure, so the <= 1/5 RSS goal cannot be met by the engine alone "
             "at small sizes. `incr_GB` shows what compiling added.",
             "Rows marked n=1 are single runs: on this loaded machine single-run times vary by 2x "
             "(e.g. the same PyTensor-numba compile measured 21 s and 48 s).",
             "`net evals/s` subtracts a separately measured per-call loop cost; where that cost is most of the "
             "call (eight schools: ~7 of ~11 us) the net figure is fragile.",
             "On this stack (PyTensor 2.38.3, numba 0.65.1) nutpie's LogNormal/Gamma memory ratio stays near 1 at "
             "the sizes measured; the seed report's blow-up was on PyTensor 3.0.5."]
    for g in gaps:
        w(f"* {g}")
    w("")
    # Micro
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
        made = plots(rows, ember)
        w("## Plots\n")
        for m in made:
            w(f"![{m}](img/{m})\n")
    except ImportError as e:
        w(f"(plots skipped: {e})\n")
    with open(os.path.join(ROOT, "docs", "benchmarks.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote docs/benchmarks.md")


def goals(rows, ember):
    lines = ["| goal | target | measured (ember vs nutpie-numba) | met? |", "|---|---|---|---|"]

    def pairs(group):
        for r in rows:
            if r["group"] == group and r["backend"] == ember:
                ref = find(rows, group, REF, r["workload"], r["params"])
                if ref:
                    yield r, ref

    def add(goal, target, vals, ok):
        if not vals:
            lines.append(f"| {goal} | {target} | not measured | – |")
            return
        lines.append(f"| {goal} | {target} | {vals} | {ok} |")

    t = [(ratio(r["ttfg_s"], ref["ttfg_s"]), r) for r, ref in pairs("seed") if ratio(r["ttfg_s"], ref["ttfg_s"])]
    add("time to first gradient", "<= 0.01x", ", ".join(f"{x:.3f}" for x, _ in t),
        "yes" if t and all(x <= 0.01 for x, _ in t) else f"no (worst {max(x for x, _ in t) / 0.01:.0f}x over)" if t else "–")
    own = [ratio(r["ttfg_s"] - r["graph_ready_s"], ref["ttfg_s"]) for r, ref in pairs("seed")
           if r["ttfg_s"] is not None and r.get("graph_ready_s") is not None and ref["ttfg_s"]]
    add("(supplement) ember's own part only (export + load + first call, Python graph prep excluded)", "<= 0.01x",
        ", ".join(f"{x:.4f}" for x in own), "yes" if own and all(x <= 0.01 for x in own) else "no" if own else "–")
    m = [ratio(r["peak_rss_gb"], ref["peak_rss_gb"]) for r, ref in pairs("seed")]
    m = [x for x in m if x]
    add("peak RSS (whole Python process)", "<= 0.2x", ", ".join(f"{x:.2f}" for x in m),
        "yes" if m and all(x <= 0.2 for x in m) else f"no (worst {max(m) / 0.2:.1f}x over)" if m else "–")
    mi = [ratio(incr(r), incr(ref)) for r, ref in pairs("seed")]
    mi = [x for x in mi if x is not None]
    add("(supplement) RSS added by compiling, above the Python baseline", "<= 0.2x", ", ".join(f"{x:.3f}" for x in mi),
        "yes" if mi and all(x <= 0.2 for x in mi) else "no" if mi else "–")
    lg = []
    for r in rows:
        if r["group"] == "seed" and r["backend"] == ember and r["workload"] == "gamma":
            ln = find(rows, "seed", ember, "lognormal", r["params"])
            if ln and ratio(ln["peak_rss_gb"], r["peak_rss_gb"]):
                lg.append(ratio(ln["peak_rss_gb"], r["peak_rss_gb"]))
    add("LogNormal/Gamma memory ratio (ember)", "<= 1.1 at every size", ", ".join(f"{x:.2f}" for x in lg),
        "yes" if lg and all(x <= 1.1 for x in lg) else "no" if lg else "–")
    th = [tput_ratio(r, ref) for r, ref in list(pairs("seed")) + list(pairs("other"))]
    th = [x for x in th if x]
    add("steady-state throughput", ">= 1.0x", ", ".join(f"{x:.2f}" for x in th),
        "yes" if th and all(x >= 1.0 for x in th) else f"no (worst {min(th):.2f}x)" if th else "–")
    sw = []
    for r in rows:
        if r["backend"] == ember and r["sample_s"]:
            ref = find(rows, r["group"], REF, r["workload"], r["params"])
            if ref and ref["sample_s"]:
                sw.append(((r["compile_s"] or 0) + r["sample_s"]) / ((ref["compile_s"] or 0) + ref["sample_s"]))
    add("end-to-end sampling wall", "<= 0.5x", ", ".join(f"{x:.2f}" for x in sw),
        "yes" if sw and all(x <= 0.5 for x in sw) else "no" if sw else "–")
    ml = [r for r in rows if r["group"] == "memlimit" and r["backend"] == ember]
    add("finishes every size under 2 GB", "all ok",
        ", ".join(f"{r['params']['groups']}x{r['params']['shared']}: {r['status']}" for r in ml),
        "yes" if ml and all(r["status"] == "ok" for r in ml) else "no" if ml else "–")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
