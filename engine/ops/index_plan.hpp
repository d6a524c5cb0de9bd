// NumPy indexing for the Subtensor family: an index list parsed and checked at
// load time (IndexSpec), resolved per call against a tensor (Resolved) into a
// strided view of the non-advanced axes plus broadcast integer index arrays.
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember {

struct ScalarRef {
  enum Kind : uint8_t { None, Literal, Input } kind = None;
  int64_t lit = 0;
  int input = -1;
};

struct IdxEntry {
  enum Kind : uint8_t { Slice, Index, Array, NewAxis } kind = Slice;
  ScalarRef start, stop, step;  // Slice
  ScalarRef value;              // Index
  int input = -1;               // Array
  bool is_bool = false;         // Array: a mask over `ndim` axes
  int ndim = 0;                 // Array: rank of the index tensor
};

struct IndexSpec {
  std::vector<IdxEntry> entries;
  bool has_array = false;
  int x_ndim = 0;
  int out_ndim = 0;  // rank of x[idx]
  Shape static_out;  // x[idx]'s static shape, -1 where unknown

  // Reads attrs.idx_list; index inputs are numbered from `first_input`.
  // `advanced`: arrays and newaxis allowed.
  static IndexSpec parse(const NodeContext& ctx, int first_input, bool advanced);
  // x[idx] with idx the integer vector at `input` (AdvancedSubtensor1 forms).
  static IndexSpec gather0(const NodeContext& ctx, int input);
};

// One call's resolution of an IndexSpec against a tensor t (shape of t; the
// offsets use t's strides).
struct Resolved {
  Tensor basic;          // the non-advanced result axes, data at t.data
  int64_t base_off = 0;  // element offset of basic's origin
  int nb_before = 0;     // basic axes placed before the broadcast index axes
  Shape B;               // broadcast shape of the advanced indices
  Shape result;          // shape of t[idx]
  int nadv = 0;
  const int64_t* adv_ptr[kMaxRank];
  int64_t adv_bst[kMaxRank][kMaxRank];  // strides of each index array over B
  int64_t adv_tstride[kMaxRank];        // t's stride on the indexed axis
  int64_t adv_dim[kMaxRank];
  int adv_axis[kMaxRank];
  int64_t scalars[kMaxRank];  // integer indices turned into 0-d arrays

  // Splits the strides of a tensor shaped like `result` into those of the
  // basic axes and those of the B axes.
  void split_strides(const int64_t* full, int64_t* basic_st, int64_t* b_st) const;
};

// Resolves spec against t. Index conversions and boolean masks use one block of
// f.scratch(extra_scratch + what they need); returns a pointer to the caller's
// extra_scratch bytes (aligned to 16) inside it.
void* resolve_index(Frame& f, const IndexSpec& spec, const Tensor& t, Resolved& r,
                    size_t extra_scratch = 0);

// Calls body(t_offset, op_offsets) for each position of B in C order, after
// bounds-checking each index (CallError on failure). op_bst[k] gives operand
// k's strides over the B axes.
template <class Body>
void for_each_adv(Frame& f, const Resolved& r, int nops, const int64_t (*op_bst)[kMaxRank],
                  Body&& body) {
  const int nb = r.B.ndim;
  for (int d = 0; d < nb; ++d)
    if (r.B.dims[d] == 0) return;
  // Axes of B of size 1 move nothing: with at most one other, one flat loop
  // (x[idx], and x[rows, cols] with (n, 1) index columns).
  int along = -1, longer = 0;
  for (int d = 0; d < nb; ++d)
    if (r.B.dims[d] != 1) along = d, ++longer;
  if (longer <= 1) {
    const int64_t n = along < 0 ? 1 : r.B.dims[along];
    int64_t off[4] = {0, 0, 0, 0}, st[4] = {0, 0, 0, 0};
    for (int k = 0; k < nops && along >= 0; ++k) st[k] = op_bst[k][along];
    auto loop = [&](auto nadv_tag) {
      constexpr int kN = decltype(nadv_tag)::value;  // 0: r.nadv, known at run time
      const int na = kN > 0 ? kN : r.nadv;
      const int64_t* ip[kMaxRank];
      int64_t ist[kMaxRank];
      for (int j = 0; j < na; ++j) ip[j] = r.adv_ptr[j], ist[j] = along < 0 ? 0 : r.adv_bst[j][along];
      for (int64_t b = 0; b < n; ++b) {
        int64_t toff = r.base_off;
        for (int j = 0; j < na; ++j) {
          const int64_t v = normalize_index(*ip[j], r.adv_dim[j]);
          if (v < 0) [[unlikely]]
            f.fail(index_error_msg(*ip[j], r.adv_axis[j], r.adv_dim[j]));
          toff += v * r.adv_tstride[j];
          ip[j] += ist[j];
        }
        body(toff, static_cast<const int64_t*>(off));
        for (int k = 0; k < nops; ++k) off[k] += st[k];
      }
    };
    if (r.nadv == 1) loop(std::integral_constant<int, 1>{});
    else if (r.nadv == 2) loop(std::integral_constant<int, 2>{});
    else loop(std::integral_constant<int, 0>{});
    return;
  }
  const int64_t* p[kMaxRank];
  for (int j = 0; j < r.nadv; ++j) p[j] = r.adv_ptr[j];
  int64_t off[4] = {0, 0, 0, 0};
  int64_t idx[kMaxRank];  // [0, nb) used
  for (int d = 0; d < nb; ++d) idx[d] = 0;
  for (;;) {
    int64_t toff = r.base_off;
    for (int j = 0; j < r.nadv; ++j) {
      const int64_t n = normalize_index(*p[j], r.adv_dim[j]);
      if (n < 0) f.fail(index_error_msg(*p[j], r.adv_axis[j], r.adv_dim[j]));
      toff += n * r.adv_tstride[j];
    }
    body(toff, static_cast<const int64_t*>(off));
    int d = nb - 1;
    for (; d >= 0; --d) {
      for (int j = 0; j < r.nadv; ++j) p[j] += r.adv_bst[j][d];
      for (int k = 0; k < nops; ++k) off[k] += op_bst[k][d];
      if (++idx[d] < r.B.dims[d]) break;
      for (int j = 0; j < r.nadv; ++j) p[j] -= r.adv_bst[j][d] * r.B.dims[d];
      for (int k = 0; k < nops; ++k) off[k] -= op_bst[k][d] * r.B.dims[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace ember
