// The only place that names LLVM types outside jit/*.cpp: a small
// KaleidoscopeJIT-style wrapper around LLJIT (Create, addModule, lookup),
// plus object-level entry points for the disk cache. Internal to jit/.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Target/TargetMachine.h>

namespace ember::jit {

class OrcJit {
 public:
  static llvm::Expected<std::unique_ptr<OrcJit>> Create();

  // Optimizes M with the tier's pipeline and compiles it to an object file.
  // opt_s / codegen_s (if given) receive the seconds spent in each phase.
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> compile(llvm::Module& M, int tier, double* opt_s = nullptr,
                                                              double* codegen_s = nullptr);
  // Each module/object gets its own JITDylib (linking against the main one
  // for the math library), so every chunk can use the same symbol name and
  // removing the dylib frees exactly its code.
  llvm::Expected<llvm::orc::JITDylib*> addModule(std::unique_ptr<llvm::Module> M,
                                                 std::unique_ptr<llvm::LLVMContext> ctx, int tier);
  // Links an object file (freshly compiled or from the disk cache).
  llvm::Expected<llvm::orc::JITDylib*> addObject(std::unique_ptr<llvm::MemoryBuffer> obj);
  llvm::Expected<llvm::orc::ExecutorAddr> lookup(llvm::orc::JITDylib& jd, llvm::StringRef name);
  llvm::Error remove(llvm::orc::JITDylib& jd);

  const std::string& triple() const { return triple_; }
  // CPU name + feature string: part of the disk cache key.
  const std::string& cpuId() const { return cpu_id_; }
  // Bytes of code and data linked by the most recent addObject.
  size_t lastLinkedBytes() const { return last_linked_.load(); }

 private:
  OrcJit() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::unique_ptr<llvm::TargetMachine> tm_[3];  // per tier (index 1 and 2 used)
  llvm::DataLayout dl_{""};
  std::string triple_, cpu_id_;
  std::atomic<size_t> last_linked_{0};
  uint64_t next_dylib_ = 0;
};

}  // namespace ember::jit
