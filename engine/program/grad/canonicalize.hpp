// Canonicalization of differentiated graphs, as PyTensor's canonicalize and
// specialize do after pt.grad: what the adjoints make, made cheap. Each
// returns its count of rewrites and leaves the graph committed. All but
// sink_fills change bits against the graph as built (sums reassociated,
// powers replaced), so they run on graphs being differentiated only.
#pragma once
#include "engine/program/passes/editor.hpp"

namespace ember::grad {

// Sum(v, A) of a broadcast along A -> the broadcast value times the count
// (sum_broadcast.cpp); returns the number of rewrites, committed.
int sum_broadcasts(passes::Editor& e);
// Sum(join(a, b, ...)) -> Sum(a) + Sum(b) + ... (sum_broadcast.cpp); committed.
int split_joined_sums(passes::Editor& e);
// Sum over axis 0 of a[:, :, None] * b[:, None, :] (DimShuffles of
// matrices) -> the matrix product a.T @ b (outer_sum.cpp); committed.
int sum_outer_products(passes::Editor& e);
// f(..., fill(x, y), ...) -> fill(x, f(..., y, ...)), or f(..., y, ...) when
// the fill shapes nothing (fill_sink.cpp); committed.
int sink_fills(passes::Editor& e);
// Powers with constant exponents (±0.5, ±1.5, ±2, ±3, ±1) as sqrt, sqr,
// reciprocal and products (specialize.cpp); committed.
int specialize_powers(passes::Editor& e);
// DimShuffle(f(a, b)) -> f(DimShuffle(a), DimShuffle(b)) for broadcast
// dims of one-element values only, f's only reader (dimshuffle_lift.cpp, exact); committed.
int lift_dimshuffles(passes::Editor& e);
// x[:, None][0] -> x[0][None]: a Subtensor of a DimShuffle that adds
// broadcast dims, literal indices (subtensor_lift.cpp, exact); committed.
int lift_subtensors(passes::Editor& e);
// Blockwise(solve_triangular)(A[None], B) -> solve_triangular(A, B.T).T
// (blockwise_core.cpp); committed.
int unbatch_solves(passes::Editor& e);
// cholesky(L @ L.T) -> L for L set into zeros on or below the diagonal
// (cholesky_llt.cpp); committed.
int cholesky_of_llt(passes::Editor& e);
// a + inc(zeros, y, i) -> inc(a, y, i) (inc_serialize.cpp); committed.
int serialize_increments(passes::Editor& e);
// a + b - a + 1 - 1 -> b: cancelled terms and folded scalar constants
// through Add, Sub and Neg (canonize.cpp); committed.
int cancel_terms(passes::Editor& e);
// -0.5 * x * 2 / s -> -(x / s): scalar constants and signs of a product
// through Mul, TrueDiv and Neg folded, x / x gone (canonize.cpp); committed.
int fold_factors(passes::Editor& e);

}  // namespace ember::grad
