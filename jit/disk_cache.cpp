#include "jit/disk_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <system_error>
#include <vector>

#include <xxhash.h>

#include "interp/config.hpp"
#include "jit/jit.hpp"

namespace ember::jit {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'E', 'M', 'B', 'J', 'I', 'T', '0', '1'};
// Bumped whenever jit/codegen.cpp changes what it emits.
constexpr char kCodegenVersion[] = "codegen-24";

struct Header {
  char magic[8];
  uint64_t size;
  uint64_t checksum;  // xxh64 of the payload
};

// Names this process's temporary files uniquely in a directory shared by
// many hosts: pids repeat across machines and containers (often pid 1), and
// two writers sharing one temporary file would publish a torn entry.
const std::string& writer_id() {
  static const std::string id = [] {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = 0;
    std::random_device rd;
    const uint64_t nonce = (uint64_t(rd()) << 32) ^ rd();
    char buf[320];
    std::snprintf(buf, sizeof buf, "%s.%d.%016llx", host, static_cast<int>(::getpid()),
                  static_cast<unsigned long long>(nonce));
    return std::string(buf);
  }();
  return id;
}

// A temporary file older than this was left by a writer that died mid-write.
constexpr auto kStaleTemp = std::chrono::hours(1);

}  // namespace

std::string DiskCache::default_dir() {
  // Read at each compile: a worker may point EMBER_CACHE_DIR elsewhere.
  if (const auto d = config_now(&Config::cache_dir); d && !d->empty()) return *d;
  if (const auto x = config_now(&Config::xdg_cache_home); x && !x->empty()) return *x + "/ember";
  if (const auto h = config_now(&Config::home); h && !h->empty()) return *h + "/.cache/ember";
  return "";
}

std::optional<std::string> DiskCache::get(const std::string& key) const {
  if (dir_.empty()) return std::nullopt;
  const fs::path p = fs::path(dir_) / (key + ".obj");
  std::ifstream f(p, std::ios::binary);
  if (!f) return std::nullopt;
  Header h{};
  std::string data;
  bool ok = static_cast<bool>(f.read(reinterpret_cast<char*>(&h), sizeof h)) &&
            std::memcmp(h.magic, kMagic, 8) == 0 && h.size < (size_t(1) << 32);
  if (ok) {
    data.resize(h.size);
    ok = static_cast<bool>(f.read(data.data(), static_cast<std::streamsize>(h.size))) && f.peek() == EOF &&
         XXH64(data.data(), data.size(), 0) == h.checksum;
  }
  f.close();
  std::error_code ec;
  if (!ok) {
    fs::remove(p, ec);  // corrupt or truncated: recompile and rewrite
    return std::nullopt;
  }
  fs::last_write_time(p, fs::file_time_type::clock::now(), ec);  // LRU touch
  return data;
}

bool DiskCache::put(const std::string& key, const std::string& data) const {
  if (dir_.empty()) return false;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  static std::atomic<uint64_t> seq{0};
  const fs::path final_path = fs::path(dir_) / (key + ".obj");
  const fs::path tmp = fs::path(dir_) / (key + ".tmp." + writer_id() + "." + std::to_string(seq++));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;
    Header h{};
    std::memcpy(h.magic, kMagic, 8);
    h.size = data.size();
    h.checksum = XXH64(data.data(), data.size(), 0);
    f.write(reinterpret_cast<const char*>(&h), sizeof h);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    f.flush();
    if (!f) {
      f.close();
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, final_path, ec);  // atomic: readers see the old entry or the new one
  if (ec) {
    fs::remove(tmp, ec);
    return false;
  }
  trim();
  return true;
}

void DiskCache::trim() const {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> files;
  size_t total = 0;
  const auto now = fs::file_time_type::clock::now();
  for (auto it = fs::directory_iterator(dir_, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code e2;
    if (it->path().filename().string().find(".tmp.") != std::string::npos) {
      const auto t = it->last_write_time(e2);
      if (!e2 && now - t > kStaleTemp) fs::remove(it->path(), e2);
      continue;
    }
    if (it->path().extension() != ".obj") continue;
    const size_t sz = it->file_size(e2);
    if (e2) continue;
    total += sz;
    files.emplace_back(it->last_write_time(e2), it->path());
  }
  if (total <= max_bytes_) return;
  std::sort(files.begin(), files.end());
  for (auto& [t, p] : files) {
    if (total <= max_bytes_ * 9 / 10) break;
    std::error_code e2;
    const size_t sz = fs::file_size(p, e2);
    if (fs::remove(p, e2)) total -= sz;  // another process may have removed it first
  }
}

std::string cache_key(const interp::Bytecode& bc, int lo, int hi, int tier, const std::string& cpu,
                      const std::string& llvm_version, const KernelSpec& spec) {
  XXH3_state_t* s = XXH3_createState();
  XXH3_128bits_reset(s);
  auto add = [&](const void* p, size_t n) { XXH3_128bits_update(s, p, n); };
  auto add_str = [&](const std::string& x) {
    const uint64_t n = x.size();
    add(&n, 8);
    add(x.data(), x.size());
  };
  add_str(kCodegenVersion);
  add_str(EMBER_VERSION);
  add_str(llvm_version);
  add_str(cpu);
  // The kernel's cell layout must match the object's.
  const Layout l = layout(tier, spec.one_element);
  const int64_t hdr[8] = {lo, hi, tier, kBlock, l.cell_bytes, l.lanes, bc.num_regs,
                          static_cast<int64_t>(bc.code.size())};
  add(hdr, sizeof hdr);
  for (size_t k = 0; k < bc.constants.size(); ++k) {
    add(&bc.const_cls[k], sizeof bc.const_cls[k]);
    add(&bc.constants[k], sizeof bc.constants[k]);
  }
  add(bc.inputs.data(), bc.inputs.size() * sizeof(DType));
  for (const auto& in : bc.code) {
    const int32_t w[5] = {in.op, static_cast<int32_t>(in.dtype), in.d, in.a, (in.b << 0)};
    add(w, sizeof w);
    add(&in.c, 4);
  }
  for (const auto& o : bc.outputs) {
    add(&o.slot, 4);
    add(&o.dtype, sizeof o.dtype);
  }
  // Uniform inputs change how the chunk reads them.
  for (size_t k = 0; k < spec.uniform.size(); ++k)
    if (spec.uniform[k]) {
      const uint64_t u = k;
      add(&u, 8);
    }
  // Summed outputs change what the chunk stores.
  for (size_t j = 0; j < spec.summed.size(); ++j)
    if (spec.summed[j]) {
      const uint64_t u = (uint64_t{1} << 63) | j;
      add(&u, 8);
    }
  // A whole loop adds a function to the object.
  if (spec.loop_carried >= 0) {
    const int64_t l[2] = {spec.loop_carried, spec.loop_until};
    add(l, sizeof l);
  }
  const XXH128_hash_t h = XXH3_128bits_digest(s);
  XXH3_freeState(s);
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

}  // namespace ember::jit
