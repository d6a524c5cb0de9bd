// A Subtensor of a DimShuffle that only adds broadcast dims indexes the
// DimShuffle's input instead, and the DimShuffle follows, as PyTensor's
// local_subtensor_of_dimshuffle: rho[:, None][0] -> rho[0][None]. The
// gradient of rho[0] is then an increment of rho's shape, which joins the
// other increments of rho's gradient (inc_serialize.cpp) where the
// DimShuffle's adjoint would sit between them. Exact: views of the same
// elements. Literal indices only.
#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"

namespace ember::grad {

namespace {

using nlohmann::json;

bool literal(const json& entry) {
  if (!entry.is_object() || entry.contains("input")) return false;
  for (const char* k : {"start", "stop", "step"})
    if (entry.contains(k) && !entry[k].is_null() && !entry[k].is_number_integer()) return false;
  const std::string t = entry.value("type", "");
  return t == "slice" || (t == "index" && entry.contains("value") && entry["value"].is_number_integer());
}

bool full_slice(const json& entry) {
  return entry.value("type", "") == "slice" && entry.value("start", json()).is_null() &&
         entry.value("stop", json()).is_null() && entry.value("step", json()).is_null();
}

}  // namespace

int lift_subtensors(passes::Editor& e) {
  return rewrite_each(e, [&](Builder& b, const NodeSpec& node) {
    if (!passes::is_op(node, TensorOp::Subtensor) || node.inputs.size() != 1 || node.outputs.size() != 1) return -1;
    const int d = node.inputs[0];
    const int p = e.producer(d);
    if (p < 0 || !passes::is_op(e.node(p), TensorOp::DimShuffle)) return -1;
    const auto order = passes::dimshuffle_order(e.node(p));
    const int x = e.node(p).inputs[0];
    if (!order || static_cast<int>(order->size()) != b.ndim(d)) return -1;
    // Only broadcast dims added: x's dims all present, in order.
    int next = 0;
    for (const int o : *order)
      if (o >= 0 && o != next++) return -1;
    if (next != b.ndim(x)) return -1;
    const json& idx = node.attrs.value("idx_list", json());
    if (!idx.is_array() || idx.size() > order->size()) return -1;
    const Shape os = e.g.vars[node.outputs[0]].static_shape;
    json on_x = json::array();
    Shape xs;  // the new Subtensor's shape
    xs.ndim = 0;
    std::vector<int> new_order;
    int kept = 0;  // output dims met
    for (size_t i = 0; i < order->size(); ++i) {
      const json entry = i < idx.size() ? idx[i] : json{{"type", "slice"}, {"start", nullptr}, {"stop", nullptr},
                                                        {"step", nullptr}};
      if (!literal(entry)) return -1;
      const bool index = entry["type"] == "index";
      if ((*order)[i] < 0) {  // a broadcast dim: kept whole or indexed at 0
        if (index && entry["value"] != 0 && entry["value"] != -1) return -1;
        if (!index && !full_slice(entry)) return -1;
        if (!index) {
          new_order.push_back(-1);
          ++kept;
        }
        continue;
      }
      on_x.push_back(entry);
      if (index) continue;
      if (kept >= os.ndim) return -1;
      xs.dims[xs.ndim] = os.dims[kept++];
      new_order.push_back(xs.ndim++);
    }
    if (kept != os.ndim) return -1;
    while (!on_x.empty() && full_slice(on_x.back())) on_x.erase(on_x.size() - 1);
    const int v = on_x.empty() ? x : b.node("Subtensor", {x}, json{{"idx_list", on_x}}, b.dtype(x), xs);
    return b.dimshuffle(v, new_order);
  });
}

}  // namespace ember::grad
