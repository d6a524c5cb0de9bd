// Sums of broadcasts: the gradient of a Sum is its output gradient
// broadcast back (a fill), and an input broadcast into a larger Elemwise
// gets the sum of that fill, scaled, negated... over the broadcast axes.
// Sum(v, A), where v is the broadcast along A of a value w that is 1 on A,
// becomes w * (the number of elements along A), as PyTensor's canonicalize
// does (local_sum_prod_of_fill and its kin). Not bit-exact against a summed
// fill, so it runs on differentiated graphs only, as their canonicalization.
#include <algorithm>
#include <unordered_map>

#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"
#include "engine/program/grad/grad.hpp"

namespace ember::grad {

namespace {

using nlohmann::json;

class SumBroadcasts {
 public:
  explicit SumBroadcasts(passes::Editor& e) : e_(e), b_(e) {}

  int run() {
    int rewrites = 0;
    users_ = e_.users();
    nvars_ = static_cast<int>(e_.g.vars.size());
    for (int k = 0; k < e_.num_nodes(); ++k) {  // the Sums it makes too
      if (e_.removed(k) || e_.node(k).op != "Sum") continue;
      const NodeSpec s = e_.node(k);
      const int x = s.inputs[0], out = s.outputs[0];
      const VarSpec xs = e_.g.vars[x];
      if (xs.dtype != e_.g.vars[out].dtype || (xs.dtype != DType::Float64 && xs.dtype != DType::Float32)) continue;
      const std::vector<int> axes = reduce_axes(s.attrs, xs.static_shape.ndim);
      double count = 1;
      bool known = true;
      for (int a : axes) {
        const int64_t len = xs.static_shape.dims[a];
        known = known && len >= 0;
        count *= static_cast<double>(len);
      }
      if (!known) continue;
      axes_ = axes;
      if (count == 1) {  // a sum of one element (of a 0-d value, PyMC's sum of a scalar term): the element
        e_.replace(out, drop(x));
        e_.remove(k);
        ++rewrites;
        continue;
      }
      if (count < 1 || flat(x, axes)) continue;
      memo_.clear();
      const int w = source(x);
      if (w < 0) {
        if (const int r = pull_factors(x, s); r >= 0) {
          e_.replace(out, r);
          e_.remove(k);
          ++rewrites;
        }
        continue;
      }
      std::vector<int> order;
      bool kept_dims = true;  // w broadcast along the kept axes too would give the Sum a smaller shape
      for (int d = 0; d < xs.static_shape.ndim; ++d)
        if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
          order.push_back(d);
          kept_dims = kept_dims && (b_.spec(w).static_shape.dims[d] != 1 || xs.static_shape.dims[d] == 1);
        }
      if (!kept_dims) continue;
      const int dropped = b_.dimshuffle(w, order);
      e_.replace(out, b_.elem("Mul", {dropped, b_.constant(count, xs.dtype, b_.ndim(dropped))}, xs.dtype));
      e_.remove(k);
      ++rewrites;
    }
    if (rewrites) e_.commit();
    return rewrites;
  }

 private:
  passes::Editor& e_;
  Builder b_;
  std::vector<int> axes_;
  passes::Users users_;  // of the variables before the pass
  int nvars_ = 0;
  std::unordered_map<int, int> memo_;

  bool flat(int v, const std::vector<int>& axes) const {
    const Shape& s = e_.g.vars[v].static_shape;
    for (int a : axes)
      if (s.dims[a] != 1) return false;
    return true;
  }

  // v with the summed axes dropped (v is 1 on them).
  int drop(int v) {
    std::vector<int> order;
    for (int d = 0; d < b_.ndim(v); ++d)
      if (std::find(axes_.begin(), axes_.end(), d) == axes_.end()) order.push_back(d);
    return b_.dimshuffle(v, order);
  }

  // Sum(neg(x)) = -Sum(x), Sum(x / s) = Sum(x) / s, Sum(s * x) = s * Sum(x),
  // Sum(switch(s, x, 0)) = switch(s, Sum(x), 0)
  // for s constant along the summed axes, as PyTensor's canonicalize does
  // (local_sum_mul_by_scalar, local_sum_div_dimshuffle): the gradient's
  // scalar factors leave the per-element loop. The rewritten Sum, or -1.
  int pull_factors(int x, const NodeSpec& sum) {
    const DType dt = e_.g.vars[x].dtype;
    struct Post {
      std::string op;
      int operand;
    };
    std::vector<Post> post;
    int v = x;
    for (;;) {
      const int p = e_.producer(v);
      // Past the first, only through values nothing else reads: no work twice.
      if (v != x && (v >= nvars_ || users_.of(v).size() != 1)) break;  // a value made here: readers unknown
      if (p < 0 || e_.removed(p) || (v < nvars_ && e_.is_graph_output(v))) break;
      const NodeSpec n = e_.node(p);
      const std::string op = passes::elemwise_scalar_op(n);
      if (n.outputs.size() != 1 || e_.g.vars[n.outputs[0]].dtype != dt) break;
      if (op == "Neg") {
        post.push_back({"Neg", -1});
        v = n.inputs[0];
      } else if (op == "TrueDiv" && flat(n.inputs[1], axes_) && !flat(n.inputs[0], axes_)) {
        post.push_back({"TrueDiv", n.inputs[1]});
        v = n.inputs[0];
      } else if (op == "Mul") {
        std::vector<int> fs, rest, factors;
        flatten_mul(n.inputs, dt, factors);
        for (int f : factors) (flat(f, axes_) ? fs : rest).push_back(f);
        if (fs.empty() || rest.empty()) break;
        post.push_back({"Mul", fs.size() == 1 ? fs[0] : b_.elem("Mul", fs, dt)});
        v = rest.size() == 1 ? rest[0] : b_.elem("Mul", rest, dt);
        if (rest.size() != 1) break;  // a new node: nothing further to peel
      } else if (op == "Switch" && n.inputs.size() == 3 && flat(n.inputs[0], axes_)) {
        // Sum(switch(c, x, 0)) = switch(c, Sum(x), 0) for c constant along the axes.
        const bool zero_else = passes::constant_all(e_, n.inputs[2], 0.0);
        const bool zero_then = passes::constant_all(e_, n.inputs[1], 0.0);
        if (zero_else == zero_then) break;
        post.push_back({zero_else ? "SwitchThen" : "SwitchElse", n.inputs[0]});
        v = n.inputs[zero_else ? 1 : 2];
      } else {
        break;
      }
    }
    if (post.empty()) return -1;
    Shape rs = e_.g.vars[sum.outputs[0]].static_shape;
    int r = b_.node("Sum", {v}, sum.attrs, dt, rs);
    for (auto it = post.rbegin(); it != post.rend(); ++it) {
      if (it->op == "Neg") {
        r = b_.elem("Neg", {r}, dt);
      } else if (it->op == "SwitchThen" || it->op == "SwitchElse") {
        const int c = drop(it->operand), z = b_.constant(0.0, dt, b_.ndim(r));
        r = it->op == "SwitchThen" ? b_.elem("Switch", {c, r, z}, dt) : b_.elem("Switch", {c, z, r}, dt);
      } else {
        r = b_.elem(it->op, {r, b_.cast(drop(it->operand), dt)}, dt);
      }
    }
    return r;
  }

  // The factors of a product, through nested products (their multiplications
  // are cheap to repeat where another reader keeps one).
  void flatten_mul(const std::vector<int>& in, DType dt, std::vector<int>& out) {
    for (int f : in) {
      const int p = e_.producer(f);
      if (p >= 0 && !e_.removed(p) && passes::elemwise_scalar_op(e_.node(p)) == "Mul" &&
          e_.node(p).outputs.size() == 1 && e_.g.vars[f].dtype == dt &&
          passes::same_broadcast_pattern(e_.g.vars[f].static_shape,
                                         broadcast_static(e_.g, std::vector<int>(e_.node(p).inputs))))
        flatten_mul(std::vector<int>(e_.node(p).inputs), dt, out);
      else
        out.push_back(f);
    }
  }

  // A value of v's rank, 1 on the axes, that broadcasts to v; -1 if none is found.
  int source(int v) {
    if (flat(v, axes_)) return v;
    if (auto it = memo_.find(v); it != memo_.end()) return it->second;
    int r = -1;
    const int p = e_.producer(v);
    if (p >= 0 && !e_.removed(p)) {
      const NodeSpec n = e_.node(p);
      const std::string op = passes::elemwise_scalar_op(n);
      if (!op.empty() && n.outputs.size() == 1) {
        if (op == "Second") {
          const int y = n.inputs[1];
          if (flat(y, axes_)) r = b_.cast(y, e_.g.vars[v].dtype);
        } else {
          std::vector<int> ins;
          for (int in : n.inputs) {
            const int s = source(in);
            if (s < 0) {
              ins.clear();
              break;
            }
            ins.push_back(s);
          }
          if (!ins.empty()) r = b_.elem(op, ins, e_.g.vars[v].dtype);
        }
      }
    }
    memo_[v] = r;
    return r;
  }
};

}  // namespace

int sum_broadcasts(passes::Editor& e) { return SumBroadcasts(e).run(); }

// Sum(join(a, b, ...)) over every axis -> Sum(a) + Sum(b) + ..., when the
// join has no other reader: PyMC joins a time series' first and later terms
// before summing, and each term's parameter check can then switch its own
// sum (derive.cpp). A different order of additions, so on graphs being
// differentiated only.
int split_joined_sums(passes::Editor& e) {
  const passes::Users users = e.users();
  return rewrite_each(e, [&](Builder& b, const NodeSpec& s) {
    if (s.op != "Sum") return -1;
    const int x = s.inputs[0], out = s.outputs[0];
    const DType dt = e.g.vars[out].dtype;
    if (e.g.vars[out].static_shape.ndim != 0 || e.g.vars[x].dtype != dt) return -1;
    if (dt != DType::Float64 && dt != DType::Float32) return -1;
    const int p = e.producer(x);
    if (p < 0 || e.removed(p) || e.node(p).op != "Join" || users.of(x).size() != 1 || e.is_graph_output(x)) return -1;
    const NodeSpec j = e.node(p);
    std::vector<int> terms;
    Shape s0;
    s0.ndim = 0;
    for (size_t i = j.attrs.contains("axis") ? 0 : 1; i < j.inputs.size(); ++i) {
      const int piece = j.inputs[i];
      if (e.g.vars[piece].dtype != dt) return -1;
      terms.push_back(b.node("Sum", {piece}, nlohmann::json{{"axis", nullptr}}, dt, s0));
    }
    return terms.empty() ? -1 : b.add(terms);
  });
}

}  // namespace ember::grad
