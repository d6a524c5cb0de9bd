"""Side-by-side math_bench: runs two builds alternately and prints, per case
and column, the median over runs of each run's median and of each run's min.
Usage: python3 bench/math_bench_ab.py BEFORE AFTER RUNS [n reps case-prefix ...]"""
import statistics
import subprocess
import sys


def parse(out):
    rows = {}
    for line in out.splitlines()[1:]:
        parts = line.replace("[", " ").replace("]", " ").split()
        rows[parts[0]] = [float(v) for v in parts[1:]]
    return rows


def main():
    before, after, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    args = sys.argv[4:] or ["4096", "7"]
    res = {before: [], after: []}
    for _ in range(runs):
        for b in (before, after):
            res[b].append(parse(subprocess.run([b] + args, capture_output=True, text=True).stdout))
    cols = ["vector", "scalar", "glibc"]
    print(f"{'function':13s} " + " ".join(f"{c + ' before':>16s} {c + ' after':>16s}" for c in cols[:2]) + f" {'glibc':>16s}")
    print(f"{'':13s} " + "   (median of run medians [median of run mins]) ns/element, " + str(runs) + " runs")
    for name in res[before][0]:
        line = f"{name:13s}"
        for k in range(3):
            for b in ((before, after) if k < 2 else (after,)):
                vals = [r[name] for r in res[b] if name in r]
                if len(vals[0]) <= 2 * k:
                    continue
                med = statistics.median(v[2 * k] for v in vals)
                mn = statistics.median(v[2 * k + 1] for v in vals)
                line += f" {med:7.2f} [{mn:6.2f}]"
        print(line, flush=True)


if __name__ == "__main__":
    main()
