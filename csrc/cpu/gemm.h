/* gemm.h -- the CPU backend's one GEMM service (gemm.c).  Every float32
 * product of an operator kernel (matmul, gemm, conv's im2col and
 * transposed paths, the recurrent projections and step products) is one
 * cpu_product() call; the service picks the kernel (BLIS, blis/sgemm.c;
 * the register-blocked AVX-512 micro-kernel of the 1x1 convolution,
 * kernels/conv/direct.c; the one-row kernel, gemm.c) and the threading.
 * tests/architecture/test_layers.py checks that no other file reaches
 * those kernels.
 *
 * Row-major C [m][n] = alpha op(A) op(B) + beta C (+ the row broadcast
 * below), op(X) = X or X^T; beta == 0 never reads C. */
#ifndef WNN_CPU_GEMM_H
#define WNN_CPU_GEMM_H
#include "cpu.h"

typedef struct cpu_gemm_req {
    bool ta, tb;
    int64_t m, n, k;
    const float *a;
    int64_t lda;
    const float *b;
    int64_t ldb;
    float *c;
    int64_t ldc;
    /* scaled false: alpha 1, beta 0 (the fields are not read) */
    bool scaled;
    float alpha, beta;
    /* NULL, or n floats: C starts as this row in every row (gemm's c
     * broadcast along M), then beta C is added as above */
    const float *c_row;
    /* threads: 0: the service chooses (small products on the calling
     * thread, larger ones split across the pool, very large ones on BLIS's
     * own threads); 1: the calling thread only (inside pool regions);
     * nt > 1: pieces that nt pool threads take dynamically (the
     * convolutions'; unscaled, no c_row) */
    int threads;
    /* packed B: NULL, or the call whose input 1 is B: where that is a
     * constant the register-blocked kernel may pack it once and keep it
     * with the compiled graph (threads 0, A not transposed, lda == k,
     * alpha 1) */
    const cpu_call *packed_b;
    /* float32 epilogue of packed_b's call (NULL: none): applied by the
     * kernel on each block when it can (then epi->applied is set) */
    cpu_epi *epi;
} cpu_gemm_req;

/* The product r asks for.  WNN_OK, or an error (out of memory) in err:
 * only a request with packed_b can fail. */
wnn_status cpu_product(const cpu_gemm_req *r, wnn_error *err);

/* The service's kernels: called by gemm.c only (test_layers.py).
 * blis/sgemm.c: row-major C = alpha op(A) op(B) + beta C on BLIS, threaded
 * for large products; the same on the calling thread alone; and alpha 1,
 * beta 0 cut into pieces that nt threads of the pool take dynamically. */
void cpu_blis_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n,
                    int64_t k, float alpha, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float beta, float *c,
                    int64_t ldc);
void cpu_blis_sgemm_1t(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                       float alpha, const float *a, int64_t lda,
                       const float *b, int64_t ldb, float beta, float *c,
                       int64_t ldc);
void cpu_blis_sgemm_tasks(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                          const float *a, int64_t lda, const float *b,
                          int64_t ldb, float *c, int64_t ldc, int nt);
/* kernels/conv/direct.c: C [m][n] = A [m][kk] (rows kk apart, row-major)
 * times B + bias, B's element (i, j) at b[i sb_k + j sb_n] (input 1 of k, a
 * constant: packed once), bias NULL or n floats, the epilogue epi (float32;
 * NULL: none) applied on each block stored (and marked applied): matmul and
 * gemm on the AVX-512 micro-kernel of the 1x1 convolution.  Returns false,
 * doing nothing, where that kernel does not run (no AVX-512,
 * WEBNN_CONV_DIRECT=0, fewer than 8 columns, b not a constant); otherwise
 * true with the status in *st. */
bool cpu_direct_product(const cpu_call *k, const float *a, int64_t m,
                        int64_t kk, int64_t n, const float *b, int64_t sb_k,
                        int64_t sb_n, const float *bias, float *c,
                        cpu_epi *epi, wnn_status *st, wnn_error *err);

/* A b that is not a constant but serves many products (attention's k^T and
 * v: every block of query rows of a head), packed once by the caller into
 * cpu_product_pack_floats(cfg, k, n) floats (0: no packed kernel here, use
 * cpu_product) with cpu_product_pack, then c [m][n] = a [m][k] b on the
 * calling thread by cpu_product_packed, as often as the caller likes.  The
 * register-blocked kernel (kernels/conv/direct.c); the sums run over k in
 * order. */
int64_t cpu_product_pack_floats(const cpu_config *cfg, int64_t k, int64_t n);
void cpu_product_pack(const float *b, int64_t ldb, int64_t k, int64_t n,
                      float *packed);
void cpu_product_packed(const float *a, int64_t lda, int64_t m, int64_t k,
                        int64_t n, const float *packed, float *c, int64_t ldc);
/* kernels/conv/direct.c: those three's kernels */
int64_t cpu_direct_packed_floats(const cpu_config *cfg, int64_t kk, int64_t n);
void cpu_direct_pack(const float *b, int64_t ldb, int64_t kk, int64_t n,
                     float *wt);
/* the packed layout's block of columns for a b of kk rows (64, or 16 at
 * AVX2 from 128 rows): a b of n <= that many columns, n a multiple of 16,
 * is its own packed copy */
int64_t cpu_direct_block_cols(int64_t kk);
void cpu_direct_packed_product(const float *a, int64_t lda, int64_t m,
                               int64_t kk, int64_t n, const float *wt,
                               float *c, int64_t ldc);

#endif
