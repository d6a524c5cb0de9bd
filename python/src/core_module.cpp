// ember._core: ember::Program for Python (nanobind). Inputs are zero-copy
// views of NumPy arrays; calls release the GIL; outputs are owned NumPy
// arrays (0-d for scalars). The nutpie entry points are exposed as raw
// addresses for ctypes / nutpie's LogpFunc.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "ember/host.hpp"
#include "engine/graph/graph.hpp"
#include "engine/c_api.hpp"
#include "engine/ops/ops_common.hpp"
#include "interp/option_parse.hpp"
#include "jit/tier_manager.hpp"
#include "jit/jit.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using InArray = nb::ndarray<nb::ro, nb::device::cpu>;

// Options a caller may pass. jit / jit_memory configure the engine's
// process-wide compile service (TierManager) before the Program is built, so
// they apply to this Program and to later ones (the engine has one JIT budget).
bool jit_built_and_usable() {
#ifdef EMBER_WITH_JIT
  return ember::jit::available();
#else
  return false;  // jit/ is not compiled in (EMBER_WITH_JIT=OFF)
#endif
}

struct PyOptions {
  ember::Options engine;
  std::optional<ember::JitMode> jit;  // unset: leave as configured (EMBER_JIT or default auto)
  int64_t jit_memory = 0;             // bytes; 0 = leave as configured

  static PyOptions from_dict(const nb::dict& d) {
    PyOptions o;
    for (auto [k, v] : d) {
      const std::string key = nb::cast<std::string>(k);
      if (key == "parallel_threshold") o.engine.parallel_threshold = nb::cast<int64_t>(v);
      else if (key == "jit") o.jit = ember::parse_jit_mode_or_throw(nb::cast<std::string>(v), "jit");
      else if (key == "jit_memory") o.jit_memory = nb::cast<int64_t>(v);
      else throw nb::value_error(("unknown ember option '" + key + "'").c_str());
    }
    if (o.jit_memory < 0) throw nb::value_error("jit_memory must be >= 0");
    return o;
  }
  void apply_jit() const {
    if (!jit && jit_memory == 0) return;
    auto& tm = ember::TierManager::instance();
    ember::JitConfig c = tm.config();
    if (jit) c.mode = *jit;
    if (jit_memory > 0) c.memory_budget = static_cast<size_t>(jit_memory);
    tm.configure(c);
  }
  nb::dict to_dict() const {
    const ember::JitConfig c = ember::TierManager::instance().config();
    nb::dict d;
    d["parallel_threshold"] = engine.parallel_threshold;
    d["jit"] = std::string(ember::jit_mode_name(c.mode));
    d["jit_memory"] = static_cast<int64_t>(c.memory_budget);
    d["jit_active"] = jit_built_and_usable() && c.mode != ember::JitMode::Off;
    return d;
  }
};

bool dtype_from_dlpack(nb::dlpack::dtype t, ember::DType& out) {
  using C = nb::dlpack::dtype_code;
  if (t.lanes != 1) return false;
  const auto code = static_cast<C>(t.code);
  if (code == C::Float && t.bits == 64) out = ember::DType::Float64;
  else if (code == C::Float && t.bits == 32) out = ember::DType::Float32;
  else if (code == C::Int && t.bits == 64) out = ember::DType::Int64;
  else if (code == C::Int && t.bits == 32) out = ember::DType::Int32;
  else if (code == C::Int && t.bits == 16) out = ember::DType::Int16;
  else if (code == C::Int && t.bits == 8) out = ember::DType::Int8;
  else if (code == C::UInt && t.bits == 8) out = ember::DType::UInt8;
  else if (code == C::UInt && t.bits == 16) out = ember::DType::UInt16;
  else if (code == C::UInt && t.bits == 32) out = ember::DType::UInt32;
  else if (code == C::UInt && t.bits == 64) out = ember::DType::UInt64;
  else if (code == C::Bool && t.bits == 8) out = ember::DType::Bool;
  else return false;
  return true;
}

nb::dlpack::dtype dlpack_of(ember::DType t) {
  switch (t) {
    case ember::DType::Float64: return nb::dtype<double>();
    case ember::DType::Float32: return nb::dtype<float>();
    case ember::DType::Int64: return nb::dtype<int64_t>();
    case ember::DType::Int32: return nb::dtype<int32_t>();
    case ember::DType::Int16: return nb::dtype<int16_t>();
    case ember::DType::Int8: return nb::dtype<int8_t>();
    case ember::DType::UInt8: return nb::dtype<uint8_t>();
    case ember::DType::Bool: return nb::dtype<bool>();
    case ember::DType::UInt16: return nb::dtype<uint16_t>();
    case ember::DType::UInt32: return nb::dtype<uint32_t>();
    case ember::DType::UInt64: return nb::dtype<uint64_t>();
  }
  return nb::dtype<double>();
}

// A view of a NumPy array (strides in elements, as DLPack gives them).
ember::Tensor view_of(const InArray& a, const std::string& what) {
  ember::Tensor t;
  if (!dtype_from_dlpack(a.dtype(), t.dtype))
    throw nb::type_error((what + ": dtype not supported by ember").c_str());
  if (a.ndim() > static_cast<size_t>(ember::kMaxRank))
    throw nb::value_error((what + ": more than 16 dims").c_str());
  t.shape.ndim = static_cast<int>(a.ndim());
  for (size_t d = 0; d < a.ndim(); ++d) {
    t.shape.dims[d] = static_cast<int64_t>(a.shape(d));
    t.strides[d] = a.stride(d);
  }
  t.data = const_cast<void*>(a.data());
  return t;
}

nb::object to_numpy(ember::Array&& a) {
  auto* owned = new ember::Array(std::move(a));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<ember::Array*>(p); });
  size_t shape[ember::kMaxRank];
  for (int d = 0; d < owned->t.ndim(); ++d) shape[d] = static_cast<size_t>(owned->t.dim(d));
  static char dummy;  // NumPy wants a non-null pointer even for empty arrays
  void* data = owned->t.data ? owned->t.data : &dummy;
  nb::ndarray<nb::numpy> arr(data, static_cast<size_t>(owned->t.ndim()), shape, owner, nullptr,
                             dlpack_of(owned->t.dtype));
  nb::object out = arr.cast();
  // nanobind gives 64-bit integers NumPy's 'q'/'Q' (long long), whose scalars
  // are not np.int64/np.uint64 where those are C long: view them as NumPy's own.
  if (owned->t.dtype == ember::DType::Int64 || owned->t.dtype == ember::DType::UInt64) {
    static nb::handle np = nb::module_::import_("numpy").release();  // kept for the process's life
    nb::object want = np.attr(owned->t.dtype == ember::DType::Int64 ? "int64" : "uint64");
    if (!out.attr("dtype").attr("type").is(want)) out = out.attr("view")(want);
  }
  return out;
}

nb::list io_list(const std::vector<ember::IOInfo>& v) {
  nb::list out;
  for (const auto& i : v) {
    nb::list shape;
    for (int d = 0; d < i.static_shape.ndim; ++d) {
      if (i.static_shape.dims[d] < 0) shape.append(nb::none());
      else shape.append(i.static_shape.dims[d]);
    }
    nb::dict d;
    d["name"] = i.name;
    d["dtype"] = std::string(ember::dtype_name(i.dtype));
    d["shape"] = nb::tuple(shape);
    d["shared"] = i.shared;
    out.append(d);
  }
  return out;
}

// A NumPy view of an engine tensor, read-only, valid while the engine
// keeps the memory (a callback's inputs: until it returns).
nb::object numpy_view(const ember::Tensor& t) {
  size_t shape[ember::kMaxRank];
  int64_t strides[ember::kMaxRank];
  for (int d = 0; d < t.ndim(); ++d) {
    shape[d] = static_cast<size_t>(t.dim(d));
    strides[d] = t.strides[d];
  }
  static char dummy;
  void* data = t.data ? t.data : &dummy;
  nb::ndarray<nb::numpy, nb::ro> arr(data, static_cast<size_t>(t.ndim()), shape, nb::handle(), strides,
                                     dlpack_of(t.dtype));
  return arr.cast(nb::rv_policy::reference);  // a view: no copy, no owner
}

// A PythonCallback node's host function: a Python callable taking the
// node's inputs as NumPy views and returning its outputs (ember/fallback.py
// builds them from PyTensor ops). Engine threads call it without the GIL
// (the Python call path releases it, nutpie's chains never hold it), so it
// takes the GIL itself; the callable serialises calls on one op.
class PyHostCallback final : public ember::HostCallback {
 public:
  explicit PyHostCallback(nb::handle fn) : fn_(fn.ptr()) { Py_INCREF(fn_); }
  ~PyHostCallback() override {
    if (!Py_IsInitialized()) return;  // interpreter gone: nothing to release
    PyGILState_STATE st = PyGILState_Ensure();
    Py_DECREF(fn_);
    PyGILState_Release(st);
  }

  void run(ember::HostCall& c) const override {
    if (!Py_IsInitialized()) c.fail("the Python interpreter is not running");
    std::string err;
    {
      nb::gil_scoped_acquire gil;  // PyGILState_Ensure: works on threads Python never saw
      try {
        call(c);
        return;
      } catch (nb::python_error& e) {
        err = nb::cast<std::string>(nb::str(e.value()));
      }
    }
    c.fail(err);
  }

 private:
  void call(ember::HostCall& c) const {
    nb::list args;
    for (int i = 0; i < c.num_inputs(); ++i) args.append(numpy_view(c.in(i)));
    nb::object res = nb::handle(fn_)(*args);
    const size_t n = nb::len(res);
    if (n != static_cast<size_t>(c.num_outputs()))
      c.fail("returned " + std::to_string(n) + " outputs, the node has " + std::to_string(c.num_outputs()));
    for (size_t i = 0; i < n; ++i) {
      InArray a;
      if (!nb::try_cast(res[i], a)) c.fail("output " + std::to_string(i) + " is not a NumPy array");
      ember::Tensor src;
      if (!dtype_from_dlpack(a.dtype(), src.dtype))
        c.fail("output " + std::to_string(i) + " has a dtype ember does not carry");
      if (a.ndim() > static_cast<size_t>(ember::kMaxRank)) c.fail("output " + std::to_string(i) + " has too many dims");
      src.shape.ndim = static_cast<int>(a.ndim());
      for (size_t d = 0; d < a.ndim(); ++d) {
        src.shape.dims[d] = static_cast<int64_t>(a.shape(d));
        src.strides[d] = a.stride(d);
      }
      src.data = const_cast<void*>(a.data());
      ember::Tensor& dst = c.out(static_cast<int>(i), src.dtype, src.shape);
      if (dst.size()) ember::copy_convert(dst, src);
    }
  }

  PyObject* fn_;
};

std::shared_ptr<const ember::HostCallbacks> host_table(const nb::list& callbacks) {
  if (callbacks.size() == 0) return nullptr;
  auto t = std::make_shared<ember::HostCallbacks>();
  for (nb::handle fn : callbacks) {
    if (!PyCallable_Check(fn.ptr())) throw nb::type_error("callbacks: expected callables");
    t->fns.push_back(std::make_shared<PyHostCallback>(fn));
  }
  return t;
}

struct AlignedDelete {
  void operator()(const uint8_t* p) const { ::operator delete[](const_cast<uint8_t*>(p), std::align_val_t(64)); }
};

class PyProgram {
 public:
  PyProgram(std::shared_ptr<const ember::Program> p, PyOptions o) : prog_(std::move(p)), opts_(std::move(o)) {}

  static PyProgram load(const std::string& path, const nb::dict& options, const nb::list& callbacks) {
    PyOptions o = PyOptions::from_dict(options);
    o.engine.host = host_table(callbacks);
    o.apply_jit();
    std::shared_ptr<const ember::Program> p;
    {
      nb::gil_scoped_release release;
      p = ember::Program::load(path, o.engine);
    }
    return PyProgram(std::move(p), std::move(o));
  }

  static PyProgram from_json(const std::string& json, nb::bytes payload, const nb::dict& options,
                             const std::string& source, const nb::list& callbacks) {
    PyOptions o = PyOptions::from_dict(options);
    o.engine.host = host_table(callbacks);
    o.apply_jit();
    const size_t n = payload.size();
    std::shared_ptr<const uint8_t[]> buf(new (std::align_val_t(64)) uint8_t[n ? n : 1], AlignedDelete{});
    if (n) std::memcpy(const_cast<uint8_t*>(buf.get()), payload.c_str(), n);
    std::shared_ptr<const ember::Program> p;
    {
      nb::gil_scoped_release release;
      p = ember::Program::from_graph(ember::Graph::parse(json, buf, n, source), o.engine);
    }
    return PyProgram(std::move(p), std::move(o));
  }

  // A fresh Program from the same parsed graph: its own shared values.
  PyProgram clone() const {
    std::shared_ptr<const ember::Program> p;
    {
      nb::gil_scoped_release release;
      p = ember::Program::from_graph(prog_->graph(), opts_.engine);
    }
    return PyProgram(std::move(p), opts_);
  }

  nb::list call(nb::args args) const {
    std::vector<InArray> keep;
    keep.reserve(args.size());
    std::vector<ember::Tensor> views;
    views.reserve(args.size());
    for (size_t k = 0; k < args.size(); ++k) {
      InArray a;
      if (!nb::try_cast(args[k], a))
        throw nb::type_error(("argument " + std::to_string(k) + ": expected a NumPy array").c_str());
      views.push_back(view_of(a, "argument " + std::to_string(k)));
      keep.push_back(std::move(a));
    }
    std::vector<ember::Array> out;
    {
      nb::gil_scoped_release release;
      out = prog_->call(std::span<const ember::Tensor>(views.data(), views.size()));
    }
    nb::list res;
    for (auto& a : out) res.append(to_numpy(std::move(a)));
    return res;
  }

  void set_shared(const std::string& name, const InArray& value) const {
    ember::Tensor t = view_of(value, "shared '" + name + "'");
    prog_->set_shared(name, t);
  }

  // The ember_program* for ember_logp / ember_expand (user_data), as an address.
  uintptr_t nutpie_handle() {
    std::lock_guard<std::mutex> lock(*handle_mu_);
    if (!handle_) handle_ = std::shared_ptr<ember_program>(ember::wrap_for_c_abi(prog_), ember_program_free);
    return reinterpret_cast<uintptr_t>(handle_.get());
  }

  // Number of logp calls through the nutpie handle so far.
  uint64_t nutpie_calls() {
    std::lock_guard<std::mutex> lock(*handle_mu_);
    return handle_ ? ember_program_logp_calls(handle_.get()) : 0;
  }

  nb::list args() const { return io_list(prog_->args()); }
  nb::list shared() const { return io_list(prog_->shared()); }
  nb::list outputs() const { return io_list(prog_->outputs()); }
  nb::dict options() const { return opts_.to_dict(); }
  std::string source() const { return prog_->graph().source; }
  size_t num_nodes() const { return prog_->graph().nodes.size(); }

 private:
  std::shared_ptr<const ember::Program> prog_;
  PyOptions opts_;
  std::unique_ptr<std::mutex> handle_mu_ = std::make_unique<std::mutex>();  // keeps PyProgram movable
  std::shared_ptr<ember_program> handle_;
};

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "Ember's native engine (ember::Program) for Python";
  nb::exception<ember::CallError>(m, "CallError", PyExc_RuntimeError);
  nb::exception<ember::LoadError>(m, "LoadError", PyExc_ValueError);

  nb::class_<PyProgram>(m, "Program")
      .def_static("load", &PyProgram::load, "path"_a, "options"_a = nb::dict(), "callbacks"_a = nb::list())
      .def_static("from_json", &PyProgram::from_json, "json"_a, "payload"_a, "options"_a = nb::dict(),
                  "source"_a = "<memory>", "callbacks"_a = nb::list())
      .def("clone", &PyProgram::clone)
      .def("__call__", &PyProgram::call)
      .def("set_shared", &PyProgram::set_shared, "name"_a, "value"_a)
      .def("nutpie_handle", &PyProgram::nutpie_handle)
      .def("nutpie_calls", &PyProgram::nutpie_calls)
      .def_prop_ro("args", &PyProgram::args)
      .def_prop_ro("shared", &PyProgram::shared)
      .def_prop_ro("outputs", &PyProgram::outputs)
      .def_prop_ro("options", &PyProgram::options)
      .def_prop_ro("source", &PyProgram::source)
      .def_prop_ro("num_nodes", &PyProgram::num_nodes);

  m.attr("logp_address") = reinterpret_cast<uintptr_t>(&ember_logp);
  m.attr("expand_address") = reinterpret_cast<uintptr_t>(&ember_expand);
  m.def("last_error", [] { return std::string(ember_last_error()); });
  m.def("supported_tensor_ops", &ember::supported_tensor_ops);
  m.def("supported_scalar_ops", &ember::supported_scalar_ops);
  m.attr("version") = EMBER_VERSION;
  m.attr("jit_available") = jit_built_and_usable();
  // The compile service's counters (JitStats::to_json): budget, peak and
  // resident bytes, and each Composite's tier.
  m.def("jit_stats", [] { return ember::TierManager::instance().stats().to_json(); });
  // The parsers the CLI and the engine use (interp/option_parse.hpp), for
  // ember/options.py; a bad value raises ValueError naming `what`.
  m.def("parse_jit_mode",
        [](const std::string& s, const std::string& what) {
          return std::string(ember::jit_mode_name(ember::parse_jit_mode_or_throw(s, what)));
        },
        "text"_a, "what"_a = "jit");
  m.def("parse_size", [](const std::string& s, const std::string& what) { return ember::parse_size_or_throw(s, what); },
        "text"_a, "what"_a = "jit_memory");
}
