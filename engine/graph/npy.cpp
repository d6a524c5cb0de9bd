#include "engine/graph/npy.hpp"

#include <cstring>
#include <fstream>
#include <regex>

namespace ember {

namespace {

const char* descr_of(DType dt) {
  switch (dt) {
    case DType::Float64: return "<f8";
    case DType::Float32: return "<f4";
    case DType::Int64: return "<i8";
    case DType::Int32: return "<i4";
    case DType::Int16: return "<i2";
    case DType::Int8: return "|i1";
    case DType::UInt8: return "|u1";
    case DType::UInt16: return "<u2";
    case DType::UInt32: return "<u4";
    case DType::UInt64: return "<u8";
    case DType::Bool: return "|b1";
  }
  return "?";
}

}  // namespace

Array read_npy(const std::string& path) {
  auto bad = [&](const std::string& m) -> CallError { return CallError(path + ": " + m); };
  std::ifstream f(path, std::ios::binary);
  if (!f) throw bad("cannot open file");
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw bad("not a .npy file");
  uint32_t hlen = 0;
  if (magic[6] == 1) {
    uint16_t h16;
    if (!f.read(reinterpret_cast<char*>(&h16), 2)) throw bad("truncated header");
    hlen = h16;
  } else if (magic[6] == 2 || magic[6] == 3) {
    if (!f.read(reinterpret_cast<char*>(&hlen), 4)) throw bad("truncated header");
  } else {
    throw bad("unsupported .npy version");
  }
  if (hlen > (1u << 20)) throw bad("header too large");
  std::string header(hlen, '\0');
  if (!f.read(header.data(), hlen)) throw bad("truncated header");
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'"))) throw bad("header has no descr");
  const std::string descr = m[1];
  std::optional<DType> dt;
  for (DType t : {DType::Float64, DType::Float32, DType::Int64, DType::Int32, DType::Int16, DType::Int8,
                  DType::UInt8, DType::Bool, DType::UInt16, DType::UInt32, DType::UInt64})
    if (descr == descr_of(t) || (descr.size() == 3 && descr.substr(1) == std::string(descr_of(t)).substr(1) &&
                                 dtype_size(t) == 1))
      dt = t;
  if (!dt) throw bad("unsupported dtype '" + descr + "'");
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True"))) throw bad("Fortran order not supported");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) throw bad("header has no shape");
  Shape s;
  const std::string dims = m[1];
  static const std::regex digits("\\d+");
  std::sregex_iterator it(dims.begin(), dims.end(), digits), end;
  for (; it != end; ++it) {
    if (s.ndim >= kMaxRank) throw bad("too many dims");
    const std::string d = it->str();
    if (d.size() > 12) throw bad("dim too large");
    s.dims[s.ndim++] = std::stoll(d);
  }
  int64_t n = 1;
  for (int d = 0; d < s.ndim; ++d) {
    if (s.dims[d] && n > (int64_t(1) << 40) / s.dims[d]) throw bad("array too large");
    n *= s.dims[d];
  }
  const std::streampos data_at = f.tellg();
  f.seekg(0, std::ios::end);
  const int64_t avail = static_cast<int64_t>(f.tellg() - data_at);
  if (avail < n * static_cast<int64_t>(dtype_size(*dt))) throw bad("truncated data");
  f.seekg(data_at);
  Array a = Array::empty(*dt, s);
  f.read(static_cast<char*>(a.t.data), static_cast<std::streamsize>(n * dtype_size(*dt)));
  return a;
}

void write_npy(const std::string& path, const Tensor& t) {
  Array c = Array::copy_of(t);
  std::string shape = "(";
  for (int d = 0; d < t.ndim(); ++d) shape += std::to_string(t.dim(d)) + (t.ndim() == 1 || d + 1 < t.ndim() ? ", " : "");
  if (t.ndim() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + std::string(descr_of(t.dtype)) + "', 'fortran_order': False, 'shape': " +
                       shape + ", }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw CallError(path + ": cannot write file");
  const uint16_t hlen = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.write(reinterpret_cast<const char*>(&hlen), 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(c.t.data), static_cast<std::streamsize>(t.size() * dtype_size(t.dtype)));
  if (!f) throw CallError(path + ": write failed");
}

}  // namespace ember
