"""How long each run of the grid is expected to take, from an earlier runs.json; the planned grid's table.

Per run: fixed (interpreter start, imports, model build, exit) + ttfg + the throughput loop (--curve-s for
ember's auto/warm modes, --steady-s for the others, plus 0.5 s of the ctypes cross-check) + sampling when the
run samples. ttfg is the median of the earlier run's quiet repeats (1-min load average before the run < 6);
a spec measured only under load is scaled by the quiet/loaded ratio of the same backend's other specs. Sizes
never measured are extrapolated along groups x shared from the same backend's two largest measured sizes.
run.py uses the estimate to skip a run that cannot end before the budget's finish time.
"""

import json
import math
import os
import statistics

QUIET = 6.0  # 1-min load average below which a run counts as quiet


def _key(backend, workload, params):
    return (backend, workload, json.dumps(params, sort_keys=True))


def _cells(params):
    return params["groups"] * params["shared"] if "groups" in params else None


class Estimates:
    def __init__(self, path):
        self.by, self.fixed, self.scale = {}, 4.0, {}
        if not path or not os.path.exists(path):
            return
        with open(path) as f:
            runs = json.load(f).get("runs", [])
        fixed = []
        for r in runs:
            sp, s = r["spec"], r["summary"]
            b = "ember-auto" if sp["backend"] == "ember-warm" else sp["backend"]  # warm: no data of its own
            self.by.setdefault(_key(b, sp["workload"], sp["params"]), []).append(r)
            ev = {e["event"]: e for e in r.get("events", [])}
            curve = s.get("curve") or []
            if s["status"] == "ok" and r["load_avg_before"][0] < QUIET and s.get("ttfg_s") and curve:
                loop = curve[-1][0] - s["ttfg_s"] + (1.0 if "null_call" in ev else 0.0)
                fixed.append(r["wall_total_s"] - s["ttfg_s"] - loop - (s.get("sample_s") or 0))
        if fixed:
            self.fixed = statistics.median(fixed)
        for b in {k[0] for k in self.by}:  # loaded/quiet ttfg ratio per backend, from specs measured both ways
            ratios = []
            for k, rs in self.by.items():
                if k[0] == b:
                    q, ld = self._ttfgs(rs, True), self._ttfgs(rs, False)
                    if q and ld:
                        ratios.append(statistics.median(ld) / statistics.median(q))
            self.scale[b] = statistics.median(ratios) if ratios else 1.0

    @staticmethod
    def _ttfgs(rs, quiet):
        return [r["summary"]["ttfg_s"] for r in rs if r["summary"]["status"] == "ok" and r["summary"].get("ttfg_s")
                and (r["load_avg_before"][0] < QUIET) == quiet]

    def ttfg(self, backend, workload, params, wall_cap):
        """(seconds, how it was obtained) or (None, why not)."""
        b = "ember-auto" if backend == "ember-warm" else backend
        rs = self.by.get(_key(b, workload, params))
        if rs:
            q, ld = self._ttfgs(rs, True), self._ttfgs(rs, False)
            if q:
                return statistics.median(q), "quiet"
            if ld:
                return min(ld) / self.scale.get(b, 1.0), "scaled"
            if any(r["summary"]["status"].startswith("killed") for r in rs):
                return wall_cap, "killed at its cap before"
        n = _cells(params)
        if n is not None:  # extrapolate along groups x shared
            pts = sorted((_cells(json.loads(k[2])), self.ttfg(b, workload, json.loads(k[2]), wall_cap)[0])
                         for k in self.by if k[0] == b and k[1] == workload and k[2] != json.dumps(params, sort_keys=True))
            pts = [(c, t) for c, t in pts if t and c < n]
            if len(pts) >= 2:
                (c1, t1), (c2, t2) = pts[-2], pts[-1]
                k = max(1.0, math.log(t2 / t1) / math.log(c2 / c1)) if t2 > t1 else 1.0
                return min(wall_cap, t2 * (n / c2) ** k), "extrapolated"
        return None, "no earlier measurement"

    def sample(self, backend, workload, params):
        b = "ember-auto" if backend == "ember-warm" else backend
        rs = [r for r in self.by.get(_key(b, workload, params), []) if r["summary"].get("sample_s")]
        if not rs:
            return None
        r = rs[0]
        quiet = r["load_avg_before"][0] < QUIET
        return r["summary"]["sample_s"] / (1.0 if quiet else self.scale.get(b, 1.0))

    def run(self, spec, wall_cap, curve_s, steady_s):
        """{phase: seconds} for one run, or None when its ttfg cannot be estimated."""
        t, how = self.ttfg(spec["backend"], spec["workload"], spec["params"], wall_cap)
        if t is None:
            return None
        if how == "killed at its cap before":
            return {"fixed": self.fixed, "ttfg": wall_cap, "loop": 0.0, "sample": 0.0, "how": how}
        ptr = spec["backend"].startswith(("ember", "nutpie"))
        loop = (curve_s if spec.get("tiered") else steady_s) + (0.5 if ptr else 0.0)
        smp = (self.sample(spec["backend"], spec["workload"], spec["params"]) or 0.0) if spec.get("sample") else 0.0
        return {"fixed": self.fixed, "ttfg": t, "loop": loop, "sample": smp, "how": how}


def total(e):
    return None if e is None else e["fixed"] + e["ttfg"] + e["loop"] + e["sample"]


def plan_table(rows):
    """rows: [(phase, group, spec, repeat, estimate dict or None)] -> Markdown lines (per phase, then in total)."""
    out = ["| phase | runs | fixed s | ttfg s | throughput loop s | sampling s | total min | cumulative min | "
           "not estimated |", "|---|---|---|---|---|---|---|---|---|"]
    cum = 0.0
    for ph in sorted({r[0] for r in rows}):
        rs = [r for r in rows if r[0] == ph]
        es = [r[4] for r in rs if r[4]]
        sums = {k: sum(e[k] for e in es) for k in ("fixed", "ttfg", "loop", "sample")}
        t = sum(sums.values())
        cum += t
        out.append(f"| {ph} | {len(rs)} | {sums['fixed']:.0f} | {sums['ttfg']:.0f} | {sums['loop']:.0f} | "
                   f"{sums['sample']:.0f} | {t / 60:.1f} | {cum / 60:.1f} | {len(rs) - len(es)} |")
    return out
