/* elementwise.c -- CPU kernels of the element-wise operators: binary (with
 * NumPy broadcasting), logical, unary, activations, cast, where and plain
 * copies (identity, reshape).
 *
 * Every data type is computed in one of three domains: float32 (float32 and
 * float16, whose values are converted chunk by chunk), int64 (int8 uint8
 * int32 uint32 int64) and uint64.  Integer results are stored back with
 * two's-complement wrap-around.  The float32 loops are contiguous and written
 * so that the compiler vectorises them; the hottest are compiled for AVX-512,
 * AVX2 and baseline x86-64 and picked at load time.  exp, log, erf, gelu,
 * sigmoid, tanh, softplus and elu use vmath.h's branch-free float32 math
 * (vectorised in every clone, FMA in the AVX2 / AVX-512 ones, every input
 * range handled without a scalar fix-up); the other transcendental
 * operators (sin, cos, tan) still call libm per element.
 *
 * Documented integer semantics (the spec leaves them open):
 *   div   truncates toward zero; x / 0 gives 0; INT_MIN / -1 wraps to INT_MIN.
 *   pow   integer power with wrap-around; a negative exponent gives 1/x
 *         truncated (so 0 unless |x| == 1; 0 ** negative gives 0).
 *   cast  float -> integer truncates toward zero and saturates (NaN -> 0);
 *         integer -> integer wraps (keeps the low bits), as NumPy's astype.
 *   max / min propagate NaN (as numpy.maximum / numpy.minimum). */
#include <math.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "../../cpu.h"
#include "vmath.h"
#include "vloops.h"

#define CH 1024 /* elements per chunk */


typedef enum domain { D_F32, D_I64, D_U64 } domain;

static domain
domain_of(wnn_dtype t)
{
    if (t == WNN_FLOAT32 || t == WNN_FLOAT16) {
        return D_F32;
    }
    return t == WNN_UINT64 ? D_U64 : D_I64;
}

/* ---- loading and storing chunks ------------------------------------- */
static void
load_f32(wnn_dtype t, const void *p, size_t n, float *d)
{
    if (t == WNN_FLOAT32) {
        memcpy(d, p, n * 4);
    } else {
        const uint16_t *h = p;
        for (size_t i = 0; i < n; i++) {
            d[i] = wnn_f16_to_f32(h[i]);
        }
    }
}

static void
store_f32(wnn_dtype t, void *p, size_t n, const float *s)
{
    if (t == WNN_FLOAT32) {
        memcpy(p, s, n * 4);
    } else {
        uint16_t *h = p;
        for (size_t i = 0; i < n; i++) {
            h[i] = wnn_f32_to_f16(s[i]);
        }
    }
}

static void
load_i64(wnn_dtype t, const void *p, size_t n, int64_t *d)
{
    switch (t) {
    case WNN_INT32: for (size_t i = 0; i < n; i++) d[i] = ((const int32_t *)p)[i]; break;
    case WNN_UINT32: for (size_t i = 0; i < n; i++) d[i] = ((const uint32_t *)p)[i]; break;
    case WNN_INT64: memcpy(d, p, n * 8); break;
    case WNN_UINT64: memcpy(d, p, n * 8); break;
    case WNN_INT8: for (size_t i = 0; i < n; i++) d[i] = ((const int8_t *)p)[i]; break;
    case WNN_UINT8: for (size_t i = 0; i < n; i++) d[i] = ((const uint8_t *)p)[i]; break;
    default: break;
    }
}

static void
store_i64(wnn_dtype t, void *p, size_t n, const int64_t *s)
{
    switch (t) {
    case WNN_INT32: for (size_t i = 0; i < n; i++) ((int32_t *)p)[i] = (int32_t)(uint32_t)s[i]; break;
    case WNN_UINT32: for (size_t i = 0; i < n; i++) ((uint32_t *)p)[i] = (uint32_t)s[i]; break;
    case WNN_INT64: memcpy(p, s, n * 8); break;
    case WNN_UINT64: memcpy(p, s, n * 8); break;
    case WNN_INT8: for (size_t i = 0; i < n; i++) ((int8_t *)p)[i] = (int8_t)(uint8_t)s[i]; break;
    case WNN_UINT8: for (size_t i = 0; i < n; i++) ((uint8_t *)p)[i] = (uint8_t)s[i]; break;
    default: break;
    }
}

/* Load n elements of operand `t` at `p` into a domain chunk; stride 0 means
 * one value repeated. */
static void
load_chunk(domain dm, wnn_dtype t, const void *p, int stride, size_t n,
           void *dst)
{
    if (stride) {
        if (dm == D_F32) {
            load_f32(t, p, n, dst);
        } else {
            load_i64(t, p, n, dst);
        }
        return;
    }
    if (dm == D_F32) {
        float v, *d = dst;
        load_f32(t, p, 1, &v);
        for (size_t i = 0; i < n; i++) {
            d[i] = v;
        }
    } else {
        int64_t v = 0, *d = dst;
        load_i64(t, p, 1, &v);
        for (size_t i = 0; i < n; i++) {
            d[i] = v;
        }
    }
}

/* ---- broadcasting iteration ------------------------------------------ */
#define MAXI WNN_BCAST_MAX_OPERANDS

/* The broadcast iterator of a node, computed once at compile
 * (compiler/lower/broadcast.c, k->lowered->u.bcast). */
typedef wnn_broadcast_params nd;

/* Element offsets of row `row` (all dims but the last) for each operand. */
static void
nd_row(const nd *it, uint64_t row, int64_t *off)
{
    for (uint32_t k = 0; k < it->n; k++) {
        off[k] = 0;
    }
    for (int d = (int)it->rank - 2; d >= 0; d--) {
        uint64_t i = row % it->shape[d];
        row /= it->shape[d];
        for (uint32_t k = 0; k < it->n; k++) {
            off[k] += (int64_t)i * it->st[k][d];
        }
    }
}

/* ---- float32 math ----------------------------------------------------- */

typedef enum uop {
    U_ABS, U_CEIL, U_COS, U_ERF, U_EXP, U_FLOOR, U_LOG, U_NEG, U_RECIPROCAL,
    U_ROUND_EVEN, U_SIN, U_SIGN, U_SQRT, U_TAN, U_CLAMP, U_ELU, U_GELU,
    U_HARD_SIGMOID, U_HARD_SWISH, U_LEAKY_RELU, U_LINEAR, U_RELU, U_SIGMOID,
    U_SOFTPLUS, U_SOFTSIGN, U_TANH, U_LOGICAL_NOT, U_IS_NAN, U_IS_INFINITE,
    U_IDENTITY
} uop;

typedef wnn_scalar_params uparams; /* alpha, beta, clamp bounds */

/* the function of vloops.h computing op, or -1 */
static int
vl_of(uop op)
{
    switch (op) {
    case U_EXP: return VL_EXP;
    case U_SIGMOID: return VL_SIGMOID;
    case U_GELU: return VL_GELU;
    case U_TANH: return VL_TANH;
    case U_ERF: return VL_ERF;
    case U_RELU: return VL_RELU;
    default: return -1;
    }
}

/* A large float32 output of exp, sigmoid, gelu or relu written with
 * streaming stores by the vector loop itself (not to an L1 buffer and
 * copied from there); false: not this operator or level. */
static bool
unary_f32_nt_direct(uop op, size_t n, const float *x, float *y)
{
    int f = vl_of(op);
    return f >= 0 && vl_map_nt((vl_fn)f, n, x, y);
}

/* the operators of vmath.h (exp-, log- and erf-based), see there */
CPU_HOT_VOID(static, VM_ATTRS, unary_f32_vm,
             (uop op, const uparams *pr, size_t n, const float *x, float *y),
             (op, pr, n, x, y))
{
    float a = pr->a;
    /* exp, sigmoid, gelu, tanh and erf: the intrinsics twins of the
     * CPU's level where it has them */
    if (op != U_RELU && vl_of(op) >= 0 && vl_map((vl_fn)vl_of(op), n, x, y)) {
        return;
    }
    switch (op) {
    case U_ERF: for (size_t i = 0; i < n; i++) y[i] = vm_erf(x[i]); break;
    case U_EXP: for (size_t i = 0; i < n; i++) y[i] = vm_exp(x[i]); break;
    case U_LOG: for (size_t i = 0; i < n; i++) y[i] = vm_log(x[i]); break;
    case U_ELU:
        for (size_t i = 0; i < n; i++) {
            float e = a * vm_expm1(x[i]);
            y[i] = x[i] > 0 ? x[i] : e;
        }
        break;
    case U_GELU:
        for (size_t i = 0; i < n; i++) y[i] = vm_gelu(x[i]);
        break;
    case U_SIGMOID: for (size_t i = 0; i < n; i++) y[i] = vm_sigmoid(x[i]); break;
    case U_SOFTPLUS: for (size_t i = 0; i < n; i++) y[i] = vm_softplus(x[i]); break;
    case U_TANH: for (size_t i = 0; i < n; i++) y[i] = vm_tanh(x[i]); break;
    default: break;
    }
}

static bool
uop_is_vm(uop op)
{
    return op == U_ERF || op == U_EXP || op == U_LOG || op == U_GELU ||
           op == U_SIGMOID || op == U_SOFTPLUS || op == U_TANH || op == U_ELU;
}

CPU_HOT_VOID(static, , unary_f32,
             (uop op, const uparams *pr, size_t n, const float *x, float *y),
             (op, pr, n, x, y))
{
    float a = pr->a, b = pr->b;
    if (uop_is_vm(op)) {
        unary_f32_vm(op, pr, n, x, y);
        return;
    }
    switch (op) {
    case U_ABS: for (size_t i = 0; i < n; i++) y[i] = fabsf(x[i]); break;
    case U_CEIL: for (size_t i = 0; i < n; i++) y[i] = ceilf(x[i]); break;
    case U_COS: for (size_t i = 0; i < n; i++) y[i] = cosf(x[i]); break;
    case U_FLOOR: for (size_t i = 0; i < n; i++) y[i] = floorf(x[i]); break;
    case U_NEG: for (size_t i = 0; i < n; i++) y[i] = -x[i]; break;
    case U_RECIPROCAL: for (size_t i = 0; i < n; i++) y[i] = 1.0f / x[i]; break;
    case U_ROUND_EVEN: for (size_t i = 0; i < n; i++) y[i] = nearbyintf(x[i]); break;
    case U_SIN: for (size_t i = 0; i < n; i++) y[i] = sinf(x[i]); break;
    case U_SIGN:
        for (size_t i = 0; i < n; i++) {
            /* spec: "1 if > 0, -1 if < 0, and 0 otherwise" (NaN -> 0) */
            y[i] = x[i] > 0 ? 1.0f : x[i] < 0 ? -1.0f : 0.0f;
        }
        break;
    case U_SQRT: for (size_t i = 0; i < n; i++) y[i] = sqrtf(x[i]); break;
    case U_TAN: for (size_t i = 0; i < n; i++) y[i] = tanf(x[i]); break;
    case U_CLAMP:
        for (size_t i = 0; i < n; i++) {
            float v = x[i] < pr->lo ? pr->lo : x[i];
            y[i] = v > pr->hi ? pr->hi : v; /* NaN stays NaN */
        }
        break;
    case U_HARD_SIGMOID:
        for (size_t i = 0; i < n; i++) {
            float v = a * x[i] + b;
            y[i] = v < 0 ? 0 : v > 1 ? 1 : v;
        }
        break;
    case U_HARD_SWISH:
        for (size_t i = 0; i < n; i++) {
            float v = x[i] + 3.0f;
            v = v < 0 ? 0 : v > 6 ? 6 : v;
            y[i] = x[i] * v / 6.0f;
        }
        break;
    case U_LEAKY_RELU:
        for (size_t i = 0; i < n; i++) y[i] = x[i] >= 0 ? x[i] : a * x[i];
        break;
    case U_LINEAR: for (size_t i = 0; i < n; i++) y[i] = a * x[i] + b; break;
    case U_RELU: /* max(0, x), NaN propagating like max */
        for (size_t i = 0; i < n; i++) y[i] = (x[i] > 0 || x[i] != x[i]) ? x[i] : 0.0f;
        break;
    case U_SOFTSIGN: for (size_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + fabsf(x[i])); break;
    case U_IDENTITY: memcpy(y, x, n * 4); break;
    default: break;
    }
}

static void
unary_i64(uop op, const uparams *pr, size_t n, const int64_t *x, int64_t *y)
{
    switch (op) {
    case U_ABS: for (size_t i = 0; i < n; i++) y[i] = x[i] < 0 ? (int64_t)(0 - (uint64_t)x[i]) : x[i]; break;
    case U_NEG: for (size_t i = 0; i < n; i++) y[i] = (int64_t)(0 - (uint64_t)x[i]); break;
    case U_SIGN: for (size_t i = 0; i < n; i++) y[i] = (x[i] > 0) - (x[i] < 0); break;
    case U_RELU: for (size_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0; break;
    case U_CLAMP:
        for (size_t i = 0; i < n; i++) {
            int64_t v = x[i] < pr->ilo ? pr->ilo : x[i];
            y[i] = v > pr->ihi ? pr->ihi : v;
        }
        break;
    default: memcpy(y, x, n * 8); break; /* identity */
    }
}

static void
unary_u64(uop op, const uparams *pr, size_t n, const uint64_t *x, uint64_t *y)
{
    if (op == U_CLAMP) {
        for (size_t i = 0; i < n; i++) {
            uint64_t v = x[i] < pr->ulo ? pr->ulo : x[i];
            y[i] = v > pr->uhi ? pr->uhi : v;
        }
    } else {
        memcpy(y, x, n * 8);
    }
}

static uop
uop_of(wnn_op op)
{
    switch (op) {
    case WNN_OP_ABS: return U_ABS;
    case WNN_OP_CEIL: return U_CEIL;
    case WNN_OP_COS: return U_COS;
    case WNN_OP_ERF: return U_ERF;
    case WNN_OP_EXP: return U_EXP;
    case WNN_OP_FLOOR: return U_FLOOR;
    case WNN_OP_LOG: return U_LOG;
    case WNN_OP_NEG: return U_NEG;
    case WNN_OP_RECIPROCAL: return U_RECIPROCAL;
    case WNN_OP_ROUND_EVEN: return U_ROUND_EVEN;
    case WNN_OP_SIN: return U_SIN;
    case WNN_OP_SIGN: return U_SIGN;
    case WNN_OP_SQRT: return U_SQRT;
    case WNN_OP_TAN: return U_TAN;
    case WNN_OP_CLAMP: return U_CLAMP;
    case WNN_OP_ELU: return U_ELU;
    case WNN_OP_GELU: return U_GELU;
    case WNN_OP_HARD_SIGMOID: return U_HARD_SIGMOID;
    case WNN_OP_HARD_SWISH: return U_HARD_SWISH;
    case WNN_OP_LEAKY_RELU: return U_LEAKY_RELU;
    case WNN_OP_LINEAR: return U_LINEAR;
    case WNN_OP_RELU: return U_RELU;
    case WNN_OP_SIGMOID: return U_SIGMOID;
    case WNN_OP_SOFTPLUS: return U_SOFTPLUS;
    case WNN_OP_SOFTSIGN: return U_SOFTSIGN;
    case WNN_OP_TANH: return U_TANH;
    case WNN_OP_LOGICAL_NOT: return U_LOGICAL_NOT;
    case WNN_OP_IS_NAN: return U_IS_NAN;
    case WNN_OP_IS_INFINITE: return U_IS_INFINITE;
    default: return U_IDENTITY;
    }
}

/* cpu.h: a unary operator's float32 loop for other kernels (the fused
 * epilogues, epilogue.c).  unary_f32 may read x after writing y, so an
 * in-place call goes through a copy of each chunk. */
void
cpu_unary_f32(wnn_op op, const wnn_scalar_params *pr, size_t n,
              const float *x, float *y)
{
    const uop u = uop_of(op);
    if (x != y) {
        unary_f32(u, pr, n, x, y);
        return;
    }
    /* in place: the intrinsics loops read each vector before they store
     * it; the portable ones through an L1 buffer (GCC's vectorized loop
     * assumes no overlap only after a check that x == y fails) */
    if (u != U_RELU && vl_of(u) >= 0 && vl_map((vl_fn)vl_of(u), n, y, y)) {
        return;
    }
    float t[CH];
    for (size_t i = 0; i < n; i += CH) {
        size_t m = n - i < CH ? n - i : CH;
        memcpy(t, x + i, m * sizeof(float));
        unary_f32(u, pr, m, t, y + i);
    }
}

/* cpu.h: rows of a tile in place, y = act(y + b) or (gate) y * act(y + b)
 * where act has a vector loop at this level (vl_map_rows) */
bool
cpu_act_rows_f32(wnn_op act, bool gate, size_t rows, size_t n, float *y,
                 size_t ys, const float *b)
{
    const int f = gate ? (act == WNN_OP_SIGMOID ? VL_SILU : -1)
                       : vl_of(uop_of(act));
    return f >= 0 && f != VL_RELU && vl_map_rows((vl_fn)f, rows, n, y, ys, b);
}

/* y * sigmoid(y) in one loop, vm_sigmoid's value times y (the AVX2 and
 * baseline clones: unary_f32_vm's sigmoid, then the product) */
CPU_HOT_VOID(static, VM_ATTRS, silu_vm,
             (size_t n, float *y),
             (n, y))
{
    for (size_t i = 0; i < n; i++) {
        y[i] = y[i] * vm_sigmoid(y[i]);
    }
}

/* cpu.h: the gate y = y * act(y) in place, for a sigmoid (SiLU, swish):
 * EfficientNet's activation after every convolution but the projections.
 * The fused epilogue ran the sigmoid into a buffer and multiplied in a
 * second loop: 21 cycles a vector of 16 on one Zen 4 core, 13 here.  The
 * same values as the sigmoid and the mul apart (cpu_unary_f32 picks the
 * same loop for the sigmoid).  false: another activation. */
bool
cpu_gate_f32(wnn_op act, size_t n, float *y)
{
    if (act != WNN_OP_SIGMOID) {
        return false;
    }
    if (!vl_map(VL_SILU, n, y, y)) {
        silu_vm(n, y);
    }
    return true;
}

/* Chunks of a flat range, split over threads. */
static inline size_t
n_chunks(uint64_t total)
{
    return (size_t)((total + CH - 1) / CH);
}

static inline int
threads_for(uint64_t total)
{
    return total >= CPU_PARALLEL_MIN ? cpu_num_threads() : 1;
}

typedef struct unary_job {
    uop op;
    domain dm;
    uparams pr;
    size_t si;
    size_t so;
    const unsigned char *x;
    unsigned char *y;
    uint64_t total;
    wnn_dtype ti;
    wnn_dtype to;
    bool nt; /* float32 to float32, a large output: streaming stores */
} unary_job;


static void
unary_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const unary_job *j_ = p_;
    uop op = j_->op;
    domain dm = j_->dm;
    uparams pr = j_->pr;
    size_t si = j_->si;
    size_t so = j_->so;
    const unsigned char *x = j_->x;
    unsigned char *y = j_->y;
    uint64_t total = j_->total;
    wnn_dtype ti = j_->ti;
    wnn_dtype to = j_->to;
    if (dm == D_F32 && ti == WNN_FLOAT32 && j_->nt) {
        /* exp, sigmoid, relu of a large float32 tensor: the task's chunks
         * in one streamed call (as binary_body) */
        uint64_t b = (uint64_t)b_ * CH, e = (uint64_t)e_ * CH;
        e = e < total ? e : total;
        if (unary_f32_nt_direct(op, (size_t)(e - b), (const float *)x + b,
                                (float *)y + b)) {
            cpu_nt_fence();
            return;
        }
    }
    for (size_t c = (size_t)b_; c < (size_t)e_; c++) {
        uint64_t b = (uint64_t)c * CH;
        size_t n = total - b < CH ? (size_t)(total - b) : CH;
        const void *xp = x + b * si;
        void *yp = y + b * so;
        if (op == U_LOGICAL_NOT) {
            for (size_t i = 0; i < n; i++) {
                ((uint8_t *)yp)[i] = ((const uint8_t *)xp)[i] == 0;
            }
            continue;
        }
        if (dm == D_F32) {
            float xb[CH], yb[CH];
            const float *xf = xp;
            if (ti != WNN_FLOAT32) {
                load_f32(ti, xp, n, xb);
                xf = xb;
            }
            if (op == U_IS_NAN || op == U_IS_INFINITE) {
                for (size_t i = 0; i < n; i++) {
                    ((uint8_t *)yp)[i] = op == U_IS_NAN ? isnan(xf[i]) != 0
                                                        : isinf(xf[i]) != 0;
                }
                continue;
            }
            if (ti == WNN_FLOAT32 && j_->nt &&
                unary_f32_nt_direct(op, n, xf, yp)) {
                continue;
            }
            if (ti == WNN_FLOAT32 && j_->nt) { /* a large output */
                unary_f32(op, &pr, n, xf, yb);
                vl_copy_nt(yp, yb, n);
            } else if (ti == WNN_FLOAT32) {
                unary_f32(op, &pr, n, xf, yp);
            } else {
                unary_f32(op, &pr, n, xf, yb);
                store_f32(to, yp, n, yb);
            }
        } else {
            int64_t xb[CH], yb[CH];
            load_i64(ti, xp, n, xb);
            if (dm == D_I64) {
                unary_i64(op, &pr, n, xb, yb);
            } else {
                unary_u64(op, &pr, n, (uint64_t *)xb, (uint64_t *)yb);
            }
            store_i64(to, yp, n, yb);
        }
    }
    if (j_->nt) {
        cpu_nt_fence();
    }
}

/* ---- unary (and logicalNot / isNaN / isInfinite) ---------------------- */
wnn_status
cpu_unary(const cpu_call *k, wnn_error *err)
{
    (void)err;
    wnn_dtype ti = k->in_desc[0].dtype, to = k->out_desc[0].dtype;
    uint64_t total = wnn_desc_elements(&k->out_desc[0]);
    uop op = uop_of(k->node->op);
    domain dm = domain_of(ti);
    uparams pr;
    wnn_scalar_params_of(k->node->op, k->options, ti, &pr);
    size_t si = wnn_dtype_size(ti), so = wnn_dtype_size(to);
    const unsigned char *x = k->in[0];
    unsigned char *y = k->out[0];
    size_t nc = n_chunks(total);
    {
        unary_job j_ = {.op = op, .dm = dm, .pr = pr, .si = si, .so = so,
                        .x = x, .y = y, .total = total, .ti = ti, .to = to,
                        .nt = dm == D_F32 && ti == WNN_FLOAT32 &&
                              to == WNN_FLOAT32 &&
                              total * so >= cpu_nt_bytes()};
        cpu_parallel_stream((int64_t)(nc), (uint64_t)CH * (si + so), threads_for(total),
                            unary_body, &j_);
    }
    return WNN_OK;
}

/* ---- binary, comparisons, logical and/or/xor, prelu ------------------- */
typedef enum bop {
    B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_POW, B_PRELU,
    B_EQ, B_NE, B_GT, B_GE, B_LT, B_LE, B_AND, B_OR, B_XOR
} bop;

static bop
bop_of(wnn_op op)
{
    switch (op) {
    case WNN_OP_ADD: return B_ADD;
    case WNN_OP_SUB: return B_SUB;
    case WNN_OP_MUL: return B_MUL;
    case WNN_OP_DIV: return B_DIV;
    case WNN_OP_MAX: return B_MAX;
    case WNN_OP_MIN: return B_MIN;
    case WNN_OP_POW: return B_POW;
    case WNN_OP_PRELU: return B_PRELU;
    case WNN_OP_EQUAL: return B_EQ;
    case WNN_OP_NOT_EQUAL: return B_NE;
    case WNN_OP_GREATER: return B_GT;
    case WNN_OP_GREATER_OR_EQUAL: return B_GE;
    case WNN_OP_LESSER: return B_LT;
    case WNN_OP_LESSER_OR_EQUAL: return B_LE;
    case WNN_OP_LOGICAL_AND: return B_AND;
    case WNN_OP_LOGICAL_OR: return B_OR;
    default: return B_XOR;
    }
}


/* pow by one small integer exponent k (1 <= |k| <= 4) in every lane:
 * products in double, rounded to float32 once (x^2 exactly; x^3, x^4
 * within the double's 2^-52 before that rounding, as close as the general
 * path gets), so C's special cases come out of IEEE arithmetic itself:
 * signs of negative bases and zeros, infinities, NaN, 1 / 0 = inf.  The
 * exponent of GELU's tanh form (x^3) and of RMSNorm (x^2). */
static int
pow_small_int(size_t n, const float *b)
{
    float k = b[0];
    if (!(k == 1.0f || k == 2.0f || k == 3.0f || k == 4.0f || k == -1.0f ||
          k == -2.0f || k == -3.0f || k == -4.0f)) {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if (b[i] != k) {
            return 0;
        }
    }
    return (int)k;
}

CPU_HOT_VOID(static, , pow_int_f32,
             (int k, size_t n, const float *a, float *y),
             (k, n, a, y))
{
    /* one loop per exponent, each vectorised */
#define POW_INT_LOOP(expr)                   \
    for (size_t i = 0; i < n; i++) {          \
        double x = a[i];                      \
        y[i] = (float)(expr);                 \
    }                                         \
    break;
    switch (k) {
    case 1: POW_INT_LOOP(x)
    case 2: POW_INT_LOOP(x * x)
    case 3: POW_INT_LOOP(x * x * x)
    case 4: POW_INT_LOOP((x * x) * (x * x))
    case -1: POW_INT_LOOP(1.0 / x)
    case -2: POW_INT_LOOP(1.0 / (x * x))
    case -3: POW_INT_LOOP(1.0 / (x * x * x))
    default: POW_INT_LOOP(1.0 / ((x * x) * (x * x)))
    }
#undef POW_INT_LOOP
}

CPU_HOT_VOID(static, , binary_f32,
             (bop op, size_t n, const float *a, const float *b, float *y),
             (op, n, a, b, y))
{
    int k;
    if (op == B_POW && n > 0 && (k = pow_small_int(n, b)) != 0) {
        pow_int_f32(k, n, a, y);
        return;
    }
    if (op == B_POW) { /* the vector loop of the CPU's level, if any */
        size_t i = vl_pow(n, a, b, y);
        a += i, b += i, y += i, n -= i;
    }
    switch (op) {
    case B_ADD: for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i]; break;
    case B_SUB: for (size_t i = 0; i < n; i++) y[i] = a[i] - b[i]; break;
    case B_MUL: for (size_t i = 0; i < n; i++) y[i] = a[i] * b[i]; break;
    case B_DIV: for (size_t i = 0; i < n; i++) y[i] = a[i] / b[i]; break;
    case B_MAX:
        for (size_t i = 0; i < n; i++) {
            y[i] = (a[i] != a[i] || a[i] > b[i]) ? a[i] : b[i];
        }
        break;
    case B_MIN:
        for (size_t i = 0; i < n; i++) {
            y[i] = (a[i] != a[i] || a[i] < b[i]) ? a[i] : b[i];
        }
        break;
    case B_POW: for (size_t i = 0; i < n; i++) y[i] = powf(a[i], b[i]); break;
    case B_PRELU: for (size_t i = 0; i < n; i++) y[i] = a[i] >= 0 ? a[i] : a[i] * b[i]; break;
    default: break;
    }
}

static void
compare_f32(bop op, size_t n, const float *a, const float *b, uint8_t *y)
{
    switch (op) {
    case B_EQ: for (size_t i = 0; i < n; i++) y[i] = a[i] == b[i]; break;
    case B_NE: for (size_t i = 0; i < n; i++) y[i] = a[i] != b[i]; break;
    case B_GT: for (size_t i = 0; i < n; i++) y[i] = a[i] > b[i]; break;
    case B_GE: for (size_t i = 0; i < n; i++) y[i] = a[i] >= b[i]; break;
    case B_LT: for (size_t i = 0; i < n; i++) y[i] = a[i] < b[i]; break;
    case B_LE: for (size_t i = 0; i < n; i++) y[i] = a[i] <= b[i]; break;
    default: break;
    }
}

static void
binary_i64(bop op, size_t n, const int64_t *a, const int64_t *b, int64_t *y)
{
    for (size_t i = 0; i < n; i++) {
        int64_t x = a[i], z = b[i];
        switch (op) {
        case B_ADD: y[i] = (int64_t)((uint64_t)x + (uint64_t)z); break;
        case B_SUB: y[i] = (int64_t)((uint64_t)x - (uint64_t)z); break;
        case B_MUL: y[i] = (int64_t)((uint64_t)x * (uint64_t)z); break;
        case B_DIV:
            y[i] = z == 0 ? 0 : (z == -1) ? (int64_t)(0 - (uint64_t)x) : x / z;
            break;
        case B_MAX: y[i] = x > z ? x : z; break;
        case B_MIN: y[i] = x < z ? x : z; break;
        case B_POW: y[i] = wnn_ipow(x, z); break;
        case B_PRELU: y[i] = x >= 0 ? x : (int64_t)((uint64_t)x * (uint64_t)z); break;
        case B_EQ: y[i] = x == z; break;
        case B_NE: y[i] = x != z; break;
        case B_GT: y[i] = x > z; break;
        case B_GE: y[i] = x >= z; break;
        case B_LT: y[i] = x < z; break;
        case B_LE: y[i] = x <= z; break;
        case B_AND: y[i] = (x != 0) && (z != 0); break;
        case B_OR: y[i] = (x != 0) || (z != 0); break;
        case B_XOR: y[i] = (x != 0) != (z != 0); break;
        }
    }
}

static void
binary_u64(bop op, size_t n, const uint64_t *a, const uint64_t *b, uint64_t *y)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t x = a[i], z = b[i];
        switch (op) {
        case B_ADD: y[i] = x + z; break;
        case B_SUB: y[i] = x - z; break;
        case B_MUL: y[i] = x * z; break;
        case B_DIV: y[i] = z == 0 ? 0 : x / z; break;
        case B_MAX: y[i] = x > z ? x : z; break;
        case B_MIN: y[i] = x < z ? x : z; break;
        case B_POW: y[i] = wnn_upow(x, z); break;
        case B_PRELU: y[i] = x; break;
        case B_EQ: y[i] = x == z; break;
        case B_NE: y[i] = x != z; break;
        case B_GT: y[i] = x > z; break;
        case B_GE: y[i] = x >= z; break;
        case B_LT: y[i] = x < z; break;
        case B_LE: y[i] = x <= z; break;
        case B_AND: y[i] = x && z; break;
        case B_OR: y[i] = x || z; break;
        case B_XOR: y[i] = (x != 0) != (z != 0); break;
        }
    }
}

/* cpu.h: a binary arithmetic operator's float32 loop for other kernels
 * (the fused element-wise chains, cpu/chain.c); y may be a or b. */
void
cpu_binary_f32(wnn_op op, size_t n, const float *a, const float *b, float *y)
{
    binary_f32(bop_of(op), n, a, b, y);
}

/* cpu.h: y = a op s (s_first: s op a) for one float32 value s, the
 * operations of binary_f32 with b[i] = s for every i (a fused chain's
 * scalar constants: GPT-2's tanh gelu multiplies by three and raises to
 * the power 3; filling a chunk with s and scanning it for pow's small
 * integer exponent took more than the arithmetic).  false: not done (the
 * caller runs binary_f32 on a filled operand). */
CPU_HOT_RET(static, , bool, binary_scalar_f32,
            (bop o, size_t n, const float *a, float s, bool s_first, float *y),
            (o, n, a, s, s_first, y))
{
#define SCALAR_LOOP(expr)                                                      \
    for (size_t i = 0; i < n; i++) {                                           \
        const float x = a[i];                                                  \
        y[i] = (expr);                                                         \
    }                                                                          \
    return true;
    if (o == B_POW && !s_first) {
        int k = pow_small_int(1, &s);
        if (k != 0) {
            pow_int_f32(k, n, a, y);
            return true;
        }
        return false;
    }
    /* (the operand order kept: it picks a NaN's payload; GCC unswitches
     * the loops on s_first) */
    switch (o) {
    case B_ADD: SCALAR_LOOP(s_first ? s + x : x + s)
    case B_SUB: SCALAR_LOOP(s_first ? s - x : x - s)
    case B_MUL: SCALAR_LOOP(s_first ? s * x : x * s)
    case B_DIV: SCALAR_LOOP(s_first ? s / x : x / s)
    default: return false;
    }
#undef SCALAR_LOOP
}

bool
cpu_binary_scalar_f32(wnn_op op, size_t n, const float *a, float s,
                      bool s_first, float *y)
{
    return binary_scalar_f32(bop_of(op), n, a, s, s_first, y);
}

/* rows [r0, r1) of `inner` floats each, operand k's row r at row * sk (a
 * stride 0: the same row every time), y contiguous: the short rows of a
 * broadcast over all but the last dimension (squeeze-excitation's scale:
 * [1, 112, 112, 32] * [1, 1, 1, 32] is 12544 rows of 32, where the loop
 * per row of binary_body spent more on each row's offsets and call than on
 * its 32 products: 95 -> 30 us for that mul in EfficientNet-B0).  The
 * same float32 operations as binary_f32. */
CPU_HOT_VOID(static, , binary_rows_f32,
             (bop op, uint64_t r0, uint64_t r1, uint64_t inner,
              const float *a, int64_t sa, const float *b, int64_t sb,
              float *y),
             (op, r0, r1, inner, a, sa, b, sb, y))
{
    for (uint64_t r = r0; r < r1; r++) {
        const float *ar = a + (int64_t)r * sa, *br = b + (int64_t)r * sb;
        float *yr = y + r * inner;
        switch (op) {
        case B_ADD: for (uint64_t i = 0; i < inner; i++) yr[i] = ar[i] + br[i]; break;
        case B_SUB: for (uint64_t i = 0; i < inner; i++) yr[i] = ar[i] - br[i]; break;
        case B_MUL: for (uint64_t i = 0; i < inner; i++) yr[i] = ar[i] * br[i]; break;
        default: for (uint64_t i = 0; i < inner; i++) yr[i] = ar[i] / br[i]; break;
        }
    }
}

typedef struct binary_job {
    bop op;
    bool cmp;
    domain dm;
    nd it;
    uint64_t inner;
    uint64_t per_row;
    size_t sa;
    size_t so;
    const unsigned char *A;
    const unsigned char *B;
    unsigned char *Y;
    int ia;
    int ib;
    wnn_dtype ti;
    wnn_dtype to;
    bool nt; /* streaming stores (float32 add sub mul div, a large output) */
} binary_job;

static void
binary_f32_nt(bop op, size_t n, const float *a, const float *b, float *y)
{
    /* the vector loop of the CPU's level from y's first aligned element
     * (vloops.c: add sub mul div, in this order in bop) */
    const size_t al = vl_nt_align();
    if (al) {
        size_t i = 0;
        for (; i < n && ((uintptr_t)(y + i) & (al - 1)); i++) {
            binary_f32(op, 1, a + i, b + i, y + i);
        }
        i += vl_binary_nt((int)op, n - i, a + i, b + i, y + i);
        if (i < n) {
            binary_f32(op, n - i, a + i, b + i, y + i);
        }
        return;
    }
#if defined(__SSE2__)
    size_t i = 0;
    for (; i < n && ((uintptr_t)(y + i) & 15); i++) {
        binary_f32(op, 1, a + i, b + i, y + i);
    }
    for (; i + 4 <= n; i += 4) {
        __m128 x = _mm_loadu_ps(a + i), z = _mm_loadu_ps(b + i), r;
        switch (op) {
        case B_ADD: r = _mm_add_ps(x, z); break;
        case B_SUB: r = _mm_sub_ps(x, z); break;
        case B_MUL: r = _mm_mul_ps(x, z); break;
        default: r = _mm_div_ps(x, z); break;
        }
        _mm_stream_ps(y + i, r);
    }
    if (i < n) {
        binary_f32(op, n - i, a + i, b + i, y + i);
    }
#else
    binary_f32(op, n, a, b, y);
#endif
}

static void
binary_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const binary_job *j_ = p_;
    bop op = j_->op;
    bool cmp = j_->cmp;
    domain dm = j_->dm;
    nd it = j_->it;
    uint64_t inner = j_->inner;
    uint64_t per_row = j_->per_row;
    size_t sa = j_->sa;
    size_t so = j_->so;
    const unsigned char *A = j_->A;
    const unsigned char *B = j_->B;
    unsigned char *Y = j_->Y;
    int ia = j_->ia;
    int ib = j_->ib;
    wnn_dtype ti = j_->ti;
    wnn_dtype to = j_->to;
    if (dm == D_F32 && ti == WNN_FLOAT32 && to == WNN_FLOAT32 && !cmp &&
        ia && ib) {
        if (it.rank == 2 && per_row == 1 && !j_->nt &&
            (op == B_ADD || op == B_SUB || op == B_MUL || op == B_DIV)) {
            binary_rows_f32(op, (uint64_t)b_, (uint64_t)e_, inner,
                            (const float *)A, it.st[0][0], (const float *)B,
                            it.st[1][0], (float *)Y);
            return;
        }
        /* float32 along contiguous rows: the tasks of a row in one call,
         * not a call (and its row offsets) per chunk of CH -- 16 Ki of
         * them in an add of 16 Mi elements */
        for (uint64_t t = (uint64_t)b_; t < (uint64_t)e_;) {
            uint64_t row = t / per_row, c0 = (t % per_row) * CH;
            uint64_t t1 = (row + 1) * per_row < (uint64_t)e_ ? (row + 1) * per_row
                                                             : (uint64_t)e_;
            uint64_t c1 = (t1 - row * per_row) * CH;
            size_t n = (size_t)((c1 < inner ? c1 : inner) - c0);
            int64_t off[MAXI];
            nd_row(&it, row, off);
            const float *af = (const float *)(A + (off[0] + (int64_t)c0) * 4);
            const float *bf = (const float *)(B + (off[1] + (int64_t)c0) * 4);
            float *yf = (float *)(Y + (row * inner + c0) * 4);
            if (j_->nt) {
                binary_f32_nt(op, n, af, bf, yf);
            } else {
                binary_f32(op, n, af, bf, yf);
            }
            t = t1;
        }
        if (j_->nt) {
            cpu_nt_fence();
        }
        return;
    }
    for (uint64_t t = (uint64_t)b_; t < (uint64_t)e_; t++) {
        uint64_t row = t / per_row, c0 = (t % per_row) * CH;
        size_t n = inner - c0 < CH ? (size_t)(inner - c0) : CH;
        int64_t off[MAXI];
        nd_row(&it, row, off);
        const unsigned char *ap = A + (off[0] + (int64_t)c0 * ia) * (int64_t)sa;
        const unsigned char *bp = B + (off[1] + (int64_t)c0 * ib) * (int64_t)sa;
        unsigned char *yp = Y + (row * inner + c0) * so;
        if (dm == D_F32 && ti == WNN_FLOAT32 && to == WNN_FLOAT32 && !cmp &&
            !j_->nt && (ia == 0) != (ib == 0) &&
            binary_scalar_f32(op, n, (const float *)(ia ? ap : bp),
                              *(const float *)(ia ? bp : ap), !ia,
                              (float *)yp)) {
            /* one operand the same value along the row: no filled chunk
             * (RMSNorm's x^2, a scale by a scalar) */
        } else if (dm == D_F32) {
            float ab[CH], bb[CH], yb[CH];
            const float *af = (const float *)ap, *bf = (const float *)bp;
            if (ti != WNN_FLOAT32 || !ia) {
                load_chunk(dm, ti, ap, ia, n, ab);
                af = ab;
            }
            if (ti != WNN_FLOAT32 || !ib) {
                load_chunk(dm, ti, bp, ib, n, bb);
                bf = bb;
            }
            if (cmp) {
                compare_f32(op, n, af, bf, yp);
            } else if (to == WNN_FLOAT32 && j_->nt) {
                binary_f32_nt(op, n, af, bf, (float *)yp);
            } else if (to == WNN_FLOAT32) {
                binary_f32(op, n, af, bf, (float *)yp);
            } else {
                binary_f32(op, n, af, bf, yb);
                store_f32(to, yp, n, yb);
            }
        } else {
            int64_t ab[CH], bb[CH], yb[CH];
            load_chunk(dm, ti, ap, ia, n, ab);
            load_chunk(dm, ti, bp, ib, n, bb);
            if (dm == D_I64) {
                binary_i64(op, n, ab, bb, yb);
            } else {
                binary_u64(op, n, (uint64_t *)ab, (uint64_t *)bb,
                           (uint64_t *)yb);
            }
            store_i64(to, yp, n, yb);
        }
    }
    if (j_->nt) {
        cpu_nt_fence();
    }
}

wnn_status
cpu_binary(const cpu_call *k, wnn_error *err)
{
    (void)err;
    const wnn_desc *ins[2] = { &k->in_desc[0], &k->in_desc[1] };
    wnn_dtype ti = ins[0]->dtype, to = k->out_desc[0].dtype;
    bop op = bop_of(k->node->op);
    bool cmp = op >= B_EQ;
    domain dm = domain_of(ti);
    const nd it = k->lowered->u.bcast;
    const unsigned char *A = k->in[0], *B = k->in[1];
    uint64_t inner = it.shape[it.rank - 1];
    uint64_t rows = wnn_desc_elements(&k->out_desc[0]) / inner;
    uint64_t per_row = (inner + CH - 1) / CH;
    uint64_t tasks = rows * per_row;
    size_t sa = wnn_dtype_size(ti), so = wnn_dtype_size(to);
    unsigned char *Y = k->out[0];
    int ia = it.st[0][it.rank - 1] != 0, ib = it.st[1][it.rank - 1] != 0;
    uint64_t total = rows * inner;
    {
        binary_job j_ = {.op = op, .cmp = cmp, .dm = dm, .it = it,
                         .inner = inner, .per_row = per_row, .sa = sa,
                         .so = so, .A = A, .B = B, .Y = Y, .ia = ia, .ib = ib,
                         .ti = ti, .to = to,
                         .nt = dm == D_F32 && to == WNN_FLOAT32 && !cmp &&
                               (op == B_ADD || op == B_SUB || op == B_MUL ||
                                op == B_DIV) &&
                               total * so >= cpu_nt_bytes()};
        cpu_parallel_stream((int64_t)(tasks),
                            (inner < CH ? inner : CH) * (2 * sa + so),
                            threads_for(total), binary_body, &j_);
    }
    return WNN_OK;
}

typedef struct where_job {
    size_t es;
    nd it;
    uint64_t inner;
    uint64_t chunks;  /* tasks per row: pieces of WCH elements */
    int64_t s0;
    int64_t s1;
    int64_t s2;
    const uint8_t *C;
    const unsigned char *T;
    const unsigned char *F;
    unsigned char *Y;
} where_job;

#define WCH 8192 /* elements per task of a long row */

/* 4-byte values with the condition contiguous and each value contiguous
 * (1) or one element (0): a select the compiler vectorises per ISA */
#define WHERE32(NAME, ST, SF)                                                  \
    CPU_HOT_VOID(static, , NAME,                                               \
                 (const uint8_t *restrict c, const uint32_t *restrict t,       \
                  const uint32_t *restrict f, uint32_t *restrict y, uint64_t n), \
                 (c, t, f, y, n))                                              \
    {                                                                          \
        for (uint64_t i = 0; i < n; i++) {                                     \
            y[i] = c[i] ? t[(ST) ? i : 0] : f[(SF) ? i : 0];                   \
        }                                                                      \
    }
WHERE32(where32_11, 1, 1)
WHERE32(where32_01, 0, 1)
WHERE32(where32_10, 1, 0)

static void
where_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const where_job *j_ = p_;
    size_t es = j_->es;
    nd it = j_->it;
    int64_t s0 = j_->s0;
    int64_t s1 = j_->s1;
    int64_t s2 = j_->s2;
    const uint8_t *C = j_->C;
    const unsigned char *T = j_->T;
    const unsigned char *F = j_->F;
    unsigned char *Y = j_->Y;
    for (uint64_t task = (uint64_t)b_; task < (uint64_t)e_; task++) {
        const uint64_t row = task / j_->chunks, i0 = (task % j_->chunks) * WCH;
        const uint64_t inner = j_->inner - i0 < WCH ? j_->inner - i0 : WCH;
        int64_t off[MAXI];
        nd_row(&it, row, off);
        for (int k = 0; k < 3; k++) {
            off[k] += (int64_t)i0 * (k == 0 ? s0 : k == 1 ? s1 : s2);
        }
        if (es == 4 && s0 == 1 && (s1 | s2) >= 0 && s1 <= 1 && s2 <= 1 &&
            (s1 | s2)) {
            const uint32_t *t_ = (const uint32_t *)T + off[1];
            const uint32_t *f_ = (const uint32_t *)F + off[2];
            uint32_t *y_ = (uint32_t *)Y + row * j_->inner + i0;
            if (s1 && s2) {
                where32_11(C + off[0], t_, f_, y_, inner);
            } else if (s2) {
                where32_01(C + off[0], t_, f_, y_, inner);
            } else {
                where32_10(C + off[0], t_, f_, y_, inner);
            }
            continue;
        }
        /* a typed loop per element size: a select the compiler can
         * vectorise, not a memcpy call per element */
#define WHERE_ROW(T_)                                                      \
    {                                                                      \
        const T_ *t_ = (const T_ *)T + off[1], *f_ = (const T_ *)F + off[2]; \
        const uint8_t *c_ = C + off[0];                                    \
        T_ *y_ = (T_ *)Y + row * j_->inner + i0;                           \
        for (uint64_t i = 0; i < inner; i++) {                             \
            y_[i] = c_[(int64_t)i * s0] ? t_[(int64_t)i * s1]              \
                                        : f_[(int64_t)i * s2];             \
        }                                                                  \
    }                                                                      \
    break;
        switch (es) {
        case 1: WHERE_ROW(uint8_t)
        case 2: WHERE_ROW(uint16_t)
        case 4: WHERE_ROW(uint32_t)
        default: WHERE_ROW(uint64_t)
        }
#undef WHERE_ROW
    }
}

/* ---- where ------------------------------------------------------------ */
wnn_status
cpu_where(const cpu_call *k, wnn_error *err)
{
    (void)err;
    size_t es = wnn_dtype_size(k->out_desc[0].dtype);
    const nd it = k->lowered->u.bcast;
    uint64_t inner = it.shape[it.rank - 1];
    uint64_t rows = wnn_desc_elements(&k->out_desc[0]) / inner;
    int64_t s0 = it.st[0][it.rank - 1], s1 = it.st[1][it.rank - 1],
            s2 = it.st[2][it.rank - 1];
    const uint8_t *C = k->in[0];
    const unsigned char *T = k->in[1], *F = k->in[2];
    unsigned char *Y = k->out[0];
    const uint64_t chunks = (inner + WCH - 1) / WCH;
    {
        where_job j_ = {.es = es, .it = it, .inner = inner, .chunks = chunks,
                        .s0 = s0, .s1 = s1, .s2 = s2, .C = C, .T = T, .F = F,
                        .Y = Y};
        cpu_parallel_for((int64_t)(rows * chunks), threads_for(rows * inner),
                         where_body, &j_);
    }
    return WNN_OK;
}

/* ---- cast ------------------------------------------------------------- */
/* float -> integer: wnn_f32_to_int_sat / wnn_f32_to_u64_sat (wnn_numerics.h) */
typedef struct cast_job {
    wnn_dtype ti;
    wnn_dtype to;
    uint64_t total;
    size_t si;
    size_t so;
    domain di;
    domain dout;
    const unsigned char *x;
    unsigned char *y;
} cast_job;

static void
cast_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const cast_job *j_ = p_;
    wnn_dtype ti = j_->ti;
    wnn_dtype to = j_->to;
    uint64_t total = j_->total;
    size_t si = j_->si;
    size_t so = j_->so;
    domain di = j_->di;
    domain dout = j_->dout;
    const unsigned char *x = j_->x;
    unsigned char *y = j_->y;
    for (size_t c = (size_t)b_; c < (size_t)e_; c++) {
        uint64_t b = (uint64_t)c * CH;
        size_t n = total - b < CH ? (size_t)(total - b) : CH;
        const void *xp = x + b * si;
        void *yp = y + b * so;
        float fb[CH];
        int64_t ib[CH];
        if (di == D_F32) {
            load_f32(ti, xp, n, fb);
            if (dout == D_F32) {
                store_f32(to, yp, n, fb);
            } else if (to == WNN_UINT64) {
                for (size_t i = 0; i < n; i++) {
                    ((uint64_t *)yp)[i] = wnn_f32_to_u64_sat(fb[i]);
                }
            } else {
                for (size_t i = 0; i < n; i++) {
                    ib[i] = wnn_f32_to_int_sat(fb[i], (int)to);
                }
                store_i64(to, yp, n, ib);
            }
        } else {
            load_i64(ti, xp, n, ib);
            if (dout == D_F32) {
                for (size_t i = 0; i < n; i++) {
                    fb[i] = di == D_U64 ? (float)(uint64_t)ib[i] : (float)ib[i];
                }
                store_f32(to, yp, n, fb);
            } else {
                store_i64(to, yp, n, ib);
            }
        }
    }
}

wnn_status
cpu_cast(const cpu_call *k, wnn_error *err)
{
    (void)err;
    wnn_dtype ti = k->in_desc[0].dtype, to = k->out_desc[0].dtype;
    uint64_t total = wnn_desc_elements(&k->out_desc[0]);
    size_t si = wnn_dtype_size(ti), so = wnn_dtype_size(to);
    domain di = domain_of(ti), dout = domain_of(to);
    const unsigned char *x = k->in[0];
    unsigned char *y = k->out[0];
    size_t nc = n_chunks(total);
    if (ti == to) {
        memcpy(y, x, total * si);
        return WNN_OK;
    }
    {
        cast_job j_ = {.ti = ti, .to = to, .total = total, .si = si, .so = so,
                       .di = di, .dout = dout, .x = x, .y = y};
        cpu_parallel_stream((int64_t)(nc), (uint64_t)CH * (si + so), threads_for(total),
                            cast_body, &j_);
    }
    return WNN_OK;
}

/* ---- identity, reshape ------------------------------------------------ */
wnn_status
cpu_copy(const cpu_call *k, wnn_error *err)
{
    (void)err;
    if (k->out[0] != k->in[0]) {
        cpu_parallel_copy(k->out[0], k->in[0], wnn_desc_bytes(&k->out_desc[0]));
    }
    return WNN_OK;
}
