/* convert.c -- float16 <-> float32 conversion of whole buffers for the
 * kernels that compute float16 in float32 (cpu.h). */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

float *
cpu_to_f32(const void *p, wnn_dtype t, uint64_t n)
{
    float *f = malloc(n * sizeof(float) + 64);
    if (f) {
        const uint16_t *h = p;
        for (uint64_t i = 0; i < n; i++) {
            f[i] = t == WNN_FLOAT16 ? wnn_f16_to_f32(h[i]) : ((const float *)p)[i];
        }
    }
    return f;
}

void
cpu_from_f32(const float *f, void *p, wnn_dtype t, uint64_t n)
{
    if (t == WNN_FLOAT32) {
        memcpy(p, f, n * sizeof(float));
        return;
    }
    uint16_t *h = p;
    for (uint64_t i = 0; i < n; i++) {
        h[i] = wnn_f32_to_f16(f[i]);
    }
}
