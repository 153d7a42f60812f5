/* cpu.h -- what CPU kernels see.  A kernel gets one cpu_call: the node (op,
 * options), and the descriptors and memory of its inputs and outputs.  The
 * cpu column of ops/ops.def names the kernel of each operator; a kernel
 * switches on data type itself. */
#ifndef WNN_CPU_H
#define WNN_CPU_H
#include "../core/internal.h"
#include "../ops/options.h"
#include "../compiler/lower/lower.h"
#include "config.h"
#include "../include/wnn_numerics.h"
#include <stdlib.h>
#include <string.h>

/* An epilogue chain's program (WNN_FUSE_EPI_PROG, compiler/fuse.h), made
 * at compile (its scalars are constants): node k computes value k + 1 from
 * values (0: the running value t) and scalars, the last one the result. */
typedef struct cpu_prog_node {
    wnn_op op;
    bool binary;
    wnn_scalar_params pr;       /* a unary node's parameters              */
    int src[2];                 /* value index, or -1: the scalar s       */
    float s;                    /* a binary node's scalar operand         */
} cpu_prog_node;
typedef struct cpu_prog {
    uint32_t n;
    cpu_prog_node nodes[WNN_EPI_PROG_MAX];
    /* CPU_PROG_GELU_TANH: the nodes are GPT-2's tanh gelu (vloops.h
     * vl_gelu_tanh: its constants k, its operand order) */
    int kind;
    float k[4];
    int order;
} cpu_prog;
enum { CPU_PROG_NODES, CPU_PROG_GELU_TANH };

/* A fused epilogue (compiler/fuse.h): what runs on the producer's output
 * (conv2d, convTranspose2d, matmul, gemm) before it is stored as the
 * chain's result: y = act(y + addend).  The backend makes one per chain at
 * compile and resolves `addend` per dispatch (epilogue.c). */
typedef struct cpu_epi {
    wnn_op act;                 /* the activation, or WNN_OP_COUNT: none  */
    bool gate;                  /* y * act(y) (SiLU) instead of act(y)    */
    wnn_scalar_params pr;       /* its alpha / beta / clamp bounds        */
    wnn_epilogue_add add_kind;  /* none, residual or per-channel addend   */
    uint32_t channel_axis;      /* of the output, for a per-channel add   */
    int64_t n, C, inner;        /* the extents: the step's epi_n, epi_c,
                                 * epi_inner (compiler/schedule.c)        */
    wnn_dtype dtype;            /* the chain's data type                  */
    const void *addend;         /* per dispatch                           */
    /* a batchNormalization right after the producer (WNN_FUSE_BN), before
     * the add: NULL, or m[C], a[C], b[C] (per dispatch, from its mean,
     * variance, scale, bias and epsilon as its kernel makes them): y =
     * (float)(((double)y - m) * a + b) per channel, as the kernel does */
    const double *bn;
    int64_t bn_c;               /* C, the channels                        */
    bool applied;               /* set by a kernel that applied it itself */
    /* a program after the add instead of an activation (float32), or
     * NULL */
    const cpu_prog *prog;
} cpu_epi;

/* the epilogue depends on the channel of each element (a per-channel add
 * or a batchNormalization): cpu_epi_tile needs the channel of the tile */
static inline bool
cpu_epi_per_channel(const cpu_epi *e)
{
    return e->add_kind == WNN_EPI_ADD_CHANNEL || e->bn;
}

/* Data a kernel prepares from constant inputs once and keeps for the
 * graph's life (packed or transformed filters): one slot per kind, made at
 * the first dispatch that needs it and freed with the compiled graph.
 * Dispatches of one graph never overlap (the backend runs one at a time),
 * so the slots need no lock. */
enum {
    CPU_PREP_DIRECT,     /* conv: [OP/64][KH][KW][C][64] filter (direct.c) */
    CPU_PREP_WINOGRAD,   /* conv: transformed 3x3 filter (winograd.c)    */
    CPU_PREP_DEPTHWISE,  /* conv: reordered depthwise filter            */
    CPU_PREP_GEMM,       /* conv: filter in the im2col path's layout     */
    CPU_PREP_1X1,        /* conv: [O][C] filter of the nchw 1x1 product  */
    CPU_PREP_SCALED,     /* conv: CPU_PREP_DIRECT's filter times an input
                          * scale, refilled per dispatch (direct.c)     */
    CPU_PREP_SLOTS
};
typedef struct cpu_prep {
    void *slot[CPU_PREP_SLOTS];
    void *scratch;             /* cpu_scratch: kept between dispatches */
    size_t scratch_bytes;
} cpu_prep;

typedef struct cpu_call {
    const wnn_node *node;
    cpu_prep *prep;            /* the node's prepared data (above)       */
    uint32_t const_in;         /* bit j: input j is a graph constant     */
    cpu_epi *epi;              /* NULL, or the epilogue of a fused chain
                                * whose producer this is: a kernel may
                                * apply it on each tile while the tile is
                                * hot (cpu_epi_tile) and set epi->applied;
                                * otherwise the backend applies it to the
                                * whole output after the kernel.        */
    const cpu_config *config;  /* kernel choices (cpu/config.h) */
    /* NULL, or a conv2d's input scale (WNN_FUSE_IN_SCALE, compiler/
     * fuse.h): one float32 per input channel, by which the kernel scales
     * its input, x * s, before the convolution (kernels/conv/conv2d.c) */
    const float *in_scale;
    const wnn_lowered *lowered; /* the node's parameters, resolved at
                                 * compile (compiler/lower/lower.h) */
    const void *options;
    uint32_t n_in, n_out;
    const wnn_desc *in_desc;   /* n_in descriptors  */
    const void *const *in;     /* n_in pointers     */
    const wnn_desc *out_desc;  /* n_out descriptors */
    void *const *out;          /* n_out pointers    */
} cpu_call;

typedef wnn_status (*cpu_kernel)(const cpu_call *k, wnn_error *err);

#define WNN_OP(ID, camel, snake, sig, opts, check, limits, family, traits, lower, cpu) \
    wnn_status cpu(const cpu_call *k, wnn_error *err);
#include "../ops/ops.def"
#undef WNN_OP

/* Hot loops, compiled from one source for x86-64-v4 (AVX-512), x86-64-v3
 * (AVX2 + FMA) and baseline x86-64, and run at the level cpu_isa() picks:
 * the CPU's, capped by WEBNN_CPU_ISA, so that every build of every loop
 * runs on any machine (`make test-isa`).  A hot function is written
 *
 *     CPU_HOT_VOID(static, , name, (int64_t n, float *y), (n, y))
 *     {
 *         ... the body ...
 *     }
 *
 * (storage class, extra attributes, name, parameters, the parameters'
 * names; CPU_HOT_RET(static, , T, ...) for one that returns a T): the body
 * becomes name_hot, always inlined, into name_v4, name_v3 and name_v1,
 * each compiled for its level (ISA levels, not CPU models:
 * "arch=skylake-avx512" would also tune for that Intel model), and `name`
 * calls the one of cpu_isa()'s level.  CPU_HOT2_VOID / CPU_HOT2_RET build
 * two: AVX2 without FMA for v4 and v3, and baseline (memory-bound loops
 * whose 512-bit build measured slower).  GCC's target_clones, used before,
 * picked its clone by the CPU's features when the library was loaded (an
 * ifunc), which WEBNN_CPU_ISA could not cap.  Other compilers, and
 * WNN_NO_CLONES: one plain function. */
#define CPU_HOT_CAT_(a, b) a##b
#define CPU_HOT_CAT(a, b) CPU_HOT_CAT_(a, b)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(WNN_NO_CLONES)
#if __GNUC__ >= 12
#define CPU_TARGET_V4 __attribute__((target("arch=x86-64-v4")))
#define CPU_TARGET_V3 __attribute__((target("arch=x86-64-v3")))
#else
#define CPU_TARGET_V4 \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512cd,avx2,fma,bmi2")))
#define CPU_TARGET_V3 __attribute__((target("avx2,fma,bmi2")))
#endif
#define CPU_TARGET_AVX2 __attribute__((target("avx2")))
#define CPU_HOT_DEF_(S, A, R, N, P, X, RET, T4, T3)                           \
    A static inline __attribute__((always_inline)) R CPU_HOT_CAT(N, _hot) P; \
    T4 A static R CPU_HOT_CAT(N, _v4) P { RET CPU_HOT_CAT(N, _hot) X; }     \
    T3 A static R CPU_HOT_CAT(N, _v3) P { RET CPU_HOT_CAT(N, _hot) X; }     \
    A static R CPU_HOT_CAT(N, _v1) P { RET CPU_HOT_CAT(N, _hot) X; }        \
    S R N P                                                                  \
    {                                                                        \
        const int l_ = cpu_isa();                                            \
        if (l_ >= CPU_ISA_AVX512)                                            \
            RET CPU_HOT_CAT(N, _v4) X;                                       \
        else if (l_ >= CPU_ISA_AVX2)                                         \
            RET CPU_HOT_CAT(N, _v3) X;                                       \
        else                                                                 \
            RET CPU_HOT_CAT(N, _v1) X;                                       \
    }                                                                        \
    A static inline __attribute__((always_inline)) R CPU_HOT_CAT(N, _hot) P
#define CPU_HOT_VOID(S, A, N, P, X) \
    CPU_HOT_DEF_(S, A, void, N, P, X, , CPU_TARGET_V4, CPU_TARGET_V3)
#define CPU_HOT_RET(S, A, R, N, P, X) \
    CPU_HOT_DEF_(S, A, R, N, P, X, return, CPU_TARGET_V4, CPU_TARGET_V3)
#define CPU_HOT2_VOID(S, A, N, P, X) \
    CPU_HOT_DEF_(S, A, void, N, P, X, , CPU_TARGET_AVX2, CPU_TARGET_AVX2)
#define CPU_HOT2_RET(S, A, R, N, P, X) \
    CPU_HOT_DEF_(S, A, R, N, P, X, return, CPU_TARGET_AVX2, CPU_TARGET_AVX2)
#else
#define CPU_HOT_VOID(S, A, N, P, X) S A void N P
#define CPU_HOT_RET(S, A, R, N, P, X) S A R N P
#define CPU_HOT2_VOID(S, A, N, P, X) S A void N P
#define CPU_HOT2_RET(S, A, R, N, P, X) S A R N P
#endif

/* exp, the recurrent activations, the saturating casts, the quantize
 * formula: the scalar numerics the CUDA kernels share (wnn_numerics.h,
 * wnn_exp_core: exp for x in [-87.34, 88.38], vectorisable) */
/* Work below this many elements runs on one thread. */
#define CPU_PARALLEL_MIN 32768

/* cpu/pool.c: the backend's thread pool (see there).  cpu_parallel runs
 * fn(arg, tid, nt) once for each tid in [0, nt), tid 0 on the caller, the
 * others on helper threads (or on the caller, after tid 0, where a helper
 * has not started its share by then), and returns nt: up to nthreads, 1
 * when the pool is busy or the call is made inside a region (then fn runs
 * on the caller alone).  cpu_barrier(nt) inside a region waits for all nt
 * threads of the region. */
typedef void (*cpu_par_fn)(void *arg, int tid, int nt);
int cpu_parallel(int nthreads, cpu_par_fn fn, void *arg);
void cpu_barrier(int nt);
/* whether the calling thread runs a share of a pool region */
bool cpu_in_region(void);
/* a graph's run is over: until the next region the helpers spin only
 * CPU_POOL_REST_NS (or less) before they sleep, not WEBNN_POOL_SPIN_US
 * (pool.c) */
void cpu_pool_rest(void);
/* for (i = 0; i < n; i++) on up to nthreads threads, fn(arg, begin, end,
 * tid) per block: _for splits [0, n) as OpenMP's schedule(static) does (nt
 * contiguous blocks, the first n % nt one longer); _dynamic hands out
 * blocks of `chunk` dynamically, with affinity: thread t takes the blocks of
 * the t-th contiguous run in order, then steals from the backs of the
 * others' runs (a thread reads back, in the next layer, mostly what it
 * wrote itself). */
typedef void (*cpu_for_fn)(void *arg, int64_t begin, int64_t end, int tid);
void cpu_parallel_for(int64_t n, int nthreads, cpu_for_fn fn, void *arg);

/* Outputs at least this large are written with non-temporal (streaming)
 * stores: they do not fit in the caches anyway, and streaming stores skip
 * reading each destination line before it is overwritten (a third of the
 * memory traffic of a copy).  WEBNN_NT_BYTES overrides (0: never):
 * cpu_nt_bytes() in config.h. */
/* the CPU runs x86-64-v4 code (AVX-512 F, DQ, BW, VL, CD): the level of
 * the kernels written with AVX-512 intrinsics (support.c) */
/* The instruction-set level the hand-written kernels may use (CPU_ISA_*,
 * config.h): the CPU's, capped by WEBNN_CPU_ISA; read once per process.
 * Kernels choose their code path by it (cpu_has_avx512(): level 4).
 * So do the hot loops built per level (CPU_HOT_VOID, CPU_HOT_RET). */
int cpu_isa(void);
bool cpu_has_avx512(void);
/* memcpy with streaming stores; callers issue cpu_nt_fence() before the
 * data is read by another thread (the pool's join is not enough). */
void cpu_copy_nt(void *dst, const void *src, size_t n);
void cpu_nt_fence(void);
/* n floats of zeros and 64 bytes more, 64-byte aligned, read-only, shared
 * by every kernel and never freed (a row of zeros for the rows and columns
 * a convolution reads outside its input); NULL: out of memory */
const float *cpu_zeros(size_t n);
void cpu_parallel_for_dynamic(int64_t n, int64_t chunk, int nthreads,
                              cpu_for_fn fn, void *arg);
/* blocks of `chunk` handed out in order from one shared counter (the
 * threads stream through neighbouring memory: the passes over memory,
 * where one contiguous run per thread was 30-40 % slower on the 2-core
 * machines) */
void cpu_parallel_for_shared(int64_t n, int64_t chunk, int nthreads,
                             cpu_for_fn fn, void *arg);
/* memcpy on every thread (one core does not reach the memory bandwidth)
 * from 1 MiB, with streaming stores from cpu_nt_bytes(): tensor reads and
 * writes, identity, duplicated graph outputs */
void cpu_parallel_copy(void *dst, const void *src, uint64_t bytes);
/* n items of about item_bytes of memory each, in shared-counter chunks of
 * about 1 MiB (pool.c: the schedule of the passes over memory) */
void cpu_parallel_stream(int64_t n, uint64_t item_bytes, int nthreads,
                         cpu_for_fn fn, void *arg);

/* cpu/convert.c: float32 or float16 data -> a malloc'd float32 copy (NULL
 * if out of memory) */
float *cpu_to_f32(const void *p, wnn_dtype t, uint64_t n);
/* quantizeLinear's rint(x / scale) computed as rint(x * (1 / scale)) in
 * double (x and scale float32 values, so the product is within 2^-51 of
 * the quotient, relatively): the two round alike unless the product lies
 * within QUANT_TIE's complement of a tie (|q - rint(q)| > QUANT_TIE: then
 * the loops redo their chunk by division; a quotient of 2^21 or more
 * saturates any 8-bit output either way).  kernels/quantize/quantize.c and
 * qdq.c. */
#define QUANT_TIE (0.5 - 1e-9)
/* quantizeLinear float32 -> uint8 (sgn false) / int8 of n elements with
 * one scale and zero point: saturate(rint(x / s) + z), NaN -> 0 (the
 * multiplication above, AVX-512 where cpu_isa() allows) */
void cpu_quantize_f32_8(const float *x, void *y, size_t n, double s, double z,
                        bool sgn);
/* float32 -> float32 or float16 (round to nearest even) */
void cpu_from_f32(const float *f, void *p, wnn_dtype t, uint64_t n);

/* cpu/epilogue.c.  cpu_epi_tile: the epilogue on the float32 values
 * y[0..n) that sit at element offset `off` of the output; their channels
 * are ch, ch + chstep, ... (chstep 0: all in channel ch, an nchw row;
 * 1: consecutive channels, an nhwc pixel or a matmul row).  cpu_epi_output:
 * the epilogue over the chain's whole output (e->n elements; float32 or float16,
 * rounded as the unfused add and activation would), threaded. */
void cpu_epi_tile(const cpu_epi *e, float *y, int64_t off, int64_t n,
                  int64_t ch, int chstep);
/* cpu_epi_tile on `rows` runs of n consecutive channels ch .. ch + n - 1
 * (nhwc pixels, matmul rows), run r at y + r ys, element offset off + r ys */
void cpu_epi_rows(const cpu_epi *e, float *y, int64_t ys, int64_t rows,
                  int64_t off, int64_t n, int64_t ch);
void cpu_epi_output(const cpu_epi *e, void *y);
/* elementwise.c: the float32 loop of a unary operator (x and y may be the
 * same buffer), of a binary arithmetic operator (add ... pow, prelu; y may
 * be a or b) */
void cpu_unary_f32(wnn_op op, const wnn_scalar_params *pr, size_t n,
                   const float *x, float *y);
/* rows r < rows of y (stride ys) in place: y = act(y + b[0, n)) (gate:
 * y * act(y + b)), b NULL: no add; the values of the separate add and
 * activation (and mul).  false: not done (no vector loop for act here) */
bool cpu_act_rows_f32(wnn_op act, bool gate, size_t rows, size_t n, float *y,
                      size_t ys, const float *b);
/* y = y * act(y) in place in one loop (the sigmoid: SiLU), the values of
 * cpu_unary_f32 and the mul apart; false: not done (another act) */
bool cpu_gate_f32(wnn_op act, size_t n, float *y);
/* kernels/normalization/normalization.c: batchNormalization's per-channel
 * coefficients (3 C doubles) and its arithmetic on a flat run of elements */
void cpu_bn_coefficients(const float *mean, const float *var,
                         const float *scale, const float *bias,
                         double epsilon, int64_t C, double *coef);
void cpu_bn_run(const float *x, float *y, uint64_t f, size_t n, int64_t C,
                int64_t inner, const double *coef);
void cpu_binary_f32(wnn_op op, size_t n, const float *a, const float *b,
                    float *y);
/* y = a op s (s_first: s op a) for one value s: add sub mul div, and pow
 * by a small integer; the values of cpu_binary_f32 with b filled with s.
 * false: not done (another op or exponent) */
bool cpu_binary_scalar_f32(wnn_op op, size_t n, const float *a, float s,
                           bool s_first, float *y);

/* qdq.c: a quantized region (compiler/fuse_qdq.c, WNN_FUSE_QDQ) as one
 * integer step, made once at compile from the chain and the graph's
 * constants (weights packed, corrections precomputed; NULL: out of memory)
 * and run per dispatch with its one non-constant input, x
 * (cpu_qdq_input: its operand id), and its result. */
typedef struct cpu_qdq cpu_qdq;
cpu_qdq *cpu_qdq_make(const wnn_graph *g, const wnn_epilogue *e,
                      void *const *constants);
void cpu_qdq_free(cpu_qdq *q);
uint32_t cpu_qdq_input(const cpu_qdq *q);
/* w: the weights' integer operand where they are packed per dispatch (a
 * product of two activations: cpu_qdq_weights gives its operand id, else
 * UINT32_MAX and w is not read) */
uint32_t cpu_qdq_weights(const cpu_qdq *q);
wnn_status cpu_qdq_run(cpu_qdq *q, const void *x, const void *w, void *y,
                       wnn_error *err);

/* attention.c: an attention block (compiler/fuse_attention.c,
 * WNN_FUSE_ATTENTION) as one step, made once at compile from its step
 * (shapes, the mask's broadcast, the threads' score buffers; NULL: out of
 * memory) and run per dispatch with q, kt, v, the mask (NULL where the
 * block has none) and the result */
typedef struct cpu_attn cpu_attn;
cpu_attn *cpu_attn_make(const wnn_graph *g, const wnn_step *s,
                        const cpu_config *cfg);
void cpu_attn_free(cpu_attn *a);
wnn_status cpu_attn_run(cpu_attn *a, const float *q, const float *kt,
                        const float *v, const float *mask, float *out);
/* normalization.c: softmax of one row of n floats in cache (x == y may
 * be), as the softmax kernel computes each row of up to 32768 */
void cpu_softmax_row(const float *x, float *y, int64_t n);

/* chain.c: a fused element-wise chain (compiler/fuse.h, WNN_FUSE_ELTWISE),
 * made once at compile from the chain's nodes (in order) and run per
 * dispatch with the addresses of its operands: one pass over memory, in
 * chunks that stay in L1. */
typedef struct cpu_chain cpu_chain;
cpu_chain *cpu_chain_make(const wnn_graph *g, const uint32_t *nodes,
                          uint32_t n);
void cpu_chain_free(cpu_chain *c);
/* the operand ids whose addresses cpu_chain_run needs, in order */
uint32_t cpu_chain_operands(const cpu_chain *c, const uint32_t **ids);
void cpu_chain_run(const cpu_chain *c, const void *const *ptrs, void *out);

/* kernels/conv/pair.c: linked conv pairs (compiler/fuse.h,
 * WNN_FUSE_CONV_PAIR) run as one kernel: ke is the 1x1 expansion's call or
 * NULL, kd the 3x3 depthwise convolution's, kp the 1x1 projection's or
 * NULL (each with its chain's epilogue); only the last one's result is
 * written.  cpu_conv_pair_fuses says (to the fusion analysis, through
 * the backend's conv_pair) whether a pair of these geometries runs so -- 1: a is the expansion of depthwise b (a 1x1, or a
 * dense convolution of few channels), 2: a is a depthwise convolution and
 * b its 1x1 projection, 0: no --
 * on this CPU (AVX-512, and sizes where it pays; a_linked: the depthwise
 * a runs inside its expansion's pair already); otherwise the two run
 * apart. */
int cpu_conv_pair_fuses(const cpu_config *cfg, const wnn_conv_params *a,
                        const wnn_conv_params *b, bool a_linked);
wnn_status cpu_conv_pair(const cpu_call *ke, const cpu_call *kd,
                         const cpu_call *kp, wnn_error *err);

/* The prepared data of `slot`, made from input `input`, or NULL (not made
 * yet, or the input is not a constant).  cpu_prep_keep stores p (a malloc'd
 * block) when the input is a constant and says whether it did: the caller
 * frees p itself otherwise. */
static inline void *
cpu_prep_get(const cpu_call *k, uint32_t input, int slot)
{
    return k->prep && (k->const_in >> input & 1) ? k->prep->slot[slot] : NULL;
}
static inline bool
cpu_prep_keep(const cpu_call *k, uint32_t input, int slot, void *p)
{
    if (!k->prep || !(k->const_in >> input & 1) || !p) {
        return false;
    }
    k->prep->slot[slot] = p;
    return true;
}

/* Working memory of a kernel's dispatch, at least `bytes`, 64-byte
 * aligned, kept with the node's prepared data for its next dispatches
 * (grown when one needs more), so that a dispatch neither allocates nor
 * page-faults its scratch in again: the conv pairs' rings, 130-400 KB a
 * call, came back from malloc as fresh pages every call.  *own: the caller
 * frees the memory (a call without prepared data); NULL: out of memory. */
static inline void *
cpu_scratch(const cpu_call *k, size_t bytes, void **own)
{
    *own = NULL;
    if (bytes > SIZE_MAX - 128) {
        return NULL;
    }
    bytes = (bytes + 64 + 63) / 64 * 64;
    if (!k->prep) {
        return *own = aligned_alloc(64, bytes);
    }
    if (k->prep->scratch_bytes < bytes) {
        void *p = aligned_alloc(64, bytes);
        if (!p) {
            return NULL;
        }
        free(k->prep->scratch);
        k->prep->scratch = p;
        k->prep->scratch_bytes = bytes;
    }
    return k->prep->scratch;
}

/* kernel errors name the node's operator and label */
wnn_status cpu_fail(const cpu_call *k, wnn_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
