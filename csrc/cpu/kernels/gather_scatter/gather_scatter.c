/* gather_scatter.c -- CPU kernels of gather, gatherElements, gatherND,
 * scatterElements and scatterND.
 *
 * Index semantics (the spec requires indices in [-N, N) and leaves other
 * values to the implementation; the WPT vectors expect clamping):
 *   - an index i < 0 means i + N (counting from the end of the dimension);
 *   - after that, indices are CLAMPED to [0, N - 1]: a value still below 0
 *     gives 0, a value >= N gives N - 1.
 * So no index value, whatever the data, makes a kernel read or write outside
 * its buffers.  int32, uint32 and int64 indices are read as they are (a
 * uint32 index >= 2^31 is a large positive index, clamped to N - 1).
 *
 * Scatter: the output is a copy of input, then the updates are written in
 * the row-major order of indices (scatterElements) or of the index tuples
 * (scatterND); when several updates hit one element, the LAST one wins.
 *
 * The kernels move bytes: every data type works through its element size
 * (1, 2, 4 or 8 bytes), values are copied bit for bit.  Shapes are valid
 * (every element count <= 2^31 - 1, checked by the builder), so element
 * offsets fit in int64 and byte offsets in size_t. */
#include <string.h>

#include "../../cpu.h"

/* Bytes moved below which a kernel runs on one thread. */
#define GS_PARALLEL_BYTES (256u << 10)
/* gather: bytes of the next row prefetched while a row is copied. */
#define GS_PREFETCH 4096u

static int
threads_for_bytes(uint64_t bytes, uint64_t tasks)
{
    int n = bytes >= GS_PARALLEL_BYTES ? cpu_num_threads() : 1;
    if ((uint64_t)n > tasks) {
        n = tasks > 0 ? (int)tasks : 1;
    }
    return n;
}

/* The slice [lo, hi) of n tasks that thread t of nt runs. */
static void
part(uint64_t n, int t, int nt, uint64_t *lo, uint64_t *hi)
{
    uint64_t q = n / (uint64_t)nt, r = n % (uint64_t)nt;
    *lo = (uint64_t)t * q + ((uint64_t)t < r ? (uint64_t)t : r);
    *hi = *lo + q + ((uint64_t)t < r ? 1 : 0);
}

/* Index j of an indices tensor of type t, resolved against a dimension of
 * size dim (>= 1): negative counts from the end, then clamped. */
static inline uint64_t
index_at(const void *p, wnn_dtype t, uint64_t j, uint64_t dim)
{
    int64_t v;
    switch (t) {
    case WNN_INT32: v = ((const int32_t *)p)[j]; break;
    case WNN_UINT32: v = ((const uint32_t *)p)[j]; break;
    default: v = ((const int64_t *)p)[j]; break; /* int64 */
    }
    if (v < 0) {
        v += (int64_t)dim; /* dim <= 2^31 - 1: no overflow */
        return v < 0 ? 0 : (uint64_t)v;
    }
    return (uint64_t)v >= dim ? dim - 1 : (uint64_t)v;
}

/* Copy one element of es bytes (1, 2, 4 or 8). */
static inline void
copy_elem(unsigned char *dst, const unsigned char *src, size_t es)
{
    switch (es) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    default: memcpy(dst, src, 8); break;
    }
}

typedef struct copyb_job {
    void *dst;
    const void *src;
    uint64_t bytes;
    uint64_t chunk;
} copyb_job;

static void
copyb_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const copyb_job *j_ = p_;
    void *dst = j_->dst;
    const void *src = j_->src;
    uint64_t bytes = j_->bytes;
    uint64_t chunk = j_->chunk;
    for (uint64_t i = (uint64_t)b_; i < (uint64_t)e_; i++) {
        uint64_t b = i * chunk, len = bytes - b < chunk ? bytes - b : chunk;
        memcpy((unsigned char *)dst + b, (const unsigned char *)src + b, len);
    }
}

/* Copy `bytes` from src to dst, threaded when large. */
static void
copy_bytes(void *dst, const void *src, uint64_t bytes)
{
    const uint64_t chunk = 1u << 20;
    uint64_t n = (bytes + chunk - 1) / chunk;
    int nt = threads_for_bytes(bytes, n);
    if (nt <= 1) {
        memcpy(dst, src, bytes);
        return;
    }
    {
        copyb_job j_ = {.dst = dst, .src = src, .bytes = bytes, .chunk = chunk};
        cpu_parallel_for((int64_t)(n), nt, copyb_body, &j_);
    }
}

typedef struct gather_job {
    uint64_t rows;
    uint64_t n_idx;
    unsigned char *y;
    size_t row;
    uint64_t inner;
    const void *idx;
    wnn_dtype it;
    uint64_t dim;
    const unsigned char *x;
    size_t es;
} gather_job;

static void
gather_body(void *p_, int tid_, int nt_)
{
    const gather_job *j_ = p_;
    uint64_t rows = j_->rows;
    uint64_t n_idx = j_->n_idx;
    unsigned char *y = j_->y;
    size_t row = j_->row;
    uint64_t inner = j_->inner;
    const void *idx = j_->idx;
    wnn_dtype it = j_->it;
    uint64_t dim = j_->dim;
    const unsigned char *x = j_->x;
    size_t es = j_->es;
    {
        uint64_t lo, hi;
        part(rows, tid_, nt_, &lo, &hi);
        uint64_t oi = lo / n_idx, j = lo % n_idx;
        unsigned char *dst = y + lo * row;
        if (inner == 1) {
            for (uint64_t r = lo; r < hi; r++) {
                uint64_t s = index_at(idx, it, j, dim);
                copy_elem(dst, x + (oi * dim + s) * row, es);
                dst += row;
                if (++j == n_idx) {
                    j = 0;
                    oi++;
                }
            }
        } else {
            /* rows at random places (an embedding lookup): prefetch the next
             * row (its first GS_PREFETCH bytes) while copying this one */
            size_t pf = row < GS_PREFETCH ? row : GS_PREFETCH;
            const unsigned char *src =
                lo < hi ? x + (oi * dim + index_at(idx, it, j, dim)) * row
                        : NULL;
            for (uint64_t r = lo; r < hi; r++) {
                if (++j == n_idx) {
                    j = 0;
                    oi++;
                }
                const unsigned char *next =
                    r + 1 < hi ? x + (oi * dim + index_at(idx, it, j, dim)) * row
                               : NULL;
                if (next) {
                    for (size_t c = 0; c < pf; c += 64) {
                        __builtin_prefetch(next + c);
                    }
                }
                memcpy(dst, src, row);
                dst += row;
                src = next;
            }
        }
    }
}

/* ---- gather -------------------------------------------------------------- */
/* output[o, j, r] = input[o, index(j), r] for the outer dimensions o (before
 * axis), the flattened indices j and the inner dimensions r (after axis):
 * one copy of `inner` elements per (o, j) row.  An embedding lookup (axis 0
 * of a [rows, width] table) is a memcpy of one table row per index. */
wnn_status
cpu_gather(const cpu_call *k, wnn_error *err)
{
    (void)err;
    const wnn_gather_params *q = &k->lowered->u.gather;
    const wnn_desc *in = &k->in_desc[0], *ix = &k->in_desc[1];
    size_t es = wnn_dtype_size(in->dtype);
    uint64_t outer = q->outer, dim = q->dim, inner = q->inner;
    uint64_t n_idx = q->n_idx;
    uint64_t rows = outer * n_idx;
    size_t row = (size_t)(inner * es);
    const unsigned char *x = k->in[0];
    const void *idx = k->in[1];
    wnn_dtype it = ix->dtype;
    unsigned char *y = k->out[0];
    int nt = threads_for_bytes(rows * row, rows);
    {
        gather_job j_ = {.rows = rows, .n_idx = n_idx, .y = y, .row = row,
                         .inner = inner, .idx = idx, .it = it, .dim = dim,
                         .x = x, .es = es};
        cpu_parallel(nt, gather_body, &j_);
    }
    return WNN_OK;
}

typedef struct gather_el_job {
    uint64_t total;
    uint64_t inner;
    uint64_t a_n;
    const void *idx;
    wnn_dtype it;
    uint64_t dim;
    unsigned char *y;
    const unsigned char *x;
    size_t es;
} gather_el_job;

static void
gather_el_body(void *p_, int tid_, int nt_)
{
    const gather_el_job *j_ = p_;
    uint64_t total = j_->total;
    uint64_t inner = j_->inner;
    uint64_t a_n = j_->a_n;
    const void *idx = j_->idx;
    wnn_dtype it = j_->it;
    uint64_t dim = j_->dim;
    unsigned char *y = j_->y;
    const unsigned char *x = j_->x;
    size_t es = j_->es;
    {
        uint64_t lo, hi;
        part(total, tid_, nt_, &lo, &hi);
        uint64_t r = lo % inner, oa = lo / inner;
        uint64_t a = oa % a_n, oi = oa / a_n;
        for (uint64_t p = lo; p < hi; p++) {
            uint64_t s = index_at(idx, it, p, dim);
            copy_elem(y + p * es, x + ((oi * dim + s) * inner + r) * es, es);
            if (++r == inner) {
                r = 0;
                if (++a == a_n) {
                    a = 0;
                    oi++;
                }
            }
        }
    }
}

/* ---- gatherElements ------------------------------------------------------- */
/* output[o, a, r] = input[o, index(o, a, r), r]: indices (and the output)
 * have input's shape except along axis, where they have A entries. */
wnn_status
cpu_gather_elements(const cpu_call *k, wnn_error *err)
{
    (void)err;
    const wnn_gather_params *q = &k->lowered->u.gather;
    const wnn_desc *in = &k->in_desc[0], *ix = &k->in_desc[1];
    size_t es = wnn_dtype_size(in->dtype);
    uint64_t dim = q->dim, a_n = q->a_n, inner = q->inner;
    uint64_t total = q->n_idx;
    const unsigned char *x = k->in[0];
    const void *idx = k->in[1];
    wnn_dtype it = ix->dtype;
    unsigned char *y = k->out[0];
    int nt = threads_for_bytes(total * es, total);
    {
        gather_el_job j_ = {.total = total, .inner = inner, .a_n = a_n,
                            .idx = idx, .it = it, .dim = dim, .y = y, .x = x,
                            .es = es};
        cpu_parallel(nt, gather_el_body, &j_);
    }
    return WNN_OK;
}

/* ---- gatherND / scatterND helpers ---------------------------------------- */
typedef struct nd_map {
    uint64_t tuples;                /* indices' elements / coordinate size */
    uint32_t coord;                 /* coordinate size (indices' last dim) */
    uint64_t dims[WNN_MAX_RANK];    /* input's leading coord dimensions    */
    uint64_t strides[WNN_MAX_RANK]; /* their strides, in slices            */
    uint64_t slice;                 /* elements per slice: prod(shape[coord:]) */
} nd_map;

/* The coordinate map lowered at compile (compiler/lower/gather.c). */
static void
nd_map_from(nd_map *m, const wnn_gather_params *q)
{
    m->coord = q->coord;
    m->tuples = q->tuples;
    m->slice = q->slice;
    for (uint32_t d = 0; d < q->coord; d++) {
        m->dims[d] = q->dims[d];
        m->strides[d] = q->strides[d];
    }
}

/* The slice number (in input / output) that tuple t addresses. */
static inline uint64_t
nd_slice_of(const nd_map *m, const void *idx, wnn_dtype it, uint64_t t)
{
    uint64_t off = 0, base = t * m->coord;
    for (uint32_t d = 0; d < m->coord; d++) {
        off += index_at(idx, it, base + d, m->dims[d]) * m->strides[d];
    }
    return off;
}

typedef struct gather_nd_job {
    nd_map m;
    const void *idx;
    wnn_dtype it;
    unsigned char *y;
    const unsigned char *x;
    size_t row;
    size_t es;
} gather_nd_job;

static void
gather_nd_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const gather_nd_job *j_ = p_;
    nd_map m = j_->m;
    const void *idx = j_->idx;
    wnn_dtype it = j_->it;
    unsigned char *y = j_->y;
    const unsigned char *x = j_->x;
    size_t row = j_->row;
    size_t es = j_->es;
    for (uint64_t t = (uint64_t)b_; t < (uint64_t)e_; t++) {
        uint64_t s = nd_slice_of(&m, idx, it, t);
        if (m.slice == 1) {
            copy_elem(y + t * row, x + s * row, es);
        } else {
            memcpy(y + t * row, x + s * row, row);
        }
    }
}

/* ---- gatherND ------------------------------------------------------------ */
/* output[t, r] = input[index tuple t, r]: one slice copy per tuple. */
wnn_status
cpu_gather_nd(const cpu_call *k, wnn_error *err)
{
    (void)err;
    const wnn_desc *in = &k->in_desc[0], *ix = &k->in_desc[1];
    nd_map m;
    nd_map_from(&m, &k->lowered->u.gather);
    size_t es = wnn_dtype_size(in->dtype);
    size_t row = (size_t)(m.slice * es);
    const unsigned char *x = k->in[0];
    const void *idx = k->in[1];
    wnn_dtype it = ix->dtype;
    unsigned char *y = k->out[0];
    int nt = threads_for_bytes(m.tuples * row, m.tuples);
    {
        gather_nd_job j_ = {.m = m, .idx = idx, .it = it, .y = y, .x = x,
                            .row = row, .es = es};
        cpu_parallel_for((int64_t)(m.tuples), nt, gather_nd_body, &j_);
    }
    return WNN_OK;
}

typedef struct scatter_el_job {
    uint64_t pairs;
    uint64_t inner;
    uint64_t a_n;
    uint64_t dim;
    const void *idx;
    wnn_dtype it;
    unsigned char *y;
    const unsigned char *u;
    size_t es;
} scatter_el_job;

static void
scatter_el_body(void *p_, int tid_, int nt_)
{
    const scatter_el_job *j_ = p_;
    uint64_t pairs = j_->pairs;
    uint64_t inner = j_->inner;
    uint64_t a_n = j_->a_n;
    uint64_t dim = j_->dim;
    const void *idx = j_->idx;
    wnn_dtype it = j_->it;
    unsigned char *y = j_->y;
    const unsigned char *u = j_->u;
    size_t es = j_->es;
    {
        uint64_t lo, hi;
        part(pairs, tid_, nt_, &lo, &hi);
        for (uint64_t p = lo; p < hi; p++) {
            uint64_t oi = p / inner, r = p % inner;
            uint64_t ubase = oi * a_n * inner + r;
            uint64_t ybase = oi * dim * inner + r;
            for (uint64_t a = 0; a < a_n; a++) {
                uint64_t q = ubase + a * inner;
                uint64_t s = index_at(idx, it, q, dim);
                copy_elem(y + (ybase + s * inner) * es, u + q * es, es);
            }
        }
    }
}

/* ---- scatterElements ----------------------------------------------------- */
/* output = input; then output[o, index(o, a, r), r] = updates[o, a, r] for
 * a = 0, 1, ... in order (the last write to an element wins).  Different
 * (o, r) pairs write disjoint elements, so they run in parallel, each
 * walking a in order. */
wnn_status
cpu_scatter_elements(const cpu_call *k, wnn_error *err)
{
    (void)err;
    const wnn_gather_params *q = &k->lowered->u.gather;
    const wnn_desc *in = &k->in_desc[0], *ix = &k->in_desc[1];
    size_t es = wnn_dtype_size(in->dtype);
    uint64_t dim = q->dim, a_n = q->a_n, outer = q->outer, inner = q->inner;
    const void *idx = k->in[1];
    const unsigned char *u = k->in[2];
    wnn_dtype it = ix->dtype;
    unsigned char *y = k->out[0];
    copy_bytes(y, k->in[0], wnn_desc_bytes(in));
    uint64_t pairs = outer * inner;
    int nt = threads_for_bytes(pairs * a_n * es, pairs);
    {
        scatter_el_job j_ = {.pairs = pairs, .inner = inner, .a_n = a_n,
                             .dim = dim, .idx = idx, .it = it, .y = y, .u = u,
                             .es = es};
        cpu_parallel(nt, scatter_el_body, &j_);
    }
    return WNN_OK;
}

/* ---- scatterND ----------------------------------------------------------- */
/* output = input; then output[index tuple t, r] = updates[t, r] for t = 0,
 * 1, ... in order (the last write to an element wins). */
wnn_status
cpu_scatter_nd(const cpu_call *k, wnn_error *err)
{
    (void)err;
    const wnn_desc *in = &k->in_desc[0], *ix = &k->in_desc[1];
    nd_map m;
    nd_map_from(&m, &k->lowered->u.gather);
    size_t es = wnn_dtype_size(in->dtype);
    size_t row = (size_t)(m.slice * es);
    const void *idx = k->in[1];
    const unsigned char *u = k->in[2];
    wnn_dtype it = ix->dtype;
    unsigned char *y = k->out[0];
    copy_bytes(y, k->in[0], wnn_desc_bytes(in));
    for (uint64_t t = 0; t < m.tuples; t++) {
        uint64_t s = nd_slice_of(&m, idx, it, t);
        if (m.slice == 1) {
            copy_elem(y + s * row, u + t * row, es);
        } else {
            copy_bytes(y + s * row, u + t * row, row);
        }
    }
    return WNN_OK;
}
