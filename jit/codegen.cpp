#include "jit/codegen.hpp"

#include <stdexcept>
#include <unordered_map>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include "jit/jit.hpp"

namespace ember::jit {

using namespace llvm;
using interp::Bytecode;
using interp::Cls;
using interp::Instr;

namespace {

// Math library entry point of each math op, from math.def.
const char* math_name(interp::ScalarOp op) {
  switch (op) {
#define M1(E, f) case interp::ScalarOp::E: return "ember_math_" #f;
#define M2(E, f) case interp::ScalarOp::E: return "ember_math_" #f;
#define M3(E, f) case interp::ScalarOp::E: return "ember_math_" #f;
#include "interp/math/math.def"
#undef M1
#undef M2
#undef M3
    default: return nullptr;
  }
}

class Gen {
 public:
  Gen(LLVMContext& c, Module& m, const Bytecode& bc, int lanes, bool isolate, bool const_mem)
      : C(c), M(m), B(c), bc_(bc), W(lanes), isolate_(isolate), const_mem_(const_mem) {
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
    // Each input's lane base (jit.hpp), loaded once for the chunk.
    in_base_.assign(bc_.inputs.size(), nullptr);
    for (int k = lo; k < hi; ++k)
      for (int32_t s : {bc_.code[k].a, bc_.code[k].b, bc_.code[k].c})
        if (is_input(s) && !in_base_[s - bc_.num_consts()]) {
          const int j = s - bc_.num_consts();
          in_base_[j] = B.CreateAlignedLoad(ptr, B.CreateConstGEP1_64(ptr, in, j), Align(8));
        }

    // Runs of inline instructions become one fused loop over the block's
    // groups of W lanes; math calls work on whole blocks in scratch.
    int k = lo;
    while (k < hi) {
      if (is_math(bc_.code[k])) {
        emit_math(bc_.code[k]);
        ++k;
        continue;
      }
      int e = k;
      while (e < hi && e - k < max_run && !is_math(bc_.code[e])) ++e;
      emit_run(k, e);
      k = e;
    }
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
  bool is_math(const Instr& in) const { return in.op < interp::kCvtBase && interp::op_sig(in.op).math; }
  // Plain vector arithmetic, which FastISel selects.
  bool fast_isel_ok(const Instr& in) const {
    if (in.op >= interp::kCvtBase) return false;
    using S = interp::ScalarOp;
    const auto op = static_cast<S>(in.op / interp::kNumCls);
    if (static_cast<Cls>(in.op % interp::kNumCls) == Cls::I64)
      return op == S::Add || op == S::Sub || op == S::Mul || op == S::And || op == S::Or || op == S::Xor;
    return op == S::Add || op == S::Sub || op == S::Mul || op == S::TrueDiv || op == S::Sqr || op == S::Reciprocal;
  }

  bool is_input(int32_t s) const { return s >= bc_.num_consts() && s < bc_.first_reg(); }
  // The block-sized cell of a register slot (jit.hpp: cell_index).
  uint64_t cell_off(int32_t s) const { return static_cast<uint64_t>(cell_index(bc_, s)) * kCellBytes; }
  uint64_t tmp_off(int t) const {
    return static_cast<uint64_t>(bc_.num_regs + static_cast<int>(bc_.inputs.size()) + t) * kCellBytes;
  }
  // Lanes of group g start at byte 8*W*g of a cell whatever the class (f32
  // lanes fill its first half), so a group never touches another's bytes:
  // the VM's register reuse may change a cell's class inside one loop.
  // `g` is the address of the current group in cell 0 (loop() computes it
  // once per iteration), so each access is one constant-offset GEP.
  Value* at(uint64_t off, Value* g) { return off ? B.CreateConstGEP1_64(i8, g, off) : g; }
  Value* load(Type* t, Value* p) { return B.CreateAlignedLoad(t, p, Align(kCellAlign)); }
  void store(Value* v, Value* p) { B.CreateAlignedStore(v, p, Align(kCellAlign)); }

  // For each instruction, the index of the last instruction reading its
  // result before it is overwritten (code.size() for outputs; -1 if none).
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
    for (const auto& o : bc_.outputs)
      if (writer[o.slot] >= 0) last_read_[writer[o.slot]] = n;
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
    // An input may be the caller's memory: only 8-byte aligned.
    Value* v = is_input(s) ? B.CreateAlignedLoad(cls_ty(c), B.CreateGEP(i8, in_base_[s - bc_.num_consts()], goff_), Align(8))
                           : load(cls_ty(c), at(cell_off(s), g));
    vals_[s] = v;
    return v;
  }

  // Emits `for (off = 0; off < end; off += 8W) body(scratch + off)`; end >= 8W.
  template <class Body> void loop(Body&& body) {
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

  void emit_run(int lo, int hi) {
    loop([&](Value* g) {
      vals_.clear();
      for (int k = lo; k < hi; ++k) {
        const Instr& in = bc_.code[k];
        if (isolate_ && !fast_isel_ok(in)) {
          // FastISel gives up on the rest of a block, bottom up, at the first
          // instruction it cannot select (vector compares and selects): a
          // block starting here confines SelectionDAG to this one op.
          BasicBlock* nb = BasicBlock::Create(C, "op", F);
          B.CreateBr(nb);
          B.SetInsertPoint(nb);
        }
        Value* v = emit_inline(in, g);
        vals_[in.d] = v;
        if (last_read_[k] >= hi) store(v, at(cell_off(in.d), g));
      }
    });
    vals_.clear();
  }

  void emit_math(const Instr& in) {
    const interp::OpSig sig = interp::op_sig(in.op);
    const auto op = static_cast<interp::ScalarOp>(in.op / interp::kNumCls);
    const char* name = math_name(op);
    if (!name) throw std::runtime_error("no math function for " + interp::opcode_name(in.op));
    const int32_t src[3] = {in.a, in.b, in.c};
    // Constants and float32 operands: widened into a float64 temporary first.
    std::vector<uint64_t> offs;  // byte offset of each argument in scratch (or ~0: an input's lanes)
    for (int k = 0; k < sig.nargs; ++k) {
      if (sig.arg[k] == Cls::F64 && src[k] >= bc_.num_consts()) {
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
    std::vector<Type*> pts(args.size(), ptr);
    pts[0] = s64;
    FunctionCallee fn = M.getOrInsertFunction(name, FunctionType::get(Type::getVoidTy(C), pts, false));
    B.CreateCall(fn, args);
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

  Value* emit_inline(const Instr& in, Value* i) {
    if (in.op >= interp::kCvtBase) {
      const int k = in.op - interp::kCvtBase;
      const auto src = static_cast<Cls>(k / kNumDTypes);
      return convert(read(in.a, src, i), src, in.dtype);
    }
    const interp::OpSig sig = interp::op_sig(in.op);
    if (!sig.valid) throw std::runtime_error("invalid opcode " + std::to_string(in.op));
    const auto op = static_cast<interp::ScalarOp>(in.op / interp::kNumCls);
    const auto cls = static_cast<Cls>(in.op % interp::kNumCls);
    Value* a = read(in.a, sig.arg[0], i);
    Value* b = sig.nargs >= 2 ? read(in.b, sig.arg[1], i) : nullptr;
    Value* c = sig.nargs >= 3 ? read(in.c, sig.arg[2], i) : nullptr;
    using S = interp::ScalarOp;
    const interp::OpKind kind = interp::op_info(op).kind;
    if (kind == interp::OpKind::Switch) return B.CreateSelect(B.CreateICmpNE(a, ic(0)), b, c);
    if (cls == Cls::I64) {
      switch (op) {
        case S::Neg: return i_neg(a);
        case S::Abs: return B.CreateSelect(B.CreateICmpSLT(a, ic(0)), i_neg(a), a);
        case S::Sign: return B.CreateSub(bool64(B.CreateICmpSGT(a, ic(0))), bool64(B.CreateICmpSLT(a, ic(0))));
        case S::Sqr: return B.CreateMul(a, a);
        case S::Add: return B.CreateAdd(a, b);
        case S::Mul: return B.CreateMul(a, b);
        case S::Sub: return B.CreateSub(a, b);
        case S::IntDiv: return i_floordiv(a, b);
        case S::Mod: return i_mod(a, b);
        case S::Pow: {
          // Lane by lane through the interpreter's own i_pow.
          FunctionCallee f = M.getOrInsertFunction("ember_jit_ipow", FunctionType::get(s64, {s64, s64}, false));
          Value* r = PoisonValue::get(i64);
          for (int l = 0; l < W; ++l)
            r = B.CreateInsertElement(r, B.CreateCall(f, {B.CreateExtractElement(a, l), B.CreateExtractElement(b, l)}), l);
          return r;
        }
        case S::Maximum: return B.CreateSelect(B.CreateICmpSGE(a, b), a, b);
        case S::Minimum: return B.CreateSelect(B.CreateICmpSLE(a, b), a, b);
        case S::Clip:
          return B.CreateSelect(B.CreateICmpSLT(a, b), b, B.CreateSelect(B.CreateICmpSGT(a, c), c, a));
        case S::And: return B.CreateAnd(a, b);
        case S::Or: return B.CreateOr(a, b);
        case S::Xor: return B.CreateXor(a, b);
        case S::Invert: return B.CreateXor(a, ic(-1));
        case S::Floor: case S::Ceil: case S::Trunc: case S::RoundHalfToEven: case S::RoundHalfAwayFromZero:
          return a;
        case S::LT: return bool64(B.CreateICmpSLT(a, b));
        case S::GT: return bool64(B.CreateICmpSGT(a, b));
        case S::LE: return bool64(B.CreateICmpSLE(a, b));
        case S::GE: return bool64(B.CreateICmpSGE(a, b));
        case S::EQ: return bool64(B.CreateICmpEQ(a, b));
        case S::NEQ: return bool64(B.CreateICmpNE(a, b));
        case S::IsNan: case S::IsInf: return ic(0);
        default: break;
      }
    } else {
      Type* t = a->getType();
      switch (op) {
        case S::Neg: return B.CreateFNeg(a);
        case S::Abs: return un(Intrinsic::fabs, a);
        case S::Sign:
          return B.CreateSelect(B.CreateFCmpOGT(a, fc(t, 0)), fc(t, 1),
                                B.CreateSelect(B.CreateFCmpOLT(a, fc(t, 0)), fc(t, -1),
                                               B.CreateSelect(B.CreateFCmpOEQ(a, fc(t, 0)), fc(t, 0), a)));
        case S::Sqr: return B.CreateFMul(a, a);
        case S::Sqrt: return un(Intrinsic::sqrt, a);
        case S::Reciprocal: return B.CreateFDiv(fc(t, 1), a);
        case S::Floor: return un(Intrinsic::floor, a);
        case S::Ceil: return un(Intrinsic::ceil, a);
        case S::Trunc: return un(Intrinsic::trunc, a);
        case S::RoundHalfToEven: return un(Intrinsic::roundeven, a);
        case S::RoundHalfAwayFromZero: {
          Value* r = un(Intrinsic::trunc, a);
          return B.CreateSelect(B.CreateFCmpOGE(un(Intrinsic::fabs, B.CreateFSub(a, r)), fc(t, 0.5)),
                                B.CreateFAdd(r, copysign(fc(t, 1), a)), r);
        }
        case S::Add: return B.CreateFAdd(a, b);
        case S::Mul: return B.CreateFMul(a, b);
        case S::Sub: return B.CreateFSub(a, b);
        case S::TrueDiv: return B.CreateFDiv(a, b);
        case S::IntDiv: { Value* m; return f_divmod(a, b, m); }
        case S::Mod: { Value* m; f_divmod(a, b, m); return m; }
        case S::Maximum:
          return B.CreateSelect(B.CreateOr(B.CreateFCmpOGE(a, b), B.CreateFCmpUNO(a, a)), a, b);
        case S::Minimum:
          return B.CreateSelect(B.CreateOr(B.CreateFCmpOLE(a, b), B.CreateFCmpUNO(a, a)), a, b);
        case S::Clip:
          return B.CreateSelect(B.CreateFCmpOLT(a, b), b, B.CreateSelect(B.CreateFCmpOGT(a, c), c, a));
        case S::LT: return bool64(B.CreateFCmpOLT(a, b));
        case S::GT: return bool64(B.CreateFCmpOGT(a, b));
        case S::LE: return bool64(B.CreateFCmpOLE(a, b));
        case S::GE: return bool64(B.CreateFCmpOGE(a, b));
        case S::EQ: return bool64(B.CreateFCmpOEQ(a, b));
        case S::NEQ: return bool64(B.CreateFCmpUNE(a, b));
        case S::IsNan: return bool64(B.CreateFCmpUNO(a, a));
        case S::IsInf: return bool64(B.CreateFCmpOEQ(un(Intrinsic::fabs, a), ConstantFP::getInfinity(t)));
        default: break;
      }
    }
    throw std::runtime_error("JIT cannot emit " + interp::opcode_name(in.op));
  }

  LLVMContext& C;
  Module& M;
  IRBuilder<> B;
  const Bytecode& bc_;
  const int W;
  const bool isolate_;
  const bool const_mem_;  // tier 1: vector constants loaded from globals
  Type *f64, *f32, *i64, *s64, *i8, *ptr;
  Function* F = nullptr;
  Value *m_ = nullptr, *scratch_ = nullptr, *end_ = nullptr;
  Value* goff_ = nullptr;           // byte offset of the current group (in loop())
  std::vector<Value*> in_base_;     // per input: its lane base, if this chunk reads it
  std::vector<int> last_read_;
  std::unordered_map<int32_t, Value*> vals_;
};

}  // namespace

std::unique_ptr<Module> emit_chunk(LLVMContext& ctx, const Bytecode& bc, int lo, int hi, const std::string& name,
                                   int lanes, int max_run, bool isolate, bool const_mem) {
  auto m = std::make_unique<Module>(name, ctx);
  Gen(ctx, *m, bc, lanes, isolate, const_mem).run(lo, hi, name, max_run);
  return m;
}

}  // namespace ember::jit
