// Writes a Graph as JSON or as the binary container (docs/graph-format.md).
#include <cstring>
#include <fstream>

#include "ember/error.hpp"
#include "engine/graph/graph.hpp"

namespace ember {

using nlohmann::json;

json Graph::to_json(std::vector<uint8_t>* payload) const {
  json doc = {{"format", "ember-graph"}, {"version", 1}};
  if (!name.empty()) doc["name"] = name;
  json vs = json::array();
  for (const VarSpec& v : vars) {
    json shape = json::array();
    for (int d = 0; d < v.static_shape.ndim; ++d)
      shape.push_back(v.static_shape.dims[d] < 0 ? json(nullptr) : json(v.static_shape.dims[d]));
    json e = {{"dtype", std::string(dtype_name(v.dtype))}, {"shape", shape}};
    if (!v.name.empty()) e["name"] = v.name;
    vs.push_back(e);
  }
  doc["variables"] = vs;
  json ins = json::array();
  for (const InputSpec& i : inputs) ins.push_back(json{{"var", i.var}, {"shared", i.shared}});
  doc["inputs"] = ins;
  doc["outputs"] = outputs;
  json cs = json::array();
  for (const ConstSpec& c : constants) {
    const VarSpec& v = vars[c.var];
    const size_t nb = static_cast<size_t>(c.shape.size()) * dtype_size(v.dtype);
    size_t off = payload->size();
    off = (off + 63) / 64 * 64;
    payload->resize(off + nb);
    if (nb) std::memcpy(payload->data() + off, c.data, nb);
    json shape = json::array();
    for (int d = 0; d < c.shape.ndim; ++d) shape.push_back(c.shape.dims[d]);
    cs.push_back(json{{"var", c.var}, {"shape", shape}, {"offset", off}, {"nbytes", nb}});
  }
  doc["constants"] = cs;
  json ns = json::array();
  for (const NodeSpec& n : nodes)
    ns.push_back(json{{"op", n.op}, {"inputs", n.inputs}, {"outputs", n.outputs}, {"attrs", n.attrs}});
  doc["nodes"] = ns;
  if (!gradient.is_null()) doc["gradient"] = gradient;
  return doc;
}

void Graph::write_file(const std::string& path) const {
  std::vector<uint8_t> payload;
  const std::string text = to_json(&payload).dump();
  std::ofstream f(path, std::ios::binary);
  if (!f) throw LoadError(path + ": cannot write file");
  const uint64_t jlen = text.size();
  f.write(kGraphMagic, 8);
  f.write(reinterpret_cast<const char*>(&jlen), 8);
  f.write(text.data(), static_cast<std::streamsize>(jlen));
  const uint64_t pad = (16 + jlen + 63) / 64 * 64 - (16 + jlen);
  const char zeros[64] = {};
  f.write(zeros, static_cast<std::streamsize>(pad));
  f.write(reinterpret_cast<const char*>(payload.data()), static_cast<std::streamsize>(payload.size()));
  if (!f) throw LoadError(path + ": write failed");
}

}  // namespace ember
