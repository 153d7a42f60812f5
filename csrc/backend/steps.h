/* steps.h -- the compiled graph as a list of steps, what a backend's
 * compile() prepares and its execute() runs (made by the pipeline's schedule
 * stage, compiler/schedule.c, after lowering: g->schedule).
 *
 * Everything a backend used to work out from g->fusion and g->plan for
 * itself is settled here once: which node runs (a chain runs at its last
 * node, as its producer's kernel with the chain's epilogue), which nodes do
 * not run at all (a chain's other nodes; a reshape aliased to its input,
 * WNN_PLAN_ALIAS), what a step writes (a chain's result) and reads (the
 * addend of its fused add), and which chains run inside another one (conv
 * pairs).  A new fusion is a new step kind, not new bookkeeping in each
 * backend.  The operands are plan operands: a backend resolves an id
 * through g->plan.slots[id] to its own memory, as before. */
#ifndef WNN_STEPS_H
#define WNN_STEPS_H
#include "webnn_core.h"

struct wnn_epilogue;   /* core/internal.h */
struct wnn_lowered;    /* compiler/lower/lower.h */

typedef enum wnn_step_kind {
    /* one node's kernel */
    WNN_STEP_NODE = 0,
    /* an epilogue chain (WNN_FUSE_EPILOGUE, with WNN_FUSE_BN /
     * WNN_FUSE_GATE): the producer's kernel (`node`) with the chain's
     * [batchNormalization] -> [add] -> [activation | gate], writing
     * `result` */
    WNN_STEP_EPILOGUE,
    /* a run of element-wise nodes (WNN_FUSE_ELTWISE): `nodes`, in one
     * pass over memory; `node` is the run's last */
    WNN_STEP_ELTWISE,
    /* a quantized region (WNN_FUSE_QDQ): `nodes` in integer arithmetic;
     * `node` is its quantizeLinear, `in` the inputs of the
     * dequantizeLinear of its activation (in[0] the quantized x) */
    WNN_STEP_QDQ,
    /* an epilogue chain that runs other chains inside it, band of rows by
     * band of rows (WNN_FUSE_CONV_PAIR): pre_e, pre_d below */
    WNN_STEP_CONV_PAIR,
    /* an attention block (WNN_FUSE_ATTENTION): `node` the scores' matmul,
     * in = { q, kt, v } and the mask (addend) when the block adds one, act
     * the softmax, `epi` the chain (its guard) */
    WNN_STEP_ATTENTION,
} wnn_step_kind;

typedef struct wnn_step {
    wnn_step_kind kind;
    wnn_op op;               /* the operator whose kernel runs (`node`'s) */
    wnn_family family;       /* its family (ops.def)                      */
    uint32_t node;           /* node id of that kernel: the node, a chain's
                              * producer, a run's or a region's last node */
    uint32_t at;             /* position in g->plan.order where the step
                              * runs (a chain's last node): the index of
                              * its time in execute_profiled             */
    const struct wnn_lowered *lowered; /* &g->lowered[node]               */
    const struct wnn_epilogue *epi;    /* the chain (g->fusion), or NULL  */
    /* operand ids the step reads and writes: a node's inputs and outputs;
     * a chain's producer's inputs and the chain's result (with an input
     * scale, epi->in_scale: in[0] the mul's x instead of x * s, and s
     * after the producer's inputs, in[n_in - 1]); a run's inputs from
     * outside the run (each once) and its result */
    uint32_t n_in, n_out;
    const uint32_t *in, *out;
    uint32_t result;         /* out[0]                                    */
    uint32_t addend;         /* operand of a chain's fused add, or
                              * WNN_NO_NODE                               */
    uint32_t act;            /* node id of a chain's activation (a gate's
                              * sigmoid), or WNN_NO_NODE                  */
    uint32_t bn;             /* node id of a chain's batchNormalization,
                              * or WNN_NO_NODE                            */
    /* the nodes the step computes, in the plan's order (1 for a node) */
    uint32_t n_nodes;
    const uint32_t *nodes;
    /* conv pairs: index + 1 into the schedule's steps of a dense
     * expansion's chain run inside this depthwise chain (pre_e), of a
     * depthwise chain run inside this 1x1 projection's (pre_d, whose own
     * expansion is its pre_e); 0: none.  Those steps are among the
     * schedule's inner steps, never run alone. */
    uint32_t pre_e, pre_d;
    /* host bytes the step needs per dispatch that the core knows of: a
     * fused batchNormalization's coefficients (3 (C + 1) doubles); 0 */
    uint64_t scratch;
    /* the epilogue's extents (wnn_epi_params n, C, inner), settled once
     * for both backends: the producer's output elements, its channels at
     * the chain's channel axis and the elements of one channel step after
     * it (channel of element i: (i / epi_inner) % epi_c).  Set for a
     * chain (WNN_STEP_EPILOGUE, WNN_STEP_CONV_PAIR) and for a convolution
     * alone (its own bias, where a backend runs it as an epilogue: at its
     * layout's channel axis); 0 for the other steps. */
    int64_t epi_n, epi_c, epi_inner;
} wnn_step;

typedef struct wnn_schedule {
    /* steps[0 .. n_run): run in this order by execute(); steps[n_run ..
     * n_steps): the inner steps, run only inside another step (pre_e,
     * pre_d).  compile() prepares all n_steps. */
    wnn_step *steps;
    uint32_t n_steps, n_run;
    uint32_t *ids;           /* storage of the steps' id lists            */
} wnn_schedule;

#endif
