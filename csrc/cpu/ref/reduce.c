/* reduce.c -- CPU kernels of the reduction family: the ten reduce* ops,
 * argMin/argMax and cumulativeSum.
 *
 * Domains: float32 and float16 are computed in double (loaded exactly,
 * accumulated in double, rounded once to the output type: float16 through a
 * round-to-odd float32 so that the rounding is correct), integers in 64-bit
 * two's complement (uint64 arithmetic, so sums and products wrap around
 * modulo 2^64 and the stored low bits are the wrapped result of the output
 * type).
 *
 * Layout: the input's dimensions are coalesced into alternating groups of
 * kept and reduced dimensions (size-1 dimensions dropped).  When the
 * innermost group is reduced, each output reduces contiguous runs
 * ("E1"); when it is kept, each output row accumulates contiguous input rows
 * element-wise ("E2").  Both inner loops are contiguous and vectorisable.
 * Work is split over outputs; when there are too few output blocks for the
 * threads, the reduced index space is split instead and partial results are
 * combined.
 *
 * Documented semantics (the spec leaves them open):
 *   reduceMax/reduceMin   NaN propagates (any NaN gives NaN).
 *   reduceSum/L1/SumSquare/Product on integers wrap around; reduceL1 of
 *                         the most negative value wraps like abs().
 *   reduceLogSumExp       computed as m + log(sum(exp(x - m))), m the max;
 *                         +-Inf and NaN maxima give m itself.
 *   argMin/argMax         ties give the first (smallest) index; NaN counts as
 *                         greater and smaller than everything, so the first
 *                         NaN's index is returned (as NumPy).
 *   cumulativeSum         float sums are running sums in double; integers
 *                         wrap around. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../cpu.h"

#define CH 1024 /* elements per chunk */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(WNN_NO_CLONES)
#define HOT __attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default")))
#else
#define HOT
#endif

static int
threads_for(uint64_t total)
{
    return total >= CPU_PARALLEL_MIN ? cpu_num_threads() : 1;
}

static bool
is_float_type(wnn_dtype t)
{
    return t == WNN_FLOAT32 || t == WNN_FLOAT16;
}

static bool
is_signed_type(wnn_dtype t)
{
    return t == WNN_INT8 || t == WNN_INT32 || t == WNN_INT64;
}

/* ---- loading and storing ---------------------------------------------- */
/* float16 -> float32, exact (F. Giesen's branch-light conversion). */
static inline float
h2f(uint16_t h)
{
    union {
        uint32_t u;
        float f;
    } o, magic = { .u = 113u << 23 };
    uint32_t shifted = (uint32_t)(h & 0x7fff) << 13;
    uint32_t exp = shifted & (0x7c00u << 13);
    o.u = shifted + ((127u - 15u) << 23);
    if (exp == (0x7c00u << 13)) {
        o.u += (128u - 16u) << 23; /* Inf / NaN */
    } else if (exp == 0) {
        o.u += 1u << 23; /* zero / subnormal */
        o.f -= magic.f;
    }
    o.u |= (uint32_t)(h & 0x8000) << 16;
    return o.f;
}

/* double -> float16 with one correct rounding (to nearest even): round to
 * float32 by round-to-odd (24 bits >= 11 + 2), then float32 -> float16. */
static inline uint16_t
d2h(double d)
{
    float f = (float)d;
    if ((double)f != d && d == d) {
        if (fabs((double)f) > fabs(d)) {
            f = nextafterf(f, 0.0f);
        }
        uint32_t u;
        memcpy(&u, &f, 4);
        u |= 1;
        memcpy(&f, &u, 4);
    }
    return wnn_f32_to_f16(f);
}

/* n elements at element offset `off` of data of type t -> double */
static void
load_d(wnn_dtype t, const void *base, uint64_t off, size_t n, double *d)
{
    if (t == WNN_FLOAT32) {
        const float *p = (const float *)base + off;
        for (size_t i = 0; i < n; i++) {
            d[i] = p[i];
        }
    } else {
        const uint16_t *p = (const uint16_t *)base + off;
        for (size_t i = 0; i < n; i++) {
            d[i] = h2f(p[i]);
        }
    }
}

static void
store_d(wnn_dtype t, void *base, uint64_t off, size_t n, const double *s)
{
    if (t == WNN_FLOAT32) {
        float *p = (float *)base + off;
        for (size_t i = 0; i < n; i++) {
            p[i] = (float)s[i];
        }
    } else {
        uint16_t *p = (uint16_t *)base + off;
        for (size_t i = 0; i < n; i++) {
            p[i] = d2h(s[i]);
        }
    }
}

/* integers -> uint64 (signed types sign-extended) */
static void
load_u(wnn_dtype t, const void *base, uint64_t off, size_t n, uint64_t *d)
{
    switch (t) {
    case WNN_INT32: {
        const int32_t *p = (const int32_t *)base + off;
        for (size_t i = 0; i < n; i++) d[i] = (uint64_t)(int64_t)p[i];
        break;
    }
    case WNN_UINT32: {
        const uint32_t *p = (const uint32_t *)base + off;
        for (size_t i = 0; i < n; i++) d[i] = p[i];
        break;
    }
    case WNN_INT64:
    case WNN_UINT64:
        memcpy(d, (const uint64_t *)base + off, n * 8);
        break;
    case WNN_INT8: {
        const int8_t *p = (const int8_t *)base + off;
        for (size_t i = 0; i < n; i++) d[i] = (uint64_t)(int64_t)p[i];
        break;
    }
    case WNN_UINT8: {
        const uint8_t *p = (const uint8_t *)base + off;
        for (size_t i = 0; i < n; i++) d[i] = p[i];
        break;
    }
    default:
        memset(d, 0, n * 8);
        break;
    }
}

/* uint64 -> integers, keeping the low bits (wrap-around) */
static void
store_u(wnn_dtype t, void *base, uint64_t off, size_t n, const uint64_t *s)
{
    switch (t) {
    case WNN_INT32:
    case WNN_UINT32: {
        uint32_t *p = (uint32_t *)base + off;
        for (size_t i = 0; i < n; i++) p[i] = (uint32_t)s[i];
        break;
    }
    case WNN_INT64:
    case WNN_UINT64:
        memcpy((uint64_t *)base + off, s, n * 8);
        break;
    case WNN_INT8:
    case WNN_UINT8: {
        uint8_t *p = (uint8_t *)base + off;
        for (size_t i = 0; i < n; i++) p[i] = (uint8_t)s[i];
        break;
    }
    default:
        break;
    }
}

/* A chunk buffer: doubles or 64-bit integers. */
typedef union cbuf {
    double d[CH];
    uint64_t u[CH];
} cbuf;

static void
load_any(wnn_dtype t, const void *base, uint64_t off, size_t n, cbuf *b)
{
    if (is_float_type(t)) {
        load_d(t, base, off, n, b->d);
    } else {
        load_u(t, base, off, n, b->u);
    }
}

/* ---- reduction passes -------------------------------------------------- */
/* acc = acc (+) f(x) over the reduced values */
typedef enum pass { P_SUM, P_ABS, P_SQ, P_EXP, P_PROD, P_MAX, P_MIN } pass;

#define LANES 8

static double
init_d(pass p)
{
    switch (p) {
    case P_PROD: return 1.0;
    case P_MAX: return -INFINITY;
    case P_MIN: return INFINITY;
    default: return -0.0; /* x + -0 == x for every x, -0 included */
    }
}

static uint64_t
init_u(pass p, bool sgn)
{
    switch (p) {
    case P_PROD: return 1;
    case P_MAX: return sgn ? (uint64_t)INT64_MIN : 0;
    case P_MIN: return sgn ? (uint64_t)INT64_MAX : UINT64_MAX;
    default: return 0;
    }
}

/* NaN-propagating max / min: a NaN candidate always wins, a NaN
 * accumulator is never replaced. */
#define MAXD(acc, x) (((x) > (acc) || (x) != (x)) ? (x) : (acc))
#define MIND(acc, x) (((x) < (acc) || (x) != (x)) ? (x) : (acc))

static inline double
combine_d(pass p, double a, double b)
{
    switch (p) {
    case P_PROD: return a * b;
    case P_MAX: return MAXD(a, b);
    case P_MIN: return MIND(a, b);
    default: return a + b;
    }
}

static inline uint64_t
combine_u(pass p, bool sgn, uint64_t a, uint64_t b)
{
    switch (p) {
    case P_PROD: return a * b;
    case P_MAX:
        return sgn ? ((int64_t)b > (int64_t)a ? b : a) : (b > a ? b : a);
    case P_MIN:
        return sgn ? ((int64_t)b < (int64_t)a ? b : a) : (b < a ? b : a);
    default: return a + b;
    }
}

/* Scalar reduction of a contiguous run into acc, with LANES independent
 * partial results so that the loops vectorise. */
static HOT double
run_d(pass p, const double *x, size_t n, double acc, double shift)
{
    double s[LANES];
    double z = init_d(p);
    for (int j = 0; j < LANES; j++) {
        s[j] = z;
    }
    size_t i = 0, nv = n / LANES * LANES;
    switch (p) {
    case P_SUM:
        for (; i < nv; i += LANES)
            for (int j = 0; j < LANES; j++) s[j] += x[i + j];
        for (; i < n; i++) s[0] += x[i];
        break;
    case P_ABS:
        for (; i < nv; i += LANES)
            for (int j = 0; j < LANES; j++) s[j] += fabs(x[i + j]);
        for (; i < n; i++) s[0] += fabs(x[i]);
        break;
    case P_SQ:
        for (; i < nv; i += LANES)
            for (int j = 0; j < LANES; j++) s[j] += x[i + j] * x[i + j];
        for (; i < n; i++) s[0] += x[i] * x[i];
        break;
    case P_EXP:
        for (; i < n; i++) s[i % LANES] += exp(x[i] - shift);
        break;
    case P_PROD:
        for (; i < nv; i += LANES)
            for (int j = 0; j < LANES; j++) s[j] *= x[i + j];
        for (; i < n; i++) s[0] *= x[i];
        break;
    case P_MAX:
        for (; i < nv; i += LANES)
            for (int j = 0; j < LANES; j++) s[j] = MAXD(s[j], x[i + j]);
        for (; i < n; i++) s[0] = MAXD(s[0], x[i]);
        break;
    case P_MIN:
        for (; i < nv; i += LANES)
            for (int j = 0; j < LANES; j++) s[j] = MIND(s[j], x[i + j]);
        for (; i < n; i++) s[0] = MIND(s[0], x[i]);
        break;
    }
    for (int j = 0; j < LANES; j++) {
        acc = combine_d(p, acc, s[j]);
    }
    return acc;
}

static HOT uint64_t
run_u(pass p, bool sgn, const uint64_t *x, size_t n, uint64_t acc)
{
    switch (p) {
    case P_SUM:
        for (size_t i = 0; i < n; i++) acc += x[i];
        break;
    case P_ABS:
        if (sgn) {
            for (size_t i = 0; i < n; i++)
                acc += (int64_t)x[i] < 0 ? 0 - x[i] : x[i];
        } else {
            for (size_t i = 0; i < n; i++) acc += x[i];
        }
        break;
    case P_SQ:
        for (size_t i = 0; i < n; i++) acc += x[i] * x[i];
        break;
    case P_PROD:
        for (size_t i = 0; i < n; i++) acc *= x[i];
        break;
    case P_MAX:
        if (sgn) {
            int64_t m = (int64_t)acc;
            for (size_t i = 0; i < n; i++)
                m = (int64_t)x[i] > m ? (int64_t)x[i] : m;
            acc = (uint64_t)m;
        } else {
            for (size_t i = 0; i < n; i++) acc = x[i] > acc ? x[i] : acc;
        }
        break;
    case P_MIN:
        if (sgn) {
            int64_t m = (int64_t)acc;
            for (size_t i = 0; i < n; i++)
                m = (int64_t)x[i] < m ? (int64_t)x[i] : m;
            acc = (uint64_t)m;
        } else {
            for (size_t i = 0; i < n; i++) acc = x[i] < acc ? x[i] : acc;
        }
        break;
    case P_EXP:
        break;
    }
    return acc;
}

/* Element-wise: acc[i] = acc[i] (+) f(x[i]). */
static HOT void
row_d(pass p, const double *x, size_t n, double *acc, const double *shift)
{
    switch (p) {
    case P_SUM: for (size_t i = 0; i < n; i++) acc[i] += x[i]; break;
    case P_ABS: for (size_t i = 0; i < n; i++) acc[i] += fabs(x[i]); break;
    case P_SQ: for (size_t i = 0; i < n; i++) acc[i] += x[i] * x[i]; break;
    case P_EXP:
        for (size_t i = 0; i < n; i++) acc[i] += exp(x[i] - shift[i]);
        break;
    case P_PROD: for (size_t i = 0; i < n; i++) acc[i] *= x[i]; break;
    case P_MAX: for (size_t i = 0; i < n; i++) acc[i] = MAXD(acc[i], x[i]); break;
    case P_MIN: for (size_t i = 0; i < n; i++) acc[i] = MIND(acc[i], x[i]); break;
    }
}

static HOT void
row_u(pass p, bool sgn, const uint64_t *x, size_t n, uint64_t *acc)
{
    switch (p) {
    case P_SUM: for (size_t i = 0; i < n; i++) acc[i] += x[i]; break;
    case P_ABS:
        if (sgn) {
            for (size_t i = 0; i < n; i++)
                acc[i] += (int64_t)x[i] < 0 ? 0 - x[i] : x[i];
        } else {
            for (size_t i = 0; i < n; i++) acc[i] += x[i];
        }
        break;
    case P_SQ: for (size_t i = 0; i < n; i++) acc[i] += x[i] * x[i]; break;
    case P_PROD: for (size_t i = 0; i < n; i++) acc[i] *= x[i]; break;
    case P_MAX:
    case P_MIN:
        for (size_t i = 0; i < n; i++) acc[i] = combine_u(p, sgn, acc[i], x[i]);
        break;
    case P_EXP:
        break;
    }
}

/* ---- geometry ----------------------------------------------------------- */
typedef struct geom {
    uint32_t nk, nr;                /* kept / reduced groups, outer first */
    uint64_t ks[WNN_MAX_RANK], kst[WNN_MAX_RANK];
    uint64_t rs[WNN_MAX_RANK], rst[WNN_MAX_RANK];
    uint64_t O, R;                  /* output count, reduced count        */
    bool inner_red;                 /* innermost group reduced (E1)       */
    uint64_t kin;                   /* E2: innermost kept group's size    */
} geom;

static void
geom_make(geom *g, const wnn_desc *in, uint32_t mask)
{
    uint64_t sz[WNN_MAX_RANK], st[WNN_MAX_RANK];
    bool red[WNN_MAX_RANK];
    uint32_t m = 0;
    for (uint32_t d = 0; d < in->rank; d++) {
        if (in->shape[d] == 1) {
            continue;
        }
        bool r = (mask >> d & 1u) != 0;
        if (m > 0 && red[m - 1] == r) {
            sz[m - 1] *= in->shape[d];
        } else {
            sz[m] = in->shape[d];
            red[m] = r;
            m++;
        }
    }
    uint64_t s = 1;
    for (uint32_t j = m; j-- > 0;) {
        st[j] = s;
        s *= sz[j];
    }
    g->nk = g->nr = 0;
    g->O = g->R = 1;
    for (uint32_t j = 0; j < m; j++) {
        if (red[j]) {
            g->rs[g->nr] = sz[j];
            g->rst[g->nr++] = st[j];
            g->R *= sz[j];
        } else {
            g->ks[g->nk] = sz[j];
            g->kst[g->nk++] = st[j];
            g->O *= sz[j];
        }
    }
    g->inner_red = m > 0 && red[m - 1];
    g->kin = g->inner_red ? 1 : (g->nk ? g->ks[g->nk - 1] : 1);
}

/* offset of flat index `flat` over groups [0, n) of sizes / strides */
static uint64_t
group_offset(uint64_t flat, uint32_t n, const uint64_t *size,
             const uint64_t *stride)
{
    uint64_t off = 0;
    for (uint32_t j = n; j-- > 0;) {
        off += flat % size[j] * stride[j];
        flat /= size[j];
    }
    return off;
}

/* an odometer over groups [0, n), for the reduced index space */
typedef struct odo {
    uint32_t n;
    const uint64_t *size, *stride;
    uint64_t idx[WNN_MAX_RANK];
    uint64_t off;
} odo;

static void
odo_init(odo *o, uint32_t n, const uint64_t *size, const uint64_t *stride,
         uint64_t flat)
{
    o->n = n;
    o->size = size;
    o->stride = stride;
    o->off = 0;
    for (uint32_t j = n; j-- > 0;) {
        o->idx[j] = flat % size[j];
        flat /= size[j];
        o->off += o->idx[j] * stride[j];
    }
}

static inline void
odo_next(odo *o)
{
    for (uint32_t j = o->n; j-- > 0;) {
        o->off += o->stride[j];
        if (++o->idx[j] < o->size[j]) {
            return;
        }
        o->off -= o->stride[j] * o->size[j];
        o->idx[j] = 0;
    }
}

/* ---- the reduce engine -------------------------------------------------- */
typedef enum rop {
    R_L1, R_L2, R_LOG_SUM, R_LOG_SUM_EXP, R_MAX, R_MEAN, R_MIN, R_PRODUCT,
    R_SUM, R_SUM_SQUARE
} rop;

typedef struct rctx {
    const geom *g;
    wnn_dtype t;
    bool fl, sgn;
    const void *x;
    void *y;
    rop op;
    uint64_t items, item_len, kchunks;
} rctx;

/* An item is a block of at most CH outputs that are contiguous in the
 * output: E1, outputs [it * item_len, ...); E2, a chunk of one kept row. */
static void
item_range(const rctx *c, uint64_t it, uint64_t *o0, size_t *len)
{
    const geom *g = c->g;
    if (g->inner_red) {
        *o0 = it * c->item_len;
        uint64_t left = g->O - *o0;
        *len = (size_t)(left < c->item_len ? left : c->item_len);
    } else {
        uint64_t oo = it / c->kchunks, kc = it % c->kchunks;
        uint64_t k0 = kc * CH;
        *o0 = oo * g->kin + k0;
        uint64_t left = g->kin - k0;
        *len = (size_t)(left < CH ? left : CH);
    }
}

/* Accumulate pass p into acc[0, len) for item it over the reduced flat
 * range [a, b). */
static void
accumulate(const rctx *c, pass p, uint64_t it, uint64_t a, uint64_t b,
           cbuf *acc, const double *shift)
{
    const geom *g = c->g;
    uint64_t o0;
    size_t len;
    cbuf buf;
    odo od;
    item_range(c, it, &o0, &len);
    if (g->inner_red) {
        uint64_t rin = g->rs[g->nr - 1];
        for (size_t l = 0; l < len; l++) {
            uint64_t base = group_offset(o0 + l, g->nk, g->ks, g->kst);
            uint64_t pos = a, i0 = a % rin;
            odo_init(&od, g->nr - 1, g->rs, g->rst, a / rin);
            while (pos < b) {
                uint64_t run = rin - i0 < b - pos ? rin - i0 : b - pos;
                uint64_t off = base + od.off + i0;
                for (uint64_t c0 = 0; c0 < run; c0 += CH) {
                    size_t n = (size_t)(run - c0 < CH ? run - c0 : CH);
                    load_any(c->t, c->x, off + c0, n, &buf);
                    if (c->fl) {
                        acc->d[l] = run_d(p, buf.d, n, acc->d[l],
                                          shift ? shift[l] : 0.0);
                    } else {
                        acc->u[l] = run_u(p, c->sgn, buf.u, n, acc->u[l]);
                    }
                }
                pos += run;
                i0 = 0;
                odo_next(&od);
            }
        }
    } else {
        uint64_t oo = o0 / g->kin, k0 = o0 % g->kin;
        uint32_t nko = g->nk ? g->nk - 1 : 0;
        uint64_t base = group_offset(oo, nko, g->ks, g->kst) + k0;
        odo_init(&od, g->nr, g->rs, g->rst, a);
        for (uint64_t r = a; r < b; r++) {
            load_any(c->t, c->x, base + od.off, len, &buf);
            if (c->fl) {
                row_d(p, buf.d, len, acc->d, shift);
            } else {
                row_u(p, c->sgn, buf.u, len, acc->u);
            }
            odo_next(&od);
        }
    }
}

static pass
pass_of(rop op)
{
    switch (op) {
    case R_L1: return P_ABS;
    case R_L2: case R_SUM_SQUARE: return P_SQ;
    case R_LOG_SUM_EXP: case R_MAX: return P_MAX;
    case R_MIN: return P_MIN;
    case R_PRODUCT: return P_PROD;
    default: return P_SUM;
    }
}

static void
acc_init(const rctx *c, pass p, cbuf *acc, size_t len)
{
    if (c->fl) {
        double z = init_d(p);
        for (size_t i = 0; i < len; i++) acc->d[i] = z;
    } else {
        uint64_t z = init_u(p, c->sgn);
        for (size_t i = 0; i < len; i++) acc->u[i] = z;
    }
}

/* LogSumExp: the shift of exp() is the max when it is finite. */
static void
lse_shift(const cbuf *m, size_t len, double *shift)
{
    for (size_t i = 0; i < len; i++) {
        shift[i] = isfinite(m->d[i]) ? m->d[i] : 0.0;
    }
}

/* Final values of item it from acc (and m, the maxima for LogSumExp);
 * stores them in the output. */
static void
finish(const rctx *c, uint64_t it, cbuf *acc, const cbuf *m)
{
    uint64_t o0;
    size_t len;
    item_range(c, it, &o0, &len);
    if (!c->fl) {
        store_u(c->t, c->y, o0, len, acc->u);
        return;
    }
    double *v = acc->d, R = (double)c->g->R;
    switch (c->op) {
    case R_L2: for (size_t i = 0; i < len; i++) v[i] = sqrt(v[i]); break;
    case R_LOG_SUM: for (size_t i = 0; i < len; i++) v[i] = log(v[i]); break;
    case R_MEAN: for (size_t i = 0; i < len; i++) v[i] = v[i] / R; break;
    case R_LOG_SUM_EXP:
        for (size_t i = 0; i < len; i++) {
            double mx = m->d[i];
            v[i] = isfinite(mx) ? mx + log(v[i]) : mx;
        }
        break;
    default: break;
    }
    store_d(c->t, c->y, o0, len, v);
}

static rop
rop_of(wnn_op op)
{
    switch (op) {
    case WNN_OP_REDUCE_L1: return R_L1;
    case WNN_OP_REDUCE_L2: return R_L2;
    case WNN_OP_REDUCE_LOG_SUM: return R_LOG_SUM;
    case WNN_OP_REDUCE_LOG_SUM_EXP: return R_LOG_SUM_EXP;
    case WNN_OP_REDUCE_MAX: return R_MAX;
    case WNN_OP_REDUCE_MEAN: return R_MEAN;
    case WNN_OP_REDUCE_MIN: return R_MIN;
    case WNN_OP_REDUCE_PRODUCT: return R_PRODUCT;
    case WNN_OP_REDUCE_SUM_SQUARE: return R_SUM_SQUARE;
    default: return R_SUM;
    }
}

/* One pass of item `it` with the reduced range split over T threads;
 * partial results are combined in thread order into acc. */
static wnn_status
split_pass(const rctx *c, pass p, uint64_t it, int T, cbuf *parts, cbuf *acc,
           const double *shift)
{
    uint64_t o0;
    size_t len;
    item_range(c, it, &o0, &len);
    uint64_t R = c->g->R;
#pragma omp parallel for schedule(static) num_threads(T)
    for (int t = 0; t < T; t++) {
        uint64_t a = R * (uint64_t)t / (uint64_t)T;
        uint64_t b = R * (uint64_t)(t + 1) / (uint64_t)T;
        acc_init(c, p, &parts[t], len);
        accumulate(c, p, it, a, b, &parts[t], shift);
    }
    acc_init(c, p, acc, len);
    for (int t = 0; t < T; t++) {
        for (size_t i = 0; i < len; i++) {
            if (c->fl) {
                acc->d[i] = combine_d(p, acc->d[i], parts[t].d[i]);
            } else {
                acc->u[i] = combine_u(p, c->sgn, acc->u[i], parts[t].u[i]);
            }
        }
    }
    return WNN_OK;
}

wnn_status
cpu_reduce(const cpu_call *k, wnn_error *err)
{
    const wnn_reduce_options *o = k->options;
    const wnn_desc *in = &k->in_desc[0];
    geom g;
    geom_make(&g, in, o->axes_mask);
    rctx c = { .g = &g, .t = in->dtype, .fl = is_float_type(in->dtype),
               .sgn = is_signed_type(in->dtype), .x = k->in[0],
               .y = k->out[0], .op = rop_of(k->node->op) };
    uint64_t total = g.O * g.R; /* the input's element count */
    int T = threads_for(total);
    if (g.inner_red) {
        uint64_t per = g.O / ((uint64_t)T * 4);
        c.item_len = per < 1 ? 1 : per > CH ? CH : per;
        c.items = (g.O + c.item_len - 1) / c.item_len;
    } else {
        c.kchunks = (g.kin + CH - 1) / CH;
        c.items = g.O / g.kin * c.kchunks;
    }
    pass p = pass_of(c.op);
    bool lse = c.op == R_LOG_SUM_EXP;

    if (T > 1 && c.items < (uint64_t)T && g.R >= (uint64_t)T * 1024) {
        /* few output blocks, long reductions: split the reduced space */
        cbuf *parts = malloc(sizeof(cbuf) * (size_t)T);
        cbuf *acc = malloc(sizeof(cbuf) * 2);
        double *shift = malloc(sizeof(double) * CH);
        if (!parts || !acc || !shift) {
            free(parts);
            free(acc);
            free(shift);
            return cpu_fail(k, err, "out of memory");
        }
        for (uint64_t it = 0; it < c.items; it++) {
            split_pass(&c, p, it, T, parts, &acc[0], NULL);
            if (lse) {
                uint64_t o0;
                size_t len;
                item_range(&c, it, &o0, &len);
                lse_shift(&acc[0], len, shift);
                split_pass(&c, P_EXP, it, T, parts, &acc[1], shift);
                finish(&c, it, &acc[1], &acc[0]);
            } else {
                finish(&c, it, &acc[0], NULL);
            }
        }
        free(parts);
        free(acc);
        free(shift);
        return WNN_OK;
    }

#pragma omp parallel for schedule(static) num_threads(T)
    for (uint64_t it = 0; it < c.items; it++) {
        cbuf acc, m;
        double shift[CH];
        uint64_t o0;
        size_t len;
        item_range(&c, it, &o0, &len);
        if (lse) {
            acc_init(&c, P_MAX, &m, len);
            accumulate(&c, P_MAX, it, 0, g.R, &m, NULL);
            lse_shift(&m, len, shift);
            acc_init(&c, P_EXP, &acc, len);
            accumulate(&c, P_EXP, it, 0, g.R, &acc, shift);
            finish(&c, it, &acc, &m);
        } else {
            acc_init(&c, p, &acc, len);
            accumulate(&c, p, it, 0, g.R, &acc, NULL);
            finish(&c, it, &acc, NULL);
        }
    }
    return WNN_OK;
}

/* ---- argMin / argMax ---------------------------------------------------- */
/* "x is a better candidate than the current best b": strictly greater (or
 * smaller), so ties keep the first index; a NaN beats any number and no
 * later value beats a NaN. */
#define BETTER_MAX_D(x, b) ((x) > (b) || ((x) != (x) && (b) == (b)))
#define BETTER_MIN_D(x, b) ((x) < (b) || ((x) != (x) && (b) == (b)))

typedef struct actx {
    wnn_dtype t;
    bool fl, sgn, is_max;
    const void *x;
    uint64_t outer, n, inner, kchunks;
} actx;

/* state of one output: best value (double or 64-bit integer) and index */
typedef struct abest {
    cbuf v;
    int64_t idx[CH];
} abest;

static inline bool
better(const actx *c, const cbuf *x, size_t i, const cbuf *b, size_t j)
{
    if (c->fl) {
        return c->is_max ? BETTER_MAX_D(x->d[i], b->d[j])
                         : BETTER_MIN_D(x->d[i], b->d[j]);
    }
    if (c->sgn) {
        int64_t xv = (int64_t)x->u[i], bv = (int64_t)b->u[j];
        return c->is_max ? xv > bv : xv < bv;
    }
    return c->is_max ? x->u[i] > b->u[j] : x->u[i] < b->u[j];
}

static void
abest_init(const actx *c, abest *s, size_t len, int64_t first)
{
    for (size_t i = 0; i < len; i++) {
        if (c->fl) {
            s->v.d[i] = c->is_max ? -INFINITY : INFINITY;
        } else if (c->sgn) {
            s->v.u[i] = c->is_max ? (uint64_t)INT64_MIN : (uint64_t)INT64_MAX;
        } else {
            s->v.u[i] = c->is_max ? 0 : UINT64_MAX;
        }
        s->idx[i] = first;
    }
}

/* inner == 1: scan x[base + a .. base + b) into s slot 0 */
static HOT void
arg_run(const actx *c, uint64_t base, uint64_t a, uint64_t b, abest *s,
        size_t slot)
{
    cbuf buf;
    for (uint64_t j0 = a; j0 < b; j0 += CH) {
        size_t n = (size_t)(b - j0 < CH ? b - j0 : CH);
        load_any(c->t, c->x, base + j0, n, &buf);
        for (size_t i = 0; i < n; i++) {
            if (better(c, &buf, i, &s->v, slot)) {
                if (c->fl) {
                    s->v.d[slot] = buf.d[i];
                } else {
                    s->v.u[slot] = buf.u[i];
                }
                s->idx[slot] = (int64_t)(j0 + i);
            }
        }
    }
}

/* inner > 1: rows j in [a, b) of len elements at base + j * inner */
static HOT void
arg_rows(const actx *c, uint64_t base, size_t len, uint64_t a, uint64_t b,
         abest *s)
{
    cbuf buf;
    for (uint64_t j = a; j < b; j++) {
        load_any(c->t, c->x, base + j * c->inner, len, &buf);
        if (c->fl) {
            double *bv = s->v.d;
            int64_t *bi = s->idx;
            if (c->is_max) {
                for (size_t i = 0; i < len; i++) {
                    bool u = BETTER_MAX_D(buf.d[i], bv[i]);
                    bv[i] = u ? buf.d[i] : bv[i];
                    bi[i] = u ? (int64_t)j : bi[i];
                }
            } else {
                for (size_t i = 0; i < len; i++) {
                    bool u = BETTER_MIN_D(buf.d[i], bv[i]);
                    bv[i] = u ? buf.d[i] : bv[i];
                    bi[i] = u ? (int64_t)j : bi[i];
                }
            }
        } else {
            for (size_t i = 0; i < len; i++) {
                if (better(c, &buf, i, &s->v, i)) {
                    s->v.u[i] = buf.u[i];
                    s->idx[i] = (int64_t)j;
                }
            }
        }
    }
}

/* item it -> input base offset, output offset, length */
static void
arg_item(const actx *c, uint64_t it, uint64_t *base, uint64_t *out,
         size_t *len)
{
    if (c->inner == 1) {
        *base = it * c->n;
        *out = it;
        *len = 1;
        return;
    }
    uint64_t oo = it / c->kchunks, k0 = it % c->kchunks * CH;
    uint64_t left = c->inner - k0;
    *base = oo * c->n * c->inner + k0;
    *out = oo * c->inner + k0;
    *len = (size_t)(left < CH ? left : CH);
}

static void
arg_scan(const actx *c, uint64_t it, uint64_t a, uint64_t b, abest *s)
{
    uint64_t base, out;
    size_t len;
    arg_item(c, it, &base, &out, &len);
    abest_init(c, s, len, (int64_t)a);
    if (c->inner == 1) {
        arg_run(c, base, a, b, s, 0);
    } else {
        arg_rows(c, base, len, a, b, s);
    }
}

static void
arg_store(wnn_dtype to, void *y, uint64_t out, size_t len, const int64_t *idx)
{
    if (to == WNN_INT64) {
        memcpy((int64_t *)y + out, idx, len * 8);
    } else {
        int32_t *p = (int32_t *)y + out;
        for (size_t i = 0; i < len; i++) {
            p[i] = (int32_t)idx[i];
        }
    }
}

wnn_status
cpu_arg_min_max(const cpu_call *k, wnn_error *err)
{
    const wnn_arg_min_max_options *o = k->options;
    const wnn_desc *in = &k->in_desc[0];
    actx c = { .t = in->dtype, .fl = is_float_type(in->dtype),
               .sgn = is_signed_type(in->dtype),
               .is_max = k->node->op == WNN_OP_ARG_MAX, .x = k->in[0],
               .outer = 1, .inner = 1 };
    for (uint32_t d = 0; d < in->rank; d++) {
        if (d < o->axis) {
            c.outer *= in->shape[d];
        } else if (d > o->axis) {
            c.inner *= in->shape[d];
        }
    }
    c.n = in->shape[o->axis];
    c.kchunks = (c.inner + CH - 1) / CH;
    uint64_t items = c.inner == 1 ? c.outer : c.outer * c.kchunks;
    wnn_dtype to = k->out_desc[0].dtype;
    void *y = k->out[0];
    int T = threads_for(c.outer * c.n * c.inner);

    if (T > 1 && items < (uint64_t)T && c.n >= (uint64_t)T * 1024) {
        abest *parts = malloc(sizeof(abest) * (size_t)(T + 1));
        if (!parts) {
            return cpu_fail(k, err, "out of memory");
        }
        for (uint64_t it = 0; it < items; it++) {
            uint64_t base, out;
            size_t len;
            arg_item(&c, it, &base, &out, &len);
#pragma omp parallel for schedule(static) num_threads(T)
            for (int t = 0; t < T; t++) {
                uint64_t a = c.n * (uint64_t)t / (uint64_t)T;
                uint64_t b = c.n * (uint64_t)(t + 1) / (uint64_t)T;
                arg_scan(&c, it, a, b, &parts[t]);
            }
            /* in thread order, so the first of equal values wins */
            abest *r = &parts[0];
            for (int t = 1; t < T; t++) {
                for (size_t i = 0; i < len; i++) {
                    if (better(&c, &parts[t].v, i, &r->v, i)) {
                        if (c.fl) {
                            r->v.d[i] = parts[t].v.d[i];
                        } else {
                            r->v.u[i] = parts[t].v.u[i];
                        }
                        r->idx[i] = parts[t].idx[i];
                    }
                }
            }
            arg_store(to, y, out, len, r->idx);
        }
        free(parts);
        return WNN_OK;
    }

    if (c.inner == 1) {
        /* one output per outer row: blocks of CH rows per task */
        uint64_t blocks = (c.outer + CH - 1) / CH;
#pragma omp parallel for schedule(static) num_threads(T)
        for (uint64_t bk = 0; bk < blocks; bk++) {
            abest s;
            uint64_t r0 = bk * CH;
            size_t len = (size_t)(c.outer - r0 < CH ? c.outer - r0 : CH);
            abest_init(&c, &s, len, 0);
            for (size_t l = 0; l < len; l++) {
                arg_run(&c, (r0 + l) * c.n, 0, c.n, &s, l);
            }
            arg_store(to, y, r0, len, s.idx);
        }
        return WNN_OK;
    }
#pragma omp parallel for schedule(static) num_threads(T)
    for (uint64_t it = 0; it < items; it++) {
        abest s;
        uint64_t base, out;
        size_t len;
        arg_item(&c, it, &base, &out, &len);
        arg_scan(&c, it, 0, c.n, &s);
        arg_store(to, y, out, len, s.idx);
    }
    return WNN_OK;
}

/* ---- cumulativeSum ------------------------------------------------------ */
typedef struct sctx {
    wnn_dtype t;
    bool fl, exclusive, reversed;
    const void *x;
    void *y;
    uint64_t outer, n, inner, kchunks;
} sctx;

/* Scan order position j -> index along the axis. */
static inline uint64_t
scan_pos(const sctx *c, uint64_t j)
{
    return c->reversed ? c->n - 1 - j : j;
}

/* inner == 1: scan positions [a, b) of row base (elements contiguous),
 * starting from *acc (double or uint64 in a cbuf slot 0). */
static void
scan_run(const sctx *c, uint64_t base, uint64_t a, uint64_t b, cbuf *acc,
         bool write)
{
    cbuf buf, out;
    for (uint64_t j0 = a; j0 < b; j0 += CH) {
        size_t n = (size_t)(b - j0 < CH ? b - j0 : CH);
        /* elements of this chunk, in memory order */
        uint64_t lo = c->reversed ? c->n - (j0 + n) : j0;
        load_any(c->t, c->x, base + lo, n, &buf);
        if (c->fl) {
            double s = acc->d[0];
            for (size_t q = 0; q < n; q++) {
                size_t i = c->reversed ? n - 1 - q : q;
                double v = buf.d[i];
                if (c->exclusive) {
                    out.d[i] = s;
                    s += v;
                } else {
                    s += v;
                    out.d[i] = s;
                }
            }
            acc->d[0] = s;
            if (write) {
                store_d(c->t, c->y, base + lo, n, out.d);
            }
        } else {
            uint64_t s = acc->u[0];
            for (size_t q = 0; q < n; q++) {
                size_t i = c->reversed ? n - 1 - q : q;
                uint64_t v = buf.u[i];
                if (c->exclusive) {
                    out.u[i] = s;
                    s += v;
                } else {
                    s += v;
                    out.u[i] = s;
                }
            }
            acc->u[0] = s;
            if (write) {
                store_u(c->t, c->y, base + lo, n, out.u);
            }
        }
    }
}

/* inner > 1: positions [a, b) of len-element rows at base + pos * inner */
static HOT void
scan_rows(const sctx *c, uint64_t base, size_t len, uint64_t a, uint64_t b,
          cbuf *acc, bool write)
{
    cbuf buf, out;
    for (uint64_t j = a; j < b; j++) {
        uint64_t off = base + scan_pos(c, j) * c->inner;
        load_any(c->t, c->x, off, len, &buf);
        if (c->fl) {
            double *s = acc->d;
            if (c->exclusive) {
                for (size_t i = 0; i < len; i++) {
                    out.d[i] = s[i];
                    s[i] += buf.d[i];
                }
            } else {
                for (size_t i = 0; i < len; i++) {
                    s[i] += buf.d[i];
                    out.d[i] = s[i];
                }
            }
            if (write) {
                store_d(c->t, c->y, off, len, out.d);
            }
        } else {
            uint64_t *s = acc->u;
            if (c->exclusive) {
                for (size_t i = 0; i < len; i++) {
                    out.u[i] = s[i];
                    s[i] += buf.u[i];
                }
            } else {
                for (size_t i = 0; i < len; i++) {
                    s[i] += buf.u[i];
                    out.u[i] = s[i];
                }
            }
            if (write) {
                store_u(c->t, c->y, off, len, out.u);
            }
        }
    }
}

static void
scan_item(const sctx *c, uint64_t it, uint64_t *base, size_t *len)
{
    if (c->inner == 1) {
        *base = it * c->n;
        *len = 1;
        return;
    }
    uint64_t oo = it / c->kchunks, k0 = it % c->kchunks * CH;
    uint64_t left = c->inner - k0;
    *base = oo * c->n * c->inner + k0;
    *len = (size_t)(left < CH ? left : CH);
}

static void
scan_range(const sctx *c, uint64_t it, uint64_t a, uint64_t b, cbuf *acc,
           bool write)
{
    uint64_t base;
    size_t len;
    scan_item(c, it, &base, &len);
    if (c->inner == 1) {
        scan_run(c, base, a, b, acc, write);
    } else {
        scan_rows(c, base, len, a, b, acc, write);
    }
}

static void
zero_acc(const sctx *c, cbuf *acc, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (c->fl) {
            acc->d[i] = 0.0;
        } else {
            acc->u[i] = 0;
        }
    }
}

wnn_status
cpu_cumulative_sum(const cpu_call *k, wnn_error *err)
{
    const wnn_cumulative_sum_options *o = k->options;
    const wnn_desc *in = &k->in_desc[0];
    sctx c = { .t = in->dtype, .fl = is_float_type(in->dtype),
               .exclusive = o->exclusive, .reversed = o->reversed,
               .x = k->in[0], .y = k->out[0], .outer = 1, .inner = 1 };
    for (uint32_t d = 0; d < in->rank; d++) {
        if (d < o->axis) {
            c.outer *= in->shape[d];
        } else if (d > o->axis) {
            c.inner *= in->shape[d];
        }
    }
    c.n = in->shape[o->axis];
    c.kchunks = (c.inner + CH - 1) / CH;
    uint64_t items = c.inner == 1 ? c.outer : c.outer * c.kchunks;
    int T = threads_for(c.outer * c.n * c.inner);

    if (T > 1 && items < (uint64_t)T && c.n >= (uint64_t)T * 1024) {
        /* two passes: each thread's total along its share of the axis,
         * then each thread's scan from the sum of the totals before it */
        cbuf *tot = malloc(sizeof(cbuf) * (size_t)T);
        if (!tot) {
            return cpu_fail(k, err, "out of memory");
        }
        for (uint64_t it = 0; it < items; it++) {
            uint64_t base;
            size_t len;
            scan_item(&c, it, &base, &len);
#pragma omp parallel num_threads(T)
            {
                int t = omp_get_thread_num(), nt = omp_get_num_threads();
                uint64_t a = c.n * (uint64_t)t / (uint64_t)nt;
                uint64_t b = c.n * (uint64_t)(t + 1) / (uint64_t)nt;
                cbuf acc;
                zero_acc(&c, &tot[t], len);
                sctx c1 = c;
                c1.exclusive = false;
                scan_range(&c1, it, a, b, &tot[t], false);
#pragma omp barrier
                zero_acc(&c, &acc, len);
                for (int u = 0; u < t; u++) {
                    for (size_t i = 0; i < len; i++) {
                        if (c.fl) {
                            acc.d[i] += tot[u].d[i];
                        } else {
                            acc.u[i] += tot[u].u[i];
                        }
                    }
                }
                scan_range(&c, it, a, b, &acc, true);
            }
        }
        free(tot);
        return WNN_OK;
    }

#pragma omp parallel for schedule(static) num_threads(T)
    for (uint64_t it = 0; it < items; it++) {
        cbuf acc;
        uint64_t base;
        size_t len;
        scan_item(&c, it, &base, &len);
        zero_acc(&c, &acc, len);
        scan_range(&c, it, 0, c.n, &acc, true);
    }
    return WNN_OK;
}
