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
 *                 backend's binary / where launchers.
 *   conv.c        conv2d, convTranspose2d: the geometry (sizes of both
 *                 layouts, filter size from its layout, groups, padding,
 *                 strides, dilations) -- read by cpu/kernels/conv/ and the
 *                 CUDA backend's direct-kernel launcher. */
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

/* conv2d / convTranspose2d (all sizes in elements) */
typedef struct wnn_conv_params {
    bool transpose, nhwc;
    int filter_layout;      /* WNN_CONV_* / WNN_CONVT_* (ops/options) */
    uint32_t bias;          /* node input + 1, 0: none */
    int64_t N, C, H, W;     /* input */
    int64_t O, OH, OW;      /* output channels and size */
    int64_t KH, KW;         /* filter size */
    int64_t G, Cg, Og;      /* groups, channels per group in and out */
    int64_t pad[4];         /* top, bottom, left, right */
    int64_t sh, sw, dh, dw; /* strides, dilations */
} wnn_conv_params;

typedef enum wnn_lowered_kind {
    WNN_LOWER_NONE = 0,     /* the backend reads the node as it is */
    WNN_LOWER_BROADCAST,
    WNN_LOWER_CONV,
} wnn_lowered_kind;

struct wnn_lowered {
    wnn_lowered_kind kind;
    union {
        wnn_broadcast_params bcast;
        wnn_conv_params conv;
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

/* conv.c */
void wnn_lower_conv(wnn_conv_params *p, const wnn_node *node,
                    const wnn_desc *x, const wnn_desc *filter,
                    const wnn_desc *y);

#endif
