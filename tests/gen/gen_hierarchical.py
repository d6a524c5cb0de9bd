"""Writes tests/data/hierarchical_logp.json, a hand-built graph of a
hierarchical normal model's logp and gradient in the shape nutpie hands over
(flat parameter vector in, logp and a Join of gradient pieces out), plus
tests/data/hierarchical_expected.json: NumPy's values at random points.

Model: y_i ~ N(mu + a[g_i], sigma), a_j ~ N(0, exp(log_tau)),
mu ~ N(0, 10), log_tau ~ N(0, 1); x = [mu, log_tau, a_0 .. a_{J-1}].
"""
import json
import os

import numpy as np

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
rng = np.random.default_rng(20261129)
J, N = 8, 200
g = rng.integers(0, J, size=N)
a_true = rng.normal(0, 0.7, size=J)
sigma = 0.5
y = 1.5 + a_true[g] + rng.normal(0, sigma, size=N)


def logp_grad(x):
    mu, log_tau, a = x[0], x[1], x[2:]
    tau = np.exp(log_tau)
    r = (y - mu - a[g]) / sigma
    lp = (-0.5 * np.sum(r**2) - N * np.log(sigma) - 0.5 * N * np.log(2 * np.pi)
          - 0.5 * np.sum((a / tau) ** 2) - J * log_tau - 0.5 * J * np.log(2 * np.pi)
          - 0.5 * (mu / 10) ** 2 - np.log(10) - 0.5 * np.log(2 * np.pi)
          - 0.5 * log_tau**2 - 0.5 * np.log(2 * np.pi))
    d_mu = np.sum(r) / sigma - mu / 100
    d_a = np.zeros(J)
    np.add.at(d_a, g, r / sigma)
    d_a -= a / tau**2
    d_lt = np.sum(a**2) / tau**2 - J - log_tau
    return lp, np.concatenate([[d_mu], [d_lt], d_a])


class G:
    def __init__(self):
        self.vars, self.nodes, self.consts = [], [], []

    def var(self, dtype, shape, name=None):
        v = {"dtype": dtype, "shape": shape}
        if name:
            v["name"] = name
        self.vars.append(v)
        return len(self.vars) - 1

    def const(self, value, dtype):
        arr = np.asarray(value)
        v = self.var(dtype, list(arr.shape))
        self.consts.append({"var": v, "data": arr.ravel().tolist()})
        return v

    def node(self, op, inputs, out_specs, **attrs):
        outs = [self.var(*s) for s in out_specs]
        self.nodes.append({"op": op, "inputs": inputs, "outputs": outs, "attrs": attrs})
        return outs[0] if len(outs) == 1 else outs


def scal(op):
    return {"scalar_op": {"op": op}}


def build():
    b = G()
    x = b.var("float64", [J + 2], "x")
    yv = b.const(y, "float64")
    gv = b.const(g, "int64")
    F = "float64"
    mu = b.node("Subtensor", [x], [(F, [])], idx_list=[{"type": "index", "value": 0}])
    lt = b.node("Subtensor", [x], [(F, [])], idx_list=[{"type": "index", "value": 1}])
    a = b.node("Subtensor", [x], [(F, [J])], idx_list=[{"type": "slice", "start": 2, "stop": None, "step": None}])
    ag = b.node("AdvancedSubtensor1", [a, gv], [(F, [N])])
    mu1 = b.node("DimShuffle", [mu], [(F, [1])], new_order=["x"])
    # r = (y - mu - a_g) / sigma and its square, one Composite with two outputs
    comp = {"op": "Composite", "inputs": [F, F, F],
            "constants": [{"dtype": F, "value": sigma}, {"dtype": "int8", "value": 2}],
            "nodes": [{"op": "Sub", "inputs": [0, 1], "dtype": F},
                      {"op": "Sub", "inputs": [5, 2], "dtype": F},
                      {"op": "TrueDiv", "inputs": [6, 3], "dtype": F},
                      {"op": "Pow", "inputs": [7, 4], "dtype": F}],
            "outputs": [7, 8]}
    r, r2 = b.node("Elemwise", [yv, mu1, ag], [(F, [N]), (F, [N])], scalar_op=comp)
    sum_r2 = b.node("Sum", [r2], [(F, [])], axis=None)
    sum_r = b.node("Sum", [r], [(F, [])], axis=None)
    tau = b.node("Elemwise", [lt], [(F, [])], **scal("Exp"))
    tau1 = b.node("DimShuffle", [tau], [(F, [1])], new_order=["x"])
    a_over = b.node("Elemwise", [a, tau1], [(F, [J])], **scal("TrueDiv"))
    a_over2 = b.node("Elemwise", [a_over], [(F, [J])], **scal("Sqr"))
    sum_a2 = b.node("Sum", [a_over2], [(F, [])], axis=None)
    # logp from the scalar pieces
    c = lambda v: b.const(v, F)
    lp_comp = {"op": "Composite", "inputs": [F, F, F, F, F, F, F],
               "nodes": [{"op": "Mul", "inputs": [5, 0], "dtype": F},     # 8: -0.5 sum r^2
                         {"op": "Mul", "inputs": [5, 2], "dtype": F},     # 9: -0.5 sum (a/tau)^2
                         {"op": "Mul", "inputs": [6, 1], "dtype": F},     # 10: -J log_tau
                         {"op": "Mul", "inputs": [3, 3], "dtype": F},     # 11: mu^2
                         {"op": "Mul", "inputs": [7, 11], "dtype": F},    # 12: 0.01 mu^2
                         {"op": "Mul", "inputs": [5, 12], "dtype": F},    # 13
                         {"op": "Mul", "inputs": [4, 4], "dtype": F},     # 14: log_tau^2
                         {"op": "Mul", "inputs": [5, 14], "dtype": F},    # 15
                         {"op": "Add", "inputs": [8, 9, 10, 13, 15], "dtype": F}],
               "constants": [{"dtype": F, "value": 0.01}],
               "outputs": [16]}
    # inputs: sum_r2, log_tau, sum_a2, mu, log_tau(again as 4), const -0.5, const -J
    k = -N * np.log(sigma) - 0.5 * N * np.log(2 * np.pi) - 0.5 * J * np.log(2 * np.pi) \
        - np.log(10) - 0.5 * np.log(2 * np.pi) - 0.5 * np.log(2 * np.pi)
    lp0 = b.node("Elemwise", [sum_r2, lt, sum_a2, mu, lt, c(-0.5), c(float(-J))], [(F, [])], scalar_op=lp_comp)
    lp = b.node("Elemwise", [lp0, c(k)], [(F, [])], **scal("Add"))
    # gradient pieces
    d_mu = b.node("Elemwise", [sum_r, mu, c(sigma), c(100.0)], [(F, [])], scalar_op={
        "op": "Composite", "inputs": [F, F, F, F],
        "nodes": [{"op": "TrueDiv", "inputs": [0, 2], "dtype": F},
                  {"op": "TrueDiv", "inputs": [1, 3], "dtype": F},
                  {"op": "Sub", "inputs": [4, 5], "dtype": F}],
        "outputs": [6]})
    tau2 = b.node("Elemwise", [tau], [(F, [])], **scal("Sqr"))
    sum_a_sq = b.node("Sum", [b.node("Elemwise", [a], [(F, [J])], **scal("Sqr"))], [(F, [])], axis=None)
    d_lt = b.node("Elemwise", [sum_a_sq, tau2, lt, c(float(J))], [(F, [])], scalar_op={
        "op": "Composite", "inputs": [F, F, F, F],
        "nodes": [{"op": "TrueDiv", "inputs": [0, 1], "dtype": F},
                  {"op": "Sub", "inputs": [4, 3], "dtype": F},
                  {"op": "Sub", "inputs": [5, 2], "dtype": F}],
        "outputs": [6]})
    r_over = b.node("Elemwise", [r, b.const([sigma], F)], [(F, [N])], **scal("TrueDiv"))
    zeros = b.node("Alloc", [c(0.0), b.const(J, "int64")], [(F, [J])])
    scat = b.node("AdvancedIncSubtensor1", [zeros, r_over, gv], [(F, [J])], set_instead_of_inc=False)
    tau2_1 = b.node("DimShuffle", [tau2], [(F, [1])], new_order=["x"])
    d_a = b.node("Elemwise", [scat, a, tau2_1], [(F, [J])], scalar_op={
        "op": "Composite", "inputs": [F, F, F],
        "nodes": [{"op": "TrueDiv", "inputs": [1, 2], "dtype": F},
                  {"op": "Sub", "inputs": [0, 3], "dtype": F}],
        "outputs": [4]})
    d_mu1 = b.node("DimShuffle", [d_mu], [(F, [1])], new_order=["x"])
    d_lt1 = b.node("DimShuffle", [d_lt], [(F, [1])], new_order=["x"])
    grad = b.node("Join", [d_mu1, d_lt1, d_a], [(F, [J + 2])], axis=0)
    b.vars[lp]["name"] = "logp"
    b.vars[grad]["name"] = "grad"
    return {"format": "ember-graph", "version": 1, "name": "hierarchical normal logp+grad",
            "variables": b.vars, "inputs": [{"var": x}], "outputs": [lp, grad],
            "constants": b.consts, "nodes": b.nodes}


def main():
    graph = build()
    with open(os.path.join(DATA, "hierarchical_logp.json"), "w") as f:
        json.dump(graph, f, indent=1)
    points = []
    for _ in range(10):
        x = rng.normal(0, 1, size=J + 2)
        lp, gr = logp_grad(x)
        # the analytic gradient must agree with finite differences
        eps = 1e-6
        fd = np.array([(logp_grad(x + eps * e)[0] - logp_grad(x - eps * e)[0]) / (2 * eps)
                       for e in np.eye(J + 2)])
        assert np.allclose(fd, gr, rtol=1e-6, atol=1e-6), (fd, gr)
        points.append({"x": x.tolist(), "logp": float(lp), "grad": gr.tolist()})
    with open(os.path.join(DATA, "hierarchical_expected.json"), "w") as f:
        json.dump(points, f, indent=1)


if __name__ == "__main__":
    main()
