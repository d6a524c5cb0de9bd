#include "engine/program/fuse_reduce.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "engine/ops/elemwise.hpp"
#include "engine/program/program_impl.hpp"
#include "interp/config.hpp"

namespace ember {

namespace {

// A Sum of a float64 input over its trailing axes (every axis, or all but
// the first k) into float64, summed in float64: what ElemwiseKernel's reduced
// outputs compute. Returns k, or -1.
int sums_trailing_float64(const Graph& g, const Step& st) {
  if (st.op != TensorOp::Sum || st.in.size() != 1 || st.out.size() != 1) return -1;
  const VarSpec& x = g.vars[st.in[0]];
  const VarSpec& y = g.vars[st.out[0]];
  if (x.dtype != DType::Float64 || y.dtype != DType::Float64) return -1;
  const nlohmann::json& a = g.nodes[st.node].attrs;
  if (a.contains("acc_dtype") && !a["acc_dtype"].is_null() &&
      !(a["acc_dtype"].is_string() && a["acc_dtype"].get<std::string>() == "float64"))
    return -1;
  const int k = y.static_shape.ndim, n = x.static_shape.ndim;
  if (k == 0) return 0;  // the output is 0-d, so a Sum that loaded reduces every axis
  if (k >= n || !a.contains("axis") || !a["axis"].is_array() || static_cast<int>(a["axis"].size()) != n - k) return -1;
  std::vector<int> axes;
  for (const nlohmann::json& d : a["axis"]) {
    if (!d.is_number_integer()) return -1;
    axes.push_back(d.get<int>() < 0 ? d.get<int>() + n : d.get<int>());
  }
  std::sort(axes.begin(), axes.end());
  for (int i = 0; i < n - k; ++i)
    if (axes[i] != k + i) return -1;
  return k;
}

// Every input statically of one element or of the output's (known) static
// shape: the Elemwise's calls run flat (no broadcast loop nest). Its
// element count, or -1.
int64_t flat_static(const Graph& g, const Step& st) {
  const Shape& out = g.vars[st.out[0]].static_shape;
  for (int d = 0; d < out.ndim; ++d)
    if (out.dims[d] < 0) return -1;
  for (int v : st.in) {
    const Shape& s = g.vars[v].static_shape;
    bool one = true, same = s.ndim == out.ndim;
    for (int d = 0; d < s.ndim; ++d) {
      one = one && s.dims[d] == 1;
      same = same && d < out.ndim && s.dims[d] == out.dims[d];
    }
    if (!one && !same) return -1;
  }
  return out.size();
}

}  // namespace

int fuse_reductions(ProgramImpl& p) {
  if (!p.options.fuse_elemwise || config().fuse_reduce == "0") return 0;
  const Graph& g = p.graph;
  const int nsteps = static_cast<int>(p.steps.size());
  std::vector<std::pair<int, int>> made_by(g.vars.size(), {-1, -1});  // var -> (step, output)
  std::vector<int> uses(g.vars.size(), 0);
  for (int s = 0; s < nsteps; ++s) {
    const Step& st = p.steps[s];
    for (size_t o = 0; o < st.out.size(); ++o) made_by[st.out[o]] = {s, static_cast<int>(o)};
    for (int v : st.in) ++uses[v];
  }
  for (int v : g.outputs) ++uses[v];
  std::vector<std::vector<uint8_t>> reduced(nsteps);
  std::vector<char> drop(nsteps, 0);
  std::vector<int64_t> flat(nsteps, -1);
  for (int s = 0; s < nsteps; ++s) {
    const Step& r = p.steps[s];
    const int kept = sums_trailing_float64(g, r);
    if (kept < 0) continue;
    const int v = r.in[0];
    const auto [e, j] = made_by[v];
    if (e < 0 || uses[v] != 1 || j >= kMaxReducedOutput) continue;
    auto* k = dynamic_cast<ElemwiseKernel*>(p.kernels[e].get());
    if (!k || k->one_element()) continue;  // 0-d and fused nodes are one element
    Step& es = p.steps[e];
    if (reduced[e].empty()) {
      reduced[e].assign(es.out.size(), 0);
      flat[e] = flat_static(g, es);  // before its outputs become the sums
    }
    reduced[e][j] = static_cast<uint8_t>(1 + kept);
    es.out[j] = r.out[0];  // the sum is made where the Elemwise runs, before any reader of it
    drop[s] = 1;
  }
  std::vector<Step> steps;
  std::vector<std::unique_ptr<OpKernel>> kernels;
  for (int s = 0; s < nsteps; ++s) {
    if (drop[s]) continue;
    if (!reduced[s].empty())
      dynamic_cast<ElemwiseKernel&>(*p.kernels[s]).set_reduced(std::move(reduced[s]), flat[s]);
    steps.push_back(std::move(p.steps[s]));
    kernels.push_back(std::move(p.kernels[s]));
  }
  p.steps = std::move(steps);
  p.kernels = std::move(kernels);
  return nsteps - static_cast<int>(p.steps.size());
}

}  // namespace ember
