// TEMPORARY while the tensor ops are written: weak stand-ins so the table
// links. Each real factory in engine/ops_*.cpp overrides its weak twin; the
// stand-in rejects the node at load time. Deleted once every op exists.
#include "engine/op.hpp"

namespace ember {
#define W(factory)                                                          \
  __attribute__((weak)) std::unique_ptr<OpKernel> factory(NodeContext& c) { \
    c.fail("op", "not implemented yet");                                    \
  }
W(make_elemwise)
W(make_dimshuffle)
W(make_reshape)
W(make_shape)
W(make_shape_i)
W(make_specify_shape)
W(make_passthrough)
W(make_check_and_raise)
W(make_alloc)
W(make_alloc_empty)
W(make_join)
W(make_split)
W(make_make_vector)
W(make_arange)
W(make_extract_diag)
W(make_subtensor)
W(make_inc_subtensor)
W(make_advanced_subtensor)
W(make_advanced_subtensor1)
W(make_advanced_inc_subtensor)
W(make_advanced_inc_subtensor1)
W(make_careduce)
W(make_cumop)
W(make_dot)
W(make_cholesky)
W(make_solve_triangular)
W(make_solve)
W(make_matrix_inverse)
W(make_det)
W(make_slogdet)
W(make_blockwise)
#undef W
}  // namespace ember
