#include "engine/ops/index_plan.hpp"

#include <new>
#include <string>

namespace ember {

namespace {

std::string field_of(size_t p) { return "idx_list[" + std::to_string(p) + "]"; }

ScalarRef parse_scalar(const NodeContext& ctx, const nlohmann::json& j, int first_input,
                       std::vector<bool>& used, const std::string& field) {
  ScalarRef s;
  if (j.is_null()) return s;
  if (j.is_number_integer()) {
    s.kind = ScalarRef::Literal;
    s.lit = j.get<int64_t>();
    return s;
  }
  if (j.is_object() && j.contains("input") && j["input"].is_number_integer()) {
    const int64_t k = j["input"].get<int64_t>();
    if (k < first_input || k >= ctx.num_inputs())
      ctx.fail(field, "refers to input " + std::to_string(k) + " but index inputs are " +
                          std::to_string(first_input) + ".." +
                          std::to_string(ctx.num_inputs() - 1));
    expect_int_scalar_input(ctx, static_cast<int>(k), field);
    used[k] = true;
    s.kind = ScalarRef::Input;
    s.input = static_cast<int>(k);
    return s;
  }
  ctx.fail(field, "expected null, an integer or {\"input\": k}, got " + j.dump());
}

}  // namespace

IndexSpec IndexSpec::parse(const NodeContext& ctx, int first_input, bool advanced) {
  IndexSpec s;
  s.x_ndim = ctx.in(0).static_shape.ndim;
  const nlohmann::json& lst = ctx.attr("idx_list");
  if (!lst.is_array()) ctx.fail("idx_list", "must be a list");
  std::vector<bool> used(ctx.num_inputs(), false);
  int consumed = 0, n_basic = 0, adv_ndim = 0;
  for (size_t p = 0; p < lst.size(); ++p) {
    const std::string field = field_of(p);
    const nlohmann::json& e = lst[p];
    if (!e.is_object() || !e.contains("type") || !e["type"].is_string())
      ctx.fail(field, "expected an object with a \"type\"");
    const std::string type = e["type"].get<std::string>();
    IdxEntry ent;
    auto get = [&](const char* key) -> const nlohmann::json& {
      static const nlohmann::json null_json;
      return e.contains(key) ? e[key] : null_json;
    };
    if (type == "slice") {
      ent.kind = IdxEntry::Slice;
      ent.start = parse_scalar(ctx, get("start"), first_input, used, field + ".start");
      ent.stop = parse_scalar(ctx, get("stop"), first_input, used, field + ".stop");
      ent.step = parse_scalar(ctx, get("step"), first_input, used, field + ".step");
      if (ent.step.kind == ScalarRef::Literal && ent.step.lit == 0)
        ctx.fail(field + ".step", "slice step cannot be zero");
      ++consumed;
      ++n_basic;
    } else if (type == "index") {
      ent.kind = IdxEntry::Index;
      ent.value = parse_scalar(ctx, get("value"), first_input, used, field + ".value");
      if (ent.value.kind == ScalarRef::None) ctx.fail(field + ".value", "an index needs a value");
      ++consumed;
    } else if (type == "array" || type == "newaxis") {
      if (!advanced)
        ctx.fail(field, "\"" + type + "\" entries are only allowed in the Advanced* ops");
      if (type == "newaxis") {
        ent.kind = IdxEntry::NewAxis;
        ++n_basic;
      } else {
        ent.kind = IdxEntry::Array;
        const nlohmann::json& k = get("input");
        if (!k.is_number_integer() || k.get<int64_t>() < first_input ||
            k.get<int64_t>() >= ctx.num_inputs())
          ctx.fail(field + ".input", "must be an index input number " +
                                         std::to_string(first_input) + ".." +
                                         std::to_string(ctx.num_inputs() - 1));
        ent.input = static_cast<int>(k.get<int64_t>());
        used[ent.input] = true;
        const VarSpec& v = ctx.in(ent.input);
        ent.ndim = v.static_shape.ndim;
        if (v.dtype == DType::Bool) {
          if (ent.ndim == 0) ctx.fail(field, "a 0-d boolean index is not supported");
          ent.is_bool = true;
          consumed += ent.ndim;
          adv_ndim = std::max(adv_ndim, 1);
        } else if (is_int_dtype(v.dtype)) {
          ++consumed;
          adv_ndim = std::max(adv_ndim, ent.ndim);
        } else {
          ctx.fail(field, "index input " + std::to_string(ent.input) + " has dtype " +
                              std::string(dtype_name(v.dtype)) + "; need an integer or bool");
        }
        s.has_array = true;
      }
    } else {
      ctx.fail(field, "unknown index type \"" + type + "\"");
    }
    s.entries.push_back(ent);
  }
  if (consumed > s.x_ndim)
    ctx.fail("idx_list", "too many indices: they index " + std::to_string(consumed) +
                             " axes but input 0 has rank " + std::to_string(s.x_ndim));
  for (int k = first_input; k < ctx.num_inputs(); ++k)
    if (!used[k]) ctx.fail("idx_list", "input " + std::to_string(k) + " is not used by idx_list");
  const int rest = s.x_ndim - consumed;
  s.out_ndim = s.has_array ? n_basic + rest + adv_ndim : n_basic + rest;
  if (s.out_ndim > kMaxRank) ctx.fail("idx_list", "the result would have more than 16 dims");
  // Static result shape (basic indexing only); literal indices checked here.
  const Shape& xs = ctx.in(0).static_shape;
  s.static_out.ndim = s.out_ndim;
  for (int d = 0; d < s.out_ndim; ++d) s.static_out.dims[d] = -1;
  if (!s.has_array) {
    int ax = 0, od = 0;
    auto lit = [](const ScalarRef& r) -> std::optional<int64_t> {
      if (r.kind == ScalarRef::Literal) return r.lit;
      return std::nullopt;
    };
    for (size_t p = 0; p < s.entries.size(); ++p) {
      const IdxEntry& e = s.entries[p];
      const int64_t dim = e.kind == IdxEntry::NewAxis ? 1 : xs.dims[ax];
      if (e.kind == IdxEntry::NewAxis) {
        s.static_out.dims[od++] = 1;
      } else if (e.kind == IdxEntry::Index) {
        if (e.value.kind == ScalarRef::Literal && dim >= 0 && normalize_index(e.value.lit, dim) < 0)
          ctx.fail(field_of(p) + ".value", index_error_msg(e.value.lit, ax, dim));
        ++ax;
      } else {
        const bool known = dim >= 0 && e.start.kind != ScalarRef::Input &&
                           e.stop.kind != ScalarRef::Input && e.step.kind != ScalarRef::Input;
        s.static_out.dims[od++] =
            known ? slice_range(lit(e.start), lit(e.stop), e.step.kind == ScalarRef::None ? 1 : e.step.lit, dim).len
                  : -1;
        ++ax;
      }
    }
    for (; ax < s.x_ndim; ++ax) s.static_out.dims[od++] = xs.dims[ax];
  }
  return s;
}

IndexSpec IndexSpec::gather0(const NodeContext& ctx, int input) {
  IndexSpec s;
  s.x_ndim = ctx.in(0).static_shape.ndim;
  if (s.x_ndim < 1) ctx.fail("inputs", "input 0 must have rank >= 1");
  const VarSpec& v = ctx.in(input);
  if (!is_int_dtype(v.dtype) || v.static_shape.ndim != 1)
    ctx.fail("inputs", "input " + std::to_string(input) + " must be an integer vector, got " +
                           std::string(dtype_name(v.dtype)) + " of rank " +
                           std::to_string(v.static_shape.ndim));
  IdxEntry e;
  e.kind = IdxEntry::Array;
  e.input = input;
  e.ndim = 1;
  s.entries.push_back(e);
  s.has_array = true;
  s.out_ndim = s.x_ndim;
  s.static_out = ctx.in(0).static_shape;
  s.static_out.dims[0] = v.static_shape.dims[0];
  return s;
}

void Resolved::split_strides(const int64_t* full, int64_t* basic_st, int64_t* b_st) const {
  for (int i = 0; i < basic.ndim(); ++i)
    basic_st[i] = full[i < nb_before ? i : i + B.ndim];
  for (int d = 0; d < B.ndim; ++d) b_st[d] = full[nb_before + d];
}

namespace {

int64_t count_true(const Tensor& m) {
  int64_t n = 0;
  zip_each(m.shape, m.ptr<const bool>(), m.strides, m.ptr<const bool>(), m.strides,
           [&](const bool& a, const bool&) { n += a ? 1 : 0; });
  return n;
}

size_t align16(size_t n) { return (n + 15) & ~size_t(15); }

}  // namespace

void* resolve_index(Frame& f, const IndexSpec& s, const Tensor& t, Resolved& r,
                    size_t extra_scratch) {
  // Scratch: int64 copies of other-typed index arrays, nonzero() of masks.
  size_t need = 0;
  for (const IdxEntry& e : s.entries) {
    if (e.kind != IdxEntry::Array) continue;
    const Tensor& a = f.in(e.input);
    if (e.is_bool) need += align16(sizeof(int64_t) * e.ndim * count_true(a));
    else if (a.dtype != DType::Int64) need += align16(sizeof(int64_t) * a.size());
  }
  char* mem = (need + extra_scratch) ? static_cast<char*>(f.scratch(need + extra_scratch)) : nullptr;
  char* bump = mem;

  r.basic.shape.ndim = 0;  // fields set one by one: whole-Tensor copies were a visible cost
  r.basic.dtype = t.dtype;
  r.basic.data = t.data;
  r.base_off = 0;
  r.nb_before = 0;
  r.nadv = 0;
  // Index arrays before broadcasting; raw storage so plain basic indexing
  // does not pay for initializing 16 Tensors.
  alignas(Tensor) unsigned char advt_mem[sizeof(Tensor) * kMaxRank];
  Tensor* advt = std::launder(reinterpret_cast<Tensor*>(advt_mem));
  int nscalar = 0, first_adv = -1, last_adv = -1, ax = 0;
  bool adjacent = true;
  auto push_basic = [&](int64_t dim, int64_t stride) {
    const int i = r.basic.shape.ndim++;
    r.basic.shape.dims[i] = dim;
    r.basic.strides[i] = stride;
  };
  auto read = [&](const ScalarRef& x) -> int64_t {
    return x.kind == ScalarRef::Literal ? x.lit : scalar_int(f.in(x.input));
  };
  auto opt = [&](const ScalarRef& x) -> std::optional<int64_t> {
    if (x.kind == ScalarRef::None) return std::nullopt;
    return read(x);
  };
  auto add_adv = [&](const Tensor& a, int axis) {
    advt[r.nadv].set_view(a);
    r.adv_axis[r.nadv] = axis;
    r.adv_dim[r.nadv] = t.dim(axis);
    r.adv_tstride[r.nadv] = t.strides[axis];
    ++r.nadv;
  };
  auto mark_adv = [&](int p) {
    if (first_adv < 0) {
      first_adv = p;
      r.nb_before = r.basic.ndim();
    } else if (last_adv != p - 1) {
      adjacent = false;
    }
    last_adv = p;
  };
  for (size_t p = 0; p < s.entries.size(); ++p) {
    const IdxEntry& e = s.entries[p];
    switch (e.kind) {
      case IdxEntry::Slice: {
        const int64_t step = e.step.kind == ScalarRef::None ? 1 : read(e.step);
        if (step == 0) f.fail("slice step cannot be zero");
        const SliceRange sr = slice_range(opt(e.start), opt(e.stop), step, t.dim(ax));
        r.base_off += sr.start * t.strides[ax];
        push_basic(sr.len, t.strides[ax] * step);
        ++ax;
        break;
      }
      case IdxEntry::NewAxis:
        push_basic(1, 0);
        break;
      case IdxEntry::Index: {
        const int64_t v = read(e.value);
        if (!s.has_array) {
          const int64_t n = normalize_index(v, t.dim(ax));
          if (n < 0) f.fail(index_error_msg(v, ax, t.dim(ax)));
          r.base_off += n * t.strides[ax];
        } else {
          r.scalars[nscalar] = v;
          Tensor z;
          z.dtype = DType::Int64;
          z.data = &r.scalars[nscalar++];
          add_adv(z, ax);
          mark_adv(static_cast<int>(p));
        }
        ++ax;
        break;
      }
      case IdxEntry::Array: {
        const Tensor& a = f.in(e.input);
        if (e.is_bool) {
          for (int d = 0; d < e.ndim; ++d)
            if (a.dim(d) != t.dim(ax + d))
              f.fail("boolean index did not match indexed array along axis " +
                     std::to_string(ax + d) + "; size of axis is " + std::to_string(t.dim(ax + d)) +
                     " but size of corresponding boolean axis is " + std::to_string(a.dim(d)));
          const int64_t nnz = count_true(a);
          int64_t* cols[kMaxRank];
          for (int d = 0; d < e.ndim; ++d) cols[d] = reinterpret_cast<int64_t*>(bump) + d * nnz;
          bump += align16(sizeof(int64_t) * e.ndim * nnz);
          int64_t k = 0;
          const int64_t n = a.size();
          for (int64_t flat = 0; flat < n; ++flat) {
            if (!a.at<bool>(flat)) continue;
            int64_t rem = flat;
            for (int d = e.ndim - 1; d >= 0; --d) {
              cols[d][k] = rem % a.dim(d);
              rem /= a.dim(d);
            }
            ++k;
          }
          Shape s1;
          s1.ndim = 1;
          s1.dims[0] = nnz;
          for (int d = 0; d < e.ndim; ++d) add_adv(Tensor::contiguous(DType::Int64, s1, cols[d]), ax + d);
          ax += e.ndim;
        } else {
          if (a.dtype == DType::Int64) {
            add_adv(a, ax);
          } else {
            Tensor c = Tensor::contiguous(DType::Int64, a.shape, bump);
            bump += align16(sizeof(int64_t) * a.size());
            copy_convert(c, a);
            add_adv(c, ax);
          }
          ++ax;
        }
        mark_adv(static_cast<int>(p));
        break;
      }
    }
  }
  for (; ax < t.ndim(); ++ax) push_basic(t.dim(ax), t.strides[ax]);
  if (!adjacent) r.nb_before = 0;

  r.B.ndim = 0;
  for (int j = 0; j < r.nadv; ++j) {
    if (!broadcast_shapes(r.B, advt[j].shape, r.B)) {
      std::string msg = "shape mismatch: indexing arrays could not be broadcast together with shapes";
      for (int k = 0; k < r.nadv; ++k) {
        msg += ' ';
        msg += advt[k].shape.str();
      }
      f.fail(msg);
    }
  }
  for (int j = 0; j < r.nadv; ++j) {
    Uninit<Tensor> ubv;
    Tensor& bv = *ubv;
    broadcast_view(advt[j], r.B, bv);  // r.B broadcasts them all
    r.adv_ptr[j] = bv.ptr<const int64_t>();
    for (int d = 0; d < r.B.ndim; ++d) r.adv_bst[j][d] = bv.strides[d];
  }
  Shape& res = r.result;
  res.ndim = 0;
  for (int i = 0; i < r.nb_before; ++i) res.dims[res.ndim++] = r.basic.shape.dims[i];
  for (int d = 0; d < r.B.ndim; ++d) res.dims[res.ndim++] = r.B.dims[d];
  for (int i = r.nb_before; i < r.basic.ndim(); ++i) res.dims[res.ndim++] = r.basic.shape.dims[i];
  return mem ? mem + need : nullptr;
}

}  // namespace ember
