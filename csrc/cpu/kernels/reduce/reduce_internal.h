/* reduce_internal.h -- what the CPU kernels of the reduction family share
 * (reduce.c: the reduce* ops; reduce_arg.c: argMin / argMax; reduce_scan.c:
 * cumulativeSum): the block sizes, the conversions between the data types
 * and the accumulation domains, the NaN-aware extremes and the reduction passes (reduce.c).
 * Semantics and layout: reduce.c's opening comment. */
#ifndef WNN_CPU_REDUCE_INTERNAL_H
#define WNN_CPU_REDUCE_INTERNAL_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../cpu.h"

/* Selects between floating-point values (the clamps, NaN-aware max / min,
 * argMin / argMax updates) are if-converted and vectorised only when GCC
 * may assume that comparisons do not trap; no FP exception flags are used. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#define CH 1024    /* outputs per block, elements per chunk */
#define LANES 8    /* independent partial results of a run */
#define SMALL_RUN 16 /* runs shorter than this: a block of outputs at once */


static inline int
threads_for(uint64_t total)
{
    return total >= CPU_PARALLEL_MIN ? cpu_num_threads() : 1;
}

static inline bool
is_float_type(wnn_dtype t)
{
    return t == WNN_FLOAT32 || t == WNN_FLOAT16;
}


/* ---- conversions ------------------------------------------------------- */
/* float16 -> float32, exact (F. Giesen's conversion, with selects so that
 * it vectorises). */
static inline float
h2f(uint16_t h)
{
    const uint32_t emask = 0x7c00u << 13;
    const float magic = 6.103515625e-05f; /* 2^-14, bits 113 << 23 */
    uint32_t shifted = (uint32_t)(h & 0x7fff) << 13;
    uint32_t exp = shifted & emask;
    uint32_t o = shifted + ((127u - 15u) << 23);
    o += exp == emask ? (128u - 16u) << 23 : 0u; /* Inf / NaN */
    uint32_t os = o + (1u << 23);                 /* zero / subnormal */
    float fo, fs;
    memcpy(&fo, &o, 4);
    memcpy(&fs, &os, 4);
    fs -= magic;
    float r = exp == 0 ? fs : fo;
    uint32_t u;
    memcpy(&u, &r, 4);
    u |= (uint32_t)(h & 0x8000) << 16;
    memcpy(&r, &u, 4);
    return r;
}

typedef struct widen_job {
    float *f;
    const uint16_t *h;
    uint64_t n;
} widen_job;

static inline void
widen_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const widen_job *j_ = p_;
    float *f = j_->f;
    const uint16_t *h = j_->h;
    uint64_t n = j_->n;
    for (uint64_t c = (uint64_t)b_; c < (uint64_t)e_; c++) {
        uint64_t e = (c + 1) * CH < n ? (c + 1) * CH : n;
        for (uint64_t i = c * CH; i < e; i++) {
            f[i] = h2f(h[i]);
        }
    }
}

/* float16 tensor -> malloc'd float32 copy (exact), converted in parallel */
static inline float *
widen_f16(const uint16_t *h, uint64_t n)
{
    float *f = malloc(n * sizeof(float) + 64);
    if (!f) {
        return NULL;
    }
    uint64_t nc = (n + CH - 1) / CH;
    {
        widen_job j_ = {.f = f, .h = h, .n = n};
        cpu_parallel_for((int64_t)(nc), threads_for(n), widen_body, &j_);
    }
    return f;
}

/* n elements at element offset `off` of data of type t -> double */
static inline void
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

static inline void
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
            p[i] = wnn_f64_to_f16(s[i]);
        }
    }
}

/* integers -> uint64 (signed types sign-extended) */
static inline void
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
static inline void
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

static inline void
load_any(wnn_dtype t, const void *base, uint64_t off, size_t n, cbuf *b)
{
    if (is_float_type(t)) {
        load_d(t, base, off, n, b->d);
    } else {
        load_u(t, base, off, n, b->u);
    }
}

/* Three accumulation domains: d (double, float data), s (signed integers in
 * uint64), u (unsigned integers in uint64): a value of the data -> its
 * accumulator. */
static inline double toacc_d(double v) { return v; }
static inline uint64_t toacc_s(int64_t v) { return (uint64_t)v; }
static inline uint64_t toacc_u(uint64_t v) { return v; }

/* "x is a better candidate than the current best b" (argMin / argMax, and
 * reduceMax / reduceMin in the data type): strictly greater (or
 * smaller), so ties keep the first index; a NaN beats any number and no
 * later value beats a NaN (x != x is false for integers). */
#define BETTER_MAX(x, b) (((x) > (b)) | (((x) != (x)) & ((b) == (b))))
#define BETTER_MIN(x, b) (((x) < (b)) | (((x) != (x)) & ((b) == (b))))

/* The extreme (max or min, NaN-propagating) of x[0, n), n >= 1, in the data
 * type (reduce.c: plain entry points to its hot loops, CPU_HOT_RET, which
 * stay static there). */
float cpu_extreme_f32(bool mx, const float *restrict x, size_t n);
int8_t cpu_extreme_i8(bool mx, const int8_t *restrict x, size_t n);
uint8_t cpu_extreme_u8(bool mx, const uint8_t *restrict x, size_t n);
int32_t cpu_extreme_i32(bool mx, const int32_t *restrict x, size_t n);
uint32_t cpu_extreme_u32(bool mx, const uint32_t *restrict x, size_t n);
int64_t cpu_extreme_i64(bool mx, const int64_t *restrict x, size_t n);
uint64_t cpu_extreme_u64(bool mx, const uint64_t *restrict x, size_t n);

/* acc = acc (+) f(x) over the reduced values */
typedef enum pass { P_SUM, P_ABS, P_SQ, P_EXP, P_PROD, P_MAX, P_MIN } pass;

/* The reduction passes of reduce.c, also cumulativeSum's (reduce_scan.c):
 * acc (+) pass(x[0, n)) of one run (sh: P_EXP's shift), and the
 * element-wise accumulation of nrows rows of len elements stride apart
 * into acc[0, len) (shift: P_EXP's, one per element, or NULL). */
#define DECL_REDUCE(SUF, TYPE, ACC)                                            \
    ACC cpu_reduce_run_##SUF(pass p, const TYPE *restrict x, size_t n,         \
                             ACC acc, double sh);                              \
    void cpu_reduce_rows_##SUF(pass p, const TYPE *restrict x, size_t nrows,   \
                               uint64_t stride, size_t len,                    \
                               ACC *restrict acc, const double *shift);
DECL_REDUCE(f32, float, double)
DECL_REDUCE(i8, int8_t, uint64_t)
DECL_REDUCE(u8, uint8_t, uint64_t)
DECL_REDUCE(i32, int32_t, uint64_t)
DECL_REDUCE(u32, uint32_t, uint64_t)
DECL_REDUCE(i64, int64_t, uint64_t)
DECL_REDUCE(u64, uint64_t, uint64_t)
#undef DECL_REDUCE

#endif
