// jit.hpp over LLVM: one process-wide OrcJit, used under a mutex (compiles
// run on the tier manager's one worker, or on a loading thread in eager mode).
#include "jit/jit.hpp"

#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>

#include <llvm/Config/llvm-config.h>
#include <llvm/IR/PassTimingInfo.h>
#include <llvm/Pass.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include "interp/config.hpp"
#include "jit/codegen.hpp"
#include "jit/emit_x86.hpp"
#include "jit/orc.hpp"

namespace ember::jit {

namespace {

std::mutex& mu() {
  static std::mutex m;
  return m;
}

// Leaked on purpose: code may be freed by Programs destroyed at exit.
OrcJit* orc_locked() {
  static OrcJit* j = [] {
    auto r = OrcJit::Create();
    if (!r) {
      llvm::consumeError(r.takeError());
      return static_cast<OrcJit*>(nullptr);
    }
    return r->release();
  }();
  return j;
}

std::string message(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return s;
}

// Resident set high-water mark above the current RSS (bytes), after a reset
// of the mark: catches the transient peaks inside LLVM's passes that
// mallinfo samples at stage boundaries miss.
size_t rss_kb(const char* field) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  size_t v = 0;
  const size_t n = std::strlen(field);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, field, n) == 0) v = std::strtoull(line + n, nullptr, 10);
  std::fclose(f);
  return v;
}
void reset_hwm() {
  if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// EMBER_JIT_TIME_PASSES=1: LLVM's -time-passes report on stderr at exit.
void enable_time_passes() {
  static const bool on = [] {
    const auto& e = config().jit_time_passes;
    if (e && (*e)[0] == '1') llvm::TimePassesIsEnabled = true;
    return true;
  }();
  (void)on;
}

size_t heap_in_use() {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

class OrcCode : public Code {
 public:
  OrcCode(OrcJit& j, llvm::orc::JITDylib& jd) : j_(j), jd_(jd) {}
  ~OrcCode() override {
    std::lock_guard<std::mutex> g(mu());
    llvm::consumeError(j_.remove(jd_));
  }

 private:
  OrcJit& j_;
  llvm::orc::JITDylib& jd_;
};

// The whole loop's symbol, next to the chunk's (KernelSpec::loop_carried).
constexpr const char* kLoopName = "ember_loop";

// Links obj and resolves its chunk function (and `with_loop`, its loop's).
// Caller holds mu().
Piece link(OrcJit& j, std::unique_ptr<llvm::MemoryBuffer> obj, const std::string& name, size_t* bytes,
           CompileStats* st = nullptr, bool with_loop = false) {
  using clk = std::chrono::steady_clock;
  const auto t0 = clk::now();
  auto jd = j.addObject(std::move(obj));
  if (!jd) throw std::runtime_error("JIT link failed: " + message(jd.takeError()));
  const auto t1 = clk::now();
  auto addr = j.lookup(**jd, name);
  if (!addr) {
    llvm::consumeError(j.remove(**jd));
    throw std::runtime_error("JIT lookup of " + name + " failed: " + message(addr.takeError()));
  }
  ChunkFn loop = nullptr;
  if (with_loop) {
    auto l = j.lookup(**jd, kLoopName);
    if (!l) {
      const std::string why = message(l.takeError());
      llvm::consumeError(j.remove(**jd));
      throw std::runtime_error(std::string("JIT lookup of ") + kLoopName + " failed: " + why);
    }
    loop = l->toPtr<ChunkFn>();
  }
  if (st) {
    // Objects link lazily: the lookup materializes (links) them.
    st->link_s = std::chrono::duration<double>(t1 - t0).count();
    st->lookup_s = std::chrono::duration<double>(clk::now() - t1).count();
  }
  auto code = std::make_shared<OrcCode>(j, **jd);
  code->bytes = j.lastLinkedBytes();
  if (bytes) *bytes = code->bytes;
  return Piece{addr->toPtr<ChunkFn>(), std::move(code), loop};
}

// Instructions per fused loop (codegen.hpp).
int max_run(int tier) {
  static const int env = [] {
    const auto& e = config().jit_max_run;
    return e ? std::atoi(e->c_str()) : 0;
  }();
  return env > 0 ? env : tier >= 2 ? 128 : 64;
}

// Tier 1 (FastISel) may isolate the ops it cannot select (codegen.hpp).
// Off by default: it saves ~20 % of tier-1 compile time, but the fast
// register allocator then spills every value at each block boundary and the
// code measured several times slower (docs/jit.md).
bool isolate(int tier) {
  static const bool on = config().jit_isolate.has_value();
  static const bool on2 = config().jit_t2_isolate.has_value();
  return tier == 1 ? on : on2;
}

bool env_flag(const std::optional<std::string>& e, bool dflt) {
  return e && !e->empty() ? (*e)[0] != '0' : dflt;
}
// Tier 1 loads vector constants from memory (codegen.hpp), so that
// FastISel selects the ops that use them. EMBER_JIT_T1_KMEM=0: immediate.
bool const_mem(int tier) {
  static const bool on = env_flag(config().jit_t1_kmem, true);
  return tier == 1 && on;
}

// Objects carry their chunk's symbol name in a small trailer so that a
// cached object can be linked without rebuilding anything.
constexpr char kTrailer[] = "EMBERSYM";

}  // namespace

bool available() {
  std::lock_guard<std::mutex> g(mu());
  return orc_locked() != nullptr;
}

std::string cpu_id() {
  std::lock_guard<std::mutex> g(mu());
  OrcJit* j = orc_locked();
  return j ? j->triple() + ";" + j->cpuId() : "none";
}

std::string llvm_version() { return LLVM_VERSION_STRING; }

bool direct_tier1() {
  if (config().jit_t1 == "llvm") return false;
  return direct_host_ok();
}

bool direct_chunk(const interp::Bytecode& bc, int lo, int hi) { return direct_tier1() && direct_supports(bc, lo, hi); }

namespace {

// Tier 1 through the direct emitter (emit_x86.hpp); fn == nullptr if it
// declines the chunk. No object: direct code is not disk-cached.
Piece compile_direct(const interp::Bytecode& bc, int lo, int hi, CompileStats* st) {
  struct Peak {
    size_t h0, peak = 0;
    double cpu = 0;  // spent measuring
  } pk{st ? heap_in_use() : 0};
  // Heap above the start with the emitter's buffers still alive.
  auto sample = [](void* a) {
    auto* q = static_cast<Peak*>(a);
    const double t = thread_cpu_seconds();
    const size_t h = heap_in_use();
    q->peak = h > q->h0 ? h - q->h0 : 0;
    q->cpu = thread_cpu_seconds() - t;
  };
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu_seconds();
  size_t bytes = 0;
  std::string why;
  Piece p = emit_direct(bc, lo, hi, &why, &bytes, st ? +sample : nullptr, &pk);
  if (p.fn && st) {
    const double c1 = thread_cpu_seconds();
    *st = CompileStats{};
    st->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    st->cpu_seconds = c1 - c0 - pk.cpu;  // the emitter's own cost
    st->emit_s = st->seconds;
    st->ir_instructions = static_cast<size_t>(hi - lo);
    st->code_bytes = bytes;
    st->peak_bytes = std::max(bytes, pk.peak);
  }
  return p;
}

}  // namespace

Piece compile_chunk(const interp::Bytecode& bc, int lo, int hi, int tier, CompileStats* st, bool keep_object,
                    const KernelSpec& spec) {
  if (faults().fail_compiles.load() > 0 && faults().fail_compiles.fetch_sub(1) > 0)
    throw std::runtime_error("injected compile failure");
  if (faults().fail_allocs.load() > 0 && faults().fail_allocs.fetch_sub(1) > 0) throw std::bad_alloc();
  if (tier == 1 && !spec.one_element && spec.uniform.empty() && spec.summed.empty() && direct_tier1()) {
    Piece p = compile_direct(bc, lo, hi, st);
    if (p.fn) return p;
  }
  const std::string name = "ember_chunk";
  const bool with_loop = spec.loop_carried >= 0 && spec.one_element && lo == 0 &&
                         hi == static_cast<int>(bc.code.size()) &&
                         loop_compilable(bc, spec.loop_carried, spec.loop_until);
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu_seconds();
  std::lock_guard<std::mutex> g(mu());
  OrcJit* j = orc_locked();
  if (!j) throw std::runtime_error("JIT unavailable on this machine");
  enable_time_passes();
  const size_t h0 = heap_in_use();
  reset_hwm();
  const size_t rss0 = rss_kb("VmRSS:");
  size_t peak = 0;
  auto sample = [&] { peak = std::max(peak, heap_in_use() > h0 ? heap_in_use() - h0 : size_t(0)); };
  std::unique_ptr<llvm::MemoryBuffer> obj;
  size_t nir = 0;
  double emit_s = 0, opt_s = 0, codegen_s = 0;
  const auto t_emit = std::chrono::steady_clock::now();
  {
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto m = emit_chunk(*ctx, bc, lo, hi, name, layout(tier, spec.one_element), spec.uniform, max_run(tier),
                        isolate(tier), const_mem(tier), spec.summed, packed_inputs(bc, tier, spec),
                        packed_outputs(bc, tier, spec));
    if (with_loop) add_loop(*m, bc, name, kLoopName, spec.loop_carried, spec.loop_until);
    for (const auto& f : *m)
      for (const auto& b : f) nir += b.size();
    std::string err;
    llvm::raw_string_ostream es(err);
    if (llvm::verifyModule(*m, &es)) throw std::runtime_error("JIT emitted invalid IR: " + err);
    emit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_emit).count();
    sample();
    auto o = j->compile(*m, tier, &opt_s, &codegen_s);
    if (!o) throw std::runtime_error("JIT compile failed: " + message(o.takeError()));
    obj = std::move(*o);
    if (llvm::TimePassesIsEnabled) llvm::reportAndResetTimings(&llvm::errs());
    sample();
  }
  std::string object;
  if (keep_object) {
    object.assign(obj->getBufferStart(), obj->getBufferSize());
    object += name;
    const uint32_t len = static_cast<uint32_t>(name.size());
    object.append(reinterpret_cast<const char*>(&len), 4);
    object += kTrailer;
  }
  size_t bytes = 0;
  CompileStats lst;
  Piece p = link(*j, std::move(obj), name, &bytes, &lst, with_loop);
  sample();
  const size_t hwm = rss_kb("VmHWM:");
  if (hwm > rss0) peak = std::max(peak, (hwm - rss0) * 1024);
  if (st) {
    st->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    st->cpu_seconds = thread_cpu_seconds() - c0;
    st->ir_instructions = nir;
    st->code_bytes = bytes;
    st->peak_bytes = peak;
    st->emit_s = emit_s;
    st->opt_s = opt_s;
    st->codegen_s = codegen_s;
    st->link_s = lst.link_s;
    st->lookup_s = lst.lookup_s;
    st->object = std::move(object);
  }
  return p;
}

void dump_ir(const interp::Bytecode& bc, int lo, int hi) {
  llvm::LLVMContext ctx;
  auto m = emit_chunk(ctx, bc, lo, hi, "ember_chunk", layout(2, false), {}, max_run(2), false, false);
  m->print(llvm::errs(), nullptr);
}

Piece load_object(const std::string& object, CompileStats* st, bool with_loop) {
  const size_t tl = sizeof(kTrailer) - 1;
  if (object.size() < tl + 4 || object.compare(object.size() - tl, tl, kTrailer) != 0)
    throw std::runtime_error("cached object has no symbol trailer");
  uint32_t len;
  std::memcpy(&len, object.data() + object.size() - tl - 4, 4);
  if (len == 0 || len > 200 || object.size() < tl + 4 + len) throw std::runtime_error("cached object: bad trailer");
  const size_t obj_size = object.size() - tl - 4 - len;
  const std::string name = object.substr(obj_size, len);
  const auto t0 = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> g(mu());
  OrcJit* j = orc_locked();
  if (!j) throw std::runtime_error("JIT unavailable on this machine");
  // Measured as a compile is: linking touches pages of its own.
  const size_t h0 = heap_in_use();
  reset_hwm();
  const size_t rss0 = rss_kb("VmRSS:");
  auto buf = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), obj_size), name);
  size_t bytes = 0;
  Piece p = link(*j, std::move(buf), name, &bytes, nullptr, with_loop);
  if (st) {
    const size_t h = heap_in_use(), hwm = rss_kb("VmHWM:");
    st->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    st->code_bytes = bytes;
    st->peak_bytes = std::max({bytes, h > h0 ? h - h0 : size_t(0), hwm > rss0 ? (hwm - rss0) * 1024 : size_t(0)});
  }
  return p;
}

}  // namespace ember::jit
