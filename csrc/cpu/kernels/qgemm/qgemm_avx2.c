/* qgemm_avx2.c -- the AVX2 kernel of the integer matrix product (qgemm.h):
 * the u8 -> s16 widening path.  B is int16 at packing ([Kp/2][16][2] per
 * panel of 16 columns); each pair of A values of a row is broadcast as two
 * int16 and vpmaddwd adds the two exact products to each int32 lane, so no
 * 16-bit sum ever saturates (vpmaddubsw would, for 255 * 127 * 2).  A
 * 4 x 16 tile of C stays in 8 ymm registers. */
#include <string.h>

#include "qgemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma,bmi2")))

static inline __attribute__((always_inline)) AVX2 void
tile(int mr, const uint8_t *a, int64_t lda, const int16_t *pan, int64_t kp2,
     int32_t *c, int64_t ldc)
{
    __m256i acc[4][2];
    for (int r = 0; r < mr; r++) {
        acc[r][0] = _mm256_setzero_si256();
        acc[r][1] = _mm256_setzero_si256();
    }
    for (int64_t q = 0; q < kp2; q++) {
        const __m256i b0 = _mm256_loadu_si256((const __m256i *)(pan + q * 32));
        const __m256i b1 =
            _mm256_loadu_si256((const __m256i *)(pan + q * 32 + 16));
        for (int r = 0; r < mr; r++) {
            const uint8_t *ar = a + r * lda + q * 2;
            const __m256i av =
                _mm256_set1_epi32((int32_t)((uint32_t)ar[0] |
                                            ((uint32_t)ar[1] << 16)));
            acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, b0));
            acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, b1));
        }
    }
    for (int r = 0; r < mr; r++) {
        _mm256_storeu_si256((__m256i *)(c + r * ldc), acc[r][0]);
        _mm256_storeu_si256((__m256i *)(c + r * ldc + 8), acc[r][1]);
    }
}

AVX2 void
cpu_qgemm_avx2(const cpu_qgemm_b *b, const uint8_t *a, int64_t lda,
               int64_t M, int64_t n0, int64_t nn, int32_t *c, int64_t ldc)
{
    const int64_t kp2 = b->Kp / 2;
    const int16_t *w = b->data;
    for (int64_t p = n0 / 16; p * 16 < n0 + nn; p++) {
        const int16_t *pan = w + p * b->Kp * 16;
        int32_t *cp = c + (p * 16 - n0);
        int64_t m = 0;
        for (; m + 4 <= M; m += 4) {
            tile(4, a + m * lda, lda, pan, kp2, cp + m * ldc, ldc);
        }
        switch (M - m) {
        case 3: tile(3, a + m * lda, lda, pan, kp2, cp + m * ldc, ldc); break;
        case 2: tile(2, a + m * lda, lda, pan, kp2, cp + m * ldc, ldc); break;
        case 1: tile(1, a + m * lda, lda, pan, kp2, cp + m * ldc, ldc); break;
        default: break;
        }
    }
}
#endif
