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
  Gen(LLVMContext& c, Module& m, const Bytecode& bc) : C(c), M(m), B(c), bc_(bc) {
    f64 = Type::getDoubleTy(C);
    f32 = Type::getFloatTy(C);
    i64 = Type::getInt64Ty(C);
    i8 = Type::getInt8Ty(C);
    ptr = PointerType::get(C, 0);
  }

  void run(int lo, int hi, const std::string& name, int max_run) {
    auto* fty = FunctionType::get(Type::getVoidTy(C), {i64, i64, ptr, ptr, ptr}, false);
    F = Function::Create(fty, Function::ExternalLinkage, name, M);
    F->addFnAttr(Attribute::NoUnwind);
    F->addFnAttr(Attribute::NoRecurse);
    auto a = F->arg_begin();
    base_ = &*a++;
    m_ = &*a++;
    Value* in = &*a++;
    Value* out = &*a++;
    scratch_ = &*a++;
    for (int k = 0; k < 3; ++k) F->addParamAttr(2 + k, Attribute::NoAlias);
    B.SetInsertPoint(BasicBlock::Create(C, "entry", F));
    const bool last_chunk = hi == static_cast<int>(bc_.code.size());
    auto operands = [&](Value* arr, const std::vector<DType>& dts, std::vector<Operand>& ops) {
      for (size_t k = 0; k < dts.size(); ++k) {
        Value* p = B.CreateLoad(ptr, B.CreateConstGEP1_64(i8, arr, 16 * k));
        Value* s = B.CreateLoad(i64, B.CreateConstGEP1_64(i8, arr, 16 * k + 8));
        Type* mt = mem_ty(dts[k]);
        ops.push_back({B.CreateGEP(mt, p, B.CreateMul(base_, s)), s, mt, dts[k]});
      }
    };
    operands(in, bc_.inputs, ins_);
    if (last_chunk) {
      std::vector<DType> odt;
      for (const auto& o : bc_.outputs) odt.push_back(o.dtype);
      operands(out, odt, outs_);
    }
    compute_last_reads();

    // Runs of inline instructions become one fused loop each; math calls
    // work on whole blocks in scratch.
    int k = lo;
    while (k < hi) {
      if (is_math(bc_.code[k])) {
        emit_math(bc_.code[k]);
        ++k;
        continue;
      }
      int e = k;
      while (e < hi && e - k < max_run && !is_math(bc_.code[e])) ++e;
      const bool outputs_here = last_chunk && e == hi;
      emit_run(k, e, outputs_here);
      k = e;
    }
    if (last_chunk && (hi == lo || is_math(bc_.code[hi - 1]))) emit_run(hi, hi, true);
    B.CreateRetVoid();
  }

 private:
  struct Operand {
    Value* p0;      // element at index `base`
    Value* stride;  // elements
    Type* mt;
    DType dt;
  };

  Type* cls_ty(Cls c) const { return c == Cls::F64 ? f64 : c == Cls::F32 ? f32 : i64; }
  Type* mem_ty(DType dt) const {
    switch (dt) {
      case DType::Float64: return f64;
      case DType::Float32: return f32;
      case DType::Int64: return i64;
      case DType::Int32: return Type::getInt32Ty(C);
      case DType::Int16: return Type::getInt16Ty(C);
      default: return i8;  // int8, uint8, bool
    }
  }
  bool is_math(const Instr& in) const { return in.op < interp::kCvtBase && interp::op_sig(in.op).math; }
  bool is_reg(int32_t s) const { return s >= bc_.first_reg(); }
  bool is_input(int32_t s) const { return s >= bc_.num_consts() && s < bc_.first_reg(); }

  // Every register element takes 8 bytes whatever its class: a fused loop
  // may reuse a register for another class (the bytecode's register
  // allocation), and element i must then never overlap element j != i.
  Value* reg_ptr(int32_t s, Type*, Value* i) {
    Value* p = B.CreateConstGEP1_64(i8, scratch_, static_cast<uint64_t>(s - bc_.first_reg()) * kBlock * 8);
    return B.CreateGEP(i64, p, i);
  }
  Value* tmp_ptr(int t) {
    return B.CreateConstGEP1_64(i8, scratch_, static_cast<uint64_t>(bc_.num_regs + t) * kBlock * 8);
  }

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

  Value* constant(int32_t s) {
    const interp::Cell& c = bc_.constants[s];
    switch (bc_.const_cls[s]) {
      case Cls::F64: return ConstantFP::get(C, APFloat(c.f64));
      case Cls::F32: return ConstantFP::get(C, APFloat(c.f32));
      case Cls::I64: return ConstantInt::get(i64, c.i64, true);
    }
    return nullptr;
  }

  // An input element widened to its register class, as the VM's gather.
  Value* load_input(const Operand& o, Value* i) {
    Value* v = B.CreateLoad(o.mt, B.CreateGEP(o.mt, o.p0, B.CreateMul(i, o.stride)));
    switch (o.dt) {
      case DType::Float64:
      case DType::Float32:
      case DType::Int64: return v;
      case DType::Bool: return B.CreateZExt(B.CreateICmpNE(v, ConstantInt::get(i8, 0)), i64);
      case DType::UInt8: return B.CreateZExt(v, i64);
      default: return B.CreateSExt(v, i64);
    }
  }
  void store_output(const Operand& o, Value* i, Value* v) {
    Value* p = B.CreateGEP(o.mt, o.p0, B.CreateMul(i, o.stride));
    switch (o.dt) {
      case DType::Float64:
      case DType::Float32:
      case DType::Int64: B.CreateStore(v, p); break;
      case DType::Bool: B.CreateStore(B.CreateZExt(B.CreateICmpNE(v, ConstantInt::get(i64, 0)), i8), p); break;
      default: B.CreateStore(B.CreateTrunc(v, o.mt), p); break;
    }
  }

  // Slot s as a value of class c at element i of the current loop.
  Value* read(int32_t s, Cls c, Value* i) {
    if (s < bc_.num_consts()) return constant(s);
    if (auto it = vals_.find(s); it != vals_.end()) return it->second;
    Value* v = is_input(s) ? load_input(ins_[s - bc_.num_consts()], i)
                           : B.CreateLoad(cls_ty(c), reg_ptr(s, cls_ty(c), i));
    vals_[s] = v;
    return v;
  }

  // Emits `for (i = 0; i < m; ++i) body(i)`; m >= 1.
  template <class Body> void loop(Body&& body) {
    BasicBlock* pre = B.GetInsertBlock();
    BasicBlock* hdr = BasicBlock::Create(C, "loop", F);
    BasicBlock* after = BasicBlock::Create(C, "after", F);
    B.CreateBr(hdr);
    B.SetInsertPoint(hdr);
    PHINode* i = B.CreatePHI(i64, 2);
    i->addIncoming(ConstantInt::get(i64, 0), pre);
    body(static_cast<Value*>(i));
    Value* next = B.CreateAdd(i, ConstantInt::get(i64, 1));
    i->addIncoming(next, B.GetInsertBlock());
    B.CreateCondBr(B.CreateICmpSLT(next, m_), hdr, after);
    B.SetInsertPoint(after);
  }

  void emit_run(int lo, int hi, bool outputs) {
    loop([&](Value* i) {
      vals_.clear();
      for (int k = lo; k < hi; ++k) {
        const Instr& in = bc_.code[k];
        Value* v = emit_inline(in, i);
        vals_[in.d] = v;
        if (last_read_[k] >= hi) B.CreateStore(v, reg_ptr(in.d, v->getType(), i));
      }
      if (outputs)
        for (size_t k = 0; k < bc_.outputs.size(); ++k)
          store_output(outs_[k], i, read(bc_.outputs[k].slot, interp::cls_of(bc_.outputs[k].dtype), i));
    });
    vals_.clear();
  }

  void emit_math(const Instr& in) {
    const interp::OpSig sig = interp::op_sig(in.op);
    const auto op = static_cast<interp::ScalarOp>(in.op / interp::kNumCls);
    const char* name = math_name(op);
    if (!name) throw std::runtime_error("no math function for " + interp::opcode_name(in.op));
    const int32_t src[3] = {in.a, in.b, in.c};
    std::vector<Value*> args{m_};
    for (int k = 0; k < sig.nargs; ++k) {
      if (sig.arg[k] == Cls::F64 && is_reg(src[k])) {
        args.push_back(reg_ptr(src[k], f64, ConstantInt::get(i64, 0)));
        continue;
      }
      Value* t = tmp_ptr(k);
      loop([&](Value* i) {
        Value* v = read(src[k], sig.arg[k], i);
        if (sig.arg[k] == Cls::F32) v = B.CreateFPExt(v, f64);
        B.CreateStore(v, B.CreateGEP(f64, t, i));
        vals_.clear();
      });
      args.push_back(t);
    }
    const bool f32res = sig.dst == Cls::F32;
    Value* y = f32res ? tmp_ptr(3) : reg_ptr(in.d, f64, ConstantInt::get(i64, 0));
    args.push_back(y);
    std::vector<Type*> pts(args.size(), ptr);
    pts[0] = i64;
    FunctionCallee fn = M.getOrInsertFunction(name, FunctionType::get(Type::getVoidTy(C), pts, false));
    B.CreateCall(fn, args);
    if (f32res)
      loop([&](Value* i) {
        Value* v = B.CreateLoad(f64, B.CreateGEP(f64, y, i));
        B.CreateStore(B.CreateFPTrunc(v, f32), reg_ptr(in.d, f32, i));
      });
  }

  // ---- conversions (interp::impl::convert_value) ---------------------------
  Value* wrap_to(DType dt, Value* v) {
    switch (dt) {
      case DType::Int32: return B.CreateSExt(B.CreateTrunc(v, Type::getInt32Ty(C)), i64);
      case DType::Int16: return B.CreateSExt(B.CreateTrunc(v, Type::getInt16Ty(C)), i64);
      case DType::Int8: return B.CreateSExt(B.CreateTrunc(v, i8), i64);
      case DType::UInt8: return B.CreateZExt(B.CreateTrunc(v, i8), i64);
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
          FunctionCallee f = M.getOrInsertFunction("ember_jit_ipow", FunctionType::get(i64, {i64, i64}, false));
          return B.CreateCall(f, {a, b});
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
  Type *f64, *f32, *i64, *i8, *ptr;
  Function* F = nullptr;
  Value *base_ = nullptr, *m_ = nullptr, *scratch_ = nullptr;
  std::vector<Operand> ins_, outs_;
  std::vector<int> last_read_;
  std::unordered_map<int32_t, Value*> vals_;
};

}  // namespace

std::unique_ptr<Module> emit_chunk(LLVMContext& ctx, const Bytecode& bc, int lo, int hi, const std::string& name,
                                   int max_run) {
  auto m = std::make_unique<Module>(name, ctx);
  Gen(ctx, *m, bc).run(lo, hi, name, max_run);
  return m;
}

}  // namespace ember::jit
