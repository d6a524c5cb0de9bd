#include "jit/tier_manager.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "interp/bytecode.hpp"
#include "interp/config.hpp"
#include "jit/peak_model.hpp"

#ifdef EMBER_WITH_JIT
#include "jit/disk_cache.hpp"
#include "jit/jit.hpp"
#endif

namespace ember {

using Clock = std::chrono::steady_clock;

JitConfig JitConfig::from_env() {
  JitConfig c;
  const Config& env = config();
  // A bad value is reported and the default kept: no caller to throw to.
  auto warn = [](const std::invalid_argument& e, const char* dflt) {
    std::fprintf(stderr, "ember: warning: %s; using %s\n", e.what(), dflt);
  };
  if (env.jit && !env.jit->empty()) {
    try {
      c.mode = parse_jit_mode_or_throw(*env.jit, "EMBER_JIT");
    } catch (const std::invalid_argument& e) {
      warn(e, "auto");
    }
  }
  if (env.jit_memory && !env.jit_memory->empty()) {
    try {
      c.memory_budget = parse_size_or_throw(*env.jit_memory, "EMBER_JIT_MEMORY");
    } catch (const std::invalid_argument& e) {
      warn(e, "256M");
    }
  }
  if (env.jit_cache && *env.jit_cache == "0") c.cache = false;
  return c;
}

std::string JitStats::to_json() const {
  nlohmann::json j;
  j["budget_bytes"] = budget;
  j["peak_bytes"] = peak_bytes;
  j["resident_code_bytes"] = resident_code_bytes;
  j["compiles"] = compiles;
  j["failures"] = failures;
  j["evictions"] = evictions;
  j["rejected_slower"] = rejected_slower;
  j["skipped_budget"] = skipped_budget;
  j["over_budget"] = over_budget;
  j["splits"] = splits;
  j["cache"] = {{"hits", cache_hits}, {"misses", cache_misses}, {"write_failures", cache_write_failures}};
  nlohmann::json ts = nlohmann::json::array();
  for (int t = 1; t < 3; ++t) {
    const TierStats& x = tiers[t];
    ts.push_back({{"tier", t},
                  {"attempted", x.attempted},
                  {"compiled", x.compiled},
                  {"skipped_budget", x.skipped_budget},
                  {"rejected_slower", x.rejected_slower},
                  {"evicted", x.evicted},
                  {"failed", x.failed}});
  }
  j["tiers"] = ts;
  nlohmann::json bs = nlohmann::json::array();
  for (const BackendStats& b : backends)
    bs.push_back({{"backend", b.name},
                  {"fixed_bytes", b.fixed_bytes},
                  {"fixed_measured", b.fixed_measured},
                  {"bytes_per_instruction", b.bytes_per_instruction}});
  j["backends"] = bs;
  j["notes"] = notes;
  nlohmann::json cs = nlohmann::json::array();
  for (const CompositeStats& c : composites) {
    cs.push_back({{"name", c.name},
                  {"ops", c.ops},
                  {"instructions", c.instructions},
                  {"tier", c.tier},
                  {"chunks", c.chunks},
                  {"calls", c.calls},
                  {"elements", c.elements},
                  {"seconds_per_tier", {c.seconds[0], c.seconds[1], c.seconds[2]}},
                  {"ns_per_element_per_tier", {c.ns_per_element[0], c.ns_per_element[1], c.ns_per_element[2]}},
                  {"compile_seconds", c.compile_seconds},
                  {"compile_peak_bytes", c.compile_peak_bytes},
                  {"code_bytes", c.code_bytes},
                  {"cache_hit", c.cache_hit},
                  {"compiles", c.compiles},
                  {"evictions", c.evictions},
                  {"skipped", c.skipped},
                  {"failures", c.failures},
                  {"last_error", c.last_error}});
  }
  j["composites"] = cs;
  return j.dump(2);
}

struct TierEntry {
  // Read by every call (Hot); apart from the counters every thread's timed calls write.
  alignas(64) std::atomic<uint32_t> sample_mask{TierManager::kSample - 1};
  // Call path (lock-free; timed calls only: TierManager::count_timed).
  alignas(64) std::atomic<uint64_t> calls{0}, elements{0}, ns{0};

  // Everything below is guarded by the manager's mutex.
  const SwapTarget* owner = nullptr;
  std::shared_ptr<const interp::Interpreted> vm;
  bool detached = false, busy = false;
  int tier = 0;
#ifdef EMBER_WITH_JIT
  std::shared_ptr<jit::JitKernel> current, previous;  // previous: kept while `current` is measured
  std::vector<std::shared_ptr<jit::JitKernel>> retired;
  // Runs in progress when code was retired: (epoch, its odd value then).
  std::vector<std::pair<std::shared_ptr<RunEpoch>, uint64_t>> waits;
#endif
  bool measuring = false;
  // Speed of the kernel in use: ns/element of each scan interval it ran in
  // (a ring of the last kWindows); a tier-up waits for kBaseWindows of them.
  static constexpr int kWindows = 16;
  double win[kWindows] = {};
  int nwin = 0, wpos = 0, skip = 0;
  // While a new kernel is measured, the scan alternates the active pointer
  // between it and the kernel it replaces, interval by interval, so both are
  // timed under the same load (a compile, other processes), and compares
  // the medians: ab[1] new, ab[0] old.
  static constexpr int kAB = 8;
  double ab[2][kAB] = {};
  int ab_n[2] = {}, ab_side = 1;
  uint64_t seen_calls = 0, seen_elements = 0, seen_ns = 0;
  uint64_t tier_elements[3] = {}, tier_ns[3] = {};
  double recent_rate = 0;  // ns spent per second of wall time, smoothed

  void push_window(double r) {
    win[wpos] = r;
    wpos = (wpos + 1) % kWindows;
    nwin = std::min(nwin + 1, kWindows);
  }
  bool no_retry[3] = {};
  bool skipped[3] = {};    // the tier cannot fit the budget (until configure)
  bool direct_ok = false;  // tier 1's direct emitter takes the whole bytecode
  bool one_element = false;  // SwapTarget::one_element
  int loop_carried = -1;      // SwapTarget::loop_carried, when its loop compiles whole
  bool loop_until = false;
  std::vector<bool> uniform;  // SwapTarget::uniform_inputs, less inputs that are outputs
  std::vector<bool> summed;   // set_summed, less outputs the chunk cannot sum (mu)
  int failures = 0, compiles = 0, evictions = 0;
  int best_tier = 0;       // the highest tier that won its A/B measurement
  double penalty = 1;      // raises the hotness bar after an eviction
  Clock::time_point backoff_until{};
  CompositeStats st;

  double ns_per_element(int t) const {
    return tier_elements[t] ? double(tier_ns[t]) / double(tier_elements[t]) : 0;
  }
};

struct TierManager::Impl {
  mutable std::mutex mu;
  std::condition_variable cv, idle_cv;
  JitConfig cfg = JitConfig::from_env();
  std::vector<std::shared_ptr<TierEntry>> entries;
  std::thread worker;
  bool stop = false, compiling = false;
  size_t queued = 0;
  JitStats totals;
  PeakModel model;
  // Every live Workspace's run epoch (own lock: workspaces are made on
  // callers' threads; taken inside `mu` when code is retired).
  std::mutex epochs_mu;
  std::vector<std::weak_ptr<RunEpoch>> epochs;
  bool noted[3] = {};  // a "tier skipped" note was written for this budget
  // Per-tier compile model (CPU µs = chunks x base + per instruction x n),
  // recalibrated from measurements. The fixed part dominates the small
  // Composites of real models (tier 1: ~2.4 ms whatever the size,
  // docs/jit.md); without it, per-instruction figures learnt from them
  // over-predict large Composites many times over.
  // Tier 1's direct emitter (jit/emit_x86.hpp) costs ~3 us per chunk +
  // 0.15 us per instruction (bench/jit_bench), so it has its own starting
  // points and floors; a chunk it declines goes to LLVM, and the
  // recalibration follows whichever ran.
  static bool t1_direct() {
#ifdef EMBER_WITH_JIT
    return jit::direct_tier1();
#else
    return false;
#endif
  }
  double base_us[3] = {0, t1_direct() ? 20.0 : 2400.0, 6000};
  double us_per_instr[3] = {0, t1_direct() ? 0.2 : 17.0, 45};
  const double min_base_us[3] = {0, t1_direct() ? 5.0 : 300.0, 300.0};
  const double min_us_per_instr[3] = {0, t1_direct() ? 0.05 : 1.0, 1.0};
  // Instructions per compiled chunk at most, per tier, so compile time and
  // peak memory stay linear in the Composite's size (bench/jit_bench: tier
  // 2 costs more per instruction in larger functions, tier 1 does not).
  // Tier 2 at 512: 24-27 us/op against 31.5 at 256, peak 0.46 MB (docs/jit.md).
  static constexpr int kMaxChunk[3] = {0, 2048, 512};
  static constexpr int kMaxChunks = 64;
  // Intervals the current kernel must have been measured over before it is replaced.
  static constexpr int kBaseWindows = 3;
  // Compiles per Composite at most (tier 1, tier 2, one return after an
  // eviction), so the service settles.
  static constexpr int kMaxCompiles = 3;
  // Code is evicted only for a compile expected to save this many times
  // the interpreter time the evicted code saves.
  static constexpr double kEvictMargin = 2;
  Clock::time_point last_scan = Clock::now();
  struct Cand {
    TierEntry* e;
    int tier;
    double score;
  };
  std::vector<Cand> cands;
  std::mt19937 rng{12345};

  // Admission works below the budget by 1/16: the measurement is
  // process-wide, so another thread's page faults land in it too.
  double cap() const { return double(cfg.memory_budget) * 15 / 16; }
  static int backend(const TierEntry& e, int tier) { return tier == 1 && e.direct_ok ? kDirect : tier; }
  static int tier_of(int b) { return b == kLlvm2 ? 2 : 1; }

  size_t resident_locked() const {
    size_t n = 0;
#ifdef EMBER_WITH_JIT
    for (const auto& e : entries) {
      if (e->current) n += e->current->code_bytes();
      if (e->previous) n += e->previous->code_bytes();
      for (const auto& r : e->retired) n += r->code_bytes();
    }
#endif
    return n;
  }

  // Resident code that waiting frees: retired kernels, and the replaced
  // kernel of an A/B measurement.
  size_t pending_locked() const {
    size_t n = 0;
#ifdef EMBER_WITH_JIT
    for (const auto& e : entries) {
      if (e->previous) n += e->previous->code_bytes();
      for (const auto& r : e->retired) n += r->code_bytes();
    }
#endif
    return n;
  }

  // Chunks that compile n instructions on backend b beside `resident`
  // bytes, every chunk's predicted peak (the earlier chunks' code included)
  // within the cap; 0 if none do.
  int chunks_for(int b, int n, double resident) const {
    const double room = cap() - resident - model.code(b, n) - model.fixed[b];
    const double m = room / (PeakModel::kMargin * model.per_instr[b]);
    const double most = std::min<double>({double(n), m, double(kMaxChunk[tier_of(b)])});
    if (most < 1) return 0;
    const int c = static_cast<int>((n + int(most) - 1) / int(most));
    return c <= kMaxChunks ? c : 0;
  }

  void note_skip_locked(TierEntry& e, int tier) {
    e.skipped[tier] = true;
    e.st.skipped = e.st.skipped.empty() ? "" : e.st.skipped + ", ";
    e.st.skipped += "tier " + std::to_string(tier) + ": budget";
    ++totals.tiers[tier].skipped_budget;
    ++totals.skipped_budget;
    const int b = backend(e, tier);
    if (!noted[tier] && model.fixed[b] >= cap()) {
      noted[tier] = true;
      char line[200];
      std::snprintf(line, sizeof line, "tier %d skipped: budget (%.2f MiB) below its fixed cost (%.2f MiB, %s)",
                    tier, double(cfg.memory_budget) / (1 << 20), model.fixed[b] / (1 << 20),
                    model.measured[b] ? "measured" : "not yet measured");
      totals.notes.push_back(line);
    }
  }

#ifdef EMBER_WITH_JIT
  struct Plan {
    std::shared_ptr<TierEntry> e;
    std::shared_ptr<const interp::Interpreted> vm;
    int tier = 1;
    int chunks = 1;
    std::vector<bool> summed;  // TierEntry::summed when the plan was made
    std::vector<bool> uniform;  // TierEntry::uniform when the plan was made
  };

  void install_locked(TierEntry& e, std::shared_ptr<jit::JitKernel> k, bool measure) {
    std::shared_ptr<jit::JitKernel> old_previous = std::move(e.previous), old_current;
    e.previous = measure ? e.current : nullptr;
    if (!measure) old_current = e.current;
    e.current = std::move(k);
    e.tier = e.current->tier();
    e.owner->set_active(e.current.get());
    retire_locked(e, std::move(old_previous));
    retire_locked(e, std::move(old_current));
    e.measuring = measure;
    e.ab_n[0] = e.ab_n[1] = 0;
    e.ab_side = 1;
    e.nwin = e.wpos = 0;
    e.skip = 1;  // the first interval mixes both kernels and runs cold code
    resample_locked(e, next_tier(e));
  }

  const interp::ElemKernel* replaced(const TierEntry& e) const {
    return e.previous ? static_cast<const interp::ElemKernel*>(e.previous.get()) : e.vm.get();
  }
  static double median_of(const double* w, int n) {
    double v[TierEntry::kAB];
    std::copy(w, w + n, v);
    std::nth_element(v, v + n / 2, v + n);
    return v[n / 2];
  }

  // Back to the interpreter (eviction): the code is freed once no call is
  // inside it. The kernel backs off, and its bar to return rises, so an
  // evicted kernel does not come straight back (HotSpot's and LuaJIT's
  // penalties for code that did not stick).
  void evict_locked(TierEntry& e) {
    ++totals.tiers[e.tier].evicted;
    ++totals.evictions;
    ++e.evictions;
    e.st.evictions = e.evictions;
    e.owner->set_active(e.vm.get());
    retire_locked(e, std::move(e.current));
    retire_locked(e, std::move(e.previous));
    e.current = e.previous = nullptr;
    e.tier = 0;
    e.measuring = false;
    e.nwin = e.wpos = 0;
    e.penalty *= 4;
    const double ms = 500 * (1 + std::uniform_real_distribution<>(0, 1)(rng));
    e.backoff_until = Clock::now() + std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
    free_retired_locked(e);
    resample_locked(e, next_tier(e));
  }

  // Call after the store of the kernel that replaces k: runs that begin
  // later cannot load k, so only those in progress now are waited for.
  void retire_locked(TierEntry& e, std::shared_ptr<jit::JitKernel> k) {
    if (!k) return;
    e.retired.push_back(std::move(k));
    std::atomic_thread_fence(std::memory_order_seq_cst);
    std::lock_guard<std::mutex> g(epochs_mu);
    for (const auto& w : epochs)
      if (auto r = w.lock()) {
        const uint64_t v = r->n.load(std::memory_order_seq_cst);
        if (v & 1) e.waits.emplace_back(std::move(r), v);
      }
  }

  void free_retired_locked(TierEntry& e) {
    if (e.retired.empty()) return;
    auto& w = e.waits;
    w.erase(std::remove_if(w.begin(), w.end(),
                           [](const auto& x) { return x.first->n.load(std::memory_order_acquire) != x.second; }),
            w.end());
    if (w.empty()) e.retired.clear();
  }

  // Interpreter ns per second that a resident kernel saves, and that a
  // compile of `self` to `tier` is expected to save (2x over the VM, 1.25x
  // over tier 1, until measured).
  static double saving(const TierEntry& e) {
    const double vm = e.ns_per_element(0), now = e.ns_per_element(e.tier);
    const double speedup = vm > 0 && now > 0 ? vm / now : 2;
    return e.recent_rate * std::max(0.0, speedup - 1);
  }
  static double expected_saving(const TierEntry& e, int tier) {
    return e.recent_rate * (e.tier == 0 ? (tier == 1 ? 0.5 : 0.6) : 0.2);
  }

  // The chunk count for compiling `self` at `tier` now; 0: wait (retired
  // code is still being freed); -1: it cannot fit (the tier is skipped for
  // this Composite). Evicts only if the compile's expected saving beats the
  // evicted code's by kEvictMargin (eager mode, with nothing measured:
  // coldest first), and only kernels never evicted before.
  int plan_chunks_locked(TierEntry& self, int tier, bool auto_mode) {
    const int b = backend(self, tier);
    const int n = static_cast<int>(self.vm->bytecode().code.size());
    if (chunks_for(b, n, 0) == 0) return -1;
    const double r = static_cast<double>(resident_locked());
    if (int c = chunks_for(b, n, r)) return c;
    const double pending = static_cast<double>(pending_locked());
    if (chunks_for(b, n, r - pending) > 0) return 0;
    std::vector<TierEntry*> ev;
    for (const auto& e : entries)
      if (e.get() != &self && !e->busy && !e->measuring && e->current && e->evictions == 0) ev.push_back(e.get());
    std::sort(ev.begin(), ev.end(), [](const TierEntry* x, const TierEntry* y) { return saving(*x) < saving(*y); });
    double freed = 0, lost = 0;
    size_t k = 0;
    for (; k < ev.size() && chunks_for(b, n, r - pending - freed) == 0; ++k) {
      freed += static_cast<double>(ev[k]->current->code_bytes());
      lost += saving(*ev[k]);
    }
    if (chunks_for(b, n, r - pending - freed) == 0) return -1;
    if (auto_mode && expected_saving(self, tier) <= kEvictMargin * lost) return -1;
    for (size_t i = 0; i < k; ++i) evict_locked(*ev[i]);
    return chunks_for(b, n, static_cast<double>(resident_locked()));
  }

  // Compiles (or loads from the disk cache) the plan's pieces. No lock
  // held. `total`: the largest resident + earlier pieces' code + measured
  // peak of a piece.
  std::shared_ptr<jit::JitKernel> build(const Plan& p, const JitConfig& cfg, CompositeStats& st, size_t& peak,
                                        bool& hit, size_t resident, size_t& total) {
    const interp::Bytecode& bc = p.vm->bytecode();
    const int n = static_cast<int>(bc.code.size());
    std::vector<jit::Piece> pieces;
    std::unique_ptr<jit::DiskCache> cache;
    if (cfg.cache)
      cache = std::make_unique<jit::DiskCache>(cfg.cache_dir.empty() ? jit::DiskCache::default_dir() : cfg.cache_dir,
                                               cfg.cache_max_bytes);
    const std::string cpu = cache ? jit::cpu_id() : "";
    hit = true;
    double secs = 0;
    size_t code_so_far = 0;
    // Uniform inputs at tier 2 only: every piece of a kernel must agree,
    // and tier 1 mixes direct and LLVM pieces.
    const bool one = p.e->one_element;
    const jit::KernelSpec spec{one, p.tier >= 2 ? p.uniform : std::vector<bool>{},
                               p.tier >= 2 ? p.summed : std::vector<bool>{}, p.chunks == 1 ? p.e->loop_carried : -1,
                               p.e->loop_until};
    for (int k = 0; k < p.chunks; ++k) {
      const int lo = static_cast<int>(int64_t(n) * k / p.chunks), hi = static_cast<int>(int64_t(n) * (k + 1) / p.chunks);
      // Tier 1's direct code is not cached: emitting it costs less than
      // looking a file up (docs/jit.md). Chunks it declines go to LLVM and
      // its cache as before.
      const bool direct = p.tier == 1 && !one && jit::direct_chunk(bc, lo, hi);
      const int b = direct ? kDirect : p.tier;
      const double ni = std::max(1, hi - lo);
      jit::CompileStats cs;
      std::string key;
      bool loaded = false;
      if (cache && !direct) {
        key = jit::cache_key(bc, lo, hi, p.tier, cpu, jit::llvm_version(), spec);
        if (auto obj = cache->get(key)) {
          try {
            pieces.push_back(jit::load_object(*obj, &cs, spec.loop_carried >= 0));
            loaded = true;
            std::lock_guard<std::mutex> g(mu);
            ++totals.cache_hits;
            model.raise(b, ni, double(cs.peak_bytes));
          } catch (const std::exception&) {
            // unusable entry: compile and overwrite it
          }
        }
        if (!loaded) {
          std::lock_guard<std::mutex> g(mu);
          ++totals.cache_misses;
        }
      }
      if (!loaded) {
        hit = false;
        pieces.push_back(jit::compile_chunk(bc, lo, hi, p.tier, &cs, cache != nullptr && !direct, spec));
        if (cache && !direct && !cs.object.empty() && !cache->put(key, cs.object)) {
          std::lock_guard<std::mutex> g(mu);
          ++totals.cache_write_failures;
        }
        // Recalibrate the per-tier time model (smoothed, within bounds): small
        // compiles correct the fixed part, large ones the per-instruction part.
        std::lock_guard<std::mutex> g(mu);
        const double t_us = (cs.cpu_seconds > 0 ? cs.cpu_seconds : cs.seconds) * 1e6;
        const double resid = t_us - (base_us[p.tier] + us_per_instr[p.tier] * ni);
        if (ni < 128)
          base_us[p.tier] = std::clamp(base_us[p.tier] + 0.3 * resid, min_base_us[p.tier], 50000.0);
        else
          us_per_instr[p.tier] = std::clamp(us_per_instr[p.tier] + 0.3 * resid / ni, min_us_per_instr[p.tier], 2000.0);
        model.observe(b, ni, double(cs.peak_bytes), double(cs.code_bytes));
      }
      secs += cs.seconds;
      peak = std::max(peak, cs.peak_bytes);
      total = std::max(total, resident + code_so_far + cs.peak_bytes);
      code_so_far += cs.code_bytes;
    }
    st.compile_seconds = secs;
    return std::make_shared<jit::JitKernel>(bc, std::move(pieces), p.tier, spec, p.vm);
  }

  // The tier a compile of e would go to next (> cfg.max_tier: none). An
  // evicted kernel returns straight to the best tier it had won.
  int next_tier(const TierEntry& e) const {
    int next = e.tier == 0 && e.best_tier > 0 ? e.best_tier : e.tier + 1;
    while (next <= cfg.max_tier && (e.no_retry[next] || e.skipped[next])) ++next;
    return next;
  }

  // The entry's sampling period (TierManager::kSettledSample): sparse once
  // compiled code runs that no measurement or compile will replace. `next`:
  // next_tier(e).
  void resample_locked(TierEntry& e, int next) const {
    const bool settled = !e.measuring && e.tier > 0 && next > cfg.max_tier;
    const uint32_t m = (settled ? TierManager::kSettledSample : TierManager::kSample) - 1;
    if (e.sample_mask.load(std::memory_order_relaxed) != m) e.sample_mask.store(m, std::memory_order_relaxed);
  }

  // Updates counters, ends measurements, frees retired code; returns the
  // best candidate for a compile, if any.
  std::optional<Plan> scan_locked() {
    const auto now = Clock::now();
    const double wall = std::max(1e-6, std::chrono::duration<double>(now - last_scan).count());
    last_scan = now;
    cands.clear();  // reused: the idle scan does not allocate
    for (const auto& sp : entries) {
      TierEntry& e = *sp;
      const uint64_t c = e.calls.load(), el = e.elements.load(), ns = e.ns.load();
      const uint64_t dns = ns - e.seen_ns, del = el - e.seen_elements;
      e.tier_ns[e.tier] += dns;
      e.tier_elements[e.tier] += del;
      e.seen_calls = c;
      e.seen_elements = el;
      e.seen_ns = ns;
      e.recent_rate = 0.5 * e.recent_rate + 0.5 * (double(dns) / wall);
      if (del > 0) {
        if (e.skip > 0) {
          --e.skip;
        } else if (e.measuring) {
          // A/B: record this interval for the kernel that ran it, then switch.
          const int sd = e.ab_side;
          if (e.ab_n[sd] < TierEntry::kAB) e.ab[sd][e.ab_n[sd]++] = double(dns) / double(del);
          e.ab_side = e.ab_n[1 - sd] < TierEntry::kAB ? 1 - sd : sd;
          e.owner->set_active(e.ab_side ? static_cast<const interp::ElemKernel*>(e.current.get()) : replaced(e));
        } else {
          e.push_window(double(dns) / double(del));
        }
      }
      free_retired_locked(e);
      if (e.measuring && e.ab_n[0] >= TierEntry::kAB && e.ab_n[1] >= TierEntry::kAB) {
        // Keep the new kernel only if it is faster per element than the one
        // it replaced (medians of interleaved intervals, so noise cannot decide).
        const double new_rate = median_of(e.ab[1], e.ab_n[1]), old_rate = median_of(e.ab[0], e.ab_n[0]);
        const int old_tier = e.previous ? e.previous->tier() : 0;
        e.measuring = false;
        if (new_rate >= old_rate) {
          e.no_retry[e.tier] = true;
          ++totals.rejected_slower;
          ++totals.tiers[e.tier].rejected_slower;
          e.owner->set_active(replaced(e));
          retire_locked(e, std::move(e.current));
          e.current = std::move(e.previous);
          e.tier = old_tier;
          e.nwin = e.wpos = 0;
          e.skip = 1;
        } else {
          e.owner->set_active(e.current.get());
          e.best_tier = std::max(e.best_tier, e.tier);
          e.nwin = e.wpos = 0;
          retire_locked(e, std::move(e.previous));
        }
        free_retired_locked(e);
      }
      const int next = next_tier(e);
      resample_locked(e, next);
      if (e.busy || e.measuring || cfg.mode != JitMode::Auto || e.vm->bytecode().code.empty()) continue;
      // A baseline first: the replaced kernel's median over a few intervals
      // (a lifetime average is skewed by the first, cold calls: on 1e5-element
      // calls it kept a tier-1 kernel 3x slower than the VM).
      if (e.nwin < kBaseWindows) continue;
      if (now < e.backoff_until || e.failures >= 4 || e.compiles >= kMaxCompiles) continue;
      if (next > cfg.max_tier) continue;
      const double n = static_cast<double>(e.vm->bytecode().code.size());
      const double chunks = std::ceil(n / kMaxChunk[next]);
      const double predicted_s = (base_us[next] * chunks + us_per_instr[next] * n) * 1e-6;
      const double spent_s = e.tier_ns[e.tier] * 1e-9;
      const double factor = cfg.hot_factor * (next == 2 ? 4 : 1) * e.penalty;
      cands.push_back({&e, next, spent_s / (factor * predicted_s)});
    }
    // Thresholds rise with the backlog: a candidate must clear 1 + backlog/4.
    size_t ready = 0;
    for (const Cand& c : cands) ready += c.score >= 1;
    queued = ready;
    const double bar = 1.0 + double(ready) / 4;
    const Cand* best = nullptr;
    for (const Cand& c : cands)
      if (c.score >= bar && (!best || c.e->recent_rate > best->e->recent_rate)) best = &c;
    if (!best) return std::nullopt;
    for (const auto& sp : entries)
      if (sp.get() == best->e) return Plan{sp, sp->vm, best->tier, 1, sp->summed, sp->uniform};
    return std::nullopt;
  }

  // Runs one plan: budget, compile, install. Called with `lk` held; unlocks
  // around the compile. False if the plan was skipped for the budget.
  bool run_plan(std::unique_lock<std::mutex>& lk, Plan p, bool measure) {
    // One compile at a time (eager attaches may come from several
    // threads), so its transient is the only one beside resident code.
    idle_cv.wait(lk, [&] { return !compiling; });
    TierEntry& e = *p.e;
    if (e.detached) return true;
    p.chunks = plan_chunks_locked(e, p.tier, measure);
    if (p.chunks < 0) {
      note_skip_locked(e, p.tier);
      queued = 0;  // rescanned next interval
      idle_cv.notify_all();
      return false;
    }
    if (p.chunks == 0) {
      // Waiting for retired code to be freed: try again in a while.
      e.backoff_until = Clock::now() + std::chrono::milliseconds(10);
      return true;
    }
    if (p.chunks > 1) ++totals.splits;
    ++totals.tiers[p.tier].attempted;
    e.busy = true;
    compiling = true;
    const JitConfig cfg_copy = cfg;
    const size_t resident = resident_locked();
    lk.unlock();
    std::shared_ptr<jit::JitKernel> k;
    std::string err;
    size_t peak = 0, total = resident;
    bool hit = false;
    CompositeStats cs;
    try {
      k = build(p, cfg_copy, cs, peak, hit, resident, total);
    } catch (const std::bad_alloc&) {
      err = "out of memory while compiling";
    } catch (const std::exception& ex) {
      err = ex.what();
    }
    lk.lock();
    e.busy = false;
    compiling = false;
    totals.peak_bytes = std::max(totals.peak_bytes, total);
    if (total > cfg.memory_budget) ++totals.over_budget;
    if (!k) {
      ++e.failures;
      ++totals.failures;
      ++totals.tiers[p.tier].failed;
      e.st.failures = e.failures;
      e.st.last_error = err;
      // Randomized exponential backoff; after 4 failures stop trying.
      const double ms = 50.0 * std::pow(2.0, e.failures) * (1 + std::uniform_real_distribution<>(0, 1)(rng));
      e.backoff_until = Clock::now() + std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
    } else if (!e.detached) {
      ++totals.compiles;
      ++totals.tiers[p.tier].compiled;
      ++e.compiles;
      e.st.compiles = e.compiles;
      e.st.compile_seconds += cs.compile_seconds;
      e.st.compile_peak_bytes = std::max(e.st.compile_peak_bytes, peak);
      e.st.chunks = p.chunks;
      e.st.cache_hit = hit;
      install_locked(e, std::move(k), measure);
      if (!measure) e.best_tier = e.tier;
    }
    idle_cv.notify_all();
    return true;
  }

  void loop() {
    std::unique_lock<std::mutex> lk(mu);
    while (!stop) {
      cv.wait_for(lk, std::chrono::milliseconds(2));
      if (stop) break;
      auto p = scan_locked();
      if (p) run_plan(lk, std::move(*p), true);
      else idle_cv.notify_all();
    }
  }
#endif
};

TierManager::TierManager() : impl_(std::make_unique<Impl>()) {}

TierManager::~TierManager() {
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
}

TierManager& TierManager::instance() {
  // Leaked: Programs destroyed during static destruction still detach.
  static TierManager* m = new TierManager();
  return *m;
}

void TierManager::configure(const JitConfig& c) {
  std::lock_guard<std::mutex> g(impl_->mu);
  impl_->cfg = c;
  for (auto& e : impl_->entries) {
    e->failures = 0;
    e->backoff_until = {};
    std::fill(std::begin(e->skipped), std::end(e->skipped), false);
    e->st.skipped.clear();
  }
  // Skips and notes describe the old budget; measured fixed costs stay.
  std::fill(std::begin(impl_->noted), std::end(impl_->noted), false);
  impl_->totals.notes.clear();
  // The peak is reported against the budget: a new budget starts it anew.
  impl_->totals.peak_bytes = impl_->resident_locked();
}

JitConfig TierManager::config() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  return impl_->cfg;
}

void TierManager::count_timed(TierEntry* e, int64_t elements, int64_t ns, uint32_t period) {
  e->calls.fetch_add(period, std::memory_order_relaxed);
  e->elements.fetch_add(static_cast<uint64_t>(elements) * period, std::memory_order_relaxed);
  e->ns.fetch_add(static_cast<uint64_t>(ns) * period, std::memory_order_relaxed);
}

const std::atomic<uint32_t>* TierManager::sample_mask(const TierEntry* e) { return e ? &e->sample_mask : nullptr; }

std::shared_ptr<RunEpoch> TierManager::register_run_epoch() {
  auto r = std::make_shared<RunEpoch>();
  std::lock_guard<std::mutex> g(impl_->epochs_mu);
  auto& v = impl_->epochs;
  v.erase(std::remove_if(v.begin(), v.end(), [](const auto& w) { return w.expired(); }), v.end());
  v.push_back(r);
  return r;
}

#ifdef EMBER_WITH_JIT
// The uniform inputs a kernel is compiled with: none that is also an output
// (outputs are scattered from a whole block of lanes); empty when none is left.
static std::vector<bool> compiled_uniform(const interp::Bytecode& bc, std::vector<bool> u) {
  for (const interp::OutputRef& o : bc.outputs)
    if (o.slot >= bc.num_consts() && o.slot < bc.first_reg() && size_t(o.slot - bc.num_consts()) < u.size())
      u[o.slot - bc.num_consts()] = false;
  if (std::find(u.begin(), u.end(), true) == u.end()) u.clear();
  return u;
}
#endif

std::shared_ptr<TierEntry> TierManager::attach(const SwapTarget& k, std::shared_ptr<const interp::Interpreted> vm) {
#ifndef EMBER_WITH_JIT
  return nullptr;
#else
  std::unique_lock<std::mutex> lk(impl_->mu);
  if (impl_->cfg.mode == JitMode::Off) return nullptr;
  auto e = std::make_shared<TierEntry>();
  e->owner = &k;
  e->vm = std::move(vm);
  e->st.ops = static_cast<int>(k.composite().nodes.size());
  e->st.instructions = static_cast<int>(e->vm->bytecode().code.size());
  e->st.name = "composite" + std::to_string(impl_->entries.size());
  const auto& bc = e->vm->bytecode();
  e->one_element = k.one_element();
  if (e->one_element && k.loop_carried() >= 0 && jit::loop_compilable(bc, k.loop_carried(), k.loop_until())) {
    e->loop_carried = k.loop_carried();
    e->loop_until = k.loop_until();
  }
  e->uniform = compiled_uniform(bc, k.uniform_inputs());
  e->direct_ok = !e->one_element && !bc.code.empty() && jit::direct_chunk(bc, 0, static_cast<int>(bc.code.size()));
  impl_->entries.push_back(e);
  if (impl_->cfg.mode == JitMode::Eager) {
    if (jit::available() && !bc.code.empty()) {
      // Before the first call: straight to the top tier, no measurement; a
      // lower one if the budget cannot hold it.
      for (int t = impl_->cfg.max_tier; t >= 1; --t)
        if (impl_->run_plan(lk, Impl::Plan{e, e->vm, t, 1, {}, e->uniform}, false)) break;
    }
  } else if (!impl_->worker.joinable()) {
    impl_->worker = std::thread([this] { impl_->loop(); });
  }
  return e;
#endif
}

void TierManager::set_summed(const std::shared_ptr<TierEntry>& e, std::vector<bool> summed,
                             const std::vector<bool>& row_uniform) {
#ifdef EMBER_WITH_JIT
  if (!e) return;
  std::unique_lock<std::mutex> lk(impl_->mu);
  const interp::Bytecode& bc = e->vm->bytecode();
  std::vector<bool> uniform = e->uniform;
  if (!row_uniform.empty()) {
    uniform.resize(bc.inputs.size(), false);
    for (size_t i = 0; i < uniform.size() && i < row_uniform.size(); ++i) uniform[i] = uniform[i] || row_uniform[i];
    uniform = compiled_uniform(bc, std::move(uniform));
  }
  const std::vector<bool> can = jit::summable_outputs(bc);
  bool any = false;
  summed.resize(bc.outputs.size(), false);
  for (size_t j = 0; j < summed.size(); ++j) any |= summed[j] = summed[j] && can[j];
  if (e->one_element || jit::lanes(2) != 8 || !any) summed.clear();
  if (summed.empty()) uniform = e->uniform;  // column inputs broadcast only in row calls
  if (summed == e->summed && uniform == e->uniform) return;
  e->summed = std::move(summed);
  e->uniform = std::move(uniform);
  if (impl_->cfg.mode == JitMode::Eager && jit::available() && e->tier >= 2 && !e->detached)
    impl_->run_plan(lk, Impl::Plan{e, e->vm, e->tier, 1, e->summed, e->uniform}, false);
#else
  (void)e;
  (void)summed;
  (void)row_uniform;
#endif
}

void TierManager::detach(const std::shared_ptr<TierEntry>& e) {
  if (!e) return;
  std::unique_lock<std::mutex> lk(impl_->mu);
  // A compile for this entry may be running: it checks `detached` before installing.
  impl_->idle_cv.wait(lk, [&] { return !e->busy; });
  e->detached = true;
  auto& v = impl_->entries;
  v.erase(std::remove(v.begin(), v.end(), e), v.end());
#ifdef EMBER_WITH_JIT
  // The owning Program is being destroyed: no call can be inside its code.
  e->current.reset();
  e->previous.reset();
  e->retired.clear();
  e->waits.clear();
#endif
}

void TierManager::quiesce() {
  std::unique_lock<std::mutex> lk(impl_->mu);
  impl_->cv.notify_all();
  impl_->idle_cv.wait_for(lk, std::chrono::seconds(60), [&] { return !impl_->compiling && impl_->queued == 0; });
}

size_t TierManager::predicted_peak(const interp::Bytecode& bc, int tier) const {
  std::lock_guard<std::mutex> g(impl_->mu);
  const int n = static_cast<int>(bc.code.size());
#ifdef EMBER_WITH_JIT
  const bool direct = tier == 1 && n > 0 && jit::direct_chunk(bc, 0, n);
#else
  const bool direct = false;
#endif
  return static_cast<size_t>(impl_->model.chunk_peak(direct ? kDirect : tier, n));
}

JitStats TierManager::stats() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  JitStats s = impl_->totals;
  const char* names[3] = {"direct", "llvm-tier1", "llvm-tier2"};
  for (int b = 0; b < 3; ++b) {
    s.backends[b].name = names[b];
    s.backends[b].fixed_bytes = static_cast<size_t>(impl_->model.fixed[b]);
    s.backends[b].fixed_measured = impl_->model.measured[b];
    s.backends[b].bytes_per_instruction = impl_->model.per_instr[b];
  }
  s.budget = impl_->cfg.memory_budget;
  s.resident_code_bytes = impl_->resident_locked();
  s.peak_bytes = std::max(s.peak_bytes, s.resident_code_bytes);
  for (const auto& e : impl_->entries) {
    CompositeStats c = e->st;
    c.tier = e->tier;
    c.calls = e->calls.load();
    c.elements = e->elements.load();
    for (int t = 0; t < 3; ++t) {
      c.seconds[t] = e->tier_ns[t] * 1e-9;
      c.ns_per_element[t] = e->tier_elements[t] ? double(e->tier_ns[t]) / double(e->tier_elements[t]) : 0;
    }
#ifdef EMBER_WITH_JIT
    c.code_bytes = e->current ? e->current->code_bytes() : 0;
#endif
    s.composites.push_back(std::move(c));
  }
  return s;
}

}  // namespace ember
