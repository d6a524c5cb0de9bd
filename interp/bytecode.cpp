#include "interp/bytecode.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <stdexcept>

#include "interp/scalar_impl.hpp"

namespace ember::interp {

const char* cls_name(Cls c) {
  switch (c) {
    case Cls::F64: return "f64";
    case Cls::F32: return "f32";
    case Cls::I64: return "i64";
  }
  return "?";
}

namespace {

template <ScalarOp OP> constexpr bool has_inline_impl() { return impl::Impl<OP>::inline_op; }

constexpr bool inline_impl(ScalarOp op) {
  switch (op) {
#define X(E, ...) case ScalarOp::E: return has_inline_impl<ScalarOp::E>();
#include "interp/scalar_ops.def"
#undef X
  }
  return false;
}

}  // namespace

OpSig op_sig(uint16_t opcode) {
  OpSig s;
  if (opcode >= kNumOpcodes) return s;
  if (opcode >= kCvtBase) {
    int k = opcode - kCvtBase;
    s.valid = true;
    s.nargs = 1;
    s.arg[0] = static_cast<Cls>(k / kNumDTypes);
    s.dst = cls_of(static_cast<DType>(k % kNumDTypes));
    return s;
  }
  const auto op = static_cast<ScalarOp>(opcode / kNumCls);
  const auto c = static_cast<Cls>(opcode % kNumCls);
  const ScalarOpInfo& info = op_info(op);
  if (is_alias_op(op)) return s;
  const bool isf = c != Cls::I64;
  s.dst = c;
  s.nargs = info.arity < 0 ? 2 : info.arity;
  for (int k = 0; k < 3; ++k) s.arg[k] = c;
  switch (info.kind) {
    case OpKind::Same:
    case OpKind::Float:
      if (isf && math_arity(op)) {
        s.math = true;
        s.nargs = math_arity(op);
        s.valid = true;
      } else {
        s.valid = inline_impl(op) && (info.kind == OpKind::Same || isf);
      }
      break;
    case OpKind::Compare:
    case OpKind::Predicate:
      s.valid = inline_impl(op);
      s.dst = Cls::I64;
      break;
    case OpKind::Bitwise:
      s.valid = !isf;
      break;
    case OpKind::Switch:
      s.valid = true;
      s.arg[0] = Cls::I64;
      break;
    case OpKind::Cast:
      break;
  }
  return s;
}

std::string opcode_name(uint16_t opcode) {
  if (opcode >= kNumOpcodes) return "bad" + std::to_string(opcode);
  if (opcode >= kCvtBase) {
    int k = opcode - kCvtBase;
    return std::string("cvt.") + cls_name(static_cast<Cls>(k / kNumDTypes)) + "." +
           std::string(dtype_name(static_cast<DType>(k % kNumDTypes)));
  }
  return std::string(op_info(static_cast<ScalarOp>(opcode / kNumCls)).name) + "." +
         cls_name(static_cast<Cls>(opcode % kNumCls));
}

namespace {

// Compile-time conversion of a constant: the same code the VM runs.
Cell convert_cell(Cls src, Cell v, DType dst) {
  Cell r{};
  auto go = [&](auto x) {
    switch (cls_of(dst)) {
      case Cls::F64: r.f64 = impl::convert_value<double>(x, dst); break;
      case Cls::F32: r.f32 = impl::convert_value<float>(x, dst); break;
      case Cls::I64: r.i64 = impl::convert_value<int64_t>(x, dst); break;
    }
  };
  switch (src) {
    case Cls::F64: go(v.f64); break;
    case Cls::F32: go(v.f32); break;
    case Cls::I64: go(v.i64); break;
  }
  return r;
}

uint64_t cell_bits(Cls c, Cell v) {
  uint64_t b = 0;
  if (c == Cls::F32) std::memcpy(&b, &v.f32, 4);
  else std::memcpy(&b, &v, 8);
  return b;
}

class Compiler {
 public:
  explicit Compiler(const Composite& c) : c_(c) {}

  Bytecode run() {
    bc_.inputs = c_.inputs;
    bc_.source = c_;
    std::vector<int> val(c_.num_values(), -1);
    const int ni = static_cast<int>(c_.inputs.size());
    for (int k = 0; k < ni; ++k) val[k] = new_vval(c_.inputs[k], Kind::Input, k);
    for (size_t k = 0; k < c_.constants.size(); ++k) {
      const ScalarConst& sc = c_.constants[k];
      Cell cell{};
      switch (cls_of(sc.dtype)) {
        case Cls::F64: cell.f64 = sc.f; break;
        case Cls::F32: cell.f32 = static_cast<float>(sc.f); break;
        case Cls::I64: cell.i64 = impl::wrap_to(sc.dtype, sc.i); break;
      }
      val[ni + k] = const_vval(sc.dtype, cell);
    }
    for (size_t k = 0; k < c_.nodes.size(); ++k)
      val[c_.first_node_value() + k] = node(c_.nodes[k], val);
    std::vector<int> outs;
    for (int32_t o : c_.outputs) outs.push_back(root(val[o]));
    allocate(outs);
    return std::move(bc_);
  }

 private:
  enum class Kind { Input, Const, Temp };
  struct VVal {
    DType dtype;
    Kind kind;
    int idx;   // input number or constant slot
    int root;  // the vval whose storage this one shares
  };
  struct VInstr {
    uint16_t op;
    DType dtype;
    int d;
    int args[3];
    int nargs;
  };

  int new_vval(DType dt, Kind k, int idx) {
    vv_.push_back({dt, k, idx, static_cast<int>(vv_.size())});
    return static_cast<int>(vv_.size()) - 1;
  }
  int root(int v) const { return vv_[v].root; }
  int alias(int v, DType dt) {
    vv_.push_back({dt, vv_[v].kind, vv_[v].idx, vv_[v].root});
    return static_cast<int>(vv_.size()) - 1;
  }
  int const_vval(DType dt, Cell cell) {
    const Cls c = cls_of(dt);
    auto key = std::make_pair(static_cast<int>(c), cell_bits(c, cell));
    auto it = const_slot_.find(key);
    int slot;
    if (it != const_slot_.end()) {
      slot = it->second;
    } else {
      slot = static_cast<int>(bc_.constants.size());
      bc_.constants.push_back(cell);
      bc_.const_cls.push_back(c);
      const_slot_[key] = slot;
    }
    return new_vval(dt, Kind::Const, slot);
  }
  int emit(uint16_t op, DType dt, std::initializer_list<int> args) {
    int d = new_vval(dt, Kind::Temp, -1);
    VInstr vi{op, dt, d, {-1, -1, -1}, 0};
    for (int a : args) vi.args[vi.nargs++] = a;
    code_.push_back(vi);
    return d;
  }

  // Value v converted to dtype dt (memoized; constants fold).
  int conv(int v, DType dt) {
    const VVal& x = vv_[v];
    if (x.dtype == dt) return v;
    auto key = std::make_pair(v, static_cast<int>(dt));
    if (auto it = conv_memo_.find(key); it != conv_memo_.end()) return it->second;
    int r;
    const Cls sc = cls_of(x.dtype);
    if (x.kind == Kind::Const) {
      r = const_vval(dt, convert_cell(sc, bc_.constants[x.idx], dt));
    } else if (dtype_is_int(dt) && !dtype_is_float(x.dtype) && dtype_upcast(x.dtype, dt) == dt) {
      r = alias(v, dt);  // widening integer (or bool to int): same int64 value
    } else {
      r = emit(cvt_opcode(sc, dt), dt, {v});
    }
    conv_memo_[key] = r;
    return r;
  }

  int arith(ScalarOp op, DType dt, std::initializer_list<int> args) {
    int r = emit(opcode_of(op, cls_of(dt)), dt, args);
    if (cls_of(dt) == Cls::I64 && dt != DType::Int64 && op_info(op).has(opflag::Wraps))
      r = emit(cvt_opcode(Cls::I64, dt), dt, {r});
    return r;
  }

  int node(const ScalarNode& n, const std::vector<int>& val) {
    const ScalarOpInfo& info = op_info(n.op);
    const DType dt = n.dtype;
    auto in = [&](int k) { return val[n.inputs[k]]; };
    auto cin = [&](int k) { return conv(in(k), dt); };
    switch (info.kind) {
      case OpKind::Cast:
        return conv(in(0), dt);
      case OpKind::Compare: {
        DType u = dtype_upcast(vv_[in(0)].dtype, vv_[in(1)].dtype);
        return emit(opcode_of(n.op, cls_of(u)), DType::Bool, {conv(in(0), u), conv(in(1), u)});
      }
      case OpKind::Predicate:
        return emit(opcode_of(n.op, cls_of(vv_[in(0)].dtype)), DType::Bool, {in(0)});
      case OpKind::Switch: {
        int c = in(0);
        if (cls_of(vv_[c].dtype) != Cls::I64) c = conv(c, DType::Bool);
        return emit(opcode_of(ScalarOp::Switch, cls_of(dt)), dt, {c, cin(1), cin(2)});
      }
      case OpKind::Bitwise:
        if (n.op == ScalarOp::Invert && dt == DType::Bool) {
          Cell one{};
          one.i64 = 1;
          return emit(opcode_of(ScalarOp::Xor, Cls::I64), dt, {cin(0), const_vval(DType::Bool, one)});
        }
        break;
      default:
        break;
    }
    if (n.op == ScalarOp::Identity) return cin(0);
    if (n.op == ScalarOp::Second) return cin(1);
    if (cls_of(dt) == Cls::I64 && info.has(opflag::IntId)) return cin(0);
    if (info.arity < 0) {  // variadic Add/Mul: left fold as PyTensor
      int acc = cin(0);
      for (size_t k = 1; k < n.inputs.size(); ++k) acc = arith(n.op, dt, {acc, cin(static_cast<int>(k))});
      return acc;
    }
    switch (info.arity) {
      case 1: return arith(n.op, dt, {cin(0)});
      case 2: return arith(n.op, dt, {cin(0), cin(1)});
      default: return arith(n.op, dt, {cin(0), cin(1), cin(2)});
    }
  }

  // Dead-code elimination, liveness and register assignment.
  void allocate(const std::vector<int>& outs) {
    const int nv = static_cast<int>(vv_.size());
    std::vector<char> live(nv, 0);
    std::vector<int> last(nv, -1);
    for (int o : outs) {
      live[o] = 1;
      last[o] = INT_MAX;
    }
    std::vector<char> keep(code_.size(), 0);
    for (int i = static_cast<int>(code_.size()) - 1; i >= 0; --i) {
      const VInstr& vi = code_[i];
      if (!live[vi.d]) continue;
      keep[i] = 1;
      for (int k = 0; k < vi.nargs; ++k) {
        int r = root(vi.args[k]);
        live[r] = 1;
        last[r] = std::max(last[r], i);
      }
    }
    const int32_t nc = bc_.num_consts();
    const int32_t ni = static_cast<int32_t>(bc_.inputs.size());
    std::vector<int32_t> slot(nv, -1);
    for (int v = 0; v < nv; ++v) {
      if (vv_[v].kind == Kind::Const) slot[v] = vv_[v].idx;
      if (vv_[v].kind == Kind::Input) slot[v] = nc + vv_[v].idx;
    }
    std::vector<int32_t> free_regs;
    int32_t nregs = 0;
    for (size_t i = 0; i < code_.size(); ++i) {
      if (!keep[i]) continue;
      const VInstr& vi = code_[i];
      std::vector<int> dying;
      for (int k = 0; k < vi.nargs; ++k) {
        int r = root(vi.args[k]);
        if (vv_[r].kind == Kind::Temp && last[r] == static_cast<int>(i) &&
            std::find(dying.begin(), dying.end(), r) == dying.end())
          dying.push_back(r);
      }
      // The destination may take a dying operand's register when both have
      // the same lane type (kernels read lane i before writing lane i).
      int32_t dreg = -1;
      const Cls dc = cls_of(vi.dtype);
      for (auto it = dying.begin(); it != dying.end(); ++it)
        if (cls_of(vv_[*it].dtype) == dc) {
          dreg = slot[*it];
          dying.erase(it);
          break;
        }
      if (dreg < 0) {
        if (!free_regs.empty()) {
          dreg = free_regs.back();
          free_regs.pop_back();
        } else {
          dreg = nc + ni + nregs++;
        }
      }
      for (int r : dying) free_regs.push_back(slot[r]);
      slot[vi.d] = dreg;
      Instr ins{vi.op, vi.dtype, 0, dreg, -1, -1, -1};
      int32_t* a[3] = {&ins.a, &ins.b, &ins.c};
      for (int k = 0; k < vi.nargs; ++k) {
        *a[k] = slot[root(vi.args[k])];
        if (*a[k] < nc) ins.kmask |= static_cast<uint8_t>(1u << k);
      }
      bc_.code.push_back(ins);
    }
    bc_.num_regs = nregs;
    for (size_t k = 0; k < outs.size(); ++k)
      bc_.outputs.push_back({slot[outs[k]], c_.value_dtype(c_.outputs[k])});
  }

  const Composite& c_;
  Bytecode bc_;
  std::vector<VVal> vv_;
  std::vector<VInstr> code_;
  std::map<std::pair<int, uint64_t>, int> const_slot_;
  std::map<std::pair<int, int>, int> conv_memo_;
};

}  // namespace

Bytecode compile_bytecode(const Composite& c) {
  if (std::string err = c.validate(); !err.empty()) throw std::invalid_argument(err);
  return Compiler(c).run();
}

std::string validate(const Bytecode& bc) {
  const int32_t nc = bc.num_consts();
  if (bc.const_cls.size() != bc.constants.size()) return "constants: class table size mismatch";
  for (int32_t k = 0; k < nc; ++k)
    if (static_cast<int>(bc.const_cls[k]) >= kNumCls) return "constant " + std::to_string(k) + ": bad class";
  for (size_t k = 0; k < bc.inputs.size(); ++k)
    if (static_cast<int>(bc.inputs[k]) >= kNumDTypes) return "input " + std::to_string(k) + ": bad dtype";
  if (bc.num_regs < 0) return "num_regs is negative";
  const int32_t first_reg = bc.first_reg(), nslots = bc.num_slots();
  std::vector<int8_t> reg_cls(bc.num_regs, -1);  // -1: not written yet
  auto slot_cls = [&](int32_t s) -> int {
    if (s < nc) return static_cast<int>(bc.const_cls[s]);
    if (s < first_reg) return static_cast<int>(cls_of(bc.inputs[s - nc]));
    return reg_cls[s - first_reg];
  };
  for (size_t i = 0; i < bc.code.size(); ++i) {
    const Instr& in = bc.code[i];
    const std::string where = "instruction " + std::to_string(i);
    const OpSig sig = op_sig(in.op);
    if (!sig.valid) return where + ": field 'op': invalid opcode " + std::to_string(in.op);
    if (static_cast<int>(in.dtype) >= kNumDTypes) return where + ": field 'dtype': invalid dtype";
    if (cls_of(in.dtype) != sig.dst)
      return where + " (" + opcode_name(in.op) + "): field 'dtype': " + std::string(dtype_name(in.dtype)) +
             " is not of the result class " + cls_name(sig.dst);
    if (in.kmask >> 3) return where + ": field 'kmask': bits above 2 set";
    if (in.op >= kCvtBase && static_cast<int>(in.dtype) != (in.op - kCvtBase) % kNumDTypes)
      return where + " (" + opcode_name(in.op) + "): field 'dtype': not the conversion's target";
    const int32_t ops[3] = {in.a, in.b, in.c};
    const char* names[3] = {"a", "b", "c"};
    for (int k = 0; k < 3; ++k) {
      const std::string field = where + " (" + opcode_name(in.op) + "): field '" + names[k] + "': ";
      if (k >= sig.nargs) {
        if (ops[k] != -1) return field + "unused operand must be -1";
        if ((in.kmask >> k) & 1) return where + ": field 'kmask': bit " + std::to_string(k) + " set for an unused operand";
        continue;
      }
      if (ops[k] < 0 || ops[k] >= nslots) return field + "slot " + std::to_string(ops[k]) + " out of range";
      if (((in.kmask >> k) & 1) != (ops[k] < nc ? 1 : 0))
        return where + ": field 'kmask': bit " + std::to_string(k) + " disagrees with operand " + names[k];
      int c = slot_cls(ops[k]);
      if (c < 0) return field + "reads register slot " + std::to_string(ops[k]) + " before it is written";
      if (c != static_cast<int>(sig.arg[k]))
        return field + "slot " + std::to_string(ops[k]) + " holds " + cls_name(static_cast<Cls>(c)) +
               ", expected " + cls_name(sig.arg[k]);
    }
    if (in.d < first_reg || in.d >= nslots)
      return where + ": field 'd': slot " + std::to_string(in.d) + " is not a register";
    reg_cls[in.d - first_reg] = static_cast<int8_t>(sig.dst);
  }
  for (size_t k = 0; k < bc.outputs.size(); ++k) {
    const OutputRef& o = bc.outputs[k];
    const std::string where = "output " + std::to_string(k);
    if (static_cast<int>(o.dtype) >= kNumDTypes) return where + ": invalid dtype";
    if (o.slot < 0 || o.slot >= nslots) return where + ": slot " + std::to_string(o.slot) + " out of range";
    int c = slot_cls(o.slot);
    if (c < 0) return where + ": register slot " + std::to_string(o.slot) + " is never written";
    if (c != static_cast<int>(cls_of(o.dtype)))
      return where + ": slot holds " + std::string(cls_name(static_cast<Cls>(c))) + ", output is " +
             std::string(dtype_name(o.dtype));
  }
  if (bc.outputs.empty()) return "program has no outputs";
  return "";
}

std::string Bytecode::disassemble() const {
  std::string s;
  auto slot = [&](int32_t v) {
    if (v < num_consts()) return "k" + std::to_string(v);
    if (v < first_reg()) return "in" + std::to_string(v - num_consts());
    return "r" + std::to_string(v - first_reg());
  };
  for (int32_t k = 0; k < num_consts(); ++k) {
    s += "k" + std::to_string(k) + " = ";
    switch (const_cls[k]) {
      case Cls::F64: s += std::to_string(constants[k].f64); break;
      case Cls::F32: s += std::to_string(constants[k].f32) + "f"; break;
      case Cls::I64: s += std::to_string(constants[k].i64); break;
    }
    s += "\n";
  }
  for (const Instr& in : code) {
    s += slot(in.d) + " = " + opcode_name(in.op);
    for (int32_t a : {in.a, in.b, in.c})
      if (a >= 0) s += " " + slot(a);
    s += "\n";
  }
  for (size_t k = 0; k < outputs.size(); ++k)
    s += "out" + std::to_string(k) + " = " + slot(outputs[k].slot) + " (" + std::string(dtype_name(outputs[k].dtype)) + ")\n";
  return s;
}

}  // namespace ember::interp
