/* reduce_scan.c -- CPU kernel of cumulativeSum (semantics: reduce.c's
 * opening comment). */
#include "reduce_internal.h"

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
CPU_HOT_VOID(static, , scan_rows,
             (const sctx *c, uint64_t base, size_t len, uint64_t a,
              uint64_t b, cbuf *acc, bool write),
             (c, base, len, a, b, acc, write))
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

/* Typed scans of float32 and integer data, in place: positions cnt of a
 * run (inner == 1) or of rows `stride` apart, scanned backwards when
 * reversed; the running sums (double, or uint64 wrapping) start from acc. */
#define DEF_SCAN(SUF, TYPE, ACC, D)                                            \
    CPU_HOT_VOID(static, , scanrun_##SUF,                                      \
                 (const TYPE *restrict x, TYPE *restrict y, size_t cnt,        \
                  ACC *acc, bool excl, bool rev),                              \
                 (x, y, cnt, acc, excl, rev))                                  \
    {                                                                          \
        ACC s = *acc;                                                          \
        for (size_t q = 0; q < cnt; q++) {                                     \
            size_t i = rev ? cnt - 1 - q : q;                                  \
            ACC v = toacc_##D(x[i]);                                           \
            if (excl) {                                                        \
                y[i] = (TYPE)s;                                                \
                s += v;                                                        \
            } else {                                                           \
                s += v;                                                        \
                y[i] = (TYPE)s;                                                \
            }                                                                  \
        }                                                                      \
        *acc = s;                                                              \
    }                                                                          \
    CPU_HOT_VOID(static, , scanrows_##SUF,                                     \
                 (const TYPE *restrict x, TYPE *restrict y, size_t cnt,        \
                  uint64_t stride, size_t len, ACC *restrict acc, bool excl,   \
                  bool rev),                                                   \
                 (x, y, cnt, stride, len, acc, excl, rev))                     \
    {                                                                          \
        for (size_t q = 0; q < cnt; q++) {                                     \
            size_t r = rev ? cnt - 1 - q : q;                                  \
            const TYPE *xr = x + r * stride;                                   \
            TYPE *yr = y + r * stride;                                         \
            if (excl) {                                                        \
                for (size_t k = 0; k < len; k++) {                             \
                    yr[k] = (TYPE)acc[k];                                      \
                    acc[k] += toacc_##D(xr[k]);                                \
                }                                                              \
            } else {                                                           \
                for (size_t k = 0; k < len; k++) {                             \
                    acc[k] += toacc_##D(xr[k]);                                \
                    yr[k] = (TYPE)acc[k];                                      \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }

DEF_SCAN(f32, float, double, d)
DEF_SCAN(i32, int32_t, uint64_t, s)
DEF_SCAN(u32, uint32_t, uint64_t, u)
DEF_SCAN(i64, int64_t, uint64_t, s)
DEF_SCAN(u64, uint64_t, uint64_t, u)

#define SCAN_CASE(SUF, TYPE, M)                                                \
    {                                                                          \
        const TYPE *xp = (const TYPE *)c->x + off;                             \
        TYPE *yp = (TYPE *)c->y + off;                                         \
        if (!write) { /* the total only */                                     \
            if (c->inner == 1) {                                               \
                acc->M[0] = cpu_reduce_run_##SUF(P_SUM, xp, (size_t)cnt,       \
                                                 acc->M[0], 0.0);              \
            } else {                                                           \
                cpu_reduce_rows_##SUF(P_SUM, xp, (size_t)cnt, c->inner, len,   \
                                      acc->M, NULL);                           \
            }                                                                  \
        } else if (c->inner == 1) {                                            \
            scanrun_##SUF(xp, yp, (size_t)cnt, &acc->M[0], c->exclusive,       \
                          c->reversed);                                        \
        } else {                                                               \
            scanrows_##SUF(xp, yp, (size_t)cnt, c->inner, len, acc->M,         \
                           c->exclusive, c->reversed);                         \
        }                                                                      \
        break;                                                                 \
    }

/* Scan positions [a, b) (in scan order) of item it from acc; with write
 * false, only add their total to acc. */
static void
scan_range(const sctx *c, uint64_t it, uint64_t a, uint64_t b, cbuf *acc,
           bool write)
{
    uint64_t base;
    size_t len;
    scan_item(c, it, &base, &len);
    if (c->t == WNN_FLOAT16) {
        if (c->inner == 1) {
            scan_run(c, base, a, b, acc, write);
        } else {
            scan_rows(c, base, len, a, b, acc, write);
        }
        return;
    }
    /* the positions' range along the axis, in memory order */
    uint64_t lo = c->reversed ? c->n - b : a, cnt = b - a;
    uint64_t off = base + lo * c->inner;
    switch (c->t) {
    case WNN_INT32: SCAN_CASE(i32, int32_t, u)
    case WNN_UINT32: SCAN_CASE(u32, uint32_t, u)
    case WNN_INT64: SCAN_CASE(i64, int64_t, u)
    case WNN_UINT64: SCAN_CASE(u64, uint64_t, u)
    default: SCAN_CASE(f32, float, d)
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

typedef struct scansplit_job {
    sctx c;
    uint64_t it;
    size_t len;
    cbuf *tot;
} scansplit_job;

static void
scansplit_body(void *p_, int tid_, int nt_)
{
    const scansplit_job *j_ = p_;
    sctx c = j_->c;
    uint64_t it = j_->it;
    size_t len = j_->len;
    cbuf *tot = j_->tot;
    {
        int t = tid_, nt = nt_;
        uint64_t a = c.n * (uint64_t)t / (uint64_t)nt;
        uint64_t b = c.n * (uint64_t)(t + 1) / (uint64_t)nt;
        cbuf acc;
        zero_acc(&c, &tot[t], len);
        sctx c1 = c;
        c1.exclusive = false;
        scan_range(&c1, it, a, b, &tot[t], false);
        cpu_barrier(nt);
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

typedef struct scan_job {
    sctx c;
} scan_job;

static void
scan_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const scan_job *j_ = p_;
    sctx c = j_->c;
    for (uint64_t it = (uint64_t)b_; it < (uint64_t)e_; it++) {
        cbuf acc;
        uint64_t base;
        size_t len;
        scan_item(&c, it, &base, &len);
        zero_acc(&c, &acc, len);
        scan_range(&c, it, 0, c.n, &acc, true);
    }
}

wnn_status
cpu_cumulative_sum(const cpu_call *k, wnn_error *err)
{
    const wnn_cumulative_sum_options *o = k->options;
    const wnn_axis_params *q = &k->lowered->u.axis; /* compiler/lower/reduce.c */
    const wnn_desc *in = &k->in_desc[0];
    sctx c = { .t = in->dtype, .fl = is_float_type(in->dtype),
               .exclusive = o->exclusive, .reversed = o->reversed,
               .x = k->in[0], .y = k->out[0], .outer = q->outer,
               .inner = q->inner, .n = q->n };
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
            {
                scansplit_job j_ = {.c = c, .it = it, .len = len, .tot = tot};
                cpu_parallel(T, scansplit_body, &j_);
            }
        }
        free(tot);
        return WNN_OK;
    }

    {
        scan_job j_ = {.c = c};
        cpu_parallel_for((int64_t)(items), T, scan_body, &j_);
    }
    return WNN_OK;
}
