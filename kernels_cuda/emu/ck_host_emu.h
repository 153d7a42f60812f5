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

/* A kernel's launch (ck_common.cuh, CK_LAUNCH): run at once, or, while
 * the stream captures a CUDA graph, recorded with its arguments copied as
 * the launch evaluates them (kernel parameters are passed by value), for
 * cudaGraphLaunch to run (emu_stream.h, cuda_emu.c ck_emu_record). */
extern "C" int ck_emu_record(void *stream, void (*run)(void *),
                             void (*drop)(void *), void *arg);
extern "C" int ck_emu_is_capturing(void *stream);

template <typename F, typename... A>
static inline void
ck_emu_launch(void *stream, F f, A... a)
{
    if (!ck_emu_is_capturing(stream)) {
        f(a...);
        return;
    }
    auto *call = new auto([=]() { f(a...); });
    using C = decltype(call);
    ck_emu_record(stream, [](void *p) { (*(C)p)(); },
                  [](void *p) { delete (C)p; }, call);
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
