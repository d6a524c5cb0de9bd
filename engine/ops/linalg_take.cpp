// x[idx] along axis 0 as a linalg::Core, for Blockwise only: batched
// lu_solve permutes b's rows by a per-matrix index vector (PyTensor builds a
// Blockwise of AdvancedSubtensor/AdvancedSubtensor1 for it). Plain
// AdvancedSubtensor1 nodes keep their own kernel (engine/ops/ops_index.cpp).
#include <cstring>
#include <string>

#include "engine/ops/linalg_core.hpp"

namespace ember::linalg {
namespace {

// Copies bytes element by element through strides: no per-dtype code.
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
  size_t scratch_bytes(const Shape*) const override { return 0; }
  void compute(Frame& f, const Tensor* in, const Tensor* out, char*) const override {
    const Tensor &x = in[0], &ix = in[1];
    const int nd = x.ndim();
    const int64_t rows = x.dim(0), n = ix.dim(0);
    const size_t es = dtype_size(x.dtype);
    int64_t row = 1;
    for (int d = 1; d < nd; ++d) row *= x.dim(d);
    const char* xb = static_cast<const char*>(x.data);
    char* o = static_cast<char*>(out[0].data);
    for (int64_t i = 0; i < n; ++i) {
      int64_t j = dtype_dispatch(ix.dtype, [&](auto t) {
        using T = decltype(t);
        return static_cast<int64_t>(ix.ptr<T>()[i * ix.strides[0]]);
      });
      const int64_t given = j;
      if (j < 0) j += rows;
      if (j < 0 || j >= rows)
        f.fail("index " + std::to_string(given) + " is out of bounds for axis 0 with size " + std::to_string(rows));
      int64_t idx[kMaxRank] = {};
      for (int64_t k = 0; k < row; ++k) {
        int64_t off = j * x.strides[0];
        for (int d = 1; d < nd; ++d) off += idx[d] * x.strides[d];
        std::memcpy(o, xb + off * static_cast<int64_t>(es), es);
        o += es;
        for (int d = nd - 1; d >= 1; --d) {
          if (++idx[d] < x.dim(d)) break;
          idx[d] = 0;
        }
      }
    }
  }
};

}  // namespace

std::unique_ptr<Core> make_take_core(const CoreDesc& d) { return std::make_unique<TakeCore>(d); }

}  // namespace ember::linalg
