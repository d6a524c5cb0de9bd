// One graph-rewriting pass run alone on a built graph: the program as built
// and after the pass and dce, both loaded with the pipeline off.
#pragma once
#include <functional>
#include <memory>

#include "ember/ember.hpp"
#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"
#include "engine/program/program_impl.hpp"
#include "graph_builder.hpp"

namespace ember::test {

inline Options no_passes() {
  Options o;
  o.passes = Options::Passes{false, false, false, false, false};
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

}  // namespace ember::test
