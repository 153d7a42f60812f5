/* cu_device.c -- the device services the other files of the CUDA backend
 * share (cu_internal.h has the overview): making the backend's device
 * current, CUDA errors as wnn_error, the pinned staging buffers of tensor
 * reads and writes, a plan slot's device address and a view's copy.  A
 * leaf: it calls no other file of the backend, so that the launchers
 * (cu_launch.c) and the libraries' files (cu_blas.c, cu_dnn.c) that call
 * it form no circle. */
#include "cu_internal.h"

/* Make the backend's device current on the calling thread. */
void
cu_enter(cu_backend *b)
{
    cudaSetDevice(b->device);
}

wnn_status
cuda_error(wnn_error *err, wnn_error_kind kind, const char *op,
           const char *label, cudaError_t e, const char *what)
{
    cudaGetLastError(); /* clear a non-sticky error */
    return cu_core->failk(err, kind, op, label, NULL, "CUDA %s failed: %s (%s)",
                     what, cudaGetErrorName(e), cudaGetErrorString(e));
}


/* ---- staging ------------------------------------------------------------------ */
/* Called with stage_mu held. */
cudaError_t
stage_ready(cu_backend *b)
{
    for (int k = 0; k < 2; k++) {
        if (!b->stage[k]) {
            cudaError_t e = cudaMallocHost(&b->stage[k], STAGE_BYTES);
            if (e != cudaSuccess) {
                b->stage[k] = NULL;
                return e;
            }
        }
        if (!b->stage_ev[k]) {
            cudaError_t e = cudaEventCreateWithFlags(&b->stage_ev[k],
                                                     cudaEventDisableTiming);
            if (e != cudaSuccess) {
                b->stage_ev[k] = NULL;
                return e;
            }
        }
    }
    return cudaSuccess;
}

/* Host -> device through the pinned buffers: the host copy of a chunk
 * overlaps the DMA of the previous one.  Returns when src may be freed (the
 * last DMA may still run, from the staging buffer). */
cudaError_t
stage_write(cu_backend *b, void *dst, const void *src, uint64_t bytes)
{
    pthread_mutex_lock(&b->stage_mu);
    cudaError_t e = stage_ready(b);
    for (uint64_t off = 0; e == cudaSuccess && off < bytes;
         off += STAGE_BYTES) {
        size_t n = bytes - off < STAGE_BYTES ? (size_t)(bytes - off)
                                             : STAGE_BYTES;
        int k = b->stage_next;
        b->stage_next ^= 1;
        e = cudaEventSynchronize(b->stage_ev[k]); /* the buffer is free */
        if (e != cudaSuccess) {
            break;
        }
        memcpy(b->stage[k], (const char *)src + off, n);
        e = cudaMemcpyAsync((char *)dst + off, b->stage[k], n,
                            cudaMemcpyHostToDevice, b->stream);
        if (e == cudaSuccess) {
            e = cudaEventRecord(b->stage_ev[k], b->stream);
        }
    }
    pthread_mutex_unlock(&b->stage_mu);
    return e;
}

/* Device -> host through the pinned buffers: chunk i + 2 is queued while
 * chunk i is copied out.  Returns when dst holds the data. */
cudaError_t
stage_read(cu_backend *b, void *dst, const void *src, uint64_t bytes)
{
    pthread_mutex_lock(&b->stage_mu);
    cudaError_t e = stage_ready(b);
    uint64_t chunks = (bytes + STAGE_BYTES - 1) / STAGE_BYTES;
    /* queue chunk j into buffer j % 2 */
#define QUEUE(j)                                                             \
    do {                                                                     \
        uint64_t o_ = (uint64_t)(j) * STAGE_BYTES;                           \
        size_t n_ = bytes - o_ < STAGE_BYTES ? (size_t)(bytes - o_)          \
                                             : STAGE_BYTES;                  \
        e = cudaMemcpyAsync(b->stage[(j) & 1], (const char *)src + o_, n_,   \
                            cudaMemcpyDeviceToHost, b->stream);              \
        if (e == cudaSuccess) {                                              \
            e = cudaEventRecord(b->stage_ev[(j) & 1], b->stream);            \
        }                                                                    \
    } while (0)
    for (uint64_t j = 0; e == cudaSuccess && j < chunks && j < 2; j++) {
        QUEUE(j);
    }
    for (uint64_t i = 0; e == cudaSuccess && i < chunks; i++) {
        uint64_t off = i * STAGE_BYTES;
        size_t n = bytes - off < STAGE_BYTES ? (size_t)(bytes - off)
                                             : STAGE_BYTES;
        e = cudaEventSynchronize(b->stage_ev[i & 1]);
        if (e != cudaSuccess) {
            break;
        }
        memcpy((char *)dst + off, b->stage[i & 1], n);
        if (i + 2 < chunks) {
            QUEUE(i + 2);
        }
    }
#undef QUEUE
    b->stage_next = 0;
    pthread_mutex_unlock(&b->stage_mu);
    return e;
}

/* ---- plan slots and views (at execute) -------------------------------------- */
void *
cu_resolve(const wnn_graph *g, cu_compiled *c, uint32_t id, void *const *in,
        void *const *out)
{
    const wnn_slot *s = &g->plan.slots[id];
    switch (s->kind) {
    case WNN_SLOT_INPUT: return in[s->index];
    case WNN_SLOT_OUTPUT: return out[s->index];
    case WNN_SLOT_CONSTANT: return (char *)c->consts + c->const_off[id];
    case WNN_SLOT_ARENA: return (char *)c->arena + s->offset;
    default: return NULL;
    }
}

/* One strided copy (a movement operator's view, or a library's
 * transposition) on the backend's stream. */
cudaError_t
run_view(cu_backend *b, const wnn_view *v, int es, void *const *in,
         void *const *out)
{
    const char *src = (const char *)in[v->in] + v->in_off * es;
    char *dst = (char *)out[v->out] + v->out_off * es;
    if (v->rank == 1 && v->is[0] == 1 && v->os[0] == 1) {
        /* contiguous on both sides */
        return cudaMemcpyAsync(dst, src, (size_t)v->n * (size_t)es,
                               cudaMemcpyDeviceToDevice, b->stream);
    }
    return ck_copy_view(v, es, src, dst, b->stream);
}

