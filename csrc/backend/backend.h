/* backend.h -- the interface every backend implements (CPU in cpu/, CUDA in
 * kernels_cuda/).  Nothing above this interface touches backend memory
 * directly: tensors are opaque `storage` pointers that only the backend's own
 * functions read or write, so device memory works the same as host memory.
 *
 * Lifecycle: compile() once per graph at build(), execute() per dispatch on
 * the context's timeline thread, compiled_free() when the graph's last
 * reference goes.  Before compile() the core has run the whole compiler
 * (core/compile.c): the fused chains (g->fusion, only the kinds the
 * backend declares in `fuses`), the memory plan (g->plan), the lowered
 * parameters (g->lowered) and the steps (g->schedule, steps.h): compile()
 * prepares each step's state, execute() runs steps[0 .. n_run) in order.
 * A backend never calls into compiler/; it reads what the pipeline left in
 * the graph. */
#ifndef WNN_BACKEND_H
#define WNN_BACKEND_H
#include "webnn_core.h"
#include "steps.h"

/* 15: wnn_epilogue grew n_prog, prog (WNN_FUSE_EPI_PROG: an epilogue
 * chain's element-wise program; a backend built against 14 would index
 * g->fusion.chains with the old size);
 * 14: wnn_epilogue grew in_scale (WNN_FUSE_IN_SCALE); a step of such a
 * chain reads the mul's x as in[0] and its scale as in[n_in - 1];
 * 13: wnn_epilogue grew guard, scale (WNN_FUSE_ATTENTION), wnn_step_kind
 * WNN_STEP_ATTENTION (a backend built against 12 would index
 * g->fusion.chains with the old size);
 * 12: triangular, resample2d and the recurrent networks lowered
 * (wnn_tri_params, wnn_resample_params, wnn_rnn_params in the wnn_lowered
 * union; wnn_rnn_params grew I and the operands' slots): a backend built
 * against 11 would derive them itself and read a shorter union;
 * 11: the kernel ABI (include/wnn_kernel_abi.h): the lowered blocks the
 * CUDA kernels now read directly; wnn_pad_params grew ishape (a backend
 * built against 10 would index g->lowered with the old size);
 * 10: the schedule stage (compiler/schedule.c): wnn_graph grew `schedule`,
 * the steps compile() prepares and execute() runs (steps.h); a backend
 * reads them instead of working out chains, skips, aliases and conv pairs
 * from g->fusion and g->plan itself (a backend built against 9 would index
 * the graph with the old size);
 * 9: wnn_operand grew release / owner (constants viewed, not copied: a
 * backend built against 8 would index ir->operands with the old size) and
 * wnn_epilogue grew gate (WNN_FUSE_GATE);
 * 8: wnn_backend_i.threads (the core asks the backend, never calls it);
 * 7: wnn_epilogue grew the fields of WNN_FUSE_QDQ chains (a backend
 * built against 6 would index g->fusion.chains with the old size) */
#define WNN_BACKEND_API_VERSION 15

/* What a backend can run fused (wnn_backend.fuses): the core's compiler
 * (core/compile.c) finds those chains and plans memory for them before
 * compile(); the backend only reads g->fusion. */
enum {
    /* producer (conv2d, convTranspose2d, matmul, gemm) -> [add] ->
     * [activation] run at the chain's last node (compiler/fuse.h) */
    WNN_FUSE_EPILOGUE = 1u << 0,
    /* a run of float element-wise operators (unary, binary arithmetic with
     * broadcast operands, float32 batchNormalization), each the only reader
     * of the one before, all of the result's shape: one pass over memory
     * (compiler/fuse.h) */
    WNN_FUSE_ELTWISE = 1u << 1,
    /* layout planning: the backend's convolutions are faster in nhwc; an
     * nchw graph with two or more of them is rewritten to run them in nhwc,
     * converting at the edges only (compiler/layout.h) */
    WNN_PLAN_NHWC = 1u << 2,
    /* a 1x1 convolution's chain whose result only a depthwise 3x3
     * convolution's chain reads, both nhwc float32, may run inside that
     * chain, band of rows by band of rows, its result never stored whole
     * (compiler/fuse.h, wnn_epilogue.into): where the backend's conv_pair
     * says it runs that pair so */
    WNN_FUSE_CONV_PAIR = 1u << 3,
    /* an epilogue chain may hold a float32 batchNormalization over the
     * producer's channel axis right after the producer: producer -> [bn]
     * -> [add] -> [activation] (compiler/fuse.h, wnn_epilogue.bn) */
    WNN_FUSE_BN = 1u << 4,
    /* a reshape or identity into an intermediate shares its input's storage
     * (compiler/plan.c): g->plan.aliased marks those nodes, which the
     * schedule makes no step (compiler/schedule.c); their outputs resolve
     * through the plan's slots as usual */
    WNN_PLAN_ALIAS = 1u << 5,
    /* quantized regions run in integer arithmetic: dequantizeLinear of a
     * uint8 / int8 activation and of constant int8 / uint8 weights ->
     * conv2d / matmul / gemm -> [add(bias)] -> [relu / clamp] -> quantizeLinear,
     * every intermediate read once and not a graph output (compiler/
     * fuse_qdq.c, wnn_epilogue kind WNN_FUSE_QDQ) */
    WNN_FUSE_QDQ = 1u << 6,
    /* an epilogue chain may end in a gate: t -> sigmoid(t) -> mul(t, .)
     * (SiLU), float32, t read by those two nodes only (wnn_epilogue.gate;
     * the act node is the sigmoid, `last` the mul) */
    WNN_FUSE_GATE = 1u << 7,
    /* attention: matmul(q, kt) -> [mul | div by a constant] -> [add(mask)]
     * -> softmax(last axis) ->
     * [where(isNaN(p), 0, p)] -> matmul(p, v), float32, every intermediate
     * read by the next node only: one step that never stores the scores
     * whole (compiler/fuse_attention.c, wnn_epilogue kind
     * WNN_FUSE_ATTENTION, WNN_STEP_ATTENTION) */
    WNN_FUSE_ATTENTION = 1u << 8,
    /* an epilogue chain whose conv2d (groups 1, float32) reads mul(x, s),
     * s one value per input channel (a squeeze-and-excitation block's
     * scale) and the mul's result read by that conv2d only: the mul joins
     * the chain (wnn_epilogue.in_scale), the backend scales the filter's
     * input channels by s per dispatch instead of storing x * s
     * (compiler/fuse.h) */
    WNN_FUSE_IN_SCALE = 1u << 9,
    /* an epilogue chain may end in a program instead of an activation or
     * a gate: float32 element-wise nodes that read t (the producer's, bn's
     * or add's result), each other's results and constant scalars only,
     * every result but the last read inside the program only, t too
     * (wnn_epilogue.n_prog, prog; compiler/fuse.h) -- GPT-2's tanh gelu,
     * hard-swish, a scale by a constant */
    WNN_FUSE_EPI_PROG = 1u << 10,
};

typedef struct wnn_backend wnn_backend;
struct wnn_graph;
struct wnn_conv_params;

typedef struct wnn_backend_i {
    int api_version;
    const char *name;       /* "cpu", "cuda" */
    wnn_device device;
    bool accelerated;
    uint64_t max_tensor_bytes;
    /* Does the backend run `op` at all, and with which limits?  Fills `out`
     * with the spec's limits narrowed to what the backend supports. */
    bool (*op_limits)(wnn_backend *be, wnn_op op, wnn_op_limits *out);
    wnn_status (*compile)(wnn_backend *be, const struct wnn_graph *g,
                          void **compiled, wnn_error *err);
    void (*compiled_free)(wnn_backend *be, void *compiled);
    /* in[i] / out[i]: storage of the graph's i-th input / output tensor. */
    wnn_status (*execute)(wnn_backend *be, const struct wnn_graph *g,
                          void *compiled, void *const *in, void *const *out,
                          wnn_error *err);
    /* Zero-filled storage of `bytes` (> 0). */
    wnn_status (*tensor_alloc)(wnn_backend *be, uint64_t bytes, void **storage,
                               wnn_error *err);
    void (*tensor_free)(wnn_backend *be, void *storage);
    wnn_status (*tensor_write)(wnn_backend *be, void *storage, const void *src,
                               uint64_t bytes, wnn_error *err);
    wnn_status (*tensor_read)(wnn_backend *be, const void *storage, void *dst,
                              uint64_t bytes, wnn_error *err);
    /* Wait until all work the backend queued has finished (a no-op on the
     * CPU; stream sync on CUDA). */
    void (*synchronize)(wnn_backend *be);
    void (*destroy)(wnn_backend *be);
    /* Tensors are plain host memory: execute() may run on any host buffers
     * (wnn_context_compute runs on the caller's arrays). */
    bool host_storage;

    /* ---- device memory interop (DLPack), since API version 3 ----------
     * Both run on the context's timeline thread.  A backend whose tensors
     * are host memory fails them with a NotSupportedError ("not a device
     * tensor"): the core never hands host storage out this way. */
    /* The device address of `storage` and the device's number (the CUDA
     * device ordinal), after every piece of work queued on the device --
     * the backend's stream and any other library's -- has finished, so
     * that a consumer on any stream of the device may read it at once. */
    wnn_status (*tensor_device_ptr)(wnn_backend *be, void *storage,
                                    void **ptr, int *device_id,
                                    wnn_error *err);
    /* Copy `bytes` from `src`, device memory of the backend's device
     * produced by work on any stream (the backend waits for the whole
     * device first), into `storage` device to device.  Returns when the
     * copy has finished: src may then be freed or reused. */
    wnn_status (*tensor_write_device)(wnn_backend *be, void *storage,
                                      const void *src, uint64_t bytes,
                                      wnn_error *err);
    /* The backend's device number (-1: host memory). */
    int device_id;

    /* ---- conv pairs (WNN_FUSE_CONV_PAIR), since API version 5 ----------
     * Does the backend run the chain of convolution a inside the chain of
     * convolution b, which alone reads its result?  kind 1: a is a dense
     * convolution and b the 3x3 depthwise convolution of its result (an
     * expansion and its depthwise convolution); 2: a is a 3x3 depthwise
     * convolution and b its 1x1 projection.  a_linked: a's own chain runs
     * inside its expansion's already.  Asked by the fusion analysis
     * (compiler/fuse.c) while it builds, before the memory plan: a pair
     * said yes to is linked (wnn_epilogue.into, .pair) and its first
     * chain's result gets no storage, so the backend must then run it so.
     * NULL: no pairs. */
    bool (*conv_pair)(wnn_backend *be, const struct wnn_conv_params *a,
                      const struct wnn_conv_params *b, int kind,
                      bool a_linked);

    /* ---- profiling, since API version 6 --------------------------------
     * execute() that also times its steps: for each step it runs, the
     * wall time in ns is added to ns[n] and ran[n] is counted, n the
     * step's position in the plan's order (g->plan.order).  A step that
     * runs a fused chain or a linked conv pair gets the whole time; the
     * nodes run inside it, or skipped, get nothing.  NULL: the backend
     * cannot profile (wnn_context_profile fails with NotSupportedError). */
    wnn_status (*execute_profiled)(wnn_backend *be, const struct wnn_graph *g,
                                   void *compiled, void *const *in,
                                   void *const *out, uint64_t *ns,
                                   uint32_t *ran, wnn_error *err);

    /* ---- threads, since API version 8 ----------------------------------
     * The host threads the backend runs a graph's kernels on (introspect:
     * wnn_context_threads).  NULL: none of its own (0). */
    int (*threads)(wnn_backend *be);
} wnn_backend_i;

struct wnn_backend {
    const wnn_backend_i *iface;
    void *impl;
    uint32_t fuses;         /* WNN_FUSE_* this instance runs (data, set at
                             * creation; 0: no fusion)                    */
};

/* registry.c */
wnn_status wnn_backend_create(wnn_device d, wnn_backend **out, wnn_error *err);

/* cpu/backend_cpu.c */
wnn_status wnn_cpu_backend_create(wnn_backend **out, wnn_error *err);

/* kernels_cuda/ (loaded at run time from a separate shared object).
 *
 * The core is loaded with RTLD_LOCAL and exports nothing, so the library
 * gets the core's services it needs through this versioned table, given
 * once at load time (registry.c calls the library's
 * wnn_cuda_backend_init(&table) before any wnn_cuda_backend_create);
 * the library links no copy of the core's sources.  A change to the table
 * (a member added, removed or changed) bumps the version; init returns
 * false for a version or size it was not built for, and the registry then
 * reports the library as unusable. */
#define WNN_CORE_SERVICES_VERSION 2
struct wnn_view; /* compiler/lower/lower.h */
typedef struct wnn_core_services {
    uint32_t version;       /* WNN_CORE_SERVICES_VERSION */
    uint32_t size;          /* sizeof(wnn_core_services) */
    /* the operator table (ops/registry.c) */
    const wnn_op_info *(*op_get)(wnn_op op);
    /* errors (ops/validation.c wnn_failk) */
    wnn_status (*failk)(wnn_error *err, wnn_error_kind kind, const char *op,
                        const char *label, const char *arg, const char *fmt,
                        ...) __attribute__((format(printf, 6, 7)));
    /* data types (core/dtype.c) */
    size_t (*dtype_size)(wnn_dtype t);
    uint64_t (*desc_elements)(const wnn_desc *d);
    uint64_t (*desc_bytes)(const wnn_desc *d);
    /* element-wise parameters (ops/options.c) */
    void (*scalar_params_of)(wnn_op op, const void *options, wnn_dtype t,
                             wnn_scalar_params *p);
    /* a strided copy simplified as the core's views are (compiler/lower/
     * views.c wnn_view_simplify) */
    void (*view_simplify)(struct wnn_view *v);
} wnn_core_services;

typedef bool (*wnn_cuda_backend_init_fn)(const wnn_core_services *core);
typedef wnn_status (*wnn_cuda_backend_create_fn)(wnn_backend **out,
                                                 wnn_error *err);

#endif
