/* reduce_arg.c -- CPU kernels of argMin / argMax (semantics: reduce.c's
 * opening comment). */
#include "reduce_internal.h"

/* ---- argMin / argMax ---------------------------------------------------- */

/* the best value and its index of up to CH outputs */
typedef struct abest {
    _Alignas(64) unsigned char v[CH * 8];
    int64_t idx[CH];
} abest;

#define DEF_ARG(SUF, T)                                                        \
    /* contiguous x[0, n) at axis positions j0..: into *bv / *bi, which hold   \
     * a candidate already */                                                  \
    CPU_HOT_VOID(static, , argrun_##SUF,                                       \
                 (bool mx, const T *restrict x, size_t n, T *bv, int64_t *bi,  \
                  int64_t j0),                                                 \
                 (mx, x, n, bv, bi, j0))                                       \
    {                                                                          \
        for (size_t c0 = 0; c0 < n; c0 += CH) {                                \
            size_t m = n - c0 < CH ? n - c0 : CH;                              \
            const T *xc = x + c0;                                              \
            T e = cpu_extreme_##SUF(mx, xc, m);                                \
            if (mx ? BETTER_MAX(e, *bv) : BETTER_MIN(e, *bv)) {                \
                /* the first element equal to e (or the first NaN) */          \
                size_t f = 0;                                                  \
                while (f + 1 < m && !(xc[f] == e || (e != e && xc[f] != xc[f]))) \
                    f++;                                                       \
                *bv = e;                                                       \
                *bi = j0 + (int64_t)(c0 + f);                                  \
            }                                                                  \
        }                                                                      \
    }                                                                          \
    /* rows r < nrows of len elements at x + r * stride, axis positions j0.. */ \
    CPU_HOT_VOID(static, , argrows_##SUF,                                      \
                 (bool mx, const T *restrict x, size_t nrows, uint64_t stride, \
                  size_t len, T *restrict bv, int64_t *restrict bi, int64_t j0), \
                 (mx, x, nrows, stride, len, bv, bi, j0))                      \
    {                                                                          \
        for (size_t r = 0; r < nrows; r++) {                                   \
            const T *xr = x + r * stride;                                      \
            int64_t j = j0 + (int64_t)r;                                       \
            if (mx) {                                                          \
                for (size_t k = 0; k < len; k++) {                             \
                    bool u = BETTER_MAX(xr[k], bv[k]);                         \
                    bv[k] = u ? xr[k] : bv[k];                                 \
                    bi[k] = u ? j : bi[k];                                     \
                }                                                              \
            } else {                                                           \
                for (size_t k = 0; k < len; k++) {                             \
                    bool u = BETTER_MIN(xr[k], bv[k]);                         \
                    bv[k] = u ? xr[k] : bv[k];                                 \
                    bi[k] = u ? j : bi[k];                                     \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }                                                                          \
    /* partial results of a later range: the earlier one wins ties */          \
    static void                                                                \
    argcomb_##SUF(bool mx, T *bv, int64_t *bi, const T *pv, const int64_t *pi, \
                  size_t len)                                                  \
    {                                                                          \
        for (size_t k = 0; k < len; k++) {                                     \
            if (mx ? BETTER_MAX(pv[k], bv[k]) : BETTER_MIN(pv[k], bv[k])) {    \
                bv[k] = pv[k];                                                 \
                bi[k] = pi[k];                                                 \
            }                                                                  \
        }                                                                      \
    }

DEF_ARG(f32, float)
DEF_ARG(i8, int8_t)
DEF_ARG(u8, uint8_t)
DEF_ARG(i32, int32_t)
DEF_ARG(u32, uint32_t)
DEF_ARG(i64, int64_t)
DEF_ARG(u64, uint64_t)

typedef struct actx {
    wnn_dtype t;  /* of the data read (float16 widened to float32) */
    bool is_max;
    const void *x;
    uint64_t outer, n, inner, kchunks;
} actx;

#define ARG_TYPE_SWITCH(CASE)                                                  \
    switch (c->t) {                                                            \
    case WNN_INT8: CASE(i8, int8_t)                                            \
    case WNN_UINT8: CASE(u8, uint8_t)                                          \
    case WNN_INT32: CASE(i32, int32_t)                                         \
    case WNN_UINT32: CASE(u32, uint32_t)                                       \
    case WNN_INT64: CASE(i64, int64_t)                                         \
    case WNN_UINT64: CASE(u64, uint64_t)                                       \
    default: CASE(f32, float)                                                  \
    }

/* item it -> input base offset, output offset, length */
static void
arg_item(const actx *c, uint64_t it, uint64_t *base, uint64_t *out,
         size_t *len)
{
    uint64_t oo = it / c->kchunks, k0 = it % c->kchunks * CH;
    uint64_t left = c->inner - k0;
    *base = oo * c->n * c->inner + k0;
    *out = oo * c->inner + k0;
    *len = (size_t)(left < CH ? left : CH);
}

/* inner == 1: outputs [o0, o0 + len), each over its whole row, or (len 1)
 * over positions [a, b) */
#define ARG_RUN_CASE(SUF, T)                                                   \
    {                                                                          \
        const T *xs = c->x;                                                    \
        T *bv = (T *)s->v;                                                     \
        for (size_t l = 0; l < len; l++) {                                     \
            const T *row = xs + (o0 + l) * c->n;                               \
            bv[l] = row[a];                                                    \
            s->idx[l] = (int64_t)a;                                            \
            argrun_##SUF(c->is_max, row + a, (size_t)(b - a), &bv[l],          \
                         &s->idx[l], (int64_t)a);                              \
        }                                                                      \
        break;                                                                 \
    }
static void
arg_runs(const actx *c, uint64_t o0, size_t len, uint64_t a, uint64_t b,
         abest *s)
{
    ARG_TYPE_SWITCH(ARG_RUN_CASE)
}

/* inner > 1: item it over positions [a, b) */
#define ARG_ROWS_CASE(SUF, T)                                                  \
    {                                                                          \
        const T *xs = (const T *)c->x + base;                                  \
        T *bv = (T *)s->v;                                                     \
        memcpy(bv, xs + a * c->inner, len * sizeof(T));                        \
        for (size_t k = 0; k < len; k++) s->idx[k] = (int64_t)a;               \
        argrows_##SUF(c->is_max, xs + (a + 1) * c->inner, (size_t)(b - a - 1), \
                      c->inner, len, bv, s->idx, (int64_t)a + 1);              \
        break;                                                                 \
    }
static void
arg_rows(const actx *c, uint64_t it, uint64_t a, uint64_t b, abest *s)
{
    uint64_t base, out;
    size_t len;
    arg_item(c, it, &base, &out, &len);
    ARG_TYPE_SWITCH(ARG_ROWS_CASE)
}

#define ARG_COMB_CASE(SUF, T)                                                  \
    argcomb_##SUF(c->is_max, (T *)r->v, r->idx, (const T *)p->v, p->idx, len); \
    break;
static void
arg_combine(const actx *c, abest *r, const abest *p, size_t len)
{
    ARG_TYPE_SWITCH(ARG_COMB_CASE)
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

typedef struct argsplit_job {
    actx c;
    uint64_t it;
    int T;
    abest *parts;
} argsplit_job;

static void
argsplit_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const argsplit_job *j_ = p_;
    actx c = j_->c;
    uint64_t it = j_->it;
    int T = j_->T;
    abest *parts = j_->parts;
    for (int t = (int)b_; t < (int)e_; t++) {
        uint64_t a = c.n * (uint64_t)t / (uint64_t)T;
        uint64_t b = c.n * (uint64_t)(t + 1) / (uint64_t)T;
        if (c.inner == 1) {
            arg_runs(&c, it, 1, a, b, &parts[t]);
        } else {
            arg_rows(&c, it, a, b, &parts[t]);
        }
    }
}

typedef struct argrow_job {
    actx c;
    uint64_t per;
    wnn_dtype to;
    void *y;
} argrow_job;

static void
argrow_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const argrow_job *j_ = p_;
    actx c = j_->c;
    uint64_t per = j_->per;
    wnn_dtype to = j_->to;
    void *y = j_->y;
    for (uint64_t bk = (uint64_t)b_; bk < (uint64_t)e_; bk++) {
        abest s;
        uint64_t r0 = bk * per;
        size_t len = (size_t)(c.outer - r0 < per ? c.outer - r0 : per);
        arg_runs(&c, r0, len, 0, c.n, &s);
        arg_store(to, y, r0, len, s.idx);
    }
}

typedef struct argitem_job {
    actx c;
    wnn_dtype to;
    void *y;
} argitem_job;

static void
argitem_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const argitem_job *j_ = p_;
    actx c = j_->c;
    wnn_dtype to = j_->to;
    void *y = j_->y;
    for (uint64_t it = (uint64_t)b_; it < (uint64_t)e_; it++) {
        abest s;
        uint64_t base, out;
        size_t len;
        arg_item(&c, it, &base, &out, &len);
        arg_rows(&c, it, 0, c.n, &s);
        arg_store(to, y, out, len, s.idx);
    }
}

wnn_status
cpu_arg_min_max(const cpu_call *k, wnn_error *err)
{
    const wnn_axis_params *q = &k->lowered->u.axis; /* compiler/lower/reduce.c */
    const wnn_desc *in = &k->in_desc[0];
    actx c = { .t = in->dtype, .is_max = k->node->op == WNN_OP_ARG_MAX,
               .x = k->in[0], .outer = q->outer, .inner = q->inner,
               .n = q->n };
    c.kchunks = (c.inner + CH - 1) / CH;
    uint64_t total = c.outer * c.n * c.inner;
    float *wide = NULL;
    if (in->dtype == WNN_FLOAT16) {
        wide = widen_f16(k->in[0], total);
        if (!wide) {
            return cpu_fail(k, err, "out of memory");
        }
        c.x = wide;
        c.t = WNN_FLOAT32;
    }
    wnn_dtype to = k->out_desc[0].dtype;
    void *y = k->out[0];
    int T = threads_for(total);
    uint64_t items = c.inner == 1 ? c.outer : c.outer * c.kchunks;

    if (T > 1 && items < (uint64_t)T && c.n >= (uint64_t)T * 1024) {
        /* few outputs, a long axis: split the axis over the threads */
        abest *parts = malloc(sizeof(abest) * (size_t)T);
        if (!parts) {
            free(wide);
            return cpu_fail(k, err, "out of memory");
        }
        for (uint64_t it = 0; it < items; it++) {
            uint64_t base, out = it;
            size_t len = 1;
            if (c.inner > 1) {
                arg_item(&c, it, &base, &out, &len);
            }
            {
                argsplit_job j_ = {.c = c, .it = it, .T = T, .parts = parts};
                cpu_parallel_for((int64_t)(T), T, argsplit_body, &j_);
            }
            /* in thread order, so the first of equal values wins */
            for (int t = 1; t < T; t++) {
                arg_combine(&c, &parts[0], &parts[t], len);
            }
            arg_store(to, y, out, len, parts[0].idx);
        }
        free(parts);
        free(wide);
        return WNN_OK;
    }

    if (c.inner == 1) {
        /* one output per outer row: blocks of up to CH rows per task */
        uint64_t per = c.outer / ((uint64_t)T * 4);
        per = per < 1 ? 1 : per > CH ? CH : per;
        uint64_t blocks = (c.outer + per - 1) / per;
        {
            argrow_job j_ = {.c = c, .per = per, .to = to, .y = y};
            cpu_parallel_for((int64_t)(blocks), T, argrow_body, &j_);
        }
    } else {
        {
            argitem_job j_ = {.c = c, .to = to, .y = y};
            cpu_parallel_for((int64_t)(items), T, argitem_body, &j_);
        }
    }
    free(wide);
    return WNN_OK;
}
