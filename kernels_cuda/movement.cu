/* movement.cu -- CUDA kernels of the data movement operators (the strided
 * view copy behind transpose, expand, slice, split, concat, reverse, tile
 * and gemm's broadcast of c; pad; triangular), of gather / gatherElements /
 * gatherND / scatterElements / scatterND, and the pointer arrays of a
 * broadcast batched matmul.
 *
 * Semantics of cpu/kernels/movement/movement.c and cpu/kernels/gather_scatter/gather_scatter.c:
 *   - values move bit for bit by their element size (1, 2, 4, 8 bytes);
 *   - pad: edge repeats the border element, reflection mirrors without
 *     repeating it (a dimension of size 1 pads with its only element);
 *   - indices: negative ones count from the end, then they are CLAMPED to
 *     [0, N - 1], so no index value reads or writes outside a buffer;
 *   - scatter: the output is a copy of the input, then updates are written
 *     in the row-major order of the indices; when several updates hit one
 *     element the LAST one wins (scatterElements: one thread walks the
 *     updates of an (outer, inner) pair in order; scatterND: each slice
 *     records the last tuple addressing it with atomicMax, and only that
 *     tuple writes it). */
#include "ck_common.cuh"

namespace {

/* ---- strided view copy ------------------------------------------------- */
template <typename T>
__global__ void
k_view(ck_view_p p, const T *__restrict__ in, T *__restrict__ out)
{
    CK_LOOP(i, p.n)
    {
        uint32_t r = (uint32_t)i;
        int64_t io = 0, oo = 0;
        for (int d = p.rank - 1; d >= 0; d--) {
            uint32_t q = r / p.shape[d];
            int64_t idx = (int64_t)(r - q * p.shape[d]);
            r = q;
            io += idx * p.is[d];
            oo += idx * p.os[d];
        }
        out[oo] = in[io];
    }
}

/* 2-D tiled transpose: the view is [outer, R, C] with the output
 * contiguous along C and the input contiguous along R; out(o, r, c) =
 * in(o, r, c) with in offset o*is0 + r + c*isc and out offset o*os0 + r*osr
 * + c.  Tiles of 32 x 32 through shared memory so that both the reads and
 * the writes are coalesced. */
#define TT 32
template <typename T>
__global__ void
k_transpose_tiled(int64_t outer, uint32_t R, uint32_t C, int64_t is0,
                  int64_t isc, int64_t os0, int64_t osr,
                  const T *__restrict__ in, T *__restrict__ out)
{
    __shared__ T tile[TT][TT + 1];
    uint32_t tiles_c = (C + TT - 1) / TT, tiles_r = (R + TT - 1) / TT;
    int64_t per_outer = (int64_t)tiles_c * tiles_r;
    for (int64_t b = blockIdx.x; b < outer * per_outer; b += gridDim.x) {
        int64_t o = b / per_outer;
        uint32_t t = (uint32_t)(b % per_outer);
        uint32_t r0 = (t / tiles_c) * TT, c0 = (t % tiles_c) * TT;
        const T *src = in + o * is0;
        T *dst = out + o * os0;
        /* read: threadIdx.x runs along r (contiguous in the input) */
        for (uint32_t k = threadIdx.y; k < TT; k += blockDim.y) {
            uint32_t r = r0 + threadIdx.x, c = c0 + k;
            if (r < R && c < C) {
                tile[k][threadIdx.x] = src[(int64_t)r + (int64_t)c * isc];
            }
        }
        __syncthreads();
        /* write: threadIdx.x runs along c (contiguous in the output) */
        for (uint32_t k = threadIdx.y; k < TT; k += blockDim.y) {
            uint32_t r = r0 + k, c = c0 + threadIdx.x;
            if (r < R && c < C) {
                dst[(int64_t)r * osr + c] = tile[threadIdx.x][k];
            }
        }
        __syncthreads();
    }
}

template <typename T>
cudaError_t
copy_view(const ck_view_p *p, const void *in, void *out, cudaStream_t s)
{
#ifndef CK_HOST_EMU
    int L = p->rank - 1;
    /* [outer, R, C] with output contiguous in C (os 1), input contiguous in
     * R (is 1), output rows of C (os[R] == C), and one outer dimension */
    if (L >= 1 && p->os[L] == 1 && p->is[L - 1] == 1 &&
        p->os[L - 1] == (int64_t)p->shape[L] && p->shape[L] >= 8 &&
        p->shape[L - 1] >= 8 && L <= 2) {
        int64_t outer = L == 2 ? p->shape[0] : 1;
        int64_t is0 = L == 2 ? p->is[0] : 0, os0 = L == 2 ? p->os[0] : 0;
        int64_t tiles = outer * (((int64_t)p->shape[L] + TT - 1) / TT) *
                        (((int64_t)p->shape[L - 1] + TT - 1) / TT);
        unsigned nb = tiles > 65536 ? 65536u : (unsigned)tiles;
        CK_LAUNCH(k_transpose_tiled<T>, nb, dim3(TT, 8), s, 
            outer, p->shape[L - 1], p->shape[L], is0, p->is[L], os0,
            p->os[L - 1], (const T *)in, (T *)out);
        return cudaGetLastError();
    }
#endif
    CK_LAUNCH(k_view<T>, ck_blocks(p->n), CK_THREADS, s, *p, (const T *)in,
                                                     (T *)out);
    return cudaGetLastError();
}

/* ---- pad ----------------------------------------------------------------- */
__device__ __forceinline__ int64_t
pad_source(int mode, int64_t x, int64_t n)
{
    if (x >= 0 && x < n) {
        return x;
    }
    switch (mode) {
    case CK_PAD_EDGE:
        return x < 0 ? 0 : n - 1;
    case CK_PAD_REFLECTION: {
        int64_t r = x < 0 ? -x : 2 * (n - 1) - x;
        return r < 0 ? 0 : r >= n ? n - 1 : r;
    }
    default:
        return -1;
    }
}

template <typename T>
__global__ void
k_pad(ck_pad_p p, const T *__restrict__ x, T *__restrict__ y)
{
    T value;
    memcpy(&value, &p.value, sizeof(T));
    CK_LOOP(i, p.n)
    {
        uint32_t r = (uint32_t)i;
        int64_t src = 0;
        bool outside = false;
        for (int d = p.rank - 1; d >= 0; d--) {
            uint32_t q = r / p.oshape[d];
            int64_t idx = (int64_t)(r - q * p.oshape[d]);
            r = q;
            int64_t sidx = pad_source(p.mode, idx - p.begin[d], p.ishape[d]);
            if (sidx < 0) {
                outside = true;
                break;
            }
            src += sidx * p.ist[d];
        }
        y[i] = outside ? value : x[src];
    }
}

/* ---- triangular ------------------------------------------------------------ */
template <typename T>
__global__ void
k_triangular(ck_tri_p p, const T *__restrict__ x, T *__restrict__ y)
{
    CK_LOOP(i, p.n)
    {
        int64_t row = i / p.w, j = i - row * p.w;
        int64_t ii = row % p.h;
        /* upper keeps j - i >= diagonal, lower keeps j - i <= diagonal */
        bool keep = p.upper ? (j - ii >= p.diag) : (j - ii <= p.diag);
        y[i] = keep ? x[i] : (T)0;
    }
}

/* ---- gather / scatter ------------------------------------------------------ */
__device__ __forceinline__ int64_t
index_at(const void *p, int t, int64_t j, int64_t dim)
{
    int64_t v;
    switch (t) {
    case CK_I32: v = ((const int32_t *)p)[j]; break;
    case CK_U32: v = ((const uint32_t *)p)[j]; break;
    default: v = ((const int64_t *)p)[j]; break;
    }
    if (v < 0) {
        v += dim;
        return v < 0 ? 0 : v;
    }
    return v >= dim ? dim - 1 : v;
}

template <typename T>
__global__ void
k_gather(ck_gather_p p, const T *__restrict__ x, const void *__restrict__ idx,
         T *__restrict__ y)
{
    uint32_t inner = (uint32_t)p.inner, n_idx = (uint32_t)p.n_idx;
    CK_LOOP(i, p.n)
    {
        uint32_t q = (uint32_t)i / inner, r = (uint32_t)i - q * inner;
        uint32_t oi = q / n_idx, j = q - oi * n_idx;
        int64_t s = index_at(idx, p.it, j, p.dim);
        y[i] = x[((int64_t)oi * p.dim + s) * p.inner + r];
    }
}

template <typename T>
__global__ void
k_gather_elements(ck_gather_el_p p, const T *__restrict__ x,
                  const void *__restrict__ idx, T *__restrict__ y)
{
    uint32_t inner = (uint32_t)p.inner, a_n = (uint32_t)p.a_n;
    CK_LOOP(i, p.n)
    {
        uint32_t q = (uint32_t)i / inner, r = (uint32_t)i - q * inner;
        uint32_t oi = q / a_n;
        int64_t s = index_at(idx, p.it, i, p.dim);
        y[i] = x[((int64_t)oi * p.dim + s) * p.inner + r];
    }
}

/* one thread per (outer, inner) pair, walking the updates along the axis in
 * order: the last write to an element wins */
template <typename T>
__global__ void
k_scatter_elements(ck_gather_el_p p, const void *__restrict__ idx,
                   const T *__restrict__ u, T *__restrict__ y)
{
    CK_LOOP(pr, p.n)
    {
        int64_t oi = pr / p.inner, r = pr - oi * p.inner;
        int64_t ubase = oi * p.a_n * p.inner + r;
        int64_t ybase = oi * p.dim * p.inner + r;
        for (int64_t a = 0; a < p.a_n; a++) {
            int64_t q = ubase + a * p.inner;
            int64_t s = index_at(idx, p.it, q, p.dim);
            y[ybase + s * p.inner] = u[q];
        }
    }
}

__device__ __forceinline__ int64_t
nd_slice_of(const ck_nd_p &p, const void *idx, int64_t t)
{
    int64_t off = 0, base = t * p.coord;
    for (int d = 0; d < p.coord; d++) {
        off += index_at(idx, p.it, base + d, p.dims[d]) * p.strides[d];
    }
    return off;
}

template <typename T>
__global__ void
k_gather_nd(ck_nd_p p, const T *__restrict__ x, const void *__restrict__ idx,
            T *__restrict__ y)
{
    int64_t n = p.tuples * p.slice;
    CK_LOOP(i, n)
    {
        int64_t t = i / p.slice, r = i - t * p.slice;
        y[i] = x[nd_slice_of(p, idx, t) * p.slice + r];
    }
}

__global__ void
k_scatter_nd_claim(ck_nd_p p, const void *__restrict__ idx, int32_t *winner)
{
    CK_LOOP(t, p.tuples)
    {
        atomicMax(&winner[nd_slice_of(p, idx, t)], (int32_t)t);
    }
}

template <typename T>
__global__ void
k_scatter_nd(ck_nd_p p, const void *__restrict__ idx, const T *__restrict__ u,
             const int32_t *__restrict__ winner, T *__restrict__ y)
{
    int64_t n = p.tuples * p.slice;
    CK_LOOP(i, n)
    {
        int64_t t = i / p.slice, r = i - t * p.slice;
        int64_t s = nd_slice_of(p, idx, t);
        if (winner[s] == (int32_t)t) {
            y[s * p.slice + r] = u[i];
        }
    }
}

/* ---- batched matmul pointers ------------------------------------------------ */
__global__ void
k_batch_pointers(ck_bptr_p p, const char *a, const char *b, char *c,
                 void **ptrs)
{
    CK_LOOP(i, p.batch)
    {
        uint32_t rem = (uint32_t)i;
        int64_t ia = 0, ib = 0;
        for (int d = p.rb - 1; d >= 0; d--) {
            uint32_t q = rem / p.oshape[d];
            int64_t idx = (int64_t)(rem - q * p.oshape[d]);
            rem = q;
            ia += idx * p.sa[d];
            ib += idx * p.sb[d];
        }
        ptrs[i] = (void *)(a + ia * p.ma);
        ptrs[p.batch + i] = (void *)(b + ib * p.mb);
        ptrs[2 * p.batch + i] = (void *)(c + i * p.mc);
    }
}

} // namespace

/* ---- launchers ------------------------------------------------------------ */
#define BY_SIZE(es, ...)                                  \
    switch (es) {                                         \
    case 1: { typedef uint8_t T; __VA_ARGS__; } break;    \
    case 2: { typedef uint16_t T; __VA_ARGS__; } break;   \
    case 4: { typedef uint32_t T; __VA_ARGS__; } break;   \
    default: { typedef uint64_t T; __VA_ARGS__; } break;  \
    }

extern "C" cudaError_t
ck_copy_view(const ck_view_p *p, const void *in, void *out, cudaStream_t s)
{
    cudaError_t e = cudaSuccess;
    BY_SIZE(p->es, e = copy_view<T>(p, in, out, s));
    return e;
}

extern "C" cudaError_t
ck_pad(const ck_pad_p *p, const void *x, void *y, cudaStream_t s)
{
    unsigned nb = ck_blocks(p->n);
    BY_SIZE(p->es, CK_LAUNCH(k_pad<T>, nb, CK_THREADS, s, *p, (const T *)x, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_triangular(const ck_tri_p *p, const void *x, void *y, cudaStream_t s)
{
    unsigned nb = ck_blocks(p->n);
    BY_SIZE(p->es, CK_LAUNCH(k_triangular<T>, nb, CK_THREADS, s, *p, (const T *)x, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_gather(const ck_gather_p *p, const void *x, const void *idx, void *y,
          cudaStream_t s)
{
    unsigned nb = ck_blocks(p->n);
    BY_SIZE(p->es, CK_LAUNCH(k_gather<T>, nb, CK_THREADS, s, *p, (const T *)x, idx, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_gather_elements(const ck_gather_el_p *p, const void *x, const void *idx,
                   void *y, cudaStream_t s)
{
    unsigned nb = ck_blocks(p->n);
    BY_SIZE(p->es, CK_LAUNCH(k_gather_elements<T>, nb, CK_THREADS, s, *p, (const T *)x, idx, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_scatter_elements(const ck_gather_el_p *p, const void *idx, const void *upd,
                    void *y, cudaStream_t s)
{
    unsigned nb = ck_blocks(p->n);
    BY_SIZE(p->es, CK_LAUNCH(k_scatter_elements<T>, nb, CK_THREADS, s, *p, idx, (const T *)upd, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_gather_nd(const ck_nd_p *p, const void *x, const void *idx, void *y,
             cudaStream_t s)
{
    unsigned nb = ck_blocks(p->tuples * p->slice);
    BY_SIZE(p->es, CK_LAUNCH(k_gather_nd<T>, nb, CK_THREADS, s, *p, (const T *)x, idx, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_scatter_nd(const ck_nd_p *p, const void *idx, const void *upd, void *y,
              int32_t *winner, cudaStream_t s)
{
    /* -1 everywhere: no tuple yet */
    cudaError_t e = cudaMemsetAsync(winner, 0xff,
                                    (size_t)p->n_slices * sizeof(int32_t), s);
    if (e != cudaSuccess) {
        return e;
    }
    CK_LAUNCH(k_scatter_nd_claim, ck_blocks(p->tuples), CK_THREADS, s, *p, idx,
                                                                    winner);
    unsigned nb = ck_blocks(p->tuples * p->slice);
    BY_SIZE(p->es, CK_LAUNCH(k_scatter_nd<T>, nb, CK_THREADS, s, *p, idx, (const T *)upd, winner, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_batch_pointers(const ck_bptr_p *p, const void *a, const void *b, void *c,
                  void **ptrs, cudaStream_t s)
{
    CK_LAUNCH(k_batch_pointers, ck_blocks(p->batch), CK_THREADS, s, 
        *p, (const char *)a, (const char *)b, (char *)c, ptrs);
    return cudaGetLastError();
}
