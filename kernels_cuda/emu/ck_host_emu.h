/* ck_host_emu.h -- compiles the kernels' .cu sources as plain C++ for the
 * CPU (g++ -x c++ -DCK_HOST_EMU), so that the CUDA backend can be tested on
 * a machine without a GPU: every kernel runs as one thread of one block
 * (its grid-stride loop covers all the work), team reductions have teams of
 * one thread, and the fake runtime of cuda_emu.c stands in for libcudart
 * and cuBLAS.  Only for tests (tests/backends/, `make test-cuda-emu`); the
 * real library never includes this. */
#ifndef CK_HOST_EMU_H
#define CK_HOST_EMU_H
#include <math.h>
#include <stdint.h>
#include <string.h>

/* before cuda_runtime_api.h, which keeps definitions made here */
#define __host__
#define __device__
#define __global__
#define __shared__

struct ck_emu_dim {
    unsigned x, y, z;
};
static const ck_emu_dim threadIdx = { 0, 0, 0 };
static const ck_emu_dim blockIdx = { 0, 0, 0 };
static const ck_emu_dim blockDim = { 1, 1, 1 };
static const ck_emu_dim gridDim = { 1, 1, 1 };

static inline float
__int_as_float(int i)
{
    float f;
    memcpy(&f, &i, 4);
    return f;
}

static inline unsigned
__float_as_uint(float f)
{
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}

static inline void
__syncthreads(void)
{
}

template <typename T>
static inline T
__shfl_xor_sync(unsigned mask, T v, int lane)
{
    (void)mask;
    (void)lane;
    return v;
}

static inline int
atomicMax(int *p, int v)
{
    int old = *p;
    if (v > old) {
        *p = v;
    }
    return old;
}

#endif
