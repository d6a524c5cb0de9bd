// NodeContext: a factory's load-time view of its node, with attribute
// readers whose errors name file, node, op and field.
#include "engine/ops/op.hpp"

namespace ember {

using nlohmann::json;

std::string NodeContext::where() const {
  return g_.source + ": node " + std::to_string(shown_) + " (" + spec().op + ")";
}

std::unique_ptr<Subprogram> NodeContext::load_subprogram(Graph g) const {
  if (!load_sub_) throw LoadError(where() + ": nested graphs cannot be loaded here");
  return load_sub_(std::move(g), opt_);
}

void NodeContext::fail(const std::string& field, const std::string& msg) const {
  throw LoadError(where() + ": field '" + field + "': " + msg);
}

std::optional<Tensor> NodeContext::constant_input(int i) const {
  const int var = spec().inputs.at(i);
  for (const ConstSpec& c : g_.constants) {
    if (c.var != var) continue;
    bool shared = false;
    for (const InputSpec& in : g_.inputs) shared |= in.var == var && in.shared;
    if (shared) return std::nullopt;  // may be re-bound: not constant
    const VarSpec& v = g_.vars[var];
    return Tensor::contiguous(v.dtype, c.shape, const_cast<void*>(c.data));
  }
  return std::nullopt;
}

bool NodeContext::has_attr(const char* name) const {
  return spec().attrs.contains(name) && !spec().attrs.at(name).is_null();
}

const json& NodeContext::attr(const char* name) const {
  auto it = spec().attrs.find(name);
  if (it == spec().attrs.end()) fail(std::string("attrs.") + name, "missing");
  return *it;
}

int64_t NodeContext::attr_int(const char* name) const {
  const json& v = attr(name);
  if (v.is_boolean()) return v.get<bool>();
  if (!v.is_number_integer()) fail(std::string("attrs.") + name, "must be an integer");
  return v.get<int64_t>();
}

int64_t NodeContext::attr_int(const char* name, int64_t dflt) const {
  return has_attr(name) ? attr_int(name) : dflt;
}

bool NodeContext::attr_bool(const char* name, bool dflt) const {
  if (!has_attr(name)) return dflt;
  const json& v = attr(name);
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>() != 0;
  fail(std::string("attrs.") + name, "must be true or false");
}

std::string NodeContext::attr_str(const char* name) const {
  const json& v = attr(name);
  if (!v.is_string()) fail(std::string("attrs.") + name, "must be a string");
  return v.get<std::string>();
}

std::string NodeContext::attr_str(const char* name, const std::string& dflt) const {
  return has_attr(name) ? attr_str(name) : dflt;
}

std::vector<int64_t> NodeContext::attr_ints(const char* name) const {
  const json& v = attr(name);
  if (!v.is_array()) fail(std::string("attrs.") + name, "must be a list of integers");
  std::vector<int64_t> out;
  for (const json& e : v) {
    if (!e.is_number_integer()) fail(std::string("attrs.") + name, "must be a list of integers");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

void NodeContext::expect_inputs(int lo, int hi) const {
  const int n = num_inputs();
  if (hi == -2) hi = lo;
  if (n < lo || (hi >= 0 && n > hi))
    fail("inputs", "expected " + (hi == lo ? std::to_string(lo)
                                           : hi < 0 ? "at least " + std::to_string(lo)
                                                    : std::to_string(lo) + " to " + std::to_string(hi)) +
                       " inputs, got " + std::to_string(n));
}

void NodeContext::expect_outputs(int n) const {
  if (num_outputs() != n)
    fail("outputs", "expected " + std::to_string(n) + " outputs, got " + std::to_string(num_outputs()));
}

}  // namespace ember
