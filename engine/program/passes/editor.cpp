#include "engine/program/passes/editor.hpp"

#include <algorithm>
#include <cstring>
#include <queue>

#include "engine/ops/ops_common.hpp"
#include "interp/scalar_op.hpp"

namespace ember::passes {

Editor::Editor(Graph& graph) : g(graph) {
  const size_t nv = g.vars.size();
  producer_.assign(nv, -1);
  const_of_.assign(nv, -1);
  is_output_.assign(nv, 0);
  repl_.assign(nv, -1);
  removed_.assign(g.nodes.size(), 0);
  pos_.resize(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    pos_[k] = static_cast<int>(k);
    for (int v : g.nodes[k].outputs) producer_[v] = static_cast<int>(k);
  }
  for (size_t k = 0; k < g.constants.size(); ++k) const_of_[g.constants[k].var] = static_cast<int>(k);
  for (const InputSpec& in : g.inputs)
    if (in.shared) const_of_[in.var] = -1;
  for (int v : g.outputs) is_output_[v] = 1;
}

Tensor Editor::constant(int v) const {
  const ConstSpec& c = g.constants[const_of_[v]];
  return Tensor::contiguous(g.vars[v].dtype, c.shape, const_cast<void*>(c.data));
}

void Editor::replace(int from, int to) {
  to = resolve(to);
  if (from != to) repl_[from] = to;
}

int Editor::resolve(int v) const {
  int r = v;
  while (repl_[r] >= 0) r = repl_[r];
  while (repl_[v] >= 0 && repl_[v] != r) {  // path compression
    const int next = repl_[v];
    repl_[v] = r;
    v = next;
  }
  return r;
}

NodeSpec& Editor::node(int k) {
  NodeSpec& n = g.nodes[k];
  for (int& v : n.inputs) v = resolve(v);
  return n;
}

int Editor::add_var(const VarSpec& v) {
  g.vars.push_back(v);
  producer_.push_back(-1);
  const_of_.push_back(-1);
  is_output_.push_back(0);
  repl_.push_back(-1);
  return static_cast<int>(g.vars.size()) - 1;
}

void Editor::make_constant(int var, const Array& value) {
  ConstSpec c;
  c.var = var;
  c.shape = value.t.shape;
  c.data = value.t.data;
  g.storage.push_back(value.mem);
  const_of_[var] = static_cast<int>(g.constants.size());
  g.constants.push_back(c);
  producer_[var] = -1;
}

int Editor::add_constant(DType dt, const Shape& static_shape, const Array& value) {
  VarSpec v;
  v.dtype = dt;
  v.static_shape = static_shape;
  const int var = add_var(v);
  make_constant(var, value);
  return var;
}

int Editor::scalar_constant(DType dt, double value, int ndim) {
  Shape s;
  s.ndim = ndim;
  for (int d = 0; d < ndim; ++d) s.dims[d] = 1;
  Array a = Array::empty(dt, s);
  dtype_dispatch(dt, [&](auto t) { *a.data<decltype(t)>() = static_cast<decltype(t)>(value); });
  return add_constant(dt, s, a);
}

int Editor::add_var(DType dt, const Shape& static_shape) {
  VarSpec v;
  v.dtype = dt;
  v.static_shape = static_shape;
  return add_var(v);
}

int Editor::add_op(std::string op, std::vector<int> inputs, nlohmann::json attrs, DType dt, const Shape& s, int at) {
  NodeSpec n;
  n.op = std::move(op);
  n.inputs = std::move(inputs);
  n.outputs = {add_var(dt, s)};
  n.attrs = std::move(attrs);
  const int out = n.outputs[0];
  add_node(std::move(n), at);
  return out;
}

int Editor::add_node(NodeSpec n, int at) {
  const int k = static_cast<int>(g.nodes.size());
  for (int v : n.outputs) producer_[v] = k;
  g.nodes.push_back(std::move(n));
  removed_.push_back(0);
  pos_.push_back(at);
  if (origin) origin->push_back(at >= 0 && at < static_cast<int>(origin->size()) ? (*origin)[at] : at);
  return k;
}

Users Editor::users() const {
  Users u;
  u.off.assign(g.vars.size() + 1, 0);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!removed_[k])
      for (int v : g.nodes[k].inputs) ++u.off[resolve(v) + 1];
  for (size_t v = 0; v < g.vars.size(); ++v) u.off[v + 1] += u.off[v];
  u.node.resize(u.off.back());
  std::vector<int> at(u.off.begin(), u.off.end() - 1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!removed_[k])
      for (int v : g.nodes[k].inputs) u.node[at[resolve(v)]++] = static_cast<int>(k);
  return u;
}

int Editor::commit() {
  const int n = static_cast<int>(g.nodes.size());
  for (int k = 0; k < n; ++k)
    if (!removed_[k]) node(k);

  // Graph outputs keep their variables.
  std::vector<char> claimed(g.vars.size(), 0);
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const int o = g.outputs[k];
    const int r = resolve(o);
    if (r == o) continue;
    if (const int po = producer_[o]; po >= 0 && !removed_[po]) {
      // o's node stays (another of its outputs is used): it writes a fresh,
      // unread variable instead.
      const int fresh = add_var(g.vars[o]);
      for (int& v : g.nodes[po].outputs)
        if (v == o) v = fresh;
      producer_[fresh] = po;
      producer_[o] = -1;
    }
    const int p = producer_[r];
    const VarSpec &vo = g.vars[o], &vr = g.vars[r];
    bool same = vo.dtype == vr.dtype && vo.static_shape.ndim == vr.static_shape.ndim;
    for (int d = 0; same && d < vo.static_shape.ndim; ++d) same = vo.static_shape.dims[d] == vr.static_shape.dims[d];
    if (p >= 0 && !removed_[p] && !is_output_[r] && !claimed[r] && same) {
      // The node defining r defines o instead; r's users read o.
      for (int& v : g.nodes[p].outputs)
        if (v == r) v = o;
      producer_[o] = p;
      producer_[r] = -1;
      repl_[o] = -1;
      repl_[r] = o;
      claimed[r] = 1;
      for (int j = 0; j < n; ++j)
        if (!removed_[j])
          for (int& v : g.nodes[j].inputs)
            if (v == r) v = o;
    } else {
      repl_[o] = -1;
      NodeSpec copy;
      copy.op = "DeepCopyOp";
      copy.inputs = {r};
      copy.outputs = {o};
      copy.attrs = nlohmann::json::object();
      add_node(std::move(copy), p >= 0 ? pos_[p] : 0);
    }
  }

  // Kahn's algorithm over live nodes, smallest position first.
  const int m = static_cast<int>(g.nodes.size());
  std::vector<int> pending(m, 0);
  for (int k = 0; k < m; ++k) {
    if (removed_[k]) continue;
    for (int v : g.nodes[k].inputs) {
      const int p = producer_[v];
      if (p >= 0 && p != k && !removed_[p]) ++pending[k];
    }
  }
  const Users waiting = users();
  using Item = std::pair<int64_t, int>;  // (position, node)
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
  auto key = [&](int k) { return static_cast<int64_t>(pos_[k]) * (int64_t(1) << 24) + k; };
  for (int k = 0; k < m; ++k)
    if (!removed_[k] && pending[k] == 0) ready.emplace(key(k), k);
  std::vector<NodeSpec> order;
  std::vector<int> org;
  order.reserve(m);
  while (!ready.empty()) {
    const int k = ready.top().second;
    ready.pop();
    if (origin) org.push_back(k < static_cast<int>(origin->size()) ? (*origin)[k] : k);
    for (int v : g.nodes[k].outputs)
      for (int u : waiting.of(v))
        if (--pending[u] == 0) ready.emplace(key(u), u);
    order.push_back(std::move(g.nodes[k]));
  }
  g.nodes = std::move(order);
  if (origin) *origin = std::move(org);

  // Fresh state for the next pass on the same editor.
  const size_t nv = g.vars.size();
  producer_.assign(nv, -1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int v : g.nodes[k].outputs) producer_[v] = static_cast<int>(k);
  repl_.assign(nv, -1);
  removed_.assign(g.nodes.size(), 0);
  pos_.resize(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) pos_[k] = static_cast<int>(k);
  return static_cast<int>(g.nodes.size());
}

// ---- helpers --------------------------------------------------------------

bool one_element(const VarSpec& v) {
  for (int d = 0; d < v.static_shape.ndim; ++d)
    if (v.static_shape.dims[d] != 1) return false;
  return true;
}

bool same_static_shape(const Shape& a, const Shape& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.dims[d] < 0 || a.dims[d] != b.dims[d]) return false;
  return true;
}

bool constant_all(const Editor& e, int v, double x) {
  if (!e.is_constant(v)) return false;
  const Tensor t = e.constant(v);
  bool all = true;
  dtype_dispatch(t.dtype, [&](auto z) {
    using T = decltype(z);
    for (int64_t i = 0; i < t.size() && all; ++i) all = static_cast<double>(t.at<T>(i)) == x;
  });
  return all;
}

int64_t static_size(const Shape& s) {
  int64_t n = 1;
  for (int d = 0; d < s.ndim; ++d) {
    if (s.dims[d] < 0 || __builtin_mul_overflow(n, s.dims[d], &n)) return -1;
  }
  return n;
}

int64_t flat_index(const Shape& s, const int64_t* coord) {
  int64_t f = 0;
  for (int d = 0; d < s.ndim; ++d) f = f * s.dims[d] + coord[d];
  return f;
}

void unflat_index(const Shape& s, int64_t f, int64_t* coord) {
  for (int d = s.ndim - 1; d >= 0; --d) {
    coord[d] = f % s.dims[d];
    f /= s.dims[d];
  }
}

namespace {

// One axis of basic indexing by literals: the elements start, start + step,
// ... (len of them; -1: a slice of an unknown dim), kept or dropped (an index).
struct LiteralAxis {
  int64_t start, len, step;
  bool keep;
};

// The axes of x (static shape xs) an index list of literals selects;
// nullopt when an entry is not a literal, an index is out of range or on an
// unknown dim (the node's own error stays), or the entries do not fit x.
std::optional<std::vector<LiteralAxis>> literal_axes(const nlohmann::json& idx, const Shape& xs) {
  if (!idx.is_array() || static_cast<int>(idx.size()) > xs.ndim) return std::nullopt;
  std::vector<LiteralAxis> ax;
  auto lit = [](const nlohmann::json& e, const char* key, std::optional<int64_t>& v) {
    if (!e.contains(key) || e[key].is_null()) return true;
    if (!e[key].is_number_integer()) return false;
    v = e[key].get<int64_t>();
    return true;
  };
  for (int d = 0; d < xs.ndim; ++d) {
    const int64_t n = xs.dims[d];
    if (d >= static_cast<int>(idx.size())) {
      ax.push_back({0, n, 1, true});
      continue;
    }
    const nlohmann::json& e = idx[d];
    if (!e.is_object() || !e.contains("type") || !e["type"].is_string()) return std::nullopt;
    const std::string t = e["type"].get<std::string>();
    if (t == "index") {
      std::optional<int64_t> v;
      if (!lit(e, "value", v) || !v || n < 0) return std::nullopt;
      const int64_t i = normalize_index(*v, n);
      if (i < 0) return std::nullopt;
      ax.push_back({i, 1, 1, false});
    } else if (t == "slice") {
      std::optional<int64_t> start, stop, step;
      if (!lit(e, "start", start) || !lit(e, "stop", stop) || !lit(e, "step", step)) return std::nullopt;
      if (step && *step == 0) return std::nullopt;
      if (n < 0) {
        ax.push_back({0, -1, step.value_or(1), true});
        continue;
      }
      const SliceRange r = slice_range(start, stop, step.value_or(1), n);
      ax.push_back({r.start, r.len, r.step, true});
    } else {
      return std::nullopt;
    }
  }
  return ax;
}

Shape kept_shape(const std::vector<LiteralAxis>& ax) {
  Shape out;
  for (const LiteralAxis& a : ax)
    if (a.keep) out.dims[out.ndim++] = a.len;
  return out;
}

}  // namespace

std::optional<Shape> literal_index_shape(const nlohmann::json& idx, const Shape& xs) {
  const auto ax = literal_axes(idx, xs);
  if (!ax) return std::nullopt;
  return kept_shape(*ax);
}

std::optional<std::vector<int64_t>> literal_selection(const nlohmann::json& idx, const Shape& xs, Shape& out) {
  if (static_size(xs) < 0) return std::nullopt;
  const auto ax = literal_axes(idx, xs);
  if (!ax) return std::nullopt;
  out = kept_shape(*ax);
  std::vector<int64_t> sel;
  const int64_t total = static_size(out);
  std::vector<int64_t> oc(kMaxRank), xc(kMaxRank);
  for (int64_t f = 0; f < total; ++f) {
    unflat_index(out, f, oc.data());
    for (int d = 0, od = 0; d < xs.ndim; ++d) xc[d] = (*ax)[d].start + ((*ax)[d].keep ? oc[od++] : 0) * (*ax)[d].step;
    sel.push_back(flat_index(xs, xc.data()));
  }
  return sel;
}

std::optional<std::vector<int>> dimshuffle_order(const NodeSpec& n) {
  auto it = n.attrs.find("new_order");
  if (it == n.attrs.end() || !it->is_array()) return std::nullopt;
  std::vector<int> r;
  for (const nlohmann::json& x : *it) {
    if (x.is_string() && x.get<std::string>() == "x") r.push_back(-1);
    else if (x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() < kMaxRank) r.push_back(x.get<int>());
    else return std::nullopt;
  }
  return r;
}

namespace {
bool costly_scalar_op(const std::string& name) {
  if (name == "TrueDiv" || name == "Reciprocal" || name == "Sqrt" || name == "ScalarLoop") return true;
  const std::optional<interp::ScalarOp> op = interp::scalar_op_from_name(name);
  return op && !interp::op_info(*op).math.empty();
}
}  // namespace

bool costly_elemwise(const NodeSpec& n) {
  if (!is_op(n, TensorOp::Elemwise)) return false;
  const nlohmann::json& so = n.attrs.value("scalar_op", nlohmann::json());
  if (!so.is_object()) return false;
  const std::string name = so.value("op", "");
  if (name != "Composite") return costly_scalar_op(name);
  for (const nlohmann::json& c : so.value("nodes", nlohmann::json::array()))
    if (c.is_object() && costly_scalar_op(c.value("op", ""))) return true;
  return false;
}

std::string elemwise_scalar_op(const NodeSpec& n) {
  if (!is_op(n, TensorOp::Elemwise) || !n.attrs.is_object()) return "";
  auto it = n.attrs.find("scalar_op");
  if (it == n.attrs.end() || !it->is_object()) return "";
  auto op = it->find("op");
  if (op == it->end() || !op->is_string()) return "";
  const std::string& s = op->get_ref<const std::string&>();
  if (s == "Composite" || s == "ScalarLoop") return "";
  return s;
}

Shape line_of(int64_t n) {
  Shape s;
  s.ndim = 1;
  s.dims[0] = n;
  return s;
}

int mask_positions(Editor& e, const Tensor& m, bool value) {
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < m.dim(0); ++i)
    if (m.at<bool>(i) == value) pos.push_back(i);
  const Shape s = line_of(static_cast<int64_t>(pos.size()));
  return e.add_constant(DType::Int64, s, Array::of<int64_t>(s, pos));
}

bool same_broadcast_pattern(const Shape& a, const Shape& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if ((a.dims[d] == 1) != (b.dims[d] == 1)) return false;
  return true;
}

}  // namespace ember::passes
