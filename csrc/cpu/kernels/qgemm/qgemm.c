/* qgemm.c -- packing of B and the portable kernel of the integer matrix
 * product (qgemm.h); the vector kernels are qgemm_vnni.c and qgemm_avx2.c. */
#include <stdlib.h>
#include <string.h>

#include "../../cpu.h"
#include "qgemm.h"

int
cpu_qgemm_isa(void)
{
    int isa = cpu_isa();
#if defined(__x86_64__) && defined(__GNUC__)
    if (isa >= CPU_ISA_AVX512 && __builtin_cpu_supports("avx512vnni")) {
        return CPU_QGEMM_VNNI;
    }
#endif
    return isa >= CPU_ISA_AVX2 ? CPU_ISA_AVX2 : CPU_ISA_BASELINE;
}

void
cpu_qgemm_free(cpu_qgemm_b *b)
{
    free(b->data);
    free(b->colsum);
    memset(b, 0, sizeof(*b));
}

int
cpu_qgemm_pack(cpu_qgemm_b *b, const int8_t *w, int64_t K, int64_t N,
               int64_t sk, int64_t sn)
{
    memset(b, 0, sizeof(*b));
    b->isa = cpu_qgemm_isa();
    b->K = K;
    b->N = N;
    b->Kp = (K + 3) / 4 * 4;
    const int64_t Kp = b->Kp;
    b->colsum = calloc((size_t)N + 1, sizeof(int32_t));
    for (int64_t n = 0; b->colsum && n < N; n++) {
        int32_t s = 0;
        for (int64_t k = 0; k < K; k++) {
            s += w[k * sk + n * sn];
        }
        b->colsum[n] = s;
    }
    if (b->isa == CPU_QGEMM_VNNI) {
        b->Np = (N + 31) / 32 * 32;
        int8_t *p = calloc((size_t)(Kp * b->Np) + 64, 1);
        b->data = p;
        /* panel q: [Kp/4][32][4] */
        for (int64_t n = 0; p && n < N; n++) {
            int8_t *pan = p + (n / 32) * Kp * 32;
            for (int64_t k = 0; k < K; k++) {
                pan[(k / 4) * 128 + (n % 32) * 4 + k % 4] = w[k * sk + n * sn];
            }
        }
    } else if (b->isa == CPU_ISA_AVX2) {
        b->Np = (N + 15) / 16 * 16;
        int16_t *p = calloc((size_t)(Kp * b->Np) + 32, sizeof(int16_t));
        b->data = p;
        /* panel q: [Kp/2][16][2] */
        for (int64_t n = 0; p && n < N; n++) {
            int16_t *pan = p + (n / 16) * Kp * 16;
            for (int64_t k = 0; k < K; k++) {
                pan[(k / 2) * 32 + (n % 16) * 2 + k % 2] = w[k * sk + n * sn];
            }
        }
    } else {
        b->Np = N;
        int8_t *p = calloc((size_t)(Kp * N) + 64, 1);
        b->data = p;
        for (int64_t k = 0; p && k < K; k++) {
            for (int64_t n = 0; n < N; n++) {
                p[k * N + n] = w[k * sk + n * sn];
            }
        }
    }
    if (!b->data || !b->colsum) {
        cpu_qgemm_free(b);
        return -1;
    }
    return 0;
}

/* portable: rows of C as int32 vectors over n (vectorised by the compiler) */
CPU_HOT static void
qgemm_c(const cpu_qgemm_b *b, const uint8_t *a, int64_t lda, int64_t M,
        int64_t n0, int64_t nn, int32_t *c, int64_t ldc)
{
    const int8_t *w = b->data;
    const int64_t N = b->N, K = b->K;
    for (int64_t m = 0; m < M; m++) {
        int32_t *restrict cr = c + m * ldc;
        const uint8_t *ar = a + m * lda;
        for (int64_t j = 0; j < nn; j++) {
            cr[j] = 0;
        }
        for (int64_t k = 0; k < K; k++) {
            const int32_t av = ar[k];
            const int8_t *restrict wr = w + k * N + n0;
            for (int64_t j = 0; j < nn; j++) {
                cr[j] += av * wr[j];
            }
        }
    }
}

void
cpu_qgemm_run(const cpu_qgemm_b *b, const uint8_t *a, int64_t lda, int64_t M,
              int64_t n0, int64_t nn, int32_t *c, int64_t ldc)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (b->isa == CPU_QGEMM_VNNI) {
        cpu_qgemm_vnni(b, a, lda, M, n0, nn, c, ldc);
        return;
    }
    if (b->isa == CPU_ISA_AVX2) {
        cpu_qgemm_avx2(b, a, lda, M, n0, nn, c, ldc);
        return;
    }
#endif
    qgemm_c(b, a, lda, M, n0, nn, c, ldc);
}
