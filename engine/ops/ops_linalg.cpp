// Linear-algebra tensor ops and Blockwise. The cores live in
// engine/ops/linalg_core.cpp and engine/ops/linalg_decomp.cpp; a plain op is a core with no batch dims, Blockwise
// loops a core over batch dims broadcast per its gufunc signature.
#include <optional>
#include <string>
#include <vector>

#include "engine/ops/linalg_core.hpp"
#include "engine/ops/op.hpp"

namespace ember {
namespace {

std::unique_ptr<OpKernel> make_plain(NodeContext& ctx) {
  linalg::CoreDesc d = linalg::desc_of(ctx);
  std::unique_ptr<linalg::Core> core = linalg::make_core(d);
  if (!core) ctx.fail("op", "not a linear-algebra op");
  std::vector<int> nd;
  for (int i = 0; i < ctx.num_inputs(); ++i) nd.push_back(ctx.in(i).static_shape.ndim);
  for (int i = 0; i < ctx.num_outputs(); ++i) nd.push_back(ctx.out(i).static_shape.ndim);
  return std::make_unique<linalg::BatchedKernel>(std::move(core), std::move(nd), 0);
}

// "(m,m),(m,n)->(m,n)" -> per operand its core dim names.
using Sig = std::vector<std::vector<std::string>>;
bool parse_operands(const std::string& s, Sig& out) {
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '(') return false;
    ++i;
    std::vector<std::string> dims;
    std::string cur;
    while (i < s.size() && s[i] != ')') {
      if (s[i] == ',') {
        if (cur.empty()) return false;
        dims.push_back(cur);
        cur.clear();
      } else if (s[i] != ' ') {
        cur += s[i];
      }
      ++i;
    }
    if (i == s.size()) return false;
    if (!cur.empty()) dims.push_back(cur);
    out.push_back(dims);
    ++i;  // ')'
    if (i < s.size()) {
      if (s[i] != ',') return false;
      ++i;
    }
  }
  return true;
}

bool parse_signature(std::string s, Sig& ins, Sig& outs) {
  std::erase(s, ' ');
  const size_t arrow = s.find("->");
  if (arrow == std::string::npos) return false;
  return parse_operands(s.substr(0, arrow), ins) && parse_operands(s.substr(arrow + 2), outs) &&
         !outs.empty();
}

}  // namespace

std::unique_ptr<OpKernel> make_dot(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_cholesky(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_solve_triangular(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_solve(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_matrix_inverse(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_det(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_slogdet(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_cholesky_solve(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_lu_factor(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_lu(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_pivot_to_permutations(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_eigh(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_eigvalsh(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_qr(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_svd(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_matrix_pinv(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_expm(NodeContext& ctx) { return make_plain(ctx); }
std::unique_ptr<OpKernel> make_expm_grad(NodeContext& ctx) { return make_plain(ctx); }

std::unique_ptr<OpKernel> make_blockwise(NodeContext& ctx) {
  const nlohmann::json& cj = ctx.attr("core_op");
  if (!cj.is_object() || !cj.contains("op") || !cj["op"].is_string())
    ctx.fail("core_op", "expected {\"op\": name, \"attrs\": {...}}");
  Sig sin, sout;
  const std::string sig = ctx.attr_str("signature");
  if (!parse_signature(sig, sin, sout)) ctx.fail("signature", "cannot parse '" + sig + "'");
  const int nin = ctx.num_inputs(), nout = ctx.num_outputs();
  if (static_cast<int>(sin.size()) != nin || static_cast<int>(sout.size()) != nout)
    ctx.fail("signature", "'" + sig + "' has " + std::to_string(sin.size()) + " inputs and " +
                              std::to_string(sout.size()) + " outputs; the node has " +
                              std::to_string(nin) + " and " + std::to_string(nout));
  if (nin > 8 || nout > 8) ctx.fail("signature", "at most 8 inputs and 8 outputs");
  const int batch_nd = ctx.out(0).static_shape.ndim - static_cast<int>(sout[0].size());
  if (batch_nd < 0) ctx.fail("outputs", "output 0 has fewer dims than its core signature");

  linalg::CoreDesc d;
  d.name = cj["op"].get<std::string>();
  const std::optional<TensorOp> core_op = find_tensor_op(d.name);
  if (core_op) d.op = *core_op;
  if (cj.contains("attrs") && !cj["attrs"].is_null()) {
    if (!cj["attrs"].is_object()) ctx.fail("core_op.attrs", "expected an object");
    d.attrs = cj["attrs"];
  }
  d.attr_prefix = "core_op.attrs.";
  d.on_fail = [&ctx](const std::string& field, const std::string& msg) {
    ctx.fail(field, "core op: " + msg);
  };
  std::vector<int> core_nd;
  auto add = [&](const VarSpec& v, const std::vector<std::string>& names, bool input, int k) {
    const int cnd = static_cast<int>(names.size());
    const int bnd = v.static_shape.ndim - cnd;
    const std::string what = std::string(input ? "input " : "output ") + std::to_string(k);
    if (bnd < 0) ctx.fail(input ? "inputs" : "outputs", what + " has fewer dims than its core signature");
    if (input ? bnd > batch_nd : bnd != batch_nd)
      ctx.fail(input ? "inputs" : "outputs",
               what + " has " + std::to_string(bnd) + " batch dims; the output has " + std::to_string(batch_nd));
    Shape cs;
    cs.ndim = cnd;
    for (int i = 0; i < cnd; ++i) cs.dims[i] = v.static_shape.dims[bnd + i];
    (input ? d.in_shape : d.out_shape).push_back(cs);
    (input ? d.in_dt : d.out_dt).push_back(v.dtype);
    core_nd.push_back(cnd);
  };
  for (int k = 0; k < nin; ++k) add(ctx.in(k), sin[k], true, k);
  for (int k = 0; k < nout; ++k) add(ctx.out(k), sout[k], false, k);
  // Static batch dims must broadcast.
  for (int b = 0; b < batch_nd; ++b) {
    int64_t size = 1;
    for (int k = 0; k < nin; ++k) {
      const Shape& s = ctx.in(k).static_shape;
      const int bnd = s.ndim - core_nd[k];
      const int i = b - (batch_nd - bnd);
      if (i < 0) continue;
      const int64_t v = s.dims[i];
      if (v < 0 || v == 1 || v == size) continue;
      if (size != 1)
        ctx.fail("inputs", "batch dim " + std::to_string(b) + " of input " + std::to_string(k) + " is " +
                               std::to_string(v) + ", another input has " + std::to_string(size));
      size = v;
    }
  }
  std::unique_ptr<linalg::Core> core = core_op ? linalg::make_core(d) : nullptr;
  if (!core)
    ctx.fail("core_op", "Blockwise over '" + d.name +
                            "' is not supported (Dot, Cholesky, SolveTriangular, Solve, MatrixInverse, "
                            "Det, SLogDet, CholeskySolve, LUFactor, LU, PivotToPermutations, Eigh, "
                            "Eigvalsh, QR, SVD, MatrixPinv, AdvancedSubtensor1)");
  return std::make_unique<linalg::BatchedKernel>(std::move(core), std::move(core_nd), batch_nd);
}

}  // namespace ember
