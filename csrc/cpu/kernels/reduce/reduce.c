/* reduce.c -- CPU kernels of the reduction family: the ten reduce* ops
 * (argMin/argMax: reduce_arg.c; cumulativeSum: reduce_scan.c; what they
 * share: reduce_internal.h).
 *
 * Domains: float32 and float16 are computed in double (float16 data are
 * widened to float32 first, exactly; sums are accumulated in double and
 * rounded once to the output type, float16 through a round-to-odd float32
 * so that this rounding is correct), integers in 64-bit two's complement
 * (uint64 arithmetic, so sums and products wrap around modulo 2^64 and the
 * stored low bits are the wrapped result of the output type; max and min
 * compare as signed or unsigned).
 *
 * Layout: the input's dimensions are coalesced into alternating groups of
 * kept and reduced dimensions (size-1 dimensions dropped).  When the
 * innermost group is reduced, each output reduces contiguous runs ("E1";
 * short runs are reduced for a block of outputs at once); when it is kept,
 * each block of outputs accumulates contiguous input rows element-wise
 * ("E2").  The inner loops read the data in place, typed, and vectorise.
 * Work is split over blocks of outputs; when there are fewer blocks than
 * threads, the reduced index space is split instead and the partial results
 * are combined in order.
 *
 * Documented semantics (the spec leaves them open):
 *   reduceMax/reduceMin   NaN propagates (any NaN gives NaN).
 *   reduceSum/L1/SumSquare/Product on integers wrap around; reduceL1 of
 *                         the most negative value wraps like abs().
 *   reduceProduct         float products are accumulated in double (errors
 *                         far below the output's last bit) unless partial
 *                         products leave double's range: then Inf, 0, or
 *                         NaN for 0 * Inf, depending on the order, as any
 *                         running product.
 *   reduceLogSumExp       m + log(sum(exp(x - m))) with m the max, so that
 *                         it cannot overflow; exp is a double-precision
 *                         polynomial (relative error < 1e-14, terms below
 *                         e^-708 count as e^-708); +-Inf and NaN maxima give
 *                         m itself.
 *   argMin/argMax         ties give the first (smallest) index; NaN counts as
 *                         greater and smaller than everything, so the first
 *                         NaN's index is returned (as NumPy).
 *   cumulativeSum         float sums are running sums in double; integers
 *                         wrap around. */
#include "reduce_internal.h"

/* ---- exp for LogSumExp ---------------------------------------------------- */
/* exp(r) for r <= 0: wnn_exp_nonpos (wnn_numerics.h) */

/* ---- reduction passes ------------------------------------------------------ */
static inline double abs_d(double v) { return fabs(v); }
static inline uint64_t abs_s(uint64_t v) { return (int64_t)v < 0 ? 0 - v : v; }
static inline uint64_t abs_u(uint64_t v) { return v; }

/* NaN-propagating max / min: a NaN candidate always wins, a NaN
 * accumulator is never replaced. */
static inline double
max_d(double a, double v)
{
    return ((v > a) | (v != v)) ? v : a;
}
static inline double
min_d(double a, double v)
{
    return ((v < a) | (v != v)) ? v : a;
}
static inline uint64_t max_s(uint64_t a, uint64_t v) { return (int64_t)v > (int64_t)a ? v : a; }
static inline uint64_t min_s(uint64_t a, uint64_t v) { return (int64_t)v < (int64_t)a ? v : a; }
static inline uint64_t max_u(uint64_t a, uint64_t v) { return v > a ? v : a; }
static inline uint64_t min_u(uint64_t a, uint64_t v) { return v < a ? v : a; }

static inline double exp_d(double v, double sh) { return wnn_exp_nonpos(v - sh); }
static inline uint64_t exp_s(uint64_t v, double sh) { (void)v; (void)sh; return 0; }
static inline uint64_t exp_u(uint64_t v, double sh) { (void)v; (void)sh; return 0; }

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
init_s(pass p)
{
    switch (p) {
    case P_PROD: return 1;
    case P_MAX: return (uint64_t)INT64_MIN;
    case P_MIN: return (uint64_t)INT64_MAX;
    default: return 0;
    }
}

static uint64_t
init_u(pass p)
{
    switch (p) {
    case P_PROD: return 1;
    case P_MAX: return 0;
    case P_MIN: return UINT64_MAX;
    default: return 0;
    }
}

/* combining two partial results of pass p */
#define DEF_COMBINE(D, ACC)                                    \
    static inline ACC combine_##D(pass p, ACC a, ACC b)        \
    {                                                          \
        switch (p) {                                           \
        case P_PROD: return a * b;                             \
        case P_MAX: return max_##D(a, b);                      \
        case P_MIN: return min_##D(a, b);                      \
        default: return a + b;                                 \
        }                                                      \
    }
DEF_COMBINE(d, double)
DEF_COMBINE(s, uint64_t)
DEF_COMBINE(u, uint64_t)

/* One loop per pass, so that each is a plain vectorisable loop; EXPR
 * combines the accumulator `a` with the value `v` (shift `sh`). */
#define PASS_SWITCH(D, LOOP)                          \
    switch (p) {                                      \
    case P_SUM: LOOP(D, a + v); break;                \
    case P_ABS: LOOP(D, a + abs_##D(v)); break;       \
    case P_SQ: LOOP(D, a + v * v); break;             \
    case P_EXP: LOOP(D, a + exp_##D(v, sh)); break;   \
    case P_PROD: LOOP(D, a * v); break;               \
    case P_MAX: LOOP(D, max_##D(a, v)); break;        \
    case P_MIN: LOOP(D, min_##D(a, v)); break;        \
    }

/* run: LANES partial results over x[0, n) */
#define RUN_LOOP(D, EXPR)                                          \
    for (; i < nv; i += LANES) {                                   \
        for (int j = 0; j < LANES; j++) {                          \
            acc_t v = toacc_##D(x[i + j]), a = s[j];               \
            s[j] = EXPR;                                           \
        }                                                          \
    }                                                              \
    for (; i < n; i++) {                                           \
        acc_t v = toacc_##D(x[i]), a = s[0];                       \
        s[0] = EXPR;                                               \
    }
/* rows: acc[k] (+)= f(x[r * stride + k]) */
#define ROWS_LOOP(D, EXPR)                                         \
    for (size_t r = 0; r < nrows; r++) {                           \
        const T *xr = x + r * stride;                              \
        for (size_t k = 0; k < len; k++) {                         \
            acc_t v = toacc_##D(xr[k]), a = acc[k];                \
            double sh = shv[k];                                    \
            (void)sh;                                              \
            acc[k] = EXPR;                                         \
        }                                                          \
    }
/* small: acc[l] (+)= f(x[offs[l] + i]) for i < rin */
#define SMALL_LOOP(D, EXPR)                                        \
    for (size_t l = 0; l < nout; l++) {                            \
        const T *xl = x + offs[l];                                 \
        acc_t a = acc[l];                                          \
        double sh = shv[l];                                        \
        (void)sh;                                                  \
        for (size_t i = 0; i < rin; i++) {                         \
            acc_t v = toacc_##D(xl[i]);                            \
            a = EXPR;                                              \
        }                                                          \
        acc[l] = a;                                                \
    }

/* The extreme (max or min, NaN-propagating) of x[0, n), n >= 1, in the data
 * type, with four independent 32-byte vectors (GCC vector extensions:
 * comparisons give lane masks, selects are bitwise). */
#define VSEL(u, a, b) \
    ((__typeof__(a))(((__typeof__(u))(a) & (u)) | ((__typeof__(u))(b) & ~(u))))
#define VBETTER_MAX(v, m) (((v) > (m)) | (((v) != (v)) & ((m) == (m))))
#define VBETTER_MIN(v, m) (((v) < (m)) | (((v) != (v)) & ((m) == (m))))
#define EXT_LOOP(B)                                                            \
    for (; i + 4 * VL <= n; i += 4 * VL) {                                     \
        vec_t v0, v1, v2, v3;                                                  \
        memcpy(&v0, x + i, sizeof v0);                                         \
        memcpy(&v1, x + i + VL, sizeof v1);                                    \
        memcpy(&v2, x + i + 2 * VL, sizeof v2);                                \
        memcpy(&v3, x + i + 3 * VL, sizeof v3);                                \
        m0 = VSEL(B(v0, m0), v0, m0);                                          \
        m1 = VSEL(B(v1, m1), v1, m1);                                          \
        m2 = VSEL(B(v2, m2), v2, m2);                                          \
        m3 = VSEL(B(v3, m3), v3, m3);                                          \
    }
#define DEF_EXTREME(SUF, TYPE)                                                 \
    CPU_HOT_RET(static, , TYPE, extreme_##SUF,                                 \
                (bool mx, const TYPE *restrict x, size_t n), (mx, x, n))       \
    {                                                                          \
        typedef TYPE vec_t __attribute__((vector_size(32)));                   \
        enum { VL = 32 / sizeof(TYPE) };                                       \
        vec_t m0;                                                              \
        for (int j = 0; j < VL; j++) {                                         \
            m0[j] = x[0];                                                      \
        }                                                                      \
        vec_t m1 = m0, m2 = m0, m3 = m0;                                       \
        size_t i = 0;                                                          \
        if (mx) {                                                              \
            EXT_LOOP(VBETTER_MAX)                                              \
        } else {                                                               \
            EXT_LOOP(VBETTER_MIN)                                              \
        }                                                                      \
        vec_t ms[4] = { m0, m1, m2, m3 };                                      \
        TYPE e = x[0];                                                         \
        for (int q = 0; q < 4; q++) {                                          \
            for (int j = 0; j < VL; j++) {                                     \
                TYPE v = ms[q][j];                                             \
                e = (mx ? BETTER_MAX(v, e) : BETTER_MIN(v, e)) ? v : e;        \
            }                                                                  \
        }                                                                      \
        for (; i < n; i++) {                                                   \
            e = (mx ? BETTER_MAX(x[i], e) : BETTER_MIN(x[i], e)) ? x[i] : e;   \
        }                                                                      \
        return e;                                                              \
    }
DEF_EXTREME(f32, float)
DEF_EXTREME(i8, int8_t)
DEF_EXTREME(u8, uint8_t)
DEF_EXTREME(i32, int32_t)
DEF_EXTREME(u32, uint32_t)
DEF_EXTREME(i64, int64_t)
DEF_EXTREME(u64, uint64_t)

/* reduce_internal.h's entry points to the extremes for the other files (a
 * plain function each: the clones stay this file's) */
#define DEF_EXTREME_ENTRY(SUF, TYPE)                                           \
    TYPE                                                                       \
    cpu_extreme_##SUF(bool mx, const TYPE *restrict x, size_t n)               \
    {                                                                          \
        return extreme_##SUF(mx, x, n);                                        \
    }
DEF_EXTREME_ENTRY(f32, float)
DEF_EXTREME_ENTRY(i8, int8_t)
DEF_EXTREME_ENTRY(u8, uint8_t)
DEF_EXTREME_ENTRY(i32, int32_t)
DEF_EXTREME_ENTRY(u32, uint32_t)
DEF_EXTREME_ENTRY(i64, int64_t)
DEF_EXTREME_ENTRY(u64, uint64_t)

/* the shifts of passes other than P_EXP (len, nout <= CH) */
static const double zero_shift[CH];

#define DEF_REDUCE(SUF, TYPE, ACC, D)                                          \
    CPU_HOT_RET(static, , ACC, run_##SUF,                                      \
                (pass p, const TYPE *restrict x, size_t n, ACC acc, double sh), \
                (p, x, n, acc, sh))                                            \
    {                                                                          \
        typedef ACC acc_t;                                                     \
        if ((p == P_MAX || p == P_MIN) && n > 0) {                             \
            /* in the data type: narrower lanes, no conversion */              \
            return combine_##D(p, acc, toacc_##D(extreme_##SUF(p == P_MAX, x, n))); \
        }                                                                      \
        acc_t s[LANES];                                                        \
        for (int j = 0; j < LANES; j++) {                                      \
            s[j] = init_##D(p);                                                \
        }                                                                      \
        if (p == P_EXP) {                                                      \
            /* exp of a block (an element-wise loop), then its sum */          \
            acc_t t[256];                                                      \
            for (size_t c0 = 0; c0 < n; c0 += 256) {                           \
                size_t m = n - c0 < 256 ? n - c0 : 256, k = 0;                 \
                for (size_t q = 0; q < m; q++) {                               \
                    t[q] = exp_##D(toacc_##D(x[c0 + q]), sh);                  \
                }                                                              \
                for (; k + LANES <= m; k += LANES)                             \
                    for (int j = 0; j < LANES; j++) s[j] += t[k + j];          \
                for (; k < m; k++) s[0] += t[k];                               \
            }                                                                  \
            for (int j = 0; j < LANES; j++) {                                  \
                acc += s[j];                                                   \
            }                                                                  \
            return acc;                                                        \
        }                                                                      \
        size_t i = 0, nv = n / LANES * LANES;                                  \
        PASS_SWITCH(D, RUN_LOOP)                                               \
        for (int j = 0; j < LANES; j++) {                                      \
            acc = combine_##D(p, acc, s[j]);                                   \
        }                                                                      \
        return acc;                                                            \
    }                                                                          \
    CPU_HOT_VOID(static, , rows_##SUF,                                         \
                 (pass p, const TYPE *restrict x, size_t nrows, uint64_t stride, \
                  size_t len, ACC *restrict acc, const double *shift),         \
                 (p, x, nrows, stride, len, acc, shift))                       \
    {                                                                          \
        typedef ACC acc_t;                                                     \
        typedef TYPE T;                                                        \
        const double *shv = shift ? shift : zero_shift;                        \
        PASS_SWITCH(D, ROWS_LOOP)                                              \
    }                                                                          \
    CPU_HOT_VOID(static, , small_##SUF,                                        \
                 (pass p, const TYPE *restrict x, const uint64_t *offs,        \
                  size_t nout, size_t rin, ACC *restrict acc,                  \
                  const double *shift),                                        \
                 (p, x, offs, nout, rin, acc, shift))                          \
    {                                                                          \
        typedef ACC acc_t;                                                     \
        typedef TYPE T;                                                        \
        const double *shv = shift ? shift : zero_shift;                        \
        PASS_SWITCH(D, SMALL_LOOP)                                             \
    }

DEF_REDUCE(f32, float, double, d)
DEF_REDUCE(i8, int8_t, uint64_t, s)
DEF_REDUCE(u8, uint8_t, uint64_t, u)
DEF_REDUCE(i32, int32_t, uint64_t, s)
DEF_REDUCE(u32, uint32_t, uint64_t, u)
DEF_REDUCE(i64, int64_t, uint64_t, s)
DEF_REDUCE(u64, uint64_t, uint64_t, u)

/* reduce_internal.h's entry points to the passes for the other files
 * (cumulativeSum's totals) */
#define DEF_REDUCE_ENTRY(SUF, TYPE, ACC)                                       \
    ACC                                                                        \
    cpu_reduce_run_##SUF(pass p, const TYPE *restrict x, size_t n, ACC acc,    \
                         double sh)                                            \
    {                                                                          \
        return run_##SUF(p, x, n, acc, sh);                                    \
    }                                                                          \
    void                                                                       \
    cpu_reduce_rows_##SUF(pass p, const TYPE *restrict x, size_t nrows,        \
                          uint64_t stride, size_t len, ACC *restrict acc,      \
                          const double *shift)                                 \
    {                                                                          \
        rows_##SUF(p, x, nrows, stride, len, acc, shift);                      \
    }
DEF_REDUCE_ENTRY(f32, float, double)
DEF_REDUCE_ENTRY(i8, int8_t, uint64_t)
DEF_REDUCE_ENTRY(u8, uint8_t, uint64_t)
DEF_REDUCE_ENTRY(i32, int32_t, uint64_t)
DEF_REDUCE_ENTRY(u32, uint32_t, uint64_t)
DEF_REDUCE_ENTRY(i64, int64_t, uint64_t)
DEF_REDUCE_ENTRY(u64, uint64_t, uint64_t)

/* ---- geometry ----------------------------------------------------------- */
typedef struct geom {
    uint32_t nk, nr;                /* kept / reduced groups, outer first;
                                       nr >= 1 (a size-1 group if none)   */
    uint64_t ks[WNN_MAX_RANK], kst[WNN_MAX_RANK];
    uint64_t rs[WNN_MAX_RANK], rst[WNN_MAX_RANK];
    uint64_t O, R;                  /* output count, reduced count        */
    bool inner_red;                 /* innermost group reduced (E1)       */
    uint64_t kin;                   /* E2: innermost kept group's size    */
} geom;

/* The runs lowered at compile (compiler/lower/reduce.c). */
static void
geom_from(geom *g, const wnn_reduce_params *q)
{
    g->nk = q->nk;
    g->nr = q->nr;
    for (uint32_t j = 0; j < q->nk; j++) {
        g->ks[j] = q->kext[j];
        g->kst[j] = q->kst[j];
    }
    for (uint32_t j = 0; j < q->nr; j++) {
        g->rs[j] = q->rext[j];
        g->rst[j] = q->rst[j];
    }
    g->O = q->O;
    g->R = q->R;
    g->inner_red = q->inner_red;
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
    wnn_dtype t;      /* of the data read: float16 was widened to float32 */
    wnn_dtype tout;   /* of the output */
    bool fl;
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

/* E1 piece: reduce the runs x[offs[l] + 0 .. cnt) into acc[l] */
#define E1_CASE(SUF, TYPE, M)                                                  \
    {                                                                          \
        const TYPE *xp = (const TYPE *)c->x + x0;                              \
        if (cnt < SMALL_RUN) {                                                 \
            small_##SUF(p, xp, offs, len, (size_t)cnt, acc->M, shift);         \
        } else {                                                               \
            for (size_t l = 0; l < len; l++) {                                 \
                acc->M[l] = run_##SUF(p, xp + offs[l], (size_t)cnt, acc->M[l], \
                                      shift ? shift[l] : 0.0);                 \
            }                                                                  \
        }                                                                      \
        break;                                                                 \
    }
/* E2 piece: cnt rows of len elements, stride apart, into acc[0, len) */
#define E2_CASE(SUF, TYPE, M)                                                  \
    rows_##SUF(p, (const TYPE *)c->x + x0, (size_t)cnt, rstin, len, acc->M,   \
               shift);                                                         \
    break;
#define TYPE_SWITCH(CASE)                                                      \
    switch (c->t) {                                                            \
    case WNN_INT8: CASE(i8, int8_t, u)                                         \
    case WNN_UINT8: CASE(u8, uint8_t, u)                                       \
    case WNN_INT32: CASE(i32, int32_t, u)                                      \
    case WNN_UINT32: CASE(u32, uint32_t, u)                                    \
    case WNN_INT64: CASE(i64, int64_t, u)                                      \
    case WNN_UINT64: CASE(u64, uint64_t, u)                                    \
    default: CASE(f32, float, d)                                               \
    }

/* Accumulate pass p into acc[0, len) of item it over the reduced flat
 * range [a, b): pieces of the innermost reduced group, in order. */
static void
accumulate(const rctx *c, pass p, uint64_t it, uint64_t a, uint64_t b,
           cbuf *acc, const double *shift)
{
    const geom *g = c->g;
    uint64_t o0, base = 0;
    size_t len;
    uint64_t offs[CH];
    odo od;
    item_range(c, it, &o0, &len);
    uint64_t rin = g->rs[g->nr - 1], rstin = g->rst[g->nr - 1];
    if (g->inner_red) {
        if (g->nk <= 1) {
            uint64_t st = g->nk ? g->kst[0] : 0;
            for (size_t l = 0; l < len; l++) {
                offs[l] = (o0 + l) * st;
            }
        } else {
            for (size_t l = 0; l < len; l++) {
                offs[l] = group_offset(o0 + l, g->nk, g->ks, g->kst);
            }
        }
    } else {
        uint32_t nko = g->nk ? g->nk - 1 : 0;
        base = group_offset(o0 / g->kin, nko, g->ks, g->kst) + o0 % g->kin;
    }
    uint64_t pos = a, i0 = a % rin;
    odo_init(&od, g->nr - 1, g->rs, g->rst, a / rin);
    while (pos < b) {
        uint64_t cnt = rin - i0 < b - pos ? rin - i0 : b - pos;
        uint64_t x0 = base + od.off + i0 * rstin;
        if (g->inner_red) {
            TYPE_SWITCH(E1_CASE)
        } else {
            TYPE_SWITCH(E2_CASE)
        }
        pos += cnt;
        i0 = 0;
        odo_next(&od);
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

static bool
is_signed_type(wnn_dtype t)
{
    return t == WNN_INT8 || t == WNN_INT32 || t == WNN_INT64;
}

static void
acc_init(const rctx *c, pass p, cbuf *acc, size_t len)
{
    if (c->fl) {
        double z = init_d(p);
        for (size_t i = 0; i < len; i++) acc->d[i] = z;
    } else {
        uint64_t z = is_signed_type(c->t) ? init_s(p) : init_u(p);
        for (size_t i = 0; i < len; i++) acc->u[i] = z;
    }
}

static void
acc_combine(const rctx *c, pass p, cbuf *acc, const cbuf *part, size_t len)
{
    if (c->fl) {
        for (size_t i = 0; i < len; i++) acc->d[i] = combine_d(p, acc->d[i], part->d[i]);
    } else if (is_signed_type(c->t)) {
        for (size_t i = 0; i < len; i++) acc->u[i] = combine_s(p, acc->u[i], part->u[i]);
    } else {
        for (size_t i = 0; i < len; i++) acc->u[i] = combine_u(p, acc->u[i], part->u[i]);
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
        store_u(c->tout, c->y, o0, len, acc->u);
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
    store_d(c->tout, c->y, o0, len, v);
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

typedef struct split_job {
    const rctx *c;
    pass p;
    uint64_t it;
    int T;
    cbuf *parts;
    const double *shift;
    uint64_t R;
    size_t len;
} split_job;

static void
split_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const split_job *j_ = p_;
    const rctx *c = j_->c;
    pass p = j_->p;
    uint64_t it = j_->it;
    int T = j_->T;
    cbuf *parts = j_->parts;
    const double *shift = j_->shift;
    uint64_t R = j_->R;
    size_t len = j_->len;
    for (int t = (int)b_; t < (int)e_; t++) {
        uint64_t a = R * (uint64_t)t / (uint64_t)T;
        uint64_t b = R * (uint64_t)(t + 1) / (uint64_t)T;
        acc_init(c, p, &parts[t], len);
        accumulate(c, p, it, a, b, &parts[t], shift);
    }
}

/* One pass of item `it` with the reduced range split over T threads;
 * partial results are combined in thread order into acc. */
static void
split_pass(const rctx *c, pass p, uint64_t it, int T, cbuf *parts, cbuf *acc,
           const double *shift)
{
    uint64_t o0;
    size_t len;
    item_range(c, it, &o0, &len);
    uint64_t R = c->g->R;
    {
        split_job j_ = {.c = c, .p = p, .it = it, .T = T, .parts = parts,
                        .shift = shift, .R = R, .len = len};
        cpu_parallel_for((int64_t)(T), T, split_body, &j_);
    }
    acc_init(c, p, acc, len);
    for (int t = 0; t < T; t++) {
        acc_combine(c, p, acc, &parts[t], len);
    }
}

typedef struct reduce_job {
    rctx c;
    geom g;
    pass p;
    bool lse;
} reduce_job;

static void
reduce_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const reduce_job *j_ = p_;
    rctx c = j_->c;
    geom g = j_->g;
    pass p = j_->p;
    bool lse = j_->lse;
    for (uint64_t it = (uint64_t)b_; it < (uint64_t)e_; it++) {
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
}

wnn_status
cpu_reduce(const cpu_call *k, wnn_error *err)
{
    const wnn_desc *in = &k->in_desc[0];
    geom g;
    geom_from(&g, &k->lowered->u.reduce);
    rctx c = { .g = &g, .t = in->dtype, .tout = k->out_desc[0].dtype,
               .fl = is_float_type(in->dtype), .x = k->in[0], .y = k->out[0],
               .op = rop_of(k->node->op) };
    uint64_t total = g.O * g.R; /* the input's element count */
    float *wide = NULL;
    if (in->dtype == WNN_FLOAT16) {
        wide = widen_f16(k->in[0], total);
        if (!wide) {
            return cpu_fail(k, err, "out of memory");
        }
        c.x = wide;
        c.t = WNN_FLOAT32;
    }
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
            free(wide);
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
        free(wide);
        return WNN_OK;
    }

    {
        reduce_job j_ = {.c = c, .g = g, .p = p, .lse = lse};
        cpu_parallel_for((int64_t)(c.items), T, reduce_body, &j_);
    }
    free(wide);
    return WNN_OK;
}
