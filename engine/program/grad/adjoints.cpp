// Each tensor op's adjoint, following PyTensor's L_op/grad methods. An op
// without one here throws NoRule, and the graph is differentiated another way.
#include "engine/program/grad/adjoints.hpp"

#include <algorithm>

#include "engine/ops/tensor_op.hpp"
#include "engine/program/grad/adjoint_kit.hpp"

namespace ember::grad {

namespace {

using nlohmann::json;

// The adjoint kit (adjoint_kit.hpp) and a constant operand's value.
struct Ctx : Kit {
  using Kit::Kit;
  int const_int(int v, const char* what) const {
    if (!b.e.is_constant(v)) no_rule(std::string(what) + " is not a constant");
    const Tensor t = b.e.constant(v);
    int64_t x = 0;
    dtype_dispatch(t.dtype, [&](auto z) { x = static_cast<int64_t>(t.at<decltype(z)>(0)); });
    return static_cast<int>(x);
  }
};

void elemwise(Ctx& c) {
  const json& so = c.n.attrs.at("scalar_op");
  const std::string name = so.is_object() ? so.value("op", "") : "";
  if (name == "Composite") {
    const std::vector<int> g = composite_adjoint(c.b, c.n, c.gz, c.need, c.where);
    for (size_t i = 0; i < g.size(); ++i) c.give(static_cast<int>(i), g[i]);
    return;
  }
  if (c.gz[0] < 0) c.no_rule("Elemwise without its first output's gradient");
  if (name.empty() || name == "ScalarLoop") c.no_rule("Elemwise of " + name);
  if (c.n.outputs.size() != 1) c.no_rule("Elemwise with several outputs");
  ElemwiseEnv env;
  env.inputs = c.n.inputs;
  env.z = c.n.outputs[0];
  env.gz = c.gz[0];
  env.out_ndim = c.ndim(env.z);
  for (size_t i = 0; i < c.n.inputs.size(); ++i) {
    if (!c.need[i]) continue;
    env.wrt = static_cast<int>(i);
    env.dtype = c.b.dtype(c.in(static_cast<int>(i)));
    c.give(static_cast<int>(i), scalar_adjoint(c.b, name, env, c.where));
  }
}

void dimshuffle(Ctx& c) {
  const auto parsed = passes::dimshuffle_order(c.n);
  if (!parsed) c.no_rule("a DimShuffle with a malformed new_order");
  const std::vector<int>& order = *parsed;
  const int nd = c.ndim(c.in(0));
  std::vector<int> back(nd, -1);
  for (size_t j = 0; j < order.size(); ++j)
    if (order[j] >= 0) back[order[j]] = static_cast<int>(j);
  c.give(0, c.b.dimshuffle(c.gz[0], back));
}

void reduce_sum(Ctx& c) {
  const int x = c.in(0), nd = c.ndim(x);
  const int g = c.unreduce(c.gz[0], reduce_axes(c.n.attrs, nd), nd);
  c.give(0, c.b.elem("Second", {x, c.b.cast(g, c.b.dtype(x))}, c.b.dtype(x)));
}

void reduce_extremum(Ctx& c) {  // Max, Min: the gradient goes to every element equal to the result
  const int x = c.in(0), nd = c.ndim(x);
  const std::vector<int> axes = reduce_axes(c.n.attrs, nd);
  const int g = c.unreduce(c.gz[0], axes, nd), z = c.unreduce(c.n.outputs[0], axes, nd);
  c.give(0, c.b.elem("Mul", {g, c.b.elem("EQ", {x, z}, DType::Bool)}, c.b.dtype(x)));
}

void careduce(Ctx& c) {
  const std::string op = c.n.attrs.at("scalar_op").is_string() ? c.n.attrs.at("scalar_op").get<std::string>()
                                                               : c.n.attrs.at("scalar_op").value("op", "");
  if (op == "Add") return reduce_sum(c);
  if (op == "ScalarMaximum" || op == "ScalarMinimum") return reduce_extremum(c);
  if (op == "Mul") return void(c.out = products_adjoint(c.b, c.n, c.gz, c.need, c.where));
  c.no_rule("CAReduce of " + op);
}

void alloc(Ctx& c) { c.give(0, c.gz[0]); }  // summed over the broadcast dims by give()

void pass_through(Ctx& c) { c.give(0, c.gz[0]); }

// idx_list with every {"input": k} moved by `shift`.
json shift_inputs(json idx, int shift) {
  if (idx.is_object()) {
    for (auto& [k, v] : idx.items()) {
      if (k == "input" && v.is_number_integer()) v = v.get<int>() + shift;
      else v = shift_inputs(v, shift);
    }
  } else if (idx.is_array()) {
    for (auto& v : idx) v = shift_inputs(v, shift);
  }
  return idx;
}

// The shape of x indexed by idx_list: unknown dims but for the rank.
Shape indexed_rank(const Ctx& c, int x, const json& idx) {
  Shape s;
  s.ndim = 0;
  const Shape xs = c.shape(x);
  for (int d = 0; d < xs.ndim; ++d) {
    const bool removed = d < static_cast<int>(idx.size()) && idx[d].value("type", "") == "index";
    if (!removed) s.dims[s.ndim++] = -1;
  }
  return s;
}

// The rank of x indexed by an advanced idx_list (NumPy's rule; index arrays
// broadcast together), with unknown dims.
Shape advanced_rank(const Ctx& c, int x, const json& idx) {
  int rank = c.ndim(x), bdim = 0;
  bool any = false;
  for (const json& e : idx) {
    const std::string t = e.value("type", "");
    if (t == "newaxis") {
      ++rank;
    } else if (t == "index") {
      --rank;
    } else if (t == "array") {
      const int v = c.n.inputs[e.at("input").get<int>()];
      any = true;
      if (c.b.dtype(v) == DType::Bool) {
        rank -= c.ndim(v);
        bdim = std::max(bdim, 1);
      } else {
        rank -= 1;
        bdim = std::max(bdim, c.ndim(v));
      }
    }
  }
  Shape s;
  s.ndim = rank + (any ? bdim : 0);
  for (int d = 0; d < s.ndim; ++d) s.dims[d] = -1;
  return s;
}

void subtensor(Ctx& c) {
  const int x = c.in(0);
  json attrs{{"idx_list", shift_inputs(c.n.attrs.at("idx_list"), 1)}, {"set_instead_of_inc", false}};
  std::vector<int> ins{c.b.zeros_like(x), c.b.cast(c.gz[0], c.b.dtype(x))};
  ins.insert(ins.end(), c.n.inputs.begin() + 1, c.n.inputs.end());
  c.give(0, c.b.node("IncSubtensor", ins, attrs, c.b.dtype(x), c.shape(x)));
}

void inc_subtensor(Ctx& c, bool advanced) {
  const int x = c.in(0), y = c.in(1), g = c.b.cast(c.gz[0], c.b.dtype(x));
  const bool set = c.n.attrs.value("set_instead_of_inc", false);
  const json idx = c.n.attrs.at("idx_list");
  std::vector<int> index(c.n.inputs.begin() + 2, c.n.inputs.end());
  if (c.need[0]) {
    if (!set) {
      c.give(0, g);
    } else {
      json attrs = c.n.attrs;
      std::vector<int> ins{g, c.b.zeros_like(y)};
      ins.insert(ins.end(), index.begin(), index.end());
      c.give(0, c.b.node(c.n.op, ins, attrs, c.b.dtype(x), c.shape(x)));
    }
  }
  if (c.need[1]) {
    std::vector<int> ins{g};
    ins.insert(ins.end(), index.begin(), index.end());
    // An advanced index's result rank is y's when y is not broadcast in rank
    // (the increments PyTensor's gradients and PyMC's transforms make).
    const Shape rs = advanced ? advanced_rank(c, x, idx) : indexed_rank(c, x, idx);
    const int part = c.b.node(advanced ? "AdvancedSubtensor" : "Subtensor", ins,
                              json{{"idx_list", shift_inputs(idx, -1)}}, c.b.dtype(x), rs);
    c.give(1, part);
  }
}

void advanced_subtensor1(Ctx& c) {
  const int x = c.in(0);
  c.give(0, c.b.node("AdvancedIncSubtensor1", {c.b.zeros_like(x), c.b.cast(c.gz[0], c.b.dtype(x)), c.in(1)},
                     json{{"set_instead_of_inc", false}}, c.b.dtype(x), c.shape(x)));
}

void advanced_inc_subtensor1(Ctx& c) {
  const int x = c.in(0), y = c.in(1), idx = c.in(2), g = c.b.cast(c.gz[0], c.b.dtype(x));
  const bool set = c.n.attrs.value("set_instead_of_inc", false);
  if (c.need[0])
    c.give(0, set ? c.b.node("AdvancedIncSubtensor1", {g, c.b.zeros_like(y), idx},
                             json{{"set_instead_of_inc", true}}, c.b.dtype(x), c.shape(x))
                  : g);
  if (c.need[1]) {
    Shape s = c.shape(x);
    s.dims[0] = c.shape(idx).dims[0];
    c.give(1, c.b.node("AdvancedSubtensor1", {g, idx}, json::object(), c.b.dtype(x), s));
  }
}

void advanced_subtensor(Ctx& c) {
  const int x = c.in(0);
  json attrs{{"idx_list", shift_inputs(c.n.attrs.at("idx_list"), 1)},
             {"set_instead_of_inc", false},
             {"ignore_duplicates", false}};
  std::vector<int> ins{c.b.zeros_like(x), c.b.cast(c.gz[0], c.b.dtype(x))};
  ins.insert(ins.end(), c.n.inputs.begin() + 1, c.n.inputs.end());
  c.give(0, c.b.node("AdvancedIncSubtensor", ins, attrs, c.b.dtype(x), c.shape(x)));
}

// PyTensor's FillDiagonal.grad, for matrices only: the matrix gets the
// output's gradient with its diagonal zeroed, the value that diagonal's sum
// (the main diagonal, min(h, w) long, is what the op fills in either case).
void fill_diagonal(Ctx& c) {
  const int a = c.in(0);
  if (c.ndim(a) != 2) c.no_rule("FillDiagonal of " + std::to_string(c.ndim(a)) + " dims");
  const DType dt = c.dtype(a);
  const int g = c.b.cast(c.gz[0], dt);
  if (c.need[0])
    c.give(0, c.b.node("FillDiagonal", {g, c.b.constant(0.0, dt, 0)}, json::object(), dt, c.shape(a)));
  if (c.need[1]) {
    const Shape as = c.shape(a);
    Shape ds, s0;
    ds.ndim = 1;
    ds.dims[0] = as.dims[0] >= 0 && as.dims[1] >= 0 ? std::min(as.dims[0], as.dims[1]) : -1;
    s0.ndim = 0;
    const int diag = c.b.node("ExtractDiag", {g}, json{{"offset", 0}, {"axis1", 0}, {"axis2", 1}}, dt, ds);
    c.give(1, c.b.node("Sum", {diag}, json{{"axis", nullptr}}, dt, s0));
  }
}

void reshape(Ctx& c) {
  const int x = c.in(0);
  const Shape xs = c.shape(x);
  bool known = true;
  for (int d = 0; d < xs.ndim; ++d) known = known && xs.dims[d] >= 0;
  int shape;
  if (known) {
    shape = c.b.int_vector(std::vector<int64_t>(xs.dims, xs.dims + xs.ndim));
  } else {
    Shape s1;
    s1.ndim = 1;
    s1.dims[0] = xs.ndim;
    shape = c.b.node("Shape", {x}, json::object(), DType::Int64, s1);
  }
  c.give(0, c.b.node("Reshape", {c.gz[0], shape}, json{{"ndim", xs.ndim}}, c.b.dtype(c.gz[0]), xs));
}

void make_vector(Ctx& c) {
  for (size_t i = 0; i < c.n.inputs.size(); ++i) {
    if (!c.need[i]) continue;
    Shape s0;
    s0.ndim = 0;
    const json idx = json::array({json{{"type", "index"}, {"value", static_cast<int>(i)}}});
    c.give(static_cast<int>(i),
           c.b.node("Subtensor", {c.gz[0]}, json{{"idx_list", idx}}, c.b.dtype(c.gz[0]), s0));
  }
}

void join(Ctx& c) {
  const bool axis_attr = c.n.attrs.contains("axis");
  const int first = axis_attr ? 0 : 1;
  const int z = c.n.outputs[0], nd = c.ndim(z);
  int axis = axis_attr ? c.n.attrs.at("axis").get<int>() : c.const_int(c.in(0), "Join's axis");
  if (axis < 0) axis += nd;
  bool known = true;
  for (size_t i = first; i < c.n.inputs.size(); ++i) known = known && c.shape(c.in(static_cast<int>(i))).dims[axis] >= 0;
  if (!known) {  // lengths known only at the call: a Split by the inputs' lengths
    std::vector<int> lens;
    Shape s0;
    s0.ndim = 0;
    for (size_t i = first; i < c.n.inputs.size(); ++i)
      lens.push_back(c.b.node("Shape_i", {c.in(static_cast<int>(i))}, json{{"i", axis}}, DType::Int64, s0));
    Shape s1;
    s1.ndim = 1;
    s1.dims[0] = static_cast<int64_t>(lens.size());
    const int splits = c.b.node("MakeVector", lens, json::object(), DType::Int64, s1);
    NodeSpec sp;
    sp.op = "Split";
    sp.inputs = {c.gz[0], splits};
    sp.attrs = json{{"len_splits", static_cast<int>(lens.size())}, {"axis", axis}};
    std::vector<int> parts;
    for (size_t i = first; i < c.n.inputs.size(); ++i) {
      Shape s = c.shape(z);
      s.dims[axis] = c.shape(c.in(static_cast<int>(i))).dims[axis];
      parts.push_back(c.b.var(c.b.dtype(z), s));
    }
    sp.outputs = parts;
    c.b.add_node(std::move(sp));
    for (size_t i = first; i < c.n.inputs.size(); ++i) c.give(static_cast<int>(i), parts[i - first]);
    return;
  }
  int64_t start = 0;
  for (size_t i = first; i < c.n.inputs.size(); ++i) {
    const int x = c.in(static_cast<int>(i));
    const int64_t len = c.shape(x).dims[axis];
    if (c.need[i]) {
      json idx = json::array();
      for (int d = 0; d < axis; ++d) idx.push_back(json{{"type", "slice"}, {"start", nullptr}, {"stop", nullptr},
                                                        {"step", nullptr}});
      idx.push_back(json{{"type", "slice"}, {"start", start}, {"stop", start + len}, {"step", nullptr}});
      Shape s = c.shape(z);
      s.dims[axis] = len;
      c.give(static_cast<int>(i), c.b.node("Subtensor", {c.gz[0]}, json{{"idx_list", idx}}, c.b.dtype(z), s));
    }
    start += len;
  }
}

void split(Ctx& c) {
  const int x = c.in(0), nd = c.ndim(x);
  int axis = c.n.attrs.contains("axis") ? c.n.attrs.at("axis").get<int>() : c.const_int(c.in(1), "Split's axis");
  if (axis < 0) axis += nd;
  std::vector<int> parts;
  for (size_t j = 0; j < c.n.outputs.size(); ++j)
    parts.push_back(c.gz[j] >= 0 ? c.b.cast(c.gz[j], c.b.dtype(x)) : c.b.zeros_like(c.n.outputs[j]));
  c.give(0, c.b.node("Join", parts, json{{"axis", axis}}, c.b.dtype(x), c.shape(x)));
}

void dot(Ctx& c) {
  Builder& b = c.b;
  const int a = c.in(0), v = c.in(1), g = c.gz[0];
  const int na = c.ndim(a), nv = c.ndim(v);
  const DType dt = b.dtype(c.n.outputs[0]);
  auto mm = [&](int p, int q) {
    Shape s;
    const Shape ps = b.spec(p).static_shape, qs = b.spec(q).static_shape;
    s.ndim = ps.ndim + qs.ndim - 2;
    int k = 0;
    for (int d = 0; d + 1 < ps.ndim; ++d) s.dims[k++] = ps.dims[d];
    for (int d = 1; d < qs.ndim; ++d) s.dims[k++] = qs.dims[d];
    return b.node("Dot", {p, q}, json::object(), dt, s);
  };
  auto t = [&](int m) { return b.dimshuffle(m, {1, 0}); };
  if (na == 2 && nv == 2) {
    if (c.need[0]) c.give(0, mm(g, t(v)));
    if (c.need[1]) c.give(1, mm(t(a), g));
  } else if (na == 2 && nv == 1) {
    if (c.need[0]) c.give(0, mm(b.dimshuffle(g, {0, -1}), b.dimshuffle(v, {-1, 0})));
    if (c.need[1]) c.give(1, mm(t(a), g));
  } else if (na == 1 && nv == 2) {
    if (c.need[0]) c.give(0, mm(v, g));
    if (c.need[1]) c.give(1, mm(b.dimshuffle(a, {0, -1}), b.dimshuffle(g, {-1, 0})));
  } else if (na == 1 && nv == 1) {
    const int g1 = b.dimshuffle(g, {-1});
    if (c.need[0]) c.give(0, b.elem("Mul", {g1, v}, dt));
    if (c.need[1]) c.give(1, b.elem("Mul", {g1, a}, dt));
  } else {
    c.no_rule("Dot of ranks " + std::to_string(na) + " and " + std::to_string(nv));
  }
}

void cumop(Ctx& c) {
  if (c.n.attrs.value("mode", "add") == "mul") return void(c.out = products_adjoint(c.b, c.n, c.gz, c.need, c.where));
  auto it = c.n.attrs.find("axis");
  if (it == c.n.attrs.end() || it->is_null()) c.no_rule("CumOp over the flattened input");
  const int x = c.in(0), nd = c.ndim(x);
  int axis = it->get<int>();
  if (axis < 0) axis += nd;
  json idx = json::array();
  for (int d = 0; d < axis; ++d)
    idx.push_back(json{{"type", "slice"}, {"start", nullptr}, {"stop", nullptr}, {"step", nullptr}});
  idx.push_back(json{{"type", "slice"}, {"start", nullptr}, {"stop", nullptr}, {"step", -1}});
  const DType dt = c.b.dtype(x);
  const Shape s = c.shape(x);
  const int flip = c.b.node("Subtensor", {c.b.cast(c.gz[0], dt)}, json{{"idx_list", idx}}, dt, s);
  const int cum = c.b.node("CumOp", {flip}, json{{"axis", axis}, {"mode", "add"}}, dt, s);
  c.give(0, c.b.node("Subtensor", {cum}, json{{"idx_list", idx}}, dt, s));
}

// SortOp.grad: each output's gradient back at its element's place. PyTensor
// gathers it by the inverse permutation; a scatter by the permutation gives
// the same values (ArgSortOp is stable, as the sort).
void sort(Ctx& c) {
  const int x = c.in(0);
  if (c.ndim(x) != 1) c.no_rule("SortOp of a " + std::to_string(c.ndim(x)) + "-d array");
  const int perm = c.b.node("ArgSortOp", {x}, c.n.attrs, DType::Int64, c.shape(x));
  c.give(0, c.b.node("AdvancedIncSubtensor1", {c.b.zeros_like(x), c.b.cast(c.gz[0], c.b.dtype(x)), perm},
                     json{{"set_instead_of_inc", false}}, c.b.dtype(x), c.shape(x)));
}

}  // namespace

std::vector<int> adjoint(Builder& b, const NodeSpec& n, const std::vector<int>& gz, const std::vector<char>& need,
                         const std::string& where) {
  Ctx c(b, n, gz, need, where);
  const std::optional<TensorOp> op = find_tensor_op(n.op);
  if (!op) c.no_rule("no adjoint for op " + n.op);
  bool any = false;
  for (int g : gz) any = any || g >= 0;
  if (!any) return c.out;
  // Ops whose other outputs carry no gradient need their first one.
  auto first = [&] {
    if (gz[0] < 0) c.no_rule(n.op + " without its first output's gradient");
  };
  switch (*op) {
    case TensorOp::Elemwise: elemwise(c); break;
    case TensorOp::DimShuffle: first(); dimshuffle(c); break;
    case TensorOp::Sum: first(); reduce_sum(c); break;
    case TensorOp::Max:
    case TensorOp::Min: first(); reduce_extremum(c); break;
    case TensorOp::CAReduce: first(); careduce(c); break;
    case TensorOp::Alloc: first(); alloc(c); break;
    case TensorOp::SpecifyShape:
    case TensorOp::ScalarFromTensor:
    case TensorOp::TensorFromScalar:
    case TensorOp::DeepCopyOp:
    case TensorOp::ViewOp:
    case TensorOp::OutputGuard:
    case TensorOp::Unbroadcast:
    case TensorOp::CheckAndRaise:
    case TensorOp::Assert: first(); pass_through(c); break;
    case TensorOp::Subtensor: first(); subtensor(c); break;
    case TensorOp::IncSubtensor: first(); inc_subtensor(c, false); break;
    case TensorOp::AdvancedSubtensor1: first(); advanced_subtensor1(c); break;
    case TensorOp::AdvancedIncSubtensor1: first(); advanced_inc_subtensor1(c); break;
    case TensorOp::AdvancedSubtensor: first(); advanced_subtensor(c); break;
    case TensorOp::AdvancedIncSubtensor: first(); inc_subtensor(c, true); break;
    case TensorOp::Reshape: first(); reshape(c); break;
    case TensorOp::FillDiagonal: first(); fill_diagonal(c); break;
    case TensorOp::MakeVector: first(); make_vector(c); break;
    case TensorOp::Join: first(); join(c); break;
    case TensorOp::Split: split(c); break;
    case TensorOp::Dot: first(); dot(c); break;
    case TensorOp::CumOp: first(); cumop(c); break;
    case TensorOp::SortOp: first(); sort(c); break;
    case TensorOp::Cholesky: return linalg_adjoint(b, n, gz, need, where);
    case TensorOp::ExtractDiag: return linalg_adjoint(b, n, gz, need, where);
    case TensorOp::SolveTriangular: return linalg_adjoint(b, n, gz, need, where);
    case TensorOp::Solve: return linalg_adjoint(b, n, gz, need, where);
    case TensorOp::MatrixInverse: return linalg_adjoint(b, n, gz, need, where);
    case TensorOp::Expm: return linalg_adjoint(b, n, gz, need, where);
    case TensorOp::Det: return linalg_adjoint(b, n, gz, need, where);
    case TensorOp::SLogDet: return linalg_adjoint(b, n, gz, need, where);
    case TensorOp::Eigh: return linalg_adjoint(b, n, gz, need, where);
    case TensorOp::Eigvalsh: return linalg_adjoint(b, n, gz, need, where);
    case TensorOp::SVD: return linalg_adjoint(b, n, gz, need, where);
    case TensorOp::Blockwise: return linalg_adjoint(b, n, gz, need, where);
    case TensorOp::Softmax: return products_adjoint(b, n, gz, need, where);
    case TensorOp::LogSoftmax: return products_adjoint(b, n, gz, need, where);
    case TensorOp::Prod: return products_adjoint(b, n, gz, need, where);
    default: c.no_rule("no adjoint for op " + n.op);
  }
  return c.out;
}

}  // namespace ember::grad
