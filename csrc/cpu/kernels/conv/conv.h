/* conv.h -- the CPU kernels of conv2d and convTranspose2d, one file per
 * algorithm (this header: what they share)
 * (#api-mlgraphbuilder-conv2d, #api-mlgraphbuilder-convtranspose2d).
 *
 * Everything is computed in float32 (float16 operands are widened first and
 * the result rounded back once).  conv2d takes one of these paths:
 *
 *   depthwise  groups == input channels, one input channel per group (any
 *              channel multiplier): direct kernels, vectorised along the
 *              width on a zero-padded copy of each plane (nchw) or along
 *              the channels with the 3x3 weights in registers (nhwc; the
 *              interior columns with AVX-512 intrinsics where the CPU has
 *              it).
 *   winograd   3x3 filters, strides and dilations 1, groups 1, >= 16
 *              channels in and out, on a CPU with AVX-512: Winograd
 *              F(2x2, 3x3) (16 products per 2 x 2 outputs instead of 36),
 *              its 16 channel sums on the micro-kernel below; inputs with
 *              infinities, NaN or huge values take the direct kernel.
 *   direct     on a CPU with AVX-512 (groups 1, and grouped nhwc
 *              convolutions group by group, each group's channels read
 *              and written in place in the pixel): a register-blocked
 *              micro-kernel (6 x 4 vectors of accumulators; a broadcast
 *              value times 4 vectors per step; 12 x 1, 8 x 2 for 16 and
 *              32 channels, 8 x (16 + 8 lanes) for exactly 24) with no
 *              im2col and no packing.  nhwc: 6 output pixels x 64 output channels, any
 *              filter size, strides, dilations, padding (the border pixels
 *              take only their valid taps; short rows, groups 1: the
 *              taps gathered into a column matrix for one 1x1 product
 *              over all pixels, conv_direct_gathered).  nchw 1x1 with strides 1 and no
 *              padding: the product W (O x C) X (C x HW), 6 output channels
 *              x 64 pixels.  nchw with larger filters: the input transposed
 *              to nhwc and the result back (vectorised 16 x 16 transposes;
 *              two cheap passes next to the work).  WEBNN_CONV_DIRECT=0 in
 *              the environment turns this path off.
 *   general    everything else (grouped nchw convolutions, strided or padded
 *              1x1 in nchw, CPUs without AVX-512): im2col of a band of
 *              output rows into a per-thread buffer (sized for L2), then a
 *              single-threaded BLIS product per band; 1x1 filters with
 *              strides 1 and no padding use the input as the matrix,
 *              without im2col.  When there are fewer bands than threads,
 *              the product is cut across the threads instead.
 *
 * Work is cut into tasks (rows, bands, planes) that the pool's threads take
 * dynamically, so that a thread held up by another process does not keep
 * the others waiting; the bias is added in the kernels (no extra pass).  The
 * filter is used in place when its layout is the one a path wants and is
 * otherwise reordered once per call.
 *
 * convTranspose2d: per image and group, one product (cut across the
 * threads) gives every (output channel, ky, kx) contribution of every input
 * pixel; then, starting from the bias, each nchw output plane adds its
 * contributions row by row, and each nhwc output pixel gathers its own (no
 * write conflicts; threaded over planes / rows).
 *
 * Every index into the input is checked against its bounds or comes from a
 * range computed to stay inside it (padding reads zeros), whatever the
 * options; vector loads never run past a buffer.
 *
 * Files: conv2d.c (the choice of path), depthwise.c, winograd.c, direct.c,
 * direct_nchw.c (nchw on the direct kernels),
 * im2col.c (im2col + BLIS, the general path), transpose.c
 * (convTranspose2d), pair.c (a 1x1 expansion and the depthwise convolution
 * reading it, in one pass: the conv pairs of compiler/fuse.h).  BLIS is called through cpu/blis/gemm.c only. */
#ifndef WNN_CPU_CONV_H
#define WNN_CPU_CONV_H
#include <stdlib.h>
#include <string.h>

#include "../../gemm.h"

/* a * b + c may be one fused multiply-add (-std=c11 turns contraction off
 * in GCC) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#endif

/* Hot loops: CPU_HOT_VOID / CPU_HOT_RET (cpu.h), built for AVX-512, AVX2 +
 * FMA and baseline x86-64 and run at cpu_isa()'s level. */

/* 16 floats; loads and stores through it may be unaligned.  In the
 * AVX-512 clones one register, in the others two or four. */
typedef float v16 __attribute__((vector_size(64), aligned(4), may_alias));
/* n floats (and 64 bytes more, for loads that run a little past the end),
 * 64-byte aligned: a vector load of a filter or scratch row never spans two
 * cache lines (split loads halved the 1x1 kernel's speed in the processes
 * whose malloc returned an address 16 bytes into a line).  Freed with
 * free(); fcalloc zeroes them. */
static inline float *
falloc(size_t n)
{
    if (n > (SIZE_MAX - 128) / sizeof(float)) {
        return NULL;
    }
    return aligned_alloc(64, (n * sizeof(float) + 64 + 63) / 64 * 64);
}

static inline float *
fcalloc(size_t n)
{
    float *p = falloc(n);
    if (p) {
        memset(p, 0, n * sizeof(float) + 64);
    }
    return p;
}

/* f in every lane (f - 0 is f for every f, -0 included, and folds away) */
#define bcast(f) ((float)(f) - (v16){ 0 })

typedef int v16i __attribute__((vector_size(64)));
/* the even / odd elements of the 32 in a, b */
#if defined(__clang__)
#define EVEN(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, \
                                           18, 20, 22, 24, 26, 28, 30)
#define ODD(a, b) __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, \
                                          19, 21, 23, 25, 27, 29, 31)
#else
#define SHUF2(a, b, m) __builtin_shuffle(a, b, m)
#define EVEN(a, b) __builtin_shuffle(a, b, (v16i){ 0, 2, 4, 6, 8, 10, 12, 14, 16, \
                                                   18, 20, 22, 24, 26, 28, 30 })
#define ODD(a, b) __builtin_shuffle(a, b, (v16i){ 1, 3, 5, 7, 9, 11, 13, 15, 17, \
                                                  19, 21, 23, 25, 27, 29, 31 })
#endif


/* The convolutions' products (alpha 1, beta 0) on the GEMM service
 * (cpu/gemm.h): on the calling thread alone (inside pool regions), and in
 * pieces that nt threads of the pool take dynamically */
static inline void
sgemm_1t(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
         int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc)
{
    cpu_product(&(cpu_gemm_req){.ta = ta, .tb = tb, .m = m, .n = n, .k = k,
                                .a = a, .lda = lda, .b = b, .ldb = ldb,
                                .c = c, .ldc = ldc, .threads = 1},
                NULL);
}
static inline void
sgemm_par(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
          int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
          int nt)
{
    cpu_product(&(cpu_gemm_req){.ta = ta, .tb = tb, .m = m, .n = n, .k = k,
                                .a = a, .lda = lda, .b = b, .ldb = ldb,
                                .c = c, .ldc = ldc,
                                .threads = nt > 1 ? nt : 1},
                NULL);
}

static inline int64_t
ceil_div(int64_t a, int64_t b) /* b > 0 */
{
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

static inline int64_t
clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The range [lo, hi) of outputs o in [0, n) whose input o * s + off falls in
 * [0, len). */
static inline void
valid_range(int64_t n, int64_t s, int64_t off, int64_t len, int64_t *lo,
            int64_t *hi)
{
    int64_t a = ceil_div(-off, s), b = ceil_div(len - off, s);
    *lo = clamp64(a, 0, n);
    *hi = clamp64(b, *lo, n);
}

static inline int
threads_for(double flops)
{
    return flops < 2e6 ? 1 : cpu_num_threads();
}

/* Operand data as float32: the pointer itself, or a widened copy in *own. */
static inline const float *
as_f32(const void *p, wnn_dtype t, uint64_t n, float **own)
{
    *own = NULL;
    if (t == WNN_FLOAT32) {
        return p;
    }
    *own = cpu_to_f32(p, t, n);
    return *own;
}

/* A filter with dimensions (o, i, h, w) of sizes d[4] and element strides
 * s[4], copied to the layout with strides t[4]. */
static inline void
reorder(const float *src, const int64_t *s, float *dst, const int64_t *t,
        const int64_t *d)
{
    for (int64_t o = 0; o < d[0]; o++) {
        for (int64_t i = 0; i < d[1]; i++) {
            for (int64_t h = 0; h < d[2]; h++) {
                for (int64_t w = 0; w < d[3]; w++) {
                    dst[o * t[0] + i * t[1] + h * t[2] + w * t[3]] =
                        src[o * s[0] + i * s[1] + h * s[2] + w * s[3]];
                }
            }
        }
    }
}

/* ---- conv2d geometry ------------------------------------------------------ */
typedef struct geom {
    int64_t N, C, H, W;     /* input                                  */
    int64_t O, OH, OW;      /* output channels and size               */
    int64_t KH, KW;         /* filter size                            */
    int64_t G, Cg, Og;      /* groups, channels per group in and out  */
    int64_t pt, pl;         /* padding at the top and left            */
    int64_t sh, sw, dh, dw; /* strides, dilations                     */
    bool nhwc;
    bool direct_ok, winograd_ok, gather_ok; /* cpu/config.h */
    /* a fused epilogue (float32 only) that the path may apply on each
     * block it stores (cpu_epi_tile, offsets in this geometry's layout)
     * and then mark applied; a path that does not leaves it to the
     * backend.  A path that computes in another layout (nchw through
     * nhwc) clears it for the inner call. */
    cpu_epi *epi;
    /* an input scale (cpu_call.in_scale) that the direct nhwc path applies
     * to its packed filter (conv2d.c chooses), or NULL */
    const float *in_scale;
} geom;

/* Strides of a conv2d filter layout, in (o, i, h, w) order. */
static inline void
conv_filter_strides(int layout, const geom *g, int64_t *s)
{
    int64_t O = g->O, I = g->Cg, KH = g->KH, KW = g->KW;
    switch (layout) {
    case WNN_CONV_HWIO: s[0] = 1, s[1] = O, s[2] = KW * I * O, s[3] = I * O; break;
    case WNN_CONV_OHWI: s[0] = KH * KW * I, s[1] = 1, s[2] = KW * I, s[3] = I; break;
    case WNN_CONV_IHWO: s[0] = 1, s[1] = KH * KW * O, s[2] = KW * O, s[3] = O; break;
    default: s[0] = I * KH * KW, s[1] = KH * KW, s[2] = KW, s[3] = 1; break;
    }
}



/* The geometry lowered at compile (compiler/lower/conv.c), shared by
 * conv2d and convTranspose2d. */
static inline void
geom_from(geom *g, const wnn_conv_params *p)
{
    g->nhwc = p->nhwc;
    g->N = p->N, g->C = p->C, g->H = p->H, g->W = p->W;
    g->O = p->O, g->OH = p->OH, g->OW = p->OW;
    g->KH = p->KH, g->KW = p->KW;
    g->G = p->G, g->Cg = p->Cg, g->Og = p->Og;
    g->pt = p->pad[0], g->pl = p->pad[2];
    g->sh = p->sh, g->sw = p->sw, g->dh = p->dh, g->dw = p->dw;
    g->epi = NULL;
    g->in_scale = NULL;
    g->direct_ok = g->winograd_ok = g->gather_ok = false; /* the caller's */
}


/* ---- direct kernels (AVX-512; direct.c, winograd.c) ---------------------- */
/* ---- direct nhwc convolution (AVX-512) ------------------------------------- */

/* A register-blocked direct convolution for nhwc, groups 1: PB output pixels
 * of a row times NV x 16 output channels stay in registers while the taps
 * and input channels stream by (a broadcast input value times NV weight
 * vectors).  No im2col, no packing; the filter is [KH][KW][C][OP] with the
 * output channels padded to OP, a multiple of 16.  On AVX-512 (32 vector
 * registers hold the 6 x 4 accumulators) and AVX2 + FMA (blocks of 6 x 1,
 * direct.c); at the baseline level the im2col + BLIS path runs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(WNN_NO_CLONES) && __GNUC__ >= 12
#define HAVE_DIRECT 1
#define DIRECT CPU_TARGET_V4
#define DIRECT_PB 6
typedef void (*direct_fn)(const float *, int64_t, int64_t, int64_t, int64_t,
                          int64_t, int64_t, int64_t, const float *, int64_t,
                          const float *, const float *, float *, int64_t,
                          int64_t, const float *, const float *, int);
#include <immintrin.h>
/* The register epilogue of one vector (conv.h, reg_epi_of): + the
 * residual's lanes m (rp NULL: none), then the clamp (cl NULL: none);
 * max(lo, v) and min(hi, v) keep a NaN v, as the separate clamp does. */
DIRECT static inline __attribute__((always_inline)) __m512
reg_epi512(__m512 v, const float *rp, __mmask16 m, const float *cl)
{
    if (rp) {
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, rp));
    }
    if (cl) {
        v = _mm512_max_ps(_mm512_set1_ps(cl[0]), v);
        v = _mm512_min_ps(_mm512_set1_ps(cl[1]), v);
        v = _mm512_add_ps(v, _mm512_set1_ps(cl[2]));
    }
    return v;
}

/* the micro-kernels, direct_fns[nv][pb] (direct.c) */
extern const direct_fn conv_direct_fns[5][7];
#define direct_fns conv_direct_fns
direct_fn conv_direct_pick(int nv, bool w24, int64_t n, int64_t *pb);
/* the nv x pb micro-kernel of the CPU's level (pb <= DIRECT_PB) */
direct_fn conv_direct_fn(int nv, int64_t pb);
/* the packed weights' block width in output channels for weights of
 * `taps` rows: 64, or 16 at AVX2 for 128 rows and more (direct.c) */
int64_t conv_direct_bw(int64_t taps);
/* the columns [*lo, *hi) of an nhwc direct convolution's output rows
 * whose taps all fall inside the input row */
void conv_direct_cols(const geom *g, int64_t *lo, int64_t *hi);
/* output row oh of image n of an nhwc direct convolution (groups 1; wt
 * packed by conv_direct_pack, bp its bias padded to 16 channels, g->epi
 * applied) written at yrow instead of its place in the output */
void conv_direct_prow(const geom *g, const float *x, const float *wt,
                      const float *bp, float *yrow, int64_t n, int64_t oh,
                      int64_t lo, int64_t hi);
#endif

/* The part of a fused epilogue the direct micro-kernels apply in registers
 * before the store: a residual add and clamp / relu.  reg_epi_of fills
 * clamp[3] = { lo, hi, pz } (relu: 0, +inf, +0: max(0, x) + 0 turns -0
 * into +0 as relu does; clamp: pz = -0, which changes nothing) and says
 * whether `e` is of that kind; *res is the residual's base or NULL. */
static inline bool
reg_epi_of(const cpu_epi *e, float clamp[3], const float **res,
           const float **cl)
{
    *res = NULL;
    *cl = NULL;
    if (!e || e->bn || e->prog || (e->add_kind != WNN_EPI_ADD_NONE &&
               e->add_kind != WNN_EPI_ADD_RESIDUAL) ||
        (e->act != WNN_OP_COUNT && e->act != WNN_OP_CLAMP &&
         e->act != WNN_OP_RELU)) {
        return false;
    }
    if (e->add_kind == WNN_EPI_ADD_RESIDUAL) {
        *res = e->addend;
    }
    if (e->act == WNN_OP_CLAMP) {
        clamp[0] = e->pr.lo, clamp[1] = e->pr.hi, clamp[2] = -0.0f;
        *cl = clamp;
    } else if (e->act == WNN_OP_RELU) {
        clamp[0] = 0.0f, clamp[1] = __builtin_inff(), clamp[2] = 0.0f;
        *cl = clamp;
    }
    return true;
}

/* clamp(v) of reg_epi_of in portable code: lanes below lo (not NaN) take
 * lo, then lanes above hi take hi (compare masks and blends) */
static inline __attribute__((always_inline)) void
reg_clamp16(v16 *v, const float *cl)
{
    const v16 lo = bcast(cl[0]), hi = bcast(cl[1]);
    v16i m = *v < lo;
    v16 r = (v16)((m & (v16i)lo) | (~m & (v16i)*v));
    m = r > hi;
    r = (v16)((m & (v16i)hi) | (~m & (v16i)r));
    *v = r + cl[2];
}

/* depthwise.c, for the conv pair (pair.c): the filter as [KH][KW][O] for
 * nhwc (in place, prepared once, or in *own for the caller to free; NULL:
 * out of memory); the output columns [lo, hi) whose 3x3 taps are all inside
 * a row; one nhwc 3x3 output row from its three input rows r[] (a row of
 * zeros for a row outside the input), with a clamp in registers (cl, see
 * reg_epi_of; NULL: none). */
const float *conv_dw_filter(const cpu_call *k, const geom *g, int layout,
                            const float *w, float **own);
void conv_dw3_cols(const geom *g, int64_t *lo, int64_t *hi);
void conv_dw3_row(const geom *g, const float *const r[3], const float *wk,
                  const float *b, float *yr, int64_t lo, int64_t hi,
                  const float *cl);
/* columns [a0, e0) of that row only, column ow at yo + (ow - a0) C */
void conv_dw3_span(const geom *g, const float *const r[3], const float *wk,
                   const float *b, float *yo, int64_t lo, int64_t hi,
                   const float *cl, int64_t a0, int64_t e0);

/* ---- the paths ------------------------------------------------------------ */
wnn_status conv_depthwise(const cpu_call *k, wnn_error *err, const geom *g,
                          int layout, const float *x, const float *w,
                          const float *b, float *y);
/* im2col.c: the column matrix of group gi of images [n0, n0 + nimg) (nhwc),
 * on nt threads: for each output pixel in order, a row of KH KW Cg values
 * in (kh, kw, ci) order, zeros where a tap falls in the padding */
void conv_im2col_nhwc(const geom *g, const float *x, int64_t n0,
                      int64_t nimg, int64_t gi, float *cols, int nt);
wnn_status conv_gemm(const cpu_call *k, wnn_error *err, const geom *g,
                     int layout, const float *x, const float *w,
                     const float *b, float *y);
#if HAVE_DIRECT
bool conv_direct_usable(const geom *g);
bool conv_direct_grouped_usable(const geom *g);
bool conv_direct_gathered(const geom *g);
bool conv_winograd_usable(const cpu_call *k, const geom *g, const float *x,
                          const float *w);
wnn_status conv_winograd_nhwc(const cpu_call *k, wnn_error *err,
                              const geom *g, int layout, const float *x,
                              const float *w, const float *b, float *y);
wnn_status conv_direct_nhwc(const cpu_call *k, wnn_error *err, const geom *g,
                            int layout, const float *x, const float *w,
                            const float *b, float *y);
wnn_status conv_direct_nchw(const cpu_call *k, wnn_error *err, const geom *g,
                            int layout, const float *x, const float *w,
                            const float *b, float *y);
wnn_status conv_direct_1x1_nchw(const cpu_call *k, wnn_error *err,
                                const geom *g, int layout, const float *x,
                                const float *w, const float *b, float *y);
/* direct.c: the packed filter of the nhwc kernel, and its 1x1 product on
 * a span of pixels (see there) */
const float *conv_direct_pack(const cpu_call *k, const geom *g, int layout,
                              const float *w, float **own);
void conv_1x1_span(const float *x, int64_t C, int64_t xs, int64_t p0,
                   int64_t p1, const float *wt, int64_t OP, int64_t O,
                   int64_t ys, int64_t ob, const float *bp, float *y,
                   int64_t off, int64_t ch0, const float *res,
                   const float *cl, const cpu_epi *epi, int nt);
#define direct_usable conv_direct_usable
#define direct_grouped_usable conv_direct_grouped_usable
#define winograd_usable conv_winograd_usable
#endif

#endif
