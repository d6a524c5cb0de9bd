/* Ember's C ABI: load a graph, call it from any thread. The logp and expand
 * entry points have nutpie's exact signatures, so a sampler can call them
 * through plain function pointers with `user_data` = the ember_program.   */
#ifndef EMBER_H
#define EMBER_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ember_program ember_program;

/* Loads a graph file. On failure returns NULL and writes a message to err. */
ember_program* ember_program_load(const char* path, char* err, size_t err_len);
void ember_program_free(ember_program* p);

/* Number of float64 values the flat input and the expand outputs hold. */
uint64_t ember_program_input_size(const ember_program* p);
uint64_t ember_program_output_size(const ember_program* p);

/* Calls made through ember_logp with user_data = p (progress reports). */
uint64_t ember_program_logp_calls(const ember_program* p);

/* The last error of the calling thread, or "" (valid until its next call). */
const char* ember_last_error(void);

/* nutpie logp: the graph takes one float64 vector x of length dim and
 * returns (logp: 0-d, grad: vector of length dim). Returns 0 ok,
 * 3 non-finite gradient, 4 non-finite logp (nutpie rejects the point),
 * 1 recoverable error (e.g. a failed assertion), -1 wrong dim,
 * -2 any other fatal error. Re-entrant: call from any number of threads. */
int64_t ember_logp(uint64_t dim, const double* x, double* grad, double* logp, const void* user_data);

/* nutpie expand: the graph takes x (length dim) and its outputs,
 * flattened in order and concatenated, fill out (length n_expanded).
 * Returns 0 ok, -1 size mismatch, 1 recoverable error (e.g. a failed
 * assertion), -2 any other error.                                         */
int64_t ember_expand(uint64_t dim, uint64_t n_expanded, const double* x, double* out, const void* user_data);

#ifdef __cplusplus
}
#endif
#endif
