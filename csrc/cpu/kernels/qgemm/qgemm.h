/* qgemm.h -- integer matrix products of quantized graphs (cpu/qdq.c):
 *
 *     C[m][n] = sum_k A[m][k] * B[k][n]     (int32, exact)
 *
 * A uint8 (row-major, rows of lda >= Kp bytes, zero between K and Kp), B
 * int8, packed once at compile (cpu_qgemm_pack) for the instruction-set
 * level cpu_isa() has at that time:
 *   - AVX-512 VNNI (vpdpbusd: four u8 x s8 products summed into int32
 *     lanes, exact): B in panels of 32 columns, [Kp/4][32][4] bytes each;
 *     a 6 x 32 tile of C in 12 zmm registers.
 *   - AVX2: the u8 -> s16 widening path.  vpmaddubsw would sum two u8 x s8
 *     products into a saturating int16 (255 * 127 * 2 > 32767): MLAS and
 *     XNNPACK avoid that by restricting weights to [-64, 63] or by this
 *     widening.  Here B is widened to int16 at packing and each pair of A
 *     values is broadcast as two int16, so vpmaddwd sums two exact 16-bit
 *     products into int32: exact for every int8 weight.  Panels of 16
 *     columns, [Kp/2][16][2] int16 each; a 4 x 16 tile in 8 ymm registers.
 *   - portable C: B as [Kp][N] int8, int32 accumulation.
 * Kp is K rounded up to 4 (the packed rows past K are zero).  colsum[n] =
 * sum_k B[k][n], for the zero-point corrections of the caller. */
#ifndef WNN_CPU_QGEMM_H
#define WNN_CPU_QGEMM_H
#include <stdint.h>

typedef struct cpu_qgemm_b {
    int isa;            /* CPU_ISA_* the layout is for; VNNI: 5           */
    int64_t K, N, Kp;   /* Kp: K rounded up to 4                          */
    int64_t Np;         /* N rounded up to the panel width                */
    void *data;         /* the packed B (int8 or int16, see above)        */
    int32_t *colsum;    /* [N]                                            */
} cpu_qgemm_b;

#define CPU_QGEMM_VNNI 5

/* the level qgemm runs at on this CPU (CPU_QGEMM_VNNI, CPU_ISA_AVX2 or
 * CPU_ISA_BASELINE), capped by WEBNN_CPU_ISA as cpu_isa() is */
int cpu_qgemm_isa(void);
/* B[k][n] = w[k * sk + n * sn] (int8) for k < K, n < N; 0 ok, -1 out of
 * memory.  Freed by cpu_qgemm_free. */
int cpu_qgemm_pack(cpu_qgemm_b *b, const int8_t *w, int64_t K, int64_t N,
                   int64_t sk, int64_t sn);
void cpu_qgemm_free(cpu_qgemm_b *b);
/* the two halves of cpu_qgemm_pack, for a B that changes per dispatch (a
 * product of two activations, qdq.c): alloc sizes and zeroes the buffers
 * once; fill packs B[k][n] = w[k * sk + n * sn] ^ flip (flip 0x80: a uint8
 * source as int8, value - 128) and its colsum */
int cpu_qgemm_alloc(cpu_qgemm_b *b, int64_t K, int64_t N);
void cpu_qgemm_fill(cpu_qgemm_b *b, const int8_t *w, int64_t sk, int64_t sn,
                    uint8_t flip);
/* C rows [0, M), columns [n0, n0 + nn) (n0 a multiple of 64) into c
 * (ldc int32 per row; c[m * ldc + j] is column n0 + j; columns up to the
 * next multiple of 32 past nn may be written too, so ldc >= nn + 32) */
void cpu_qgemm_run(const cpu_qgemm_b *b, const uint8_t *a, int64_t lda,
                   int64_t M, int64_t n0, int64_t nn, int32_t *c,
                   int64_t ldc);

/* the per-ISA kernels (qgemm_vnni.c, qgemm_avx2.c) */
void cpu_qgemm_vnni(const cpu_qgemm_b *b, const uint8_t *a, int64_t lda,
                    int64_t M, int64_t n0, int64_t nn, int32_t *c,
                    int64_t ldc);
void cpu_qgemm_avx2(const cpu_qgemm_b *b, const uint8_t *a, int64_t lda,
                    int64_t M, int64_t n0, int64_t nn, int32_t *c,
                    int64_t ldc);
#endif
