/* winograd.c -- conv2d with Winograd F(2x2, 3x3), nhwc (AVX-512 and AVX2 +
 * FMA) (conv.h has the overview). */
#include "conv.h"

#if HAVE_DIRECT
/* ---- Winograd F(2x2, 3x3), nhwc (AVX-512, AVX2) -------------------------

 * 3x3 filters, strides 1, dilations 1: each 2 x 2 block of outputs comes
 * from a 4 x 4 block of inputs through Y = A^T [ (G g G^T) .* (B^T d B) ] A,
 * the channel sums of the 16 products being 16 matrix products (the
 * micro-kernel above) -- 16 multiply-adds per 4 outputs and channel pair
 * instead of 36.  The transforms take only additions and halvings, so the
 * rounding stays close to the direct sum's.  Inputs or filters with an
 * infinity, a NaN or a magnitude above 2^100 take the direct kernel, so
 * special values come out as the direct sum gives them.
 * WEBNN_CONV_WINOGRAD=0 in the environment turns it off. */
#define WINO_TILES 30 /* tiles per task: a multiple of the 6 of a block */

/* True when every |p[i]| <= 2^100: no infinity, no NaN, nothing near
 * overflow.  (The transforms add and subtract inputs: an infinity could
 * become inf - inf = NaN where the direct sum gives an infinity, and sums
 * of huge values could overflow where the direct sum does not.) */
CPU_HOT_RET(static, , bool, all_moderate,
            (const float *p, int64_t n),
            (p, n))
{
    typedef uint32_t u32a __attribute__((may_alias));
    const u32a *u = (const u32a *)p;
    const uint32_t lim = (127u + 100u) << 23; /* bits of 2^100 */
    uint32_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        bad |= (u[i] & 0x7fffffffu) > lim;
    }
    return bad == 0;
}

bool
winograd_usable(const cpu_call *k, const geom *g, const float *x,
                const float *w)
{
    /* and 48 tiles or more: each element of the transformed filter (16 /
     * 9 the filter's size) serves every tile once, so few tiles leave the
     * products reading it from memory -- ResNet50's 7 x 7 512 -> 512 (16
     * tiles) 1.36 ms against the direct kernel's 1.10, 2.64 against 2.19
     * at batch 2; 14 x 14 256 -> 256 (49 tiles) 0.65 against 1.02 */
    const int64_t tiles = g->N * ((g->OH + 1) / 2) * ((g->OW + 1) / 2);
    return tiles >= 48 && cpu_isa() >= CPU_ISA_AVX2 &&
           g->G == 1 && g->KH == 3 && g->KW == 3 && g->sh == 1 && g->sw == 1 &&
           g->dh == 1 && g->dw == 1 && g->C >= 16 && g->O >= 16 &&
           g->winograd_ok &&
           /* a constant filter transformed already passed (its scan read
            * 2.4 MB a dispatch at 256 -> 256 channels) */
           (cpu_prep_get(k, 1, CPU_PREP_WINOGRAD) ||
            all_moderate(w, g->O * g->C * 9)) &&
           all_moderate(x, g->N * g->H * g->W * g->C);
}

/* the transforms at the two levels: wino_*_avx512 (DIRECT) and
 * wino_*_avx2 (x86-64-v3) */
typedef float wk_v8 __attribute__((vector_size(32), aligned(4), may_alias));
#define WK_TARGET DIRECT
#define WK_NAME(s) s##_avx512
#define WK_V v16
#define WK_L 16
#include "winograd_k.h"
#undef WK_TARGET
#undef WK_NAME
#undef WK_V
#undef WK_L
#define WK_TARGET CPU_TARGET_V3
#define WK_NAME(s) s##_avx2
#define WK_V wk_v8
#define WK_L 8
#include "winograd_k.h"
#undef WK_TARGET
#undef WK_NAME
#undef WK_V
#undef WK_L

typedef struct wino_job {
    float *buf;
    int64_t vsz;
    int64_t msz;
    int64_t chunks;
    int64_t osplit; /* output channel ranges per chunk of tiles */
    int64_t ostep;  /* channels per range, a multiple of 64 */
    int64_t TT;
    int64_t TW;
    const geom *g;
    const float *x;
    int64_t C;
    int64_t OP;
    float *u;
    float *zb;
    float *bp;
    float *y;
} wino_job;

static void
wino_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    const wino_job *j_ = p_;
    float *buf = j_->buf;
    int64_t vsz = j_->vsz;
    int64_t msz = j_->msz;
    int64_t chunks = j_->chunks;
    int64_t TT = j_->TT;
    int64_t TW = j_->TW;
    const geom *g = j_->g;
    const float *x = j_->x;
    int64_t C = j_->C;
    int64_t OP = j_->OP;
    float *u = j_->u;
    float *zb = j_->zb;
    float *bp = j_->bp;
    float *y = j_->y;
    const bool avx512 = cpu_has_avx512();
    for (int64_t tsk_ = (int64_t)b_; tsk_ < (int64_t)e_; tsk_++) {
        float *v = buf + tid_ * (vsz + msz), *m = v + vsz;
        /* task: chunk of tiles tsk, output channels [o_lo, o_hi) */
        int64_t tsk = tsk_ / j_->osplit, o_lo = tsk_ % j_->osplit * j_->ostep;
        int64_t o_hi = o_lo + j_->ostep < OP ? o_lo + j_->ostep : OP;
        int64_t n = tsk / chunks, t0 = tsk % chunks * WINO_TILES;
        int64_t cnt = TT - t0 < WINO_TILES ? TT - t0 : WINO_TILES;
        if (avx512) {
            wino_input_avx512(g, x, n, t0, cnt, TW, v);
        } else {
            wino_input_avx2(g, x, n, t0, cnt, TW, v);
        }
        for (int xi = 0; xi < 16; xi++) {
            for (int64_t o0 = o_lo; o0 < o_hi; o0 += 64) {
                int nv = (OP - o0) / 16 < 4 ? (int)((OP - o0) / 16) : 4;
                for (int64_t t = 0; t < cnt; t += DIRECT_PB) {
                    int64_t pb = cnt - t < DIRECT_PB ? cnt - t : DIRECT_PB;
                    conv_direct_fn(nv, pb)(v + (xi * cnt + t) * C, C, 0, 0, 1,
                                       1, 1, C, u + xi * C * OP + o0, OP,
                                       zb, NULL,
                                       m + (xi * cnt + t) * OP + o0, OP,
                                       16 * nv, NULL, NULL, 0);
                }
            }
        }
        (avx512 ? wino_output_avx512 : wino_output_avx2)(
            g, m, OP, bp, y, n, t0, cnt, TW, o_lo, o_hi);
    }
}

wnn_status
conv_winograd_nhwc(const cpu_call *k, wnn_error *err, const geom *g,
                   int layout, const float *x, const float *w, const float *b,
                   float *y)
{
    const int64_t C = g->C, O = g->O, OP = (O + 15) / 16 * 16;
    const int64_t TW = (g->OW + 1) / 2, TT = (g->OH + 1) / 2 * TW;
    const int64_t chunks = (TT + WINO_TILES - 1) / WINO_TILES;
    const int64_t tasks = g->N * chunks;
    double flops = 2.0 * g->N * O * g->OH * g->OW * C * 9;
    int nt = threads_for(flops);
    const int64_t vsz = 16 * WINO_TILES * C, msz = 16 * WINO_TILES * OP;
    /* the filter as [C][3][3][OP], then transformed: once for a constant
     * filter (cpu_prep) */
    float *u = cpu_prep_get(k, 1, CPU_PREP_WINOGRAD), *own = NULL;
    if (!u) {
        float *gt = fcalloc((size_t)(9 * C * OP) + 16);
        u = own = gt ? falloc((size_t)(16 * C * OP)) : NULL;
        if (u) {
            int64_t s[4], t4[4] = { 1, 9 * OP, 3 * OP, OP }, d[4] = { O, C, 3, 3 };
            conv_filter_strides(layout, g, s);
            reorder(w, s, gt, t4, d);
            (cpu_has_avx512() ? wino_filter_avx512 : wino_filter_avx2)(gt, C, OP,
                                                                     u);
            if (cpu_prep_keep(k, 1, CPU_PREP_WINOGRAD, u)) {
                own = NULL;
            }
        }
        free(gt);
    }
    float *bp = fcalloc((size_t)OP + 16);
    float *zb = fcalloc(80);
    float *buf = falloc((size_t)((vsz + msz) * nt));
    if (!u || !bp || !zb || !buf) {
        free(own);
        free(bp);
        free(zb);
        free(buf);
        return cpu_fail(k, err, "out of memory");
    }
    if (b) {
        memcpy(bp, b, (size_t)O * sizeof(float));
    }
    /* Few chunks of tiles (small images: 7 x 7 is 16 tiles, one chunk)
     * would leave threads idle, each task reading all the transformed
     * filter: cut the output channels too, into ranges of 64-channel
     * blocks, about 4 tasks a thread (each range transforms its tiles'
     * input again, 1 / (2 x its channels) of its work).  ResNet50's
     * 7 x 7 512 -> 512 at batch 1: 2.9 -> 0.8 ms (the direct kernel
     * 1.25). */
    int64_t nob = (OP + 63) / 64, osplit = 1;
    if (tasks < 4 * (int64_t)nt) {
        osplit = (4 * nt + tasks - 1) / tasks;
        osplit = osplit < nob ? osplit : nob;
    }
    int64_t ostep = (nob + osplit - 1) / osplit * 64;
    osplit = (OP + ostep - 1) / ostep;
    {
        wino_job j_ = {.buf = buf, .vsz = vsz, .msz = msz, .chunks = chunks,
                       .osplit = osplit, .ostep = ostep,
                       .TT = TT, .TW = TW, .g = g, .x = x, .C = C, .OP = OP,
                       .u = u, .zb = zb, .bp = bp, .y = y};
        cpu_parallel_for_dynamic((int64_t)(tasks * osplit), 1, nt, wino_body,
                                 &j_);
    }
    free(own);
    free(bp);
    free(zb);
    free(buf);
    return WNN_OK;
}
#endif
