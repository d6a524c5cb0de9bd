#include "jit/orc.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include <llvm/ExecutionEngine/JITLink/JITLink.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/SmallVectorMemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include "interp/config.hpp"
#include "interp/math/math.hpp"
#include "jit/runtime.hpp"

namespace ember::jit {

using namespace llvm;
using namespace llvm::orc;

namespace {

// Counts the bytes JITLink allocates for each linked object (code + data).
class CodeSizePlugin : public ObjectLinkingLayer::Plugin {
 public:
  explicit CodeSizePlugin(std::atomic<size_t>& out) : out_(out) {}
  void modifyPassConfig(MaterializationResponsibility&, jitlink::LinkGraph&,
                        jitlink::PassConfiguration& config) override {
    config.PostAllocationPasses.push_back([this](jitlink::LinkGraph& g) {
      size_t n = 0;
      for (auto* b : g.blocks()) n += b->getSize();
      out_.store(n);
      return Error::success();
    });
  }
  Error notifyFailed(MaterializationResponsibility&) override { return Error::success(); }
  Error notifyRemovingResources(JITDylib&, ResourceKey) override { return Error::success(); }
  void notifyTransferringResources(JITDylib&, ResourceKey, ResourceKey) override {}

 private:
  std::atomic<size_t>& out_;
};

// Diagnosis (EMBER_JIT_PERF_MAP=1): each linked function in perf's map
// format, so `perf report` names samples in compiled code.
class PerfMapPlugin : public ObjectLinkingLayer::Plugin {
 public:
  void modifyPassConfig(MaterializationResponsibility&, jitlink::LinkGraph&,
                        jitlink::PassConfiguration& config) override {
    config.PostFixupPasses.push_back([](jitlink::LinkGraph& g) {
      static std::mutex mu;
      std::lock_guard<std::mutex> lock(mu);
      static FILE* f = std::fopen(("/tmp/perf-" + std::to_string(::getpid()) + ".map").c_str(), "a");
      if (!f) return Error::success();
      for (auto* s : g.defined_symbols())
        if (s->isCallable() && s->hasName())
          std::fprintf(f, "%llx %llx %s\n", static_cast<unsigned long long>(s->getAddress().getValue()),
                       static_cast<unsigned long long>(s->getSize()), s->getName().str().c_str());
      std::fflush(f);
      return Error::success();
    });
  }
  Error notifyFailed(MaterializationResponsibility&) override { return Error::success(); }
  Error notifyRemovingResources(JITDylib&, ResourceKey) override { return Error::success(); }
  void notifyTransferringResources(JITDylib&, ResourceKey, ResourceKey) override {}
};

// Tuning override of a tier's codegen level (0-3) from the environment.
CodeGenOptLevel env_level(const std::optional<std::string>& v, CodeGenOptLevel dflt) {
  const char* e = v ? v->c_str() : nullptr;
  if (!e || *e < '0' || *e > '3') return dflt;
  return static_cast<CodeGenOptLevel>(*e - '0');
}

}  // namespace

Expected<std::unique_ptr<OrcJit>> OrcJit::Create() {
  static std::once_flag once;
  std::call_once(once, [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    // Tier 2 codegen passes that cost compile time for no measured speed
    // (docs/jit.md): Loop Strength Reduction with its IVUsers and freeze
    // canonicalization (~25 %; these are plain counted loops), and the
    // machine and post-RA schedulers (~15 %; the out-of-order core
    // schedules these loops as well). Tier 1 (O0) runs none of them. They
    // are given as parsed options: the schedulers only obey an option that
    // occurred. An option this LLVM lacks is skipped (parsing would exit).
    static std::vector<std::string> words{"ember"};
    auto flag = [](const char* name, const char* arg) {
      if (cl::getRegisteredOptions().count(name)) words.emplace_back(arg);
    };
    const Config& env = config();
    if (!env.jit_lsr) flag("disable-lsr", "-disable-lsr");
    // Tier 2 selects with FastISel (SelectionDAG only for what FastISel
    // cannot select: vector selects) and skips Machine CSE and CodeGenPrepare:
    // 42 -> 31 µs/op of compile CPU for the same steady-state speed; greedy
    // allocation and the other O2 machine passes are what make tier 2 beat
    // tier 1 (docs/jit.md). Tier 1 (O0) selects with FastISel anyway and runs
    // neither pass. EMBER_JIT_T2_SDAG=1: SelectionDAG, Machine CSE, CGP.
    if (!env.jit_t2_sdag) {
      flag("fast-isel", "-fast-isel");
      flag("disable-machine-cse", "-disable-machine-cse");
      flag("disable-cgp", "-disable-cgp");
    }
    if (!env.jit_sched) {
      flag("enable-misched", "-enable-misched=false");
      flag("post-RA-scheduler", "-post-RA-scheduler=false");
    }
    // Diagnosis only: LLVM's own options, e.g. "-fast-isel-abort=1".
    if (env.jit_llvm_args) {
      for (const char* p = env.jit_llvm_args->c_str(); *p;) {
        while (*p == ' ') ++p;
        const char* q = p;
        while (*q && *q != ' ') ++q;
        if (q > p) words.emplace_back(p, q);
        p = q;
      }
    }
    std::vector<const char*> argv;
    for (const auto& w : words) argv.push_back(w.c_str());
    if (argv.size() > 1) cl::ParseCommandLineOptions(static_cast<int>(argv.size()), argv.data());
  });
  std::unique_ptr<OrcJit> self(new OrcJit());
  auto jtmb = JITTargetMachineBuilder::detectHost();
  if (!jtmb) return jtmb.takeError();
  // Small code model: JITLink builds PLT stubs and GOT entries for far
  // symbols, and FastISel can then select calls itself (with the large
  // model every call fell back to SelectionDAG).
  if (!config().jit_large_cm) jtmb->setCodeModel(CodeModel::Small);
  // PIC: tier 1 loads vector constants from globals (codegen.cpp), and JIT
  // memory is not in the low 2 GB that absolute 32-bit addresses need.
  jtmb->setRelocationModel(Reloc::PIC_);
  // Tiers agree to the bit only without contraction (docs/fp-policy.md).
  jtmb->getOptions().AllowFPOpFusion = FPOpFusion::Strict;
  jtmb->getOptions().UnsafeFPMath = false;
  jtmb->getOptions().NoInfsFPMath = false;
  jtmb->getOptions().NoNaNsFPMath = false;
  // Tier 1: no IR passes and O0 code generation (FastISel, fast register
  // allocation): the IR is already vectorized, so this is cheap and fast.
  jtmb->setCodeGenOptLevel(env_level(config().jit_t1_cg, CodeGenOptLevel::None));
  auto t1 = jtmb->createTargetMachine();
  if (!t1) return t1.takeError();
  self->tm_[1] = std::move(*t1);
  jtmb->setCodeGenOptLevel(env_level(config().jit_t2_cg, CodeGenOptLevel::Default));
  auto t2 = jtmb->createTargetMachine();
  if (!t2) return t2.takeError();
  self->tm_[2] = std::move(*t2);
  self->dl_ = self->tm_[2]->createDataLayout();
  self->triple_ = jtmb->getTargetTriple().str();
  self->cpu_id_ = jtmb->getCPU();
  for (const auto& f : jtmb->getFeatures().getFeatures()) self->cpu_id_ += "," + f;

  std::atomic<size_t>* linked = &self->last_linked_;
  auto j = LLJITBuilder()
               .setJITTargetMachineBuilder(std::move(*jtmb))
               .setObjectLinkingLayerCreator([linked](ExecutionSession& es, const Triple&) {
                 auto l = std::make_unique<ObjectLinkingLayer>(es);
                 l->addPlugin(std::make_unique<CodeSizePlugin>(*linked));
                 if (config().jit_perf_map) l->addPlugin(std::make_unique<PerfMapPlugin>());
                 return l;
               })
               .create();
  if (!j) return j.takeError();
  self->jit_ = std::move(*j);

  // The math library and runtime helpers, by absolute address: JIT code
  // runs the very functions the interpreter runs.
  auto& jd = self->jit_->getMainJITDylib();
  SymbolMap syms;
  auto add = [&](const char* name, auto* fn) {
    syms[self->jit_->mangleAndIntern(name)] = {ExecutorAddr::fromPtr(reinterpret_cast<void*>(fn)),
                                               JITSymbolFlags::Exported | JITSymbolFlags::Callable};
  };
  for (const math::Entry& e : math::kEntries) add(("ember_math_" + std::string(e.name)).c_str(), e.address());
  add("ember_math_logistic", &ember_math_logistic);
  add("ember_math_sincos", &ember_math_sincos);
  add("ember_math_pow_base", &ember_math_pow_base);
  add("ember_jit_ipow", &ember_jit_ipow);
  add("fmod", static_cast<double (*)(double, double)>(&::fmod));
  add("fmodf", static_cast<float (*)(float, float)>(&::fmodf));
  if (auto err = jd.define(absoluteSymbols(std::move(syms)))) return std::move(err);
  // memset/memcpy and other libcalls the backend may emit.
  auto gen = DynamicLibrarySearchGenerator::GetForCurrentProcess(self->dl_.getGlobalPrefix());
  if (!gen) return gen.takeError();
  jd.addGenerator(std::move(*gen));
  return self;
}

Expected<std::unique_ptr<MemoryBuffer>> OrcJit::compile(Module& m, int tier, double* opt_s, double* codegen_s) {
  using clk = std::chrono::steady_clock;
  const auto t0 = clk::now();
  TargetMachine& tm = *tm_[tier >= 2 ? 2 : 1];
  m.setDataLayout(dl_);
  m.setTargetTriple(triple_);
  // Tier 2 runs no IR passes by default: the IR is already vector code with
  // each value loaded once per loop, and SelectionDAG's own combining and
  // CSE left nothing measurable for EarlyCSE + InstCombine + SimplifyCFG
  // (they cost 8 % of tier 2's compile time). EMBER_JIT_T2_PASSES=1 runs
  // them, EMBER_JIT_T2_O2=1 the O2 pipeline (vectorizers off).
  static const bool t2_passes = config().jit_t2_passes || config().jit_t2_o2;
  if (tier >= 2 && t2_passes) {
    FunctionPassManager fpm;
    fpm.addPass(EarlyCSEPass());
    fpm.addPass(InstCombinePass());
    fpm.addPass(SimplifyCFGPass());
    LoopAnalysisManager lam;
    FunctionAnalysisManager fam;
    CGSCCAnalysisManager cgam;
    ModuleAnalysisManager mam;
    PipelineTuningOptions pto;
    pto.LoopVectorization = false;
    pto.SLPVectorization = false;
    PassBuilder pb(&tm, pto);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    ModulePassManager mpm;
    if (config().jit_t2_o2) {
      mpm = pb.buildPerModuleDefaultPipeline(OptimizationLevel::O2);
    } else {
      mpm.addPass(createModuleToFunctionPassAdaptor(std::move(fpm)));
    }
    mpm.run(m, mam);
  }
  const auto t1 = clk::now();
  SmallVector<char, 0> buf;
  {
    raw_svector_ostream os(buf);
    legacy::PassManager pm;
    if (tm.addPassesToEmitFile(pm, os, nullptr, CodeGenFileType::ObjectFile))
      return make_error<StringError>("target cannot emit object files", inconvertibleErrorCode());
    pm.run(m);
  }
  if (opt_s) *opt_s = std::chrono::duration<double>(t1 - t0).count();
  if (codegen_s) *codegen_s = std::chrono::duration<double>(clk::now() - t1).count();
  return std::make_unique<SmallVectorMemoryBuffer>(std::move(buf), m.getName(), false);
}

Expected<JITDylib*> OrcJit::addObject(std::unique_ptr<MemoryBuffer> obj) {
  auto jd = jit_->createJITDylib("ember" + std::to_string(next_dylib_++));
  if (!jd) return jd.takeError();
  jd->addToLinkOrder(jit_->getMainJITDylib());
  if (auto err = jit_->addObjectFile(*jd, std::move(obj))) {
    consumeError(remove(*jd));
    return std::move(err);
  }
  return &*jd;
}

Error OrcJit::remove(JITDylib& jd) { return jit_->getExecutionSession().removeJITDylib(jd); }

Expected<JITDylib*> OrcJit::addModule(std::unique_ptr<Module> m, std::unique_ptr<LLVMContext> ctx,
                                              int tier) {
  auto obj = compile(*m, tier);
  if (!obj) return obj.takeError();
  m.reset();
  ctx.reset();
  return addObject(std::move(*obj));
}

Expected<ExecutorAddr> OrcJit::lookup(JITDylib& jd, StringRef name) { return jit_->lookup(jd, name); }

}  // namespace ember::jit
