/* gemm.c -- the CPU backend's GEMM service (gemm.h): every float32
 * product of an operator kernel comes here, and here alone the kernel and
 * the threading are chosen:
 *
 *   direct  the register-blocked AVX-512 micro-kernel of the 1x1
 *           convolution (kernels/conv/direct.c), for a B that is a
 *           constant input of the call (packed once, kept with the graph):
 *           A not transposed and dense (lda == k), alpha 1, C's initial
 *           value at most a row broadcast (it becomes the kernel's bias);
 *           it applies the call's epilogue on each block while it is hot.
 *           It declines (no AVX-512, WEBNN_CONV_DIRECT=0, fewer than 8
 *           columns, B not a constant) and then BLIS runs.
 *   rows    one row of A, unscaled, under 8 MFLOP, on the calling thread
 *           (threads 0 or 1): the one-row kernel below (no packing).
 *   BLIS    everything else (blis/sgemm.c), on the calling thread, split
 *           across the pool, or on BLIS's own threads (req->threads). */
#include "gemm.h"

/* Row-major C [m][n] = A [m][k] B [k][n] for a single row (m <=
 * SMALL_ROWS): the columns in blocks of 64 accumulators (four 16-lane
 * vectors in the AVX-512 clone), k products of a broadcast a value and a
 * row of B each; no packing.  Attention's products in a decode step (one
 * query row against a cache of keys, batched per head: 1 x 64 x 73, 1 x 73
 * x 64) took 5-6 us each on BLIS, which packs B and A on every call,
 * against well under 1 us here.  One row only: with more, each row would
 * read all of B again (BLIS packs it once).  The sums run over k in order,
 * as a dot product would. */
#define SMALL_ROWS 1
CPU_HOT_VOID(static, , sgemm_rows,
             (int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
              const float *b, int64_t ldb, float *c, int64_t ldc),
             (m, n, k, a, lda, b, ldb, c, ldc))
{
    for (int64_t i = 0; i < m; i++) {
        const float *ar = a + i * lda;
        for (int64_t j0 = 0; j0 < n; j0 += 64) {
            float acc[64] __attribute__((aligned(64)));
            const float *bj = b + j0;
            if (n - j0 >= 64) {
                for (int j = 0; j < 64; j++) {
                    acc[j] = 0.0f;
                }
                for (int64_t p = 0; p < k; p++) {
                    const float av = ar[p], *br = bj + p * ldb;
                    for (int j = 0; j < 64; j++) {
                        acc[j] += av * br[j];
                    }
                }
                memcpy(c + i * ldc + j0, acc, sizeof acc);
            } else {
                const int nj = (int)(n - j0);
                for (int j = 0; j < nj; j++) {
                    acc[j] = 0.0f;
                }
                for (int64_t p = 0; p < k; p++) {
                    const float av = ar[p], *br = bj + p * ldb;
                    for (int j = 0; j < nj; j++) {
                        acc[j] += av * br[j];
                    }
                }
                memcpy(c + i * ldc + j0, acc, (size_t)nj * sizeof(float));
            }
        }
    }
}

/* C's rows set to the row r (gemm's c broadcast along M) */
static void
fill_rows(float *c, int64_t m, int64_t n, int64_t ldc, const float *r)
{
    for (int64_t i = 0; i < m; i++) {
        memcpy(c + i * ldc, r, (size_t)n * sizeof(float));
    }
}

wnn_status
cpu_product(const cpu_gemm_req *r, wnn_error *err)
{
    const float alpha = r->scaled ? r->alpha : 1.0f;
    const float beta = r->scaled ? r->beta : 0.0f;
    if (r->packed_b && r->threads == 0 && !r->ta && r->lda == r->k &&
        r->ldc == r->n && alpha == 1.0f && (beta == 0.0f || r->c_row)) {
        /* beta c_row is the kernel's bias (beta == 0 with a c_row: none) */
        float *bias = NULL;
        if (r->c_row && beta != 0.0f) {
            bias = malloc((size_t)r->n * sizeof(float) + 64);
            if (!bias) {
                return cpu_fail(r->packed_b, err, "out of memory");
            }
            for (int64_t j = 0; j < r->n; j++) {
                bias[j] = beta * r->c_row[j];
            }
        }
        wnn_status st = WNN_OK;
        bool done = cpu_direct_product(
            r->packed_b, r->a, r->m, r->k, r->n, r->b, r->tb ? 1 : r->ldb,
            r->tb ? r->ldb : 1, bias, r->c, r->epi, &st, err);
        free(bias);
        if (done) {
            return st;
        }
    }
    if (r->c_row) {
        fill_rows(r->c, r->m, r->n, r->ldc, r->c_row);
    }
    if (r->threads <= 1 && 2.0 * (double)r->m * (double)r->n * (double)r->k < 8e6 &&
        r->m <= SMALL_ROWS && !r->ta && !r->tb && alpha == 1.0f &&
        beta == 0.0f) {
        sgemm_rows(r->m, r->n, r->k, r->a, r->lda, r->b, r->ldb, r->c,
                   r->ldc);
    } else if (r->threads == 1) {
        cpu_blis_sgemm_1t(r->ta, r->tb, r->m, r->n, r->k, alpha, r->a,
                          r->lda, r->b, r->ldb, beta, r->c, r->ldc);
    } else if (r->threads > 1) {
        /* unscaled, no c_row (gemm.h) */
        cpu_blis_sgemm_tasks(r->ta, r->tb, r->m, r->n, r->k, r->a, r->lda,
                             r->b, r->ldb, r->c, r->ldc, r->threads);
    } else {
        cpu_blis_sgemm(r->ta, r->tb, r->m, r->n, r->k, alpha, r->a, r->lda,
                       r->b, r->ldb, beta, r->c, r->ldc);
    }
    return WNN_OK;
}

int64_t
cpu_product_pack_floats(const cpu_config *cfg, int64_t k, int64_t n)
{
    return cpu_direct_packed_floats(cfg, k, n);
}

void
cpu_product_pack(const float *b, int64_t ldb, int64_t k, int64_t n,
                 float *packed)
{
    cpu_direct_pack(b, ldb, k, n, packed);
}

void
cpu_product_packed(const float *a, int64_t lda, int64_t m, int64_t k,
                   int64_t n, const float *packed, float *c, int64_t ldc)
{
    cpu_direct_packed_product(a, lda, m, k, n, packed, c, ldc);
}
