/* lower.h -- lowering: each node of a compiled graph turned, once, into a
 * typed, fully resolved parameter block that every backend's kernels and
 * launchers read instead of re-deriving it (at compile or per dispatch).
 *
 * The core's pipeline (core/compile.c) calls wnn_lower_graph() after the
 * memory plan and before backend->compile; the result is g->lowered, one
 * wnn_lowered per node id.  Backends include this header for the types
 * only: the functions are the compiler's (compiler/lower/<family>.c).
 *
 * Families lowered so far:
 *   broadcast.c   element-wise binary operators, prelu, where: the
 *                 broadcast iterator (NumPy broadcasting, size-1 dimensions
 *                 dropped, neighbours merged where every operand stays
 *                 contiguous) -- read by cpu/kernels/elementwise/elementwise.c and the CUDA
 *                 backend's binary / where launchers. */
#ifndef WNN_LOWER_H
#define WNN_LOWER_H
#include "../../core/internal.h"

#define WNN_BCAST_MAX_OPERANDS 3

/* Element i of the output (row-major over shape[0..rank)) reads operand k
 * at sum(index[d] * st[k][d]) elements (st 0: broadcast). */
typedef struct wnn_broadcast_params {
    uint32_t rank;      /* after merging, >= 1 */
    uint32_t n;         /* operands */
    uint64_t shape[WNN_MAX_RANK];
    int64_t st[WNN_BCAST_MAX_OPERANDS][WNN_MAX_RANK];
} wnn_broadcast_params;

typedef enum wnn_lowered_kind {
    WNN_LOWER_NONE = 0,     /* the backend reads the node as it is */
    WNN_LOWER_BROADCAST,
} wnn_lowered_kind;

struct wnn_lowered {
    wnn_lowered_kind kind;
    union {
        wnn_broadcast_params bcast;
    } u;
};
typedef struct wnn_lowered wnn_lowered;

/* One wnn_lowered per node id of g (kind NONE for nodes not lowered). */
wnn_status wnn_lower_graph(const wnn_graph *g, wnn_lowered **out,
                           wnn_error *err);

/* broadcast.c */
bool wnn_lower_is_broadcast(wnn_op op);
void wnn_lower_broadcast(wnn_broadcast_params *it, const wnn_desc *out,
                         const wnn_desc *const *in, uint32_t n);

#endif
