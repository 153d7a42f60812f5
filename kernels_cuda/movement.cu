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
k_view(wnn_view p, const T *__restrict__ in, T *__restrict__ out)
{
    CK_LOOP(i, p.n)
    {
        uint32_t r = (uint32_t)i;
        int64_t io = 0, oo = 0;
        for (int d = p.rank - 1; d >= 0; d--) {
            uint32_t sd = (uint32_t)p.shape[d];
            uint32_t q = r / sd;
            int64_t idx = (int64_t)(r - q * sd);
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
copy_view(const wnn_view *p, const void *in, void *out, cudaStream_t s)
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
            outer, (uint32_t)p->shape[L - 1], (uint32_t)p->shape[L], is0,
            p->is[L], os0,
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
    case WNN_KPAD_EDGE:
        return x < 0 ? 0 : n - 1;
    case WNN_KPAD_REFLECTION: {
        int64_t r = x < 0 ? -x : 2 * (n - 1) - x;
        return r < 0 ? 0 : r >= n ? n - 1 : r;
    }
    default:
        return -1;
    }
}

template <typename T>
__global__ void
k_pad(int64_t n, wnn_pad_params p, const T *__restrict__ x, T *__restrict__ y)
{
    T value;
    memcpy(&value, &p.value, sizeof(T));
    CK_LOOP(i, n)
    {
        uint32_t r = (uint32_t)i;
        int64_t src = 0;
        bool outside = false;
        for (int d = (int)p.rank - 1; d >= 0; d--) {
            uint32_t od = (uint32_t)(p.ishape[d] + p.begin[d] + p.end[d]);
            uint32_t q = r / od;
            int64_t idx = (int64_t)(r - q * od);
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
k_triangular(int64_t n, bool upper, wnn_tri_params p, const T *__restrict__ x,
             T *__restrict__ y)
{
    CK_LOOP(i, n)
    {
        int64_t row = i / p.w, j = i - row * p.w;
        int64_t ii = row % p.h;
        /* upper keeps j - i >= diagonal, lower keeps j - i <= diagonal */
        bool keep = upper ? (j - ii >= p.diag) : (j - ii <= p.diag);
        y[i] = keep ? x[i] : (T)0;
    }
}

/* ---- gather / scatter ------------------------------------------------------ */
__device__ __forceinline__ int64_t
index_at(const void *p, int t, int64_t j, int64_t dim)
{
    int64_t v;
    switch (t) {
    case WNN_KDT_I32: v = ((const int32_t *)p)[j]; break;
    case WNN_KDT_U32: v = ((const uint32_t *)p)[j]; break;
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
k_gather(wnn_kernel_args k, wnn_gather_params p, const T *__restrict__ x,
         const void *__restrict__ idx, T *__restrict__ y)
{
    uint32_t inner = (uint32_t)p.inner, n_idx = (uint32_t)p.n_idx;
    const int64_t dim = (int64_t)p.dim;
    CK_LOOP(i, k.n)
    {
        uint32_t q = (uint32_t)i / inner, r = (uint32_t)i - q * inner;
        uint32_t oi = q / n_idx, j = q - oi * n_idx;
        int64_t s = index_at(idx, k.it, j, dim);
        y[i] = x[((int64_t)oi * dim + s) * (int64_t)inner + r];
    }
}

template <typename T>
__global__ void
k_gather_elements(wnn_kernel_args k, wnn_gather_params p,
                  const T *__restrict__ x, const void *__restrict__ idx,
                  T *__restrict__ y)
{
    uint32_t inner = (uint32_t)p.inner, a_n = (uint32_t)p.a_n;
    const int64_t dim = (int64_t)p.dim;
    CK_LOOP(i, (int64_t)p.n_idx)
    {
        uint32_t q = (uint32_t)i / inner, r = (uint32_t)i - q * inner;
        uint32_t oi = q / a_n;
        int64_t s = index_at(idx, k.it, i, dim);
        y[i] = x[((int64_t)oi * dim + s) * (int64_t)inner + r];
    }
}

/* one thread per (outer, inner) pair, walking the updates along the axis in
 * order: the last write to an element wins */
template <typename T>
__global__ void
k_scatter_elements(wnn_kernel_args k, wnn_gather_params p,
                   const void *__restrict__ idx, const T *__restrict__ u,
                   T *__restrict__ y)
{
    const int64_t inner = (int64_t)p.inner, a_n = (int64_t)p.a_n;
    const int64_t dim = (int64_t)p.dim;
    CK_LOOP(pr, (int64_t)p.outer * inner)
    {
        int64_t oi = pr / inner, r = pr - oi * inner;
        int64_t ubase = oi * a_n * inner + r;
        int64_t ybase = oi * dim * inner + r;
        for (int64_t a = 0; a < a_n; a++) {
            int64_t q = ubase + a * inner;
            int64_t s = index_at(idx, k.it, q, dim);
            y[ybase + s * inner] = u[q];
        }
    }
}

__device__ __forceinline__ int64_t
nd_slice_of(const wnn_gather_params &p, int it, const void *idx, int64_t t)
{
    int64_t off = 0, base = t * (int64_t)p.coord;
    for (int d = 0; d < (int)p.coord; d++) {
        off += index_at(idx, it, base + d, (int64_t)p.dims[d]) *
               (int64_t)p.strides[d];
    }
    return off;
}

template <typename T>
__global__ void
k_gather_nd(wnn_kernel_args k, wnn_gather_params p, const T *__restrict__ x,
            const void *__restrict__ idx, T *__restrict__ y)
{
    const int64_t slice = (int64_t)p.slice, n = (int64_t)p.tuples * slice;
    CK_LOOP(i, n)
    {
        int64_t t = i / slice, r = i - t * slice;
        y[i] = x[nd_slice_of(p, k.it, idx, t) * slice + r];
    }
}

__global__ void
k_scatter_nd_claim(wnn_kernel_args k, wnn_gather_params p,
                   const void *__restrict__ idx, int32_t *winner)
{
    CK_LOOP(t, (int64_t)p.tuples)
    {
        atomicMax(&winner[nd_slice_of(p, k.it, idx, t)], (int32_t)t);
    }
}

template <typename T>
__global__ void
k_scatter_nd(wnn_kernel_args k, wnn_gather_params p,
             const void *__restrict__ idx, const T *__restrict__ u,
             const int32_t *__restrict__ winner, T *__restrict__ y)
{
    const int64_t slice = (int64_t)p.slice, n = (int64_t)p.tuples * slice;
    CK_LOOP(i, n)
    {
        int64_t t = i / slice, r = i - t * slice;
        int64_t s = nd_slice_of(p, k.it, idx, t);
        if (winner[s] == (int32_t)t) {
            y[s * slice + r] = u[i];
        }
    }
}

/* ---- batched matmul pointers ------------------------------------------------ */
__global__ void
k_batch_pointers(wnn_matmul_params p, int es, const char *a, const char *b,
                 char *c, void **ptrs)
{
    /* byte strides between the matrices of a, b and c */
    const int64_t ma = p.M * p.K * es, mb = p.K * p.N * es, mc = p.M * p.N * es;
    CK_LOOP(i, p.batch)
    {
        uint32_t rem = (uint32_t)i;
        int64_t ia = 0, ib = 0;
        for (int d = (int)p.rb - 1; d >= 0; d--) {
            uint32_t bd = (uint32_t)p.bshape[d];
            uint32_t q = rem / bd;
            int64_t idx = (int64_t)(rem - q * bd);
            rem = q;
            ia += idx * p.sa[d];
            ib += idx * p.sb[d];
        }
        ptrs[i] = (void *)(a + ia * ma);
        ptrs[p.batch + i] = (void *)(b + ib * mb);
        ptrs[2 * p.batch + i] = (void *)(c + i * mc);
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
ck_copy_view(const wnn_view *p, int es, const void *in, void *out,
             cudaStream_t s)
{
    cudaError_t e = cudaSuccess;
    BY_SIZE(es, e = copy_view<T>(p, in, out, s));
    return e;
}

/* identity / reshape: x->bytes copied (nothing when the plan gave the
 * output the input's memory) */
extern "C" cudaError_t
ck_run_copy(const cu_launch_args *a)
{
    if (a->out[0] == a->in[0]) {
        return cudaSuccess;
    }
    return cudaMemcpyAsync(a->out[0], a->in[0], a->x->bytes,
                           cudaMemcpyDeviceToDevice, a->s);
}

extern "C" cudaError_t
ck_pad(const wnn_kernel_args *k, const wnn_pad_params *p, const void *x,
       void *y, cudaStream_t s)
{
    unsigned nb = ck_blocks(k->n);
    BY_SIZE(k->es, CK_LAUNCH(k_pad<T>, nb, CK_THREADS, s, k->n, *p, (const T *)x, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_pad(const cu_launch_args *a)
{
    return ck_pad(a->k, &a->l->u.pad, a->in[0], a->out[0], a->s);
}

extern "C" cudaError_t
ck_triangular(const wnn_kernel_args *k, const wnn_tri_params *p, const void *x,
              void *y, cudaStream_t s)
{
    unsigned nb = ck_blocks(k->n);
    bool upper = p->upper != 0;
    BY_SIZE(k->es, CK_LAUNCH(k_triangular<T>, nb, CK_THREADS, s, k->n, upper, *p, (const T *)x, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_triangular(const cu_launch_args *a)
{
    return ck_triangular(a->k, &a->l->u.tri, a->in[0], a->out[0], a->s);
}

extern "C" cudaError_t
ck_gather(const wnn_kernel_args *k, const wnn_gather_params *p, const void *x,
          const void *idx, void *y, cudaStream_t s)
{
    unsigned nb = ck_blocks(k->n);
    BY_SIZE(k->es, CK_LAUNCH(k_gather<T>, nb, CK_THREADS, s, *k, *p, (const T *)x, idx, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_gather(const cu_launch_args *a)
{
    return ck_gather(a->k, &a->l->u.gather, a->in[0], a->in[1], a->out[0], a->s);
}

extern "C" cudaError_t
ck_gather_elements(const wnn_kernel_args *k, const wnn_gather_params *p,
                   const void *x, const void *idx, void *y, cudaStream_t s)
{
    unsigned nb = ck_blocks((int64_t)p->n_idx);
    BY_SIZE(k->es, CK_LAUNCH(k_gather_elements<T>, nb, CK_THREADS, s, *k, *p, (const T *)x, idx, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_gather_elements(const cu_launch_args *a)
{
    return ck_gather_elements(a->k, &a->l->u.gather, a->in[0], a->in[1],
                              a->out[0], a->s);
}

extern "C" cudaError_t
ck_scatter_elements(const wnn_kernel_args *k, const wnn_gather_params *p,
                    const void *idx, const void *upd, void *y, cudaStream_t s)
{
    unsigned nb = ck_blocks((int64_t)(p->outer * p->inner));
    BY_SIZE(k->es, CK_LAUNCH(k_scatter_elements<T>, nb, CK_THREADS, s, *k, *p, idx, (const T *)upd, (T *)y));
    return cudaGetLastError();
}

/* the input (x->bytes) copied to the output, then the updates scattered */
extern "C" cudaError_t
ck_run_scatter_elements(const cu_launch_args *a)
{
    cudaError_t e = cudaMemcpyAsync(a->out[0], a->in[0], a->x->bytes,
                                    cudaMemcpyDeviceToDevice, a->s);
    if (e != cudaSuccess) {
        return e;
    }
    return ck_scatter_elements(a->k, &a->l->u.gather, a->in[1], a->in[2],
                               a->out[0], a->s);
}

extern "C" cudaError_t
ck_gather_nd(const wnn_kernel_args *k, const wnn_gather_params *p,
             const void *x, const void *idx, void *y, cudaStream_t s)
{
    unsigned nb = ck_blocks((int64_t)(p->tuples * p->slice));
    BY_SIZE(k->es, CK_LAUNCH(k_gather_nd<T>, nb, CK_THREADS, s, *k, *p, (const T *)x, idx, (T *)y));
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_gather_nd(const cu_launch_args *a)
{
    return ck_gather_nd(a->k, &a->l->u.gather, a->in[0], a->in[1], a->out[0],
                        a->s);
}

extern "C" cudaError_t
ck_scatter_nd(const wnn_kernel_args *k, const wnn_gather_params *p,
              const void *idx, const void *upd, void *y, int32_t *winner,
              cudaStream_t s)
{
    /* -1 everywhere: no tuple yet */
    cudaError_t e = cudaMemsetAsync(winner, 0xff,
                                    (size_t)p->n_slices * sizeof(int32_t), s);
    if (e != cudaSuccess) {
        return e;
    }
    CK_LAUNCH(k_scatter_nd_claim, ck_blocks((int64_t)p->tuples), CK_THREADS, s,
              *k, *p, idx, winner);
    unsigned nb = ck_blocks((int64_t)(p->tuples * p->slice));
    BY_SIZE(k->es, CK_LAUNCH(k_scatter_nd<T>, nb, CK_THREADS, s, *k, *p, idx, (const T *)upd, winner, (T *)y));
    return cudaGetLastError();
}

/* the input (x->bytes) copied to the output, then the updates scattered;
 * the scratch: the winners */
extern "C" cudaError_t
ck_run_scatter_nd(const cu_launch_args *a)
{
    cudaError_t e = cudaMemcpyAsync(a->out[0], a->in[0], a->x->bytes,
                                    cudaMemcpyDeviceToDevice, a->s);
    if (e != cudaSuccess) {
        return e;
    }
    return ck_scatter_nd(a->k, &a->l->u.gather, a->in[1], a->in[2], a->out[0],
                         (int32_t *)a->scratch, a->s);
}

extern "C" cudaError_t
ck_batch_pointers(const wnn_matmul_params *p, int es, const void *a,
                  const void *b, void *c, void **ptrs, cudaStream_t s)
{
    CK_LAUNCH(k_batch_pointers, ck_blocks(p->batch), CK_THREADS, s,
              *p, es, (const char *)a, (const char *)b, (char *)c, ptrs);
    return cudaGetLastError();
}
