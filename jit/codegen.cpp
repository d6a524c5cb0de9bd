#include "jit/codegen.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include "interp/config.hpp"
#include "jit/jit.hpp"

namespace ember::jit {

using namespace llvm;
using interp::Bytecode;
using interp::Cls;
using interp::Instr;

// div_ops * divs > n - divs, without the product: on AVX-512 hosts div_ops
// is INT64_MAX / 4, and the product overflowed from five divisions on.
bool divider_bounds(int divs, int n, int64_t div_ops) { return divs > 0 && div_ops > (n - divs) / divs; }

namespace {

// The JIT's target is this host: FMA is there or not for every chunk.
bool host_has_fma() { return __builtin_cpu_supports("fma"); }

// Other instructions per division below which a loop takes fast_div
// (EMBER_JIT_DIV_OPS). An AVX2 host runs 8 lanes as two vectors for every
// instruction, division included: there one division among 12 other ops
// measured 4 % slower with the FMA path, two among 12 10-15 % faster. On
// an AVX-512 host the 8 lanes are one vector, and the 512-bit divider (one
// vdivpd per 16 cycles on Intel's server cores) bounded even a loop of one
// division among 8 ops: every loop takes it (truncated normal 0.64 to 0.52 us).
int64_t div_ops() {
  static const int64_t v = [] {
    const auto& e = config().jit_div_ops;
    if (e && !e->empty() && *e != "auto") return static_cast<int64_t>(std::atoll(e->c_str()));
    return __builtin_cpu_supports("avx512f") ? INT64_MAX / 4 : int64_t{7};
  }();
  return v;
}

class Gen {
 public:
  Gen(LLVMContext& c, Module& m, const Bytecode& bc, const Layout& l, const std::vector<bool>& uniform, bool isolate,
      bool const_mem, const std::vector<bool>& summed, const std::vector<bool>& packed,
      const std::vector<bool>& packed_out)
      : C(c),
        M(m),
        B(c),
        bc_(bc),
        W(l.lanes),
        cell_bytes_(static_cast<uint64_t>(l.cell_bytes)),
        align_(std::min<uint64_t>(kCellAlign, cell_bytes_)),
        uniform_(uniform),
        summed_(summed),
        packed_(packed),
        packed_out_(packed_out),
        isolate_(isolate),
        const_mem_(const_mem) {
    const auto ec = ElementCount::getFixed(W);
    f64 = VectorType::get(Type::getDoubleTy(C), ec);
    f32 = VectorType::get(Type::getFloatTy(C), ec);
    i64 = VectorType::get(Type::getInt64Ty(C), ec);
    s64 = Type::getInt64Ty(C);
    i8 = Type::getInt8Ty(C);
    ptr = PointerType::get(C, 0);
  }

  void run(int lo, int hi, const std::string& name, int max_run) {
    auto* fty = FunctionType::get(Type::getVoidTy(C), {s64, ptr, ptr}, false);
    F = Function::Create(fty, Function::ExternalLinkage, name, M);
    F->addFnAttr(Attribute::NoUnwind);
    F->addFnAttr(Attribute::NoRecurse);
    auto a = F->arg_begin();
    m_ = &*a++;
    scratch_ = &*a++;
    Value* in = &*a++;
    // Generated code writes only register and temporary cells, never an
    // input (in place or gathered), so scratch stays noalias.
    F->addParamAttr(1, Attribute::NoAlias);
    F->addParamAttr(2, Attribute::NoAlias);
    F->addParamAttr(2, Attribute::ReadOnly);
    B.SetInsertPoint(BasicBlock::Create(C, "entry", F));
    // Loops count bytes of cell (8W per group): no multiply per iteration.
    end_ = B.CreateMul(B.CreateUDiv(B.CreateAdd(m_, ConstantInt::get(s64, W - 1)), ConstantInt::get(s64, W)),
                       ConstantInt::get(s64, 8 * W));
    compute_last_reads();
    // Each direct output's lane base, if this chunk holds its final definition.
    out_base_.assign(bc_.outputs.size(), nullptr);
    for (int k = lo; k < hi; ++k)
      for (int j : out_writes_[k])
        if (!out_base_[j])
          out_base_[j] = B.CreateAlignedLoad(
              ptr, B.CreateConstGEP1_64(ptr, in, static_cast<uint64_t>(bc_.inputs.size()) + j), Align(8));
    // Each input's lane base (jit.hpp), loaded once for the chunk.
    in_base_.assign(bc_.inputs.size(), nullptr);
    for (int k = lo; k < hi; ++k)
      for (int32_t s : {bc_.code[k].a, bc_.code[k].b, bc_.code[k].c})
        if (is_input(s) && !in_base_[s - bc_.num_consts()]) {
          const int j = s - bc_.num_consts();
          // One-element chunks read the caller's StridedPtr array (jit.hpp).
          const uint64_t at = static_cast<uint64_t>(j) * (W == 1 ? kOneElementInStride : 1);
          in_base_[j] = B.CreateAlignedLoad(ptr, B.CreateConstGEP1_64(ptr, in, at), Align(8));
        }
    // Runs of inline instructions become one fused loop over the block's
    // groups of W lanes; math calls work on whole blocks in scratch.
    // One-element layout: adjacent calls of one opcode, none reading what
    // another makes, become one call (group_math_calls puts them together).
    std::vector<std::pair<int, int>> runs;  // [k, e); a math op at k: calls of [k, e)
    for (int k = lo; k < hi;) {
      int e = k + 1;
      if (!is_math(bc_.code[k]))
        while (e < hi && e - k < max_run && !is_math(bc_.code[e])) ++e;
      else if (W == 1)
        while (e < hi && e - k < kMaxBatch && joins_batch(k, e)) ++e;
      runs.push_back({k, e});
      k = e;
    }
    // Divisors fast_div takes: uniform inputs of runs that divide often.
    std::vector<char> divisor(bc_.inputs.size(), 0);
    fast_run_.assign(bc_.code.size(), 0);
    for (const auto& [k, e] : runs) {
      if (is_math(bc_.code[k])) continue;
      int divs = 0;
      for (int i = k; i < e; ++i) divs += divides_by_uniform(bc_.code[i]);
      if (!divider_bounds(divs, e - k)) continue;
      fast_run_[k] = 1;
      for (int i = k; i < e; ++i)
        if (divides_by_uniform(bc_.code[i])) divisor[bc_.code[i].b - bc_.num_consts()] = 1;
    }
    mark_shared_divisors(runs);
    // Uniform inputs: one element, splat once for the whole chunk.
    uni_.assign(bc_.inputs.size(), nullptr);
    rcp_.assign(bc_.inputs.size(), nullptr);
    div_lo_.assign(bc_.inputs.size(), nullptr);
    for (size_t j = 0; j < bc_.inputs.size(); ++j) {
      if (!in_base_[j] || !is_uniform_input(static_cast<int>(j))) continue;
      Value* v = uniform_element(j);
      uni_[j] = B.CreateVectorSplat(W, v);
      if (divisor[j]) {
        // Division by this input (fast_div): its reciprocal and, when the
        // divisor is outside the safe range, a lower bound no dividend meets.
        Value* ok = in_div_range(v, fc(v->getType(), kDivLo));
        rcp_[j] = B.CreateVectorSplat(W, B.CreateFDiv(fc(v->getType(), 1.0), v));
        div_lo_[j] = B.CreateVectorSplat(W, B.CreateSelect(ok, fc(v->getType(), kDivLo),
                                                           fc(v->getType(), std::numeric_limits<double>::infinity())));
      }
    }

    // Block kernels: math calls of one value in a row that one library call
    // makes together (math_group: softplus and sigmoid of x and -x, sin and
    // cos of x); the later ones' results wait in temporaries until their places.
    std::vector<int8_t> later(bc_.code.size(), -1);  // the temporary holding this call's result
    int at[4];
    for (const auto& [k, e] : runs) {
      const MathGroup* g = nullptr;
      if (later[k] >= 0) copy_cell(tmp_off(later[k]), cell_off(bc_.code[k].d));
      else if (!is_math(bc_.code[k])) emit_run(k, e);
      else if (e - k > 1) emit_math_batch(k, e);
      else if (W > 1 && (g = math_group(k, hi, at))) emit_group(*g, k, at, later);
      else emit_math(bc_.code[k]);
    }
    if (W == 1 && hi == static_cast<int>(bc_.code.size())) store_one_element_outputs(in);
    B.CreateRetVoid();
    if (const_mem_) constants_from_memory();
  }

  // FastISel cannot materialize a vector constant (SelectionDAG would take
  // the block above it): at tier 1 each use loads it from a constant global.
  void constants_from_memory() {
    std::unordered_map<Constant*, GlobalVariable*> globals;
    for (BasicBlock& bb : *F)
      for (Instruction& ins : bb) {
        if (isa<PHINode>(ins)) continue;
        for (Use& u : ins.operands()) {
          auto* k = dyn_cast<Constant>(u.get());
          if (!k || !k->getType()->isVectorTy() || isa<UndefValue>(k)) continue;
          GlobalVariable*& gv = globals[k];
          if (!gv) {
            gv = new GlobalVariable(M, k->getType(), true, GlobalValue::PrivateLinkage, k, "k");
            gv->setAlignment(Align(kCellAlign));
          }
          u.set(new LoadInst(k->getType(), gv, "", false, Align(kCellAlign), ins.getIterator()));
        }
      }
  }

 private:
  // Vector types of W lanes (s64 is the scalar index type).
  Type* cls_ty(Cls c) const { return c == Cls::F64 ? f64 : c == Cls::F32 ? f32 : i64; }
  static bool is_math(const Instr& in) { return interp::calls_math(in); }
  // Plain vector arithmetic, which FastISel selects (FastF/FastI rows).
  bool fast_isel_ok(const Instr& in) const {
    if (in.op >= interp::kCvtBase) return false;
    const auto& info = interp::op_info(static_cast<interp::ScalarOp>(in.op / interp::kNumCls));
    const bool int_cls = static_cast<Cls>(in.op % interp::kNumCls) == Cls::I64;
    return info.has(int_cls ? interp::opflag::FastI : interp::opflag::FastF);
  }

  bool is_input(int32_t s) const { return s >= bc_.num_consts() && s < bc_.first_reg(); }
  bool is_uniform_input(int j) const { return static_cast<size_t>(j) < uniform_.size() && uniform_[j]; }
  bool is_uniform(int32_t s) const { return is_input(s) && is_uniform_input(s - bc_.num_consts()); }
  // The block-sized cell of a register slot (jit.hpp: cell_index).
  uint64_t cell_off(int32_t s) const { return static_cast<uint64_t>(cell_index(bc_, s)) * cell_bytes_; }
  uint64_t tmp_off(int t) const {
    return static_cast<uint64_t>(bc_.num_regs + static_cast<int>(bc_.inputs.size()) + t) * cell_bytes_;
  }
  // Lanes of group g start at byte 8*W*g of a cell whatever the class (f32
  // lanes fill its first half), so a group never touches another's bytes:
  // the VM's register reuse may change a cell's class inside one loop.
  // `g` is the address of the current group in cell 0 (loop() computes it
  // once per iteration), so each access is one constant-offset GEP.
  Value* at(uint64_t off, Value* g) { return off ? B.CreateConstGEP1_64(i8, g, off) : g; }
  Value* load(Type* t, Value* p) { return B.CreateAlignedLoad(t, p, Align(align_)); }
  void store(Value* v, Value* p) { B.CreateAlignedStore(v, p, Align(align_)); }

  // For each instruction, the index of the last instruction reading its
  // result before it is overwritten (code.size() for outputs the driver
  // scatters from their cells; -1 if none), and the direct outputs it
  // defines (stored through in[ninputs + j], jit.hpp).
  void compute_last_reads() {
    const int n = static_cast<int>(bc_.code.size());
    last_read_.assign(n, -1);
    std::vector<int> writer(bc_.num_slots(), -1);
    for (int j = 0; j < n; ++j) {
      const Instr& in = bc_.code[j];
      for (int32_t s : {in.a, in.b, in.c})
        if (s >= 0 && writer[s] >= 0) last_read_[writer[s]] = j;
      writer[in.d] = j;
    }
    out_writes_.assign(n, {});
    sum_writes_.assign(n, {});
    const std::vector<int> direct = direct_outputs(bc_, W == 1, summed_);  // W == 1: one-element layout
    int q = 0;  // rank among summed outputs (their place in the control cell)
    for (size_t j = 0; j < bc_.outputs.size(); ++j) {
      const int w = writer[bc_.outputs[j].slot];
      if (j < summed_.size() && summed_[j]) {
        if (w < 0) throw std::runtime_error("summed output without a defining instruction");
        sum_writes_[w].push_back({static_cast<int>(j), q++});
        continue;
      }
      if (w < 0) continue;
      if (direct[j] >= 0 || is_packed_out(j)) out_writes_[w].push_back(static_cast<int>(j));
      else last_read_[w] = n;
    }
  }

  Constant* fc(Type* t, double v) { return ConstantFP::get(t, v); }
  Constant* splat(Constant* c) { return ConstantVector::getSplat(ElementCount::getFixed(W), c); }

  Value* constant(int32_t s) { return const_cls_value(s); }
  Constant* const_cls_value(int32_t s) {
    const interp::Cell& c = bc_.constants[s];
    switch (bc_.const_cls[s]) {
      case Cls::F64: return splat(ConstantFP::get(C, APFloat(c.f64)));
      case Cls::F32: return splat(ConstantFP::get(C, APFloat(c.f32)));
      case Cls::I64: return ConstantInt::get(i64, c.i64, true);
    }
    return nullptr;
  }

  // Slot s as W lanes of class c at group g of the current loop.
  Value* read(int32_t s, Cls c, Value* g) {
    if (s < bc_.num_consts()) return constant(s);
    if (auto it = vals_.find(s); it != vals_.end()) return it->second;
    if (is_uniform(s)) {
      const size_t j = static_cast<size_t>(s - bc_.num_consts());
      Value* u = uni_[j];
      if (u->getType() != cls_ty(c)) throw std::runtime_error("uniform input read in another class");
      if (!reload_uni_) return u;
      // Loaded where the body reads it (see emit_summed_run).
      u = B.CreateVectorSplat(W, uniform_element(j));
      vals_[s] = u;
      return u;
    }
    // An input may be the caller's memory: only 8-byte aligned.
    Value* v = is_packed(s)  ? read_packed(s, c)
               : is_input(s) ? B.CreateAlignedLoad(cls_ty(c), B.CreateGEP(i8, in_base_[s - bc_.num_consts()], goff_), Align(8))
                             : load(cls_ty(c), at(cell_off(s), g));
    vals_[s] = v;
    return v;
  }

  // Uniform input j's one element, loaded at the insertion point.
  Value* uniform_element(size_t j) {
    const Cls c = interp::cls_of(bc_.inputs[j]);
    Type* et = c == Cls::F64 ? Type::getDoubleTy(C) : c == Cls::F32 ? Type::getFloatTy(C) : s64;
    return B.CreateAlignedLoad(et, in_base_[j], Align(c == Cls::F32 ? 4 : 8));
  }

  bool is_packed(int32_t s) const {
    const size_t j = static_cast<size_t>(s - bc_.num_consts());
    return is_input(s) && j < packed_.size() && packed_[j];
  }
  // A packed bool input (packed_inputs): W bytes at byte W * group, each
  // lane 1 where its byte is nonzero, as the VM's widening gives.
  Value* read_packed(int32_t s, Cls c) {
    if (c != Cls::I64) throw std::runtime_error("packed input read as float");
    Value* p = B.CreateGEP(i8, in_base_[s - bc_.num_consts()], B.CreateLShr(goff_, 3));
    Type* bytes = VectorType::get(i8, ElementCount::getFixed(W));
    Value* b = B.CreateAlignedLoad(bytes, p, Align(1));
    return B.CreateZExt(B.CreateICmpNE(b, Constant::getNullValue(bytes)), i64);
  }

  // Emits `for (off = 0; off < end; off += 8W) body(scratch + off)`; end >= 8W.
  template <class Body> void loop(Body&& body) {
    if (W == 1) {
      // One-element code runs one group (m == 1): straight-line code, which
      // a compiled ScalarLoop (codegen_loop.cpp) keeps in registers.
      goff_ = ConstantInt::get(s64, 0);
      body(scratch_);
      return;
    }
    BasicBlock* pre = B.GetInsertBlock();
    BasicBlock* hdr = BasicBlock::Create(C, "loop", F);
    BasicBlock* after = BasicBlock::Create(C, "after", F);
    B.CreateBr(hdr);
    B.SetInsertPoint(hdr);
    PHINode* g = B.CreatePHI(s64, 2);
    g->addIncoming(ConstantInt::get(s64, 0), pre);
    goff_ = g;
    body(B.CreateGEP(i8, scratch_, goff_));
    Value* next = B.CreateAdd(g, ConstantInt::get(s64, 8 * W));
    g->addIncoming(next, B.GetInsertBlock());
    B.CreateCondBr(B.CreateICmpSLT(next, end_), hdr, after);
    B.SetInsertPoint(after);
  }

  // One instruction of a fused loop's body at group g.
  void emit_body_instr(int k, int hi, Value* g, bool fast_divs) {
    const Instr& in = bc_.code[k];
    if (isolate_ && !fast_isel_ok(in)) {
      // FastISel gives up on the rest of a block, bottom up, at the first
      // instruction it cannot select (vector compares and selects): a
      // block starting here confines SelectionDAG to this one op.
      BasicBlock* nb = BasicBlock::Create(C, "op", F);
      B.CreateBr(nb);
      B.SetInsertPoint(nb);
    }
    Value* v = fast_divs && divides_by_uniform(in) ? fast_div(in, g)
               : shared_div_[k]                      ? shared_div(in, g)
                                                     : emit_inline(in, g);
    vals_[in.d] = v;
    if (last_read_[k] >= hi) store(v, at(cell_off(in.d), g));
    for (int j : out_writes_[k]) store_out(j, v);
  }
  bool is_packed_out(size_t j) const { return j < packed_out_.size() && packed_out_[j]; }
  // A direct output's lanes of this group; a packed one (packed_outputs) as
  // W bytes at byte W * group, 1 where the lane is nonzero.
  void store_out(int j, Value* v) {
    if (!is_packed_out(j)) return (void)B.CreateAlignedStore(v, B.CreateGEP(i8, out_base_[j], goff_), Align(8));
    Type* bytes = VectorType::get(i8, ElementCount::getFixed(W));
    Value* b = B.CreateZExt(truth(v), bytes);
    B.CreateAlignedStore(b, B.CreateGEP(i8, out_base_[j], B.CreateLShr(goff_, 3)), Align(1));
  }

  // A fused loop defining summed outputs (KernelSpec::summed): each group's
  // value goes into its output's lane accumulator, which the loop carries.
  // At an event (jit.hpp: sum_ctl_cell) the group either starts a leaf (the
  // accumulator's lanes are stored as the previous leaf's, and the group's
  // value becomes the accumulator: leaf_lanes' first load) or is the call's
  // partial last group (stored whole, for the caller to fold in order).
  void emit_summed_run(int lo, int hi, const std::vector<std::pair<int, int>>& sums) {
    const bool fast_divs = fast_run_[lo];
    const uint64_t ctl_off = static_cast<uint64_t>(sum_ctl_cell(bc_)) * cell_bytes_;
    auto ctl = [&](uint64_t k) { return B.CreateConstGEP1_64(i8, scratch_, ctl_off + 8 * k); };
    auto acc_cell = [&](int j) {
      return B.CreateConstGEP1_64(i8, scratch_, static_cast<uint64_t>(out_cell(bc_, j)) * cell_bytes_);
    };
    Value* ev0 = B.CreateAlignedLoad(ptr, ctl(0), Align(8));
    Value* e0 = B.CreateAlignedLoad(s64, ev0, Align(8));
    Value* leaf0 = B.CreateAlignedLoad(s64, ctl(1), Align(8));
    Value* base = B.CreateAlignedLoad(s64, ctl(2), Align(8));
    const size_t ns = sums.size();
    std::vector<Value*> acc0(ns);
    for (size_t q = 0; q < ns; ++q) acc0[q] = B.CreateAlignedLoad(f64, acc_cell(sums[q].first), Align(align_));
    BasicBlock* pre = B.GetInsertBlock();
    BasicBlock* hdr = BasicBlock::Create(C, "sloop", F);
    B.CreateBr(hdr);
    B.SetInsertPoint(hdr);
    PHINode* g = B.CreatePHI(s64, 2);
    PHINode* ev = B.CreatePHI(ptr, 2);
    PHINode* e = B.CreatePHI(s64, 2);  // *ev, carried: loaded again only after an event
    PHINode* leaf = B.CreatePHI(s64, 2);
    std::vector<PHINode*> acc(ns);
    g->addIncoming(ConstantInt::get(s64, 0), pre);
    ev->addIncoming(ev0, pre);
    e->addIncoming(e0, pre);
    leaf->addIncoming(leaf0, pre);
    for (size_t q = 0; q < ns; ++q) {
      acc[q] = B.CreatePHI(f64, 2);
      acc[q]->addIncoming(acc0[q], pre);
    }
    goff_ = g;
    Value* gp = B.CreateGEP(i8, scratch_, goff_);
    vals_.clear();
    rcp_vals_.clear();
    std::vector<Value*> v(ns, nullptr);
    // With 16 vector registers (no AVX-512), each sum's 8 lanes take two, and
    // the allocator spilled accumulators before the uniform inputs' splats:
    // a store and a reload in every group's add chain. Splats loaded in the
    // body take no register across the loop.
    reload_uni_ = !wide_regs_;
    for (int k = lo; k < hi; ++k) {
      emit_body_instr(k, hi, gp, fast_divs);
      for (const auto& [j, q] : sum_writes_[k])
        for (size_t r = 0; r < ns; ++r)
          if (sums[r].first == j) v[r] = vals_[bc_.code[k].d];
    }
    reload_uni_ = false;
    vals_.clear();
    Value* at_event = B.CreateICmpEQ(B.CreateAnd(e, ConstantInt::get(s64, ~int64_t{1})), B.CreateAdd(g, base));
    BasicBlock* hot = BasicBlock::Create(C, "acc", F);
    BasicBlock* cold = BasicBlock::Create(C, "event", F);
    BasicBlock* flush = BasicBlock::Create(C, "leaf", F);
    BasicBlock* tail = BasicBlock::Create(C, "tail", F);
    BasicBlock* latch = BasicBlock::Create(C, "next", F);
    BasicBlock* after = BasicBlock::Create(C, "safter", F);
    B.CreateCondBr(at_event, cold, hot);
    B.SetInsertPoint(hot);
    std::vector<Value*> acc_hot(ns);
    for (size_t q = 0; q < ns; ++q) acc_hot[q] = B.CreateFAdd(acc[q], v[q]);
    B.CreateBr(latch);
    B.SetInsertPoint(cold);
    Value* ev_next = B.CreateConstGEP1_64(s64, ev, 1);
    Value* e_next = B.CreateAlignedLoad(s64, ev_next, Align(8));
    B.CreateCondBr(B.CreateICmpEQ(B.CreateAnd(e, ConstantInt::get(s64, 1)), ConstantInt::get(s64, 0)), flush, tail);
    B.SetInsertPoint(flush);
    for (size_t q = 0; q < ns; ++q) {
      Value* lanes = B.CreateAlignedLoad(ptr, ctl(3 + 2 * sums[q].second), Align(8));
      B.CreateAlignedStore(acc[q], B.CreateGEP(i8, lanes, B.CreateMul(leaf, ConstantInt::get(s64, 8 * W))), Align(8));
    }
    Value* leaf_next = B.CreateAdd(leaf, ConstantInt::get(s64, 1));
    B.CreateBr(latch);
    B.SetInsertPoint(tail);
    for (size_t q = 0; q < ns; ++q) {
      Value* t = B.CreateAlignedLoad(ptr, ctl(4 + 2 * sums[q].second), Align(8));
      B.CreateAlignedStore(v[q], t, Align(8));
    }
    B.CreateBr(latch);
    B.SetInsertPoint(latch);
    PHINode* ev_l = B.CreatePHI(ptr, 3);
    ev_l->addIncoming(ev, hot);
    ev_l->addIncoming(ev_next, flush);
    ev_l->addIncoming(ev_next, tail);
    PHINode* e_l = B.CreatePHI(s64, 3);
    e_l->addIncoming(e, hot);
    e_l->addIncoming(e_next, flush);
    e_l->addIncoming(e_next, tail);
    PHINode* leaf_l = B.CreatePHI(s64, 3);
    leaf_l->addIncoming(leaf, hot);
    leaf_l->addIncoming(leaf_next, flush);
    leaf_l->addIncoming(leaf, tail);
    std::vector<PHINode*> acc_l(ns);
    for (size_t q = 0; q < ns; ++q) {
      acc_l[q] = B.CreatePHI(f64, 3);
      acc_l[q]->addIncoming(acc_hot[q], hot);
      acc_l[q]->addIncoming(v[q], flush);
      acc_l[q]->addIncoming(acc[q], tail);
    }
    Value* next = B.CreateAdd(g, ConstantInt::get(s64, 8 * W));
    g->addIncoming(next, latch);
    ev->addIncoming(ev_l, latch);
    e->addIncoming(e_l, latch);
    leaf->addIncoming(leaf_l, latch);
    for (size_t q = 0; q < ns; ++q) acc[q]->addIncoming(acc_l[q], latch);
    B.CreateCondBr(B.CreateICmpSLT(next, end_), hdr, after);
    B.SetInsertPoint(after);
    for (size_t q = 0; q < ns; ++q) B.CreateAlignedStore(acc_l[q], acc_cell(sums[q].first), Align(align_));
  }

  void emit_run(int lo, int hi) {
    const bool fast_divs = fast_run_[lo];
    std::vector<std::pair<int, int>> sums;  // (output, rank) defined in [lo, hi)
    for (int k = lo; k < hi; ++k)
      for (const auto& s : sum_writes_[k]) sums.push_back(s);
    if (!sums.empty()) return emit_summed_run(lo, hi, sums);
    loop([&](Value* g) {
      vals_.clear();
      rcp_vals_.clear();
      for (int k = lo; k < hi; ++k) emit_body_instr(k, hi, g, fast_divs);
    });
    vals_.clear();
  }

  // One-element code's last chunk stores float64 and int64 outputs through
  // the caller's pointers (one_element_stores): every value first (a copied
  // input may share memory with an output), then every store, as 8-byte
  // integers so the bits are the cells'.
  void store_one_element_outputs(Value* in) {
    const std::vector<int8_t> kind = one_element_stores(bc_);
    const uint64_t ni = bc_.inputs.size();
    auto pointer = [&](uint64_t k) {
      return B.CreateAlignedLoad(ptr, B.CreateConstGEP1_64(ptr, in, k * kOneElementInStride), Align(8));
    };
    std::vector<std::pair<size_t, Value*>> vals;
    for (size_t j = 0; j < kind.size(); ++j) {
      const int32_t slot = bc_.outputs[j].slot;
      if (kind[j] == 1)
        vals.emplace_back(j, B.CreateAlignedLoad(s64, B.CreateConstGEP1_64(i8, scratch_, cell_off(slot)), Align(8)));
      else if (kind[j] == 2)
        vals.emplace_back(j, B.CreateAlignedLoad(s64, pointer(static_cast<uint64_t>(slot - bc_.num_consts())), Align(8)));
    }
    for (const auto& [j, v] : vals) B.CreateAlignedStore(v, pointer(ni + j), Align(8));
  }

  // Calls batched in one-element code: at most this many elements, on the stack.
  static constexpr int kMaxBatch = 64;
  // Instruction e calls the math function of k..e-1 and reads none of their results.
  bool joins_batch(int k, int e) const {
    const Instr& x = bc_.code[e];
    if (x.op != bc_.code[k].op) return false;
    for (int i = k; i < e; ++i)
      for (int32_t s : {x.a, x.b, x.c})
        if (s >= 0 && s == bc_.code[i].d) return false;
    return true;
  }

  // Math calls [k, e) of one-element code as one library call over e - k
  // elements gathered into stack arrays, then scattered to their cells.
  // The library computes every lane alone (math/apply.hpp), so each result
  // has the bits of its own call.
  void emit_math_batch(int k, int e) {
    const interp::OpSig sig = interp::op_sig(bc_.code[k].op);
    const int n = e - k;
    Type* dbl = Type::getDoubleTy(C);
    ArrayType* arr_t = ArrayType::get(dbl, static_cast<uint64_t>(n));
    IRBuilder<> entry(&F->getEntryBlock(), F->getEntryBlock().begin());
    std::vector<Value*> arrs;  // one per argument, then the results
    for (int a = 0; a <= sig.nargs; ++a) arrs.push_back(entry.CreateAlloca(arr_t));
    auto elem = [&](int a, int i) { return B.CreateConstGEP2_64(arr_t, arrs[a], 0, static_cast<uint64_t>(i)); };
    loop([&](Value* g) {
      vals_.clear();
      for (int i = k; i < e; ++i) {
        const Instr& in = bc_.code[i];
        const int32_t src[3] = {in.a, in.b, in.c};
        for (int a = 0; a < sig.nargs; ++a) {
          Value* v = read(src[a], sig.arg[a], g);
          if (sig.arg[a] == Cls::F32) v = B.CreateFPExt(v, f64);
          B.CreateStore(B.CreateExtractElement(v, uint64_t{0}), elem(a, i - k));
        }
      }
      vals_.clear();
    });
    std::vector<Value*> args{ConstantInt::get(s64, n)};
    args.insert(args.end(), arrs.begin(), arrs.end());
    B.CreateCall(math_fn(bc_.code[k].op), args);
    loop([&](Value* g) {
      for (int i = k; i < e; ++i) {
        Value* v = B.CreateInsertElement(PoisonValue::get(f64), B.CreateLoad(dbl, elem(sig.nargs, i - k)), uint64_t{0});
        if (sig.dst == Cls::F32) v = B.CreateFPTrunc(v, f32);
        store(v, at(cell_off(bc_.code[i].d), g));
      }
    });
  }

  // The last instruction before `before` that defines slot s, or -1.
  int last_def(int32_t s, int before) const {
    for (int i = before - 1; i >= 0; --i)
      if (bc_.code[i].d == s) return i;
    return -1;
  }
  // Math calls of one argument that one library call makes together
  // (math::logistic, math::sincos): each op's role among the call's
  // outputs, and whether the group takes -x too (role + 1).
  struct MathGroup {
    interp::ScalarOp ops[2];
    int role[2];
    bool negated;
    int outputs;
    const char* fn;
  };
  static constexpr MathGroup kGroups[] = {
      {{interp::ScalarOp::Softplus, interp::ScalarOp::Sigmoid}, {0, 2}, true, 4, "ember_math_logistic"},
      {{interp::ScalarOp::Sin, interp::ScalarOp::Cos}, {0, 1}, false, 2, "ember_math_sincos"},
  };
  // The group instruction k (a float64 call of a group's op on x, not a
  // constant, not uniform) heads: the math calls right after k, each a
  // float64 call of the group's ops on x or (where the group takes it) -x,
  // their values at k, in a role none before it took. No other math call
  // lies between them, so the temporaries holding their results survive.
  // at[role]: the instruction, or -1. The group, if two or more calls.
  const MathGroup* math_group(int k, int hi, int at[4]) const {
    const Instr& a = bc_.code[k];
    const MathGroup* g = nullptr;
    auto role = [&](const MathGroup& m, uint16_t op) {
      for (int i = 0; i < 2; ++i)
        if (op == interp::opcode_of(m.ops[i], Cls::F64)) return m.role[i];
      return -1;
    };
    for (const MathGroup& m : kGroups)
      if (role(m, a.op) >= 0) g = &m;
    if (!g || a.a < bc_.num_consts() || is_uniform(a.a)) return nullptr;
    const uint16_t negop = interp::opcode_of(interp::ScalarOp::Neg, Cls::F64);
    std::fill(at, at + 4, -1);
    at[role(*g, a.op)] = k;
    int members = 1;
    // When x is made by a Neg of u (at n0), u is -x while it keeps that value.
    const int n0 = a.a >= bc_.first_reg() ? last_def(a.a, k) : -1;
    const int32_t u = n0 >= 0 && bc_.code[n0].op == negop ? bc_.code[n0].a : -1;
    for (int j = k + 1; j < hi; ++j) {
      const Instr& b = bc_.code[j];
      if (!is_math(b)) continue;
      const int r = role(*g, b.op);
      if (r < 0) break;
      int neg = -1;
      if (b.a == a.a && last_def(a.a, j) < k) {
        neg = 0;
      } else if (!g->negated) {
        break;
      } else if (const int n = b.a >= bc_.first_reg() ? last_def(b.a, j) : -1;
                 n >= 0 && bc_.code[n].op == negop && bc_.code[n].a == a.a &&
                 (n > k ? last_def(a.a, n) < k : last_def(a.a, k) < n)) {
        neg = 1;  // a Neg that reads x's value at k
      } else if (u >= 0 && b.a == u && last_def(u, j) < n0) {
        neg = 1;
      }
      if (neg < 0 || at[r + neg] >= 0) break;
      at[r + neg] = j;
      ++members;
    }
    return members >= 2 ? g : nullptr;
  }
  // The group's call at k: k's result to its cell, each later member's to a
  // temporary (later[j]) until its place.
  void emit_group(const MathGroup& g, int k, const int at[4], std::vector<int8_t>& later) {
    const Instr& x = bc_.code[k];
    Value* p = is_input(x.a) ? in_base_[x.a - bc_.num_consts()] : B.CreateConstGEP1_64(i8, scratch_, cell_off(x.a));
    std::vector<Value*> args{m_, p};
    int8_t t = 1;
    for (int r = 0; r < g.outputs; ++r) {
      if (at[r] < 0) {
        args.push_back(ConstantPointerNull::get(PointerType::get(C, 0)));
        continue;
      }
      if (at[r] != k) later[at[r]] = t++;
      args.push_back(B.CreateConstGEP1_64(i8, scratch_, at[r] == k ? cell_off(x.d) : tmp_off(later[at[r]])));
    }
    std::vector<Type*> pts(static_cast<size_t>(g.outputs) + 2, ptr);
    pts[0] = s64;
    B.CreateCall(M.getOrInsertFunction(g.fn, FunctionType::get(Type::getVoidTy(C), pts, false)), args);
  }
  void copy_cell(uint64_t from, uint64_t to) {
    loop([&](Value* g) { store(load(f64, at(from, g)), at(to, g)); });
  }

  // The math library's array entry for opcode: void ember_math_<f>(i64 n, ptr x.., ptr y).
  FunctionCallee math_fn(uint16_t opcode) {
    const auto op = static_cast<interp::ScalarOp>(opcode / interp::kNumCls);
    const std::string_view math = interp::op_info(op).math;
    if (math.empty()) throw std::runtime_error("no math function for " + interp::opcode_name(opcode));
    std::vector<Type*> pts(static_cast<size_t>(interp::op_sig(opcode).nargs) + 2, ptr);
    pts[0] = s64;
    return M.getOrInsertFunction("ember_math_" + std::string(math), FunctionType::get(Type::getVoidTy(C), pts, false));
  }

  void emit_math(const Instr& in) {
    const interp::OpSig sig = interp::op_sig(in.op);
    const int32_t src[3] = {in.a, in.b, in.c};
    // A power of a uniform base (block code): the base's one element, its
    // logarithm computed once a call (math::pow_base).
    const bool one_base = W > 1 && in.op == interp::opcode_of(interp::ScalarOp::Pow, Cls::F64) && is_uniform(in.a);
    // Constants and float32 operands: widened into a float64 temporary first.
    std::vector<uint64_t> offs;  // byte offset of each argument in scratch (or ~0: an input's lanes)
    for (int k = 0; k < sig.nargs; ++k) {
      if ((k == 0 && one_base) || (sig.arg[k] == Cls::F64 && src[k] >= bc_.num_consts() && !is_uniform(src[k]))) {
        offs.push_back(is_input(src[k]) ? ~uint64_t{0} : cell_off(src[k]));
        continue;
      }
      loop([&](Value* g) {
        Value* v = read(src[k], sig.arg[k], g);
        if (sig.arg[k] == Cls::F32) v = B.CreateFPExt(v, f64);
        store(v, at(tmp_off(k), g));
        vals_.clear();
      });
      offs.push_back(tmp_off(k));
    }
    const bool f32res = sig.dst == Cls::F32;
    const uint64_t yoff = f32res ? tmp_off(3) : cell_off(in.d);
    offs.push_back(yoff);
    // One address per distinct cell (x and y are often the same register).
    std::vector<Value*> args{m_};
    std::unordered_map<uint64_t, Value*> addr;
    for (size_t k = 0; k < offs.size(); ++k) {
      if (offs[k] == ~uint64_t{0}) {
        args.push_back(in_base_[src[k] - bc_.num_consts()]);
        continue;
      }
      Value*& a = addr[offs[k]];
      if (!a) a = B.CreateConstGEP1_64(i8, scratch_, offs[k]);
      args.push_back(a);
    }
    if (one_base)
      B.CreateCall(M.getOrInsertFunction("ember_math_pow_base", FunctionType::get(Type::getVoidTy(C), {s64, ptr, ptr, ptr}, false)),
                   args);
    else
      B.CreateCall(math_fn(in.op), args);
    if (f32res)
      loop([&](Value* g) {
        Value* v = load(f64, at(yoff, g));
        store(B.CreateFPTrunc(v, f32), at(cell_off(in.d), g));
      });
  }

  // ---- conversions (interp::impl::convert_value) ---------------------------
  Type* ivec(unsigned bits) { return VectorType::get(Type::getIntNTy(C, bits), ElementCount::getFixed(W)); }
  Value* wrap_to(DType dt, Value* v) {
    switch (dt) {
      case DType::Int32: return B.CreateSExt(B.CreateTrunc(v, ivec(32)), i64);
      case DType::Int16: return B.CreateSExt(B.CreateTrunc(v, ivec(16)), i64);
      case DType::Int8: return B.CreateSExt(B.CreateTrunc(v, ivec(8)), i64);
      case DType::UInt8: return B.CreateZExt(B.CreateTrunc(v, ivec(8)), i64);
      case DType::UInt16: return B.CreateZExt(B.CreateTrunc(v, ivec(16)), i64);
      case DType::UInt32: return B.CreateZExt(B.CreateTrunc(v, ivec(32)), i64);
      case DType::Bool: return B.CreateZExt(B.CreateICmpNE(v, ConstantInt::get(i64, 0)), i64);
      default: return v;
    }
  }
  Value* convert(Value* x, Cls src, DType dt) {
    const Cls dc = interp::cls_of(dt);
    if (dc != Cls::I64) {
      Type* t = cls_ty(dc);
      if (src == Cls::I64) return B.CreateSIToFP(x, t);
      if (src == dc) return x;
      return dc == Cls::F64 ? B.CreateFPExt(x, t) : B.CreateFPTrunc(x, t);
    }
    if (src == Cls::I64) return wrap_to(dt, x);
    Type* ft = x->getType();
    if (dt == DType::Bool) return B.CreateZExt(B.CreateFCmpUNE(x, fc(ft, 0)), i64);
    // float_to_i64: NaN and out-of-range give INT64_MIN (select ignores the
    // poison fptosi gives for them).
    Value* ok = B.CreateAnd(B.CreateFCmpOGE(x, fc(ft, -9223372036854775808.0)),
                            B.CreateFCmpOLT(x, fc(ft, 9223372036854775808.0)));
    Value* v = B.CreateSelect(ok, B.CreateFPToSI(x, i64), ConstantInt::get(i64, INT64_MIN, true));
    return wrap_to(dt, v);
  }

  // ---- inline ops (interp/scalar_impl.hpp, one for one) --------------------
  Value* un(Intrinsic::ID id, Value* x) { return B.CreateUnaryIntrinsic(id, x); }
  Value* copysign(Value* x, Value* y) { return B.CreateBinaryIntrinsic(Intrinsic::copysign, x, y); }
  Value* ne0(Value* x) { return B.CreateFCmpUNE(x, fc(x->getType(), 0)); }
  Value* bool64(Value* b) { return B.CreateZExt(b, i64); }
  // v != 0 lane by lane; a bool64 of a compare or mask is the compare
  // itself. Tier 2 runs no IR passes, and SelectionDAG folds the zext away
  // only within one basic block (fast_div's checks split a loop body).
  Value* truth(Value* v) {
    if (auto* z = dyn_cast<ZExtInst>(v); z && z->getSrcTy()->getScalarSizeInBits() == 1) return z->getOperand(0);
    return B.CreateICmpNE(v, Constant::getNullValue(v->getType()));
  }

  // npy_divmod; returns the quotient, sets mod.
  Value* f_divmod(Value* a, Value* b, Value*& mod) {
    Type* t = a->getType();
    Value* zero = fc(t, 0);
    Value* m = B.CreateFRem(a, b);
    Value* div = B.CreateFDiv(B.CreateFSub(a, m), b);
    Value* fix = B.CreateAnd(ne0(m), B.CreateXor(B.CreateFCmpOLT(b, zero), B.CreateFCmpOLT(m, zero)));
    Value* m2 = B.CreateSelect(fix, B.CreateFAdd(m, b), m);
    Value* d2 = B.CreateSelect(fix, B.CreateFSub(div, fc(t, 1)), div);
    m2 = B.CreateSelect(ne0(m), m2, copysign(zero, b));
    Value* fl = un(Intrinsic::floor, d2);
    fl = B.CreateSelect(B.CreateFCmpOGT(B.CreateFSub(d2, fl), fc(t, 0.5)), B.CreateFAdd(fl, fc(t, 1)), fl);
    Value* q = B.CreateSelect(ne0(d2), fl, copysign(zero, B.CreateFDiv(a, b)));
    Value* bz = B.CreateFCmpOEQ(b, zero);
    mod = B.CreateSelect(bz, m, m2);
    return B.CreateSelect(bz, B.CreateFDiv(a, b), q);
  }
  Value* i_neg(Value* a) { return B.CreateSub(ConstantInt::get(i64, 0), a); }
  Value* ic(int64_t v) { return ConstantInt::get(i64, v, true); }
  // b with 0 and -1 replaced by 1, so sdiv/srem are defined.
  Value* safe_div(Value* b) {
    return B.CreateSelect(B.CreateOr(B.CreateICmpEQ(b, ic(0)), B.CreateICmpEQ(b, ic(-1))), ic(1), b);
  }
  Value* i_floordiv(Value* a, Value* b) {
    Value* bs = safe_div(b);
    Value* q = B.CreateSDiv(a, bs);
    Value* r = B.CreateSRem(a, bs);
    Value* adj = B.CreateAnd(B.CreateICmpNE(r, ic(0)), B.CreateXor(B.CreateICmpSLT(a, ic(0)), B.CreateICmpSLT(b, ic(0))));
    q = B.CreateSelect(adj, B.CreateSub(q, ic(1)), q);
    q = B.CreateSelect(B.CreateICmpEQ(b, ic(-1)), i_neg(a), q);
    return B.CreateSelect(B.CreateICmpEQ(b, ic(0)), ic(0), q);
  }
  Value* i_mod(Value* a, Value* b) {
    Value* bs = safe_div(b);
    Value* r = B.CreateSRem(a, bs);
    Value* adj = B.CreateAnd(B.CreateICmpNE(r, ic(0)), B.CreateXor(B.CreateICmpSLT(r, ic(0)), B.CreateICmpSLT(b, ic(0))));
    r = B.CreateSelect(adj, B.CreateAdd(r, b), r);
    return B.CreateSelect(B.CreateOr(B.CreateICmpEQ(b, ic(0)), B.CreateICmpEQ(b, ic(-1))), ic(0), r);
  }

  // One emitter per row of interp/scalar_ops.def, op_<Enum>, for the lanes
  // of class C: the IR of Impl<Enum> (interp/scalar_impl.hpp). emit_op's
  // switch names every row and calls the emitter of each opcode these tiers
  // compute inline (interp::inline_opcode), so such a row without one does
  // not compile; math rows' float opcodes go to emit_math instead.
  template <Cls C> struct Ops {
    Value *a, *b, *c;
  };

  template <Cls C> Value* emit_op(interp::ScalarOp op, const Ops<C>& o) {
    using S = interp::ScalarOp;
    switch (op) {
#define X(E, ...)                                                          \
  case S::E:                                                               \
    if constexpr (interp::inline_opcode(S::E, C)) return op_##E(o);       \
    break;
#include "interp/scalar_ops.def"
#undef X
    }
    throw std::runtime_error("JIT cannot emit " + interp::opcode_name(interp::opcode_of(op, C)));
  }

  // x / s for a float64 s that every lane shares (a uniform input): the
  // divider's throughput (one 4-lane vdivpd per ~4 cycles) bounds likelihood
  // loops that divide by a scale several times per element. With y = RN(1/s),
  // q0 = RN(x*y), r = x - q0*s (exact, by FMA) and q1 = RN(q0 + r*y), q1 is
  // RN(x/s), the IEEE quotient (Markstein's correction step; checked
  // exhaustively at 24 bits and on random float64 pairs, docs/fp-policy.md),
  // when no step underflows or overflows: both |x| and |s| in
  // [2^-400, 2^400]. A group with a lane outside that range (0, subnormal,
  // inf, NaN, extreme) divides.
  static constexpr double kDivLo = 0x1p-400, kDivHi = 0x1p400;
  // lo <= |x| <= kDivHi (x a float64 or W lanes of them; lo of x's type).
  Value* in_div_range(Value* x, Value* lo) {
    Value* ax = un(Intrinsic::fabs, x);
    Constant* hi = fc(Type::getDoubleTy(C), kDivHi);
    return B.CreateAnd(B.CreateFCmpOGE(ax, lo), B.CreateFCmpOLE(ax, x->getType()->isVectorTy() ? splat(hi) : hi));
  }
  // Whether the divider bounds a run of n instructions, divs of them
  // divisions (div_ops): then its divisions take the reciprocal paths.
  static bool divider_bounds(int divs, int n) { return jit::divider_bounds(divs, n, div_ops()); }
  bool divides_by_uniform(const Instr& in) const {
    return fma_ && in.op == interp::opcode_of(interp::ScalarOp::TrueDiv, Cls::F64) && is_uniform(in.b);
  }
  Value* fast_div(const Instr& in, Value* g) {
    const int j = in.b - bc_.num_consts();
    Value* x = read(in.a, Cls::F64, g);
    return corrected_div(x, uni_[j], rcp_[j], in_div_range(x, div_lo_[j]));
  }

  // Divisions in a division-bound run whose divisor (a register or a
  // non-uniform input, at one definition) two or more of them share: each
  // group computes 1/s once (shared_div) and every quotient by fast_div's
  // correction step, checked per lane for both x and s.
  void mark_shared_divisors(const std::vector<std::pair<int, int>>& runs) {
    shared_div_.assign(bc_.code.size(), 0);
    if (!fma_ || W == 1) return;
    const uint16_t div = interp::opcode_of(interp::ScalarOp::TrueDiv, Cls::F64);
    std::vector<int> writer(bc_.num_slots(), -1), def_b(bc_.code.size(), -1);
    for (size_t i = 0; i < bc_.code.size(); ++i) {
      if (bc_.code[i].b >= 0) def_b[i] = writer[bc_.code[i].b];
      writer[bc_.code[i].d] = static_cast<int>(i);
    }
    for (const auto& [k, e] : runs) {
      if (is_math(bc_.code[k])) continue;
      int divs = 0;
      std::map<std::pair<int32_t, int>, int> uses;  // (divisor slot, its definition) -> divisions
      for (int i = k; i < e; ++i) {
        const Instr& in = bc_.code[i];
        if (in.op != div) continue;
        ++divs;
        if (in.b >= bc_.num_consts() && !is_uniform(in.b)) ++uses[{in.b, def_b[i]}];
      }
      if (!divider_bounds(divs, e - k)) continue;
      for (int i = k; i < e; ++i) {
        const Instr& in = bc_.code[i];
        if (in.op == div && in.b >= bc_.num_consts() && !is_uniform(in.b) && uses[{in.b, def_b[i]}] >= 2)
          shared_div_[i] = 1;
      }
    }
  }
  Value* shared_div(const Instr& in, Value* g) {
    Value* x = read(in.a, Cls::F64, g);
    Value* s = read(in.b, Cls::F64, g);
    Type* dbl = Type::getDoubleTy(C);
    auto& [y, s_ok] = rcp_vals_[s];
    if (!y) {
      y = B.CreateFDiv(splat(fc(dbl, 1.0)), s);
      s_ok = in_div_range(s, splat(fc(dbl, kDivLo)));
    }
    return corrected_div(x, s, y, B.CreateAnd(in_div_range(x, splat(fc(dbl, kDivLo))), s_ok));
  }
  // x / s from y = RN(1/s) where every lane of `ok` holds (fast_div's note);
  // a group with a lane outside divides.
  Value* corrected_div(Value* x, Value* s, Value* y, Value* ok) {
    Function* fma = Intrinsic::getDeclaration(&M, Intrinsic::fma, {f64});
    Value* q0 = B.CreateFMul(x, y);
    Value* r = B.CreateCall(fma, {B.CreateFNeg(q0), s, x});
    Value* q1 = B.CreateCall(fma, {r, y, q0});
    Value* all = B.CreateICmpEQ(B.CreateBitCast(ok, Type::getIntNTy(C, W)), ConstantInt::get(Type::getIntNTy(C, W), -1, true));
    BasicBlock* here = B.GetInsertBlock();
    BasicBlock* slow = BasicBlock::Create(C, "div", F);
    BasicBlock* cont = BasicBlock::Create(C, "divok", F);
    B.CreateCondBr(all, cont, slow);
    B.SetInsertPoint(slow);
    Value* qd = B.CreateFDiv(x, s);
    B.CreateBr(cont);
    B.SetInsertPoint(cont);
    PHINode* q = B.CreatePHI(f64, 2);
    q->addIncoming(q1, here);
    q->addIncoming(qd, slow);
    return q;
  }

  Value* emit_inline(const Instr& in, Value* i) {
    if (in.op >= interp::kCvtBase) {
      const int k = in.op - interp::kCvtBase;
      const auto src = static_cast<Cls>(k / kNumDTypes);
      return convert(read(in.a, src, i), src, in.dtype);
    }
    const interp::OpSig sig = interp::op_sig(in.op);
    if (!sig.valid) throw std::runtime_error("invalid opcode " + std::to_string(in.op));
    const auto op = static_cast<interp::ScalarOp>(in.op / interp::kNumCls);
    Value* a = read(in.a, sig.arg[0], i);
    Value* b = sig.nargs >= 2 ? read(in.b, sig.arg[1], i) : nullptr;
    Value* c = sig.nargs >= 3 ? read(in.c, sig.arg[2], i) : nullptr;
    switch (static_cast<Cls>(in.op % interp::kNumCls)) {
      case Cls::F64: return emit_op<Cls::F64>(op, {a, b, c});
      case Cls::F32: return emit_op<Cls::F32>(op, {a, b, c});
      case Cls::I64: return emit_op<Cls::I64>(op, {a, b, c});
    }
    throw std::runtime_error("invalid opcode " + std::to_string(in.op));
  }

  template <Cls C> static constexpr bool kInt = C == Cls::I64;
  // 0/1 of a compare: the signed integer or the float predicate.
  template <Cls C> Value* cmp(const Ops<C>& o, CmpInst::Predicate ip, CmpInst::Predicate fp) {
    return bool64(kInt<C> ? B.CreateICmp(ip, o.a, o.b) : B.CreateFCmp(fp, o.a, o.b));
  }
  // Floor, Ceil, ...: the identity on integers.
  template <Cls C> Value* rounding(const Ops<C>& o, Intrinsic::ID id) {
    if constexpr (kInt<C>) return o.a;
    else return un(id, o.a);
  }

  template <Cls C> Value* op_Neg(const Ops<C>& o) {
    if constexpr (kInt<C>) return i_neg(o.a);
    else return B.CreateFNeg(o.a);
  }
  template <Cls C> Value* op_Abs(const Ops<C>& o) {
    if constexpr (kInt<C>) return B.CreateSelect(B.CreateICmpSLT(o.a, ic(0)), i_neg(o.a), o.a);
    else return un(Intrinsic::fabs, o.a);
  }
  template <Cls C> Value* op_Sign(const Ops<C>& o) {
    Value* a = o.a;
    if constexpr (kInt<C>) {
      return B.CreateSub(bool64(B.CreateICmpSGT(a, ic(0))), bool64(B.CreateICmpSLT(a, ic(0))));
    } else {
      Type* t = a->getType();
      return B.CreateSelect(B.CreateFCmpOGT(a, fc(t, 0)), fc(t, 1),
                            B.CreateSelect(B.CreateFCmpOLT(a, fc(t, 0)), fc(t, -1),
                                           B.CreateSelect(B.CreateFCmpOEQ(a, fc(t, 0)), fc(t, 0), a)));
    }
  }
  template <Cls C> Value* op_Add(const Ops<C>& o) { return kInt<C> ? B.CreateAdd(o.a, o.b) : B.CreateFAdd(o.a, o.b); }
  template <Cls C> Value* op_Mul(const Ops<C>& o) { return kInt<C> ? B.CreateMul(o.a, o.b) : B.CreateFMul(o.a, o.b); }
  template <Cls C> Value* op_Sub(const Ops<C>& o) { return kInt<C> ? B.CreateSub(o.a, o.b) : B.CreateFSub(o.a, o.b); }
  template <Cls C> Value* op_TrueDiv(const Ops<C>& o) { return B.CreateFDiv(o.a, o.b); }
  template <Cls C> Value* op_IntDiv(const Ops<C>& o) {
    if constexpr (kInt<C>) return i_floordiv(o.a, o.b);
    else { Value* m; return f_divmod(o.a, o.b, m); }
  }
  template <Cls C> Value* op_Mod(const Ops<C>& o) {
    if constexpr (kInt<C>) return i_mod(o.a, o.b);
    else { Value* m; f_divmod(o.a, o.b, m); return m; }
  }
  // Integer Pow only (float Pow is math::pow): lane by lane through the
  // interpreter's own i_pow.
  template <Cls C> Value* op_Pow(const Ops<C>& o) {
    FunctionCallee f = M.getOrInsertFunction("ember_jit_ipow", FunctionType::get(s64, {s64, s64}, false));
    Value* r = PoisonValue::get(i64);
    for (int l = 0; l < W; ++l)
      r = B.CreateInsertElement(r, B.CreateCall(f, {B.CreateExtractElement(o.a, l), B.CreateExtractElement(o.b, l)}), l);
    return r;
  }
  template <Cls C> Value* op_Sqr(const Ops<C>& o) { return kInt<C> ? B.CreateMul(o.a, o.a) : B.CreateFMul(o.a, o.a); }
  template <Cls C> Value* op_Sqrt(const Ops<C>& o) { return un(Intrinsic::sqrt, o.a); }
  template <Cls C> Value* op_Reciprocal(const Ops<C>& o) { return B.CreateFDiv(fc(o.a->getType(), 1), o.a); }
  template <Cls C> Value* op_Floor(const Ops<C>& o) { return rounding(o, Intrinsic::floor); }
  template <Cls C> Value* op_Ceil(const Ops<C>& o) { return rounding(o, Intrinsic::ceil); }
  template <Cls C> Value* op_Trunc(const Ops<C>& o) { return rounding(o, Intrinsic::trunc); }
  template <Cls C> Value* op_RoundHalfToEven(const Ops<C>& o) { return rounding(o, Intrinsic::roundeven); }
  template <Cls C> Value* op_RoundHalfAwayFromZero(const Ops<C>& o) {
    Value* a = o.a;
    if constexpr (kInt<C>) {
      return a;
    } else {
      Type* t = a->getType();
      Value* r = un(Intrinsic::trunc, a);
      return B.CreateSelect(B.CreateFCmpOGE(un(Intrinsic::fabs, B.CreateFSub(a, r)), fc(t, 0.5)),
                            B.CreateFAdd(r, copysign(fc(t, 1), a)), r);
    }
  }
  template <Cls C> Value* op_Maximum(const Ops<C>& o) {
    Value *a = o.a, *b = o.b;
    if constexpr (kInt<C>) return B.CreateSelect(B.CreateICmpSGE(a, b), a, b);
    else return B.CreateSelect(B.CreateOr(B.CreateFCmpOGE(a, b), B.CreateFCmpUNO(a, a)), a, b);
  }
  template <Cls C> Value* op_Minimum(const Ops<C>& o) {
    Value *a = o.a, *b = o.b;
    if constexpr (kInt<C>) return B.CreateSelect(B.CreateICmpSLE(a, b), a, b);
    else return B.CreateSelect(B.CreateOr(B.CreateFCmpOLE(a, b), B.CreateFCmpUNO(a, a)), a, b);
  }
  template <Cls C> Value* op_Clip(const Ops<C>& o) {
    Value *a = o.a, *b = o.b, *c = o.c;
    if constexpr (kInt<C>)
      return B.CreateSelect(B.CreateICmpSLT(a, b), b, B.CreateSelect(B.CreateICmpSGT(a, c), c, a));
    else return B.CreateSelect(B.CreateFCmpOLT(a, b), b, B.CreateSelect(B.CreateFCmpOGT(a, c), c, a));
  }
  template <Cls C> Value* op_Switch(const Ops<C>& o) { return B.CreateSelect(truth(o.a), o.b, o.c); }
  template <Cls C> Value* op_LT(const Ops<C>& o) { return cmp(o, CmpInst::ICMP_SLT, CmpInst::FCMP_OLT); }
  template <Cls C> Value* op_GT(const Ops<C>& o) { return cmp(o, CmpInst::ICMP_SGT, CmpInst::FCMP_OGT); }
  template <Cls C> Value* op_LE(const Ops<C>& o) { return cmp(o, CmpInst::ICMP_SLE, CmpInst::FCMP_OLE); }
  template <Cls C> Value* op_GE(const Ops<C>& o) { return cmp(o, CmpInst::ICMP_SGE, CmpInst::FCMP_OGE); }
  template <Cls C> Value* op_EQ(const Ops<C>& o) { return cmp(o, CmpInst::ICMP_EQ, CmpInst::FCMP_OEQ); }
  template <Cls C> Value* op_NEQ(const Ops<C>& o) { return cmp(o, CmpInst::ICMP_NE, CmpInst::FCMP_UNE); }
  template <Cls C> Value* op_And(const Ops<C>& o) { return B.CreateAnd(o.a, o.b); }
  template <Cls C> Value* op_Or(const Ops<C>& o) { return B.CreateOr(o.a, o.b); }
  template <Cls C> Value* op_Xor(const Ops<C>& o) { return B.CreateXor(o.a, o.b); }
  template <Cls C> Value* op_Invert(const Ops<C>& o) { return B.CreateXor(o.a, ic(-1)); }
  template <Cls C> Value* op_IsNan(const Ops<C>& o) {
    if constexpr (kInt<C>) return ic(0);
    else return bool64(B.CreateFCmpUNO(o.a, o.a));
  }
  template <Cls C> Value* op_IsInf(const Ops<C>& o) {
    if constexpr (kInt<C>) return ic(0);
    else return bool64(B.CreateFCmpOEQ(un(Intrinsic::fabs, o.a), ConstantFP::getInfinity(o.a->getType())));
  }

  LLVMContext& C;
  Module& M;
  IRBuilder<> B;
  const Bytecode& bc_;
  const int W;
  const uint64_t cell_bytes_, align_;  // Layout: bytes between cells; alignment of a group
  const std::vector<bool>& uniform_;
  const std::vector<bool>& summed_;  // KernelSpec::summed
  const std::vector<bool>& packed_;  // packed_inputs
  const std::vector<bool>& packed_out_;  // packed_outputs
  const bool isolate_;
  const bool const_mem_;  // tier 1: vector constants loaded from globals
  Type *f64, *f32, *i64, *s64, *i8, *ptr;
  Function* F = nullptr;
  Value *m_ = nullptr, *scratch_ = nullptr, *end_ = nullptr;
  Value* goff_ = nullptr;           // byte offset of the current group (in loop())
  std::vector<Value*> in_base_;     // per input: its lane base, if this chunk reads it
  std::vector<Value*> out_base_;    // per output: its lane base, if this chunk stores it
  std::vector<std::vector<int>> out_writes_;  // per instruction: the direct outputs it defines
  std::vector<Value*> uni_;         // per uniform input this chunk reads: its splat
  std::vector<Value*> rcp_, div_lo_;  // per divisor fast_div takes: 1/x and its lower bound, splat
  std::vector<char> fast_run_;  // per instruction: a run starting here takes fast_div (its divisors have rcp_)
  std::vector<char> shared_div_;  // per instruction: a division by a divisor its run shares (shared_div)
  // Per divisor of this loop body: 1/s and whether s is in fast_div's range.
  std::unordered_map<Value*, std::pair<Value*, Value*>> rcp_vals_;
  const bool fma_ = host_has_fma();
  const bool wide_regs_ = __builtin_cpu_supports("avx512f");  // 32 vector registers
  bool reload_uni_ = false;  // read(): a uniform input is loaded at its use
  std::vector<int> last_read_;
  std::vector<std::vector<std::pair<int, int>>> sum_writes_;  // per instruction: (summed output, rank) it defines
  std::unordered_map<int32_t, Value*> vals_;
};

}  // namespace

std::unique_ptr<Module> emit_chunk(LLVMContext& ctx, const Bytecode& bc, int lo, int hi, const std::string& name,
                                   const Layout& layout, const std::vector<bool>& uniform, int max_run, bool isolate,
                                   bool const_mem, const std::vector<bool>& summed, const std::vector<bool>& packed,
                                   const std::vector<bool>& packed_out) {
  if (!summed.empty() && layout.lanes != 8) throw std::runtime_error("summed outputs need 8 lanes");
  auto m = std::make_unique<Module>(name, ctx);
  Gen(ctx, *m, bc, layout, uniform, isolate, const_mem, summed, packed, packed_out).run(lo, hi, name, max_run);
  return m;
}

}  // namespace ember::jit
