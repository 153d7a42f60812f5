/* support.c -- what every CPU kernel may call besides the pool and BLIS:
 * error reporting, streaming stores and the AVX-512 check (cpu.h).  A
 * leaf: it calls nothing else of csrc/cpu, so kernels never call back into
 * backend_cpu.c (which calls them through the ops.def table). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
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

bool
cpu_has_avx512(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    static atomic_int f = -1; /* every thread that races stores the same */
    int v = atomic_load_explicit(&f, memory_order_relaxed);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512cd");
        atomic_store_explicit(&f, v, memory_order_relaxed);
    }
    return v;
#else
    return false;
#endif
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
