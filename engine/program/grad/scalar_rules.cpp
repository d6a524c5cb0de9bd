// Elemwise adjoints from the derivative column of the scalar op table
// (interp/scalar_grad.def): each entry is parsed and built as Elemwise nodes
// over the node's inputs, its output and its output's gradient.
#include <cctype>
#include <cstdlib>

#include "engine/program/grad/adjoints.hpp"
#include "interp/scalar_op.hpp"

namespace ember::grad {

namespace {

using interp::OpKind;
using interp::ScalarOp;

struct Rule {
  ScalarOp op;
  const char* d[3];
};

constexpr Rule kRules[] = {
#define G(E, a, b, c) {ScalarOp::E, {a, b, c}},
#include "interp/scalar_grad.def"
#undef G
};

// One row per scalar op, in the table's order: a forgotten op is a build error.
static_assert(sizeof(kRules) / sizeof(kRules[0]) == interp::kNumScalarOps);
static_assert([] {
  for (int i = 0; i < interp::kNumScalarOps; ++i)
    if (static_cast<int>(kRules[i].op) != i) return false;
  return true;
}());

// An entry's expression, evaluated into nodes as it is parsed.
class Expr {
 public:
  Expr(Builder& b, const ElemwiseEnv& env, std::string_view text, const std::string& where)
      : b_(b), env_(env), s_(text), where_(where) {}

  int parse() {
    const int v = term();
    skip();
    if (p_ != s_.size()) fail("trailing text");
    return v;
  }

 private:
  Builder& b_;
  const ElemwiseEnv& env_;
  std::string_view s_;
  const std::string& where_;
  size_t p_ = 0;

  [[noreturn]] void fail(const std::string& why) const {
    throw LoadError(where_ + ": derivative rule \"" + std::string(s_) + "\": " + why);
  }
  void skip() {
    while (p_ < s_.size() && s_[p_] == ' ') ++p_;
  }
  bool eat(char c) {
    skip();
    if (p_ < s_.size() && s_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }

  // Terms, `others` spliced in as several.
  void args(std::vector<int>& out) {
    skip();
    const size_t save = p_;
    if (s_.substr(p_, 6) == "others") {
      p_ += 6;
      skip();
      if (p_ < s_.size() && (s_[p_] == ',' || s_[p_] == ')')) {
        for (int k = 0; k < static_cast<int>(env_.inputs.size()); ++k)
          if (k != env_.wrt) out.push_back(env_.inputs[k]);
        return;
      }
      p_ = save;
    }
    out.push_back(term());
  }

  int term() {
    skip();
    if (p_ >= s_.size()) fail("unexpected end");
    const char c = s_[p_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.') {
      const std::string rest(s_.substr(p_));
      char* end = nullptr;
      const double x = std::strtod(rest.c_str(), &end);
      if (end == rest.c_str()) fail("bad number");
      p_ += static_cast<size_t>(end - rest.c_str());
      return b_.constant(x, env_.dtype, env_.out_ndim);
    }
    size_t q = p_;
    while (q < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[q])) || s_[q] == '_')) ++q;
    const std::string_view name = s_.substr(p_, q - p_);
    p_ = q;
    if (name == "gz") return env_.gz;
    if (name == "z") return env_.z;
    if (name.size() == 2 && name[0] == 'x' && name[1] >= '0' && name[1] <= '2') {
      const int k = name[1] - '0';
      if (k >= static_cast<int>(env_.inputs.size())) fail("no input " + std::string(name));
      return env_.inputs[k];
    }
    const std::optional<ScalarOp> op = interp::scalar_op_from_name(name);
    if (!op) fail("unknown name " + std::string(name));
    if (!eat('(')) fail("expected ( after " + std::string(name));
    std::vector<int> in;
    do args(in);
    while (eat(','));
    if (!eat(')')) fail("expected )");
    const OpKind kind = interp::op_info(*op).kind;
    const bool to_bool = kind == OpKind::Compare || kind == OpKind::Predicate ||
                         (kind == OpKind::Bitwise && b_.dtype(in[0]) == DType::Bool);
    return b_.elem(interp::op_info(*op).name, std::move(in), to_bool ? DType::Bool : env_.dtype);
  }
};

}  // namespace

std::string_view derivative_rule(ScalarOp op, int k) {
  return kRules[static_cast<int>(op)].d[interp::op_info(op).arity < 0 ? 0 : k];
}

int scalar_adjoint(Builder& b, std::string_view scalar_op, const ElemwiseEnv& env, const std::string& where) {
  const std::optional<ScalarOp> op = interp::scalar_op_from_name(scalar_op);
  if (!op) throw NoRule(where + ": no derivative rule for scalar op " + std::string(scalar_op));
  const std::string_view text = derivative_rule(*op, env.wrt);
  if (text == "zero") return -1;
  if (text.empty() || text == "undefined")
    throw NoRule(where + ": no derivative rule for input " + std::to_string(env.wrt) + " of scalar op " +
                 std::string(scalar_op));
  return Expr(b, env, text, where).parse();
}

}  // namespace ember::grad
