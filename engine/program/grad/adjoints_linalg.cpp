// The linear-algebra adjoints, PyTensor's pullbacks written once over `bd`
// leading batch dims: bd = 0 for a plain op, a Blockwise's batch dims for
// one of it (PyTensor's Blockwise.L_op: the core op's gradient, batched).
// Matrix products and solves on batch dims are Blockwise nodes themselves;
// a contribution broadcast over an input's batch dims is summed to them.
#include <algorithm>

#include "engine/ops/tensor_op.hpp"
#include "engine/program/grad/adjoint_kit.hpp"

namespace ember::grad {
namespace {

using nlohmann::json;

// Per operand of a gufunc signature, its number of core dims; {} when malformed.
std::vector<int> core_ranks(const std::string& side) {
  std::vector<int> r;
  int dims = 0;
  bool open = false, any = false;
  for (char ch : side) {
    if (ch == '(') {
      if (open) return {};
      open = true, dims = 0, any = false;
    } else if (ch == ')') {
      if (!open) return {};
      r.push_back(any ? dims + 1 : 0);
      open = false;
    } else if (open && ch == ',') {
      ++dims;
    } else if (open && ch != ' ') {
      any = true;
    }
  }
  return open ? std::vector<int>{} : r;
}

struct Lin : Kit {
  using Kit::Kit;
  std::string op;
  json attrs;
  int bd = 0;
  std::vector<int> x;     // the inputs, each with bd batch dims (leading length-1 dims added)
  std::vector<int> in_core, out_core;  // core ranks

  const json& attr(const char* k) const {
    static const json null;
    auto it = attrs.find(k);
    return it == attrs.end() ? null : *it;
  }
  bool flag(const char* k, bool dflt) const { return attr(k).is_boolean() ? attr(k).get<bool>() : dflt; }
  int full(int v, int core) {
    const int have = ndim(v) - core;
    if (have == bd) return v;
    std::vector<int> order(bd - have, -1);
    for (int d = 0; d < ndim(v); ++d) order.push_back(d);
    return b.dimshuffle(v, order);
  }
  // A node of core op `name` over the operands' broadcast batch dims: the
  // plain op when bd = 0, else a Blockwise with signature `sig`.
  int core(const std::string& name, json a, std::vector<int> ins, const char* sig, DType dt,
           std::vector<int64_t> core_dims) {
    return core_n(name, std::move(a), std::move(ins), sig, dt, {std::move(core_dims)})[0];
  }
  // The same with one output per entry of `outs` (its core dims), all of dtype dt.
  std::vector<int> core_n(const std::string& name, json a, std::vector<int> ins, const char* sig, DType dt,
                          const std::vector<std::vector<int64_t>>& outs) {
    Shape batch;
    batch.ndim = 0;
    for (int d = 0; d < bd; ++d) {
      int64_t known = -1;
      bool all_one = true;
      for (int v : ins) {
        const int64_t k = shape(v).dims[d];
        all_one = all_one && k == 1;
        if (k >= 0 && k != 1) known = k;
      }
      batch.dims[batch.ndim++] = all_one ? 1 : known;
    }
    NodeSpec n;
    for (const auto& core_dims : outs) {
      Shape s = batch;
      for (int64_t k : core_dims) s.dims[s.ndim++] = k;
      n.outputs.push_back(b.var(dt, s));
    }
    n.inputs = std::move(ins);
    if (bd == 0) {
      n.op = name;
      n.attrs = std::move(a);
    } else {
      n.op = "Blockwise";
      n.attrs = json{{"core_op", {{"op", name}, {"attrs", a}}}, {"signature", sig}};
    }
    std::vector<int> out = n.outputs;
    b.add_node(std::move(n));
    return out;
  }
  int64_t dim(int v, int from_end) const { return shape(v).dims[ndim(v) - from_end]; }
  // The last two dims swapped.
  int mT(int v) {
    std::vector<int> order;
    const int nd = ndim(v);
    for (int d = 0; d + 2 < nd; ++d) order.push_back(d);
    order.push_back(nd - 1);
    order.push_back(nd - 2);
    return b.dimshuffle(v, order);
  }
  // The batch dims kept, then `core` (indices into the core dims, -1: a new one).
  int core_shuffle(int v, std::vector<int> core) {
    std::vector<int> order;
    for (int d = 0; d < bd; ++d) order.push_back(d);
    for (int k : core) order.push_back(k < 0 ? -1 : bd + k);
    return b.dimshuffle(v, order);
  }
  int mm(int p, int q) {
    return core("Dot", json::object(), {p, q}, "(m,k),(k,n)->(m,n)", dtype(p), {dim(p, 2), dim(q, 1)});
  }
  // u v^T of two batched vectors: an element-wise product of broadcasts
  // (a one-term dot product, the same values), which fuses and sums as
  // element-wise work where a batched Dot would loop over the batch.
  int outer(int u, int v) {
    return b.elem("Mul", {core_shuffle(u, {0, -1}), core_shuffle(v, {-1, 0})}, dtype(u));
  }
  int64_t square(int a, const char* what) const {
    const int64_t n = dim(a, 1);
    if (n < 0 || dim(a, 2) != n) no_rule(std::string(what) + " of unknown size");
    return n;
  }
  // A constant bool (n, n) mask, with bd leading length-1 dims: below the
  // diagonal (and on it, with `diag`), above it with `upper`, or on it alone.
  int mask(int64_t n, bool diag, bool upper, bool only_diag) {
    std::vector<int> order(bd, -1);
    order.push_back(0);
    order.push_back(1);
    return b.dimshuffle(mask2(n, diag, upper, only_diag), order);
  }
  int mask2(int64_t n, bool diag, bool upper, bool only_diag) {
    Shape s;
    s.ndim = 2;
    s.dims[0] = s.dims[1] = n;
    Array a = Array::empty(DType::Bool, s);
    bool* p = a.data<bool>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const int64_t r = upper ? j : i, c = upper ? i : j;
        p[i * n + j] = only_diag ? i == j : (c < r || (diag && i == j));
      }
    return b.e.add_constant(DType::Bool, s, a);
  }
  int zero(int v) { return b.constant(0.0, dtype(v), ndim(v)); }
  int masked(int m, int v) { return b.elem("Switch", {m, v, zero(v)}, dtype(v)); }
  int solve_attrs_b_ndim() const { return in_core.size() > 1 ? in_core[1] : 2; }
};

// Cholesky.L_op (lower): with Phi(X) = tril(X) - diag(X)/2,
// S = L^-T Phi(L^T dL) L^-1 and dA = tril(S + S^T) - diag(S). Upper: the
// same with L = U^T and dL = dU^T, the result on the upper triangle.
void cholesky(Lin& c) {
  const bool is_lower = c.flag("lower", true);
  const int out = c.n.outputs[0];
  const int64_t n = c.square(out, "Cholesky");
  const DType dt = c.dtype(out);
  const int L = is_lower ? out : c.mT(out), dL = is_lower ? c.grad_of(0) : c.mT(c.grad_of(0));
  const int lt = c.mT(L);
  const int lower = c.mask(n, false, false, false), eye = c.mask(n, false, false, true);
  const int p = c.mm(lt, dL);
  const int half = c.b.elem("Mul", {p, c.b.constant(0.5, dt, c.ndim(p))}, dt);
  const int phi = c.b.elem("Switch", {lower, p, c.masked(eye, half)}, dt);
  auto solve_upper = [&](int a, int rhs) {
    return c.core("SolveTriangular", json{{"lower", false}, {"trans", 0}, {"unit_diagonal", false}, {"b_ndim", 2}},
                  {a, rhs}, "(m,m),(m,n)->(m,n)", dt, {n, n});
  };
  const int S = solve_upper(lt, c.mT(solve_upper(lt, c.mT(phi))));
  const int sym = c.b.elem("Add", {S, c.mT(S)}, dt);
  const int side = is_lower ? lower : c.mask(n, false, true, false);
  c.give(0, c.b.elem("Switch", {side, sym, c.masked(eye, S)}, dt));
}

// A_bar = -b_bar x^T (an outer product for a vector b).
int solve_a_bar(Lin& c, int b_bar, int xv) {
  const int prod = c.solve_attrs_b_ndim() == 1 ? c.outer(b_bar, xv) : c.mm(b_bar, c.mT(xv));
  return c.elem("Neg", {prod});
}

const char* solve_sig(const Lin& c) {
  return c.solve_attrs_b_ndim() == 1 ? "(m,m),(m)->(m)" : "(m,m),(m,n)->(m,n)";
}

std::vector<int64_t> core_dims(const Lin& c, int v, int k) {
  const Shape s = c.shape(v);
  return std::vector<int64_t>(s.dims + s.ndim - k, s.dims + s.ndim);
}

// SolveBase.L_op for a triangular A: b_bar = A^-T c_bar (A with trans),
// A_bar = -b_bar x^T on A's triangle (off its diagonal when that is unit).
void solve_triangular(Lin& c) {
  const json trans = c.attr("trans").is_null() ? json(0) : c.attr("trans");
  if (!(trans == json(0) || trans == json("N"))) c.no_rule("SolveTriangular with trans");
  const bool lower = c.flag("lower", false), unit = c.flag("unit_diagonal", false);
  const int A = c.x[0], xv = c.n.outputs[0];
  const int64_t n = c.square(A, "SolveTriangular");
  json at = c.attrs;
  at["trans"] = 1;
  const int b_bar = c.core("SolveTriangular", at, {A, c.grad_of(0)}, solve_sig(c), c.dtype(xv),
                           core_dims(c, xv, c.solve_attrs_b_ndim()));
  c.give(1, b_bar);
  if (c.need[0]) c.give(0, c.masked(c.mask(n, !unit, !lower, false), solve_a_bar(c, b_bar, xv)));
}

// SolveBase.L_op: b_bar = solve(A^T, c_bar) reading the other triangle,
// A_bar = -b_bar x^T.
void solve(Lin& c) {
  const int A = c.x[0], xv = c.n.outputs[0];
  json at = c.attrs;
  at["lower"] = !c.flag("lower", false);
  const int b_bar = c.core("Solve", at, {c.mT(A), c.grad_of(0)}, solve_sig(c), c.dtype(xv),
                           core_dims(c, xv, c.solve_attrs_b_ndim()));
  c.give(1, b_bar);
  if (c.need[0]) c.give(0, solve_a_bar(c, b_bar, xv));
}

// MatrixInverse: -(xi gz^T xi)^T, xi the output.
void matrix_inverse(Lin& c) {
  const int xi = c.n.outputs[0];
  c.give(0, c.elem("Neg", {c.mT(c.mm(c.mm(xi, c.mT(c.grad_of(0))), xi))}));
}

// Expm: the Frechet derivative of exp at A^T in the direction gz (ExpmGrad).
void expm(Lin& c) {
  const int A = c.x[0], z = c.n.outputs[0];
  c.give(0, c.core("ExpmGrad", json::object(), {A, c.grad_of(0)}, "(m,m),(m,m)->(m,m)", c.dtype(z),
                   core_dims(c, A, 2)));
}

int inverse_t(Lin& c, int A, DType dt) {
  return c.mT(c.core("MatrixInverse", json::object(), {A}, "(m,m)->(m,m)", dt, core_dims(c, A, 2)));
}

// Det: gz * det(x) * inv(x)^T.
void det(Lin& c) {
  const int A = c.x[0], z = c.n.outputs[0];
  const DType dt = c.dtype(z);
  auto mat = [&](int v) { return c.core_shuffle(v, {-1, -1}); };
  c.give(0, c.elem("Mul", {c.elem("Mul", {mat(c.grad_of(0)), mat(z)}), inverse_t(c, A, dt)}));
}

// SLogDet: the log-determinant's gz * inv(x)^T; the sign's gradient is zero.
void slogdet(Lin& c) {
  if (c.gz.size() < 2 || c.gz[1] < 0) return;
  const DType dt = c.dtype(c.n.outputs[1]);
  c.give(0, c.elem("Mul", {c.core_shuffle(c.grad_of(1), {-1, -1}), inverse_t(c, c.x[0], dt)}));
}

// Eigh.pullback (PyTensor 2.x's EighGrad: the same values): with C = V^T gV
// and F_ij = 1/(w_j - w_i) off the diagonal, M = diag(gw) + F * C and
// gA = V M V^T, folded onto the triangle the op reads (a change there moves
// both mirrored entries). With B (A V = B V diag(w), V^T B V = I):
// gB = -V (M diag(w)) V^T - V diag(diag C) V^T / 2. A disconnected output's
// gradient (gw or gv < 0) is PyTensor's zeros, so its terms are left out.
void eigh_pullback(Lin& c, int w, int v, int gw, int gv, bool lower, int64_t n) {
  const DType dt = c.dtype(v);
  const int eye = c.mask(n, false, false, true);
  const int row = gw >= 0 ? c.core_shuffle(gw, {-1, 0}) : c.zero(v);  // (i, j): gw_j
  int C = -1, M = -1;
  if (gv >= 0) {
    C = c.mm(c.mT(v), gv);
    const int wdiff = c.b.elem("Sub", {c.core_shuffle(w, {-1, 0}), c.core_shuffle(w, {0, -1})}, dt);
    const int F = c.b.elem("TrueDiv", {c.b.constant(1.0, dt, c.ndim(wdiff)), wdiff}, dt);
    // F's diagonal is zero: there M is gw alone (the 1/0 there is switched away).
    M = c.b.elem("Switch", {eye, row, c.b.elem("Mul", {F, C}, dt)}, dt);
  } else {
    M = c.masked(eye, row);
  }
  const int vt = c.mT(v);
  auto fold = [&](int g) {
    const int sym = c.b.elem("Add", {g, c.mT(g)}, dt);
    return c.b.elem("Switch", {c.mask(n, false, !lower, false), sym, c.masked(eye, g)}, dt);
  };
  c.give(0, fold(c.mm(c.mm(v, M), vt)));
  if (c.n.inputs.size() < 2 || !c.need[1]) return;
  const int w_row = c.core_shuffle(w, {-1, 0});
  int gb = c.elem("Neg", {c.mm(c.mm(v, c.b.elem("Mul", {M, w_row}, dt)), vt)});
  if (C >= 0) {
    const int d = c.mm(c.mm(v, c.masked(eye, C)), vt);
    gb = c.b.elem("Sub", {gb, c.b.elem("Mul", {c.b.constant(0.5, dt, c.ndim(d)), d}, dt)}, dt);
  }
  c.give(1, fold(gb));
}

bool eigh_lower(const Lin& c) {
  if (c.attr("UPLO").is_string()) return c.attr("UPLO") == "L";
  return c.flag("lower", true);
}

void eigh(Lin& c) {
  const int w = c.n.outputs[0], v = c.n.outputs[1];
  // PyTensor 2.x types Eigh's outputs without static shapes; the input has them.
  const int64_t n = c.dim(v, 1) >= 0 ? c.square(v, "Eigh") : c.square(c.x[0], "Eigh");
  const int gw = c.gz[0] >= 0 ? c.grad_of(0) : -1, gv = c.gz.size() > 1 && c.gz[1] >= 0 ? c.grad_of(1) : -1;
  eigh_pullback(c, w, v, gw, gv, eigh_lower(c), n);
}

// Eigvalsh (EigvalshGrad): Eigh's pullback of the eigenvalues alone, on an
// Eigh of the same operands for the eigenvectors.
void eigvalsh(Lin& c) {
  const int64_t n = c.square(c.x[0], "Eigvalsh");
  const bool lower = eigh_lower(c);
  const DType dt = c.dtype(c.n.outputs[0]);
  const char* sig = c.x.size() == 2 ? "(m,m),(m,m)->(m),(m,m)" : "(m,m)->(m),(m,m)";
  const std::vector<int> wv = c.core_n("Eigh", json{{"lower", lower}}, c.x, sig, dt, {{n}, {n, n}});
  eigh_pullback(c, wv[0], wv[1], c.grad_of(0), -1, lower, n);
}

// SVD.L_op of the singular values: A_bar = U diag(ds) V^T from a thin SVD
// with vectors (an SVD without them is recomputed with them, as PyTensor does).
void svd(Lin& c) {
  const bool uv = c.flag("compute_uv", true);
  const int gs_at = uv ? 1 : 0;
  if (uv && (c.gz[0] >= 0 || (c.gz.size() > 2 && c.gz[2] >= 0))) c.no_rule("SVD with singular vectors' gradients");
  if (uv && c.flag("full_matrices", true)) c.no_rule("SVD of full matrices");
  const int A = c.x[0];
  const int64_t m = c.dim(A, 2), n = c.dim(A, 1);
  if (m < 0 || n < 0) c.no_rule("SVD of unknown size");
  const int64_t k = std::min(m, n);
  const DType dt = c.dtype(c.n.outputs[gs_at]);
  std::vector<int> usv = c.n.outputs;
  if (!uv)
    usv = c.core_n("SVD", json{{"full_matrices", false}, {"compute_uv", true}}, {A}, "(m,n)->(m,k),(k),(k,n)", dt,
                   {{m, k}, {k}, {k, n}});
  const int us = c.b.elem("Mul", {usv[0], c.core_shuffle(c.grad_of(gs_at), {-1, 0})}, dt);
  c.give(0, c.mm(us, usv[2]));
}

// The main diagonal of square axes (axis1, axis2): its gradient on that
// diagonal, zero elsewhere.
void extract_diag(Lin& c) {
  if (c.attr("offset").is_number_integer() && c.attr("offset").get<int>() != 0)
    c.no_rule("ExtractDiag off the main diagonal");
  const int xv = c.x[0], nd = c.ndim(xv);
  int a1 = c.attr("axis1").is_number_integer() ? c.attr("axis1").get<int>() : 0;
  int a2 = c.attr("axis2").is_number_integer() ? c.attr("axis2").get<int>() : 1;
  const int core_nd = nd - c.bd;
  if (a1 < 0) a1 += core_nd;
  if (a2 < 0) a2 += core_nd;
  a1 += c.bd, a2 += c.bd;
  const Shape xs = c.shape(xv);
  const int64_t n = xs.dims[a1];
  if (a1 == a2 || n < 0 || xs.dims[a2] != n) c.no_rule("ExtractDiag of unknown or non-square size");
  const int g = c.grad_of(0), gnd = c.ndim(g);
  std::vector<int> order, morder;
  int k = 0;
  for (int d = 0; d < nd; ++d) {
    order.push_back(d == a1 ? -1 : d == a2 ? gnd - 1 : k++);
    morder.push_back(d == std::min(a1, a2) ? 0 : d == std::max(a1, a2) ? 1 : -1);
  }
  const int eye = c.b.dimshuffle(c.mask2(n, false, false, true), morder);
  c.give(0, c.masked(eye, c.b.dimshuffle(g, order)));
}

// A batched matrix product: vectors made (1, k) and (k, 1) matrices.
void batched_dot(Lin& c) {
  const int ra = c.in_core[0], rb = c.in_core[1];
  const int A = ra == 1 ? c.core_shuffle(c.x[0], {-1, 0}) : c.x[0];
  const int B = rb == 1 ? c.core_shuffle(c.x[1], {0, -1}) : c.x[1];
  const int g0 = c.grad_of(0);
  const int G = ra == 1 && rb == 1 ? c.core_shuffle(g0, {-1, -1})
                : ra == 1          ? c.core_shuffle(g0, {-1, 0})
                : rb == 1          ? c.core_shuffle(g0, {0, -1})
                                   : g0;
  if (c.need[0]) c.give(0, c.core_shuffle(c.mm(G, c.mT(B)), ra == 1 ? std::vector<int>{1} : std::vector<int>{0, 1}));
  if (c.need[1]) c.give(1, c.core_shuffle(c.mm(c.mT(A), G), rb == 1 ? std::vector<int>{0} : std::vector<int>{0, 1}));
}

}  // namespace

std::vector<int> linalg_adjoint(Builder& b, const NodeSpec& n, const std::vector<int>& gz,
                                const std::vector<char>& need, const std::string& where) {
  Lin c(b, n, gz, need, where);
  if (n.op == "Blockwise") {
    const json& core = n.attrs.at("core_op");
    c.op = core.at("op").get<std::string>();
    c.attrs = core.contains("attrs") && core.at("attrs").is_object() ? core.at("attrs") : json::object();
    const std::string sig = n.attrs.at("signature").get<std::string>();
    const size_t arrow = sig.find("->");
    if (arrow != std::string::npos) {
      c.in_core = core_ranks(sig.substr(0, arrow));
      c.out_core = core_ranks(sig.substr(arrow + 2));
    }
    if (c.in_core.size() != n.inputs.size() || c.out_core.size() != n.outputs.size())
      c.no_rule("Blockwise of signature '" + sig + "'");
    c.bd = c.ndim(n.outputs[0]) - c.out_core[0];
  } else {
    c.op = n.op;
    c.attrs = n.attrs;
    for (int v : n.inputs) c.in_core.push_back(c.ndim(v));
    for (int v : n.outputs) c.out_core.push_back(c.ndim(v));
  }
  for (size_t i = 0; i < n.inputs.size(); ++i) c.x.push_back(c.full(n.inputs[i], c.in_core[i]));
  const std::optional<TensorOp> op = find_tensor_op(c.op);
  const std::string what = n.op == "Blockwise" ? "Blockwise of " + c.op : c.op;
  switch (op ? *op : TensorOp::Blockwise) {
    case TensorOp::Cholesky: cholesky(c); break;
    case TensorOp::SolveTriangular: solve_triangular(c); break;
    case TensorOp::Solve: solve(c); break;
    case TensorOp::MatrixInverse: matrix_inverse(c); break;
    case TensorOp::Expm: expm(c); break;
    case TensorOp::Det: det(c); break;
    case TensorOp::SLogDet: slogdet(c); break;
    case TensorOp::Eigh: eigh(c); break;
    case TensorOp::Eigvalsh: eigvalsh(c); break;
    case TensorOp::SVD: svd(c); break;
    case TensorOp::ExtractDiag: extract_diag(c); break;
    case TensorOp::Dot:
      if (c.bd == 0) c.no_rule("plain Dot here");
      batched_dot(c);
      break;
    default: c.no_rule("no adjoint for " + what);
  }
  return c.out;
}

}  // namespace ember::grad
