// x[idx] along axis 0 as a linalg::Core, for Blockwise only: batched
// lu_solve permutes b's rows by a per-matrix index vector (PyTensor builds a
// Blockwise of AdvancedSubtensor/AdvancedSubtensor1 for it). Plain
// AdvancedSubtensor1 nodes keep their own kernel (engine/ops/ops_index.cpp).
#include <cstring>
#include <string>

#include "engine/ops/linalg_core.hpp"
#include "engine/ops/linalg_util.hpp"

namespace ember::linalg {
namespace {

class TakeCore final : public Core {
 public:
  explicit TakeCore(const CoreDesc& d) {
    expect_arity(d, 2, 1);
    const int nd = d.in_shape[0].ndim;
    if (nd < 1) d.fail("inputs", d.name + ": x must have at least one core dim");
    expect_ndim(d, true, 1, 1, 1);
    if (!dtype_is_int(d.in_dt[1])) d.fail("inputs", d.name + ": the index must be an integer vector");
    expect_ndim(d, false, 0, nd, nd);
    if (d.out_dt[0] != d.in_dt[0])
      d.fail("outputs", d.name + " output dtype " + std::string(dtype_name(d.out_dt[0])) + " differs from x's " +
                            std::string(dtype_name(d.in_dt[0])));
    num_in = 2;
    num_out = 1;
  }
  void shapes(Frame&, const Shape* in, Shape* out) const override {
    out[0] = in[0];
    out[0].dims[0] = in[1].dims[0];
  }
  size_t scratch_bytes(const Shape* in) const override {
    return carve_bytes(in[0].size(), 8) + carve_bytes(in[1].size(), 8);
  }
  void compute(Frame& f, const Tensor* in, const Tensor* out, char* scratch) const override {
    Carver c{scratch};
    const Tensor& x = in[0];
    const int64_t rows = x.dim(0), n = in[1].dim(0), row = rows > 0 ? x.size() / rows : 0;
    int64_t* idx = c.take<int64_t>(n);
    copy_to(in[1], idx);
    const size_t es = dtype_size(x.dtype);
    // x's elements in C order, bytes as they are (any dtype).
    char* xs = c.take<char>(x.size() * static_cast<int64_t>(es));
    dtype_dispatch(x.dtype, [&](auto t) {
      using T = decltype(t);
      copy_to(x, reinterpret_cast<T*>(xs));
    });
    char* o = static_cast<char*>(out[0].data);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = idx[i] < 0 ? idx[i] + rows : idx[i];
      if (j < 0 || j >= rows)
        f.fail("index " + std::to_string(idx[i]) + " is out of bounds for axis 0 with size " + std::to_string(rows));
      std::memcpy(o + i * row * es, xs + j * row * es, static_cast<size_t>(row) * es);
    }
  }
};

}  // namespace

std::unique_ptr<Core> make_take_core(const CoreDesc& d) { return std::make_unique<TakeCore>(d); }

}  // namespace ember::linalg
