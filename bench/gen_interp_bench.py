#!/usr/bin/env python3
"""Writes bench/interp_bench_cases.hpp: the benchmark Composites (generated
randomly but deterministically) and, for each, the plain C++ a person would
write for it, in two forms: fused per element (math library called per
element) and blocked (math library called once per block).

    python3 bench/gen_interp_bench.py > bench/interp_bench_cases.hpp
"""
import random

ARITH = ["Add", "Mul", "Sub", "TrueDiv"]
CMP = {"LT": "<", "GT": ">", "LE": "<=", "GE": ">="}
MATH = {"Exp": "exp", "Log": "log", "Log1p": "log1p"}


class Gen:
    def __init__(self, seed, n_inputs, consts):
        self.rng = random.Random(seed)
        self.inputs = n_inputs
        self.consts = consts
        self.nodes = []  # (op, dtype, [inputs])
        self.kind = ["f"] * (n_inputs + len(consts))
        self.unused = []  # node values no one reads yet (kept few: no dead code)
        self.next_input = 0

    def nv(self):
        return self.inputs + len(self.consts) + len(self.nodes)

    def add(self, op, dtype, ins):
        self.nodes.append((op, dtype, ins))
        self.kind.append("b" if dtype == "bool" else "f")
        for i in ins:
            if i in self.unused:
                self.unused.remove(i)
        self.unused.append(self.nv() - 1)
        return self.nv() - 1

    def leaf(self):
        r = self.rng.random()
        if r < 0.8:
            # every input is read (as in PyTensor's Composites): unread ones first
            if self.next_input < self.inputs:
                self.next_input += 1
                return self.next_input - 1
            return self.rng.randrange(self.inputs)
        return self.inputs + self.rng.randrange(len(self.consts))

    def recent_float(self):
        pend = [v for v in self.unused if self.kind[v] == "f"]
        if pend:
            return pend[0]
        fl = [v for v in range(self.inputs + len(self.consts), self.nv()) if self.kind[v] == "f"]
        if not fl:
            return self.leaf()
        return self.rng.choice(fl[-6:])


def build(seed, n_ops, n_inputs, n_outputs, p_math, p_switch, p_sqr):
    """Values stay near 1: each op combines a recent value with a fresh
    input in [0.5, 2]; math ops take positive arguments."""
    g = Gen(seed, n_inputs, [0.5, 2.0, 1.5])
    while len(g.nodes) + (g.inputs - g.next_input) < n_ops:
        r = g.rng.random()
        if r < p_math:
            op = g.rng.choice(list(MATH))
            if op == "Exp":
                t = g.add("Sub", "float64", [g.leaf(), g.leaf()])
            else:
                t = g.add("Mul", "float64", [g.leaf(), g.leaf()])
            m = g.add(op, "float64", [t])
            g.add(g.rng.choice(["Add", "Mul"]), "float64", [g.recent_float(), m])
        elif r < p_math + p_switch:
            c = g.add(g.rng.choice(list(CMP)), "bool", [g.recent_float(), g.leaf()])
            g.add("Switch", "float64", [c, g.recent_float(), g.leaf()])
        elif r < p_math + p_switch + p_sqr:
            s = g.add("Sqr", "float64", [g.leaf()])
            g.add("Add", "float64", [g.recent_float(), s])
        else:
            op = g.rng.choice(ARITH)
            a, b = g.recent_float(), g.leaf()
            if g.rng.random() < 0.5 and op in ("Add", "Mul"):
                a, b = b, a
            g.add(op, "float64", [a, b])
    while g.next_input < g.inputs:  # read the inputs not read yet
        g.add(g.rng.choice(ARITH), "float64", [g.recent_float(), g.leaf()])
    # Every value is read: fold what is left into the outputs.
    pend = [v for v in g.unused if g.kind[v] == "f"]
    while len(pend) > n_outputs:
        a, b = pend[0], pend[1]
        g.add("Add", "float64", [a, b])
        pend = [v for v in g.unused if g.kind[v] == "f"]
    floats = [v for v in range(g.inputs + len(g.consts), g.nv()) if g.kind[v] == "f"]
    outs = pend + [v for v in floats[-n_outputs * 3:] if v not in pend][: n_outputs - len(pend)]
    return g, outs


def expr(g, op, ins, name):
    a = [name(i) for i in ins]
    if op in ("Add", "Sub", "Mul", "TrueDiv"):
        sym = {"Add": "+", "Sub": "-", "Mul": "*", "TrueDiv": "/"}[op]
        return f"{a[0]} {sym} {a[1]}"
    if op in CMP:
        return f"{a[0]} {CMP[op]} {a[1]} ? 1.0 : 0.0"
    if op == "Switch":
        return f"{a[0]} != 0 ? {a[1]} : {a[2]}"
    if op == "Sqr":
        return f"{a[0]} * {a[0]}"
    raise ValueError(op)


def emit(tag, g, outs):
    first = g.inputs + len(g.consts)
    lines = []
    # The Composite.
    lines.append(f"inline ember::interp::Composite case_{tag}() {{")
    lines.append("  using namespace ember::interp;")
    lines.append("  Composite c;")
    lines.append(f"  c.inputs.assign({g.inputs}, ember::DType::Float64);")
    for k in g.consts:
        lines.append(f"  c.constants.push_back({{ember::DType::Float64, {k!r}, 0}});")
    for op, dt, ins in g.nodes:
        d = "Bool" if dt == "bool" else "Float64"
        lines.append(f"  c.nodes.push_back({{ScalarOp::{op}, ember::DType::{d}, {{{', '.join(map(str, ins))}}}}});")
    lines.append(f"  c.outputs = {{{', '.join(map(str, outs))}}};")
    lines.append("  return c;")
    lines.append("}")

    def cname(v):
        if v < g.inputs:
            return f"x{v}"
        if v < first:
            return repr(g.consts[v - g.inputs])
        return f"v{v}"

    # Fused per element.
    lines.append(f"inline void fused_{tag}(int64_t n, const double* const* in, double* const* out) {{")
    lines.append("  for (int64_t i = 0; i < n; ++i) {")
    for k in range(g.inputs):
        lines.append(f"    const double x{k} = in[{k}][i];")
    for j, (op, dt, ins) in enumerate(g.nodes):
        v = first + j
        if op in MATH:
            lines.append(f"    const double v{v} = ember::math::{MATH[op]}({cname(ins[0])});")
        else:
            lines.append(f"    const double v{v} = {expr(g, op, ins, cname)};")
    for k, o in enumerate(outs):
        lines.append(f"    out[{k}][i] = {cname(o)};")
    lines.append("  }")
    lines.append("}")

    # Blocked: one loop per node over a block, math library once per block.
    nn = len(g.nodes)
    lines.append(f"inline void blocked_{tag}(int64_t n, const double* const* in, double* const* out) {{")
    lines.append("  constexpr int64_t B = 128;")
    lines.append(f"  static thread_local double t[{nn}][B];")
    lines.append("  for (int64_t s = 0; s < n; s += B) {")
    lines.append("    const int64_t m = n - s < B ? n - s : B;")

    def bname(v):
        if v < g.inputs:
            return f"in[{v}][s + i]"
        if v < first:
            return repr(g.consts[v - g.inputs])
        return f"t[{v - first}][i]"

    for j, (op, dt, ins) in enumerate(g.nodes):
        if op in MATH:
            a = ins[0]
            src = f"in[{a}] + s" if a < g.inputs else f"t[{a - first}]"
            lines.append(f"    ember::math::{MATH[op]}(m, {src}, t[{j}]);")
        else:
            lines.append(f"    for (int64_t i = 0; i < m; ++i) t[{j}][i] = {expr(g, op, ins, bname)};")
    for k, o in enumerate(outs):
        lines.append(f"    for (int64_t i = 0; i < m; ++i) out[{k}][s + i] = {bname(o)};")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


def main():
    print("// Generated by bench/gen_interp_bench.py: do not edit.")
    print("#pragma once")
    print("#include <cstdint>")
    print('#include "interp/composite.hpp"')
    print('#include "interp/math/math.hpp"')
    print()
    cases = [
        ("a", build(1, 25, 4, 1, 0.0, 0.0, 0.1)),
        ("b", build(2, 100, 8, 1, 0.25, 0.0, 0.05)),
        ("c", build(3, 400, 16, 2, 0.08, 0.15, 0.05)),
        ("d", build(4, 350, 280, 28, 0.04, 0.2, 0.08)),
    ]
    for tag, (g, outs) in cases:
        print(emit(tag, g, outs))
        print()


if __name__ == "__main__":
    main()
