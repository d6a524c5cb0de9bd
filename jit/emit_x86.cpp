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
    const char* e = std::getenv("EMBER_JIT_T1_RUN");
    const int v = e ? std::atoi(e) : 0;
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
constexpr uint64_t kSignBit = 0x8000000000000000ull, kAbsMask = 0x7fffffffffffffffull,
                   kOneD = 0x3ff0000000000000ull, kMinusOneD = 0xbff0000000000000ull,
                   kHalfD = 0x3fe0000000000000ull, kInfD = 0x7ff0000000000000ull, kOnes = ~0ull;

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
    for (const auto& o : bc_.outputs)
      if (writer[o.slot] >= 0) last_read_[writer[o.slot] - lo] = n;
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
    const auto cls = static_cast<Cls>(in.op % interp::kNumCls);
    const Ymm a = operand(in.a);
    const Ymm b = sig.nargs >= 2 ? operand(in.b) : Ymm();
    const Ymm c = sig.nargs >= 3 ? operand(in.c) : Ymm();
    const Ymm y = x86::ymm(alloc());
    if (op == S::Switch) {  // a != 0 ? b : c
      const Ymm t = tmp();
      a_.vpcmpeqq(t, a, K(0));
      if (cls == Cls::F32) {
        // 4 qword masks to 4 dword masks in the low half.
        a_.vpshufd(t, t, 0x88);
        a_.vpermq(t, t, 0x08);
        a_.vblendvps(y.xmm(), b.xmm(), c.xmm(), t.xmm());
      } else {
        a_.vblendvpd(y, b, c, t);
      }
      return define(in, y);
    }
    if (cls == Cls::F64) emit_f64(op, a, b, c, y);
    else if (cls == Cls::F32) emit_f32(op, a.xmm(), b.xmm(), c.xmm(), y);
    else emit_i64(op, a, b, c, y);
    define(in, y);
  }

  void emit_f64(S op, const x86::Ymm& a, const x86::Ymm& b, const x86::Ymm& c, const x86::Ymm& y) {
    auto cmp01 = [&](uint8_t p) {
      a_.vcmppd(y, a, b, p);
      a_.vpsrlq(y, y, 63);
    };
    switch (op) {
      case S::Neg: a_.vxorpd(y, a, K(kSignBit)); break;
      case S::Abs: a_.vandpd(y, a, K(kAbsMask)); break;
      case S::Sign: {  // x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x
        const x86::Ymm t = tmp();
        a_.vcmppd(t, a, K(0), kEQ);
        a_.vblendvpd(y, a, K(0), t);
        a_.vcmppd(t, a, K(0), kLT);
        a_.vblendvpd(y, y, K(kMinusOneD), t);
        a_.vcmppd(t, a, K(0), kGT);
        a_.vblendvpd(y, y, K(kOneD), t);
        break;
      }
      case S::Sqr: a_.vmulpd(y, a, a); break;
      case S::Sqrt: a_.vsqrtpd(y, a); break;
      case S::Reciprocal:
        a_.vmovupd(y, K(kOneD));
        a_.vdivpd(y, y, a);
        break;
      case S::Floor: a_.vroundpd(y, a, 0x09); break;
      case S::Ceil: a_.vroundpd(y, a, 0x0A); break;
      case S::Trunc: a_.vroundpd(y, a, 0x0B); break;
      case S::RoundHalfToEven: a_.vroundpd(y, a, 0x08); break;
      case S::RoundHalfAwayFromZero: {  // r = trunc(x); |x - r| >= 0.5 ? r + copysign(1, x) : r
        const x86::Ymm t = tmp(), u = tmp();
        a_.vroundpd(y, a, 0x0B);
        a_.vsubpd(t, a, y);
        a_.vandpd(t, t, K(kAbsMask));
        a_.vcmppd(t, t, K(kHalfD), kGE);
        a_.vandpd(u, a, K(kSignBit));
        a_.vorpd(u, u, K(kOneD));
        a_.vaddpd(u, y, u);
        a_.vblendvpd(y, y, u, t);
        break;
      }
      case S::Add: a_.vaddpd(y, a, b); break;
      case S::Sub: a_.vsubpd(y, a, b); break;
      case S::Mul: a_.vmulpd(y, a, b); break;
      case S::TrueDiv: a_.vdivpd(y, a, b); break;
      case S::Maximum:
      case S::Minimum: {  // (a >= b) | isnan(a) ? a : b  (<= for minimum)
        const x86::Ymm t = tmp(), u = tmp();
        a_.vcmppd(t, a, b, op == S::Maximum ? kGE : kLE);
        a_.vcmppd(u, a, a, kUNORD);
        a_.vorpd(t, t, u);
        a_.vblendvpd(y, b, a, t);
        break;
      }
      case S::Clip: {  // x < lo ? lo : x > hi ? hi : x
        const x86::Ymm t = tmp();
        a_.vcmppd(t, a, c, kGT);
        a_.vblendvpd(y, a, c, t);
        a_.vcmppd(t, a, b, kLT);
        a_.vblendvpd(y, y, b, t);
        break;
      }
      case S::LT: cmp01(kLT); break;
      case S::GT: cmp01(kGT); break;
      case S::LE: cmp01(kLE); break;
      case S::GE: cmp01(kGE); break;
      case S::EQ: cmp01(kEQ); break;
      case S::NEQ: cmp01(kNEQ); break;
      case S::IsNan:
        a_.vcmppd(y, a, a, kUNORD);
        a_.vpsrlq(y, y, 63);
        break;
      case S::IsInf:
        a_.vandpd(y, a, K(kAbsMask));
        a_.vcmppd(y, y, K(kInfD), kEQ);
        a_.vpsrlq(y, y, 63);
        break;
      default: throw std::logic_error("direct JIT: no float64 inline op " + std::to_string(int(op)));
    }
  }

  // float32: 4 lanes in the low 16 bytes of each group (xmm registers; VEX
  // clears the upper half). Same sequences as float64, single precision.
  void emit_f32(S op, const x86::Xmm& a, const x86::Xmm& b, const x86::Xmm& c, const x86::Ymm& yy) {
    const x86::Xmm y = yy.xmm();
    constexpr uint32_t kSign = 0x80000000u, kAbs = 0x7fffffffu, kOne = 0x3f800000u, kMinusOne = 0xbf800000u,
                       kHalf = 0x3f000000u, kInf = 0x7f800000u;
    // A float32 mask widened to 4 qword lanes of 0/1.
    auto widen01 = [&] {
      a_.vpmovsxdq(yy, y);
      a_.vpsrlq(yy, yy, 63);
    };
    auto cmp01 = [&](uint8_t p) {
      a_.vcmpps(y, a, b, p);
      widen01();
    };
    switch (op) {
      case S::Neg: a_.vxorps(y, a, K32(kSign)); break;
      case S::Abs: a_.vandps(y, a, K32(kAbs)); break;
      case S::Sign: {
        const x86::Xmm t = tmp().xmm();
        a_.vcmpps(t, a, K32(0), kEQ);
        a_.vblendvps(y, a, K32(0), t);
        a_.vcmpps(t, a, K32(0), kLT);
        a_.vblendvps(y, y, K32(kMinusOne), t);
        a_.vcmpps(t, a, K32(0), kGT);
        a_.vblendvps(y, y, K32(kOne), t);
        break;
      }
      case S::Sqr: a_.vmulps(y, a, a); break;
      case S::Sqrt: a_.vsqrtps(y, a); break;
      case S::Reciprocal:
        a_.vmovups(y, K32(kOne));
        a_.vdivps(y, y, a);
        break;
      case S::Floor: a_.vroundps(y, a, 0x09); break;
      case S::Ceil: a_.vroundps(y, a, 0x0A); break;
      case S::Trunc: a_.vroundps(y, a, 0x0B); break;
      case S::RoundHalfToEven: a_.vroundps(y, a, 0x08); break;
      case S::RoundHalfAwayFromZero: {
        const x86::Xmm t = tmp().xmm(), u = tmp().xmm();
        a_.vroundps(y, a, 0x0B);
        a_.vsubps(t, a, y);
        a_.vandps(t, t, K32(kAbs));
        a_.vcmpps(t, t, K32(kHalf), kGE);
        a_.vandps(u, a, K32(kSign));
        a_.vorps(u, u, K32(kOne));
        a_.vaddps(u, y, u);
        a_.vblendvps(y, y, u, t);
        break;
      }
      case S::Add: a_.vaddps(y, a, b); break;
      case S::Sub: a_.vsubps(y, a, b); break;
      case S::Mul: a_.vmulps(y, a, b); break;
      case S::TrueDiv: a_.vdivps(y, a, b); break;
      case S::Maximum:
      case S::Minimum: {
        const x86::Xmm t = tmp().xmm(), u = tmp().xmm();
        a_.vcmpps(t, a, b, op == S::Maximum ? kGE : kLE);
        a_.vcmpps(u, a, a, kUNORD);
        a_.vorps(t, t, u);
        a_.vblendvps(y, b, a, t);
        break;
      }
      case S::Clip: {
        const x86::Xmm t = tmp().xmm();
        a_.vcmpps(t, a, c, kGT);
        a_.vblendvps(y, a, c, t);
        a_.vcmpps(t, a, b, kLT);
        a_.vblendvps(y, y, b, t);
        break;
      }
      case S::LT: cmp01(kLT); break;
      case S::GT: cmp01(kGT); break;
      case S::LE: cmp01(kLE); break;
      case S::GE: cmp01(kGE); break;
      case S::EQ: cmp01(kEQ); break;
      case S::NEQ: cmp01(kNEQ); break;
      case S::IsNan:
        a_.vcmpps(y, a, a, kUNORD);
        widen01();
        break;
      case S::IsInf:
        // IsInf compares |x| with a float64 infinity: exact for float32 too.
        a_.vandps(y, a, K32(kAbs));
        a_.vcmpps(y, y, K32(kInf), kEQ);
        widen01();
        break;
      default: throw std::logic_error("direct JIT: no float32 inline op " + std::to_string(int(op)));
    }
  }

  void emit_i64(S op, const x86::Ymm& a, const x86::Ymm& b, const x86::Ymm& c, const x86::Ymm& y) {
    switch (op) {
      case S::Neg:
        a_.vpxor(y, y, y);
        a_.vpsubq(y, y, a);
        break;
      case S::Abs: {  // a < 0 ? 0 - a : a
        const x86::Ymm t = tmp();
        a_.vpxor(t, t, t);
        a_.vpcmpgtq(t, t, a);
        a_.vpxor(y, y, y);
        a_.vpsubq(y, y, a);
        a_.vblendvpd(y, a, y, t);
        break;
      }
      case S::Sign: {  // (a > 0) - (a < 0) = mask(a < 0) - mask(a > 0)
        const x86::Ymm t = tmp(), u = tmp();
        a_.vpxor(t, t, t);
        a_.vpcmpgtq(u, t, a);
        a_.vpcmpgtq(t, a, t);
        a_.vpsubq(y, u, t);
        break;
      }
      case S::Add: a_.vpaddq(y, a, b); break;
      case S::Sub: a_.vpsubq(y, a, b); break;
      case S::And: a_.vpand(y, a, b); break;
      case S::Or: a_.vpor(y, a, b); break;
      case S::Xor: a_.vpxor(y, a, b); break;
      case S::Invert: a_.vpxor(y, a, K(kOnes)); break;
      case S::Maximum: {  // a >= b ? a : b
        const x86::Ymm t = tmp();
        a_.vpcmpgtq(t, b, a);
        a_.vblendvpd(y, a, b, t);
        break;
      }
      case S::Minimum: {  // a <= b ? a : b
        const x86::Ymm t = tmp();
        a_.vpcmpgtq(t, a, b);
        a_.vblendvpd(y, a, b, t);
        break;
      }
      case S::Clip: {  // x < lo ? lo : x > hi ? hi : x
        const x86::Ymm t = tmp();
        a_.vpcmpgtq(t, a, c);
        a_.vblendvpd(y, a, c, t);
        a_.vpcmpgtq(t, b, a);
        a_.vblendvpd(y, y, b, t);
        break;
      }
      case S::LT:
        a_.vpcmpgtq(y, b, a);
        a_.vpsrlq(y, y, 63);
        break;
      case S::GT:
        a_.vpcmpgtq(y, a, b);
        a_.vpsrlq(y, y, 63);
        break;
      case S::LE:  // !(a > b): mask + 1
        a_.vpcmpgtq(y, a, b);
        a_.vpaddq(y, y, K(1));
        break;
      case S::GE:
        a_.vpcmpgtq(y, b, a);
        a_.vpaddq(y, y, K(1));
        break;
      case S::EQ:
        a_.vpcmpeqq(y, a, b);
        a_.vpsrlq(y, y, 63);
        break;
      case S::NEQ:
        a_.vpcmpeqq(y, a, b);
        a_.vpaddq(y, y, K(1));
        break;
      case S::Floor: case S::Ceil: case S::Trunc: case S::RoundHalfToEven: case S::RoundHalfAwayFromZero:
        a_.vmovdqa(y, a);
        break;
      case S::IsNan: case S::IsInf: a_.vpxor(y, y, y); break;
      default: throw std::logic_error("direct JIT: no int64 inline op " + std::to_string(int(op)));
    }
  }

  const Bytecode& bc_;
  x86::Assembler a_;
  DirectCode& dc_;
  std::vector<int> last_read_;
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
