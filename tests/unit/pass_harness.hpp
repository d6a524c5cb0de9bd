// One graph-rewriting pass run alone on a built graph: the program as built
// and after the pass and dce, both loaded with the pipeline off.
#pragma once
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"
#include "engine/program/program_impl.hpp"
#include "graph_builder.hpp"

namespace ember::test {

inline Options no_passes() {
  Options o;
  o.passes = Options::Passes{false, false, false, false, false, false};
  return o;
}

struct Rewritten {
  std::shared_ptr<const Program> before, after;
  int rewrites = 0;  // the pass's count
};

inline Rewritten rewritten(const GraphBuilder& b, const std::function<int(passes::Editor&)>& pass) {
  Rewritten r;
  r.before = Program::from_json(b.str(), no_passes());
  Graph g = Graph::parse(b.str(), nullptr, 0, "<t>");
  passes::Editor e(g);
  r.rewrites = pass(e);
  passes::dead_code(e);
  r.after = Program::from_graph(std::move(g), no_passes());
  return r;
}

// Output 0 of p, flattened, for one or two float64 vector inputs.
inline std::vector<double> run(const std::shared_ptr<const Program>& p, const std::vector<double>& x,
                               const std::vector<double>& y = {}) {
  std::vector<Array> args{Array::of<double>(Shape{1, {static_cast<int64_t>(x.size())}}, x)};
  if (!y.empty()) args.push_back(Array::of<double>(Shape{1, {static_cast<int64_t>(y.size())}}, y));
  std::vector<Tensor> t;
  for (const Array& a : args) t.push_back(a.t);
  const std::vector<Array> out = p->call(std::span<const Tensor>(t.data(), t.size()));
  std::vector<double> r(out.at(0).size());
  for (size_t i = 0; i < r.size(); ++i) r[i] = out[0].t.at<double>(static_cast<int64_t>(i));
  return r;
}

// Elemwise nodes of scalar op `op` (or nodes of tensor op `op`).
inline int count(const std::shared_ptr<const Program>& p, const std::string& op) {
  int n = 0;
  for (const NodeSpec& s : p->graph().nodes)
    n += s.op == op || (s.op == "Elemwise" && s.attrs["scalar_op"]["op"] == op);
  return n;
}

}  // namespace ember::test
