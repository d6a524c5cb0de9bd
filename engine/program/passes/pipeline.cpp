// The order the load-time passes run in (passes.hpp) and their switches.
#include <chrono>
#include <cstdio>
#include <ctime>

#include "engine/program/grad/canonicalize.hpp"
#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"
#include "interp/config.hpp"

namespace ember::passes {

namespace {

// This thread's CPU time: the passes' own cost, whatever else the machine runs.
double cpu_ms() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

bool off(const std::optional<std::string>& v) { return v && *v == "0"; }

}  // namespace

Options::Passes enabled_passes(const Options& o) {
  Options::Passes p = o.passes;
  const Config& c = config();
  if (off(c.passes)) return Options::Passes{false, false, false, false, false, false};
  p.dce = p.dce && !off(c.pass_dce);
  p.fold = p.fold && !off(c.pass_fold);
  p.cse = p.cse && !off(c.pass_cse);
  p.simplify = p.simplify && !off(c.pass_simplify);
  p.fuse = p.fuse && !off(c.pass_fuse);
  p.scalarize = p.scalarize && !off(c.pass_scalarize);
  return p;
}

PassReport run_passes(Graph& g, const Options& o) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const double c0 = cpu_ms();
  PassReport rep;
  rep.nodes_before = static_cast<int>(g.nodes.size());
  rep.origin.resize(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) rep.origin[k] = static_cast<int>(k);
  const Options::Passes on = enabled_passes(o);
  Editor e(g);
  e.origin = &rep.origin;
  auto run = [&](const char* name, bool enabled, auto&& pass) {
    if (!enabled) return;
    const auto s0 = clock::now();
    const double sc0 = cpu_ms();
    PassStat st;
    st.name = name;
    st.nodes_before = static_cast<int>(g.nodes.size());
    st.rewrites = pass();
    st.nodes_after = static_cast<int>(g.nodes.size());
    st.ms = std::chrono::duration<double, std::milli>(clock::now() - s0).count();
    st.cpu_ms = cpu_ms() - sc0;
    rep.passes.push_back(st);
  };
  run("dce", on.dce, [&] { return dead_code(e); });
  run("fold", on.fold, [&] { return fold_constants(e, o); });
  run("cse", on.cse, [&] { return common_subexpressions(e); });
  run("simplify", on.simplify, [&] { return simplify(e); });
  // Fills the simplification exposed (an Alloc of the shape its value
  // already has, once a parameter check is gone) sink as the gradient's do.
  run("fills", on.simplify, [&] { return grad::sink_fills(e); });
  run("shapes", on.simplify, [&] { return refine_static_shapes(e); });
  run("gathers", on.simplify && !off(config().pass_gathers), [&] { return lift_through_gathers(e); });
  run("masks", on.simplify && !off(config().pass_masks), [&] { return mask_branches(e); });
  run("fold", on.fold && on.simplify, [&] { return fold_constants(e, o); });
  run("cse", on.cse && on.simplify, [&] { return common_subexpressions(e); });
  run("fuse", on.fuse, [&] { return fuse_elementwise(e); });
  run("batch", on.fuse, [&] { return batch_siblings(e); });
  // Scalarized stretches are 0-d chains the fuse pass makes Composites of;
  // run to its fixed point (greedy merges can open further ones), as a
  // second run of the pipeline would, which is then a no-op.
  bool scalarized = false;
  run("scalarize", on.scalarize, [&] {
    const int r = scalarize(e);
    scalarized = r > 0;
    return r;
  });
  run("fuse", on.fuse && scalarized, [&] {
    int r = 0;
    for (int k = 0, m = 1; k < 4 && m > 0; ++k) r += m = fuse_elementwise(e);
    return r;
  });
  run("dce", on.dce, [&] { return dead_code(e); });
  rep.nodes_after = static_cast<int>(g.nodes.size());
  rep.ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  rep.cpu_ms = cpu_ms() - c0;
  return rep;
}

std::string PassReport::summary() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "passes: %d -> %d nodes in %.2f ms (cpu %.2f ms)", nodes_before, nodes_after, ms,
                cpu_ms);
  std::string s = buf;
  if (passes.empty()) return s + "; all off";
  s += "; rewrites/cpu ms: ";
  for (size_t k = 0; k < passes.size(); ++k) {
    const PassStat& p = passes[k];
    std::snprintf(buf, sizeof buf, "%s%s %d/%.2f", k ? ", " : "", p.name.c_str(), p.rewrites, p.cpu_ms);
    s += buf;
  }
  return s;
}

}  // namespace ember::passes
