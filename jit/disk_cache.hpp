// On-disk cache of compiled objects, shared by processes: one file per key,
// written to a temp file and renamed into place, checksummed (a corrupt or
// truncated entry reads as a miss and is removed), LRU-trimmed by mtime.
// No LLVM types; used by the tier manager.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

#include "interp/bytecode.hpp"
#include "jit/jit.hpp"

namespace ember::jit {

class DiskCache {
 public:
  DiskCache(std::string dir, size_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}
  // $EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember, else ~/.cache/ember.
  static std::string default_dir();

  std::optional<std::string> get(const std::string& key) const;
  // false when the entry could not be written (the cache is then skipped).
  bool put(const std::string& key, const std::string& data) const;
  const std::string& dir() const { return dir_; }

 private:
  void trim() const;
  std::string dir_;
  size_t max_bytes_;
};

// Structural key of instructions [lo, hi) of bc compiled at `tier` for this
// CPU with this LLVM and ember version (hex of a 128-bit xxh3).
std::string cache_key(const interp::Bytecode& bc, int lo, int hi, int tier, const std::string& cpu,
                      const std::string& llvm_version, const KernelSpec& spec = {});

}  // namespace ember::jit
