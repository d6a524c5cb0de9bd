#include "interp/scalar_loop.hpp"

#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "interp/bytecode.hpp"

namespace ember::interp {

std::vector<DType> ScalarLoop::tensor_inputs() const {
  std::vector<DType> v{n_steps};
  v.insert(v.end(), body.inputs.begin(), body.inputs.end());
  return v;
}

std::vector<DType> ScalarLoop::tensor_outputs() const {
  std::vector<DType> v(body.inputs.begin(), body.inputs.begin() + carried);
  if (until) v.push_back(DType::Bool);
  return v;
}

std::string ScalarLoop::validate() const {
  if (!dtype_is_int(n_steps))
    return "field 'n_steps': the trip count must be an integer, got " + std::string(dtype_name(n_steps));
  if (carried < 0 || static_cast<size_t>(carried) > body.inputs.size())
    return "field 'carried': " + std::to_string(carried) + " carried values but the body has " +
           std::to_string(body.inputs.size()) + " inputs";
  const size_t nout = static_cast<size_t>(carried) + (until ? 1 : 0);
  if (nout == 0) return "field 'carried': a loop without carried values needs 'until'";
  if (std::string err = body.validate(); !err.empty()) return err;
  if (body.outputs.size() != nout)
    return "field 'outputs': " + std::to_string(body.outputs.size()) + " outputs, expected " +
           std::to_string(nout) + " (one update per carried value" + (until ? ", then the condition)" : ")");
  for (int32_t k = 0; k < carried; ++k) {
    const DType u = body.value_dtype(body.outputs[k]);
    if (u != body.inputs[k])
      return "field 'outputs[" + std::to_string(k) + "]': update has dtype " + std::string(dtype_name(u)) +
             " but carried value " + std::to_string(k) + " is " + std::string(dtype_name(body.inputs[k]));
  }
  if (until && body.value_dtype(body.outputs.back()) != DType::Bool)
    return "field 'outputs[" + std::to_string(carried) + "]': the until condition must be bool, got " +
           std::string(dtype_name(body.value_dtype(body.outputs.back())));
  return "";
}

namespace {

// One element of typed memory into a register cell (bool as 0/1, integers
// widened to int64), and back.
Cell load(DType dt, const void* p) {
  Cell c{};
  dtype_dispatch(dt, [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_same_v<T, bool>) {
      c.i64 = *static_cast<const uint8_t*>(p) != 0;
    } else {
      T v;
      std::memcpy(&v, p, sizeof v);
      if constexpr (std::is_same_v<T, double>) c.f64 = v;
      else if constexpr (std::is_same_v<T, float>) c.f32 = v;
      else c.i64 = v;
    }
  });
  return c;
}

void store(DType dt, const Cell& c, void* p) {
  dtype_dispatch(dt, [&](auto z) {
    using T = decltype(z);
    T v;
    if constexpr (std::is_same_v<T, bool>) {
      *static_cast<uint8_t*>(p) = c.i64 != 0;
      return;
    } else if constexpr (std::is_same_v<T, double>) {
      v = c.f64;
    } else if constexpr (std::is_same_v<T, float>) {
      v = c.f32;
    } else {
      v = static_cast<T>(c.i64);
    }
    std::memcpy(p, &v, sizeof v);
  });
}

inline const char* at(const StridedPtr& s, int64_t i, size_t esize) {
  return static_cast<const char*>(s.data) + i * s.stride * static_cast<int64_t>(esize);
}

// Per-thread scratch: the body's slots, then one cell per body output.
thread_local std::vector<Cell> tls_cells;

void run_loop(const ElemKernel* self, int64_t n, const StridedPtr* in, const StridedPtr* out) {
  const auto* k = static_cast<const LoopKernel*>(self);
  const ScalarLoop& l = k->loop();
  const Bytecode& bc = k->body().bytecode();
  const int32_t nc = bc.num_consts(), ni = static_cast<int32_t>(bc.inputs.size());
  const int32_t nslots = bc.num_slots(), carried = l.carried;
  const int32_t nout = static_cast<int32_t>(bc.outputs.size());
  if (tls_cells.size() < static_cast<size_t>(nslots + nout)) tls_cells.resize(nslots + nout);
  Cell* c = tls_cells.data();
  Cell* next = c + nslots;
  // Constant slots are never written by the program: fill them once.
  if (nc) std::memcpy(c, bc.constants.data(), nc * sizeof(Cell));
  const size_t nsize = dtype_size(l.n_steps);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t steps = load(l.n_steps, at(in[0], i, nsize)).i64;
    for (int32_t j = 0; j < ni; ++j) c[nc + j] = load(bc.inputs[j], at(in[1 + j], i, dtype_size(bc.inputs[j])));
    bool done = true;  // no iteration ran: PyTensor's C code reports convergence
    for (int64_t s = 0; s < steps; ++s) {
      k->body().run_cells(c);
      // Read every output before replacing any carried value: an output's
      // slot may be a carried input's (an update that is another's Identity).
      for (int32_t o = 0; o < nout; ++o) next[o] = c[bc.outputs[o].slot];
      for (int32_t j = 0; j < carried; ++j) c[nc + j] = next[j];
      if (l.until) {
        done = next[carried].i64 != 0;
        if (done) break;
      }
    }
    for (int32_t j = 0; j < carried; ++j) {
      const DType dt = bc.inputs[j];
      store(dt, c[nc + j], const_cast<char*>(at(out[j], i, dtype_size(dt))));
    }
    if (l.until) {
      Cell d{};
      d.i64 = done;
      store(DType::Bool, d, const_cast<char*>(at(out[carried], i, 1)));
    }
  }
}

}  // namespace

LoopKernel::LoopKernel() { fn = &run_loop; }

std::shared_ptr<const LoopKernel> LoopKernel::compile(const ScalarLoop& l) {
  if (std::string err = l.validate(); !err.empty()) throw std::invalid_argument(err);
  std::shared_ptr<LoopKernel> k(new LoopKernel());
  k->loop_ = l;
  k->body_ = Interpreted::compile(l.body);
  return k;
}

}  // namespace ember::interp
