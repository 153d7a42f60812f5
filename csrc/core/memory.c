/* memory.c -- host memory for large buffers (webnn_core.h: wnn_host_alloc),
 * a leaf of csrc/core: the CPU backend's tensors and arenas and the Python
 * layer's result buffers take their memory here. */
#include <stdint.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "webnn_core.h"

void *
wnn_host_alloc(size_t n)
{
    const size_t huge = (size_t)2 << 20;
    if (n == 0) {
        n = 64;
    }
    if (n < huge) {
        return aligned_alloc(64, (n + 63) / 64 * 64);
    }
    if (n > SIZE_MAX - huge) {
        return NULL;
    }
    /* whole huge pages, unless that would add more than an eighth */
    size_t whole = (n + huge - 1) / huge * huge;
    n = whole - n <= n / 8 ? whole : (n + 63) / 64 * 64;
    void *p = NULL;
    if (posix_memalign(&p, huge, n) != 0) {
        return NULL;
    }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    (void)madvise(p, n, MADV_HUGEPAGE); /* a hint: ignored where THP is off */
#endif
    return p;
}
