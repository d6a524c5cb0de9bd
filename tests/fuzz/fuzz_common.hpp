// Shared by the fuzz targets: a per-process scratch file, and running a
// loaded program once on arguments filled from the fuzzer's bytes.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "ember/ember.hpp"

namespace ember::fuzz_target {

// Aborts with a message: the fuzzer records the input as a crash.
[[noreturn]] inline void violation(const std::string& what) {
  std::fprintf(stderr, "fuzz target: contract violated: %s\n", what.c_str());
  std::abort();
}

inline std::string scratch_path(const char* tag) {
  return "/tmp/ember_fuzz_" + std::string(tag) + "_" + std::to_string(::getpid());
}

inline std::string write_scratch(const char* tag, const uint8_t* data, size_t size) {
  const std::string path = scratch_path(tag);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// Runs p once with arguments of its static shapes (unknown dims: 2) filled
// cyclically from bytes; only CallError may come out.
inline void run_once(const Program& p, const uint8_t* bytes, size_t nbytes) {
  std::vector<Array> args;
  std::vector<Tensor> views;
  int64_t total = 0;
  for (const IOInfo& info : p.args()) {
    Shape s = info.static_shape;
    for (int d = 0; d < s.ndim; ++d)
      if (s.dims[d] < 0) s.dims[d] = 2;
    total += s.size();
    if (total > (1 << 16)) return;  // keep each run small
    Array a = Array::empty(info.dtype, s);
    const size_t es = dtype_size(info.dtype);
    auto* dst = static_cast<uint8_t*>(a.t.data);
    for (size_t i = 0; nbytes && i < static_cast<size_t>(a.size()) * es; ++i) dst[i] = bytes[i % nbytes];
    if (info.dtype == DType::Bool)
      for (int64_t i = 0; i < a.size(); ++i) dst[i] &= 1;
    args.push_back(a);
    views.push_back(a.t);
  }
  try {
    p.call(views);
  } catch (const CallError&) {
  }
}

}  // namespace ember::fuzz_target
