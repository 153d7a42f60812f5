/* pool2d.c -- CPU kernels of averagePool2d, l2Pool2d and maxPool2d.
 *
 * Semantics (the spec gives the output shape; WPT and the backends give the
 * values): a window at output (oh, ow) covers input rows
 * oh * strideH - padTop + kh * dilationH (kh < windowHeight), and likewise
 * columns.  Only taps inside the input take part: padding is never counted,
 * so averagePool2d divides by the number of valid taps (WPT's expected
 * values; webmachinelearning/webnn issue #876), and maxPool2d ignores
 * padded taps.  A window with no valid tap at all (padding or ceil rounding
 * larger than the window; webmachinelearning/webnn issue #935) gives
 * -Infinity for maxPool2d on floats (the maximum of nothing; the type's
 * smallest value for integers), 0 for averagePool2d and 0 for l2Pool2d.
 * maxPool2d propagates NaN.  Sums are kept in float32 (averagePool2d) or
 * float64 (l2Pool2d's squares, which overflow float32 early); float16 is
 * computed in float32.
 *
 * The valid taps of every window form a rectangle, so every reduction is
 * separable.  nchw: per (batch, channel) plane, each output row first
 * reduces its valid input rows into a row buffer (contiguous, vectorised),
 * then reduces that buffer horizontally (the windows that are whole inside
 * the input are vectorised across outputs, for every stride).  Global
 * pooling (one window over the whole plane) is one contiguous reduction.
 * nhwc: per output pixel and block of channels, a vector reduction over
 * the valid taps.  Work is split over output rows (nchw; planes for global
 * pooling) or output rows x channel blocks (nhwc) on the thread pool, in
 * contiguous chunks scheduled dynamically.
 *
 * The kernels are written once below (after the #else) and instantiated
 * for each (element type, reduction) by including this file again. */
#ifndef POOL_NAME
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../cpu.h"

/* Hot loops built twice (CPU_HOT2_VOID, cpu.h): AVX2 and baseline x86-64.
 * No AVX-512 build: these loops are memory-bound, and the 512-bit build
 * measured slower than AVX2 on an AVX-512 EPYC (max pooling 3x3/2 on
 * [8,64,112,112], one thread: SSE2 3.9 ms, AVX2 2.1, AVX-512 3.5). */
#define INLINE static inline __attribute__((always_inline))

#define CBLOCK 512 /* nhwc channels per work item */
#define CHUNKS 16  /* chunks of work per thread (dynamic schedule) */
#define POOL_PARALLEL_MIN (0.125 * 1024 * 1024) /* work units, see cpu_pool2d */

typedef struct pgeom {
    int64_t n, c, h, w, oh, ow;
    int64_t kh, kw, sh, sw, dh, dw, pt, pl;
    int64_t *fh, *nh; /* per output row: first valid input row, valid taps */
    int64_t *fw, *nw; /* per output column: the same for columns */
    int64_t ow_a, ow_b; /* output columns whose window is whole inside */
    bool global;        /* one window that is exactly the whole plane */
    int threads;
} pgeom;

/* First valid input index and number of valid taps of each window along
 * one axis; every product below is < 2^63 for a shape the checker let
 * through (o * stride <= about 2^35, taps * dilation likewise). */
static void
axis_table(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d,
           int64_t pad, int64_t *first, int64_t *cnt)
{
    for (int64_t o = 0; o < out; o++) {
        int64_t st = o * s - pad;
        int64_t lo = st >= 0 ? 0 : (-st + d - 1) / d;
        int64_t hi = st > in - 1 ? 0 : (in - 1 - st) / d + 1;
        if (hi > k) {
            hi = k;
        }
        if (lo >= hi) {
            first[o] = 0;
            cnt[o] = 0;
        } else {
            first[o] = st + lo * d;
            cnt[o] = hi - lo;
        }
    }
}

/* ---- the instances -------------------------------------------------- */
/* float32 max and average: also on vectors of 8 (POOL_VVOP, POOL_VFIN) */
typedef float pv8 __attribute__((vector_size(32), aligned(4), may_alias));
typedef int pv8i __attribute__((vector_size(32)));
/* POOL_VOP of max_f32 lane by lane (NaN wins); a macro: a function
 * passing 32-byte vectors draws GCC's ABI note in the baseline clone */
#define pool_vmax(a, v)                                                        \
    ({                                                                         \
        pv8 a_ = (a), v_ = (v);                                                \
        pv8i m_ = (v_ > a_) | (v_ != v_);                                      \
        (pv8)((m_ & (pv8i)v_) | (~m_ & (pv8i)a_));                             \
    })

#define POOL_NAME max_f32
#define POOL_VVOP(a, v) pool_vmax(a, v)
#define POOL_VFIN(a, n) ((void)(n), (a))
#define POOL_T float
#define POOL_ACC float
#define POOL_DIRECT 1
#define POOL_FIN_NEEDED 0
#define POOL_INIT (-INFINITY)
#define POOL_VOP(a, v) (((v) > (a) || (v) != (v)) ? (v) : (a))
#define POOL_HOP(a, b) POOL_VOP(a, b)
#define POOL_FIN(a, n) ((void)(n), (a))
#include "pool2d.c"

#define POOL_NAME avg_f32
#define POOL_T float
#define POOL_ACC float
#define POOL_DIRECT 1
#define POOL_FIN_NEEDED 1
#define POOL_INIT 0.0f
#define POOL_VOP(a, v) ((a) + (v))
#define POOL_HOP(a, b) ((a) + (b))
#define POOL_FIN(a, n) ((n) != 0 ? (a) / (float)(n) : 0.0f)
#define POOL_VVOP(a, v) ((a) + (v))
#define POOL_VFIN(a, n) ((a) / (float)((n) != 0 ? (n) : 1)) /* n 0: a is 0 */
#include "pool2d.c"

#define POOL_NAME l2_f32
#define POOL_T float
#define POOL_ACC double
#define POOL_DIRECT 0
#define POOL_FIN_NEEDED 1
#define POOL_INIT 0.0
#define POOL_VOP(a, v) ((a) + (double)(v) * (double)(v))
#define POOL_HOP(a, b) ((a) + (b))
#define POOL_FIN(a, n) ((void)(n), (float)sqrt(a))
#include "pool2d.c"

/* integers: maxPool2d only; the same operations for every type */
#define POOL_KEEP_OPS
#define POOL_DIRECT 1
#define POOL_FIN_NEEDED 0
#define POOL_VOP(a, v) ((v) > (a) ? (v) : (a))
#define POOL_HOP(a, b) POOL_VOP(a, b)
#define POOL_FIN(a, n) ((void)(n), (a))

#define POOL_NAME max_i8
#define POOL_T int8_t
#define POOL_ACC int8_t
#define POOL_INIT INT8_MIN
#include "pool2d.c"
#define POOL_NAME max_u8
#define POOL_T uint8_t
#define POOL_ACC uint8_t
#define POOL_INIT 0
#include "pool2d.c"
#define POOL_NAME max_i32
#define POOL_T int32_t
#define POOL_ACC int32_t
#define POOL_INIT INT32_MIN
#include "pool2d.c"
#define POOL_NAME max_u32
#define POOL_T uint32_t
#define POOL_ACC uint32_t
#define POOL_INIT 0u
#include "pool2d.c"
#define POOL_NAME max_i64
#define POOL_T int64_t
#define POOL_ACC int64_t
#define POOL_INIT INT64_MIN
#include "pool2d.c"
#define POOL_NAME max_u64
#define POOL_T uint64_t
#define POOL_ACC uint64_t
#define POOL_INIT 0u
#include "pool2d.c"
#undef POOL_KEEP_OPS
#undef POOL_DIRECT
#undef POOL_FIN_NEEDED
#undef POOL_VOP
#undef POOL_HOP
#undef POOL_FIN

typedef int (*pool_fn)(const pgeom *g, bool nhwc, const void *x, void *y);

wnn_status
cpu_pool2d(const cpu_call *k, wnn_error *err)
{
    /* the geometry lowered at compile (compiler/lower/pool.c) */
    const wnn_pool_params *q = &k->lowered->u.pool;
    const wnn_desc *xd = &k->in_desc[0], *yd = &k->out_desc[0];
    bool nhwc = q->nhwc;
    wnn_op op = k->node->op;
    pgeom g = { .n = q->N, .c = q->C, .h = q->H, .w = q->W,
                .oh = q->OH, .ow = q->OW, .kh = q->kh, .kw = q->kw,
                .sh = q->sh, .sw = q->sw, .dh = q->dh, .dw = q->dw,
                .pt = q->pad[0], .pl = q->pad[2] };

    int64_t *tab = malloc(sizeof(int64_t) * 2 * (size_t)(g.oh + g.ow));
    if (!tab) {
        return cpu_fail(k, err, "out of memory");
    }
    g.fh = tab;
    g.nh = tab + g.oh;
    g.fw = tab + 2 * g.oh;
    g.nw = tab + 2 * g.oh + g.ow;
    axis_table(g.h, g.oh, g.kh, g.sh, g.dh, g.pt, g.fh, g.nh);
    axis_table(g.w, g.ow, g.kw, g.sw, g.dw, g.pl, g.fw, g.nw);
    /* whole windows: full tap count starting at o * stride - pad (a
     * contiguous range of columns, since the start grows with o) */
    g.ow_a = g.ow_b = 0;
    for (int64_t i = 0; i < g.ow; i++) {
        if (g.nw[i] == g.kw && g.fw[i] == i * g.sw - g.pl) {
            if (g.ow_b == g.ow_a) {
                g.ow_a = i;
            }
            g.ow_b = i + 1;
        }
    }
    g.global = g.oh == 1 && g.ow == 1 && g.nh[0] == g.h && g.nw[0] == g.w &&
               (g.h == 1 || g.dh == 1) && (g.w == 1 || g.dw == 1);
    /* Work: input read + taps (a window counts at most 64 x 64).  Below
     * POOL_PARALLEL_MIN (about 0.5 MB of float32 traffic, ~10 us on one
     * core with the nhwc rows in registers) waking a second thread costs
     * about what it saves.  Measured on 2 threads against one (us):
     * ShuffleNet's 3x3 / 2 pools, max 112 x 112 x 24 31 / 59, average
     * 56 x 56 x 24 8.6 / 14, 28 x 28 x 136 11 / 19, 14 x 14 x 272 6.2 /
     * 9.1. */
    double taps = (double)(g.kh < 64 ? g.kh : 64) *
                  (double)(g.kw < 64 ? g.kw : 64);
    double work = (double)g.n * (double)g.c *
                  ((double)g.h * (double)g.w +
                   (double)g.oh * (double)g.ow * taps);
    g.threads = work >= POOL_PARALLEL_MIN ? cpu_num_threads() : 1;

    wnn_dtype t = xd->dtype;
    int rc = -1;
    if (t == WNN_FLOAT32 || t == WNN_FLOAT16) {
        pool_fn fn = op == WNN_OP_MAX_POOL2D   ? max_f32_run
                     : op == WNN_OP_L2_POOL2D ? l2_f32_run
                                              : avg_f32_run;
        if (t == WNN_FLOAT32) {
            rc = fn(&g, nhwc, k->in[0], k->out[0]);
        } else {
            uint64_t ny = wnn_desc_elements(yd);
            float *xf = cpu_to_f32(k->in[0], t, wnn_desc_elements(xd));
            float *yf = malloc(sizeof(float) * ny + 64);
            if (xf && yf) {
                rc = fn(&g, nhwc, xf, yf);
                if (rc == 0) {
                    cpu_from_f32(yf, k->out[0], t, ny);
                }
            }
            free(xf);
            free(yf);
        }
    } else if (op == WNN_OP_MAX_POOL2D) {
        switch (t) {
        case WNN_INT8: rc = max_i8_run(&g, nhwc, k->in[0], k->out[0]); break;
        case WNN_UINT8: rc = max_u8_run(&g, nhwc, k->in[0], k->out[0]); break;
        case WNN_INT32: rc = max_i32_run(&g, nhwc, k->in[0], k->out[0]); break;
        case WNN_UINT32: rc = max_u32_run(&g, nhwc, k->in[0], k->out[0]); break;
        case WNN_INT64: rc = max_i64_run(&g, nhwc, k->in[0], k->out[0]); break;
        case WNN_UINT64: rc = max_u64_run(&g, nhwc, k->in[0], k->out[0]); break;
        default: break;
        }
    } else {
        free(tab);
        return cpu_fail(k, err, "data type %s is not supported",
                        wnn_dtype_name(t));
    }
    free(tab);
    if (rc != 0) {
        return cpu_fail(k, err, "out of memory");
    }
    return WNN_OK;
}

#else /* ---- template: POOL_NAME, POOL_T, POOL_ACC, POOL_INIT, POOL_VOP,
       * POOL_HOP, POOL_FIN ------------------------------------------- */
#define PCAT2(a, b) a##_##b
#define PCAT(a, b) PCAT2(a, b)
#define PF(x) PCAT(POOL_NAME, x)

/* Reduce tmp horizontally over the whole windows [a, b) into h, with the
 * stride a compile-time constant where it is 1 or 2. */
INLINE void
PF(hwhole)(const POOL_ACC *restrict tmp, POOL_ACC *restrict h, int64_t a,
           int64_t b, int64_t sw, int64_t dw, int64_t kw, int64_t pl)
{
    for (int64_t o = a; o < b; o++) {
        h[o] = tmp[o * sw - pl];
    }
    for (int64_t k = 1; k < kw; k++) {
        int64_t off = k * dw - pl;
        for (int64_t o = a; o < b; o++) {
            h[o] = POOL_HOP(h[o], tmp[o * sw + off]);
        }
    }
}

/* Output rows [r0, r1) of the nchw output viewed as (batch x channel x
 * outputHeight) rows; tmp has room for w, h for ow accumulators. */
CPU_HOT2_VOID(static, , PF(nchw_rows),
              (const pgeom *g, const POOL_T *restrict x, POOL_T *restrict y,
               int64_t r0, int64_t r1, POOL_ACC *restrict tmp,
               POOL_ACC *restrict h),
              (g, x, y, r0, r1, tmp, h))
{
    const int64_t W = g->w, OW = g->ow, hw = g->h * g->w;
    if (g->global) { /* one window that is exactly each plane */
        for (int64_t p = r0; p < r1; p++) {
            const POOL_T *xp = x + p * hw;
            POOL_ACC lane[16];
            int64_t i = 0;
            for (int j = 0; j < 16; j++) {
                lane[j] = POOL_INIT;
            }
            for (; i + 16 <= hw; i += 16) {
                for (int j = 0; j < 16; j++) {
                    lane[j] = POOL_VOP(lane[j], xp[i + j]);
                }
            }
            POOL_ACC a = POOL_INIT;
            for (; i < hw; i++) {
                a = POOL_VOP(a, xp[i]);
            }
            for (int j = 0; j < 16; j++) {
                a = POOL_HOP(a, lane[j]);
            }
            y[p] = POOL_FIN(a, hw);
        }
        return;
    }
    for (int64_t row = r0; row < r1; row++) {
        const int64_t oh = row % g->oh;
        const POOL_T *xp = x + (row / g->oh) * hw;
        /* vertical: the valid input rows of this window row */
        const int64_t nh = g->nh[oh];
        if (nh == 0) {
            for (int64_t w = 0; w < W; w++) {
                tmp[w] = POOL_INIT;
            }
        } else {
            const POOL_T *r = xp + g->fh[oh] * W;
            for (int64_t w = 0; w < W; w++) {
                tmp[w] = POOL_VOP(POOL_INIT, r[w]);
            }
            for (int64_t k = 1; k < nh; k++) {
                r = xp + (g->fh[oh] + k * g->dh) * W;
                for (int64_t w = 0; w < W; w++) {
                    tmp[w] = POOL_VOP(tmp[w], r[w]);
                }
            }
        }
        /* horizontal: windows cut by the borders one by one, the whole
         * ones vectorised across outputs */
        POOL_T *yr = y + row * OW;
        const int64_t a = g->ow_a, b = g->ow_b;
        for (int64_t o = 0; o < OW; o++) {
            if (o == a && b > a) {
                o = b - 1;
                continue;
            }
            const int64_t f = g->fw[o], n = g->nw[o];
            POOL_ACC v = POOL_INIT;
            for (int64_t k = 0; k < n; k++) {
                v = POOL_HOP(v, tmp[f + k * g->dw]);
            }
            yr[o] = POOL_FIN(v, nh * n);
        }
        if (b > a) {
            const int64_t cnt = nh * g->kw;
            if (g->sw == 1) {
                PF(hwhole)(tmp, h, a, b, 1, g->dw, g->kw, g->pl);
            } else if (g->sw == 2) {
                PF(hwhole)(tmp, h, a, b, 2, g->dw, g->kw, g->pl);
            } else {
                PF(hwhole)(tmp, h, a, b, g->sw, g->dw, g->kw, g->pl);
            }
            for (int64_t o = a; o < b; o++) {
                yr[o] = POOL_FIN(h[o], cnt);
            }
        }
    }
}

/* Work items [i0, i1) in nhwc: an item is one output row (n, oh) and one
 * block of channels [c0, c1); acc has room for CBLOCK accumulators. */
CPU_HOT2_VOID(static, , PF(nhwc_rows),
              (const pgeom *g, const POOL_T *restrict x, POOL_T *restrict y,
               int64_t i0, int64_t i1, POOL_ACC *restrict acc),
              (g, x, y, i0, i1, acc))
{
    const int64_t C = g->c, nb = (C + CBLOCK - 1) / CBLOCK;
    for (int64_t it = i0; it < i1; it++) {
        const int64_t row = it / nb, blk = it % nb;
        const int64_t n = row / g->oh, oh = row % g->oh;
        const int64_t c0 = blk * CBLOCK;
        const int64_t cn = (c0 + CBLOCK < C ? c0 + CBLOCK : C) - c0;
        const int64_t nh = g->nh[oh];
        const POOL_T *xr = x + (n * g->h + g->fh[oh]) * g->w * C + c0;
        POOL_T *yo = y + (n * g->oh + oh) * g->ow * C + c0;
        for (int64_t ow = 0; ow < g->ow; ow++, yo += C) {
            const int64_t nw = g->nw[ow], cnt = nh * nw;
            /* float, small windows: 8 channels at a time in a register,
             * every tap in turn (accumulating in the output, a loop over
             * the few channels of a pixel per tap, cost several times
             * this: ShuffleNet's 3x3 / 2 average pools of 56 x 56 x 24
             * and 28 x 28 x 136 30 -> 10 and 32 -> 10 us).  Large windows
             * (a global pool) stream each tap's channels instead: there
             * the taps of 8 channels are far apart (7 x 7 x 1280: 7.1
             * against 3.8 us). */
            int64_t c0r = 0;
#ifdef POOL_VVOP
            for (; cnt <= 16 && c0r + 8 <= cn; c0r += 8) {
                pv8 v = (pv8){ 0 } + POOL_INIT;
                for (int64_t i = 0; i < nh; i++) {
                    const POOL_T *r = xr + (i * g->dh * g->w + g->fw[ow]) * C + c0r;
                    for (int64_t j = 0; j < nw; j++, r += g->dw * C) {
                        v = POOL_VVOP(v, *(const pv8 *)r);
                    }
                }
                *(pv8 *)(yo + c0r) = POOL_VFIN(v, cnt);
            }
#endif
            if (c0r == cn) {
                continue;
            }
            /* the channels left (all of them but for float) */
#if POOL_DIRECT
            POOL_ACC *restrict a = yo; /* accumulate in the output */
#else
            POOL_ACC *restrict a = acc;
#endif
            if (cnt == 0) {
                for (int64_t c = c0r; c < cn; c++) {
                    a[c] = POOL_INIT;
                }
            }
            for (int64_t i = 0; i < nh; i++) {
                const POOL_T *r = xr + (i * g->dh * g->w + g->fw[ow]) * C;
                for (int64_t j = 0; j < nw; j++, r += g->dw * C) {
                    if (i == 0 && j == 0) {
                        for (int64_t c = c0r; c < cn; c++) {
                            a[c] = POOL_VOP(POOL_INIT, r[c]);
                        }
                    } else {
                        for (int64_t c = c0r; c < cn; c++) {
                            a[c] = POOL_VOP(a[c], r[c]);
                        }
                    }
                }
            }
#if !POOL_DIRECT || POOL_FIN_NEEDED
            for (int64_t c = c0r; c < cn; c++) {
                yo[c] = POOL_FIN(a[c], cnt);
            }
#endif
        }
    }
}

typedef struct PF(job) {
    const pgeom *g;
    bool nhwc;
    const POOL_T *x;
    POOL_T *y;
    int64_t items, chunks;
    POOL_ACC *scratch;
    size_t per;
} PF(job);

static void
PF(body)(void *p, int64_t b, int64_t e, int tid)
{
    const PF(job) *j = p;
    const pgeom *g = j->g;
    POOL_ACC *tmp = j->scratch + j->per * (size_t)tid;
    for (int64_t k = b; k < e; k++) {
        const int64_t i0 = j->items * k / j->chunks;
        const int64_t i1 = j->items * (k + 1) / j->chunks;
        if (j->nhwc) {
            PF(nhwc_rows)(g, j->x, j->y, i0, i1, tmp);
        } else {
            PF(nchw_rows)(g, j->x, j->y, i0, i1, tmp, tmp + g->w + 8);
        }
    }
}

/* 0, or -1 when out of memory.  The items (nchw: output rows, or planes
 * when global; nhwc: output rows x channel blocks) are cut into CHUNKS
 * contiguous chunks per thread, handed out dynamically: on a loaded
 * machine a thread that loses its core leaves its work to the other. */
static int
PF(run)(const pgeom *g, bool nhwc, const void *xv, void *yv)
{
    const POOL_T *x = xv;
    POOL_T *y = yv;
    const int64_t items = nhwc ? g->n * g->oh * ((g->c + CBLOCK - 1) / CBLOCK)
                               : g->n * g->c * (g->global ? 1 : g->oh);
    int nt = g->threads;
    if (nt > items) {
        nt = (int)items;
    }
    const int64_t chunks = nt == 1                 ? 1
                           : items < CHUNKS * nt ? items
                                                 : CHUNKS * nt;
    /* per-thread scratch, each on cache lines of its own */
    size_t per = nhwc ? CBLOCK : (size_t)(g->w + g->ow + 16);
    per = (per * sizeof(POOL_ACC) + 127) / 128 * 128 / sizeof(POOL_ACC);
    POOL_ACC *scratch = malloc(sizeof(POOL_ACC) * per * (size_t)nt);
    if (!scratch) {
        return -1;
    }
    PF(job) j = {g, nhwc, x, y, items, chunks, scratch, per};
    cpu_parallel_for_dynamic(chunks, 1, nt, PF(body), &j);
    free(scratch);
    return 0;
}

#undef PF
#undef PCAT
#undef PCAT2
#undef POOL_NAME
#undef POOL_T
#undef POOL_ACC
#undef POOL_INIT
#undef POOL_VVOP
#undef POOL_VFIN
#ifndef POOL_KEEP_OPS
#undef POOL_DIRECT
#undef POOL_FIN_NEEDED
#undef POOL_VOP
#undef POOL_HOP
#undef POOL_FIN
#endif
#endif
