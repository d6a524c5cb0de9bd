// cholesky(L @ L.T) -> L for a lower-triangular L, as PyTensor's canonicalize
// does (cholesky_ldotlt): PyMC's MvNormal(chol=L) builds cov = L @ L.T and
// its logp factors cov again. PyTensor knows L is lower triangular from a
// tag or an assumption; here, from L's making: a set_subtensor into zeros
// at constant indices on or below the diagonal (LKJCholeskyCov's form).
// As PyTensor's, it takes L's diagonal to be positive (the factor of a
// covariance), which PyMC's constructions guarantee.
#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"

namespace ember::grad {

namespace {

// A constant int64 vector's values, or empty.
std::vector<int64_t> int_values(const passes::Editor& e, int v) {
  if (!e.is_constant(v) || e.g.vars[v].dtype != DType::Int64 || e.g.vars[v].static_shape.ndim != 1) return {};
  const Tensor t = e.constant(v);
  std::vector<int64_t> r(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) r[static_cast<size_t>(i)] = t.at<int64_t>(i);
  return r;
}

bool lower_triangular(passes::Editor& e, int l) {
  const int p = e.producer(l);
  if (p < 0 || e.g.vars[l].static_shape.ndim != 2) return false;
  const NodeSpec& s = e.node(p);
  if (!passes::is_op(s, TensorOp::AdvancedIncSubtensor) || !s.attrs.value("set_instead_of_inc", false) ||
      s.inputs.size() != 4 || !is_zeros(e, s.inputs[0]))
    return false;
  const nlohmann::json idx = s.attrs.value("idx_list", nlohmann::json());
  if (!idx.is_array() || idx.size() != 2) return false;
  for (const auto& x : idx)
    if (x.value("type", "") != "array") return false;
  const std::vector<int64_t> rows = int_values(e, s.inputs[2]), cols = int_values(e, s.inputs[3]);
  if (rows.empty() || rows.size() != cols.size()) return false;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i] < 0 || cols[i] < 0 || rows[i] < cols[i]) return false;
  return true;
}

}  // namespace

int cholesky_of_llt(passes::Editor& e) {
  return rewrite_each(e, [&](Builder& b, const NodeSpec& node) {
    if (!passes::is_op(node, TensorOp::Cholesky) || node.inputs.size() != 1 || !node.attrs.value("lower", true))
      return -1;
    const int out = node.outputs[0];
    const int p = e.producer(node.inputs[0]);
    if (p < 0 || !passes::is_op(e.node(p), TensorOp::Dot) || e.node(p).inputs.size() != 2) return -1;
    const int l = e.node(p).inputs[0], r = e.node(p).inputs[1];
    const int q = e.producer(r);
    if (q < 0 || !passes::is_op(e.node(q), TensorOp::DimShuffle) || e.node(q).inputs[0] != l) return -1;
    const auto order = passes::dimshuffle_order(e.node(q));
    if (!order || *order != std::vector<int>{1, 0} || !lower_triangular(e, l)) return -1;
    return b.cast(l, e.g.vars[out].dtype);
  });
}

}  // namespace ember::grad
