// Reads graph files (docs/graph-format.md) into a Graph, checking the
// document's structure. Op-specific checks happen in the loader.
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "ember/error.hpp"
#include "engine/graph/graph.hpp"

namespace ember {

namespace {

using nlohmann::json;

constexpr size_t kMaxCount = 10'000'000;           // variables, nodes, inputs, ...
constexpr int64_t kMaxStaticElements = int64_t(1) << 31;

struct Reader {
  const std::string& src;

  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw LoadError(src + ": field '" + field + "': " + msg);
  }
  const json& member(const json& obj, const char* key, const std::string& path) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(path + "." + key, "missing");
    return *it;
  }
  const json& array(const json& obj, const char* key, const std::string& path, bool required) const {
    static const json empty = json::array();
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) fail(path + key, "missing");
      return empty;
    }
    if (!it->is_array()) fail(path + key, "must be a list");
    if (it->size() > kMaxCount) fail(path + key, "has more than 10^7 entries");
    return *it;
  }
  int64_t integer(const json& v, const std::string& field) const {
    if (!v.is_number_integer()) fail(field, "must be an integer");
    return v.get<int64_t>();
  }
  int var_ref(const json& v, const std::string& field, size_t nvars) const {
    int64_t i = integer(v, field);
    if (i < 0 || static_cast<size_t>(i) >= nvars)
      fail(field, "variable " + std::to_string(i) + " does not exist (" + std::to_string(nvars) +
                      " variables)");
    return static_cast<int>(i);
  }
};

// Decodes one inline number (or "nan"/"inf"/"-inf") into element k of dst.
void store_inline(const Reader& r, const json& v, DType dt, void* dst, int64_t k, const std::string& field) {
  double f = 0;
  int64_t i = 0;
  bool is_int = false;
  if (v.is_boolean()) {
    i = v.get<bool>();
    is_int = true;
  } else if (v.is_number_integer()) {
    i = v.get<int64_t>();
    is_int = true;
  } else if (v.is_number()) {
    f = v.get<double>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") f = std::numeric_limits<double>::quiet_NaN();
    else if (s == "inf") f = std::numeric_limits<double>::infinity();
    else if (s == "-inf") f = -std::numeric_limits<double>::infinity();
    else r.fail(field, "unknown number '" + s + "'");
  } else {
    r.fail(field, "must be a number");
  }
  if (!dtype_is_float(dt) && !is_int) {
    if (!std::isfinite(f) || f != std::floor(f)) r.fail(field, "integer dtype given a non-integer value");
    if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0)) r.fail(field, "integer out of range");
    i = static_cast<int64_t>(f);
    is_int = true;
  }
  dtype_dispatch(dt, [&](auto t) {
    using T = decltype(t);
    static_cast<T*>(dst)[k] = is_int ? static_cast<T>(i) : static_cast<T>(f);
  });
}

Shape read_shape(const Reader& r, const json& v, const std::string& field) {
  if (!v.is_array()) r.fail(field, "must be a list of dims");
  if (v.size() > static_cast<size_t>(kMaxRank))
    r.fail(field, "has " + std::to_string(v.size()) + " dims; at most " + std::to_string(kMaxRank));
  Shape s;
  s.ndim = static_cast<int>(v.size());
  int64_t known = 1;
  for (int d = 0; d < s.ndim; ++d) {
    const json& e = v[d];
    if (e.is_null()) {
      s.dims[d] = -1;
      continue;
    }
    int64_t n = r.integer(e, field + "[" + std::to_string(d) + "]");
    if (n < 0) r.fail(field + "[" + std::to_string(d) + "]", "negative dim");
    if (n > kMaxStaticElements || (n > 0 && known > kMaxStaticElements / n))
      r.fail(field, "static shape has more than 2^31 elements");
    known *= n;
    s.dims[d] = n;
  }
  return s;
}

}  // namespace

Graph Graph::parse(std::string_view text, std::shared_ptr<const uint8_t[]> payload, uint64_t payload_size,
                   const std::string& source) {
  Reader r{source};
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {  // parse errors, and number overflow ("1e400")
    throw LoadError(source + ": not valid JSON: " + e.what());
  }
  if (!doc.is_object()) r.fail("(document)", "must be a JSON object");
  if (auto f = doc.find("format"); f == doc.end() || !f->is_string() || *f != "ember-graph")
    r.fail("format", "must be \"ember-graph\"");
  const json& ver = r.member(doc, "version", "");
  if (r.integer(ver, "version") != 1) r.fail("version", "unsupported version (this build reads 1)");

  Graph g;
  g.source = source;
  if (auto it = doc.find("name"); it != doc.end() && it->is_string()) g.name = it->get<std::string>();
  if (auto it = doc.find("gradient"); it != doc.end()) g.gradient = *it;  // checked where it is applied

  const json& vars = r.array(doc, "variables", "", true);
  g.vars.resize(vars.size());
  for (size_t k = 0; k < vars.size(); ++k) {
    const std::string p = "variables[" + std::to_string(k) + "]";
    const json& v = vars[k];
    if (!v.is_object()) r.fail(p, "must be an object");
    if (auto it = v.find("name"); it != v.end()) {
      if (!it->is_string()) r.fail(p + ".name", "must be a string");
      g.vars[k].name = it->get<std::string>();
    }
    const json& dt = r.member(v, "dtype", p);
    auto d = dt.is_string() ? dtype_from_name(dt.get<std::string>()) : std::nullopt;
    if (!d) r.fail(p + ".dtype", "unknown dtype " + dt.dump());
    g.vars[k].dtype = *d;
    g.vars[k].static_shape = read_shape(r, r.member(v, "shape", p), p + ".shape");
  }
  const size_t nv = g.vars.size();

  const json& inputs = r.array(doc, "inputs", "", true);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string p = "inputs[" + std::to_string(k) + "]";
    const json& in = inputs[k];
    InputSpec s;
    if (in.is_object()) {
      s.var = r.var_ref(r.member(in, "var", p), p + ".var", nv);
      if (auto it = in.find("shared"); it != in.end()) {
        if (!it->is_boolean()) r.fail(p + ".shared", "must be true or false");
        s.shared = it->get<bool>();
      }
    } else {
      s.var = r.var_ref(in, p, nv);
    }
    g.inputs.push_back(s);
  }
  const json& outputs = r.array(doc, "outputs", "", true);
  for (size_t k = 0; k < outputs.size(); ++k)
    g.outputs.push_back(r.var_ref(outputs[k], "outputs[" + std::to_string(k) + "]", nv));

  const json& consts = r.array(doc, "constants", "", false);
  for (size_t k = 0; k < consts.size(); ++k) {
    const std::string p = "constants[" + std::to_string(k) + "]";
    const json& c = consts[k];
    if (!c.is_object()) r.fail(p, "must be an object");
    ConstSpec cs;
    cs.var = r.var_ref(r.member(c, "var", p), p + ".var", nv);
    const VarSpec& var = g.vars[cs.var];
    // A value for a variable with unknown dims (a shared input's current
    // value) gives its own "shape", consistent with the static one.
    cs.shape = var.static_shape;
    if (auto it = c.find("shape"); it != c.end()) {
      cs.shape = read_shape(r, *it, p + ".shape");
      if (cs.shape.ndim != var.static_shape.ndim) r.fail(p + ".shape", "rank differs from the variable's");
      for (int d = 0; d < cs.shape.ndim; ++d)
        if (var.static_shape.dims[d] >= 0 && cs.shape.dims[d] != var.static_shape.dims[d])
          r.fail(p + ".shape", "dim " + std::to_string(d) + " differs from the variable's static shape");
    }
    for (int d = 0; d < cs.shape.ndim; ++d)
      if (cs.shape.dims[d] < 0) r.fail(p, "value has an unknown dim (give \"shape\")");
    const int64_t count = cs.shape.size();
    const size_t esize = dtype_size(var.dtype);
    if (auto it = c.find("data"); it != c.end()) {
      if (!it->is_array()) r.fail(p + ".data", "must be a flat list");
      if (static_cast<int64_t>(it->size()) != count)
        r.fail(p + ".data", "has " + std::to_string(it->size()) + " values, shape needs " +
                                std::to_string(count));
      std::shared_ptr<uint8_t[]> buf(new uint8_t[std::max<size_t>(count * esize, 1)]);
      for (int64_t e = 0; e < count; ++e)
        store_inline(r, (*it)[e], var.dtype, buf.get(), e, p + ".data[" + std::to_string(e) + "]");
      cs.data = buf.get();
      g.storage.push_back(buf);
    } else {
      const int64_t off = r.integer(r.member(c, "offset", p), p + ".offset");
      const int64_t nb = r.integer(r.member(c, "nbytes", p), p + ".nbytes");
      if (nb != count * static_cast<int64_t>(esize))
        r.fail(p + ".nbytes", std::to_string(nb) + " bytes, shape and dtype need " +
                                  std::to_string(count * esize));
      if (off < 0 || off % static_cast<int64_t>(esize) != 0)
        r.fail(p + ".offset", "must be a non-negative multiple of the element size");
      if (static_cast<uint64_t>(off) > payload_size || static_cast<uint64_t>(nb) > payload_size - off)
        r.fail(p, "range [" + std::to_string(off) + ", " + std::to_string(off + nb) +
                      ") lies outside the payload of " + std::to_string(payload_size) + " bytes");
      cs.data = payload.get() + off;
    }
    g.constants.push_back(cs);
  }
  if (payload) g.storage.push_back(std::const_pointer_cast<uint8_t[]>(payload));

  const json& nodes = r.array(doc, "nodes", "", true);
  g.nodes.resize(nodes.size());
  for (size_t k = 0; k < nodes.size(); ++k) {
    const std::string p = "nodes[" + std::to_string(k) + "]";
    const json& n = nodes[k];
    if (!n.is_object()) r.fail(p, "must be an object");
    const json& op = r.member(n, "op", p);
    if (!op.is_string()) r.fail(p + ".op", "must be a string");
    NodeSpec& ns = g.nodes[k];
    ns.op = op.get<std::string>();
    for (const char* key : {"inputs", "outputs"}) {
      const json& list = r.array(n, key, p + ".", true);
      auto& dst = key[0] == 'i' ? ns.inputs : ns.outputs;
      for (size_t e = 0; e < list.size(); ++e)
        dst.push_back(r.var_ref(list[e], p + "." + key + "[" + std::to_string(e) + "]", nv));
    }
    if (auto it = n.find("attrs"); it != n.end()) {
      if (!it->is_object()) r.fail(p + ".attrs", "must be an object");
      ns.attrs = *it;
    } else {
      ns.attrs = json::object();
    }
  }
  return g;
}

Graph Graph::read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw LoadError(path + ": cannot open file");
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  f.seekg(0);
  if (size < 0) throw LoadError(path + ": cannot read file");
  char head[16] = {};
  const size_t nhead = static_cast<size_t>(std::min<std::streamoff>(size, 16));
  f.read(head, static_cast<std::streamsize>(nhead));
  if (nhead >= 8 && std::memcmp(head, kGraphMagic, 8) == 0) {
    if (nhead < 16) throw LoadError(path + ": truncated container header");
    uint64_t jlen = 0;
    std::memcpy(&jlen, head + 8, 8);
    if (jlen > static_cast<uint64_t>(size) - 16)
      throw LoadError(path + ": container header says " + std::to_string(jlen) +
                      " bytes of JSON but the file has " + std::to_string(size - 16));
    std::string text(jlen, '\0');
    f.read(text.data(), static_cast<std::streamsize>(jlen));
    const uint64_t payload_at = (16 + jlen + 63) / 64 * 64;
    const uint64_t psize = static_cast<uint64_t>(size) > payload_at ? size - payload_at : 0;
    // 64-byte aligned payload, read with one call; constants point into it.
    std::shared_ptr<uint8_t[]> payload(static_cast<uint8_t*>(::operator new[](psize + 64, std::align_val_t(64))),
                                       [](uint8_t* p) { ::operator delete[](p, std::align_val_t(64)); });
    f.seekg(static_cast<std::streamoff>(payload_at));
    if (psize) f.read(reinterpret_cast<char*>(payload.get()), static_cast<std::streamsize>(psize));
    if (!f) throw LoadError(path + ": truncated payload");
    return parse(text, payload, psize, path);
  }
  std::string text(static_cast<size_t>(size), '\0');
  f.seekg(0);
  f.read(text.data(), size);
  if (!f) throw LoadError(path + ": cannot read file");
  return parse(text, nullptr, 0, path);
}

}  // namespace ember
