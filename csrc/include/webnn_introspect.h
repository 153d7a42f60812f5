/* webnn_introspect.h -- a read-only view of graphs and builders, for tools
 * (Python's MLGraph.summary() and its picture, MLOperand's repr).  Nothing
 * here changes an object; everything is valid while the object lives. */
#ifndef WEBNN_INTROSPECT_H
#define WEBNN_INTROSPECT_H
#include "webnn_core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum wnn_origin_kind {
    WNN_ORIGIN_INPUT = 0,
    WNN_ORIGIN_CONSTANT = 1,
    WNN_ORIGIN_NODE = 2
} wnn_origin_kind;

typedef struct wnn_operand_view {
    wnn_origin_kind kind;
    wnn_desc desc;
    const char *name;        /* INPUT: its name; else NULL              */
    uint32_t node;           /* NODE: producer node id                  */
    wnn_op op;               /* NODE: the producer's operator           */
    const char *label;       /* NODE: the producer's label, or NULL     */
    uint64_t constant_bytes; /* CONSTANT: bytes kept (0 once dropped)   */
} wnn_operand_view;

typedef struct wnn_node_view {
    wnn_op op;
    const char *label;       /* or NULL */
    uint32_t n_in, n_out;
    const uint32_t *in, *out; /* operand ids */
} wnn_node_view;

/* An operand of a builder that has not built yet; false if none. */
bool wnn_builder_operand_view(const wnn_builder *b, uint32_t id,
                              wnn_operand_view *out);

/* A built graph's IR (false / 0 once the IR is gone). */
uint32_t wnn_graph_num_operands(const wnn_graph *g);
bool wnn_graph_operand_view(const wnn_graph *g, uint32_t id,
                            wnn_operand_view *out);
uint32_t wnn_graph_num_nodes(const wnn_graph *g);
bool wnn_graph_node_view(const wnn_graph *g, uint32_t id, wnn_node_view *out);
uint32_t wnn_graph_input_operand(const wnn_graph *g, uint32_t i);
uint32_t wnn_graph_output_operand(const wnn_graph *g, uint32_t i);
/* The plan: node ids in execution order (nodes not reached by an output
 * are not in it) and the bytes of its scratch arena (the intermediate
 * results' peak, after buffer reuse). */
uint32_t wnn_graph_plan_length(const wnn_graph *g);
uint32_t wnn_graph_plan_node(const wnn_graph *g, uint32_t i);
uint64_t wnn_graph_plan_arena_bytes(const wnn_graph *g);
/* The epilogue chains a fusing backend runs as one operation
 * (compiler/fuse.c): group_of[node id] = chain index + 1, 0 if none;
 * group_of has room for wnn_graph_num_nodes().  Returns the chain count,
 * or -1 on failure. */
int wnn_graph_fusion_groups(const wnn_graph *g, uint32_t *group_of);
/* Whether the graph's backend runs those chains fused (then they are the
 * chains its pipeline fused; otherwise the chains a fusing backend would). */
bool wnn_graph_fuses(const wnn_graph *g);
/* The steps the backend runs (the schedule stage, compiler/schedule.c;
 * backend/steps.h): steps 0 .. wnn_graph_num_run_steps(g) - 1 run in that
 * order, the others only inside another step (a conv pair's). */
typedef struct wnn_step_view {
    const char *kind;        /* "node", "epilogue", "eltwise", "qdq",
                              * "conv_pair" */
    wnn_op op;               /* the operator whose kernel runs            */
    uint32_t node;           /* its node id                               */
    uint32_t at;             /* plan position where the step runs         */
    uint32_t n_nodes;        /* the nodes it computes, in plan order      */
    const uint32_t *nodes;
    uint32_t n_in;           /* operand ids it reads                      */
    const uint32_t *in;
    uint32_t result;         /* operand id it writes                      */
    uint32_t addend;         /* operand of a fused add, or UINT32_MAX     */
    uint32_t pre_e, pre_d;   /* step index + 1 of the steps run inside it */
} wnn_step_view;
uint32_t wnn_graph_num_steps(const wnn_graph *g);
uint32_t wnn_graph_num_run_steps(const wnn_graph *g);
bool wnn_graph_step_view(const wnn_graph *g, uint32_t i, wnn_step_view *out);
/* Runs g on the caller's host buffers as wnn_context_compute does, timing
 * its steps: for each step run, its wall time in ns is added to ns[i] and
 * ran[i] is counted, i its position in the plan (wnn_graph_plan_node); a
 * node run inside another step (a fused chain's, a linked conv pair's) or
 * skipped gets nothing.  *total_ns gets the whole execution's time added.
 * ns and ran have room for wnn_graph_plan_length(g).  NotSupportedError
 * where the backend's tensors are not host memory or it cannot profile. */
wnn_status wnn_context_profile(wnn_context *c, wnn_graph *g, uint32_t n_in,
                               const void *const *in, uint32_t n_out,
                               void *const *out, uint64_t *ns, uint32_t *ran,
                               uint64_t *total_ns, wnn_error *err);
/* The backend's name ("cpu", "cuda"). */
const char *wnn_context_backend_name(const wnn_context *c);
/* The CPU backend's threads; 0 for other devices. */
int wnn_context_threads(const wnn_context *c);

#ifdef __cplusplus
}
#endif
#endif
