// A nested graph that an op runs as a unit (a Scan's inner function). The
// ops stage sees only this interface; the program stage implements it
// (engine/program/subprogram.cpp) and hands the loader to the op's factory
// through NodeContext, so the op table never links the loader.
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "ember/ember.hpp"
#include "engine/graph/graph.hpp"

namespace ember {

class Workspace;

class Subprogram {
 public:
  virtual ~Subprogram() = default;
  virtual const Graph& graph() const = 0;  // after the loader's passes
  virtual const std::vector<IOInfo>& args() const = 0;
  virtual const std::vector<IOInfo>& outputs() const = 0;
  // Per-thread state; one workspace must not be used by two threads at once.
  virtual std::shared_ptr<Workspace> make_workspace() const = 0;
  // Program::run: views valid until the next run on ws. Throws CallError.
  virtual const std::vector<Tensor>& run(Workspace& ws, std::span<const Tensor> args) const = 0;

  // A loop of runs on one workspace (Scan's steps), without run's per-call
  // binding, checks and epoch: the caller writes the arguments into the
  // workspace's own values (arg), checks them (check_arg) whenever a shape
  // or dtype may have changed, runs (run_bound) between begin_loop and
  // end_loop, and reads the outputs in place (out). The references stay
  // valid for the workspace's life.
  virtual Tensor& arg(Workspace& ws, size_t k) const = 0;
  virtual const Tensor& out(const Workspace& ws, size_t k) const = 0;
  virtual void check_arg(const Workspace& ws, size_t k) const = 0;  // throws CallError
  virtual void begin_loop(Workspace& ws) const = 0;
  virtual void end_loop(Workspace& ws) const = 0;
  virtual void run_bound(Workspace& ws) const = 0;  // throws CallError
  // Whether output k may be an argument's memory (the argument itself, or
  // a view of one through ops that declare OpKernel::may_view); the other
  // outputs are always the workspace's own memory.
  virtual bool may_view_args(size_t k) const = 0;
};

// Loads a graph as a Subprogram with the outer graph's options. Throws LoadError.
using SubprogramLoader = std::unique_ptr<Subprogram> (*)(Graph g, const Options& o);

}  // namespace ember
