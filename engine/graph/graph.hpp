// The parsed graph file (docs/graph-format.md), before validation turns it
// into a Program. Constants point into one payload buffer the Graph owns.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember/tensor.hpp"

namespace ember {

struct VarSpec {
  std::string name;
  DType dtype = DType::Float64;
  Shape static_shape;  // dims[i] == -1: unknown until called
};

struct InputSpec {
  int var = -1;
  bool shared = false;  // re-bindable data (pm.Data); has a default value
};

struct ConstSpec {
  int var = -1;
  Shape shape;                 // the value's shape (static dims of var, or "shape")
  const void* data = nullptr;  // C-contiguous, points into Graph storage
};

// The first 8 bytes of the binary container.
inline constexpr char kGraphMagic[8] = {'E', 'M', 'B', 'R', 'G', 'R', 'P', 'H'};

struct NodeSpec {
  std::string op;
  std::vector<int> inputs, outputs;
  nlohmann::json attrs;  // object
};

struct Graph {
  std::string source;  // file name for messages, or "<memory>"
  std::string name;
  std::vector<VarSpec> vars;
  std::vector<InputSpec> inputs;
  std::vector<int> outputs;
  std::vector<ConstSpec> constants;
  std::vector<NodeSpec> nodes;
  // The "gradient" directive (null when absent): engine/program/grad/
  // differentiates the graph at load and clears it.
  nlohmann::json gradient;
  std::vector<std::shared_ptr<void>> storage;  // keeps constant data alive

  // Reads a graph file (plain JSON or the binary container); checks the
  // document's structure, not yet the ops. Throws LoadError.
  static Graph read_file(const std::string& path);
  // Parses JSON text with an optional binary payload.
  static Graph parse(std::string_view json_text, std::shared_ptr<const uint8_t[]> payload,
                     uint64_t payload_size, const std::string& source);
  // Writes the binary container (JSON header + payload with all constants).
  void write_file(const std::string& path) const;
  nlohmann::json to_json(std::vector<uint8_t>* payload) const;
};

}  // namespace ember
