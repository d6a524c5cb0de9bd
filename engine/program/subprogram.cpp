// The program stage's Subprogram (engine/ops/subprogram.hpp): a Program.
#include "engine/ops/subprogram.hpp"

#include "engine/program/program_impl.hpp"

namespace ember {
namespace {

class ProgramSub final : public Subprogram {
 public:
  explicit ProgramSub(std::shared_ptr<const Program> p) : p_(std::move(p)) {}
  const Graph& graph() const override { return p_->graph(); }
  const std::vector<IOInfo>& args() const override { return p_->args(); }
  const std::vector<IOInfo>& outputs() const override { return p_->outputs(); }
  std::shared_ptr<Workspace> make_workspace() const override {
    return std::shared_ptr<Workspace>(p_->make_workspace().release(), WorkspaceDeleter{});
  }
  const std::vector<Tensor>& run(Workspace& ws, std::span<const Tensor> args) const override {
    return p_->run(ws, args);
  }

 private:
  std::shared_ptr<const Program> p_;
};

}  // namespace

std::unique_ptr<Subprogram> load_subprogram(Graph g, const Options& o) {
  return std::make_unique<ProgramSub>(Program::from_graph(std::move(g), o));
}

}  // namespace ember
