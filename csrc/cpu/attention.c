/* attention.c -- the CPU's step of an attention block (a WNN_FUSE_ATTENTION
 * chain, compiler/fuse_attention.c):
 *
 *   out = matmul(where(isNaN(p), 0, p), v),
 *   p   = softmax(matmul(q, kt) [* c | / c] + mask)  (over the last axis)
 *
 * per matrix of the batch (batch x heads) and block of query rows: the
 * block's scores (rows x T) are computed into the thread's buffer, the mask
 * added, each row's softmax taken in place (the softmax kernel's row
 * function, cpu_softmax_row), NaN set to 0 where the block guards, and the
 * block multiplied by v into the output, while the scores stay in the
 * core's L2.  The unfused graph writes the whole [batch, S, T] score tensor
 * and reads it three times (add, softmax, product): Whisper-tiny's encoder,
 * 6 heads of 1500 x 1500, writes 54 MB a layer.  The same float32 operations
 * in the same order as the unfused kernels (the products on BLIS or the
 * one-row kernel, as matmul's; the mask added to each score; the softmax
 * row by row), so the result is the unfused graph's up to the products'
 * blocking.
 *
 * The blocks are the threads' work items (dynamic, a batch matrix's blocks
 * in order); each block's products run on its thread alone.  Where the
 * register-blocked kernel runs (gemm.h cpu_product_pack_floats) and a
 * head has ATTN_PACK_ROWS query rows or more, each head's kt and v are
 * packed once per dispatch (a first parallel pass; a v of 16, 32, 48 or 64
 * columns is in that layout already) and every block's two products run on
 * the packed copies: BLIS packed both again for every block, which cost
 * more than the scores' memory traffic saved (Whisper-tiny's heads, 1500
 * x 1500 x 64: 124 GFLOP/s in blocks of 64 rows on BLIS, the operators
 * unfused 138). */
#include <math.h>

#include "gemm.h"

/* a thread's score buffer: at most this many floats (rows x T), 512 KiB,
 * half of a Zen 4 / Sapphire Rapids core's L2 (but one row at least) */
#define ATTN_BLOCK_FLOATS (128 * 1024)
/* rows of a block: at most this many (BLIS's A panel of a block of scores
 * stays small), a multiple of 8 where more than 8 */
#define ATTN_MAX_ROWS 64
/* the fewest query rows a head packs its kt and v for (a decode step's
 * one row reads them once: no packing) */
#define ATTN_PACK_ROWS 8

struct cpu_attn {
    int64_t batch, S, T, D, Dv;
    int64_t rows;              /* query rows per block                    */
    int64_t blocks;            /* blocks per batch matrix                 */
    bool guard;                /* NaN -> 0 after the softmax              */
    int scale;                 /* 0 none, 1 the scores times c, 2 over c  */
    float c;
    bool mask;                 /* a mask operand is added                 */
    uint32_t nb;               /* batch dimensions (rank - 2)             */
    int64_t bshape[WNN_MAX_RANK];
    int64_t mstride[WNN_MAX_RANK]; /* the mask's stride per batch dim     */
    int64_t mrow, mcol;        /* ... per score row and column (0: broadcast) */
    int nt;                    /* threads the buffers are for             */
    float *scratch;            /* nt buffers of rows x T floats           */
    /* packed kt and v (cpu_product_pack): floats per head of each (0: not
     * packed; pv 0 with pk set: v used as it is), and the buffer of all
     * heads' */
    int64_t pk, pv;
    float *packed;
};

/* b [k][n] is already in the packed layout: one block (cpu_direct_block_cols
 * columns or fewer), a multiple of 16 */
static bool
packed_as_is(int64_t k, int64_t n)
{
    return n % 16 == 0 && n <= cpu_direct_block_cols(k);
}

/* the mask's strides: right-aligned to the scores' rank, 0 where it
 * broadcasts */
static void
mask_strides(cpu_attn *a, const wnn_desc *md, const wnn_desc *sd)
{
    int64_t st[WNN_MAX_RANK], s = 1;
    uint32_t lead = sd->rank - md->rank;
    for (uint32_t i = sd->rank; i-- > 0;) {
        if (i < lead || md->shape[i - lead] == 1) {
            st[i] = 0;
        } else {
            st[i] = s;
            s *= md->shape[i - lead];
        }
    }
    for (uint32_t i = 0; i < a->nb; i++) {
        a->mstride[i] = st[i];
    }
    a->mrow = st[sd->rank - 2];
    a->mcol = st[sd->rank - 1];
}

cpu_attn *
cpu_attn_make(const wnn_graph *g, const wnn_step *s, const cpu_config *cfg)
{
    const wnn_ir *ir = g->ir;
    const wnn_desc *qd = &ir->operands[s->in[0]].desc;
    const wnn_desc *vd = &ir->operands[s->in[2]].desc;
    const wnn_desc *sd = &ir->operands[ir->nodes[s->node].out[0]].desc;
    cpu_attn *a = calloc(1, sizeof(*a));
    if (!a) {
        return NULL;
    }
    uint32_t r = sd->rank;
    a->nb = r - 2;
    a->batch = 1;
    for (uint32_t i = 0; i < a->nb; i++) {
        a->bshape[i] = sd->shape[i];
        a->batch *= sd->shape[i];
    }
    a->S = sd->shape[r - 2];
    a->T = sd->shape[r - 1];
    a->D = qd->shape[r - 1];
    a->Dv = vd->shape[r - 1];
    a->guard = s->epi->guard != 0;
    if (s->epi->scale) {
        /* the constant of the two (the scores are a node's) */
        const wnn_node *n = &ir->nodes[s->epi->scale - 1];
        const wnn_operand *c = &ir->operands[n->in[1]];
        if (c->kind != WNN_OPERAND_CONSTANT) {
            c = &ir->operands[n->in[0]];
        }
        a->scale = n->op == WNN_OP_DIV ? 2 : 1;
        memcpy(&a->c, c->data, sizeof(float));
    }
    a->mask = s->addend != WNN_NO_NODE;
    if (a->mask) {
        mask_strides(a, &ir->operands[s->addend].desc, sd);
    }
    int64_t rows = ATTN_BLOCK_FLOATS / a->T;
    rows = rows > ATTN_MAX_ROWS ? ATTN_MAX_ROWS : rows < 1 ? 1 : rows;
    if (rows > 8) {
        rows &= ~(int64_t)7;
    }
    a->rows = rows < a->S ? rows : a->S;
    a->blocks = (a->S + a->rows - 1) / a->rows;
    a->nt = cpu_num_threads();
    a->scratch = malloc((size_t)a->nt * (size_t)(a->rows * a->T) *
                            sizeof(float) + 64);
    const int64_t pk = cpu_product_pack_floats(cfg, a->D, a->T);
    const int64_t pv = cpu_product_pack_floats(cfg, a->T, a->Dv);
    if (a->S >= ATTN_PACK_ROWS && pk && pv) {
        a->pk = pk;
        a->pv = packed_as_is(a->T, a->Dv) ? 0 : pv;
        a->packed = malloc((size_t)(a->batch * (a->pk + a->pv)) *
                           sizeof(float) + 64);
    }
    if (!a->scratch || (a->pk && !a->packed)) {
        cpu_attn_free(a);
        return NULL;
    }
    return a;
}

void
cpu_attn_free(cpu_attn *a)
{
    if (a) {
        free(a->packed);
        free(a->scratch);
        free(a);
    }
}

typedef struct attn_job {
    const cpu_attn *a;
    const float *q, *kt, *v, *mask;
    float *out;
} attn_job;

/* the mask's offset for batch matrix b */
static int64_t
mask_offset(const cpu_attn *a, int64_t b)
{
    int64_t off = 0;
    for (uint32_t d = a->nb; d-- > 0;) {
        off += (b % a->bshape[d]) * a->mstride[d];
        b /= a->bshape[d];
    }
    return off;
}

/* scores [rows][T] += the mask's rows r0 .. r0 + rows */
static void
add_mask(const cpu_attn *a, float *sc, int64_t rows, const float *m)
{
    const int64_t T = a->T;
    for (int64_t i = 0; i < rows; i++, sc += T, m += a->mrow) {
        if (a->mcol) {
#pragma omp simd
            for (int64_t j = 0; j < T; j++) {
                sc[j] += m[j];
            }
        } else {
            const float x = m[0];
#pragma omp simd
            for (int64_t j = 0; j < T; j++) {
                sc[j] += x;
            }
        }
    }
}

/* heads [b_, e_): kt and v packed */
static void
pack_body(void *p_, int64_t b_, int64_t e_, int tid)
{
    (void)tid;
    const attn_job *j = p_;
    const cpu_attn *a = j->a;
    const int64_t T = a->T, D = a->D, Dv = a->Dv;
    for (int64_t b = b_; b < e_; b++) {
        float *pk = a->packed + b * (a->pk + a->pv);
        cpu_product_pack(j->kt + b * D * T, T, D, T, pk);
        if (a->pv) {
            cpu_product_pack(j->v + b * T * Dv, Dv, T, Dv, pk + a->pk);
        }
    }
}

/* c [rows][n] = a [rows][k] times b [k][n]: head b's packed copy where
 * there is one, else b itself */
static void
product(const float *x, int64_t lda, int64_t rows,
        int64_t k, int64_t n, const float *packed, const float *b, float *c,
        int64_t ldc)
{
    if (packed) {
        cpu_product_packed(x, lda, rows, k, n, packed, c, ldc);
    } else {
        cpu_product(&(cpu_gemm_req){ .m = rows, .n = n, .k = k, .a = x,
                                     .lda = lda, .b = b, .ldb = n, .c = c,
                                     .ldc = ldc, .threads = 1 },
                    NULL);
    }
}

/* the scores times or over c, as the unfused mul or div computes them */
static void
scale_scores(const cpu_attn *a, float *sc, int64_t n)
{
    const float c = a->c;
    if (a->scale == 2) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            sc[i] = sc[i] / c;
        }
    } else {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            sc[i] = sc[i] * c;
        }
    }
}

static void
attn_body(void *p_, int64_t b_, int64_t e_, int tid)
{
    const attn_job *j = p_;
    const cpu_attn *a = j->a;
    const int64_t S = a->S, T = a->T, D = a->D, Dv = a->Dv;
    float *sc = a->scratch + (size_t)tid * (size_t)(a->rows * T);
    for (int64_t it = b_; it < e_; it++) {
        int64_t b = it / a->blocks, r0 = (it % a->blocks) * a->rows;
        int64_t rows = S - r0 < a->rows ? S - r0 : a->rows;
        const float *pk = a->pk ? a->packed + b * (a->pk + a->pv) : NULL;
        const float *vb = j->v + b * T * Dv;
        product(j->q + (b * S + r0) * D, D, rows, D, T, pk,
                j->kt + b * D * T, sc, T);
        if (a->scale) {
            scale_scores(a, sc, rows * T);
        }
        if (j->mask) {
            add_mask(a, sc, rows, j->mask + mask_offset(a, b) + r0 * a->mrow);
        }
        for (int64_t i = 0; i < rows; i++) {
            float *row = sc + i * T;
            cpu_softmax_row(row, row, T);
            if (a->guard) {
#pragma omp simd
                for (int64_t c = 0; c < T; c++) {
                    row[c] = row[c] != row[c] ? 0.0f : row[c];
                }
            }
        }
        product(sc, T, rows, T, Dv,
                pk ? (a->pv ? pk + a->pk : vb) : NULL, vb,
                j->out + (b * S + r0) * Dv, Dv);
    }
}

wnn_status
cpu_attn_run(cpu_attn *a, const float *q, const float *kt, const float *v,
             const float *mask, float *out)
{
    attn_job j = { .a = a, .q = q, .kt = kt, .v = v,
                   .mask = a->mask ? mask : NULL, .out = out };
    const int64_t items = a->batch * a->blocks;
    const double flops = 2.0 * (double)a->batch * (double)a->S *
                         (double)a->T * (double)(a->D + a->Dv);
    int nt = a->nt;
    if (nt > items) {
        nt = (int)items;
    }
    if (nt > 1 && flops >= 1e6) {
        if (a->pk) {
            cpu_parallel_for_dynamic(a->batch, 1, nt < a->batch ? nt : (int)a->batch,
                                     pack_body, &j);
        }
        cpu_parallel_for_dynamic(items, 1, nt, attn_body, &j);
    } else {
        if (a->pk) {
            pack_body(&j, 0, a->batch, 0);
        }
        attn_body(&j, 0, items, 0);
    }
    return WNN_OK;
}
