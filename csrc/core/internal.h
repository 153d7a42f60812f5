/* internal.h -- the graph IR, shared by the builder, the compiler, the
 * context and the backends.  Operands and nodes are addressed by uint32_t ids
 * into arrays; everything else lives in an arena freed with the IR. */
#ifndef WNN_INTERNAL_H
#define WNN_INTERNAL_H
#include <pthread.h>
#include <sys/types.h>
#include <stdatomic.h>

#include "webnn_core.h"

/* the same rank and dimensions, whatever the data types (dtype.c) */
bool wnn_desc_same_shape(const wnn_desc *a, const wnn_desc *b);

/* ---- arena ------------------------------------------------------------ */
typedef struct wnn_arena_block wnn_arena_block;
typedef struct wnn_arena {
    wnn_arena_block *head;
} wnn_arena;
void *wnn_arena_alloc(wnn_arena *a, size_t size);
char *wnn_arena_strdup(wnn_arena *a, const char *s);
void wnn_arena_free(wnn_arena *a);
/* *p, an array of *cap items of elem bytes, made to hold need items
 * (capacity doubled; false: out of memory, *p unchanged) (builder.c) */
bool wnn_grow(void **p, uint32_t *cap, uint32_t need, size_t elem);

/* ---- hash tables (hashmap.c) ------------------------------------------- */
typedef struct wnn_strmap {     /* string -> uint32_t; keys not copied    */
    const char **keys;
    uint32_t *vals;
    size_t n, cap;
} wnn_strmap;
bool wnn_strmap_get(const wnn_strmap *m, const char *key, uint32_t *val);
int wnn_strmap_put(wnn_strmap *m, const char *key, uint32_t val); /* 1: present, -1: OOM */
void wnn_strmap_free(wnn_strmap *m);

typedef struct wnn_ptrset {
    const void **keys;
    size_t n, cap;
} wnn_ptrset;
int wnn_ptrset_add(wnn_ptrset *s, const void *p); /* 1: present, -1: OOM */
void wnn_ptrset_free(wnn_ptrset *s);

/* ---- IR --------------------------------------------------------------- */
typedef enum wnn_operand_kind {
    WNN_OPERAND_INPUT,
    WNN_OPERAND_CONSTANT,
    WNN_OPERAND_NODE
} wnn_operand_kind;

typedef struct wnn_operand {
    wnn_desc desc;
    wnn_operand_kind kind;
    uint32_t node;          /* producer, for NODE                         */
    const char *name;       /* for INPUT                                  */
    void *data;             /* for CONSTANT: malloc'd copy, or NULL ...   */
    wnn_tensor *tensor;     /* ... when the constant is an MLTensor       */
    /* a constant viewed, not copied (wnn_builder_constant_view): data is
     * the owner's, given back with release(owner) instead of free(data) */
    void (*release)(void *owner);
    void *owner;
} wnn_operand;

/* frees (or gives back to its owner) a constant operand's data */
void wnn_operand_drop_data(wnn_operand *o);

typedef struct wnn_node {
    wnn_op op;
    uint32_t n_in, n_out;
    uint32_t *in, *out;     /* operand ids                                */
    void *options;
    const char *label;
} wnn_node;

typedef struct wnn_ir {
    wnn_arena arena;
    wnn_operand *operands;
    uint32_t n_operands, cap_operands;
    wnn_node *nodes;
    uint32_t n_nodes, cap_nodes;
    uint32_t *inputs;       /* operand ids of inputs, in creation order   */
    uint32_t n_inputs, cap_inputs;
    wnn_strmap input_names; /* name -> index into inputs                  */
} wnn_ir;

void wnn_ir_free(wnn_ir *ir);

/* ---- execution plan (backend-neutral; made by compiler/plan.c) -------- */
typedef enum wnn_slot_kind {
    WNN_SLOT_INPUT,     /* index into the graph's inputs                 */
    WNN_SLOT_OUTPUT,    /* index into the graph's outputs                */
    WNN_SLOT_CONSTANT,  /* operand's constant data                       */
    WNN_SLOT_ARENA,     /* offset into the plan's scratch arena          */
    WNN_SLOT_UNUSED,
    /* never stored: computed inside a fused chain that the backend runs at
     * its last node (an intermediate of the chain, or the result of a chain
     * run inside another one, wnn_epilogue.into); no address (plan.c) */
    WNN_SLOT_FUSED
} wnn_slot_kind;

typedef struct wnn_slot {
    wnn_slot_kind kind;
    uint32_t index;
    uint64_t offset;
} wnn_slot;

typedef struct wnn_output_copy {
    uint32_t from_output, to_output; /* the same operand named twice      */
} wnn_output_copy;

typedef struct wnn_plan {
    uint32_t *order;        /* node ids, topological                      */
    uint32_t n_order;
    wnn_slot *slots;        /* one per operand                            */
    uint64_t arena_bytes;
    wnn_output_copy *copies;
    uint32_t n_copies;
    /* set by the pipeline before planning (WNN_PLAN_ALIAS): reshapes and
     * identities into intermediates share their input's storage; then
     * aliased[node id] marks those nodes, which the backend does not run
     * (plan.c) */
    bool alias_reshapes;
    bool *aliased;
} wnn_plan;

/* ---- fused chains (compiler/fuse.c; only the kinds a backend declares in
 * wnn_backend.fuses) ------------------------------------------------------ */
#define WNN_NO_NODE UINT32_MAX

typedef enum wnn_epilogue_add {
    WNN_EPI_ADD_NONE = 0,
    WNN_EPI_ADD_RESIDUAL,   /* addend has the output's shape            */
    WNN_EPI_ADD_CHANNEL     /* addend broadcasts along the channel axis */
} wnn_epilogue_add;

/* the most nodes of an epilogue chain's program (WNN_FUSE_EPI_PROG) */
#define WNN_EPI_PROG_MAX 16

typedef struct wnn_epilogue {
    uint32_t producer;      /* node id                                  */
    uint32_t add;           /* node id of the add, or WNN_NO_NODE       */
    uint32_t addend;        /* operand id of the add's other input      */
    wnn_epilogue_add add_kind;
    uint32_t channel_axis;  /* of the producer's output                 */
    uint32_t act;           /* node id of the activation, or WNN_NO_NODE */
    uint32_t last;          /* the chain's last node                    */
    uint32_t result;        /* operand id of the chain's result         */
    /* WNN_FUSE_EPILOGUE: the fields above.  WNN_FUSE_ELTWISE: a run of
     * element-wise operators, each reading the one before it (`producer`
     * is the first node, `last` the last; the nodes are those whose
     * chain_of names this chain, in the plan's order; add, act: none). */
    uint32_t kind;          /* WNN_FUSE_EPILOGUE or WNN_FUSE_ELTWISE     */
    /* WNN_FUSE_CONV_PAIR: index + 1 of the chain whose producer is the
     * only reader of this chain's result (1x1 -> depthwise 3x3 or
     * depthwise 3x3 -> 1x1 convolutions), 0 if none; a backend may run
     * this chain inside that one, at its last node (compiler/fuse.h) */
    uint32_t into;
    /* with `into`: 1 this chain is the expansion (a dense convolution) of
     * that depthwise convolution, 2 this depthwise convolution's chain runs
     * inside its 1x1 projection's.  Set only where the backend said it
     * runs the pair linked (wnn_backend_i.conv_pair); 0 otherwise */
    uint32_t pair;
    /* WNN_FUSE_BN: node id + 1 of a batchNormalization over channel_axis
     * that reads the producer's result (before the add), 0 if none */
    uint32_t bn;
    /* WNN_FUSE_QDQ (compiler/fuse_qdq.c): dequantizeLinear(x) and
     * dequantizeLinear(constant weights) -> conv2d / matmul -> [add(bias)]
     * -> [relu / clamp] -> quantizeLinear, `last` the quantizeLinear;
     * node id + 1 of the dequantizeLinear of x, of the weights, and of a
     * constant bias (0: none, or a float32 constant one); bias: the float
     * operand added per output channel (the conv2d's bias or the add's
     * addend), WNN_NO_NODE if none.  add, act as above. */
    uint32_t dq_x, dq_w, dq_b, bias;
    /* WNN_FUSE_GATE: 1 when the chain's result is t * act(t), t the value
     * before the activation (SiLU: act the sigmoid node, `last` the mul
     * that reads t and the sigmoid's result), 0 otherwise */
    uint32_t gate;
    /* WNN_FUSE_ATTENTION (compiler/fuse_attention.c): producer the scores'
     * matmul(q, kt), add / addend the mask's add and the mask (or none),
     * act the softmax over the last axis, last the matmul(p, v); guard the
     * node id + 1 of where(isNaN(p), 0, p) between them, scale that of a
     * mul or div of the scores by a constant before the add (0: none) */
    uint32_t guard, scale;
    /* WNN_FUSE_IN_SCALE: node id + 1 of a mul(x, s) whose result is the
     * producer's input 0 (a conv2d, groups 1), s per input channel (1
     * everywhere but at the input's channel axis); scale_in: which of the
     * mul's inputs is s (0 or 1).  0: none */
    uint32_t in_scale, scale_in;
    /* WNN_FUSE_EPI_PROG: the nodes of the chain's element-wise program in
     * the plan's order (`last` the last of them; act: none), 0 nodes: none
     * (compiler/fuse.h) */
    uint32_t n_prog;
    uint32_t prog[WNN_EPI_PROG_MAX];
    /* with a program: node id + 1 of a reshape of t that the program reads
     * instead of t (the same values in the same order: HF GPT-2's Conv1D
     * is gemm -> reshape), 0: none */
    uint32_t prog_view;
} wnn_epilogue;

typedef struct wnn_fusion {
    wnn_epilogue *chains;
    uint32_t n_chains;
    uint32_t *chain_of;     /* per node id: chain index + 1, 0 if none  */
} wnn_fusion;


/* ---- backends --------------------------------------------------------- */
#include "../backend/backend.h"

/* ---- objects ---------------------------------------------------------- */
typedef struct wnn_named {
    const char *name;
    uint32_t operand;
    wnn_desc desc;
} wnn_named;

struct wnn_graph {
    atomic_int refs;        /* lifetime.c                                 */
    void (*free)(wnn_graph *g); /* teardown at the last release (graph.c) */
    wnn_context *ctx;
    wnn_ir *ir;
    wnn_named *inputs, *outputs;
    uint32_t n_inputs, n_outputs;
    wnn_strmap input_index, output_index; /* name -> index (dispatch)   */
    wnn_plan plan;          /* compiler/plan.c, made by the pipeline      */
    wnn_fusion fusion;      /* compiler/fuse.c: chains the backend fuses  */
    struct wnn_lowered *lowered; /* compiler/lower/: per node id        */
    wnn_schedule schedule;  /* compiler/schedule.c: the steps to run      */
    void *compiled;         /* the backend's state                        */
    atomic_bool destroyed;
    /* one output, element-wise operators and normalizations only
     * (compile.c, WNN_TR_CHEAP): a run costs
     * about a pass over its operands, so the timeline may write its output
     * straight into a read's buffer and run it again if the output tensor
     * is needed later (timeline_merge.c) */
    bool rerun_cheap;
    /* rerun_cheap and at most 64 KiB of inputs and outputs: a dispatch
     * that the calling thread may run itself (timeline.c, wnn_enqueue) */
    bool run_inline;
};

struct wnn_tensor {
    atomic_int refs;
    wnn_context *ctx;
    wnn_desc desc;
    uint64_t bytes;
    bool readable, writable, constant;
    atomic_bool destroyed;
    atomic_int pins;        /* queued or running uses (dispatch, build)   */
    void *storage;          /* backend memory; freed with the last ref    */
    atomic_int failed;      /* the last write into it failed              */
    pthread_mutex_t pmu;    /* guards `pending`                           */
    struct waiter *pending; /* reads waiting on the timeline              */
    char fail_msg[200];
};

bool wnn_tensor_pin(wnn_tensor *t);   /* false: destroyed (timeline.c) */
void wnn_tensor_unpin(wnn_tensor *t);

struct wnn_builder {
    wnn_context *ctx;
    wnn_ir *ir;
    bool built;
};

struct wnn_task;
struct wnn_context {
    atomic_int refs;
    wnn_backend *backend;
    pthread_t worker;
    bool worker_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct wnn_task *head, *tail;
    atomic_uint queued;     /* tasks in the queue (the worker spins on it) */
    bool lost;
    bool stopping;
    /* a task is running (the worker's, or one a caller runs itself: see
     * enqueue); set under mu */
    atomic_bool busy;
    bool self_free;         /* last reference dropped on the worker */
    /* A dispatch whose output went straight into a read's buffer: the
     * output tensor's storage is stale, its content that of `owed` run
     * again (timeline_merge.c).  Guarded by mu; the task holds the graph and the
     * inputs (pinned), not owed_tensor, whose last release drops it. */
    struct wnn_task *owed;
    wnn_tensor *owed_tensor;
    int owed_score;         /* merges that paid off minus reruns forced
                               (guarded by mu) */
    atomic_ullong merged_reads, owed_runs, inline_runs; /* counts, for tests
                                                            and tools */
    unsigned fork_gen;      /* forks before it was made (see fork)  */
    char lost_message[200];
};


/* A context copied into a child by fork() has no timeline thread there
 * (and a GPU backend's state does not survive fork): in the child, its work
 * fails with InvalidStateError and releasing it frees nothing of the
 * backend's. */
bool wnn_context_forked(const wnn_context *c);

/* plan.c */
wnn_status wnn_plan_make(const wnn_graph *g, wnn_plan *p, wnn_error *err);
void wnn_plan_free(wnn_plan *p);
/* core/compile.c: everything between build()'s checks and a graph the
 * backend can execute: fuse (what the backend declares) -> memory plan ->
 * lower -> backend->compile.  g->plan.order must be set. */
wnn_status wnn_compile_graph(wnn_graph *g, wnn_error *err);
void wnn_compiled_graph_free(wnn_graph *g);

#endif
