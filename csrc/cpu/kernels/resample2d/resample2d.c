/* resample2d.c -- CPU kernel of resample2d.
 *
 * For each resampled axis (spec, MLResample2dOptions.mode), with
 * scale = outputSize / inputSize (the sizes of the input and output shapes,
 * whether the caller gave scales or sizes):
 *   c = clamp((o + 0.5) / scale - 0.5, 0, inputSize - 1)
 *   nearest-neighbor: ceil(c - 0.5)      (ties take the smaller index)
 *   linear: x0 = floor(c), x1 = ceil(c), t = c - x0
 * c is computed exactly in integers: c = (M) / (2 * out) with
 * M = (2o + 1) * in - out, so ceil(c - 0.5) = ((2o + 1) * in - 1) / (2 * out)
 * (then at most inputSize - 1), and the linear weight t is the remainder over
 * 2 * out.  The two axes may be any two distinct axes, in either order.
 *
 * linear computes, with x the later of the two axes in memory order and y
 * the earlier one, exactly the spec's
 *   vy0 = v(x0,y0) * (1 - tx) + v(x1,y0) * tx
 *   vy1 = v(x0,y1) * (1 - tx) + v(x1,y1) * tx
 *   out = vy0 * (1 - ty) + vy1 * ty
 * in float32 for float32 and float16 (which is converted), and in float64
 * for int8 and uint8, rounded to the nearest integer (ties to even) and
 * clamped to the type's range (the spec leaves integer rounding open).
 * nearest-neighbor copies elements (any type, no conversion).
 *
 * The output is walked in rows of its last dimension: when the last
 * dimension is not resampled, a row is a copy (nearest) or a vectorised
 * blend of up to four input rows (linear).  Otherwise nearest gathers from
 * one input row, and linear blends two input rows already interpolated
 * along the last axis (vy0 and vy1 above), which are kept in two buffers
 * because consecutive output rows mostly reuse them.  Threads take
 * contiguous chunks of rows, scheduled dynamically. */
#ifndef RS_NAME
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../cpu.h"

/* Hot loops built twice (CPU_HOT2_VOID, cpu.h): AVX2 and baseline x86-64.
 * No AVX-512 build: these loops are memory-bound, and the 512-bit build
 * measured slower than AVX2 on an AVX-512 EPYC (max pooling 3x3/2 on
 * [8,64,112,112], one thread: SSE2 3.9 ms, AVX2 2.1, AVX-512 3.5). */

/* One axis of the walk: the input index (or two and a weight) of each
 * output coordinate.  Axes that are not resampled map o -> o. */
typedef struct rs_axis {
    bool resampled;
    int64_t *i0, *i1; /* nearest: i0 only */
    double *t;        /* linear weight of i1 */
} rs_axis;

typedef struct rs_geom {
    int64_t in[4], out[4], st[4]; /* shapes and input element strides */
    rs_axis ax[4];
    uint32_t ya, xa; /* the resampled axes, ya < xa */
    int threads;
} rs_geom;

/* Fill an axis table (wnn_resample_src); `linear` also gives i1 and t. */
static void
rs_table(int64_t in, int64_t out, bool linear, int64_t *i0, int64_t *i1,
         double *t)
{
    for (int64_t o = 0; o < out; o++) {
        int64_t a, b;
        double w;
        wnn_resample_src(in, out, o, linear, &a, &b, &w);
        i0[o] = a;
        if (linear) {
            i1[o] = b;
            t[o] = w;
        }
    }
}

/* ---- nearest-neighbor: element copies by size ------------------------ */
#define RS_NAME near8
#define RS_T uint8_t
#include "resample2d.c"
#define RS_NAME near16
#define RS_T uint16_t
#include "resample2d.c"
#define RS_NAME near32
#define RS_T uint32_t
#include "resample2d.c"

/* ---- linear ------------------------------------------------------------ */
#define RS_LINEAR
#define RS_NAME lin_f32
#define RS_T float
#define RS_W float
#define RS_STORE(v) (v)
#include "resample2d.c"

static inline int8_t
store_i8(double v)
{
    return (int8_t)wnn_round_clamp(v, -128.0, 127.0);
}

static inline uint8_t
store_u8(double v)
{
    return (uint8_t)wnn_round_clamp(v, 0.0, 255.0);
}

#define RS_NAME lin_i8
#define RS_T int8_t
#define RS_W double
#define RS_STORE(v) store_i8(v)
#include "resample2d.c"
#define RS_NAME lin_u8
#define RS_T uint8_t
#define RS_W double
#define RS_STORE(v) store_u8(v)
#include "resample2d.c"
#undef RS_LINEAR

wnn_status
cpu_resample2d(const cpu_call *k, wnn_error *err)
{
    /* lowered at compile (compiler/lower/resample.c) */
    const wnn_resample_params *o = &k->lowered->u.resample;
    const wnn_desc *xd = &k->in_desc[0], *yd = &k->out_desc[0];
    bool linear = o->linear != 0;
    rs_geom g;
    memset(&g, 0, sizeof(g));
    int64_t s = 1;
    for (int d = 3; d >= 0; d--) {
        g.in[d] = o->in[d];
        g.out[d] = o->out[d];
        g.st[d] = s;
        s *= g.in[d];
    }
    g.ya = (uint32_t)o->ya;
    g.xa = (uint32_t)o->xa;
    size_t cells = 0;
    for (int d = 0; d < 4; d++) {
        if (d == (int)g.ya || d == (int)g.xa) {
            cells += (size_t)g.out[d];
        }
    }
    /* i0, i1 (int64) and t (double) per output coordinate of both axes */
    char *mem = malloc(cells * 24 + 64);
    if (!mem) {
        return cpu_fail(k, err, "out of memory");
    }
    char *p = mem;
    for (int d = 0; d < 4; d++) {
        if (d != (int)g.ya && d != (int)g.xa) {
            continue;
        }
        rs_axis *a = &g.ax[d];
        a->resampled = true;
        a->i0 = (int64_t *)p;
        a->i1 = a->i0 + g.out[d];
        a->t = (double *)(a->i1 + g.out[d]);
        p += (size_t)g.out[d] * 24;
        rs_table(g.in[d], g.out[d], linear, a->i0, a->i1, a->t);
    }
    uint64_t total = wnn_desc_elements(yd);
    g.threads = total >= CPU_PARALLEL_MIN ? cpu_num_threads() : 1;

    wnn_dtype t = xd->dtype;
    int rc = 0;
    if (!linear) {
        switch (wnn_dtype_size(t)) {
        case 1: near8_run(&g, k->in[0], k->out[0]); break;
        case 2: near16_run(&g, k->in[0], k->out[0]); break;
        case 4: near32_run(&g, k->in[0], k->out[0]); break;
        default: rc = -2; break;
        }
    } else if (t == WNN_FLOAT32) {
        lin_f32_run(&g, k->in[0], k->out[0]);
    } else if (t == WNN_FLOAT16) {
        float *xf = cpu_to_f32(k->in[0], t, wnn_desc_elements(xd));
        float *yf = malloc(sizeof(float) * total + 64);
        if (xf && yf) {
            lin_f32_run(&g, xf, yf);
            cpu_from_f32(yf, k->out[0], t, total);
        } else {
            rc = -1;
        }
        free(xf);
        free(yf);
    } else if (t == WNN_INT8) {
        lin_i8_run(&g, k->in[0], k->out[0]);
    } else if (t == WNN_UINT8) {
        lin_u8_run(&g, k->in[0], k->out[0]);
    } else {
        rc = -2;
    }
    free(mem);
    if (rc == -1) {
        return cpu_fail(k, err, "out of memory");
    }
    if (rc == -2) {
        return cpu_fail(k, err, "data type %s is not supported",
                        wnn_dtype_name(t));
    }
    return WNN_OK;
}

#else /* ---- template: RS_NAME, RS_T (and RS_W, RS_STORE with RS_LINEAR) */
#define RCAT2(a, b) a##_##b
#define RCAT(a, b) RCAT2(a, b)
#define RF(x) RCAT(RS_NAME, x)

/* Output row `r`, whose coordinates but the last are oc[0..2]. */
static inline __attribute__((always_inline)) void
RF(row)(const rs_geom *g, const RS_T *restrict x, RS_T *restrict y, int64_t r,
        const int64_t *oc)
{
    const int64_t n3 = g->out[3];
    RS_T *yr = y + r * n3;
    /* offsets of the plain axes, and of the earlier resampled axis */
    int64_t base = 0;
    for (int d = 0; d < 3; d++) {
        if (!g->ax[d].resampled) {
            base += oc[d] * g->st[d];
        }
    }
    const uint32_t ya = g->ya, xa = g->xa;
#ifndef RS_LINEAR
    if (xa != 3) { /* both resampled axes are row coordinates: a copy */
        const RS_T *src = x + base + g->ax[ya].i0[oc[ya]] * g->st[ya] +
                          g->ax[xa].i0[oc[xa]] * g->st[xa];
        memcpy(yr, src, sizeof(RS_T) * (size_t)n3);
        return;
    }
    const RS_T *src = x + base + g->ax[ya].i0[oc[ya]] * g->st[ya];
    const int64_t *ix = g->ax[3].i0;
    for (int64_t i = 0; i < n3; i++) {
        yr[i] = src[ix[i]];
    }
#else
    const int64_t y0 = g->ax[ya].i0[oc[ya]], y1 = g->ax[ya].i1[oc[ya]];
    const RS_W ty = (RS_W)g->ax[ya].t[oc[ya]], uy = (RS_W)1 - ty;
    const RS_T *r0 = x + base + y0 * g->st[ya];
    const RS_T *r1 = x + base + y1 * g->st[ya];
    if (xa != 3) {
        const int64_t x0 = g->ax[xa].i0[oc[xa]], x1 = g->ax[xa].i1[oc[xa]];
        const RS_W tx = (RS_W)g->ax[xa].t[oc[xa]], ux = (RS_W)1 - tx;
        const RS_T *a00 = r0 + x0 * g->st[xa], *a10 = r0 + x1 * g->st[xa];
        const RS_T *a01 = r1 + x0 * g->st[xa], *a11 = r1 + x1 * g->st[xa];
        for (int64_t i = 0; i < n3; i++) {
            RS_W vy0 = (RS_W)a00[i] * ux + (RS_W)a10[i] * tx;
            RS_W vy1 = (RS_W)a01[i] * ux + (RS_W)a11[i] * tx;
            yr[i] = RS_STORE(vy0 * uy + vy1 * ty);
        }
        return;
    }
    const int64_t *i0 = g->ax[3].i0, *i1 = g->ax[3].i1;
    const double *tt = g->ax[3].t;
    for (int64_t i = 0; i < n3; i++) {
        const RS_W tx = (RS_W)tt[i], ux = (RS_W)1 - tx;
        RS_W vy0 = (RS_W)r0[i0[i]] * ux + (RS_W)r0[i1[i]] * tx;
        RS_W vy1 = (RS_W)r1[i0[i]] * ux + (RS_W)r1[i1[i]] * tx;
        yr[i] = RS_STORE(vy0 * uy + vy1 * ty);
    }
#endif
}

#ifdef RS_LINEAR
/* v[i] = src[x0[i]] * (1 - tx[i]) + src[x1[i]] * tx[i]: one input row
 * interpolated along the last axis (the spec's vy0 or vy1). */
static inline __attribute__((always_inline)) void
RF(hrow)(const rs_geom *g, const RS_T *restrict src, const RS_W *restrict ux,
         const RS_W *restrict tx, RS_W *restrict v)
{
    const int64_t *i0 = g->ax[3].i0, *i1 = g->ax[3].i1;
    for (int64_t i = 0; i < g->out[3]; i++) {
        v[i] = (RS_W)src[i0[i]] * ux[i] + (RS_W)src[i1[i]] * tx[i];
    }
}

/* Linear along the last axis and an earlier one: each output row blends
 * two input rows interpolated along the last axis; those are kept in two
 * buffers, since consecutive output rows mostly reuse the same input rows.
 * Returns false (nothing done) when out of memory. */
CPU_HOT2_RET(static, , bool, RF(rows_last),
             (const rs_geom *g, const RS_T *restrict x, RS_T *restrict y,
              int64_t r0, int64_t r1, int64_t *oc),
             (g, x, y, r0, r1, oc))
{
    const int64_t n3 = g->out[3];
    const uint32_t ya = g->ya;
    RS_W *mem = malloc(sizeof(RS_W) * 4 * (size_t)n3 + 64);
    if (!mem) {
        return false;
    }
    RS_W *ux = mem, *tx = mem + n3, *buf[2] = { mem + 2 * n3, mem + 3 * n3 };
    const RS_T *key[2] = { NULL, NULL }; /* the input row each buffer holds */
    for (int64_t i = 0; i < n3; i++) {
        tx[i] = (RS_W)g->ax[3].t[i];
        ux[i] = (RS_W)1 - tx[i];
    }
    for (int64_t r = r0; r < r1; r++) {
        int64_t base = 0;
        for (int d = 0; d < 3; d++) {
            if (!g->ax[d].resampled) {
                base += oc[d] * g->st[d];
            }
        }
        const RS_T *s0 = x + base + g->ax[ya].i0[oc[ya]] * g->st[ya];
        const RS_T *s1 = x + base + g->ax[ya].i1[oc[ya]] * g->st[ya];
        int b0 = key[0] == s0 ? 0 : key[1] == s0 ? 1 : -1;
        int b1 = key[0] == s1 ? 0 : key[1] == s1 ? 1 : -1;
        if (b0 < 0) {
            b0 = b1 == 0 ? 1 : 0;
            RF(hrow)(g, s0, ux, tx, buf[b0]);
            key[b0] = s0;
        }
        if (b1 < 0) {
            b1 = s1 == s0 ? b0 : 1 - b0;
            if (b1 != b0) {
                RF(hrow)(g, s1, ux, tx, buf[b1]);
                key[b1] = s1;
            }
        }
        const RS_W ty = (RS_W)g->ax[ya].t[oc[ya]], uy = (RS_W)1 - ty;
        const RS_W *v0 = buf[b0], *v1 = buf[b1];
        RS_T *yr = y + r * n3;
        for (int64_t i = 0; i < n3; i++) {
            yr[i] = RS_STORE(v0[i] * uy + v1[i] * ty);
        }
        for (int d = 2; d >= 0 && ++oc[d] == g->out[d]; d--) {
            oc[d] = 0;
        }
    }
    free(mem);
    return true;
}
#endif

/* Output rows [r0, r1), the coordinates counted like an odometer. */
CPU_HOT2_VOID(static, , RF(rows),
              (const rs_geom *g, const RS_T *restrict x, RS_T *restrict y,
               int64_t r0, int64_t r1),
              (g, x, y, r0, r1))
{
    int64_t oc[3], rem = r0;
    for (int d = 2; d >= 0; d--) {
        oc[d] = rem % g->out[d];
        rem /= g->out[d];
    }
#ifdef RS_LINEAR
    if (g->xa == 3 && RF(rows_last)(g, x, y, r0, r1, oc)) {
        return;
    }
#endif
    for (int64_t r = r0; r < r1; r++) {
        RF(row)(g, x, y, r, oc);
        for (int d = 2; d >= 0 && ++oc[d] == g->out[d]; d--) {
            oc[d] = 0;
        }
    }
}

typedef struct RF(job) {
    const rs_geom *g;
    const RS_T *x;
    RS_T *y;
    int64_t rows, chunks;
} RF(job);

static void
RF(body)(void *p, int64_t b, int64_t e, int tid)
{
    (void)tid;
    const RF(job) *j = p;
    for (int64_t k = b; k < e; k++) {
        RF(rows)(j->g, j->x, j->y, j->rows * k / j->chunks,
                 j->rows * (k + 1) / j->chunks);
    }
}

static void
RF(run)(const rs_geom *g, const void *xv, void *yv)
{
    const RS_T *x = xv;
    RS_T *y = yv;
    const int64_t rows = g->out[0] * g->out[1] * g->out[2];
    const int nt = g->threads < rows ? g->threads : (int)rows;
    /* contiguous chunks handed out dynamically (a thread that loses its
     * core on a loaded machine leaves its work to the others) */
    const int64_t chunks = nt == 1 ? 1 : (rows < 16 * nt ? rows : 16 * nt);
    RF(job) j = {g, x, y, rows, chunks};
    cpu_parallel_for_dynamic(chunks, 1, nt, RF(body), &j);
}

#undef RF
#undef RCAT
#undef RCAT2
#undef RS_NAME
#undef RS_T
#ifdef RS_LINEAR
#undef RS_W
#undef RS_STORE
#endif
#endif
