// `ember fuzz`: random Composites (and ScalarLoops) run every way the engine
// can run them, compared bit for bit; on the first mismatch, a shrunk graph file that
// reproduces it.
#include "tools/cli_fuzz.hpp"

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include <CLI/CLI.hpp>

#include "tools/differential.hpp"
#include "tools/grad_fuzz.hpp"
#include "tools/pass_fuzz.hpp"
#include "engine/graph/graph.hpp"
#include "interp/math/math.hpp"
#include "interp/vm.hpp"

namespace ember {

namespace {

using fuzz::DiffCase;
using fuzz::DiffResult;
using fuzz::Rng;

struct FuzzArgs {
  uint64_t seed = 1;
  int64_t iterations = 1000;
  int max_nodes = 10;
  double time_limit = 0;  // seconds; 0: none
  std::string out;
  std::string replay;
  std::string samples_file;
  int samples = 200;
  bool tensor_graphs = false;
  bool passes = false;
  bool gradient = false;
  std::string corpus_dir;
  int keep_going = 0;
  int jit_every = 8;  // > 0: report up to this many distinct mismatches, then stop
  double loops = 0.1;  // share of cases that are ScalarLoops
};

int g_jit_every = 8;

fuzz::DiffOptions diff_options() {
  fuzz::DiffOptions o;
  o.jit_every = g_jit_every;
  return o;
}

bool fails(const DiffCase& dc) {
  const DiffResult r = fuzz::run_case(dc, diff_options());
  return !r.ok || r.rejected;
}

// What a shrunk case is about: the path that differs and the ops involved.
std::string signature(const DiffCase& dc, const DiffResult& r) {
  std::string s = r.rejected ? "rejected" : r.message.substr(0, r.message.find(':'));
  if (dc.loop) s += dc.loop->until ? " ScalarLoop(until)" : " ScalarLoop";
  for (const auto& n : dc.c.nodes) s += " " + std::string(interp::op_info(n.op).name) + "/" + std::string(dtype_name(n.dtype));
  return s;
}

int report_mismatch(const FuzzArgs& a, const DiffCase& dc, const DiffResult& r, uint64_t case_seed,
                    std::set<std::string>* seen = nullptr) {
  const DiffCase small = fuzz::shrink(dc, fails);
  if (seen) {
    const std::string sig = signature(small, fuzz::run_case(small, diff_options()));
    if (!seen->insert(sig).second) return 0;
    std::fprintf(stderr, "[%zu] %s\n", seen->size(), sig.c_str());
  }
  std::fprintf(stderr, "ember fuzz: mismatch in case seed %" PRIu64 ": %s\n", case_seed, r.message.c_str());
  const DiffResult rs = fuzz::run_case(small, diff_options());
  const std::string path = a.out.empty() ? "fuzz-repro-" + std::to_string(case_seed) + ".json" : a.out;
  const std::string text = rs.graph.empty() ? fuzz::case_graph(small).dump(1) : rs.graph;
  std::ofstream(path) << text << "\n";
  std::fprintf(stderr, "shrunk to %zu scalar nodes, %zu inputs, %" PRId64 " elements: %s\n", small.c.nodes.size(),
               small.c.inputs.size(), small.n(), rs.message.c_str());
  std::fprintf(stderr, "reproduce with: ember fuzz --replay %s\n", path.c_str());
  if (!seen) std::printf("%s\n", text.c_str());
  return 1;
}

int replay(const FuzzArgs& a) {
  const DiffCase dc = fuzz::case_from_graph(a.replay);
  fuzz::DiffOptions o = diff_options();
  o.jit_every = 1;
  const DiffResult r = fuzz::run_case(dc, o);
  if (r.ok && !r.rejected) {
    std::printf("%s: every path agrees (%zu scalar nodes, %" PRId64 " elements)\n", a.replay.c_str(),
                dc.c.nodes.size(), dc.n());
    return 0;
  }
  std::fprintf(stderr, "%s: %s\n", a.replay.c_str(), r.message.c_str());
  return 1;
}

// Random small tensor graphs: load, then run with and without parallel
// chunking; the bits must match. Ops not implemented yet are counted, not
// failed.
int tensor_graphs(const FuzzArgs& a) {
  Rng rng(a.seed);
  int64_t ran = 0, unsupported = 0;
  for (int64_t it = 0; it < a.iterations; ++it) {
    const std::string text = fuzz::random_tensor_graph(rng);
    std::shared_ptr<const Program> serial, parallel;
    try {
      serial = Program::from_json(text);
      Options par;
      par.parallel_threshold = 1;
      parallel = Program::from_json(text, par);
    } catch (const LoadError& e) {
      if (std::string(e.what()).find("not implemented") != std::string::npos) {
        ++unsupported;
        continue;
      }
      std::fprintf(stderr, "ember fuzz: generated tensor graph fails to load: %s\n%s\n", e.what(), text.c_str());
      return 1;
    }
    std::vector<Array> args;
    std::vector<Tensor> views;
    for (const IOInfo& info : serial->args()) {
      args.push_back(fuzz::random_values(rng, info.dtype, std::max<int64_t>(info.static_shape.size(), 1)));
      args.back().t = Tensor::contiguous(info.dtype, info.static_shape, args.back().t.data);
      views.push_back(args.back().t);
    }
    const auto x = serial->call(views), y = parallel->call(views);
    for (size_t k = 0; k < x.size(); ++k)
      for (int64_t i = 0; i < x[k].size(); ++i)
        if (!fuzz::same_value(x[k].t.dtype, static_cast<char*>(x[k].t.data) + i * dtype_size(x[k].t.dtype),
                              static_cast<char*>(y[k].t.data) + i * dtype_size(y[k].t.dtype))) {
          std::fprintf(stderr, "ember fuzz: serial and parallel runs differ at output %zu element %" PRId64 "\n%s\n",
                       k, i, text.c_str());
          return 1;
        }
    ++ran;
  }
  std::printf("tensor graphs: %" PRId64 " ran, %" PRId64 " skipped (op not implemented yet)\n", ran, unsupported);
  return 0;
}

// Random graphs for the load-time passes: passes off vs on, same bits.
int pass_graphs(const FuzzArgs& a) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  Rng rng(a.seed);
  int64_t done = 0;
  for (; done < a.iterations; ++done) {
    if (a.time_limit > 0 && std::chrono::duration<double>(clock::now() - t0).count() > a.time_limit) break;
    const uint64_t case_seed = rng();
    Rng crng(case_seed);
    const fuzz::PassCase c = fuzz::random_pass_case(crng);
    const fuzz::PassResult r = fuzz::check_pass_case(c);
    if (r.ok) continue;
    const std::string path = a.out.empty() ? "fuzz-passes-" + std::to_string(case_seed) + ".json" : a.out;
    std::ofstream(path) << c.graph << "\n";
    std::fprintf(stderr, "ember fuzz --passes: case seed %" PRIu64 ": %s\ngraph: %s\n", case_seed, r.message.c_str(),
                 path.c_str());
    return 1;
  }
  std::printf("ember fuzz --passes: %" PRId64 " graphs, passes on and off agree, %.1f s\n", done,
              std::chrono::duration<double>(clock::now() - t0).count());
  return 0;
}

// Random differentiable Composites: the engine's gradient against central
// differences. Each failure prints its case seed and writes its graph.
int gradient_cases(const FuzzArgs& a) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  Rng rng(a.seed);
  fuzz::CompositeGenOptions go;
  go.max_nodes = a.max_nodes;
  fuzz::GradResult all;
  int64_t done = 0, failures = 0;
  for (; done < a.iterations; ++done) {
    if (a.time_limit > 0 && std::chrono::duration<double>(clock::now() - t0).count() > a.time_limit) break;
    const uint64_t case_seed = rng();
    Rng crng(case_seed);
    const fuzz::GradCase gc = fuzz::random_grad_case(crng, go);
    const fuzz::GradResult r = fuzz::run_grad_case(gc, crng);
    all.add(r);
    if (r.ok) continue;
    ++failures;
    std::string ops;
    for (const auto& n : gc.c.nodes) ops += " " + std::string(interp::op_info(n.op).name);
    const std::string path = a.out.empty() ? "fuzz-grad-" + std::to_string(case_seed) + ".json"
                                           : a.out + (a.keep_going > 0 ? "/grad-" + std::to_string(case_seed) + ".json" : "");
    std::ofstream(path) << fuzz::grad_graph(gc).dump(1) << "\n";
    std::fprintf(stderr, "ember fuzz --gradient: case seed %" PRIu64 " (ops%s): %s\ngraph: %s\n", case_seed,
                 ops.c_str(), r.message.c_str(), path.c_str());
    if (failures >= std::max(1, a.keep_going)) {
      ++done;
      break;
    }
  }
  std::printf("ember fuzz --gradient: %" PRId64 " cases, %" PRId64 " failing; %d entries checked, %d skipped "
              "(cost not finite), %d skipped (not smooth at the step), %d excused (NaN inside, 0 * inf, a tie, "
              "a rounding op moving), %.1f s\n",
              done, failures, all.checked, all.nonfinite, all.not_smooth, all.excused,
              std::chrono::duration<double>(clock::now() - t0).count());
  return failures ? 1 : 0;
}

// (op, inputs, output) of the math-library ops through the interpreter, as
// tab-separated lines for tests/fuzz/check_accuracy.py.
int dump_samples(const FuzzArgs& a) {
  Rng rng(a.seed);
  std::FILE* f = std::fopen(a.samples_file.c_str(), "w");
  if (!f) throw CallError("cannot write " + a.samples_file);
  auto put = [&](double v) {
    if (std::isnan(v)) std::fprintf(f, "\tnan");
    else if (std::isinf(v)) std::fprintf(f, v > 0 ? "\tinf" : "\t-inf");
    else std::fprintf(f, "\t%.17g", v);
  };
  // Every op with a math function; Pow last keeps each seed's samples as
  // docs/testing.md records them.
  std::vector<interp::ScalarOp> ops;
  for (const auto& e : math::kEntries)
    if (e.op != interp::ScalarOp::Pow) ops.push_back(e.op);
  ops.push_back(interp::ScalarOp::Pow);
  for (interp::ScalarOp op : ops) {
    const interp::Composite c = fuzz::single_op_composite(op, DType::Float64);
    auto vm = interp::Interpreted::compile(c);
    const int64_t n = a.samples;
    std::vector<Array> in;
    for (size_t k = 0; k < c.inputs.size(); ++k) in.push_back(fuzz::random_values(rng, DType::Float64, n));
    Array out = fuzz::random_values(rng, DType::Float64, n);
    std::vector<interp::StridedPtr> ip, op_;
    for (const Array& x : in) ip.push_back({x.t.data, 1});
    op_.push_back({out.t.data, 1});
    vm->run(n, ip.data(), op_.data());
    for (int64_t i = 0; i < n; ++i) {
      std::fprintf(f, "%s", std::string(interp::op_info(op).name).c_str());
      for (const Array& x : in) put(x.data<double>()[i]);
      put(out.data<double>()[i]);
      std::fprintf(f, "\n");
    }
  }
  std::fclose(f);
  return 0;
}

// Seeds for the libFuzzer targets (tests/fuzz/corpus/<target>/).
int write_corpus(const FuzzArgs& a) {
  namespace fs = std::filesystem;
  Rng rng(a.seed);
  fs::create_directories(fs::path(a.corpus_dir) / "graph_load");
  fs::create_directories(fs::path(a.corpus_dir) / "c_api");
  fuzz::CompositeGenOptions small;
  small.max_nodes = 6;
  for (int64_t it = 0; it < a.iterations; ++it) {
    const std::string stem = "seed-" + std::to_string(a.seed) + "-" + std::to_string(it);
    // graph_load: an Elemwise case, a tensor graph, and the container form.
    std::string text;
    if (it % 2 == 0) {
      // One Elemwise case in four a ScalarLoop.
      fuzz::CompositeGenOptions go = small;
      go.loop_fraction = 0.25;
      DiffCase dc = fuzz::random_case(rng, go);
      if (dc.n() > 4) {
        Rng r2(rng());
        dc = fuzz::random_case(r2, go);
      }
      text = fuzz::case_graph(dc).dump();
    } else {
      text = fuzz::random_tensor_graph(rng);
    }
    const fs::path g = fs::path(a.corpus_dir) / "graph_load" / (stem + ".json");
    std::ofstream(g) << text;
    if (it % 4 == 1) {
      try {
        Program::from_json(text)->graph().write_file((fs::path(a.corpus_dir) / "graph_load" / (stem + ".embr")).string());
      } catch (const LoadError&) {
      }
    }
    // c_api: one float64 vector x feeding a Composite; then NUL and x's bytes.
    interp::Composite c;
    do {
      fuzz::CompositeGenOptions one = small;
      one.max_inputs = 1;
      c = fuzz::random_composite(rng, one);
      c.inputs[0] = DType::Float64;
    } while (!c.validate().empty());
    const int64_t d = 1 + static_cast<int64_t>(rng() % 3);
    nlohmann::json vars = nlohmann::json::array({{{"name", "x"}, {"dtype", "float64"}, {"shape", {d}}}});
    nlohmann::json outs = nlohmann::json::array();
    for (int32_t o : c.outputs) {
      vars.push_back({{"dtype", std::string(dtype_name(c.value_dtype(o)))}, {"shape", {d}}});
      outs.push_back(static_cast<int>(vars.size()) - 1);
    }
    nlohmann::json doc = {{"format", "ember-graph"}, {"version", 1}, {"variables", vars},
                          {"inputs", {{{"var", 0}}}}, {"outputs", outs},
                          {"nodes", {{{"op", "Elemwise"}, {"inputs", {0}}, {"outputs", outs},
                                      {"attrs", {{"scalar_op", fuzz::composite_json(c)}}}}}}};
    const Array x = fuzz::random_values(rng, DType::Float64, d);
    std::ofstream f(fs::path(a.corpus_dir) / "c_api" / (stem + ".bin"), std::ios::binary);
    const std::string t = doc.dump();
    f.write(t.data(), static_cast<std::streamsize>(t.size()));
    f.put('\0');
    f.write(static_cast<const char*>(x.t.data), static_cast<std::streamsize>(d * 8));
  }
  return 0;
}

int run(const FuzzArgs& a) {
  if (!a.corpus_dir.empty()) return write_corpus(a);
  g_jit_every = a.jit_every;
  if (!a.replay.empty()) return replay(a);
  if (!a.samples_file.empty()) return dump_samples(a);
  if (a.tensor_graphs) return tensor_graphs(a);
  if (a.passes) return pass_graphs(a);
  if (a.gradient) return gradient_cases(a);
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  Rng rng(a.seed);
  fuzz::CompositeGenOptions go;
  go.max_nodes = a.max_nodes;
  go.loop_fraction = a.loops;
  int64_t done = 0, elements = 0, mismatches = 0;
  std::set<std::string> seen;
  for (; done < a.iterations; ++done) {
    if (a.time_limit > 0 && std::chrono::duration<double>(clock::now() - t0).count() > a.time_limit) break;
    const uint64_t case_seed = rng();
    Rng crng(case_seed);
    const DiffCase dc = fuzz::random_case(crng, go);
    const DiffResult r = fuzz::run_case(dc, diff_options());
    if (!r.ok || r.rejected) {
      if (a.keep_going <= 0) return report_mismatch(a, dc, r, case_seed);
      ++mismatches;
      if (!a.out.empty()) {
        FuzzArgs b = a;
        b.out = a.out + "/repro-" + std::to_string(seen.size()) + ".json";
        report_mismatch(b, dc, r, case_seed, &seen);
      } else {
        report_mismatch(a, dc, r, case_seed, &seen);
      }
      if (static_cast<int>(seen.size()) >= a.keep_going) break;
    }
    elements += dc.n();
  }
  const double secs = std::chrono::duration<double>(clock::now() - t0).count();
  if (mismatches) {
    std::printf("ember fuzz: %" PRId64 " cases, %" PRId64 " mismatches, %zu distinct, %.1f s\n", done, mismatches,
                seen.size(), secs);
    return 1;
  }
  std::printf("ember fuzz: %" PRId64 " cases (%" PRId64 " elements), every path agrees, %.1f s\n", done, elements,
              secs);
  return 0;
}

}  // namespace

void add_fuzz_command(CLI::App& app) {
  auto a = std::make_shared<FuzzArgs>();
  auto* sub = app.add_subcommand("fuzz", "differential fuzzing: random Composites, every tier, same bits");
  sub->add_option("--seed", a->seed, "random seed (each case's own seed is printed on failure)");
  sub->add_option("--iterations", a->iterations, "number of random cases")->check(CLI::NonNegativeNumber);
  sub->add_option("--max-nodes", a->max_nodes, "largest Composite generated")->check(CLI::Range(1, 10000));
  sub->add_option("--time-limit", a->time_limit, "stop after this many seconds");
  sub->add_option("--out", a->out, "where to write the shrunk reproducer (default fuzz-repro-SEED.json)");
  sub->add_option("--replay", a->replay, "re-check a reproducer graph file");
  sub->add_option("--dump-samples", a->samples_file, "write (op, inputs, output) of math ops for the accuracy check");
  sub->add_option("--samples", a->samples, "samples per op for --dump-samples")->check(CLI::Range(1, 1000000));
  sub->add_option("--keep-going", a->keep_going,
                  "continue past mismatches; stop after this many distinct ones (reproducers go to --out DIR)");
  sub->add_option("--write-corpus", a->corpus_dir, "write --iterations seed inputs per libFuzzer target into DIR");
  sub->add_option("--jit-every", a->jit_every, "check the JIT tiers on one case in N (0: never)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--loops", a->loops, "share of cases that are ScalarLoops (default 0.1)")->check(CLI::Range(0.0, 1.0));
  sub->add_flag("--tensor-graphs", a->tensor_graphs, "fuzz small tensor graphs (serial vs parallel) instead");
  sub->add_flag("--gradient", a->gradient,
                "fuzz differentiation (random differentiable Composites, gradient vs central differences) instead");
  sub->add_flag("--passes", a->passes, "fuzz the load-time graph passes (random graphs, passes off vs on) instead");
  sub->callback([a] {
    int rc;
    try {
      rc = run(*a);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ember fuzz: %s\n", e.what());
      rc = 2;
    }
    std::fflush(stdout);
    if (rc == 0) throw CLI::Success();
    throw CLI::RuntimeError(rc);
  });
}

}  // namespace ember
