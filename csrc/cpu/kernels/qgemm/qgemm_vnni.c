/* qgemm_vnni.c -- the AVX-512 VNNI kernel of the integer matrix product
 * (qgemm.h): vpdpbusd adds four u8 x s8 products to each int32 lane (exact:
 * no intermediate saturation).  A 6 x 32 tile of C stays in 12 zmm
 * registers; each step broadcasts four A bytes of a row and loads two zmm
 * of the packed panel ([Kp/4][32][4] bytes). */
#include <string.h>

#include "qgemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

static inline __attribute__((always_inline)) VNNI void
tile(int mr, const uint8_t *a, int64_t lda, const int8_t *pan, int64_t kq,
     int32_t *c, int64_t ldc)
{
    __m512i acc[6][2];
    for (int r = 0; r < mr; r++) {
        acc[r][0] = _mm512_setzero_si512();
        acc[r][1] = _mm512_setzero_si512();
    }
    for (int64_t q = 0; q < kq; q++) {
        const __m512i b0 = _mm512_loadu_si512(pan + q * 128);
        const __m512i b1 = _mm512_loadu_si512(pan + q * 128 + 64);
        for (int r = 0; r < mr; r++) {
            int32_t v;
            memcpy(&v, a + r * lda + q * 4, 4);
            const __m512i av = _mm512_set1_epi32(v);
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
            acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
        }
    }
    for (int r = 0; r < mr; r++) {
        _mm512_storeu_si512(c + r * ldc, acc[r][0]);
        _mm512_storeu_si512(c + r * ldc + 16, acc[r][1]);
    }
}

VNNI void
cpu_qgemm_vnni(const cpu_qgemm_b *b, const uint8_t *a, int64_t lda,
               int64_t M, int64_t n0, int64_t nn, int32_t *c, int64_t ldc)
{
    const int64_t kq = b->Kp / 4;
    const int8_t *w = b->data;
    for (int64_t p = n0 / 32; p * 32 < n0 + nn; p++) {
        const int8_t *pan = w + p * b->Kp * 32;
        int32_t *cp = c + (p * 32 - n0);
        int64_t m = 0;
        for (; m + 6 <= M; m += 6) {
            tile(6, a + m * lda, lda, pan, kq, cp + m * ldc, ldc);
        }
        switch (M - m) {
        case 5: tile(5, a + m * lda, lda, pan, kq, cp + m * ldc, ldc); break;
        case 4: tile(4, a + m * lda, lda, pan, kq, cp + m * ldc, ldc); break;
        case 3: tile(3, a + m * lda, lda, pan, kq, cp + m * ldc, ldc); break;
        case 2: tile(2, a + m * lda, lda, pan, kq, cp + m * ldc, ldc); break;
        case 1: tile(1, a + m * lda, lda, pan, kq, cp + m * ldc, ldc); break;
        default: break;
        }
    }
}
#endif
