/* webnn_core.h -- the public C API of the webnn core.
 *
 * The core builds and validates WebNN graphs exactly as the W3C spec says
 * (../shared/spec/webnn-index.bs) and runs them through a backend (CPU with
 * BLIS, or CUDA).  It knows nothing of Python: the extension in webnn/_binding/
 * only converts arguments, calls these functions and maps wnn_error to
 * exceptions.  Every function that can fail returns wnn_status and fills a
 * wnn_error whose text names the operator, its label, the argument and the
 * reason.
 *
 * Objects and ownership:
 *   wnn_context  refcounted; owns a backend and a timeline (a worker thread
 *                that runs dispatch / write / read / create in order).
 *   wnn_builder  single-threaded; owns the IR under construction.
 *   wnn_graph    refcounted (queued work holds a reference); frozen IR plus
 *                the backend's compiled plan.
 *   wnn_tensor   refcounted; a descriptor plus backend storage.
 */
#ifndef WEBNN_CORE_H
#define WEBNN_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- data types (spec: MLOperandDataType) ---------------------------- */
typedef enum wnn_dtype {
    WNN_FLOAT32 = 0,
    WNN_FLOAT16,
    WNN_INT32,
    WNN_UINT32,
    WNN_INT64,
    WNN_UINT64,
    WNN_INT8,
    WNN_UINT8,
    WNN_DTYPE_COUNT
} wnn_dtype;

#define WNN_DT(t) (1u << (t))
#define WNN_DT_ANY ((1u << WNN_DTYPE_COUNT) - 1u)
#define WNN_DT_FLOAT (WNN_DT(WNN_FLOAT32) | WNN_DT(WNN_FLOAT16))

/* The largest rank this implementation supports (spec: "N", Issue 456). */
#define WNN_MAX_RANK 8
/* A valid dimension is > 0 and in the range of long (spec: valid dimension). */
#define WNN_MAX_DIM 2147483647u

typedef struct wnn_desc {
    wnn_dtype dtype;
    uint32_t rank;
    uint32_t shape[WNN_MAX_RANK];
} wnn_desc;

const char *wnn_dtype_name(wnn_dtype t);
int wnn_dtype_from_name(const char *name, wnn_dtype *out); /* 0 ok, -1 unknown */
size_t wnn_dtype_size(wnn_dtype t);
uint64_t wnn_desc_elements(const wnn_desc *d);
uint64_t wnn_desc_bytes(const wnn_desc *d);
bool wnn_desc_equal(const wnn_desc *a, const wnn_desc *b);

/* ---- errors ----------------------------------------------------------- */
typedef enum wnn_status { WNN_OK = 0, WNN_ERR = 1 } wnn_status;

typedef enum wnn_error_kind {
    WNN_NO_ERROR = 0,
    WNN_TYPE_ERROR,
    WNN_INVALID_STATE,
    WNN_DATA_ERROR,
    WNN_NOT_SUPPORTED,
    WNN_OPERATION_ERROR,
    WNN_UNKNOWN_ERROR,
    WNN_ABORT_ERROR,
    WNN_OUT_OF_MEMORY
} wnn_error_kind;

typedef struct wnn_error {
    wnn_error_kind kind;
    char op[32];        /* operator or method name, "" if none */
    char label[64];     /* MLOperatorOptions.label, truncated */
    char argument[48];  /* "filter", "options.groups", ... */
    char message[256];  /* the reason, without op or label */
} wnn_error;

/* "conv2d (label 'stem'): argument 'options.groups': 3 / 2 is not ..." */
void wnn_error_format(const wnn_error *e, char *buf, size_t n);
void wnn_error_clear(wnn_error *e);
/* "op (label 'L')" with control and bidirectional-override characters of the
 * label replaced by '?', so messages cannot be spoofed. */
void wnn_op_prefix(const char *op, const char *label, char *buf, size_t n);
/* Copy `s` with such characters replaced by '?'. */
void wnn_sanitize(const char *s, char *buf, size_t n);

/* ---- operators -------------------------------------------------------- */
typedef enum wnn_op {
#define WNN_OP(ID, camel, snake, sig, opts, check, limits, family, traits, lower, cpu) WNN_OP_##ID,
#include "../ops/ops.def"
#undef WNN_OP
    WNN_OP_COUNT
} wnn_op;

/* An operator's family (ops.def's family column): the operators that share
 * one lowering (compiler/lower/: the parameter block the backends' kernels
 * read, WNN_LOWER_* of lower.h) and one group of kernels. */
typedef enum wnn_family {
#define WNN_DEF_FAMILIES
#define WNN_FAMILY(F) WNN_FAMILY_##F,
#include "../ops/ops.def"
#undef WNN_FAMILY
#undef WNN_DEF_FAMILIES
    WNN_FAMILY_COUNT
} wnn_family;

/* An operator's traits (ops.def's traits column, bits WNN_TR_<T>): the
 * operator classes the compiler asks about (never a list of operator ids).
 *   ELTWISE     float element-wise math an element-wise fused chain may
 *               hold (compiler/fuse.c)
 *   ACTIVATION  a unary activation an epilogue chain may end with (fuse.c)
 *   ANY_LAYOUT  element by element: runs in any layout, the same for all
 *               its operands (compiler/layout.c keeps an nhwc region
 *               through it)
 *   CHEAP       its cost is one pass over its operands (core/compile.c: a
 *               graph of such operators is run again instead of keeping
 *               its output)
 *   PRODUCER    the producer of an epilogue chain: conv2d,
 *               convTranspose2d, matmul, gemm (fuse.c)
 *   ALIAS       its output is its input's bytes: may share its input's
 *               storage (compiler/plan.c, WNN_PLAN_ALIAS) */
#define WNN_TRAITS(X) \
    X(ELTWISE) X(ACTIVATION) X(ANY_LAYOUT) X(CHEAP) X(PRODUCER) X(ALIAS)
enum {
#define WNN_TRAIT_BIT(T) WNN_TR_BIT_##T,
    WNN_TRAITS(WNN_TRAIT_BIT)
#undef WNN_TRAIT_BIT
    WNN_TR_BIT_COUNT
};
enum {
#define WNN_TRAIT_MASK(T) WNN_TR_##T = 1u << WNN_TR_BIT_##T,
    WNN_TRAITS(WNN_TRAIT_MASK)
#undef WNN_TRAIT_MASK
};

/* Kinds of option fields (see ops/options.def). */
typedef enum wnn_field_type {
    WNN_F_DOUBLE,     /* double (float in IDL)                        */
    WNN_F_NUMBER,     /* MLNumber: double or exact 64-bit integer     */
    WNN_F_BOOL,
    WNN_F_U32,        /* [EnforceRange] unsigned long                 */
    WNN_F_I32,        /* [EnforceRange] long                          */
    WNN_F_U32_LIST,   /* sequence<[EnforceRange] unsigned long>       */
    WNN_F_I32_LIST,   /* sequence<[EnforceRange] long>                */
    WNN_F_DTYPE,      /* MLOperandDataType                            */
    WNN_F_ENUM,       /* one of a fixed list of strings               */
    WNN_F_ENUM_LIST,  /* sequence of enum strings                     */
    WNN_F_OPERAND,    /* optional MLOperand, stored as input index    */
    WNN_F_F32_LIST    /* sequence<float> (finite), a wnn_f32_list     */
} wnn_field_type;

typedef struct wnn_number {
    bool present;     /* the caller gave a value (else the default)   */
    bool is_int;      /* exact integer (may exceed 2^53)              */
    bool is_neg;      /* for is_int: the value is -(mag)              */
    uint64_t mag;     /* magnitude for is_int                         */
    double d;         /* value as a double (always set)               */
} wnn_number;

typedef struct wnn_u32_list {
    uint32_t n;
    bool present;
    bool scalar;      /* given as one integer, not a sequence (union
                         types such as split's `unsigned long or sequence`) */
    uint32_t *v;      /* arena memory, owned by the graph IR          */
} wnn_u32_list;

/* sequence<float>: same layout as wnn_u32_list, values as float */
typedef struct wnn_f32_list {
    uint32_t n;
    bool present;
    bool scalar;      /* never set: a plain number is rejected        */
    float *v;         /* arena memory, owned by the graph IR          */
} wnn_f32_list;

typedef struct wnn_field {
    const char *snake;
    const char *camel;
    wnn_field_type type;
    size_t offset;           /* in the options struct                 */
    const char *const *enum_values; /* for ENUM / ENUM_LIST, NULL-ended */
    double def;              /* IDL default (DOUBLE NUMBER BOOL U32 I32
                                ENUM DTYPE); lists and operands: absent */
} wnn_field;

typedef struct wnn_field_table {
    uint32_t n;
    const wnn_field *f;
} wnn_field_table;

typedef struct wnn_operand_limit {
    const char *name;   /* "a", "input", "bias" ("output" for outputs) */
    uint16_t dtypes;    /* allowed data types                          */
    uint8_t rank_min;
    uint8_t rank_max;
} wnn_operand_limit;

#define WNN_MAX_LIMITS 12
typedef struct wnn_op_limits {
    uint8_t n_inputs;   /* entries [0, n_inputs) are node inputs       */
    uint8_t n;          /* total, outputs after the inputs             */
    wnn_operand_limit e[WNN_MAX_LIMITS];
} wnn_op_limits;

typedef struct wnn_op_info {
    const char *camel;      /* spec name: "convTranspose2d"             */
    const char *snake;      /* python name: "conv_transpose2d"          */
    const char *signature;  /* positional params: "a b", "input %type"  */
    size_t options_size;
    const wnn_field_table *fields;
    const wnn_op_limits *limits;
    wnn_family family;
    uint32_t traits;        /* WNN_TR_* bits                            */
} wnn_op_info;

const wnn_op_info *wnn_op_get(wnn_op op);
/* ops.def's family and traits columns (WNN_FAMILY_COUNT / false for an
 * id outside the table) */
wnn_family wnn_op_family(wnn_op op);
bool wnn_op_has(wnn_op op, uint32_t traits); /* any of the bits */
const char *wnn_family_name(wnn_family f); /* "BROADCAST", NULL: none */
const char *wnn_trait_name(uint32_t bit);  /* "ELTWISE" for WNN_TR_BIT_ELTWISE */
int wnn_op_from_name(const char *name); /* camel or snake; -1 if none */

/* An operator's signature, parsed once (registry.c) from the ops.def
 * string: its positional parameters in order.  Everything that needs the
 * signature (the builder, the Python extension, Python's inspect.signature)
 * reads this, never the string. */
typedef enum wnn_param_kind {
    WNN_PARAM_OPERAND,   /* "a": an MLOperand                             */
    WNN_PARAM_SEQUENCE,  /* "*inputs": a sequence of MLOperand            */
    WNN_PARAM_VALUE      /* "%axis": a plain value, stored in the options
                            struct's field of that camelCase name         */
} wnn_param_kind;

#define WNN_MAX_PARAMS 8
typedef struct wnn_param {
    const char *camel;   /* "recurrentWeight"                             */
    const char *snake;   /* "recurrent_weight"                            */
    wnn_param_kind kind;
    int field;           /* VALUE: index into the op's field table        */
} wnn_param;

typedef struct wnn_op_params {
    uint32_t n;          /* positional parameters                         */
    uint32_t n_operands; /* of which OPERAND or SEQUENCE                  */
    int seq;             /* operand index of the SEQUENCE parameter, or -1 */
    bool returns_list;   /* "->list": the IDL returns a sequence          */
    wnn_param p[WNN_MAX_PARAMS];
} wnn_op_params;

const wnn_op_params *wnn_op_params_get(wnn_op op);
/* The argument name of node operand i when n operands are given
 * ("a", "inputs[2]"); "operand" past the signature. */
void wnn_op_operand_name(wnn_op op, uint32_t i, uint32_t n, char *buf,
                         size_t len);

/* ---- contexts --------------------------------------------------------- */
typedef struct wnn_context wnn_context;
typedef struct wnn_builder wnn_builder;
typedef struct wnn_graph wnn_graph;
typedef struct wnn_tensor wnn_tensor;

typedef enum wnn_device { WNN_DEVICE_CPU = 0, WNN_DEVICE_GPU = 1 } wnn_device;

/* Is a backend for this device usable in this process? */
bool wnn_device_available(wnn_device d);
wnn_status wnn_context_create(wnn_device d, wnn_context **out, wnn_error *err);
void wnn_context_retain(wnn_context *c);
void wnn_context_release(wnn_context *c);
/* Lose the context: pending work fails with InvalidStateError, the worker
 * stops, graphs and tensors become unusable.  Idempotent. */
void wnn_context_destroy(wnn_context *c, const char *message);
bool wnn_context_is_lost(const wnn_context *c);
const char *wnn_context_lost_message(const wnn_context *c);
bool wnn_context_accelerated(const wnn_context *c);
wnn_device wnn_context_device(const wnn_context *c);
uint64_t wnn_context_max_tensor_bytes(const wnn_context *c);
/* Data types / ranks the context supports for operand `k` of `op`
 * (index into the op's limits); false if the op is not supported. */
bool wnn_context_op_limits(const wnn_context *c, wnn_op op,
                           wnn_op_limits *out);

/* MLOperandDescriptor "check dimensions" plus the context's byte length
 * limit: TypeError naming `op` and `arg` when it fails. */
wnn_status wnn_desc_check(wnn_context *c, const wnn_desc *d, const char *op,
                          const char *arg, wnn_error *err);

/* ---- tensors (spec: MLTensor) ----------------------------------------- */
wnn_status wnn_tensor_create(wnn_context *c, const wnn_desc *d, bool readable,
                             bool writable, const void *constant_data,
                             wnn_tensor **out, wnn_error *err);
void wnn_tensor_retain(wnn_tensor *t);
void wnn_tensor_release(wnn_tensor *t);
void wnn_tensor_destroy(wnn_tensor *t);
const wnn_desc *wnn_tensor_desc(const wnn_tensor *t);
bool wnn_tensor_readable(const wnn_tensor *t);
bool wnn_tensor_writable(const wnn_tensor *t);
bool wnn_tensor_is_constant(const wnn_tensor *t);
bool wnn_tensor_is_destroyed(const wnn_tensor *t);
wnn_context *wnn_tensor_context(const wnn_tensor *t);

/* Copies `bytes` now, queues the write.  bytes must equal the tensor's. */
wnn_status wnn_context_write(wnn_context *c, wnn_tensor *t, const void *src,
                             size_t bytes, wnn_error *err);
/* ---- device memory interop (DLPack) -----------------------------------
 * Only on contexts whose tensors are device memory (the GPU); elsewhere
 * WNN_ERR with a NotSupportedError. */
/* Copies `bytes` of device memory `src` (the context's device, made ready
 * by its producer on any stream) into t device to device, after the work
 * queued before; waits for the copy (src may then go). */
wnn_status wnn_context_write_device(wnn_context *c, wnn_tensor *t,
                                   const void *src, size_t bytes,
                                   wnn_error *err);
/* A constant tensor holding a device-to-device copy of `device_src`. */
wnn_status wnn_tensor_create_constant_device(wnn_context *c,
                                             const wnn_desc *d,
                                             const void *device_src,
                                             wnn_tensor **out,
                                             wnn_error *err);
/* The device address of a readable tensor's storage once the work queued
 * before it and everything on the device has finished.  The tensor is
 * pinned and retained: its storage stays valid -- a destroy() is deferred
 * -- until wnn_tensor_export_end(t). */
wnn_status wnn_tensor_export(wnn_context *c, wnn_tensor *t, void **ptr,
                             int *device_id, wnn_error *err);
void wnn_tensor_export_end(wnn_tensor *t);
/* The context's device number (the CUDA ordinal); -1 on host memory. */
int wnn_context_device_id(const wnn_context *c);

/* Queues a read and waits for it. */
wnn_status wnn_context_read(wnn_context *c, wnn_tensor *t, void *dst,
                            size_t bytes, wnn_error *err);
/* Validates (TypeError / InvalidStateError) and queues the execution. */
wnn_status wnn_context_dispatch(wnn_context *c, wnn_graph *g,
                                uint32_t n_in, const char *const *in_names,
                                wnn_tensor *const *in_tensors, uint32_t n_out,
                                const char *const *out_names,
                                wnn_tensor *const *out_tensors,
                                wnn_error *err);
/* Runs `g` on the timeline (after the work queued before it) straight on
 * the caller's host memory and waits: in[i] / out[i] hold the graph's i-th
 * input / output (graph order), C-contiguous, element-aligned, of the
 * descriptors' byte lengths.  Only on backends whose tensors are host
 * memory: WNN_ERR with a NotSupportedError elsewhere (use tensors). */
wnn_status wnn_context_compute(wnn_context *c, wnn_graph *g, uint32_t n_in,
                               const void *const *in, uint32_t n_out,
                               void *const *out, wnn_error *err);
/* Whether the context's backend keeps tensors in host memory (the CPU). */
bool wnn_context_host_storage(const wnn_context *c);
/* Waits until everything queued so far has run. */
void wnn_context_flush(wnn_context *c);
/* Counts since the context's creation (context.c), for tests and tools:
 * reads the timeline merged into the dispatch before them (the output
 * written straight into the read's buffer), graph runs made again for such
 * an output since, and small tasks the calling thread ran itself. */
void wnn_context_timeline_counts(const wnn_context *c, uint64_t *merged_reads,
                                 uint64_t *reruns, uint64_t *inline_runs);

/* ---- builder (spec: MLGraphBuilder) ----------------------------------- */
wnn_status wnn_builder_create(wnn_context *c, wnn_builder **out,
                              wnn_error *err);
void wnn_builder_free(wnn_builder *b);

/* Host memory for a large buffer (tensors, arenas, results), released with
 * free(): 64-byte aligned; from 2 MiB on, 2 MiB-aligned and advised for
 * transparent huge pages (as NumPy does for its large arrays), so that a
 * streaming pass over 64 MiB walks 32 page-table entries, not 16384.  NULL
 * when out of memory. */
void *wnn_host_alloc(size_t bytes);
bool wnn_builder_has_built(const wnn_builder *b);
wnn_context *wnn_builder_context(const wnn_builder *b);
const wnn_desc *wnn_builder_operand_desc(const wnn_builder *b, uint32_t id);

wnn_status wnn_builder_input(wnn_builder *b, const char *name,
                             const wnn_desc *d, uint32_t *id, wnn_error *err);
/* Copies `bytes` (which must be the descriptor's byte length). */
wnn_status wnn_builder_constant(wnn_builder *b, const wnn_desc *d,
                                const void *data, size_t bytes, uint32_t *id,
                                wnn_error *err);
/* No copy: `data` (aligned to the element size) stays the caller's and must
 * not change until release(owner) is called, once, from any thread. */
wnn_status wnn_builder_constant_view(wnn_builder *b, const wnn_desc *d,
                                     const void *data, size_t bytes,
                                     void (*release)(void *owner), void *owner,
                                     uint32_t *id, wnn_error *err);
wnn_status wnn_builder_constant_scalar(wnn_builder *b, wnn_dtype t,
                                       const wnn_number *v, uint32_t *id,
                                       wnn_error *err);
wnn_status wnn_builder_constant_tensor(wnn_builder *b, wnn_tensor *t,
                                       uint32_t *id, wnn_error *err);

/* Arena memory that lives as long as the IR (for option lists). */
void *wnn_builder_alloc(wnn_builder *b, size_t bytes);

/* Adds an operator.  `inputs` are the positional operands in signature
 * order (an operand sequence contributes all of its items; n_seq tells how
 * many).  `options` is the op's options struct, filled with defaults and the
 * caller's values; operand-valued options hold an operand id + 1 (0 = none)
 * and are appended to the node's inputs by the builder.  On success writes
 * up to `max_out` output ids and returns their count in *n_out. */
wnn_status wnn_builder_op(wnn_builder *b, wnn_op op, const uint32_t *inputs,
                          uint32_t n_inputs, const void *options,
                          const char *label, uint32_t *outs, uint32_t max_out,
                          uint32_t *n_out, wnn_error *err);

/* Fills an options struct with the IDL defaults. */
void wnn_options_default(wnn_op op, void *options);
/* The [EnforceRange] unsigned long field `camel` ("axis") of op's options
 * struct into *v, read through the op's field table; false: it has none. */
bool wnn_options_u32(wnn_op op, const void *options, const char *camel,
                     uint32_t *v);

wnn_status wnn_builder_build(wnn_builder *b, uint32_t n_out,
                             const char *const *names, const uint32_t *ids,
                             wnn_graph **out, wnn_error *err);

/* ---- graphs (spec: MLGraph) ------------------------------------------- */
void wnn_graph_retain(wnn_graph *g);
void wnn_graph_release(wnn_graph *g);
void wnn_graph_destroy(wnn_graph *g);
bool wnn_graph_is_destroyed(const wnn_graph *g);
uint32_t wnn_graph_num_inputs(const wnn_graph *g);
uint32_t wnn_graph_num_outputs(const wnn_graph *g);
const char *wnn_graph_input_name(const wnn_graph *g, uint32_t i);
const wnn_desc *wnn_graph_input_desc(const wnn_graph *g, uint32_t i);
const char *wnn_graph_output_name(const wnn_graph *g, uint32_t i);
const wnn_desc *wnn_graph_output_desc(const wnn_graph *g, uint32_t i);
wnn_context *wnn_graph_context(const wnn_graph *g);

/* ---- numbers ---------------------------------------------------------- */
float wnn_f16_to_f32(uint16_t h);
uint16_t wnn_f32_to_f16(float f);
/* A double option "cast" to float `t` (float32 or float16), as a float. */
float wnn_cast_float(double v, wnn_dtype t);

/* wnn_scalar_params: the scalar options of the element-wise operators
 * cast to the input's data type (wnn_kernel_abi.h, the kernels read it). */
#include "wnn_kernel_abi.h"
void wnn_scalar_params_of(wnn_op op, const void *options, wnn_dtype t,
                          wnn_scalar_params *p);

/* Cast an MLNumber to `t` and store it at dst (spec: "cast"). */
void wnn_number_store(const wnn_number *v, wnn_dtype t, void *dst);

#ifdef __cplusplus
}
#endif
#endif /* WEBNN_CORE_H */
