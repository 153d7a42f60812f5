/* cu_blas.c -- cuBLAS: matmul, gemm and the recurrent networks' products
 * (cu_internal.h has the overview). */
#include "cu_internal.h"

const char *
blas_error(cublasStatus_t s)
{
    return cublasGetStatusString(s);
}

/* Row-major C = op(A) op(B) on cuBLAS, which is column-major: the column-
 * major C^T = op(B)^T op(A)^T, i.e. the operands swapped with the same
 * transpose flags. */
cublasStatus_t
blas_gemm(cu_backend *b, int dt, bool ta, bool tb, int M, int N, int K,
          float alpha, const void *A, int lda, long long sa, const void *B,
          int ldb, long long sb, float beta, void *C, int ldc, long long sc,
          int batch)
{
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (dt == WNN_FLOAT32) {
        if (batch == 1) {
            return cublasSgemm(b->blas, opb, opa, N, M, K, &alpha, B, ldb, A,
                               lda, &beta, C, ldc);
        }
        return cublasSgemmStridedBatched(b->blas, opb, opa, N, M, K, &alpha,
                                         B, ldb, sb, A, lda, sa, &beta, C, ldc,
                                         sc, batch);
    }
    if (batch == 1) {
        return cublasGemmEx(b->blas, opb, opa, N, M, K, &alpha, B, CUDA_R_16F,
                            ldb, A, CUDA_R_16F, lda, &beta, C, CUDA_R_16F, ldc,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    return cublasGemmStridedBatchedEx(b->blas, opb, opa, N, M, K, &alpha, B,
                                      CUDA_R_16F, ldb, sb, A, CUDA_R_16F, lda,
                                      sa, &beta, C, CUDA_R_16F, ldc, sc, batch,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

wnn_status
run_matmul(cu_backend *b, const cu_node *cn, void *const *in, void *const *out,
           void *scratch, wnn_error *err)
{
    /* the shapes lowered by the core (compiler/lower/matmul.c) */
    const wnn_matmul_params *m = &cn->lowered->u.matmul;
    const char *op = cu_core->op_get(cn->node->op)->camel;
    const int dt = cn->ka.to;
    const int M = (int)m->M, N = (int)m->N, K = (int)m->K;
    cublasStatus_t s;
    if (m->mode == WNN_MM_ONE) {
        /* b shared: a's matrices are one tall matrix */
        s = blas_gemm(b, dt, false, false, (int)(m->M * m->batch), N, K, 1.0f,
                      in[0], K, 0, in[1], N, 0, 0.0f, out[0], N, 0, 1);
    } else if (m->mode == WNN_MM_STRIDED) {
        s = blas_gemm(b, dt, false, false, M, N, K, 1.0f, in[0], K, m->ma,
                      in[1], N, m->mb, 0.0f, out[0], N, m->M * m->N,
                      (int)m->batch);
    } else {
        /* batch dimensions broadcast both ways: pointer arrays */
        void **ptrs = scratch;
        cudaError_t e = ck_batch_pointers(m, cn->ka.es, in[0], in[1], out[0],
                                          ptrs, b->stream);
        if (e != cudaSuccess) {
            return cuda_error(err, WNN_OPERATION_ERROR, op, cn->node->label,
                              e, "kernel launch");
        }
        float alpha = 1.0f, beta = 0.0f;
        int batch = (int)m->batch;
        if (dt == WNN_FLOAT32) {
            s = cublasSgemmBatched(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K,
                                   &alpha, (const float *const *)(ptrs + batch),
                                   N, (const float *const *)ptrs, K, &beta,
                                   (float *const *)(ptrs + 2 * batch), N,
                                   batch);
        } else {
            s = cublasGemmBatchedEx(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K,
                                    &alpha,
                                    (const void *const *)(ptrs + batch),
                                    CUDA_R_16F, N,
                                    (const void *const *)ptrs, CUDA_R_16F,
                                    K, &beta,
                                    (void *const *)(ptrs + 2 * batch),
                                    CUDA_R_16F, N, batch,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        }
    }
    if (s != CUBLAS_STATUS_SUCCESS) {
        return cu_core->failk(err, WNN_OPERATION_ERROR, op, cn->node->label, NULL,
                         "cuBLAS failed: %s", blas_error(s));
    }
    return WNN_OK;
}

/* gemm: c broadcast into the output, then alpha op(A) op(B) + beta c in
 * one cuBLAS call.  float16 with c: the sum goes through a float32 copy of c
 * in scratch (CUDA_R_16F operands, CUDA_R_32F C), then is rounded to float16
 * once; cuBLAS's float16 C rounds alpha op(A) op(B) to float16 before adding
 * beta c on some kernels (gemm 64x128x48 + bias: 7 ulps off on an H100),
 * where the CPU and the spec's float64 reference round once. */
wnn_status
run_gemm(cu_backend *b, const cu_node *cn, void *const *in, void *const *out,
         void *scratch, wnn_error *err)
{
    /* the sizes lowered by the core (compiler/lower/matmul.c) */
    const wnn_gemm_params *g = &cn->lowered->u.gemm;
    const char *op = cu_core->op_get(cn->node->op)->camel;
    const int dt = cn->ka.to;
    const bool use_c = g->c != 0;
    const int M = (int)g->M, N = (int)g->N, K = (int)g->K;
    bool wide = dt == WNN_FLOAT16 && use_c;
    int64_t mn = g->M * g->N;
    if (use_c) {
        /* c broadcast into the output (the view reads node input c - 1) */
        cudaError_t e = run_view(b, &cn->u.gm.cview, cn->ka.es, in, out);
        if (e == cudaSuccess && wide) {
            e = ck_cast(WNN_KDT_F16, WNN_KDT_F32, mn, out[0], scratch, b->stream);
        }
        if (e != cudaSuccess) {
            return cuda_error(err, WNN_OPERATION_ERROR, op, cn->node->label,
                              e, "kernel launch");
        }
    }
    cublasStatus_t s;
    if (wide) {
        cublasOperation_t opa = g->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
        cublasOperation_t opb = g->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
        /* row-major as in blas_gemm: the operands swapped */
        s = cublasGemmEx(b->blas, opb, opa, N, M, K, &g->alpha, in[1],
                         CUDA_R_16F, (int)g->ldb, in[0], CUDA_R_16F,
                         (int)g->lda, &g->beta, scratch, CUDA_R_32F, N,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    } else {
        s = blas_gemm(b, dt, g->ta, g->tb, M, N, K, g->alpha, in[0],
                      (int)g->lda, 0, in[1], (int)g->ldb, 0, g->beta, out[0],
                      N, 0, 1);
    }
    if (s != CUBLAS_STATUS_SUCCESS) {
        return cu_core->failk(err, WNN_OPERATION_ERROR, op, cn->node->label, NULL,
                         "cuBLAS failed: %s", blas_error(s));
    }
    if (wide) {
        cudaError_t e = ck_cast(WNN_KDT_F32, WNN_KDT_F16, mn, scratch, out[0], b->stream);
        if (e != cudaSuccess) {
            return cuda_error(err, WNN_OPERATION_ERROR, op, cn->node->label,
                              e, "kernel launch");
        }
    }
    return WNN_OK;
}

/* gru / gruCell / lstm / lstmCell: x W^T for every step and direction in
 * one product, then per step h R^T (one strided-batched product over the
 * directions) and the gate kernel; gru without resetAfter takes z and r
 * first, then (r * h) Rn.  float32 products (float16 operands widened into
 * scratch first), as the CPU. */
wnn_status
run_rnn(cu_backend *b, const cu_node *cn, void *const *in, void *const *out,
        void *scratch, wnn_error *err)
{
    const rnn_plan *r = &cn->u.rnn;
    const wnn_rnn_params *p = &cn->lowered->u.rnn;
    const char *op = cu_core->op_get(cn->node->op)->camel;
    cudaStream_t s = b->stream;
    char *sc = scratch;
#define F(off) ((float *)(sc + (off)))
    const int64_t T = p->T, B = p->B, H = p->H, D = p->D, I = p->I;
    const int64_t G = p->lstm ? 4 : 3, GH = G * H, state = D * B * H;
    const float *x = in[0], *w = in[1], *rw = in[2];
    cudaError_t e = cudaSuccess;
    if (p->dt == WNN_FLOAT16) {
        e = ck_cast(WNN_KDT_F16, WNN_KDT_F32, T * B * I, in[0], F(r->x32), s);
        if (e == cudaSuccess) {
            e = ck_cast(WNN_KDT_F16, WNN_KDT_F32, D * GH * I, in[1], F(r->w32), s);
        }
        if (e == cudaSuccess) {
            e = ck_cast(WNN_KDT_F16, WNN_KDT_F32, D * GH * H, in[2], F(r->r32), s);
        }
        x = F(r->x32), w = F(r->w32), rw = F(r->r32);
    }
    if (e == cudaSuccess) {
        e = ck_rnn_init(p, p->bias ? in[p->bias - 1] : NULL,
                        p->rbias ? in[p->rbias - 1] : NULL,
                        p->h0 ? in[p->h0 - 1] : NULL,
                        p->c0 ? in[p->c0 - 1] : NULL, F(r->bsum), F(r->rbn),
                        F(r->h[0]), p->lstm ? F(r->c[0]) : NULL, s);
    }
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_OPERATION_ERROR, op, cn->node->label, e,
                          "kernel launch");
    }
    cublasStatus_t bs = blas_gemm(b, WNN_FLOAT32, false, true, (int)(T * B),
                                  (int)(D * GH), (int)I, 1.0f, x, (int)I, 0,
                                  w, (int)I, 0, 0.0f, F(r->xw), (int)(D * GH),
                                  0, 1);
    const void *peep = p->peep ? in[p->peep - 1] : NULL;
    void *seq = p->out_seq ? out[p->out_seq - 1] : NULL;
    float *hr = F(r->hr);
    for (int64_t k = 0; k < T && bs == CUBLAS_STATUS_SUCCESS &&
                        e == cudaSuccess; k++) {
        float *hp = F(r->h[k & 1]), *hn = F(r->h[(k + 1) & 1]);
        float *cp = p->lstm ? F(r->c[k & 1]) : NULL;
        float *cnx = p->lstm ? F(r->c[(k + 1) & 1]) : NULL;
        bool two = !p->lstm && !p->reset_after;
        /* hr[d] = h[d] R[d]^T (gru without resetAfter: z and r only) */
        bs = blas_gemm(b, WNN_FLOAT32, false, true, (int)B,
                       (int)(two ? 2 * H : GH), (int)H, 1.0f, hp, (int)H,
                       B * H, rw, (int)H, GH * H, 0.0f, hr, (int)GH, B * GH,
                       (int)D);
        if (bs != CUBLAS_STATUS_SUCCESS) {
            break;
        }
        e = ck_rnn_gates(p, 0, k, F(r->xw), hr, F(r->bsum), F(r->rbn), peep,
                         hp, cp, hn, cnx, F(r->rh), seq, s);
        if (two && e == cudaSuccess) {
            bs = blas_gemm(b, WNN_FLOAT32, false, true, (int)B, (int)H,
                           (int)H, 1.0f, F(r->rh), (int)H, B * H,
                           rw + 2 * H * H, (int)H, GH * H, 0.0f, hr + 2 * H,
                           (int)GH, B * GH, (int)D);
            if (bs == CUBLAS_STATUS_SUCCESS) {
                e = ck_rnn_gates(p, 1, k, F(r->xw), hr, F(r->bsum), F(r->rbn),
                                 peep, hp, cp, hn, cnx, F(r->rh), seq, s);
            }
        }
    }
    if (bs != CUBLAS_STATUS_SUCCESS) {
        return cu_core->failk(err, WNN_OPERATION_ERROR, op, cn->node->label, NULL,
                         "cuBLAS failed: %s", blas_error(bs));
    }
    /* the final states into the outputs */
    const float *hf = F(r->h[T & 1]);
    const float *cf = p->lstm ? F(r->c[T & 1]) : NULL;
    size_t bytes = (size_t)state * sizeof(float);
    if (e == cudaSuccess) {
        e = p->dt == WNN_FLOAT32
                ? cudaMemcpyAsync(out[0], hf, bytes, cudaMemcpyDeviceToDevice, s)
                : ck_cast(WNN_KDT_F32, WNN_KDT_F16, state, hf, out[0], s);
    }
    if (e == cudaSuccess && p->out_c) {
        e = p->dt == WNN_FLOAT32
                ? cudaMemcpyAsync(out[p->out_c - 1], cf, bytes,
                                  cudaMemcpyDeviceToDevice, s)
                : ck_cast(WNN_KDT_F32, WNN_KDT_F16, state, cf, out[p->out_c - 1], s);
    }
#undef F
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_OPERATION_ERROR, op, cn->node->label, e,
                          "kernel launch");
    }
    return WNN_OK;
}

/* The cuBLAS handle, made on first use (creating one costs time and memory
 * that contexts without products need not pay).  float32 products in
 * float32: CUBLAS_DEFAULT_MATH with cublasSgemm* and CUBLAS_COMPUTE_32F
 * never use TF32; float16 products run on tensor cores, accumulating in
 * float32, and CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION keeps a
 * split-K product's partial sums in float32 too (cuBLAS's default sums them
 * in float16 on some shapes: gemm 64x128x48 + bias was 7 ulps off on an
 * H100), so the result is rounded once, as on the CPU. */
/* A workspace of our own for the handle: cuBLAS's sm90 kernels use split-K /
 * stream-K workspace (32 MiB is what PyTorch gives cuBLAS on Hopper), and a
 * user workspace is what makes cuBLAS safe under CUDA graph capture (it
 * then allocates nothing).  Without it (no memory, a refusal) cuBLAS keeps
 * its own default: slower on some shapes, never wrong. */
#define BLAS_WS_BYTES ((size_t)32 << 20)

static void
blas_workspace(cu_backend *b)
{
    void *ws = NULL;
    if (cudaMalloc(&ws, BLAS_WS_BYTES) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    if (cublasSetWorkspace(b->blas, ws, BLAS_WS_BYTES) != CUBLAS_STATUS_SUCCESS) {
        cudaFree(ws);
        return;
    }
    b->blas_ws = ws;
}

wnn_status
need_blas(cu_backend *b, wnn_error *err)
{
    wnn_status st = WNN_OK;
    pthread_mutex_lock(&b->blas_mu);
    if (!b->blas) {
        cublasStatus_t s = cublasCreate(&b->blas);
        if (s == CUBLAS_STATUS_SUCCESS) {
            s = cublasSetStream(b->blas, b->stream);
        }
        if (s == CUBLAS_STATUS_SUCCESS) {
            s = cublasSetMathMode(b->blas, (cublasMath_t)(
                CUBLAS_DEFAULT_MATH |
                CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
        }
        if (s != CUBLAS_STATUS_SUCCESS) {
            if (b->blas) {
                cublasDestroy(b->blas);
            }
            b->blas = NULL;
            st = cu_core->failk(err, WNN_OPERATION_ERROR, "build", NULL, NULL,
                           "cannot initialise cuBLAS: %s", blas_error(s));
        } else {
            blas_workspace(b);
        }
    }
    pthread_mutex_unlock(&b->blas_mu);
    return st;
}
