#include "interp/composite.hpp"

#include <string>

namespace ember::interp {

DType Composite::value_dtype(int32_t v) const {
  const auto ni = static_cast<int32_t>(inputs.size());
  const auto nc = static_cast<int32_t>(constants.size());
  if (v < ni) return inputs[v];
  if (v < ni + nc) return constants[v - ni].dtype;
  return nodes[v - ni - nc].dtype;
}

std::string Composite::validate() const {
  if (outputs.empty()) return "composite has no outputs";
  // Integers compute in int64 registers: uint64 values >= 2^63 would compare,
  // divide and convert as negative numbers.
  for (size_t k = 0; k < inputs.size() + constants.size() + nodes.size(); ++k)
    if (value_dtype(static_cast<int32_t>(k)) == DType::UInt64)
      return "value " + std::to_string(k) + ": uint64 is not supported in scalar code (values >= 2^63 do not fit its int64 registers)";
  const int32_t first = first_node_value();
  for (size_t k = 0; k < nodes.size(); ++k) {
    const ScalarNode& n = nodes[k];
    const ScalarOpInfo& info = op_info(n.op);
    const std::string where = "scalar node " + std::to_string(k) + " (" + std::string(info.name) + ")";
    const int32_t self = first + static_cast<int32_t>(k);
    const int nin = static_cast<int>(n.inputs.size());
    if (info.arity >= 0 ? nin != info.arity : nin < 1)
      return where + ": field 'inputs': expected " +
             (info.arity >= 0 ? std::to_string(info.arity) : std::string("at least 1")) +
             " inputs, got " + std::to_string(nin);
    for (int32_t in : n.inputs)
      if (in < 0 || in >= self)
        return where + ": field 'inputs': value " + std::to_string(in) +
               " is not defined before this node";
    switch (info.kind) {
      case OpKind::Float:
        if (!dtype_is_float(n.dtype))
          return where + ": field 'dtype': op computes in floats, got " + std::string(dtype_name(n.dtype));
        break;
      case OpKind::Compare:
      case OpKind::Predicate:
        if (n.dtype != DType::Bool)
          return where + ": field 'dtype': op returns bool, got " + std::string(dtype_name(n.dtype));
        break;
      case OpKind::Bitwise:
        if (dtype_is_float(n.dtype))
          return where + ": field 'dtype': bitwise op needs an integer or bool dtype";
        for (int32_t in : n.inputs)
          if (dtype_is_float(value_dtype(in)))
            return where + ": field 'inputs': bitwise op given a float input";
        break;
      default:
        break;
    }
  }
  for (size_t k = 0; k < outputs.size(); ++k)
    if (outputs[k] < 0 || outputs[k] >= num_values())
      return "composite output " + std::to_string(k) + ": value " + std::to_string(outputs[k]) +
             " does not exist";
  return "";
}

}  // namespace ember::interp
