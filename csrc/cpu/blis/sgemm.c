/* sgemm.c -- the one BLIS wrapper of the CPU backend (cpu_blis_sgemm,
 * cpu_blis_sgemm_1t, cpu_blis_sgemm_tasks in ../gemm.h), called by the GEMM
 * service (../gemm.c) only.  BLIS runs single-threaded; cpu_blis_sgemm threads
 * large products itself, on the backend's pool (pool.c), and leaves only
 * very large ones to BLIS's own (OpenMP) threads.
 *
 * Debian's BLIS 0.9 picks its AVX2 ('haswell') kernels on AVX-512 machines;
 * asking for 'skx' where the CPU has AVX-512 nearly doubles sgemm, so unless
 * the user chose (BLIS_ARCH_TYPE set), we choose before BLIS initialises. */
#include <blis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../gemm.h"

static pthread_once_t blis_once = PTHREAD_ONCE_INIT;

static void
blis_setup(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (!getenv("BLIS_ARCH_TYPE") && cpu_has_avx512()) {
        setenv("BLIS_ARCH_TYPE", "skx", 0);
    }
#endif
    if (!getenv("BLIS_NUM_THREADS") && !getenv("OMP_NUM_THREADS")) {
        bli_thread_set_num_threads(cpu_num_threads());
    }
    bli_init(); /* BLIS reads its environment now, on this thread */
}

void
cpu_blis_init(void)
{
    pthread_once(&blis_once, blis_setup);
}

/* One single-threaded BLIS product (BLIS never starts threads of its own:
 * the products are threaded on the backend's pool, below). */
static void
sgemm_1t(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
         float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
         float beta, float *c, int64_t ldc)
{
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    bli_sgemm_ex(trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                 trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, k, &alpha,
                 (float *)a, lda, 1, (float *)b, ldb, 1, &beta, c, ldc, 1,
                 NULL, &rntm);
}

typedef struct sgemm_job {
    bool ta, tb, split_n;
    int64_t m, n, k, lda, ldb, ldc, len, step, pieces;
    float alpha, beta;
    const float *a, *b;
    float *c;
    _Atomic int64_t next;
} sgemm_job;

/* pieces of the split dimension (columns of op(B) and C, or rows of op(A)
 * and C), one per thread, taken from a counter (a thread that starts late
 * finds its piece done).  More, smaller pieces measured slower: each piece
 * packs the whole of the other operand again. */
static void
sgemm_body(void *p, int tid, int nt)
{
    sgemm_job *j = p;
    (void)tid;
    (void)nt;
    for (;;) {
        int64_t i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (i >= j->pieces) {
            break;
        }
        int64_t lo = i * j->step;
        int64_t cnt = j->len - lo < j->step ? j->len - lo : j->step;
        if (j->split_n) {
            sgemm_1t(j->ta, j->tb, j->m, cnt, j->k, j->alpha, j->a, j->lda,
                     j->b + (j->tb ? lo * j->ldb : lo), j->ldb, j->beta,
                     j->c + lo, j->ldc);
        } else {
            sgemm_1t(j->ta, j->tb, cnt, j->n, j->k, j->alpha,
                     j->a + (j->ta ? lo : lo * j->lda), j->lda, j->b, j->ldb,
                     j->beta, j->c + lo * j->ldc, j->ldc);
        }
    }
}

/* Products of this many flops and more are threaded by BLIS itself (its
 * OpenMP threads): its threads share packed blocks of A and B, which the
 * pool's pieces (separate BLIS calls) cannot; measured at n = 2048 on a
 * 2-CPU VM, idle: BLIS's threads 0.95-0.98x of a direct bli_sgemm, the pool
 * split 0.85-0.96x.  At this size a few OpenMP wake-ups (libgomp throttled
 * by other libraries' threads) cost nothing measurable; but with another
 * process on the cores BLIS's barriers suffer more than the pool split
 * (bench_core with one of two cores busy, n = 2048: a direct multi-threaded
 * bli_sgemm ~80 GFLOP/s, the pool split ~165-175). */
#define BLIS_OWN_THREADS_FLOPS 2e9

/* Row-major sgemm on BLIS.  Small products (< 8 MFLOP) run on one thread
 * (threading costs more than it saves there, and many contexts may compute
 * at once); very large ones (BLIS_OWN_THREADS_FLOPS) on BLIS's threads; the
 * others are cut along N (wide products) or M into one block per thread, a
 * multiple of 32 wide, each block a single-threaded BLIS product on the
 * pool.  A call made inside a pool region runs on the calling thread, and
 * so do the pool's pieces while another context holds the pool. */
void
cpu_blis_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, int64_t lda, const float *b,
          int64_t ldb, float beta, float *c, int64_t ldc)
{
    double flops = 2.0 * (double)m * (double)n * (double)k;
    int nt = flops < 8e6 ? 1 : cpu_num_threads();
    if (nt > 1 && flops >= BLIS_OWN_THREADS_FLOPS && !cpu_in_region()) {
        rntm_t rntm = BLIS_RNTM_INITIALIZER;
        bli_rntm_set_num_threads(nt, &rntm);
        bli_sgemm_ex(trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                     trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, k,
                     &alpha, (float *)a, lda, 1, (float *)b, ldb, 1, &beta, c,
                     ldc, 1, NULL, &rntm);
        return;
    }
    if (nt > 1) {
        bool split_n = n >= m;
        int64_t len = split_n ? n : m;
        int64_t step = (len + nt - 1) / nt;
        step = (step + 31) / 32 * 32;
        int64_t pieces = (len + step - 1) / step;
        if (pieces > 1) {
            sgemm_job j = {trans_a, trans_b, split_n, m, n, k, lda, ldb, ldc,
                           len, step, pieces, alpha, beta, a, b, c, 0};
            cpu_parallel(pieces < nt ? (int)pieces : nt, sgemm_body, &j);
            return;
        }
    }
    sgemm_1t(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* Row-major C = op(A) * op(B) on the calling thread alone (inside pool
 * regions, where BLIS must not start threads of its own). */
void
cpu_blis_sgemm_1t(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                  float alpha, const float *a, int64_t lda, const float *b,
                  int64_t ldb, float beta, float *c, int64_t ldc)
{
    sgemm_1t(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

typedef struct sgtask_job {
    bool ta, tb, split_m;
    int64_t m, n, k, lda, ldb, ldc, len, step;
    const float *a, *b;
    float *c;
} sgtask_job;

static void
sgtask_body(void *p, int64_t b_, int64_t e_, int tid)
{
    (void)tid;
    const sgtask_job *j = p;
    for (int64_t i = b_; i < e_; i++) {
        int64_t lo = i * j->step;
        int64_t cnt = j->len - lo < j->step ? j->len - lo : j->step;
        if (j->split_m) {
            /* rows lo.. of op(A) and of C */
            sgemm_1t(j->ta, j->tb, cnt, j->n, j->k, 1.0f,
                     j->a + (j->ta ? lo : lo * j->lda), j->lda, j->b,
                     j->ldb, 0.0f, j->c + lo * j->ldc, j->ldc);
        } else {
            /* columns lo.. of op(B) and of C */
            sgemm_1t(j->ta, j->tb, j->m, cnt, j->k, 1.0f, j->a, j->lda,
                     j->b + (j->tb ? lo * j->ldb : lo), j->ldb, 0.0f,
                     j->c + lo, j->ldc);
        }
    }
}

/* Row-major C = op(A) * op(B) on nt threads of the pool: the larger of m
 * and n is cut into about 4 nt pieces (multiples of 16, at least 32) that
 * the threads take dynamically, each a single-threaded BLIS product (BLIS's
 * own threads wait for each other at spinning barriers, which goes badly
 * when other processes share the cores).  The convolutions' products. */
void
cpu_blis_sgemm_tasks(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                const float *a, int64_t lda, const float *b, int64_t ldb,
                float *c, int64_t ldc, int nt)
{
    if (nt <= 1) {
        sgemm_1t(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
        return;
    }
    bool split_m = m >= n;
    int64_t len = split_m ? m : n;
    int64_t pieces = 4 * (int64_t)nt, step = (len + pieces - 1) / pieces;
    step = step < 32 ? 32 : (step + 15) / 16 * 16;
    pieces = (len + step - 1) / step;
    sgtask_job j = {.ta = ta, .tb = tb, .split_m = split_m, .m = m, .n = n,
                    .k = k, .lda = lda, .ldb = ldb, .ldc = ldc, .len = len,
                    .step = step, .a = a, .b = b, .c = c};
    cpu_parallel_for_dynamic(pieces, 1, nt, sgtask_body, &j);
}
