/* ck_common.cuh -- device helpers shared by the .cu files: element loads and
 * stores per data type, grid sizes; the scalar numerics they share with the
 * CPU kernels are csrc/include/wnn_numerics.h's.
 *
 * Built with -fmad=false (no contraction of a * b + c into an FMA) and
 * without fast-math, so float32 arithmetic rounds exactly as the CPU
 * kernels' (GCC in ISO C mode does not contract either); float16 values are
 * widened exactly and rounded back to nearest even (__float2half_rn), as
 * wnn_f32_to_f16 does. */
#ifndef CK_COMMON_CUH
#define CK_COMMON_CUH
#include <stdint.h>

#ifdef CK_HOST_EMU
#include "emu/ck_host_emu.h" /* the same sources compiled for the CPU */
#else
#include <cuda_fp16.h>
#endif

#include "cuda_kernels.h"
/* the scalar numerics shared with the CPU kernels (wnn_exp_core, wnn_exp,
 * the saturating casts, the quantize formula, ...): one definition */
#include "../csrc/include/wnn_numerics.h"

#define CK_THREADS 256

/* Kernel launches: kernel<<<blocks, threads, 0, stream>>>(args...); the
 * CPU emulation (emu/) runs the kernel as one thread of one block, or
 * records it while the stream captures a CUDA graph. */
#ifdef CK_HOST_EMU
#define CK_LAUNCH(kernel, blocks, threads, stream, ...) \
    ((void)(blocks), (void)(threads),                  \
     ck_emu_launch((void *)(stream), kernel, __VA_ARGS__))
#else
#define CK_LAUNCH(kernel, blocks, threads, stream, ...) \
    kernel<<<(blocks), (threads), 0, (stream)>>>(__VA_ARGS__)
#endif

/* Blocks for a grid-stride loop over n items. */
static inline unsigned
ck_blocks(int64_t n)
{
    int64_t b = (n + CK_THREADS - 1) / CK_THREADS;
    if (b > 65536) {
        b = 65536;
    }
    return b < 1 ? 1u : (unsigned)b;
}

#define CK_LOOP(i, n)                                                    \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;     \
         i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* float16 bits <-> float (wnn_numerics.h: the device's instructions on a
 * GPU, the core's conversion in the emulation) */
__device__ __forceinline__ float
ck_h2f(uint16_t h)
{
    return wnn_half_to_float(h);
}

__device__ __forceinline__ uint16_t
ck_f2h(float f)
{
    return wnn_float_to_half(f);
}

/* float32 / float16 element i as float */
__device__ __forceinline__ float
ck_ldf(const void *p, int t, int64_t i)
{
    return t == WNN_KDT_F32 ? ((const float *)p)[i]
                       : ck_h2f(((const uint16_t *)p)[i]);
}

__device__ __forceinline__ void
ck_stf(void *p, int t, int64_t i, float v)
{
    if (t == WNN_KDT_F32) {
        ((float *)p)[i] = v;
    } else {
        ((uint16_t *)p)[i] = ck_f2h(v);
    }
}

/* integer element i in the int64 domain (uint64: the same bits) */
__device__ __forceinline__ int64_t
ck_ldi(const void *p, int t, int64_t i)
{
    switch (t) {
    case WNN_KDT_I32: return ((const int32_t *)p)[i];
    case WNN_KDT_U32: return ((const uint32_t *)p)[i];
    case WNN_KDT_I8: return ((const int8_t *)p)[i];
    case WNN_KDT_U8: return ((const uint8_t *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}

/* store with two's-complement wrap-around (the low bits) */
__device__ __forceinline__ void
ck_sti(void *p, int t, int64_t i, int64_t v)
{
    switch (t) {
    case WNN_KDT_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case WNN_KDT_U32: ((uint32_t *)p)[i] = (uint32_t)(uint64_t)v; break;
    case WNN_KDT_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
    case WNN_KDT_U8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
    default: ((int64_t *)p)[i] = v; break;
    }
}

/* Offsets of `nops` operands for output element i of a broadcast. */
__device__ __forceinline__ void
ck_bcast_offsets(const wnn_broadcast_params &it, int nops, int64_t i,
                 int64_t *off)
{
    uint32_t r = (uint32_t)i;
    off[0] = off[1] = off[2] = 0;
    for (int d = (int)it.rank - 1; d >= 0; d--) {
        uint32_t sd = (uint32_t)it.shape[d];
        uint32_t q = r / sd;
        int64_t idx = (int64_t)(r - q * sd);
        r = q;
        for (int k = 0; k < nops; k++) {
            off[k] += idx * it.st[k][d];
        }
    }
}

#endif
