/* support.c -- what every CPU kernel may call besides the pool and BLIS:
 * error reporting, streaming stores and the instruction-set level (cpu.h).  A
 * leaf: it calls nothing else of csrc/cpu, so kernels never call back into
 * backend_cpu.c (which calls them through the ops.def table). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "../ops/ops_internal.h"
#include "cpu.h"

wnn_status
cpu_fail(const cpu_call *k, wnn_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wnn_vfailk(err, WNN_OPERATION_ERROR, wnn_op_get(k->node->op)->camel,
               k->node->label, NULL, fmt, ap);
    va_end(ap);
    return WNN_ERR;
}

/* The instruction-set level of the hand-written kernels (cpu.h): what the
 * CPU has, capped by WEBNN_CPU_ISA (config.c).  Read once per process. */
int
cpu_isa(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    static atomic_int f = 0; /* every thread that races stores the same */
    int v = atomic_load_explicit(&f, memory_order_relaxed);
    if (v == 0) {
        __builtin_cpu_init();
        bool v3 = __builtin_cpu_supports("avx2") &&
                  __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi2");
        bool v4 = v3 && __builtin_cpu_supports("avx512f") &&
                  __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512cd");
        v = v4 ? CPU_ISA_AVX512 : v3 ? CPU_ISA_AVX2 : CPU_ISA_BASELINE;
        int cap = cpu_config_isa_cap();
        v = v < cap ? v : cap;
        atomic_store_explicit(&f, v, memory_order_relaxed);
    }
    return v;
#else
    return CPU_ISA_BASELINE;
#endif
}

bool
cpu_has_avx512(void)
{
    return cpu_isa() >= CPU_ISA_AVX512;
}

void
cpu_copy_nt(void *dst, const void *src, size_t n)
{
#if defined(__SSE2__)
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (head > n) {
        head = n;
    }
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), a);
        _mm_stream_si128((__m128i *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(d + i + 48), e);
    }
    memcpy(d + i, s + i, n - i);
#else
    memcpy(dst, src, n);
#endif
}

void
cpu_nt_fence(void)
{
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

/* cpu_zeros: one region, replaced by one twice as large when a caller needs
 * more; the old ones stay (a caller on another thread may still read them),
 * so that all of them together are under twice the largest.  On Linux an
 * anonymous read-only mapping: every page of it is the kernel's one page
 * of zeros, so it costs neither memory nor a memset (a 14 x 384 row of
 * zeros allocated and zeroed per depthwise call was 5 % of its time). */
static pthread_mutex_t zeros_mu = PTHREAD_MUTEX_INITIALIZER;
static const float *_Atomic zeros_p;
static _Atomic size_t zeros_n;

const float *
cpu_zeros(size_t n)
{
    if (n > (SIZE_MAX - 64) / sizeof(float) / 2) {
        return NULL;
    }
    /* the size first: the pointer stored before it is at least as new */
    if (atomic_load_explicit(&zeros_n, memory_order_acquire) >= n) {
        return atomic_load_explicit(&zeros_p, memory_order_acquire);
    }
    const float *p;
    pthread_mutex_lock(&zeros_mu);
    p = atomic_load_explicit(&zeros_p, memory_order_acquire);
    size_t have = atomic_load_explicit(&zeros_n, memory_order_acquire);
    if (!p || have < n) {
        size_t want = have ? have : 16384; /* 64 KiB to begin with */
        while (want < n) {
            want *= 2;
        }
        size_t bytes = want * sizeof(float) + 64;
        void *q = NULL;
#if defined(__linux__)
        q = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q == MAP_FAILED) {
            q = NULL;
        }
#else
        bytes = (bytes + 63) / 64 * 64;
        q = aligned_alloc(64, bytes);
        if (q) {
            memset(q, 0, bytes);
        }
#endif
        if (q) {
            /* the pointer first: a reader that sees the new size sees
             * the new pointer; one that sees the old size may take either,
             * both long enough for it */
            atomic_store_explicit(&zeros_p, (const float *)q, memory_order_release);
            atomic_store_explicit(&zeros_n, want, memory_order_release);
            p = q;
        } else {
            p = NULL;
        }
    }
    pthread_mutex_unlock(&zeros_mu);
    return p;
}
