// A ScalarLoop's body compiled with its loop: the iterations call the
// body's chunk in one function, whose inliner then keeps the carried values
// in registers instead of a call and a table swap per iteration
// (interp/scalar_loop.cpp: run_one_with).
#include <llvm/IR/IRBuilder.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/GVN.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>

#include "jit/codegen.hpp"

namespace ember::jit {

using namespace llvm;

bool loop_compilable(const interp::Bytecode& bc, int carried, bool until) {
  const auto plain = [](DType t) { return t == DType::Float64 || t == DType::Int64; };
  const size_t nout = static_cast<size_t>(carried) + (until ? 1 : 0);
  if (carried < 0 || bc.outputs.size() != nout || bc.inputs.size() < static_cast<size_t>(carried)) return false;
  for (DType t : bc.inputs)
    if (!plain(t)) return false;
  // Each update the chunk stores itself (one_element_stores), in its carried value's dtype.
  const std::vector<int8_t> kind = one_element_stores(bc);
  for (int j = 0; j < carried; ++j)
    if (kind[j] == 0 || bc.outputs[j].dtype != bc.inputs[j]) return false;
  // The condition in a register cell (0 or 1 in the I64 class).
  return !until || (bc.outputs[carried].dtype == DType::Bool && bc.outputs[carried].slot >= bc.first_reg());
}

void add_loop(Module& m, const interp::Bytecode& bc, const std::string& chunk, const std::string& name, int carried,
              bool until) {
  LLVMContext& C = m.getContext();
  Function* body = m.getFunction(chunk);
  body->addFnAttr(Attribute::AlwaysInline);
  Type* s64 = Type::getInt64Ty(C);
  Type* ptr = PointerType::get(C, 0);
  auto* fty = FunctionType::get(Type::getVoidTy(C), {s64, ptr, ptr}, false);
  Function* F = Function::Create(fty, Function::ExternalLinkage, name, m);
  F->addFnAttr(Attribute::NoUnwind);
  F->addParamAttr(1, Attribute::NoAlias);
  auto a = F->arg_begin();
  Value* steps = &*a++;
  Value* scratch = &*a++;
  Value* ops = &*a++;
  IRBuilder<> B(BasicBlock::Create(C, "entry", F));
  const uint64_t ni = bc.inputs.size(), nout = bc.outputs.size();
  // The body's table (the StridedPtr layout of jit.hpp's one-element ABI):
  // its inputs and outputs in local cells the inliner turns into values.
  auto* tbl = B.CreateAlloca(ArrayType::get(ptr, kOneElementInStride * (ni + nout)));
  auto* cin = B.CreateAlloca(ArrayType::get(s64, ni));
  auto* cout = B.CreateAlloca(ArrayType::get(s64, nout));
  auto entry = [&](Value* base, uint64_t k) { return B.CreateConstGEP1_64(ptr, base, k * kOneElementInStride); };
  for (uint64_t k = 0; k < ni; ++k) {
    Value* from = B.CreateAlignedLoad(ptr, entry(ops, k), Align(8));
    Value* cell = B.CreateConstGEP1_64(s64, cin, k);
    B.CreateAlignedStore(B.CreateAlignedLoad(s64, from, Align(8)), cell, Align(8));
    B.CreateAlignedStore(cell, entry(tbl, k), Align(8));
  }
  for (uint64_t j = 0; j < nout; ++j) B.CreateAlignedStore(B.CreateConstGEP1_64(s64, cout, j), entry(tbl, ni + j), Align(8));
  BasicBlock* entry_bb = B.GetInsertBlock();
  BasicBlock* loop = BasicBlock::Create(C, "loop", F);
  BasicBlock* exit = BasicBlock::Create(C, "exit", F);
  B.CreateBr(loop);
  B.SetInsertPoint(loop);
  PHINode* iter = B.CreatePHI(s64, 2);
  iter->addIncoming(ConstantInt::get(s64, 1), entry_bb);
  B.CreateCall(body, {ConstantInt::get(s64, 1), scratch, tbl});
  // As run_one_with: every update from this iteration's values, then the condition.
  for (int j = 0; j < carried; ++j)
    B.CreateAlignedStore(B.CreateAlignedLoad(s64, B.CreateConstGEP1_64(s64, cout, j), Align(8)),
                         B.CreateConstGEP1_64(s64, cin, j), Align(8));
  Value* stop = ConstantInt::getFalse(C);
  if (until) {
    const uint64_t off = static_cast<uint64_t>(cell_index(bc, bc.outputs[carried].slot) * layout(2, true).cell_bytes);
    Value* c = B.CreateAlignedLoad(s64, B.CreateConstGEP1_64(Type::getInt8Ty(C), scratch, off), Align(8));
    stop = B.CreateICmpNE(c, ConstantInt::get(s64, 0));
  }
  Value* next = B.CreateAdd(iter, ConstantInt::get(s64, 1));
  iter->addIncoming(next, loop);
  B.CreateCondBr(B.CreateOr(stop, B.CreateICmpSGE(iter, steps)), exit, loop);
  B.SetInsertPoint(exit);
  // The last iteration's updates and condition, to the caller's outputs.
  for (int j = 0; j < carried; ++j) {
    Value* to = B.CreateAlignedLoad(ptr, entry(ops, ni + j), Align(8));
    B.CreateAlignedStore(B.CreateAlignedLoad(s64, B.CreateConstGEP1_64(s64, cin, j), Align(8)), to, Align(8));
  }
  if (until) {
    Value* to = B.CreateAlignedLoad(ptr, entry(ops, ni + carried), Align(8));
    B.CreateStore(B.CreateZExt(stop, Type::getInt8Ty(C)), to);
  }
  B.CreateRetVoid();
  // Tier 2 runs no IR passes (orc.cpp): here the body is inlined and the
  // table and cells promoted to values, or each iteration would still go
  // through memory as a call does.
  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PassBuilder pb;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  FunctionPassManager fpm;
  fpm.addPass(SROAPass(SROAOptions::ModifyCFG));
  fpm.addPass(EarlyCSEPass(true));
  fpm.addPass(SROAPass(SROAOptions::ModifyCFG));
  fpm.addPass(InstCombinePass());
  fpm.addPass(GVNPass());  // the updates' reloads, as the values stored
  fpm.addPass(SimplifyCFGPass());
  ModulePassManager mpm;
  mpm.addPass(AlwaysInlinerPass());
  mpm.addPass(createModuleToFunctionPassAdaptor(std::move(fpm)));
  mpm.run(m, mam);
}

}  // namespace ember::jit
