// JitKernel: the block driver around compiled pieces. No LLVM here. It
// gathers each block's inputs into scratch cells (widened to their register
// class, as the VM's gather, or bool bytes as they are), runs the pieces, and
// scatters the outputs.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "interp/config.hpp"
#include "jit/jit.hpp"
#include "interp/reduce_tree.hpp"
#include "interp/widen.hpp"

namespace ember::jit {

namespace {

// Byte offset of lane i in a float32 cell (jit.hpp).
inline int64_t f32_off(int64_t i, int w) { return (i / w) * w * 8 + (i % w) * 4; }

// m float32 elements to or from a cell, a group of w lanes at a time (lane i
// of group g at g * w * 8 + i * 4): no division per element.
void gather_f32(const char* p, int64_t stride, int64_t m, char* cell, int w) {
  for (int64_t g = 0; g < m; g += w, cell += 8 * w, p += 4 * w * stride) {
    const int64_t e = std::min<int64_t>(w, m - g);
    if (stride == 1) std::memcpy(cell, p, 4 * e);
    else
      for (int64_t i = 0; i < e; ++i) std::memcpy(cell + 4 * i, p + 4 * i * stride, 4);
  }
}
void scatter_f32(const char* cell, int64_t m, char* p, int64_t stride, int w) {
  for (int64_t g = 0; g < m; g += w, cell += 8 * w, p += 4 * w * stride) {
    const int64_t e = std::min<int64_t>(w, m - g);
    if (stride == 1) std::memcpy(p, cell, 4 * e);
    else
      for (int64_t i = 0; i < e; ++i) std::memcpy(p + 4 * i * stride, cell + 4 * i, 4);
  }
}

// m 8-byte elements: blocks are often a few dozen elements, where memcpy's
// `rep movs` costs more than the copy.
inline void copy8(char* d, const char* p, int64_t m) {
  if (m > 64) {
    std::memcpy(d, p, static_cast<size_t>(m) * 8);
    return;
  }
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) std::memcpy(d + 8 * i, p + 8 * i, 32);
  for (; i < m; ++i) std::memcpy(d + 8 * i, p + 8 * i, 8);
}

template <class T> void widen_int(const char* p, int64_t stride, int64_t m, int64_t* r) {
  const T* x = reinterpret_cast<const T*>(p);
  for (int64_t i = 0; i < m; ++i) r[i] = x[i * stride];
}

void gather(DType dt, const char* p, int64_t stride, int64_t m, char* cell, int w) {
  auto* r = reinterpret_cast<int64_t*>(cell);
  switch (dt) {
    case DType::Float64:
    case DType::Int64:
    case DType::UInt64:
      if (stride == 1) {
        copy8(cell, p, m);
      } else {
        for (int64_t i = 0; i < m; ++i) std::memcpy(cell + 8 * i, p + 8 * i * stride, 8);
      }
      break;
    case DType::Float32: gather_f32(p, stride, m, cell, w); break;
    case DType::Int32: widen_int<int32_t>(p, stride, m, r); break;
    case DType::Int16: widen_int<int16_t>(p, stride, m, r); break;
    case DType::Int8: widen_int<int8_t>(p, stride, m, r); break;
    case DType::UInt8: widen_int<uint8_t>(p, stride, m, r); break;
    case DType::UInt16: widen_int<uint16_t>(p, stride, m, r); break;
    case DType::UInt32: widen_int<uint32_t>(p, stride, m, r); break;
    case DType::Bool:
      interp::widen_bool(reinterpret_cast<const uint8_t*>(p), stride, m, r);
      break;
  }
}

// An input's m elements into its cell: a packed input's bytes as they are
// (packed_inputs), any other widened to its class (gather).
void gather_in(bool packed, DType dt, const char* p, int64_t stride, int64_t m, char* cell, int w) {
  if (!packed) return gather(dt, p, stride, m, cell, w);
  if (stride == 1) {
    std::memcpy(cell, p, static_cast<size_t>(m));
    return;
  }
  for (int64_t i = 0; i < m; ++i) cell[i] = p[i * stride];
}

template <class T> void narrow_int(const int64_t* r, int64_t m, char* p, int64_t stride) {
  T* o = reinterpret_cast<T*>(p);
  for (int64_t i = 0; i < m; ++i) o[i * stride] = static_cast<T>(r[i]);
}

// m lanes of a cell (or of a constant when cell is null) to an output; a
// packed output's cell holds its bytes (packed_outputs).
void scatter(bool packed, DType dt, const char* cell, const interp::Cell& k, int64_t m, char* p, int64_t stride,
             int w) {
  if (packed && cell) {
    if (stride == 1) std::memcpy(p, cell, m);
    else for (int64_t i = 0; i < m; ++i) p[i * stride] = cell[i];
    return;
  }
  if (!cell) {
    // A constant output: one block of its value in the output's class.
    static thread_local std::vector<double> kc;
    if (kc.size() < static_cast<size_t>(kCellBytes / 8)) kc.resize(kCellBytes / 8);
    char* c = reinterpret_cast<char*>(kc.data());
    for (int64_t i = 0; i < m; ++i) {
      if (dt == DType::Float32) std::memcpy(c + f32_off(i, w), &k.f32, 4);
      else std::memcpy(c + 8 * i, &k, 8);
    }
    cell = c;
  }
  const auto* r = reinterpret_cast<const int64_t*>(cell);
  switch (dt) {
    case DType::Float64:
    case DType::Int64:
    case DType::UInt64:
      if (stride == 1) {
        std::memmove(p, cell, m * 8);  // an output may be an in-place input's own buffer
      } else {
        for (int64_t i = 0; i < m; ++i) std::memcpy(p + 8 * i * stride, cell + 8 * i, 8);
      }
      break;
    case DType::Float32: scatter_f32(cell, m, p, stride, w); break;
    case DType::Int32: narrow_int<int32_t>(r, m, p, stride); break;
    case DType::Int16: narrow_int<int16_t>(r, m, p, stride); break;
    case DType::Int8: narrow_int<int8_t>(r, m, p, stride); break;
    case DType::UInt8: narrow_int<uint8_t>(r, m, p, stride); break;
    case DType::UInt16: narrow_int<uint16_t>(r, m, p, stride); break;
    case DType::UInt32: narrow_int<uint32_t>(r, m, p, stride); break;
    case DType::Bool:
      for (int64_t i = 0; i < m; ++i) reinterpret_cast<uint8_t*>(p)[i * stride] = r[i] != 0;
      break;
  }
}

}  // namespace

int lanes(int tier) {
  static const int t2 = [] {
    const auto& e = config().jit_t2_lanes;
    const int v = e ? std::atoi(e->c_str()) : 0;
    return v == 4 || v == 8 || v == 16 ? v : 8;
  }();
  // Tier 1: 4 lanes, one AVX register, which FastISel selects. Tier 2: 8
  // lanes (two registers per op: more independent work for chains of
  // dependent ops) at no measured extra compile cost; 16 cost 35 % more.
  return tier >= 2 ? t2 : 4;
}

Layout layout(int tier, bool one_element) {
  return one_element ? Layout{1, 8} : Layout{lanes(tier), kCellBytes};
}

size_t scratch_bytes(const interp::Bytecode& bc, const Layout& l) {
  return static_cast<size_t>(sum_ctl_cell(bc) + 1) * static_cast<size_t>(l.cell_bytes);  // + the control cell
}

namespace {
// Per output of dtype dt: the instruction that last defines its register
// when that is inline code (no math call, no cast) with a result of class
// dst (and, if `same`, operands of that class too), else -1.
std::vector<int> inline_defs(const interp::Bytecode& bc, DType dt, interp::Cls dst, bool same) {
  std::vector<int> d(bc.outputs.size(), -1);
  std::vector<int> writer(bc.num_slots(), -1);
  for (int j = 0; j < static_cast<int>(bc.code.size()); ++j) writer[bc.code[j].d] = j;
  for (size_t j = 0; j < bc.outputs.size(); ++j) {
    const interp::OutputRef& o = bc.outputs[j];
    if (o.dtype != dt || o.slot < bc.first_reg() || writer[o.slot] < 0) continue;
    const interp::Instr& in = bc.code[writer[o.slot]];
    if (in.op >= interp::kCvtBase) continue;
    const interp::OpSig sig = interp::op_sig(in.op);
    if (sig.valid && !sig.math && sig.dst == dst && (!same || static_cast<interp::Cls>(in.op % interp::kNumCls) == dst))
      d[j] = writer[o.slot];
  }
  return d;
}
// Float64 outputs of inline float64 arithmetic.
std::vector<int> float64_inline_defs(const interp::Bytecode& bc) {
  return inline_defs(bc, DType::Float64, interp::Cls::F64, true);
}
}  // namespace

std::vector<bool> summable_outputs(const interp::Bytecode& bc) {
  const std::vector<int> def = float64_inline_defs(bc);
  std::vector<bool> d(def.size());
  for (size_t j = 0; j < def.size(); ++j) d[j] = def[j] >= 0;
  return d;
}

std::vector<int> direct_outputs(const interp::Bytecode& bc, bool one_element, const std::vector<bool>& summed) {
  std::vector<int> d(bc.outputs.size(), -1);
  if (one_element) return d;
  const std::vector<int> def = float64_inline_defs(bc);
  for (size_t j = 0; j < def.size(); ++j) {
    if (def[j] < 0 || (j < summed.size() && summed[j])) continue;
    const auto op = static_cast<interp::ScalarOp>(bc.code[def[j]].op / interp::kNumCls);
    if (interp::op_info(op).has(interp::opflag::AsmF)) d[j] = def[j];
  }
  return d;
}

std::vector<bool> packed_inputs(const interp::Bytecode& bc, int tier, const KernelSpec& spec) {
  std::vector<bool> p;
  if (tier < 2 && !spec.one_element) return p;  // tier-1 block code may be the direct emitter's
  for (size_t k = 0; k < bc.inputs.size(); ++k) {
    if (bc.inputs[k] != DType::Bool || spec.is_uniform(k)) continue;
    const int32_t slot = bc.num_consts() + static_cast<int32_t>(k);
    if (std::any_of(bc.outputs.begin(), bc.outputs.end(), [&](const interp::OutputRef& o) { return o.slot == slot; }))
      continue;
    if (p.empty()) p.assign(bc.inputs.size(), false);
    p[k] = true;
  }
  return p;
}

std::vector<bool> packed_outputs(const interp::Bytecode& bc, int tier, const KernelSpec& spec) {
  std::vector<bool> p;
  if (tier < 2 || spec.one_element) return p;  // tier-1 block code may be the direct emitter's
  const std::vector<int> def = inline_defs(bc, DType::Bool, interp::Cls::I64, false);
  if (std::any_of(def.begin(), def.end(), [](int k) { return k >= 0; }))
    for (int k : def) p.push_back(k >= 0);
  return p;
}

std::vector<int8_t> one_element_stores(const interp::Bytecode& bc) {
  std::vector<int8_t> d(bc.outputs.size(), 0);
  for (size_t j = 0; j < bc.outputs.size(); ++j) {
    const interp::OutputRef& o = bc.outputs[j];
    if (o.dtype != DType::Float64 && o.dtype != DType::Int64) continue;
    if (o.slot >= bc.first_reg()) d[j] = 1;  // its cell holds the 8 bytes at the end, as the caller's copy reads
    else if (o.slot >= bc.num_consts() && bc.inputs[o.slot - bc.num_consts()] == o.dtype) {
      d[j] = 2;
    }
  }
  return d;
}

JitKernel::JitKernel(const interp::Bytecode& bc, std::vector<Piece> pieces, int tier, const KernelSpec& spec,
                     std::shared_ptr<const interp::ElemKernel> fallback)
    : pieces_(std::move(pieces)),
      scratch_(scratch_bytes(bc, layout(tier, spec.one_element))),
      tier_(tier),
      lanes_(layout(tier, spec.one_element).lanes),
      one_(spec.one_element),
      fallback_(std::move(fallback)) {
  fn = &run_fn;
  if (spec.one_element && !pieces_.empty()) fn_table = &run_table;
  if (spec.one_element && pieces_.size() == 1 && pieces_[0].loop) fn_loop = &run_loop;
  cell_bytes_ = layout(tier, spec.one_element).cell_bytes;
  out_cell0_ = static_cast<int64_t>(out_cell(bc, 0)) * cell_bytes_;
  is_summed_.assign(bc.outputs.size(), 0);
  for (size_t j = 0; j < bc.outputs.size(); ++j)
    if (spec.is_summed(j)) {
      summed_.push_back(static_cast<int32_t>(j));
      is_summed_[j] = 1;
    }
  if (!summed_.empty()) {
    if (spec.one_element || !fallback_) throw std::invalid_argument("JitKernel: summed outputs need a block kernel and a fallback");
    fn = &run_fallback;  // elements of a summed output: the interpreter's
    fn_sums = &run_sums;
    fn_row_sums = &run_row_sums;
    summed = is_summed_.data();
  }
  const std::vector<bool> packed = packed_inputs(bc, tier, spec);
  plain_ins_ = true;
  for (size_t k = 0; k < bc.inputs.size(); ++k) {
    const bool bytes = k < packed.size() && packed[k];
    plain_ins_ &= bc.inputs[k] == DType::Float64 || bc.inputs[k] == DType::Int64 || bytes;
    ins_.push_back({bc.inputs[k], static_cast<int64_t>(bc.num_regs + k) * cell_bytes_, {}, -1, spec.is_uniform(k),
                    bytes, static_cast<int64_t>(dtype_size(bc.inputs[k]))});
    any_uniform_ |= spec.is_uniform(k);
  }
  if (any_uniform_ && !fallback_) throw std::invalid_argument("JitKernel: uniform inputs need a fallback kernel");
  quick_ = !summed_.empty() && summed_.size() == bc.outputs.size();
  for (const Slot& x : ins_) quick_ = quick_ && (x.uniform || x.packed || x.dt == DType::Float64 || x.dt == DType::Int64);
  const std::vector<int> direct = direct_outputs(bc, spec.one_element, spec.summed);
  const std::vector<bool> packed_out = packed_outputs(bc, tier, spec);
  std::vector<int8_t> chunk(bc.outputs.size(), 0);
  if (spec.one_element && !pieces_.empty()) chunk = one_element_stores(bc);
  for (const interp::OutputRef& o : bc.outputs) {
    const size_t j = outs_.size();
    const bool bytes = j < packed_out.size() && packed_out[j];
    if (o.slot < bc.num_consts()) outs_.push_back({o.dtype, -1, bc.constants[o.slot], -1});
    else if (direct[j] >= 0 || bytes)  // the chunk stores it in its output cell, or the caller's array
      outs_.push_back({o.dtype, out_cell_at(j), {}, -1, false, bytes});
    else
      outs_.push_back({o.dtype, static_cast<int64_t>(cell_index(bc, o.slot)) * cell_bytes_, {},
                       o.slot < bc.first_reg() ? o.slot - bc.num_consts() : -1});
    if (direct[j] >= 0 || bytes) direct_outs_.push_back(static_cast<int32_t>(j));
    // Outputs are scattered from whole blocks of lanes; a uniform input has one.
    if (outs_.back().in >= 0 && spec.is_uniform(static_cast<size_t>(outs_.back().in)))
      throw std::invalid_argument("JitKernel: a uniform input cannot be an output");
    const Slot& b = outs_.back();
    if (chunk[j]) {
      chunk_outs_.push_back(static_cast<int32_t>(j));
      continue;
    }
    caller_copies_ |= b.in >= 0;
    const bool plain = b.in < 0 && b.cell >= 0 && dtype_size(b.dt) == 8;
    (plain ? plain_outs_ : other_outs_).push_back(static_cast<int32_t>(outs_.size() - 1));
  }
}

size_t JitKernel::code_bytes() const {
  size_t n = 0;
  for (const Piece& p : pieces_) n += p.code ? p.code->bytes : 0;
  return n;
}

namespace {

thread_local std::vector<double> t_scratch;  // grow-only; kernels never nest
// Its aligned start, and one more than its usable bytes (0: not made yet,
// so the first call grows it): plain thread_locals, read without the
// vector's TLS wrapper on every call (scratch_for is on every kernel call).
thread_local char* t_scratch_at = nullptr;
thread_local size_t t_scratch_room = 0;

[[gnu::noinline]] char* grow_scratch(size_t bytes) {
  t_scratch.resize(bytes / 8 + kCellAlign / 8);
  char* s = reinterpret_cast<char*>(t_scratch.data());
  t_scratch_at = s + (kCellAlign - reinterpret_cast<uintptr_t>(s) % kCellAlign) % kCellAlign;
  t_scratch_room = bytes + 1;
  return t_scratch_at;
}

inline char* scratch_for(size_t bytes) { return bytes < t_scratch_room ? t_scratch_at : grow_scratch(bytes); }

// One element of an input into lane 0 of its cell, widened as gather() does.
inline void load_one(DType dt, const void* p, char* cell) {
  switch (dt) {
    case DType::Float64:
    case DType::Int64:
    case DType::UInt64: std::memcpy(cell, p, 8); break;
    case DType::Float32: std::memcpy(cell, p, 4); break;
    case DType::Int32: *reinterpret_cast<int64_t*>(cell) = *static_cast<const int32_t*>(p); break;
    case DType::Int16: *reinterpret_cast<int64_t*>(cell) = *static_cast<const int16_t*>(p); break;
    case DType::Int8: *reinterpret_cast<int64_t*>(cell) = *static_cast<const int8_t*>(p); break;
    case DType::UInt8: *reinterpret_cast<int64_t*>(cell) = *static_cast<const uint8_t*>(p); break;
    case DType::UInt16: *reinterpret_cast<int64_t*>(cell) = *static_cast<const uint16_t*>(p); break;
    case DType::UInt32: *reinterpret_cast<int64_t*>(cell) = *static_cast<const uint32_t*>(p); break;
    case DType::Bool: *reinterpret_cast<int64_t*>(cell) = *static_cast<const uint8_t*>(p) != 0; break;
  }
}

// Where a chunk reads one element of an input: the caller's float64 or
// int64 element itself when 8-byte aligned, else lane 0 of its cell.
inline const char* one_lane(DType dt, const void* p, char* cell) {
  if ((dt == DType::Float64 || dt == DType::Int64) && reinterpret_cast<uintptr_t>(p) % 8 == 0)
    return static_cast<const char*>(p);
  load_one(dt, p, cell);
  return cell;
}

// EMBER_JIT_INPLACE=0 gathers every input (diagnosis and benchmarks).
bool inplace_on() {
  static const bool on = [] {
    const auto& e = config().jit_inplace;
    return !(e && (*e)[0] == '0');
  }();
  return on;
}

// Whether a call's partial last group, read where the input is, stays in
// the page of the input's last element (n elements of es bytes, groups of w
// lanes): such a read cannot fault, and lanes past n are never stored or summed.
inline bool tail_in_page(const void* p, int64_t n, int64_t es, int w) {
  const uintptr_t last = reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>((n - 1) * es);
  const uintptr_t pad = static_cast<uintptr_t>((-n & (w - 1)) * es);  // lanes are a power of two
  return (last >> 12) == ((last + pad) >> 12);
}

// Whether a chunk may read an input's elements where they are (when
// inplace_on()): contiguous, 8-byte elements already in their class's cell
// layout, aligned.
inline bool in_place_layout(DType dt, const void* p, int64_t stride) {
  return stride == 1 && (dt == DType::Float64 || dt == DType::Int64) && reinterpret_cast<uintptr_t>(p) % 8 == 0;
}
// The same for a packed input (packed_inputs): contiguous bytes.
inline bool in_place_layout(bool packed, DType dt, const void* p, int64_t stride) {
  return packed ? stride == 1 : in_place_layout(dt, p, stride);
}

// Lane 0 of a cell (or the constant k) to one output element, as scatter() does.
inline void store_one(DType dt, const char* cell, const interp::Cell& k, void* p) {
  if (!cell) cell = reinterpret_cast<const char*>(&k);  // a Cell keeps f32 at offset 0, like lane 0
  int64_t r;
  std::memcpy(&r, cell, 8);
  switch (dt) {
    case DType::Float64:
    case DType::Int64:
    case DType::UInt64: std::memcpy(p, cell, 8); break;
    case DType::Float32: std::memcpy(p, cell, 4); break;
    case DType::Int32: *static_cast<int32_t*>(p) = static_cast<int32_t>(r); break;
    case DType::Int16: *static_cast<int16_t*>(p) = static_cast<int16_t>(r); break;
    case DType::Int8: *static_cast<int8_t*>(p) = static_cast<int8_t>(r); break;
    case DType::UInt8: *static_cast<uint8_t*>(p) = static_cast<uint8_t>(r); break;
    case DType::UInt16: *static_cast<uint16_t*>(p) = static_cast<uint16_t>(r); break;
    case DType::UInt32: *static_cast<uint32_t*>(p) = static_cast<uint32_t>(r); break;
    case DType::Bool: *static_cast<uint8_t*>(p) = r != 0; break;
  }
}

}  // namespace

// A fused node's planned table: the chunk reads its inputs and stores its
// outputs through it; the caller stores only what the chunk does not.
void JitKernel::run_table(const ElemKernel* self, const interp::StridedPtr* ops) {
  const auto* k = static_cast<const JitKernel*>(self);
  const size_t ni = k->ins_.size();
  if (!k->plain_ins_ || k->caller_copies_) return run_fn(self, 1, ops, ops + ni);
  char* s = scratch_for(k->scratch_);
  for (const Piece& p : k->pieces_) p.fn(1, s, reinterpret_cast<const char* const*>(ops));
  const Slot* o = k->outs_.data();
  const interp::StridedPtr* out = ops + ni;
  for (const int32_t j : k->other_outs_) store_one(o[j].dt, o[j].cell >= 0 ? s + o[j].cell : nullptr, o[j].k, out[j].data);
  for (const int32_t j : k->plain_outs_) std::memcpy(out[j].data, s + o[j].cell, 8);
}

void JitKernel::run_loop(const ElemKernel* self, int64_t steps, const interp::StridedPtr* ops) {
  const auto* k = static_cast<const JitKernel*>(self);
  k->pieces_[0].loop(steps, scratch_for(k->scratch_), reinterpret_cast<const char* const*>(ops));
}

void JitKernel::run_fn(const ElemKernel* self, int64_t n, const interp::StridedPtr* in,
                       const interp::StridedPtr* out) {
  const auto* k = static_cast<const JitKernel*>(self);
  char* s = scratch_for(k->scratch_);
  const size_t ni = k->ins_.size();
  // in[] of the chunk ABI (jit.hpp): each input's lane base for this block.
  // Followed by the direct outputs' lane bases, at ni + j.
  const size_t nip = ni + k->outs_.size();
  const char* small[32];
  static thread_local std::vector<const char*> big;
  if (nip > 32 && big.size() < nip) big.resize(nip);
  const char** ip = nip > 32 ? big.data() : small;
  const Slot* x = k->ins_.data();
  for (const int32_t j : k->direct_outs_) ip[ni + j] = s + k->outs_[j].cell;
  if (n == 1) {
    // 0-d calls (most Composites of small models): one element per operand,
    // no block loop, no per-element loops or memcpy calls. A one-element
    // kernel reads the callers' StridedPtrs (jit.hpp): with every input of
    // an 8-byte dtype, the operands as given (each element in place).
    const Slot* o = k->outs_.data();
    if (k->one_) {
      // The caller's table as it is (run_table) when it can be: float64 and
      // int64 inputs, outputs right after the inputs, no output the caller
      // copies from an input, and every pointer read or written 8-byte aligned.
      if (k->plain_ins_ && out == in + ni && !k->caller_copies_) {
        uintptr_t low = 0;
        for (size_t j = 0; j < ni; ++j)
          if (!x[j].packed) low |= reinterpret_cast<uintptr_t>(in[j].data);
        for (const int32_t j : k->chunk_outs_) low |= reinterpret_cast<uintptr_t>(out[j].data);
        if (low % 8 == 0) return run_table(self, in);
      }
      // Inputs as aligned copies where needed; the chunk's outputs to their own cells.
      const size_t no = k->outs_.size();
      interp::StridedPtr small_sp[64];
      static thread_local std::vector<interp::StridedPtr> big_sp;
      if (ni + no > 64 && big_sp.size() < ni + no) big_sp.resize(ni + no);
      interp::StridedPtr* sp = ni + no > 64 ? big_sp.data() : small_sp;
      for (size_t j = 0; j < ni; ++j)
        sp[j].data = x[j].packed ? in[j].data : const_cast<char*>(one_lane(x[j].dt, in[j].data, s + x[j].cell));
      for (const int32_t j : k->chunk_outs_) sp[ni + j].data = s + k->out_cell_at(j);
      for (const Piece& p : k->pieces_) p.fn(1, s, reinterpret_cast<const char* const*>(sp));
    } else {
      for (size_t j = 0; j < ni; ++j) {
        if (x[j].packed) gather_in(true, x[j].dt, static_cast<const char*>(in[j].data), 1, 1, s + x[j].cell, k->lanes_);
        else load_one(x[j].dt, in[j].data, s + x[j].cell);
        ip[j] = s + x[j].cell;
      }
      for (const Piece& p : k->pieces_) p.fn(1, s, ip);
    }
    auto input = [&](int i) -> const char* {
      if (!k->one_) return ip[i];
      // The caller's element (as the chunk read it), or its aligned copy.
      return one_lane(x[i].dt, in[i].data, s + x[i].cell);
    };
    // The others first: they hold the outputs that copy an input, read before any plain store.
    for (const int32_t j : k->other_outs_) {
      if (o[j].packed) *static_cast<uint8_t*>(out[j].data) = static_cast<uint8_t>(s[o[j].cell]);
      else store_one(o[j].dt, o[j].in >= 0 ? input(o[j].in) : o[j].cell >= 0 ? s + o[j].cell : nullptr, o[j].k, out[j].data);
    }
    for (const int32_t j : k->chunk_outs_) std::memcpy(out[j].data, s + k->out_cell_at(j), 8);
    for (const int32_t j : k->plain_outs_) std::memcpy(out[j].data, s + o[j].cell, 8);
    return;
  }
  if (k->one_) {
    // Compiled for one element a block: element by element (no caller does
    // this today; the kernel stays correct if one does).
    const size_t no = k->outs_.size();
    std::vector<interp::StridedPtr> e1(ni + no);
    for (int64_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < ni; ++j)
        e1[j] = {static_cast<char*>(in[j].data) + i * in[j].stride * int64_t(dtype_size(x[j].dt)), 0};
      for (size_t j = 0; j < no; ++j)
        e1[ni + j] = {static_cast<char*>(out[j].data) + i * out[j].stride * int64_t(dtype_size(k->outs_[j].dt)), 0};
      run_fn(self, 1, e1.data(), e1.data() + ni);
    }
    return;
  }
  if (k->any_uniform_) {
    // Compiled for these inputs broadcast: a call that does not is the
    // fallback's (the interpreter's); one that does reads one element each.
    for (size_t j = 0; j < ni; ++j)
      if (x[j].uniform && in[j].stride != 0) return k->fallback_->run(n, in, out);
  }
  run_blocks(k, n, in, out, ip, s, nullptr);
}

// What a call through fn_sums adds to the block loop: the control cell's
// contents (jit.hpp: sum_ctl_cell) and, per summed output, its leaf lanes.
struct SumState {
  const int64_t* events;   // ascending byte offsets, INT64_MAX last; advanced block by block
  int64_t leaf = 0;        // leaves started before `events`
  char* ctl;               // the control cell
};

void JitKernel::run_blocks(const JitKernel* k, int64_t n, const interp::StridedPtr* in,
                           const interp::StridedPtr* out, const char** ip, char* s, SumState* st) {
  const size_t ni = k->ins_.size();
  const Slot* x = k->ins_.data();
  const int w = k->lanes_;
  // Inputs read in place (in_place_layout). Blocks of at least kMinCut
  // elements are then cut to whole groups of w lanes (padding lanes must not
  // read past the caller's array); the last < w elements are gathered.
  constexpr int64_t kMinCut = 64;
  const bool inplace = inplace_on();
  auto direct = [&](size_t j) { return inplace && in_place_layout(x[j].packed, x[j].dt, in[j].data, in[j].stride); };
  // Direct outputs go straight to the caller's array when it is contiguous
  // float64, aligned and shares no byte with an input (a chunk stores an
  // output before later instructions read the inputs).
  // Below kMinCut elements the checks cost more than the copies they save.
  uint64_t out_direct = 0;  // bit d: output direct_outs_[d] (< 64) goes to the caller
  if (inplace && n >= kMinCut && !k->direct_outs_.empty()) {
    // The inputs' byte ranges: their hull first (one pass), each range only
    // for an output inside the hull. The hull spans the inputs read along
    // the elements; a broadcast input is copied into its cell before the
    // first block and never read where it is, and a uniform one is one
    // element, checked on its own: a scalar in another buffer would stretch
    // the hull over the outputs.
    auto along = [&](size_t i) { return in[i].stride != 0; };
    auto range = [&](size_t i, uintptr_t& ilo, uintptr_t& ihi) {
      const int64_t span = in[i].stride * (n - 1) * x[i].es;
      const auto a = reinterpret_cast<uintptr_t>(in[i].data);
      ilo = span < 0 ? a + span : a;
      ihi = (span < 0 ? a : a + span) + x[i].es;
    };
    uintptr_t hlo = UINTPTR_MAX, hhi = 0;
    for (size_t i = 0; i < ni; ++i) {
      if (!along(i)) continue;
      uintptr_t ilo, ihi;
      range(i, ilo, ihi);
      hlo = std::min(hlo, ilo);
      hhi = std::max(hhi, ihi);
    }
    for (size_t d = 0; d < k->direct_outs_.size() && d < 64; ++d) {
      const int32_t j = k->direct_outs_[d];
      const bool bytes = k->outs_[j].packed;
      if (j >= 64 || out[j].stride != 1 || (!bytes && reinterpret_cast<uintptr_t>(out[j].data) % 8 != 0)) continue;
      const auto lo = reinterpret_cast<uintptr_t>(out[j].data), hi = lo + static_cast<uintptr_t>(n) * (bytes ? 1 : 8);
      bool apart = hhi <= lo || hi <= hlo;
      if (!apart) {
        apart = true;
        for (size_t i = 0; i < ni && apart; ++i) {
          if (!along(i)) continue;
          uintptr_t ilo, ihi;
          range(i, ilo, ihi);
          apart = ihi <= lo || hi <= ilo;
        }
      }
      for (size_t i = 0; i < ni && apart; ++i)
        if (x[i].uniform) {
          const auto a = reinterpret_cast<uintptr_t>(in[i].data);
          apart = a + x[i].es <= lo || hi <= a;
        }
      if (apart) out_direct |= uint64_t{1} << d;
    }
  }
  bool any_direct = out_direct != 0;
  // A call of one block whose outputs all stay in cells is not cut at a
  // group boundary when every input read along the elements is read in
  // place with its partial last group in its page (tail_in_page).
  bool uncut = out_direct == 0 && n <= kBlock;
  for (size_t j = 0; j < ni; ++j) {
    any_direct |= direct(j);
    if (!x[j].uniform && in[j].stride != 0)
      uncut = uncut && direct(j) && tail_in_page(in[j].data, n, x[j].packed ? 1 : 8, w);
    if (x[j].uniform) {
      ip[j] = one_lane(x[j].dt, in[j].data, s + x[j].cell);
      continue;
    }
    // Broadcast inputs: filled once per call (generated code never writes
    // an input); the first block is the largest.
    if (in[j].stride == 0)
      gather_in(x[j].packed, x[j].dt, static_cast<const char*>(in[j].data), 0, std::min(n, kBlock), s + x[j].cell, w);
  }
  for (int64_t base = 0; base < n;) {
    int64_t m = std::min(kBlock, n - base);
    // Cutting a small block in two costs a second pass of every chunk (and
    // math call) more than gathering it: at n = 20, W = 8 that was 25 % slower.
    if (any_direct && m >= kMinCut && !uncut) m &= ~int64_t{w - 1};  // lanes are a power of two (lanes())
    const bool whole = (m & (w - 1)) == 0 || uncut;
    for (size_t j = 0; j < ni; ++j) {
      const int64_t es = static_cast<int64_t>(dtype_size(x[j].dt));
      const char* src = static_cast<const char*>(in[j].data) + base * in[j].stride * es;
      if (x[j].uniform) {
        // ip[j] set once above
      } else if (in[j].stride == 0) {
        ip[j] = s + x[j].cell;
      } else if (whole && direct(j)) {
        ip[j] = src;
      } else {
        gather_in(x[j].packed, x[j].dt, src, in[j].stride, m, s + x[j].cell, w);
        ip[j] = s + x[j].cell;
      }
    }
    uint64_t skip = 0;  // bit j: output j written in place this block
    if (whole && out_direct) {
      for (size_t d = 0; d < k->direct_outs_.size() && d < 64; ++d) {
        const int32_t j = k->direct_outs_[d];
        if (out_direct >> d & 1) {
          ip[ni + j] = static_cast<const char*>(out[j].data) + base * (k->outs_[j].packed ? 1 : 8);
          skip |= uint64_t{1} << j;
        } else {
          ip[ni + j] = s + k->outs_[j].cell;
        }
      }
    } else if (out_direct) {
      for (const int32_t j : k->direct_outs_) ip[ni + j] = s + k->outs_[j].cell;
    }
    if (st) {
      // This block's first event and leaf; the block starts at a multiple of 8.
      for (; *st->events < base * 8; ++st->events) st->leaf += (*st->events & 1) == 0;
      const int64_t b8 = base * 8;
      std::memcpy(st->ctl, &st->events, 8);
      std::memcpy(st->ctl + 8, &st->leaf, 8);
      std::memcpy(st->ctl + 16, &b8, 8);
    }
    for (const Piece& p : k->pieces_) p.fn(m, s, ip);
    for (size_t j = 0; j < k->outs_.size(); ++j) {
      if (j < 64 && (skip >> j & 1)) continue;
      if (st && k->is_summed_[j]) continue;
      const Slot& o = k->outs_[j];
      const int64_t es = static_cast<int64_t>(dtype_size(o.dt));
      // An output that is an input reads that input's lanes, wherever they are.
      const char* cell = out_lanes(o, ip, s);
      scatter(o.packed, o.dt, cell, o.k, m, static_cast<char*>(out[j].data) + base * out[j].stride * es, out[j].stride, w);
    }
    base += m;
  }
}

void JitKernel::run_fallback(const ElemKernel* self, int64_t n, const interp::StridedPtr* in,
                             const interp::StridedPtr* out) {
  static_cast<const JitKernel*>(self)->fallback_->run(n, in, out);
}

// The first elements of the leaves of the summation tree over n elements
// (reduce_tree.hpp): each chunk of kChunk by tree(), in order.
static void leaf_starts(int64_t n, std::vector<int64_t>& first) {
  constexpr int kMax = static_cast<int>(reduce::kChunk / (reduce::kLeaf / 2)) + 1;
  int16_t len[kMax];
  for (int64_t c = 0; c < n; c += reduce::kChunk) {
    int count = 0;
    const int64_t m = std::min(reduce::kChunk, n - c);
    if (m <= reduce::kLeaf) len[count++] = static_cast<int16_t>(m);
    else reduce::leaf_lengths(m, len, count);
    int64_t at = c;
    for (int i = 0; i < count; ++i) {
      first.push_back(at);
      at += len[i];
    }
  }
}

// One thread's buffers for summed calls (one thread_local: each costs a
// lookup in a shared library), with the trees of its last few lengths.
struct SumBuffers {
  // The tree's leaves and plan for one n. A node's calls repeat its n, and
  // the Elemwise+Sum steps of one program alternate between theirs.
  struct Tree {
    int64_t n = -1;
    std::vector<int64_t> first, events;
    // A call of one chunk: tree()'s combinations of the leaf values, in its
    // order, as (l, r): val[l] = val[l] + val[r]. No recursion per call.
    std::vector<std::pair<int32_t, int32_t>> plan;
  };
  static constexpr int kTrees = 4;
  Tree trees[kTrees];
  int next = 0;
  const Tree* tree = nullptr;  // the current call's (for_n)
  std::vector<double> lanes, val, part;
  std::vector<double> rows;  // run_row_sums: per summed output and row, a leaf's 8 lanes and tail group
  std::vector<const char*> ip;

  void for_n(int64_t len) {
    if (tree && tree->n == len) return;
    Tree* t = nullptr;
    for (Tree& c : trees)
      if (c.n == len) t = &c;
    if (!t) {
      t = &trees[next];
      next = (next + 1) % kTrees;
      t->first.clear();
      t->events.clear();
      leaf_starts(len, t->first);
      for (int64_t f : t->first) t->events.push_back(f * 8);
      if (len % 8) t->events.push_back((len - len % 8) * 8 + 1);
      t->events.push_back(INT64_MAX);
      t->plan.clear();
      if (len <= reduce::kChunk) {
        int32_t at = 0;
        plan_tree(len, at, t->plan);
      }
      t->n = len;
    }
    tree = t;
    if (val.size() < t->first.size()) val.resize(t->first.size());
  }
  // tree(m) over the leaves from index `at` on: appends its combinations,
  // returns the index its value ends in.
  static int32_t plan_tree(int64_t m, int32_t& at, std::vector<std::pair<int32_t, int32_t>>& out) {
    if (m <= reduce::kLeaf) return at++;
    const int64_t m2 = reduce::split_point(m);
    const int32_t l = plan_tree(m2, at, out), r = plan_tree(m - m2, at, out);
    out.emplace_back(l, r);
    return l;
  }
  // Per summed output: a dummy slot (the flush at the first leaf), a slot per
  // leaf, then the tail group.
  size_t per() const { return (tree->first.size() + 1) * 8 + 8; }
  // Points the control cell at each summed output's leaf lanes.
  void set_lanes(char* ctl, size_t ns) {
    if (lanes.size() < ns * per()) lanes.resize(ns * per());
    for (size_t q = 0; q < ns; ++q) {
      double* l = lanes.data() + q * per();
      double* t = l + (tree->first.size() + 1) * 8;
      std::memcpy(ctl + 24 + 16 * q, &l, 8);
      std::memcpy(ctl + 32 + 16 * q, &t, 8);
    }
  }
  // A summed call's setup: the tree for n, the control cell (sum_ctl_cell)
  // pointed at ns outputs' leaf lanes and at the first leaf, and a pointer
  // table of nip entries, returned.
  const char** start(int64_t n, char* ctl, size_t ns, size_t nip) {
    for_n(n);
    set_lanes(ctl, ns);
    restart(ctl);
    if (ip.size() < nip) ip.resize(nip);
    return ip.data();
  }
  // The control cell back at the first leaf: the next chunk call is a call over n from its start.
  void restart(char* ctl) const {
    const int64_t* ev = tree->events.data();
    const int64_t zero = 0;
    std::memcpy(ctl, &ev, 8);
    std::memcpy(ctl + 8, &zero, 8);
    std::memcpy(ctl + 16, &zero, 8);
  }
  // A leaf's value: its 8 lanes combined, then its tail's first `tail`
  // elements folded in order.
  static double leaf_value(const double* lanes8, const double* tail_group, int64_t tail) {
    double v = reduce::combine_lanes<reduce::Rop::Add, double>(lanes8);
    for (int64_t t = 0; t < tail; ++t) v = v + tail_group[t];
    return v;
  }
  // The sum of summed output q (accumulator cell acc) after a call over n.
  double sum(size_t q, const double* acc) {
    const int64_t n = tree->n;
    const size_t nl = tree->first.size();
    const double* l = lanes.data() + q * per();
    // Leaf i's lanes at slot i + 1; the last leaf's are still the accumulator.
    for (size_t i = 0; i + 1 < nl; ++i) val[i] = reduce::combine_lanes<reduce::Rop::Add, double>(l + (i + 1) * 8);
    const double v = leaf_value(acc, l + (nl + 1) * 8, n % 8);
    val[nl - 1] = v;
    if (n <= reduce::kLeaf) return v;  // one leaf: the tree is that leaf
    if (n <= reduce::kChunk) {
      for (const auto& [a, b] : tree->plan) val[a] = val[a] + val[b];
      return val[0];
    }
    // The tree over each chunk's leaves, then over the chunks' partials.
    size_t at = 0;
    part.clear();
    for (int64_t c = 0; c < n; c += reduce::kChunk) {
      const int64_t m = std::min(reduce::kChunk, n - c);
      size_t used = 0;
      auto lf = [&](int64_t, int64_t) { return val[at + used++]; };
      part.push_back(reduce::tree<reduce::Rop::Add, double>(0, m, lf));
      at += used;
    }
    return part.size() == 1 ? part[0]
                            : reduce::tree_contiguous<reduce::Rop::Add, double>(part.data(),
                                                                                static_cast<int64_t>(part.size()));
  }
  // After a call: each summed output's sum into sums[j], its accumulator in
  // the cell at s + cell0 + j * spacing.
  void collect(const std::vector<int32_t>& summed, const char* s, int64_t cell0, int64_t spacing, double* sums) {
    for (size_t q = 0; q < summed.size(); ++q) {
      const int32_t j = summed[q];
      sums[j] = sum(q, reinterpret_cast<const double*>(s + cell0 + j * spacing));
    }
  }
};
thread_local SumBuffers t_sums;

// The call most Elemwise+Sum steps of small models make, without the block
// loop's generality: one block, every output summed, each input uniform (one
// element) or read where it is, its partial last group (if any) inside its
// page (run_blocks). False, having done nothing, when the call is not that.
bool JitKernel::quick_sums(const JitKernel* k, int64_t n, const interp::StridedPtr* in, double* sums) {
  if (n < interp::kOneBlockMin || n > interp::kOneBlockMax || !inplace_on()) return false;
  const size_t ni = k->ins_.size(), ns = k->summed_.size();
  const Slot* x = k->ins_.data();
  const int w = k->lanes_;
  SumBuffers& b = t_sums;
  char* s = scratch_for(k->scratch_);
  char* ctl = s + static_cast<size_t>(k->out_cell_at(k->outs_.size()));  // sum_ctl_cell
  const char** ip = b.start(n, ctl, ns, ni + k->outs_.size());
  for (size_t j = 0; j < ni; ++j) {
    if (x[j].uniform) {
      if (in[j].stride != 0) return false;
      ip[j] = one_lane(x[j].dt, in[j].data, s + x[j].cell);
      continue;
    }
    // A packed input's bytes, else 8-byte elements in their cells' layout (quick_).
    if (!in_place_layout(x[j].packed, x[j].dt, in[j].data, in[j].stride) ||
        !tail_in_page(in[j].data, n, x[j].packed ? 1 : 8, w))
      return false;
    ip[j] = static_cast<const char*>(in[j].data);
  }
  for (const int32_t j : k->direct_outs_) ip[ni + j] = s + k->outs_[j].cell;
  for (const Piece& p : k->pieces_) p.fn(n, s, ip);
  b.collect(k->summed_, s, k->out_cell0_, k->cell_bytes_, sums);
  return true;
}

void JitKernel::run_sums(const ElemKernel* self, int64_t n, const interp::StridedPtr* in,
                         const interp::StridedPtr* out, double* sums) {
  const auto* k = static_cast<const JitKernel*>(self);
  if (k->quick_ && quick_sums(k, n, in, sums)) return;
  const size_t ni = k->ins_.size();
  bool elements = n < 8 || (n > reduce::kChunk && n % reduce::kChunk != 0 && n % reduce::kChunk < 8);
  for (size_t j = 0; j < ni; ++j) elements = elements || (k->ins_[j].uniform && in[j].stride != 0);
  if (elements) {
    // A leaf without a full group of lanes (a last chunk of < 8 elements
    // folds from its first), or a call that does not broadcast an input
    // compiled as broadcast: the interpreter's elements, summed by the tree.
    thread_local std::vector<double> tmp;
    std::vector<interp::StridedPtr> o(out, out + k->outs_.size());
    if (tmp.size() < k->summed_.size() * static_cast<size_t>(n)) tmp.resize(k->summed_.size() * n);
    for (size_t q = 0; q < k->summed_.size(); ++q) o[k->summed_[q]] = {tmp.data() + q * n, 1};
    k->fallback_->run(n, in, o.data());
    for (size_t q = 0; q < k->summed_.size(); ++q)
      sums[k->summed_[q]] = n > 0 ? reduce::reduce_contiguous<reduce::Rop::Add, double>(tmp.data() + q * n, n) : 0.0;
    return;
  }
  char* s = scratch_for(k->scratch_);
  SumBuffers& b = t_sums;
  char* ctl = s + static_cast<size_t>(k->out_cell_at(k->outs_.size()));  // sum_ctl_cell
  const char** ip = b.start(n, ctl, k->summed_.size(), ni + k->outs_.size());
  for (const int32_t j : k->direct_outs_) ip[ni + j] = s + k->outs_[j].cell;
  SumState st{b.tree->events.data(), 0, ctl};
  run_blocks(k, n, in, out, ip, s, &st);
  b.collect(k->summed_, s, k->out_cell0_, k->cell_bytes_, sums);
}

bool JitKernel::run_row_sums(const ElemKernel* self, int64_t rows, int64_t n, const interp::RowPtr* in,
                             const interp::RowPtr* out, double* const* row_sums) {
  const auto* k = static_cast<const JitKernel*>(self);
  const size_t ni = k->ins_.size(), no = k->outs_.size();
  // One block a row, with a full group of lanes in it.
  static_assert(interp::kOneBlockMin == 8 && interp::kOneBlockMax == kBlock);
  if (n < interp::kOneBlockMin || n > interp::kOneBlockMax) return false;
  const Slot* x = k->ins_.data();
  for (size_t j = 0; j < ni; ++j)
    if (x[j].uniform && in[j].stride != 0) return false;
  for (size_t j = 0; j < no; ++j)
    if (k->is_summed_[j] ? !row_sums[j] : !out[j].data) return false;
  char* s = scratch_for(k->scratch_);
  SumBuffers& b = t_sums;
  const size_t ns = k->summed_.size();
  char* ctl = s + static_cast<size_t>(k->out_cell_at(no));  // sum_ctl_cell
  const char** ip = b.start(n, ctl, ns, ni + no);
  for (const int32_t j : k->direct_outs_) ip[ni + j] = s + k->outs_[j].cell;
  const int w = k->lanes_;
  const bool whole = n % w == 0, inplace = inplace_on();
  const int64_t tail = n % 8;
  const bool one_leaf = n <= reduce::kLeaf;
  const size_t per = b.per();
  if (one_leaf && b.rows.size() < ns * static_cast<size_t>(rows) * 16) b.rows.resize(ns * rows * 16);
  // A row's last group may read on into the next row (lanes past n are
  // computed, never stored or summed) when it stays inside the next row.
  const int64_t padded = (n + w - 1) / w * w;
  for (size_t j = 0; j < ni; ++j) {
    // Inputs one row repeats (a (1, n) operand): gathered once.
    if (x[j].uniform || in[j].row_stride != 0) continue;
    gather_in(x[j].packed, x[j].dt, static_cast<const char*>(in[j].data), in[j].stride, n, s + x[j].cell, w);
    ip[j] = s + x[j].cell;
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < ni; ++j) {
      const char* src = static_cast<const char*>(in[j].data) + r * in[j].row_stride * x[j].es;
      if (x[j].uniform) {
        ip[j] = one_lane(x[j].dt, src, s + x[j].cell);
      } else if (in[j].row_stride == 0) {
        // gathered above
      } else if (inplace && in_place_layout(x[j].packed, x[j].dt, src, in[j].stride) &&
                 (whole || (r + 1 < rows && in[j].row_stride >= n && padded - in[j].row_stride < n))) {
        ip[j] = src;
      } else {
        gather_in(x[j].packed, x[j].dt, src, in[j].stride, n, s + x[j].cell, w);
        ip[j] = s + x[j].cell;
      }
    }
    b.restart(ctl);  // each row is a call over n elements from the first leaf
    for (const Piece& p : k->pieces_) p.fn(n, s, ip);
    for (size_t j = 0; j < no; ++j) {
      if (k->is_summed_[j]) continue;
      const Slot& o = k->outs_[j];
      const int64_t es = static_cast<int64_t>(dtype_size(o.dt));
      const char* cell = out_lanes(o, ip, s);
      scatter(o.packed, o.dt, cell, o.k, n, static_cast<char*>(out[j].data) + r * out[j].row_stride * es, out[j].stride, w);
    }
    for (size_t q = 0; q < ns; ++q) {
      const int32_t j = k->summed_[q];
      const auto* acc = reinterpret_cast<const double*>(s + k->out_cell_at(j));
      if (one_leaf) {  // the leaf's lanes and tail, summed after the last row
        double* d = b.rows.data() + (q * rows + r) * 16;
        std::memcpy(d, acc, 64);
        std::memcpy(d + 8, b.lanes.data() + q * per + 16, 64);
      } else {
        row_sums[j][r] = b.sum(q, acc);
      }
    }
  }
  if (!one_leaf) return true;
  // SumBuffers::sum of one leaf, each row's on its own: chains that overlap.
  for (size_t q = 0; q < ns; ++q) {
    double* y = row_sums[k->summed_[q]];
    const double* d = b.rows.data() + q * rows * 16;
    for (int64_t r = 0; r < rows; ++r, d += 16) y[r] = SumBuffers::leaf_value(d, d + 8, tail);
  }
  return true;
}

Faults& faults() {
  static Faults f;
  return f;
}

}  // namespace ember::jit
