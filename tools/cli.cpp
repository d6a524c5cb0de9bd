// The `ember` command: info, ops, run, config.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <xxhash.h>

#include "tools/cli_fuzz.hpp"
#include "engine/ops/elemwise.hpp"
#include "engine/graph/graph.hpp"
#include "engine/graph/npy.hpp"
#include "engine/program/program_impl.hpp"
#include "interp/config.hpp"
#include "interp/option_parse.hpp"
#include "jit/tier_manager.hpp"

using namespace ember;

namespace {

int cmd_info(const std::string& path, const std::string& write_path) {
  auto prog = Program::load(path);
  const Graph& g = prog->graph();
  std::printf("graph %s%s%s\n", path.c_str(), g.name.empty() ? "" : ": ", g.name.c_str());
  std::printf("%s\n", prog->impl().pass_report.summary().c_str());
  if (!write_path.empty()) g.write_file(write_path);
  auto shape_str = [](const Shape& s) {
    std::string r = "(";
    for (int d = 0; d < s.ndim; ++d)
      r += (d ? ", " : "") + (s.dims[d] < 0 ? std::string("?") : std::to_string(s.dims[d]));
    return r + (s.ndim == 1 ? ",)" : ")");
  };
  std::printf("inputs:\n");
  for (const IOInfo& i : prog->args())
    std::printf("  %s %s %s\n", i.name.c_str(), std::string(dtype_name(i.dtype)).c_str(), shape_str(i.static_shape).c_str());
  for (const IOInfo& i : prog->shared())
    std::printf("  %s %s %s (shared)\n", i.name.c_str(), std::string(dtype_name(i.dtype)).c_str(),
                shape_str(i.static_shape).c_str());
  std::printf("outputs:\n");
  for (const IOInfo& i : prog->outputs())
    std::printf("  %s %s %s\n", i.name.c_str(), std::string(dtype_name(i.dtype)).c_str(), shape_str(i.static_shape).c_str());
  std::map<std::string, int> counts;
  for (const NodeSpec& n : g.nodes) counts[n.op]++;
  std::printf("nodes: %zu (%zu steps after load-time fusion)\n", g.nodes.size(), prog->impl().steps.size());
  for (auto& [op, c] : counts) std::printf("  %-24s %d\n", op.c_str(), c);
  int k = 0;
  for (const Step& st : prog->impl().steps) {
    auto* ew = dynamic_cast<const ElemwiseKernel*>(st.kernel);
    if (!ew || ew->composite().nodes.size() < 2) continue;
    if (k++ == 0) std::printf("composites:\n");
    std::printf("  node %-5d %zu scalar ops, %zu inputs, %zu outputs\n", st.node, ew->composite().nodes.size(),
                ew->composite().inputs.size(), ew->composite().outputs.size());
  }
  return 0;
}

int cmd_ops() {
  for (const std::string& s : supported_tensor_ops()) std::printf("%s\n", s.c_str());
  for (const std::string& s : supported_scalar_ops()) std::printf("%s\n", s.c_str());
  return 0;
}

// The table of interp/config.def with this process's values.
int cmd_config() {
  const Config& env = config();
  auto dflt = [](const ConfigVar& v) { return std::string(*v.dflt ? v.dflt : "-"); };
  auto value = [&](const ConfigVar& v) {
    const auto& val = env.*v.value;
    return !val ? std::string("(unset)") : val->empty() ? std::string("\"\"") : *val;
  };
  size_t wn = 4, wd = 7, wv = 7;  // a long value shifts its own row only
  for (const ConfigVar& v : config_vars()) {
    wn = std::max(wn, std::strlen(v.name));
    wd = std::max(wd, dflt(v).size());
    wv = std::max(wv, std::min<size_t>(value(v).size(), 24));
  }
  const int n = static_cast<int>(wn), d = static_cast<int>(wd), w = static_cast<int>(wv);
  std::printf("%-*s  %-*s  %-*s  %s\n", n, "NAME", d, "DEFAULT", w, "VALUE", "DESCRIPTION");
  for (const ConfigVar& v : config_vars())
    std::printf("%-*s  %-*s  %-*s  %s\n", n, v.name, d, dflt(v).c_str(), w, value(v).c_str(), v.doc);
  return 0;
}

Array random_input(const IOInfo& info, std::mt19937_64& rng, int64_t unknown_dim) {
  Shape s = info.static_shape;
  for (int d = 0; d < s.ndim; ++d)
    if (s.dims[d] < 0) s.dims[d] = unknown_dim;
  Array a = Array::empty(info.dtype, s);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::uniform_int_distribution<int> small(0, 1);
  dtype_dispatch(info.dtype, [&](auto t) {
    using T = decltype(t);
    for (int64_t i = 0; i < a.size(); ++i) {
      if constexpr (std::is_floating_point_v<T>) a.data<T>()[i] = static_cast<T>(u(rng));
      else a.data<T>()[i] = static_cast<T>(small(rng));
    }
  });
  return a;
}

double sum_of(const Tensor& t) {
  double s = 0;
  dtype_dispatch(t.dtype, [&](auto x) {
    using T = decltype(x);
    for (int64_t i = 0; i < t.size(); ++i) s += static_cast<double>(t.at<T>(i));
  });
  return s;
}

struct JitFlags {
  std::string mode;  // "" keeps EMBER_JIT's choice
  std::string memory;
  bool no_cache = false;
  std::string stats_path;
  bool timeline = false;
};

// Configures the compile service before the graph is loaded (eager mode
// compiles while loading).
void configure_jit(const JitFlags& j) {
  TierManager& tm = TierManager::instance();
  JitConfig c = tm.config();
  try {
    if (!j.mode.empty()) c.mode = parse_jit_mode_or_throw(j.mode, "--jit");
    if (!j.memory.empty()) c.memory_budget = parse_size_or_throw(j.memory, "--jit-memory");
  } catch (const std::invalid_argument& e) {
    throw CallError(e.what());
  }
  if (j.no_cache) c.cache = false;
  tm.configure(c);
}

// Prints each Composite whose tier changed since the last look at `s`
// (`last`: tier and evictions per Composite), and each budget note once.
void print_tier_changes(const JitStats& s, std::vector<std::pair<int, int>>& last, size_t& notes, double t_ms) {
  last.resize(s.composites.size(), {0, 0});
  for (size_t k = 0; k < s.composites.size(); ++k) {
    const CompositeStats& c = s.composites[k];
    if (c.tier == last[k].first && c.evictions == last[k].second) continue;
    if (c.evictions > last[k].second)
      std::printf("[%9.1f ms] %s (%d ops): tier %d -> 0, compile 0.0 ms, evicted for the budget\n", t_ms, c.name.c_str(), c.ops,
                  last[k].first);
    if (c.tier != 0 || c.evictions == last[k].second)
      std::printf("[%9.1f ms] %s (%d ops): tier %d -> %d, compile %.1f ms%s\n", t_ms, c.name.c_str(), c.ops,
                  c.evictions > last[k].second ? 0 : last[k].first, c.tier, c.compile_seconds * 1e3,
                  c.cache_hit ? " (disk cache)" : "");
    last[k] = {c.tier, c.evictions};
  }
  for (; notes < s.notes.size(); ++notes) std::printf("[%9.1f ms] %s\n", t_ms, s.notes[notes].c_str());
}

int cmd_run(const std::string& path, const std::vector<std::string>& input_specs, std::optional<uint64_t> seed,
            int repeat, const std::string& out_dir, int64_t unknown_dim, const JitFlags& jit) {
  using clock = std::chrono::steady_clock;
  configure_jit(jit);
  const auto t0 = clock::now();
  auto prog = Program::load(path);
  const double load_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  std::map<std::string, Array> given;
  for (const std::string& spec : input_specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos) throw CallError("--input expects NAME=FILE.npy, got '" + spec + "'");
    given[spec.substr(0, eq)] = read_npy(spec.substr(eq + 1));
  }
  std::mt19937_64 rng(seed.value_or(0));
  std::vector<Array> args;
  for (const IOInfo& info : prog->args()) {
    if (auto it = given.find(info.name); it != given.end()) {
      args.push_back(it->second);
      given.erase(it);
    } else if (seed) {
      args.push_back(random_input(info, rng, unknown_dim));
    } else {
      throw CallError("no value for input '" + info.name + "' (use --input " + info.name +
                      "=FILE.npy or --random-inputs SEED)");
    }
  }
  for (auto& [name, a] : given) {
    bool shared = false;
    for (const IOInfo& s : prog->shared()) shared |= s.name == name;
    if (!shared) throw CallError("--input names '" + name + "', which is not an input of the graph");
    prog->set_shared(name, a.t);
  }
  std::vector<Tensor> views;
  for (const Array& a : args) views.push_back(a.t);
  auto ws = prog->make_workspace();
  // Reserved up front: growing it during the calls would land in the JIT's
  // process-wide measurement of a compile's peak.
  std::vector<double> times;
  times.reserve(static_cast<size_t>(std::max(repeat, 1)));
  const std::vector<Tensor>* out = nullptr;
  std::vector<std::pair<int, int>> tiers;
  size_t notes = 0;
  auto last_look = clock::now();
  for (int r = 0; r < std::max(repeat, 1); ++r) {
    const auto c0 = clock::now();
    out = &prog->run(*ws, views);
    times.push_back(std::chrono::duration<double, std::micro>(clock::now() - c0).count());
    if (jit.timeline && clock::now() - last_look > std::chrono::milliseconds(20)) {
      last_look = clock::now();
      print_tier_changes(TierManager::instance().stats(), tiers, notes,
                         std::chrono::duration<double, std::milli>(last_look - t0).count());
    }
  }
  // One snapshot for the last timeline lines and --stats, so they agree even
  // when a swap lands meanwhile.
  const JitStats final_stats = TierManager::instance().stats();
  if (jit.timeline)
    print_tier_changes(final_stats, tiers, notes, std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  for (size_t k = 0; k < out->size(); ++k) {
    const Tensor& t = (*out)[k];
    Array c = Array::copy_of(t);
    const uint64_t h = XXH3_64bits(c.t.data, t.size() * dtype_size(t.dtype));
    std::printf("%-16s %-8s %-14s sum=%-22.17g xxh3=%016llx\n", prog->outputs()[k].name.c_str(),
                std::string(dtype_name(t.dtype)).c_str(), t.shape.str().c_str(), sum_of(t),
                static_cast<unsigned long long>(h));
    if (!out_dir.empty()) {
      std::filesystem::create_directories(out_dir);
      write_npy(out_dir + "/" + prog->outputs()[k].name + ".npy", t);
    }
  }
  std::vector<double> rest(times.begin() + 1, times.end());
  std::sort(rest.begin(), rest.end());
  std::printf("load %.3f ms, first call %.1f us", load_ms, times[0]);
  if (!rest.empty()) std::printf(", median of %zu more calls %.2f us", rest.size(), rest[rest.size() / 2]);
  std::printf("\n");
  // Tiers the budget cannot hold, once each, where --stats users look.
  if (!jit.stats_path.empty() && !jit.timeline)
    for (const std::string& n : final_stats.notes) std::fprintf(stderr, "ember: jit: %s\n", n.c_str());
  if (!jit.stats_path.empty()) {
    std::FILE* f = std::fopen(jit.stats_path.c_str(), "w");
    if (!f) throw CallError("--stats: cannot write " + jit.stats_path);
    const std::string js = final_stats.to_json();
    std::fwrite(js.data(), 1, js.size(), f);
    std::fclose(f);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: run PyTensor computation graphs at once, warm up to compiled speed"};
  app.require_subcommand(1);
  std::string graph_path;
  auto* info = app.add_subcommand("info", "inputs, outputs, graph passes, node counts by op, Composites");
  info->add_option("graph", graph_path, "graph file")->required();
  std::string passed_path;
  info->add_option("--write", passed_path, "write the graph as the load-time passes left it");
  app.add_subcommand("ops", "every supported tensor op and scalar op");
  auto* config_cmd = app.add_subcommand("config", "every environment variable Ember reads: default, value, meaning");
  auto* run = app.add_subcommand("run", "run a graph and print its outputs and timings");
  run->add_option("graph", graph_path, "graph file")->required();
  std::vector<std::string> inputs;
  run->add_option("--input", inputs, "NAME=FILE.npy (repeatable)");
  std::optional<uint64_t> seed;
  run->add_option("--random-inputs", seed, "fill inputs without --input deterministically from SEED");
  int repeat = 1;
  run->add_option("--repeat", repeat, "number of calls")->check(CLI::Range(1, 1000000));
  std::string out_dir;
  run->add_option("--output-dir", out_dir, "write NAME.npy per output");
  int64_t unknown_dim = 3;
  run->add_option("--dim", unknown_dim, "size of dims unknown until the call, for random inputs")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 24));
  JitFlags jit;
  run->add_option("--jit", jit.mode, "off | auto (background tiering, default) | eager (compile all first)");
  run->add_option("--jit-memory", jit.memory,
                  "JIT memory budget, e.g. 256M or 1.5G (default: EMBER_JIT_MEMORY or 256M)");
  run->add_flag("--no-cache", jit.no_cache, "do not read or write the JIT's disk cache");
  run->add_option("--stats", jit.stats_path, "write JIT statistics as JSON");
  run->add_flag("--timeline", jit.timeline, "print when each Composite changes tier");
  add_fuzz_command(app);
  CLI11_PARSE(app, argc, argv);
  try {
    if (info->parsed()) return cmd_info(graph_path, passed_path);
    if (run->parsed()) return cmd_run(graph_path, inputs, seed, repeat, out_dir, unknown_dim, jit);
    if (config_cmd->parsed()) return cmd_config();
    return cmd_ops();
  } catch (const LoadError& e) {
    std::fprintf(stderr, "ember: load error: %s\n", e.what());
    return 2;
  } catch (const CallError& e) {
    std::fprintf(stderr, "ember: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember: error: %s\n", e.what());
    return 4;
  }
}
