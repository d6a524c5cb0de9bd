// Tier 1 without LLVM: each bytecode instruction becomes a few AVX2
// instructions (asmjit's Assembler, one pass, no IR). Runs of inline ops
// become one loop over the block's groups of 4 lanes; values stay in ymm
// registers within a run. Everything that is not exactly one IEEE/integer
// AVX2 sequence equal to interp/scalar_impl.hpp calls existing code: the
// math library's array functions, or the VM's own vector function.
#include "jit/emit_x86.hpp"

#include <array>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <asmjit/x86.h>

#include "interp/config.hpp"
#include "interp/math/math.hpp"
#include "interp/vm.hpp"

// asmjit's debug output writes here (CMakeLists.txt renames its reference
// to libc's stderr so that it links into shared objects).
extern "C" __attribute__((visibility("hidden"))) std::FILE* ember_asmjit_stderr;
std::FILE* ember_asmjit_stderr = stderr;

namespace ember::jit {

namespace {

using namespace asmjit;
using interp::Bytecode;
using interp::Cls;
using interp::Instr;
using S = interp::ScalarOp;

// Leaked on purpose, as the LLVM JIT: code may be freed by Programs
// destroyed at exit. JitRuntime is thread-safe.
JitRuntime& runtime() {
  static JitRuntime* r = new JitRuntime();
  return *r;
}

// A call of the VM's vector function for one opcode, slots renamed to
// d = 0, a = 1, b = 2, c = 3 of the array table built below.
struct VecCall {
  interp::VecOpFn fn;
  Instr in;
};
void call_vec(const VecCall* vc, int64_t m, void* d, void* a, void* b, void* c) {
  void* s[4] = {d, a, b, c};
  vc->fn(s, vc->in, m, nullptr);
}

class DirectCode : public Code {
 public:
  ~DirectCode() override {
    if (fn) runtime().release(fn);
  }
  void* fn = nullptr;
  std::deque<VecCall> calls;                // addresses baked into the code
  std::deque<std::vector<int64_t>> splats;  // constant operands of calls, one block each
};

uint64_t math_addr(S op) {
  const math::Entry* e = math::entry(op);
  return e ? reinterpret_cast<uint64_t>(e->address()) : 0;
}

enum class How { Inline, Vec, Math, No };

// Inline ops per loop at most: a loop body must stay within the decoded
// uop cache (1000 ops in one loop measured 1.8x slower than 64 per loop).
// EMBER_JIT_T1_RUN overrides (tuning).
int max_run() {
  static const int n = [] {
    const auto& e = config().jit_t1_run;
    const int v = e ? std::atoi(e->c_str()) : 0;
    return v > 0 ? v : 64;
  }();
  return n;
}

// Ops whose AVX2 sequence below is bit-identical to scalar_impl.hpp: the
// rows marked AsmF (float classes) or AsmI (int64 class).
constexpr bool inline_ok(S op, Cls c) {
  return interp::op_info(op).has(c == Cls::I64 ? interp::opflag::AsmI : interp::opflag::AsmF);
}

How how(const Instr& in) {
  if (in.op >= interp::kNumOpcodes) return How::No;
  if (in.op >= interp::kCvtBase) {
    const auto src = static_cast<Cls>((in.op - interp::kCvtBase) / kNumDTypes);
    const Cls dst = interp::cls_of(in.dtype);
    // float32 <-> float64 and the identities inline; the VM's functions
    // cannot take float32 cells (their lanes are not contiguous).
    if (src != Cls::I64 && dst != Cls::I64) return How::Inline;
    if (src == Cls::F32 || dst == Cls::F32) return How::No;
    if ((src == Cls::F64 && in.dtype == DType::Float64) || (src == Cls::I64 && in.dtype == DType::Int64))
      return How::Inline;
    return How::Vec;
  }
  const interp::OpSig sig = interp::op_sig(in.op);
  if (!sig.valid) return How::No;
  bool f32 = sig.dst == Cls::F32;
  for (int k = 0; k < sig.nargs; ++k) f32 |= sig.arg[k] == Cls::F32;
  const auto op = static_cast<S>(in.op / interp::kNumCls);
  if (sig.math) return math_addr(op) ? How::Math : How::No;
  if (inline_ok(op, static_cast<Cls>(in.op % interp::kNumCls))) return How::Inline;
  return f32 ? How::No : How::Vec;
}

// vcmppd predicates (ordered/quiet as C's comparisons; NEQ unordered).
enum : uint8_t { kEQ = 0x00, kUNORD = 0x03, kNEQ = 0x04, kLT = 0x11, kLE = 0x12, kGE = 0x1D, kGT = 0x1E };
constexpr uint64_t kOnes = ~0ull;

// The lanes of one register class, for the per-op emitters. float64: 4 lanes
// of a ymm; float32: 4 lanes in the low 16 bytes of each group (xmm
// registers; VEX clears the upper half), with the same sequences in single
// precision; int64: 4 lanes of a ymm.
struct F64 {
  static constexpr Cls kCls = Cls::F64;
  using R = x86::Ymm;
  static R lanes(const x86::Ymm& y) { return y; }
  static constexpr InstId kXor = x86::Inst::kIdVxorpd, kAnd = x86::Inst::kIdVandpd, kOr = x86::Inst::kIdVorpd,
                          kAdd = x86::Inst::kIdVaddpd, kSub = x86::Inst::kIdVsubpd, kMul = x86::Inst::kIdVmulpd,
                          kDiv = x86::Inst::kIdVdivpd, kSqrt = x86::Inst::kIdVsqrtpd, kRound = x86::Inst::kIdVroundpd,
                          kCmp = x86::Inst::kIdVcmppd, kBlend = x86::Inst::kIdVblendvpd, kMov = x86::Inst::kIdVmovupd;
  static constexpr uint64_t kSign = 0x8000000000000000ull, kAbs = 0x7fffffffffffffffull,
                            kOne = 0x3ff0000000000000ull, kMinusOne = 0xbff0000000000000ull,
                            kHalf = 0x3fe0000000000000ull, kInf = 0x7ff0000000000000ull;
};
struct F32 {
  static constexpr Cls kCls = Cls::F32;
  using R = x86::Xmm;
  static R lanes(const x86::Ymm& y) { return y.xmm(); }
  static constexpr InstId kXor = x86::Inst::kIdVxorps, kAnd = x86::Inst::kIdVandps, kOr = x86::Inst::kIdVorps,
                          kAdd = x86::Inst::kIdVaddps, kSub = x86::Inst::kIdVsubps, kMul = x86::Inst::kIdVmulps,
                          kDiv = x86::Inst::kIdVdivps, kSqrt = x86::Inst::kIdVsqrtps, kRound = x86::Inst::kIdVroundps,
                          kCmp = x86::Inst::kIdVcmpps, kBlend = x86::Inst::kIdVblendvps, kMov = x86::Inst::kIdVmovups;
  // kInf: IsInf compares |x| with a float64 infinity, exact in float32 too.
  static constexpr uint64_t kSign = 0x80000000u, kAbs = 0x7fffffffu, kOne = 0x3f800000u, kMinusOne = 0xbf800000u,
                            kHalf = 0x3f000000u, kInf = 0x7f800000u;
};
struct I64 {
  static constexpr Cls kCls = Cls::I64;
  using R = x86::Ymm;
  static R lanes(const x86::Ymm& y) { return y; }
};
template <class L> concept FloatLanes = L::kCls != Cls::I64;

// An instruction's registers as lanes of class L, and operand a and the
// result whole (Switch's int64 condition, float32 compare masks).
template <class L> struct Ops {
  typename L::R a, b, c, y;
  x86::Ymm ya, yy;
};
template <class L> Ops<L> ops(const x86::Ymm& a, const x86::Ymm& b, const x86::Ymm& c, const x86::Ymm& y) {
  return {L::lanes(a), L::lanes(b), L::lanes(c), L::lanes(y), a, y};
}

class ErrorRecorder : public ErrorHandler {
 public:
  void handleError(Error err, const char* message, BaseEmitter*) override {
    if (!first) first = err, msg = message;
  }
  Error first = kErrorOk;
  std::string msg;
};

class Emitter {
 public:
  Emitter(const Bytecode& bc, CodeHolder& code, DirectCode& dc) : bc_(bc), a_(&code), dc_(dc) {}

  void run(int lo, int hi) {
    last_reads(lo, hi);
    // Prologue: rbx = scratch, r12 = m, r13 = the groups' end offset,
    // r15 = in. Five pushes keep rsp % 16 == 0 for calls.
    a_.push(x86::rbx);
    a_.push(x86::r12);
    a_.push(x86::r13);
    a_.push(x86::r14);
    a_.push(x86::r15);
    Label done = a_.newLabel();
    a_.test(x86::rdi, x86::rdi);
    a_.jle(done);
    a_.mov(kBase, x86::rsi);
    a_.mov(kIn, x86::rdx);
    a_.mov(kM, x86::rdi);
    a_.lea(kEnd, x86::ptr(x86::rdi, 3));
    a_.and_(kEnd, -4);
    a_.shl(kEnd, 3);
    int k = lo;
    while (k < hi) {
      const How h = how(bc_.code[k]);
      if (h != How::Inline) {
        emit_call(bc_.code[k], h);
        ++k;
        continue;
      }
      int e = k;
      while (e < hi && e - k < max_run() && how(bc_.code[e]) == How::Inline) ++e;
      emit_run(k, e);
      k = e;
    }
    a_.bind(done);
    a_.vzeroupper();
    a_.pop(x86::r15);
    a_.pop(x86::r14);
    a_.pop(x86::r13);
    a_.pop(x86::r12);
    a_.pop(x86::rbx);
    a_.ret();
    // Constant pool: each value splat over one 32-byte group.
    a_.align(AlignMode::kData, 32);
    for (const auto& [bits, label] : pool_) {
      a_.bind(label);
      const uint64_t v[4] = {bits, bits, bits, bits};
      a_.embed(v, sizeof v);
    }
  }

 private:
  // rbx: scratch; r12: m; r13: end of the groups (bytes); r14: the current
  // group's byte offset inside every cell; r15: in (the inputs' lane bases).
  const x86::Gp kBase = x86::rbx, kM = x86::r12, kEnd = x86::r13, kG = x86::r14, kIn = x86::r15;

  // THE one place that knows where lane group g of slot s lives: registers
  // in cells at scratch + cell_index * kCellBytes, input k at in[k]
  // (jit.hpp's chunk ABI); group g at byte 32 * g whatever the class.
  // group0: g = 0 (the start, for calls), else g is the loop's (kG).
  // Constants: their splat in the pool. An input's base goes through rax,
  // so the Mem returned is good until rax is next written.
  x86::Mem group(int32_t s, bool group0 = false) {
    if (s < bc_.num_consts()) return x86::ymmword_ptr(pool(const_bits(s)));
    if (s < bc_.first_reg()) {
      a_.mov(x86::rax, x86::qword_ptr(kIn, 8 * (s - bc_.first_input())));
      return group0 ? x86::ymmword_ptr(x86::rax) : x86::ymmword_ptr(x86::rax, kG, 0, 0);
    }
    const int32_t off = static_cast<int32_t>(int64_t(cell_index(bc_, s)) * kCellBytes);
    return group0 ? x86::ymmword_ptr(kBase, off) : x86::ymmword_ptr(kBase, kG, 0, off);
  }

  // A constant's 64-bit pool pattern (a float32 twice: its lanes are 4 bytes).
  uint64_t const_bits(int32_t s) const {
    if (bc_.const_cls[s] != Cls::F32) return static_cast<uint64_t>(bc_.constants[s].i64);
    uint32_t b;
    std::memcpy(&b, &bc_.constants[s].f32, 4);
    return uint64_t(b) << 32 | b;
  }
  x86::Mem K32(uint32_t bits) { return x86::xmmword_ptr(pool(uint64_t(bits) << 32 | bits)); }

  Label pool(uint64_t bits) {
    auto it = pool_.find(bits);
    if (it != pool_.end()) return it->second;
    Label l = a_.newLabel();
    pool_.emplace(bits, l);
    return l;
  }
  x86::Mem K(uint64_t bits) { return x86::ymmword_ptr(pool(bits)); }

  // For each instruction of [lo, hi), the last instruction reading its
  // result before it is overwritten (code.size() for outputs, -1 if none),
  // as codegen.cpp. Past hi only "read at all" matters: the scan stops once
  // every value of the chunk is read or overwritten (scanning to the end
  // for each chunk made large Composites quadratic).
  void last_reads(int lo, int hi) {
    const int n = static_cast<int>(bc_.code.size());
    lo_ = lo;
    last_read_.assign(hi - lo, -1);
    std::vector<int> writer(bc_.num_slots(), -1);
    int open = 0;
    for (int j = lo; j < n; ++j) {
      if (j == hi) {
        for (int w : writer) open += w >= 0;
        if (open == 0) break;
      }
      const Instr& in = bc_.code[j];
      for (int32_t s : {in.a, in.b, in.c})
        if (s >= 0 && writer[s] >= 0) {
          last_read_[writer[s] - lo] = j;
          if (j >= hi) writer[s] = -1, --open;
        }
      if (j < hi) {
        writer[in.d] = j;
      } else {
        if (writer[in.d] >= 0) writer[in.d] = -1, --open;
        if (open == 0) break;
      }
    }
    // Outputs: direct ones (jit.hpp) are stored through in[ninputs + j] at
    // their definition; the others stay in their cells for the driver.
    out_writes_.assign(hi - lo, {});
    const std::vector<int> direct = direct_outputs(bc_, false);  // never one-element kernels
    for (size_t j = 0; j < bc_.outputs.size(); ++j) {
      if (direct[j] >= lo && direct[j] < hi) {
        out_writes_[direct[j] - lo].push_back(static_cast<int>(j));
        continue;
      }
      const int w = writer[bc_.outputs[j].slot];
      if (w >= 0 && direct[j] < 0) last_read_[w - lo] = n;
    }
  }
  int lr(int k) const { return last_read_[k - lo_]; }

  // ---- ymm allocation within a run -----------------------------------------
  struct Reg {
    int32_t slot = -1;  // -1 free, -2 a temporary
    int prod = -1;      // instruction that computed it (-1: loaded)
    bool dirty = false; // needed later in the run and not in its cell
    bool pin = false;   // in use by the current instruction
    uint32_t used = 0;
  };

  bool dead(const Reg& r) const { return r.slot == -1 || (r.slot >= 0 && r.prod >= 0 && lr(r.prod) < k_); }

  int alloc() {
    int best = -1;
    for (int i = 0; i < 16; ++i) {
      if (r_[i].pin) continue;
      if (dead(r_[i])) {
        best = i;
        break;
      }
      // Else: a clean register (reload costs a load) least recently used,
      // then the dirty one read last.
      if (best < 0) {
        best = i;
        continue;
      }
      const Reg &b = r_[best], &c = r_[i];
      if (b.dirty != c.dirty ? b.dirty : (c.dirty ? lr(c.prod) > lr(b.prod) : c.used < b.used))
        best = i;
    }
    if (best < 0) throw std::logic_error("direct JIT: out of ymm registers");
    if (r_[best].dirty && !dead(r_[best])) a_.vmovupd(group(r_[best].slot), x86::ymm(best));
    r_[best] = Reg{};
    r_[best].pin = true;
    r_[best].used = ++clock_;
    return best;
  }
  x86::Ymm tmp() {
    const int i = alloc();
    r_[i].slot = -2;
    return x86::ymm(i);
  }
  x86::Ymm operand(int32_t s) {
    for (int i = 0; i < 16; ++i)
      if (r_[i].slot == s) {
        r_[i].pin = true;
        r_[i].used = ++clock_;
        return x86::ymm(i);
      }
    const int i = alloc();
    a_.vmovupd(x86::ymm(i), group(s));
    r_[i].slot = s;
    return x86::ymm(i);
  }
  // The current instruction's result is in y: slot d now lives there.
  void define(const Instr& in, const x86::Ymm& y) {
    const int yi = static_cast<int>(y.id());
    for (int i = 0; i < 16; ++i)
      if (i != yi && r_[i].slot == in.d) r_[i].slot = -1, r_[i].dirty = false;
    Reg& r = r_[yi];
    r.slot = in.d;
    r.prod = k_;
    r.dirty = lr(k_) > k_;
    if (lr(k_) >= hi_) {
      a_.vmovupd(group(in.d), y);
      r.dirty = false;
    }
    for (int j : out_writes_[k_ - lo_]) {
      a_.mov(x86::rax, x86::qword_ptr(kIn, 8 * static_cast<int32_t>(bc_.inputs.size() + j)));
      a_.vmovupd(x86::ymmword_ptr(x86::rax, kG), y);
    }
    for (Reg& x : r_) {
      x.pin = false;
      if (x.slot == -2) x = Reg{};
    }
  }

  // ---- runs and calls ------------------------------------------------------
  // for (kG = 0; kG < end; kG += 32) body();  (m >= 1: at least one group)
  template <class Body> void loop(Body&& body) {
    a_.xor_(kG.r32(), kG.r32());
    Label top = a_.newLabel();
    a_.align(AlignMode::kCode, 16);
    a_.bind(top);
    body();
    a_.add(kG, 32);
    a_.cmp(kG, kEnd);
    a_.jb(top);
  }

  void emit_run(int lo, int hi) {
    hi_ = hi;
    r_ = {};
    loop([&] {
      for (k_ = lo; k_ < hi; ++k_) emit_inline(bc_.code[k_]);
    });
  }

  // Float64 temporary cell t (0-3) of the scratch area, at the loop's group
  // or (group0) at its start.
  x86::Mem tmp_cell(int t, bool group0 = false) const {
    const int32_t off = static_cast<int32_t>(int64_t(bc_.num_regs + bc_.inputs.size() + t) * kCellBytes);
    return group0 ? x86::ymmword_ptr(kBase, off) : x86::ymmword_ptr(kBase, kG, 0, off);
  }

  // Pointer to slot s's whole cell (a constant: a block of its splat).
  void arg_ptr(const x86::Gp& reg, int32_t s) {
    if (s < 0) {
      a_.xor_(reg.r32(), reg.r32());
    } else if (s < bc_.num_consts()) {
      auto& v = dc_.splats.emplace_back(kBlock, bc_.constants[s].i64);
      a_.mov(reg, reinterpret_cast<uint64_t>(v.data()));
    } else if (s < bc_.first_reg()) {
      a_.mov(reg, x86::qword_ptr(kIn, 8 * (s - bc_.first_input())));
    } else {
      a_.lea(reg, group(s, true));
    }
  }

  void emit_call(const Instr& in, How h) {
    a_.vzeroupper();
    if (h == How::Vec) {
      VecCall& vc = dc_.calls.emplace_back(VecCall{interp::vec_fn(in.op), in});
      vc.in.d = 0;
      vc.in.a = in.a >= 0 ? 1 : -1;
      vc.in.b = in.b >= 0 ? 2 : -1;
      vc.in.c = in.c >= 0 ? 3 : -1;
      a_.mov(x86::rdi, reinterpret_cast<uint64_t>(&vc));
      a_.mov(x86::rsi, kM);
      arg_ptr(x86::rdx, in.d);
      arg_ptr(x86::rcx, in.a);
      arg_ptr(x86::r8, in.b);
      arg_ptr(x86::r9, in.c);
      a_.mov(x86::rax, reinterpret_cast<uint64_t>(&call_vec));
    } else {
      // ember_math_f(m, x..., y) over whole float64 cells. float32, as the
      // VM: widened into float64 temporaries, the result rounded back.
      const auto op = static_cast<S>(in.op / interp::kNumCls);
      const bool f32 = interp::op_sig(in.op).dst == Cls::F32;
      const int n = interp::math_arity(op);
      const x86::Gp regs[4] = {x86::rsi, x86::rdx, x86::rcx, x86::r8};
      const int32_t src[3] = {in.a, in.b, in.c};
      for (int k = 0; k < n && f32; ++k)
        loop([&] {
          x86::Mem m = group(src[k]);
          m.setSize(16);
          a_.vcvtps2pd(x86::ymm0, m);
          a_.vmovupd(tmp_cell(k), x86::ymm0);
        });
      if (f32) a_.vzeroupper();
      a_.mov(x86::rdi, kM);
      for (int k = 0; k < n; ++k) {
        if (f32) a_.lea(regs[k], tmp_cell(k, true));
        else arg_ptr(regs[k], src[k]);
      }
      if (f32) a_.lea(regs[n], tmp_cell(3, true));
      else arg_ptr(regs[n], in.d);
      a_.mov(x86::rax, math_addr(op));
      a_.call(x86::rax);
      if (f32)
        loop([&] {
          a_.vcvtpd2ps(x86::xmm0, tmp_cell(3));
          a_.vmovupd(group(in.d), x86::ymm0);
        });
      return;
    }
    a_.call(x86::rax);
  }

  // ---- inline ops (interp/scalar_impl.hpp, one for one) ---------------------
  void emit_inline(const Instr& in) {
    using x86::Ymm;
    if (in.op >= interp::kCvtBase) {
      const auto src = static_cast<Cls>((in.op - interp::kCvtBase) / kNumDTypes);
      const Cls dst = interp::cls_of(in.dtype);
      const Ymm a = operand(in.a);
      const Ymm y = x86::ymm(alloc());
      if (src == Cls::F32 && dst == Cls::F64) a_.vcvtps2pd(y, a.xmm());       // exact
      else if (src == Cls::F64 && dst == Cls::F32) a_.vcvtpd2ps(y.xmm(), a);  // round to nearest even
      else a_.vmovdqa(y, a);                                                  // identities
      return define(in, y);
    }
    const interp::OpSig sig = interp::op_sig(in.op);
    const auto op = static_cast<S>(in.op / interp::kNumCls);
    const Ymm a = operand(in.a);
    const Ymm b = sig.nargs >= 2 ? operand(in.b) : Ymm();
    const Ymm c = sig.nargs >= 3 ? operand(in.c) : Ymm();
    const Ymm y = x86::ymm(alloc());
    switch (static_cast<Cls>(in.op % interp::kNumCls)) {
      case Cls::F64: emit_op(op, ops<F64>(a, b, c, y)); break;
      case Cls::F32: emit_op(op, ops<F32>(a, b, c, y)); break;
      case Cls::I64: emit_op(op, ops<I64>(a, b, c, y)); break;
    }
    define(in, y);
  }

  // One emitter per row of interp/scalar_ops.def marked AsmF or AsmI,
  // op_<Enum>: a template over the float lanes (float64 and float32 share
  // it) and an overload for int64. emit_op's switch names every row and calls
  // the emitter where the row's flag is set, so such a row without one does
  // not compile; the other rows never reach it (how() sends them to calls).
  template <class L> void emit_op(S op, const Ops<L>& o) {
    switch (op) {
#define X(E, ...)                                             \
  case S::E:                                                  \
    if constexpr (inline_ok(S::E, L::kCls)) return op_##E(o); \
    break;
#include "interp/scalar_ops.def"
#undef X
    }
    throw std::logic_error("direct JIT: no inline " + interp::opcode_name(interp::opcode_of(op, L::kCls)));
  }

  // A constant splat over one group, as an operand of L's lane width.
  template <class L> x86::Mem k(uint64_t bits) {
    if constexpr (L::kCls == Cls::F32) return K32(static_cast<uint32_t>(bits));
    else return K(bits);
  }
  template <class L> typename L::R ltmp() { return L::lanes(tmp()); }
  // A float mask in y as 0/1 in the group's 4 qword lanes.
  template <FloatLanes L> void mask01(const Ops<L>& o) {
    if constexpr (L::kCls == Cls::F32) a_.vpmovsxdq(o.yy, o.y);
    a_.vpsrlq(o.yy, o.yy, 63);
  }
  template <FloatLanes L> void cmp01(const Ops<L>& o, uint8_t p) {
    a_.emit(L::kCmp, o.y, o.a, o.b, p);
    mask01(o);
  }
  template <FloatLanes L> void round(const Ops<L>& o, uint8_t mode) { a_.emit(L::kRound, o.y, o.a, mode); }

  template <FloatLanes L> void op_Neg(const Ops<L>& o) { a_.emit(L::kXor, o.y, o.a, k<L>(L::kSign)); }
  void op_Neg(const Ops<I64>& o) {
    a_.vpxor(o.y, o.y, o.y);
    a_.vpsubq(o.y, o.y, o.a);
  }
  template <FloatLanes L> void op_Abs(const Ops<L>& o) { a_.emit(L::kAnd, o.y, o.a, k<L>(L::kAbs)); }
  void op_Abs(const Ops<I64>& o) {  // a < 0 ? 0 - a : a
    const x86::Ymm t = tmp();
    a_.vpxor(t, t, t);
    a_.vpcmpgtq(t, t, o.a);
    a_.vpxor(o.y, o.y, o.y);
    a_.vpsubq(o.y, o.y, o.a);
    a_.vblendvpd(o.y, o.a, o.y, t);
  }
  template <FloatLanes L> void op_Sign(const Ops<L>& o) {  // x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x
    const auto t = ltmp<L>();
    a_.emit(L::kCmp, t, o.a, k<L>(0), kEQ);
    a_.emit(L::kBlend, o.y, o.a, k<L>(0), t);
    a_.emit(L::kCmp, t, o.a, k<L>(0), kLT);
    a_.emit(L::kBlend, o.y, o.y, k<L>(L::kMinusOne), t);
    a_.emit(L::kCmp, t, o.a, k<L>(0), kGT);
    a_.emit(L::kBlend, o.y, o.y, k<L>(L::kOne), t);
  }
  void op_Sign(const Ops<I64>& o) {  // (a > 0) - (a < 0) = mask(a < 0) - mask(a > 0)
    const x86::Ymm t = tmp(), u = tmp();
    a_.vpxor(t, t, t);
    a_.vpcmpgtq(u, t, o.a);
    a_.vpcmpgtq(t, o.a, t);
    a_.vpsubq(o.y, u, t);
  }
  template <FloatLanes L> void op_Add(const Ops<L>& o) { a_.emit(L::kAdd, o.y, o.a, o.b); }
  void op_Add(const Ops<I64>& o) { a_.vpaddq(o.y, o.a, o.b); }
  template <FloatLanes L> void op_Mul(const Ops<L>& o) { a_.emit(L::kMul, o.y, o.a, o.b); }
  template <FloatLanes L> void op_Sub(const Ops<L>& o) { a_.emit(L::kSub, o.y, o.a, o.b); }
  void op_Sub(const Ops<I64>& o) { a_.vpsubq(o.y, o.a, o.b); }
  template <FloatLanes L> void op_TrueDiv(const Ops<L>& o) { a_.emit(L::kDiv, o.y, o.a, o.b); }
  template <FloatLanes L> void op_Sqr(const Ops<L>& o) { a_.emit(L::kMul, o.y, o.a, o.a); }
  template <FloatLanes L> void op_Sqrt(const Ops<L>& o) { a_.emit(L::kSqrt, o.y, o.a); }
  template <FloatLanes L> void op_Reciprocal(const Ops<L>& o) {
    a_.emit(L::kMov, o.y, k<L>(L::kOne));
    a_.emit(L::kDiv, o.y, o.y, o.a);
  }
  // Floor, Ceil, ...: the identity on integers.
  template <FloatLanes L> void op_Floor(const Ops<L>& o) { round(o, 0x09); }
  void op_Floor(const Ops<I64>& o) { a_.vmovdqa(o.y, o.a); }
  template <FloatLanes L> void op_Ceil(const Ops<L>& o) { round(o, 0x0A); }
  void op_Ceil(const Ops<I64>& o) { a_.vmovdqa(o.y, o.a); }
  template <FloatLanes L> void op_Trunc(const Ops<L>& o) { round(o, 0x0B); }
  void op_Trunc(const Ops<I64>& o) { a_.vmovdqa(o.y, o.a); }
  template <FloatLanes L> void op_RoundHalfToEven(const Ops<L>& o) { round(o, 0x08); }
  void op_RoundHalfToEven(const Ops<I64>& o) { a_.vmovdqa(o.y, o.a); }
  // r = trunc(x); |x - r| >= 0.5 ? r + copysign(1, x) : r
  template <FloatLanes L> void op_RoundHalfAwayFromZero(const Ops<L>& o) {
    const auto t = ltmp<L>(), u = ltmp<L>();
    round(o, 0x0B);
    a_.emit(L::kSub, t, o.a, o.y);
    a_.emit(L::kAnd, t, t, k<L>(L::kAbs));
    a_.emit(L::kCmp, t, t, k<L>(L::kHalf), kGE);
    a_.emit(L::kAnd, u, o.a, k<L>(L::kSign));
    a_.emit(L::kOr, u, u, k<L>(L::kOne));
    a_.emit(L::kAdd, u, o.y, u);
    a_.emit(L::kBlend, o.y, o.y, u, t);
  }
  void op_RoundHalfAwayFromZero(const Ops<I64>& o) { a_.vmovdqa(o.y, o.a); }
  // (a >= b) | isnan(a) ? a : b  (<= for minimum)
  template <FloatLanes L> void max_min(const Ops<L>& o, uint8_t p) {
    const auto t = ltmp<L>(), u = ltmp<L>();
    a_.emit(L::kCmp, t, o.a, o.b, p);
    a_.emit(L::kCmp, u, o.a, o.a, kUNORD);
    a_.emit(L::kOr, t, t, u);
    a_.emit(L::kBlend, o.y, o.b, o.a, t);
  }
  template <FloatLanes L> void op_Maximum(const Ops<L>& o) { max_min(o, kGE); }
  void op_Maximum(const Ops<I64>& o) {  // a >= b ? a : b
    const x86::Ymm t = tmp();
    a_.vpcmpgtq(t, o.b, o.a);
    a_.vblendvpd(o.y, o.a, o.b, t);
  }
  template <FloatLanes L> void op_Minimum(const Ops<L>& o) { max_min(o, kLE); }
  void op_Minimum(const Ops<I64>& o) {  // a <= b ? a : b
    const x86::Ymm t = tmp();
    a_.vpcmpgtq(t, o.a, o.b);
    a_.vblendvpd(o.y, o.a, o.b, t);
  }
  template <FloatLanes L> void op_Clip(const Ops<L>& o) {  // x < lo ? lo : x > hi ? hi : x
    const auto t = ltmp<L>();
    a_.emit(L::kCmp, t, o.a, o.c, kGT);
    a_.emit(L::kBlend, o.y, o.a, o.c, t);
    a_.emit(L::kCmp, t, o.a, o.b, kLT);
    a_.emit(L::kBlend, o.y, o.y, o.b, t);
  }
  void op_Clip(const Ops<I64>& o) {
    const x86::Ymm t = tmp();
    a_.vpcmpgtq(t, o.a, o.c);
    a_.vblendvpd(o.y, o.a, o.c, t);
    a_.vpcmpgtq(t, o.b, o.a);
    a_.vblendvpd(o.y, o.y, o.b, t);
  }
  template <class L> void op_Switch(const Ops<L>& o) {  // a != 0 ? b : c
    const x86::Ymm t = tmp();
    a_.vpcmpeqq(t, o.ya, K(0));
    if constexpr (L::kCls == Cls::F32) {
      // 4 qword masks to 4 dword masks in the low half.
      a_.vpshufd(t, t, 0x88);
      a_.vpermq(t, t, 0x08);
      a_.vblendvps(o.y, o.b, o.c, t.xmm());
    } else {
      a_.vblendvpd(o.y, o.b, o.c, t);
    }
  }
  template <FloatLanes L> void op_LT(const Ops<L>& o) { cmp01(o, kLT); }
  void op_LT(const Ops<I64>& o) {
    a_.vpcmpgtq(o.y, o.b, o.a);
    a_.vpsrlq(o.y, o.y, 63);
  }
  template <FloatLanes L> void op_GT(const Ops<L>& o) { cmp01(o, kGT); }
  void op_GT(const Ops<I64>& o) {
    a_.vpcmpgtq(o.y, o.a, o.b);
    a_.vpsrlq(o.y, o.y, 63);
  }
  template <FloatLanes L> void op_LE(const Ops<L>& o) { cmp01(o, kLE); }
  void op_LE(const Ops<I64>& o) {  // !(a > b): mask + 1
    a_.vpcmpgtq(o.y, o.a, o.b);
    a_.vpaddq(o.y, o.y, K(1));
  }
  template <FloatLanes L> void op_GE(const Ops<L>& o) { cmp01(o, kGE); }
  void op_GE(const Ops<I64>& o) {
    a_.vpcmpgtq(o.y, o.b, o.a);
    a_.vpaddq(o.y, o.y, K(1));
  }
  template <FloatLanes L> void op_EQ(const Ops<L>& o) { cmp01(o, kEQ); }
  void op_EQ(const Ops<I64>& o) {
    a_.vpcmpeqq(o.y, o.a, o.b);
    a_.vpsrlq(o.y, o.y, 63);
  }
  template <FloatLanes L> void op_NEQ(const Ops<L>& o) { cmp01(o, kNEQ); }
  void op_NEQ(const Ops<I64>& o) {
    a_.vpcmpeqq(o.y, o.a, o.b);
    a_.vpaddq(o.y, o.y, K(1));
  }
  void op_And(const Ops<I64>& o) { a_.vpand(o.y, o.a, o.b); }
  void op_Or(const Ops<I64>& o) { a_.vpor(o.y, o.a, o.b); }
  void op_Xor(const Ops<I64>& o) { a_.vpxor(o.y, o.a, o.b); }
  void op_Invert(const Ops<I64>& o) { a_.vpxor(o.y, o.a, K(kOnes)); }
  template <FloatLanes L> void op_IsNan(const Ops<L>& o) {
    a_.emit(L::kCmp, o.y, o.a, o.a, kUNORD);
    mask01(o);
  }
  void op_IsNan(const Ops<I64>& o) { a_.vpxor(o.y, o.y, o.y); }
  template <FloatLanes L> void op_IsInf(const Ops<L>& o) {
    a_.emit(L::kAnd, o.y, o.a, k<L>(L::kAbs));
    a_.emit(L::kCmp, o.y, o.y, k<L>(L::kInf), kEQ);
    mask01(o);
  }
  void op_IsInf(const Ops<I64>& o) { a_.vpxor(o.y, o.y, o.y); }

  const Bytecode& bc_;
  x86::Assembler a_;
  DirectCode& dc_;
  std::vector<int> last_read_;
  std::vector<std::vector<int>> out_writes_;  // per instruction of [lo, hi): the direct outputs it defines
  std::unordered_map<uint64_t, Label> pool_;
  std::array<Reg, 16> r_{};
  uint32_t clock_ = 0;
  int k_ = 0, hi_ = 0, lo_ = 0;
};

}  // namespace

bool direct_host_ok() {
  static const bool ok = CpuInfo::host().hasFeature(CpuFeatures::X86::kAVX2);
  return ok;
}

bool direct_supports(const Bytecode& bc, int lo, int hi) {
  if (!direct_host_ok() || lanes(1) != 4) return false;
  if (int64_t(bc.num_slots()) * kCellBytes > INT32_MAX) return false;  // disp32 cell offsets
  for (int k = lo; k < hi; ++k)
    if (how(bc.code[k]) == How::No) return false;
  return true;
}

Piece emit_direct(const Bytecode& bc, int lo, int hi, std::string* why, size_t* code_bytes,
                  void (*sample)(void*), void* sample_arg) {
  if (!direct_host_ok()) {
    if (why) *why = "no AVX2";
    return {};
  }
  if (lanes(1) != 4) {
    if (why) *why = "tier 1 is not 4 lanes";
    return {};
  }
  if (int64_t(bc.num_slots()) * kCellBytes > INT32_MAX) {
    if (why) *why = "scratch too large for 32-bit offsets";
    return {};
  }
  for (int k = lo; k < hi; ++k)
    if (how(bc.code[k]) == How::No) {
      if (why) *why = "unsupported (float32 or unknown opcode): " + interp::opcode_name(bc.code[k].op);
      return {};
    }
  auto dc = std::make_shared<DirectCode>();
  CodeHolder code;
  code.init(runtime().environment());
  ErrorRecorder err;
  code.setErrorHandler(&err);
  Emitter(bc, code, *dc).run(lo, hi);
  if (err.first) throw std::runtime_error(std::string("direct JIT: asmjit: ") + err.msg);
  void* fn = nullptr;
  if (Error e = runtime().add(&fn, &code))
    throw std::runtime_error(std::string("direct JIT: cannot add code: ") + DebugUtils::errorAsString(e));
  dc->fn = fn;
  if (sample) sample(sample_arg);
  dc->bytes = code.codeSize() + dc->calls.size() * sizeof(VecCall) + dc->splats.size() * kBlock * 8;
  if (code_bytes) *code_bytes = dc->bytes;
  Piece p;
  p.fn = reinterpret_cast<ChunkFn>(fn);
  p.code = std::move(dc);
  return p;
}

}  // namespace ember::jit
