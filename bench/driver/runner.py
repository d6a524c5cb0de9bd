"""Runs one benchmark spec in a fresh subprocess under a wall-time cap and an RSS cap.

Fresh caches per run: NUMBA_CACHE_DIR, PyTensor's compiledir and EMBER_CACHE_DIR
point into a new temp dir (EMBER_CACHE_DIR can be given to reuse a warm one).
Memory: a watchdog polls the resident memory of the child's process tree
every 50 ms (RSS, or the summed PSS while there are several processes) and
kills the tree above the cap (a cgroup-free RSS cap; RLIMIT_AS is not
used by default because numba/LLVM reserve far more virtual memory than they
touch). Peak RSS is the child's ru_maxrss from wait4 (the maximum over the
child and every descendant it waited for), cross-checked with the watchdog's
largest tree sum.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _children(pid):
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return kids


def _tree(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += _children(p)
    return out


def _rss_kb(pid, path="status", field="VmRSS:"):
    try:
        with open(f"/proc/{pid}/{path}") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree_kb(pid):
    """Resident memory of the process tree. One process: its RSS. Several: the sum of their PSS, which splits
    shared pages between the processes sharing them, so a forked child (copy-on-write: the parent's RSS again
    until it execs) is not counted twice."""
    pids = _tree(pid)
    if len(pids) == 1:
        return _rss_kb(pid)
    return sum(_rss_kb(p, "smaps_rollup", "Pss:") for p in pids)


# ember's rows and the EMBER_JIT mode each runs in (ember-warm: auto on a disk cache filled by ember-auto).
JIT_MODE = {"ember-auto": "auto", "ember-off": "off", "ember-eager": "eager", "ember-warm": "auto"}


def run_spec(spec, *, wall_cap_s, rss_cap_gb, python, as_limit_gb=None, ember_cache_dir=None):
    tmp = tempfile.mkdtemp(prefix="ember-bench-run-")
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = os.path.join(tmp, "numba")
    env["PYTENSOR_FLAGS"] = f"compiledir={os.path.join(tmp, 'pytensor')}"
    env["EMBER_CACHE_DIR"] = ember_cache_dir or os.path.join(tmp, "ember")
    env["PYTHONHASHSEED"] = "0"
    mode = JIT_MODE.get(spec["backend"])
    if mode:
        env["EMBER_JIT"] = mode
    events_path = os.path.join(tmp, "events.jsonl")
    pre = None
    if as_limit_gb:
        lim = int(as_limit_gb * 2**30)

        def pre():
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.Popen([python, os.path.join(HERE, "child.py"), json.dumps(spec), events_path], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=pre, start_new_session=True)
    state = {"tree_peak_kb": 0, "killed": None}
    cap_kb = rss_cap_gb * 2**20 if rss_cap_gb else None

    finished = threading.Event()

    def watch():  # never poll()/wait() here: wait4 below must reap the child to get its rusage
        while not finished.is_set():
            total = _tree_kb(proc.pid)
            state["tree_peak_kb"] = max(state["tree_peak_kb"], total)
            elapsed = time.perf_counter() - t0
            why = None
            if cap_kb and total > cap_kb:
                why = f"rss_cap ({total / 2**20:.2f} GB > {rss_cap_gb} GB)"
            elif elapsed > wall_cap_s:
                why = f"wall_cap ({wall_cap_s} s)"
            if why:
                state["killed"] = why
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                return
            time.sleep(0.05)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    out, err = [], []
    ts = [threading.Thread(target=lambda s, b: b.append(s.read()), args=(s, b)) for s, b in
          ((proc.stdout, out), (proc.stderr, err))]
    for t in ts:
        t.start()
    _, status, ru = os.wait4(proc.pid, 0)
    finished.set()
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    th.join()
    for t in ts:
        t.join()
    events = []
    if os.path.exists(events_path):
        with open(events_path) as f:
            events = [json.loads(line) for line in f if line.strip()]
    result = {"spec": spec, "wall_total_s": wall, "returncode": proc.returncode, "killed": state["killed"],
              "peak_rss_kb": ru.ru_maxrss, "tree_peak_rss_kb": state["tree_peak_kb"], "events": events,
              "rss_cap_gb": rss_cap_gb, "wall_cap_s": wall_cap_s, "as_limit_gb": as_limit_gb,
              "load_before": load_before}
    if proc.returncode != 0 and not state["killed"]:
        result["error"] = err[0].decode(errors="replace")[-2000:] if err else ""
    shutil.rmtree(tmp, ignore_errors=True)
    return result


def summarize(result):
    """Flat fields from the event list."""
    s = {"status": "ok"}
    if result["killed"]:
        s["status"] = "killed: " + result["killed"]
    elif result["returncode"] < 0:  # a signal from outside the driver (e.g. the kernel's OOM killer)
        s["status"] = f"killed: signal {-result['returncode']}"
    elif result["returncode"] != 0:
        s["status"] = "error"
    for e in result["events"]:
        k = e["event"]
        if k == "model_built":
            s["baseline_rss_kb"] = e["rss_kb"]
            s["n_free_rvs"] = e["n_free_rvs"]
        elif k == "graph_ready":
            s["graph_ready_s"] = e["t"]
        elif k == "compiled":
            s["compile_s"] = e["t"]
        elif k == "first_gradient":
            s["ttfg_s"] = e["t"]
            if "n_dim" in e:
                s["n_dim"] = e["n_dim"]
            if "logp" in e:
                s["logp"] = e["logp"]
        elif k == "steady":
            s["evals_per_s"] = e["evals_per_s"]
            s["steady_source"] = e["source"]
            if "cpu_us" in e:
                s["cpu_us_per_eval"] = e["cpu_us"]
            if "cli_maxrss_kb" in e:
                s["cli_maxrss_kb"] = e["cli_maxrss_kb"]
        elif k == "curve":
            s["curve"] = e["curve"]
        elif k == "ctypes_loop":
            s["ctypes_evals_per_s"] = e["evals_per_s"]
        elif k == "null_call":
            s["null_call_us"] = e["us"]
        elif k == "sampled":
            s["sample_s"] = e["sample_s"]
        elif k == "jit_stats":
            s["jit_stats"] = {a: b for a, b in e.items() if a != "event"}
        elif k == "jit_stats_after_sample":
            s["jit_stats_after_sample"] = {a: b for a, b in e.items() if a != "event"}
        elif k == "tier_curve":
            s["tier_curve"] = e["points"]
        elif k == "rss":
            s["vm_peak_kb"] = e["vm_peak_kb"]
        elif k == "logp_check":
            s["logp"] = e["ember_logp"]
    s["peak_rss_gb"] = result["peak_rss_kb"] / 2**20
    s["tree_peak_rss_gb"] = result["tree_peak_rss_kb"] / 2**20
    return s


if __name__ == "__main__":
    spec = json.loads(sys.argv[1])
    r = run_spec(spec, wall_cap_s=float(sys.argv[2]) if len(sys.argv) > 2 else 600, rss_cap_gb=None,
                 python=sys.executable)
    print(json.dumps([{k: v for k, v in e.items() if k != "curve"} for e in r["events"]]))
    print(json.dumps({**summarize(r), "error": r.get("error")}, indent=1)[:4000])
