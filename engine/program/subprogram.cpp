// The program stage's Subprogram (engine/ops/subprogram.hpp): a Program.
#include "engine/ops/subprogram.hpp"

#include "engine/program/program_impl.hpp"

namespace ember {
namespace {

class ProgramSub final : public Subprogram {
 public:
  explicit ProgramSub(std::shared_ptr<const Program> p) : p_(std::move(p)) {
    const ProgramImpl& q = p_->impl();
    const std::vector<int> root = view_roots(q);
    std::vector<char> is_arg(q.graph.vars.size(), 0);
    for (const IOInfo& a : q.args) is_arg[a.var] = 1;
    for (const IOInfo& out : q.outputs) views_.push_back(is_arg[root[out.var]]);
  }
  const Graph& graph() const override { return p_->graph(); }
  const std::vector<IOInfo>& args() const override { return p_->args(); }
  const std::vector<IOInfo>& outputs() const override { return p_->outputs(); }
  std::shared_ptr<Workspace> make_workspace() const override {
    return std::shared_ptr<Workspace>(p_->make_workspace().release(), WorkspaceDeleter{});
  }
  const std::vector<Tensor>& run(Workspace& ws, std::span<const Tensor> args) const override {
    return p_->run(ws, args);
  }
  Tensor& arg(Workspace& ws, size_t k) const override { return ws.values[p_->impl().args[k].var]; }
  const Tensor& out(const Workspace& ws, size_t k) const override { return ws.values[p_->impl().outputs[k].var]; }
  void check_arg(const Workspace& ws, size_t k) const override {
    const ProgramImpl& p = p_->impl();
    ember::check_arg(p, p.args[k], ws.values[p.args[k].var], k);
  }
  void begin_loop(Workspace& ws) const override {
    const ProgramImpl& p = p_->impl();
    if (ws.owner != &p) throw CallError(p.graph.source + ": workspace belongs to another program");
    if (!p.shared.empty()) throw CallError(p.graph.source + ": a bound loop cannot refresh shared inputs");
    if (ws.epoch) TierManager::begin_run(ws.epoch.get());
  }
  void end_loop(Workspace& ws) const override {
    if (ws.epoch) TierManager::end_run(ws.epoch.get());
  }
  void run_bound(Workspace& ws) const override { run_steps(p_->impl(), ws); }
  bool may_view_args(size_t k) const override { return views_[k] != 0; }

 private:
  std::shared_ptr<const Program> p_;
  std::vector<char> views_;  // per output: may_view_args
};

}  // namespace

std::unique_ptr<Subprogram> load_subprogram(Graph g, const Options& o) {
  return std::make_unique<ProgramSub>(Program::from_graph(std::move(g), o));
}

}  // namespace ember
