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
cpu_qgemm_alloc(cpu_qgemm_b *b, int64_t K, int64_t N)
{
    memset(b, 0, sizeof(*b));
    b->isa = cpu_qgemm_isa();
    b->K = K;
    b->N = N;
    b->Kp = (K + 3) / 4 * 4;
    size_t bytes;
    if (b->isa == CPU_QGEMM_VNNI) {
        b->Np = (N + 31) / 32 * 32;
        bytes = (size_t)(b->Kp * b->Np) + 64;
    } else if (b->isa == CPU_ISA_AVX2) {
        b->Np = (N + 15) / 16 * 16;
        bytes = ((size_t)(b->Kp * b->Np) + 32) * sizeof(int16_t);
    } else {
        b->Np = N;
        bytes = (size_t)(b->Kp * N) + 64;
    }
    /* zero: the packed rows past K and the columns past N stay 0 */
    b->data = calloc(bytes, 1);
    b->colsum = calloc((size_t)N + 1, sizeof(int32_t));
    if (!b->data || !b->colsum) {
        cpu_qgemm_free(b);
        return -1;
    }
    return 0;
}

CPU_HOT_VOID(, , cpu_qgemm_fill,
             (cpu_qgemm_b *b, const int8_t *w, int64_t sk, int64_t sn,
              uint8_t flip),
             (b, w, sk, sn, flip))
{
    const int64_t K = b->K, N = b->N, Kp = b->Kp;
#define WV(k, n) ((int8_t)((uint8_t)w[(k) * sk + (n) * sn] ^ flip))
    /* row by row: contiguous reads where sn is 1 (an activation) */
    memset(b->colsum, 0, sizeof(int32_t) * (size_t)N);
    for (int64_t k = 0; k < K; k++) {
        for (int64_t n = 0; n < N; n++) {
            b->colsum[n] += WV(k, n);
        }
    }
    if (b->isa == CPU_QGEMM_VNNI) {
        /* panel q: [Kp/4][32][4]: for each group of four rows, each panel's
         * 32 columns of them */
        int8_t *p = b->data;
        for (int64_t k4 = 0; k4 < K; k4 += 4) {
            const int64_t nk = K - k4 < 4 ? K - k4 : 4;
            for (int64_t n0 = 0; n0 < N; n0 += 32) {
                int8_t *dst = p + (n0 / 32) * Kp * 32 + (k4 / 4) * 128;
                const int64_t nn = N - n0 < 32 ? N - n0 : 32;
                for (int64_t r = 0; r < nk; r++) {
                    for (int64_t j = 0; j < nn; j++) {
                        dst[j * 4 + r] = WV(k4 + r, n0 + j);
                    }
                }
            }
        }
    } else if (b->isa == CPU_ISA_AVX2) {
        /* panel q: [Kp/2][16][2] */
        int16_t *p = b->data;
        for (int64_t k = 0; k < K; k++) {
            for (int64_t n0 = 0; n0 < N; n0 += 16) {
                int16_t *dst = p + (n0 / 16) * Kp * 16 + (k / 2) * 32 + k % 2;
                const int64_t nn = N - n0 < 16 ? N - n0 : 16;
                for (int64_t j = 0; j < nn; j++) {
                    dst[j * 2] = WV(k, n0 + j);
                }
            }
        }
    } else {
        int8_t *p = b->data;
        for (int64_t k = 0; k < K; k++) {
            for (int64_t n = 0; n < N; n++) {
                p[k * N + n] = WV(k, n);
            }
        }
    }
#undef WV
}

int
cpu_qgemm_pack(cpu_qgemm_b *b, const int8_t *w, int64_t K, int64_t N,
               int64_t sk, int64_t sn)
{
    if (cpu_qgemm_alloc(b, K, N) < 0) {
        return -1;
    }
    cpu_qgemm_fill(b, w, sk, sn, 0);
    return 0;
}

/* portable: rows of C as int32 vectors over n (vectorised by the compiler) */
CPU_HOT_VOID(static, , qgemm_c,
             (const cpu_qgemm_b *b, const uint8_t *a, int64_t lda, int64_t M,
              int64_t n0, int64_t nn, int32_t *c, int64_t ldc),
             (b, a, lda, M, n0, nn, c, ldc))
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
