/* matmul.c -- matmul and gemm (float16 is widened to float32 and rounded
 * back), each product one request to the GEMM service (../../gemm.h). */
#include <stdlib.h>

#include "../../gemm.h"

/* A product's float32 work arrays: float16 operands widened (a, b), the
 * result computed in c and rounded back to the output by f16_end. */
typedef struct f16_work {
    float *a, *b, *c;
} f16_work;

/* float16: A, B and C repointed at float32 copies of the operands and a
 * float32 result array of nc elements; float32: nothing (w all NULL). */
static wnn_status
f16_begin(const cpu_call *k, wnn_dtype t, uint64_t nc, const float **A,
          const float **B, float **C, f16_work *w, wnn_error *err)
{
    *w = (f16_work){ 0 };
    if (t != WNN_FLOAT16) {
        return WNN_OK;
    }
    w->a = cpu_to_f32(*A, t, wnn_desc_elements(&k->in_desc[0]));
    w->b = cpu_to_f32(*B, t, wnn_desc_elements(&k->in_desc[1]));
    w->c = malloc(nc * sizeof(float) + 64);
    if (!w->a || !w->b || !w->c) {
        free(w->a);
        free(w->b);
        free(w->c);
        *w = (f16_work){ 0 };
        return cpu_fail(k, err, "out of memory");
    }
    *A = w->a;
    *B = w->b;
    *C = w->c;
    return WNN_OK;
}

/* The result rounded back to the float16 output (when st is WNN_OK) and
 * the work arrays freed; nothing for float32. */
static wnn_status
f16_end(const cpu_call *k, wnn_dtype t, uint64_t nc, f16_work *w,
        wnn_status st)
{
    if (t == WNN_FLOAT16) {
        if (st == WNN_OK) {
            cpu_from_f32(w->c, k->out[0], t, nc);
        }
        free(w->a);
        free(w->b);
        free(w->c);
    }
    return st;
}

/* products [b_, e_) of a batched matmul (cpu_matmul) */
typedef struct bm_job {
    const wnn_matmul_params *q;
    const float *A, *B;
    float *C;
    bool one; /* each product on the calling thread alone */
} bm_job;

static void
bm_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const bm_job *j = p_;
    const wnn_matmul_params *q = j->q;
    const int64_t M = q->M, N = q->N, K = q->K;
    for (int64_t i = b_; i < e_; i++) {
        int64_t rem = i, ia = 0, ib = 0;
        for (int d = (int)q->rb - 1; d >= 0; d--) {
            int64_t idx = rem % q->bshape[d];
            rem /= q->bshape[d];
            ia += idx * q->sa[d];
            ib += idx * q->sb[d];
        }
        cpu_product(&(cpu_gemm_req){.m = M, .n = N, .k = K,
                                    .a = j->A + ia * M * K, .lda = K,
                                    .b = j->B + ib * K * N, .ldb = N,
                                    .c = j->C + i * M * N, .ldc = N,
                                    .threads = j->one ? 1 : 0},
                    NULL);
    }
}

/* #api-mlgraphbuilder-matmul: stacks of matrices, batch dims broadcast;
 * the batch lowered at compile (compiler/lower/matmul.c). */
wnn_status
cpu_matmul(const cpu_call *k, wnn_error *err)
{
    const wnn_matmul_params *q = &k->lowered->u.matmul;
    const wnn_desc *od = &k->out_desc[0];
    wnn_dtype t = od->dtype;
    const int64_t M = q->M, N = q->N, K = q->K;
    const uint64_t no = wnn_desc_elements(od);
    const float *A = k->in[0], *B = k->in[1];
    float *C = k->out[0];
    f16_work w;
    wnn_status st = f16_begin(k, t, no, &A, &B, &C, &w, err);
    if (st != WNN_OK) {
        return st;
    }
    if (q->mode == WNN_MM_ONE) {
        /* b is shared: all of a's matrices are one tall matrix (b packed
         * once where it is a constant) */
        st = cpu_product(&(cpu_gemm_req){
                             .m = M * q->batch, .n = N, .k = K, .a = A,
                             .lda = K, .b = B, .ldb = N, .c = C, .ldc = N,
                             .packed_b = k,
                             .epi = t == WNN_FLOAT32 ? k->epi : NULL},
                         err);
    } else {
        /* a's and b's matrices of each output matrix: with at least as
         * many as threads, each product whole on one thread (attention's
         * heads: BLIS's own threads split each head's small product and
         * joined 12-24 times a layer) */
        const int nt = cpu_num_threads();
        const double flops = 2.0 * (double)M * (double)N * (double)K;
        bm_job j = {.q = q, .A = A, .B = B, .C = C,
                    .one = nt > 1 && q->batch >= nt && flops * q->batch >= 4e6};
        if (j.one) {
            cpu_parallel_for_dynamic(q->batch, 1, nt, bm_body, &j);
        } else {
            bm_body(&j, 0, q->batch, 0);
        }
    }
    return f16_end(k, t, no, &w, st);
}

/* #api-mlgraphbuilder-gemm: alpha * A' * B' + beta * C; sizes, scalars
 * and c's broadcast lowered at compile (compiler/lower/matmul.c). */
wnn_status
cpu_gemm(const cpu_call *k, wnn_error *err)
{
    const wnn_gemm_params *q = &k->lowered->u.gemm;
    wnn_dtype t = k->out_desc[0].dtype;
    const int64_t M = q->M, N = q->N;
    uint64_t no = (uint64_t)M * N;
    const float *A = k->in[0], *B = k->in[1];
    float *C = k->out[0];
    f16_work w;
    wnn_status st0 = f16_begin(k, t, no, &A, &B, &C, &w, err);
    if (st0 != WNN_OK) {
        return st0;
    }
    /* c broadcast along M is a row (the register-blocked kernel takes
     * beta c as its bias); any other c is copied into the output first */
    float *row = NULL;
    if (q->c && q->cs0 == 0) {
        const void *cp = k->in[q->c - 1];
        row = malloc((size_t)N * sizeof(float) + 64);
        if (!row) {
            return f16_end(k, t, no, &w, cpu_fail(k, err, "out of memory"));
        }
        for (int64_t j = 0; j < N; j++) {
            row[j] = t == WNN_FLOAT16
                         ? wnn_f16_to_f32(((const uint16_t *)cp)[j * q->cs1])
                         : ((const float *)cp)[j * q->cs1];
        }
    } else if (q->c) {
        const void *cp = k->in[q->c - 1];
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < N; j++) {
                int64_t idx = i * q->cs0 + j * q->cs1;
                C[i * N + j] = t == WNN_FLOAT16
                                   ? wnn_f16_to_f32(((const uint16_t *)cp)[idx])
                                   : ((const float *)cp)[idx];
            }
        }
    }
    /* without c, beta multiplies nothing (the spec's default c is 0) */
    wnn_status st = cpu_product(
        &(cpu_gemm_req){.ta = q->ta, .tb = q->tb, .m = M, .n = N, .k = q->K,
                        .a = A, .lda = q->lda, .b = B, .ldb = q->ldb,
                        .c = C, .ldc = N, .scaled = true, .alpha = q->alpha,
                        .beta = q->c ? q->beta : 0.0f, .c_row = row,
                        .packed_b = k,
                        .epi = t == WNN_FLOAT32 ? k->epi : NULL},
        err);
    free(row);
    return f16_end(k, t, no, &w, st);
}
