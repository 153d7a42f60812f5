/* support.c -- what every CPU kernel may call besides the pool and BLIS:
 * error reporting and streaming stores (cpu.h).  A leaf: it calls nothing
 * else of csrc/cpu, so kernels never call back into backend_cpu.c (which
 * calls them through the ops.def table). */
#include <stdarg.h>
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
