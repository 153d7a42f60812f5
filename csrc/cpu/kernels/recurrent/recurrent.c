/* recurrent.c -- CPU kernels of gru, gruCell, lstm and lstmCell.
 *
 * The math is the spec's emulation sketches (#api-mlgraphbuilder-grucell,
 * #api-mlgraphbuilder-lstmcell) step by step, computed in float32 (float16
 * operands are widened and the outputs rounded back once):
 *
 *   gru   z = f(x Wz + h Rz + bz + rbz)      r = f(x Wr + h Rr + br + rbr)
 *         resetAfter:  n = g(x Wn + bn + r * (h Rn + rbn))
 *         otherwise:   n = g(x Wn + (r * h) Rn + bn + rbn)
 *         h' = z * h + (1 - z) * n
 *   lstm  i = f(x Wi + h Ri + bi + rbi + c * pi)
 *         f = f(x Wf + h Rf + bf + rbf + c * pf)
 *         o = f(x Wo + h Ro + bo + rbo + c * po)   (c: the previous cell
 *         g = g(x Wg + h Rg + bg + rbg)             state, as in the sketch)
 *         c' = f * c + i * g          h' = o * h(c')
 *
 * with (f, g[, h]) the activations (default sigmoid, tanh[, tanh]), gate
 * blocks ordered by the layout (zrn / rzn, iofg / ifgo) and peephole
 * weights always ordered i, o, f.  The networks run the cell over the
 * steps: direction "backward" (and the second direction of "both") from the
 * last step to the first, the output sequence indexed by the input's step.
 * gruCell and lstmCell are one step of a forward network.
 *
 * Products.  The input projection x W of ALL steps and both directions is
 * one product before the recurrence ([steps * batch, input] x [directions *
 * gates * hidden, input]^T); the biases are folded into the gate math.
 * Each step then needs h R ([batch, hidden] x [hidden, gates * hidden]).
 *
 * - Several steps of a small batch (<= 64) on x86-64 with AVX2 + FMA: both
 *   products run on a register-blocked micro-kernel (8 x 64 with AVX-512,
 *   6 x 16 with AVX2) over W and R packed into panels once per dispatch.
 *   There BLIS is ~4 times slower for the step product (it repacks all of R
 *   at every step, and its 32 x 12 micro-tiles are mostly padding for a
 *   batch of 8: 8 x 1024 x 256 takes ~85 us against ~22 us), and its
 *   threads wait for each other by spinning without yielding, which on a
 *   busy machine can stretch the projection from 1 to 100+ ms.
 * - Otherwise: cpu_product (the GEMM service), the projection before the recurrence, the
 *   step products on R^T copied once per dispatch (or on R itself for a
 *   single step: gruCell, lstmCell).
 *
 * Threads.  One team of the pool packs W and R, computes the projection by
 * rows and runs the steps: the hidden units of each direction are split in
 * slices (each thread owns a slice of units of every gate, with its own
 * packed copy of those rows of R), each thread computes its part of h R
 * and its gate math, and the team meets at a barrier after each step (two
 * for gru without resetAfter, whose second product needs every r * h).
 * With two directions and two threads, each thread runs one direction
 * without barriers.  Small networks run on one thread; large cpu_product
 * step products thread themselves, the gate math then threaded over the
 * batch.  WEBNN_CPU_ISA=avx2|baseline in the environment caps the code
 * path chosen (to test the others). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../gemm.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(WNN_NO_CLONES)
#include <immintrin.h>
#define RNN_X86 1
/* Code compiled for AVX-512 ("v4": F, VL, BW, DQ, with AVX2 and FMA) or
 * AVX2 + FMA ("v3"), chosen by the CPU's features at run time
 * (target_clones with "arch=skylake-avx512" would choose by CPU model, and
 * miss AMD's AVX-512). */
#define ISA_V4 \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,bmi2")))
#define ISA_V3 __attribute__((target("avx2,fma,bmi2")))
static int
isa_level(void)
{
    return cpu_isa();
}
#else
#define RNN_X86 0
static __attribute__((unused)) int
isa_level(void)
{
    return 1; /* (unused where the kernels have no ISA variants) */
}
#endif

/* ---- activations (vectorisable float32) ------------------------------- */

/* In place over n floats: relu, sigmoid or tanh (WNN_RNN_*). */
static inline __attribute__((always_inline)) void
activate(int kind, float *x, int64_t n)
{
    if (kind == WNN_RNN_RELU) {
        for (int64_t i = 0; i < n; i++) {
            x[i] = (x[i] > 0 || x[i] != x[i]) ? x[i] : 0.0f; /* NaN stays */
        }
    } else if (kind == WNN_RNN_SIGMOID) {
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            bad |= wnn_sigmoid_needs_libm(x[i]);
        }
        if (bad) { /* results below FLT_MIN, or NaN: the libm way */
            for (int64_t i = 0; i < n; i++) {
                x[i] = wnn_sigmoid_libm(x[i]);
            }
            return;
        }
        for (int64_t i = 0; i < n; i++) {
            x[i] = wnn_sigmoid_core(x[i]);
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            x[i] = wnn_tanh_cephes(x[i]);
        }
    }
}

/* ---- the small-batch recurrent product -------------------------------- */
/* c[m, ncols] = a[m, k] p, m <= MR rows of a (row stride lda), p a packed
 * panel [k][NR] (zero-padded past the block's columns), c row stride ldc;
 * rows of a past m read `zero` (k zeros) and are not stored. */
typedef void (*micro_fn)(const float *a, int64_t lda, int64_t m, int64_t k,
                         const float *p, float *c, int64_t ldc, int64_t ncols,
                         const float *zero);

#if RNN_X86
ISA_V4 static void
micro_v4(const float *a, int64_t lda, int64_t m, int64_t k, const float *p,
         float *c, int64_t ldc, int64_t ncols, const float *zero)
{
    enum { MR = 8, NV = 4 }; /* 8 rows x 64 columns: 32 accumulators */
    const float *r[MR];
    for (int b = 0; b < MR; b++) {
        r[b] = b < m ? a + b * lda : zero;
    }
    __m512 acc[MR][NV];
    for (int b = 0; b < MR; b++) {
        for (int q = 0; q < NV; q++) {
            acc[b][q] = _mm512_setzero_ps();
        }
    }
    for (int64_t kk = 0; kk < k; kk++) {
        const float *pk = p + kk * 16 * NV;
        __m512 w[NV];
        for (int q = 0; q < NV; q++) {
            w[q] = _mm512_load_ps(pk + 16 * q);
        }
        for (int b = 0; b < MR; b++) {
            __m512 av = _mm512_set1_ps(r[b][kk]);
            for (int q = 0; q < NV; q++) {
                acc[b][q] = _mm512_fmadd_ps(av, w[q], acc[b][q]);
            }
        }
    }
    for (int b = 0; b < m; b++) {
        for (int q = 0; q < NV; q++) {
            int64_t left = ncols - 16 * q;
            if (left >= 16) {
                _mm512_storeu_ps(c + b * ldc + 16 * q, acc[b][q]);
            } else if (left > 0) {
                _mm512_mask_storeu_ps(c + b * ldc + 16 * q,
                                      (__mmask16)((1u << left) - 1u),
                                      acc[b][q]);
            }
        }
    }
}

ISA_V3 static void
micro_v3(const float *a, int64_t lda, int64_t m, int64_t k, const float *p,
         float *c, int64_t ldc, int64_t ncols, const float *zero)
{
    enum { MR = 6, NV = 2 }; /* 6 rows x 16 columns: 12 accumulators */
    const float *r[MR];
    for (int b = 0; b < MR; b++) {
        r[b] = b < m ? a + b * lda : zero;
    }
    __m256 acc[MR][NV];
    for (int b = 0; b < MR; b++) {
        for (int q = 0; q < NV; q++) {
            acc[b][q] = _mm256_setzero_ps();
        }
    }
    for (int64_t kk = 0; kk < k; kk++) {
        const float *pk = p + kk * 8 * NV;
        __m256 w[NV];
        for (int q = 0; q < NV; q++) {
            w[q] = _mm256_load_ps(pk + 8 * q);
        }
        for (int b = 0; b < MR; b++) {
            __m256 av = _mm256_broadcast_ss(r[b] + kk);
            for (int q = 0; q < NV; q++) {
                acc[b][q] = _mm256_fmadd_ps(av, w[q], acc[b][q]);
            }
        }
    }
    for (int b = 0; b < m; b++) {
        float tmp[8 * NV];
        for (int q = 0; q < NV; q++) {
            _mm256_storeu_ps(tmp + 8 * q, acc[b][q]);
        }
        memcpy(c + b * ldc, tmp,
               (size_t)(ncols < 8 * NV ? ncols : 8 * NV) * sizeof(float));
    }
}
#endif

/* The micro-kernel of this CPU: rows MR, panel width NR; NULL if none. */
static micro_fn
micro_pick(int64_t *mr, int64_t *nr)
{
#if RNN_X86
    int level = isa_level();
    if (level == 4) {
        *mr = 8;
        *nr = 64;
        return micro_v4;
    }
    if (level == 3) {
        *mr = 6;
        *nr = 16;
        return micro_v3;
    }
#endif
    *mr = *nr = 0;
    return NULL;
}

/* ---- the recurrence ---------------------------------------------------- */
typedef struct rnn {
    bool lstm, reset_after;
    int64_t T, B, H, D, G;
    int direction;
    int act_f, act_g, act_h;
    int gz, gr;                  /* gru: blocks of z and r (n is block 2)   */
    int gi, go, gf, gg;          /* lstm: blocks of i, o, f, g              */
    float *xw;                   /* [T * B, D * G * H] projections          */
    int64_t ldxw;
    const float *x, *W;          /* [T * B, I], [D * G * H, I] (operands)   */
    int64_t I;
    float *wp;                   /* W in micro-kernel panels, or NULL: the  */
                                 /* projection is cpu_product before run()    */
    const float *R;              /* [D, G * H, H], the operand              */
    /* R prepared once per dispatch, by slice (d, s), or both NULL:        */
    float *pk;                   /* micro-kernel panels [G][P][H][NR]       */
    float *rt;                   /* R^T [H, G * hs] for cpu_product          */
    float *prep;                 /* the memory of pk or rt                  */
    int64_t slice_floats;        /* floats per slice in pk or rt            */
    micro_fn micro;
    int64_t mr, nr;
    const float *zero;           /* max(H, I) zeros (padding rows)          */
    const float *bsum;           /* [D, G * H] bias + recurrent bias        */
    const float *rbn;            /* [D, H] gru resetAfter: recurrent bias n */
    const float *peep;           /* [D, 3 * H] or NULL                      */
    float *hbuf[2], *cbuf[2];    /* [D, B, H] states (double-buffered)      */
    float *rh;                   /* [D, B, H] gru !resetAfter: r * h        */
    float *seq;                  /* [T, D, B, H] or NULL                    */
    int S;                       /* slices per direction                    */
    int team;                    /* threads (>= S * D when S > 1), or 1     */
    int64_t chunk;               /* hidden units per slice                  */
    float *scratch;              /* per thread [B, G * chunk]               */
    int gate_threads;            /* threads of the gate math (team == 1)    */
} rnn;

/* What one thread works on in one step. */
typedef struct step {
    int64_t d, j0, hs, t;
    const float *hp, *cp, *xw;
    const float *pk, *rt;        /* this slice's prepared R (or NULL)       */
    float *hn, *cn, *hr;         /* hr: [B, G * hs] h R, then the gates     */
} step;

static bool
is_backward(const rnn *n, int64_t d)
{
    return n->direction == WNN_RNN_BACKWARD || d == 1;
}

/* gru, resetAfter or not: z and r for rows [b0, b1); with resetAfter also
 * n and h', else r * h into n->rh. */
static inline __attribute__((always_inline)) void
gru_phase1_body(const rnn *n, const step *st, int64_t b0, int64_t b1)
{
    const int64_t H = n->H, hs = st->hs, j0 = st->j0;
    const float *bs = n->bsum + st->d * 3 * H;
    for (int64_t b = b0; b < b1; b++) {
        float *row = st->hr + b * 3 * hs;
        const float *xr = st->xw + b * n->ldxw;
        for (int g = 0; g < 2; g++) {
            float *y = row + g * hs;
            const float *xv = xr + g * H + j0, *bv = bs + g * H + j0;
            /* the spec's order, (b + rb) + (x W + h R): where the gate's
             * sum cancels, x W + h R rounded once is closer than adding
             * the biases to x W first */
            for (int64_t j = 0; j < hs; j++) {
                y[j] = bv[j] + (xv[j] + y[j]);
            }
        }
        activate(n->act_f, row, 2 * hs);
        const float *z = row + n->gz * hs, *r = row + n->gr * hs;
        const float *hp = st->hp + b * H + j0;
        if (!n->reset_after) {
            float *rh = n->rh + (st->d * n->B + b) * H + j0;
            for (int64_t j = 0; j < hs; j++) {
                rh[j] = r[j] * hp[j];
            }
            continue;
        }
        float *nv = row + 2 * hs;
        const float *xv = xr + 2 * H + j0, *bv = bs + 2 * H + j0;
        const float *rb = n->rbn + st->d * H + j0;
        for (int64_t j = 0; j < hs; j++) {
            nv[j] = bv[j] + (xv[j] + r[j] * (rb[j] + nv[j]));
        }
        activate(n->act_g, nv, hs);
        float *hn = st->hn + b * H + j0;
        for (int64_t j = 0; j < hs; j++) {
            hn[j] = z[j] * hp[j] + nv[j] * (1.0f - z[j]);
        }
    }
}

/* gru without resetAfter, after (r * h) Rn: n and h'. */
static inline __attribute__((always_inline)) void
gru_phase2_body(const rnn *n, const step *st, int64_t b0, int64_t b1)
{
    const int64_t H = n->H, hs = st->hs, j0 = st->j0;
    const float *bs = n->bsum + st->d * 3 * H;
    for (int64_t b = b0; b < b1; b++) {
        float *row = st->hr + b * 3 * hs;
        const float *xr = st->xw + b * n->ldxw;
        const float *z = row + n->gz * hs, *hp = st->hp + b * H + j0;
        float *nv = row + 2 * hs;
        const float *xv = xr + 2 * H + j0, *bv = bs + 2 * H + j0;
        for (int64_t j = 0; j < hs; j++) {
            nv[j] = bv[j] + (xv[j] + nv[j]);
        }
        activate(n->act_g, nv, hs);
        float *hn = st->hn + b * H + j0;
        for (int64_t j = 0; j < hs; j++) {
            hn[j] = z[j] * hp[j] + nv[j] * (1.0f - z[j]);
        }
    }
}

static inline __attribute__((always_inline)) void
lstm_phase_body(const rnn *n, const step *st, int64_t b0, int64_t b1)
{
    const int64_t H = n->H, hs = st->hs, j0 = st->j0;
    const float *bs = n->bsum + st->d * 4 * H;
    const float *pp = n->peep ? n->peep + st->d * 3 * H + j0 : NULL;
    for (int64_t b = b0; b < b1; b++) {
        float *row = st->hr + b * 4 * hs;
        const float *xr = st->xw + b * n->ldxw;
        const float *cp = st->cp + b * H + j0;
        for (int g = 0; g < 4; g++) {
            float *y = row + g * hs;
            const float *xv = xr + g * H + j0, *bv = bs + g * H + j0;
            for (int64_t j = 0; j < hs; j++) {
                y[j] += xv[j] + bv[j];
            }
        }
        float *iv = row + n->gi * hs, *ov = row + n->go * hs;
        float *fv = row + n->gf * hs, *gv = row + n->gg * hs;
        if (pp) {
            for (int64_t j = 0; j < hs; j++) {
                iv[j] += cp[j] * pp[j];
                ov[j] += cp[j] * pp[H + j];
                fv[j] += cp[j] * pp[2 * H + j];
            }
        }
        activate(n->act_f, iv, hs);
        activate(n->act_f, ov, hs);
        activate(n->act_f, fv, hs);
        activate(n->act_g, gv, hs);
        float *cn = st->cn + b * H + j0, *hn = st->hn + b * H + j0;
        for (int64_t j = 0; j < hs; j++) {
            cn[j] = fv[j] * cp[j] + iv[j] * gv[j];
            hn[j] = cn[j];
        }
        activate(n->act_h, hn, hs);
        for (int64_t j = 0; j < hs; j++) {
            hn[j] *= ov[j];
        }
    }
}

typedef void (*phase_fn)(const rnn *, const step *, int64_t, int64_t);

#if RNN_X86
#define PHASE_VARIANTS(name)                                                 \
    ISA_V4 static void name##_v4(const rnn *n, const step *st, int64_t b0,  \
                                 int64_t b1)                                \
    {                                                                        \
        name##_body(n, st, b0, b1);                                          \
    }                                                                        \
    ISA_V3 static void name##_v3(const rnn *n, const step *st, int64_t b0,  \
                                 int64_t b1)                                \
    {                                                                        \
        name##_body(n, st, b0, b1);                                          \
    }                                                                        \
    static void name##_v1(const rnn *n, const step *st, int64_t b0,         \
                          int64_t b1)                                       \
    {                                                                        \
        name##_body(n, st, b0, b1);                                          \
    }
#define PICK(name)                                                           \
    (isa_level() == 4 ? name##_v4 : isa_level() == 3 ? name##_v3 : name##_v1)
#else
#define PHASE_VARIANTS(name)                                                 \
    static void name##_v1(const rnn *n, const step *st, int64_t b0,         \
                          int64_t b1)                                       \
    {                                                                        \
        name##_body(n, st, b0, b1);                                          \
    }
#define PICK(name) name##_v1
#endif
PHASE_VARIANTS(gru_phase1)
PHASE_VARIANTS(gru_phase2)
PHASE_VARIANTS(lstm_phase)

typedef struct phase_job {
    const rnn *n;
    const step *st;
    phase_fn f;
    int64_t per;
} phase_job;

static void
phase_body(void *p, int64_t k0, int64_t k1, int tid)
{
    (void)tid;
    const phase_job *j = p;
    const rnn *n = j->n;
    for (int64_t k = k0; k < k1; k++) {
        int64_t b0 = k * j->per, b1 = b0 + j->per < n->B ? b0 + j->per : n->B;
        if (b0 < b1) {
            j->f(n, j->st, b0, b1);
        }
    }
}

/* Gate math over all batch rows, threaded over the batch if asked. */
static void
phase(const rnn *n, const step *st, phase_fn f)
{
    int nt = n->gate_threads;
    if (nt <= 1) {
        f(n, st, 0, n->B);
        return;
    }
    phase_job j = {n, st, f, (n->B + nt - 1) / nt};
    cpu_parallel_for(nt, nt, phase_body, &j);
}

/* hr[:, g * hs + (0 .. hs)] = h R for the gate blocks g0 .. g0 + ng - 1 of
 * the step's slice (hr's row stride G * hs); h: [B, H]. */
static void
recurrent_product(const rnn *n, const step *st, const float *h, int g0,
                  int ng)
{
    const int64_t H = n->H, B = n->B, hs = st->hs, ld = n->G * hs;
    if (st->pk) {
        int64_t panels = (hs + n->nr - 1) / n->nr;
        for (int64_t b0 = 0; b0 < B; b0 += n->mr) {
            int64_t m = B - b0 < n->mr ? B - b0 : n->mr;
            for (int g = g0; g < g0 + ng; g++) {
                for (int64_t q = 0; q < panels; q++) {
                    int64_t c0 = q * n->nr;
                    n->micro(h + b0 * H, H, m, H,
                             st->pk + (g * panels + q) * H * n->nr,
                             st->hr + b0 * ld + g * hs + c0, ld,
                             hs - c0 < n->nr ? hs - c0 : n->nr, n->zero);
                }
            }
        }
    } else if (st->rt) {
        cpu_product(&(cpu_gemm_req){.m = B, .n = ng * hs, .k = H, .a = h,
                                    .lda = H, .b = st->rt + g0 * hs,
                                    .ldb = ld, .c = st->hr + g0 * hs,
                                    .ldc = ld}, NULL);
    } else if (hs == H) {
        cpu_product(&(cpu_gemm_req){.tb = true, .m = B, .n = ng * hs, .k = H,
                                    .a = h, .lda = H,
                                    .b = n->R + (st->d * n->G + g0) * H * H,
                                    .ldb = H, .c = st->hr + g0 * hs,
                                    .ldc = ld}, NULL);
    } else {
        for (int g = g0; g < g0 + ng; g++) {
            cpu_product(&(cpu_gemm_req){
                            .tb = true, .m = B, .n = hs, .k = H, .a = h,
                            .lda = H,
                            .b = n->R + ((st->d * n->G + g) * H + st->j0) * H,
                            .ldb = H, .c = st->hr + g * hs, .ldc = ld}, NULL);
        }
    }
}

/* One thread: hidden units [j0, j0 + hs) of direction d (slice s of S),
 * all steps; an idle thread (no slice) only meets the others at the
 * barriers.  With S > 1 every thread of the team reaches the barriers. */
static void
run_slice(const rnn *n, int64_t d, int64_t s, int tid, bool idle)
{
    const int64_t H = n->H, B = n->B, G = n->G;
    int64_t j0 = s * n->chunk < H ? s * n->chunk : H;
    int64_t j1 = j0 + n->chunk < H ? j0 + n->chunk : H;
    step st = { .d = d, .j0 = j0, .hs = idle ? 0 : j1 - j0 };
    const int64_t hs = st.hs;
    st.pk = n->pk ? n->pk + (d * n->S + s) * n->slice_floats : NULL;
    st.rt = n->rt ? n->rt + (d * n->S + s) * n->slice_floats : NULL;
    st.hr = n->scratch + (int64_t)tid * B * G * n->chunk;
    bool sync = n->S > 1;
    phase_fn gru1 = PICK(gru_phase1), gru2 = PICK(gru_phase2);
    phase_fn lstm = PICK(lstm_phase);
    for (int64_t k = 0; k < n->T; k++) {
        st.t = is_backward(n, d) ? n->T - 1 - k : k;
        st.hp = n->hbuf[k & 1] + d * B * H;
        st.hn = n->hbuf[(k + 1) & 1] + d * B * H;
        if (n->lstm) {
            st.cp = n->cbuf[k & 1] + d * B * H;
            st.cn = n->cbuf[(k + 1) & 1] + d * B * H;
        }
        st.xw = n->xw + st.t * B * n->ldxw + d * G * H;
        if (!n->lstm && !n->reset_after) {
            /* z and r (blocks 0 and 1 in both layouts), then (r * h) Rn */
            if (hs > 0) {
                recurrent_product(n, &st, st.hp, 0, 2);
                phase(n, &st, gru1);
            }
            if (sync) {
                cpu_barrier(n->team);
            }
            if (hs > 0) {
                recurrent_product(n, &st, n->rh + d * B * H, 2, 1);
                phase(n, &st, gru2);
            }
        } else if (hs > 0) {
            recurrent_product(n, &st, st.hp, 0, (int)G);
            phase(n, &st, n->lstm ? lstm : gru1);
        }
        if (n->seq && hs > 0) {
            float *dst = n->seq + (st.t * n->D + d) * B * H;
            for (int64_t b = 0; b < B; b++) {
                memcpy(dst + b * H + j0, st.hn + b * H + j0,
                       (size_t)hs * sizeof(float));
            }
        }
        if (sync) {
            cpu_barrier(n->team);
        }
    }
}

/* Micro-kernel panels of `rows` rows of src (row stride ld, k columns):
 * panel q is [k][nr], dst[q][kk][j] = src[q * nr + j][kk], zero past the
 * rows. */
static void
pack_panels(const float *src, int64_t ld, int64_t rows, int64_t k,
            int64_t nr, float *dst)
{
    for (int64_t q0 = 0; q0 < rows; q0 += nr) {
        int64_t w = rows - q0 < nr ? rows - q0 : nr;
        const float *sp = src + q0 * ld;
        float *dp = dst + q0 * k;
        for (int64_t kk = 0; kk < k; kk++) {
            float *o = dp + kk * nr;
            for (int64_t j = 0; j < w; j++) {
                o[j] = sp[j * ld + kk];
            }
            for (int64_t j = w; j < nr; j++) {
                o[j] = 0.0f;
            }
        }
    }
}

/* Prepares R for slice s of direction d: micro-kernel panels by gate
 * (pk[g][q][k][NR] = R[d][g * H + j0 + q * NR + j][k]), or R^T
 * (rt[k][g * hs + j] = R[d][g * H + j0 + j][k], by blocks of 16 rows). */
static void
prepare_slice(const rnn *n, int64_t d, int64_t s)
{
    const int64_t H = n->H, G = n->G;
    int64_t j0 = s * n->chunk < H ? s * n->chunk : H;
    int64_t j1 = j0 + n->chunk < H ? j0 + n->chunk : H, hs = j1 - j0;
    float *dst = n->prep + (d * n->S + s) * n->slice_floats;
    for (int64_t g = 0; g < G; g++) {
        const float *src = n->R + (d * G * H + g * H + j0) * H;
        if (n->micro) {
            int64_t panels = (hs + n->nr - 1) / n->nr;
            pack_panels(src, H, hs, H, n->nr, dst + g * panels * H * n->nr);
            continue;
        }
        for (int64_t jb = 0; jb < hs; jb += 16) {
            int64_t je = jb + 16 < hs ? jb + 16 : hs;
            for (int64_t kk = 0; kk < H; kk++) {
                float *o = dst + kk * G * hs + g * hs;
                for (int64_t j = jb; j < je; j++) {
                    o[j] = src[j * H + kk];
                }
            }
        }
    }
}

/* The input projection on the micro-kernel: rows [r0, r1) of x W^T. */
static void
project_rows(const rnn *n, int64_t r0, int64_t r1)
{
    const int64_t ncol = n->D * n->G * n->H, I = n->I;
    for (int64_t c0 = 0; c0 < ncol; c0 += n->nr) {
        const float *p = n->wp + c0 * I;
        int64_t w = ncol - c0 < n->nr ? ncol - c0 : n->nr;
        for (int64_t r = r0; r < r1; r += n->mr) {
            int64_t m = r1 - r < n->mr ? r1 - r : n->mr;
            n->micro(n->x + r * I, I, m, I, p, n->xw + r * n->ldxw + c0,
                     n->ldxw, w, n->zero);
        }
    }
}

/* Thread tid of nth: prepares its share of R (and of W's panels), computes
 * its rows of the projection (micro-kernel case), then runs its slice. */
static void
worker(const rnn *n, int tid, int nth)
{
    if (n->prep) {
        for (int64_t i = tid; i < n->D * n->S; i += nth) {
            prepare_slice(n, i / n->S, i % n->S);
        }
    }
    if (n->wp) {
        const int64_t ncol = n->D * n->G * n->H, I = n->I;
        int64_t panels = (ncol + n->nr - 1) / n->nr;
        for (int64_t q = tid; q < panels; q += nth) {
            int64_t c0 = q * n->nr;
            pack_panels(n->W + c0 * I, I, ncol - c0 < n->nr ? ncol - c0 : n->nr,
                        I, n->nr, n->wp + c0 * I);
        }
        if (nth > 1) {
            cpu_barrier(nth);
        }
        int64_t blocks = (n->T * n->B + n->mr - 1) / n->mr;
        int64_t b0 = blocks * tid / nth, b1 = blocks * (tid + 1) / nth;
        int64_t r1 = b1 * n->mr < n->T * n->B ? b1 * n->mr : n->T * n->B;
        project_rows(n, b0 * n->mr, r1);
    }
    if (nth == 1) { /* S == 1: the directions one after the other */
        for (int64_t d = 0; d < n->D; d++) {
            run_slice(n, d, 0, 0, false);
        }
        return;
    }
    cpu_barrier(nth);
    if (tid < n->S * n->D) {
        run_slice(n, tid / n->S, tid % n->S, tid, false);
    } else if (n->S > 1) {
        run_slice(n, 0, 0, tid, true);
    }
}

/* How R is prepared and how many threads run (file comment). */
static void
plan(rnn *n)
{
    int pmax = cpu_num_threads();
    double macs = (double)n->B * n->G * n->H * n->H; /* per step, direction */
    double proj = (double)n->T * n->B * n->I * n->D * n->G * n->H;
    n->micro = n->T > 1 && n->B <= 64 ? micro_pick(&n->mr, &n->nr) : NULL;
    n->S = 1;
    n->team = 1;
    n->chunk = n->H;
    n->gate_threads = 1;
    if (pmax <= 1) {
        return;
    }
    if (!n->micro && 2.0 * macs >= 8e6) {
        /* the GEMM service threads such products itself (cpu/gemm.c) */
        if ((double)n->B * n->G * n->H >= CPU_PARALLEL_MIN && n->B > 1) {
            n->gate_threads = pmax < n->B ? pmax : (int)n->B;
        }
        return;
    }
    /* hidden units in slices when a step is worth splitting (a barrier
     * per step), else a thread per direction (no barriers) */
    bool split = macs >= (n->micro ? 1e6 : 2e5);
    if (split || (n->D > 1 && n->T * n->D * macs >= 1e5)) {
        int64_t align = n->micro ? n->nr : 16; /* slice widths */
        int64_t s = split ? pmax / n->D : 1;
        int64_t max_s = (n->H + align - 1) / align;
        s = s < 1 ? 1 : s > max_s ? max_s : s;
        n->S = (int)s;
        n->chunk = ((n->H + s - 1) / s + align - 1) / align * align;
        n->chunk = n->chunk > n->H ? n->H : n->chunk;
        n->team = (int)(s * n->D);
    }
    if (n->micro && proj >= 1e6) {
        n->team = pmax > n->team ? pmax : n->team; /* the projection */
    }
}

/* Floats per slice of prepared R (none for a single step without the
 * micro-kernel: products with R itself). */
static int64_t
slice_floats(const rnn *n)
{
    if (n->micro) {
        return n->G * ((n->chunk + n->nr - 1) / n->nr) * n->nr * n->H;
    }
    return n->T > 1 ? n->H * n->G * n->chunk : 0;
}

/* every thread of the team must reach the barriers: the team runs only if
 * the pool gave it all its threads */
static void
team_body(void *p, int tid, int nt)
{
    rnn *n = p;
    if (nt == n->team) {
        worker(n, tid, nt);
    }
}

static void
run(rnn *n)
{
    if (n->team > 1) {
        if (cpu_parallel(n->team, team_body, n) == n->team) {
            return;
        }
        /* a team smaller than asked for: one thread, one slice */
        n->S = 1;
        n->chunk = n->H;
        n->slice_floats = slice_floats(n);
        n->team = 1;
    }
    worker(n, 0, 1);
}

/* ---- operands ---------------------------------------------------------- */
typedef struct operands {
    float *owned[12];
    int n_owned;
} operands;

/* Input `slot` (node input index + 1; 0 = absent) as float32. */
static const float *
f32_in(const cpu_call *k, uint32_t slot, operands *ops, bool *oom)
{
    if (!slot) {
        return NULL;
    }
    uint32_t i = slot - 1;
    if (k->in_desc[i].dtype == WNN_FLOAT32) {
        return k->in[i];
    }
    float *f = cpu_to_f32(k->in[i], k->in_desc[i].dtype,
                          wnn_desc_elements(&k->in_desc[i]));
    if (!f) {
        *oom = true;
        return NULL;
    }
    ops->owned[ops->n_owned++] = f;
    return f;
}

static void
free_operands(operands *ops)
{
    for (int i = 0; i < ops->n_owned; i++) {
        free(ops->owned[i]);
    }
}

/* Everything a network needs; outputs: hidden state [D, B, H], cell state
 * (lstm), sequence [T, D, B, H] (or NULL). */
typedef struct net_args {
    const wnn_rnn_params *p; /* lowered (compiler/lower/recurrent.c) */
    bool lstm, reset_after;
    int64_t T, B, I, H, D;
    int direction;
    const float *x, *w, *r, *bias, *rbias, *peep, *h0, *c0;
    void *out_h, *out_c, *out_seq;
    wnn_dtype dtype;
} net_args;

/* 64-byte aligned float32 memory (NULL and *oom set on failure). */
static float *
alloc_floats(uint64_t n, bool *oom)
{
    float *p = NULL;
    if (n > (UINT64_MAX - 64) / sizeof(float) ||
        !(p = aligned_alloc(64, ((n ? n : 1) * sizeof(float) + 63) / 64 * 64))) {
        *oom = true;
    }
    return p;
}

static wnn_status
network(const cpu_call *k, wnn_error *err, const net_args *a)
{
    rnn n = { .lstm = a->lstm, .reset_after = a->reset_after, .T = a->T,
              .B = a->B, .H = a->H, .D = a->D, .G = a->lstm ? 4 : 3,
              .direction = a->direction, .R = a->r, .peep = a->peep,
              .x = a->x, .W = a->w, .I = a->I };
    const int64_t T = a->T, B = a->B, I = a->I, H = a->H, D = a->D, G = n.G;
    const int64_t GH = G * H;
    n.act_f = a->p->act_f;
    n.act_g = a->p->act_g;
    n.act_h = a->p->act_h;
    n.gi = a->p->gi, n.go = a->p->go, n.gf = a->p->gf, n.gg = a->p->gg;
    n.gz = a->p->gz, n.gr = a->p->gr;
    plan(&n);
    n.slice_floats = slice_floats(&n);
    /* scratch per thread; run()'s one-thread fallback uses it whole */
    uint64_t units = (uint64_t)n.team * n.chunk > (uint64_t)H
                         ? (uint64_t)n.team * n.chunk : (uint64_t)H;
    uint64_t zeros = (uint64_t)(H > I ? H : I);
    bool oom = false, f16 = a->dtype == WNN_FLOAT16;
    uint64_t state = (uint64_t)D * B * H;
    float *xw = alloc_floats((uint64_t)T * B * D * GH, &oom);
    float *bsum = alloc_floats((uint64_t)D * GH, &oom);
    float *rbn = alloc_floats((uint64_t)D * H, &oom);
    float *zero = alloc_floats(zeros, &oom);
    float *states = alloc_floats(state * (a->lstm ? 4 : 2), &oom);
    float *rh = alloc_floats(state, &oom);
    float *scratch = alloc_floats(units * B * G, &oom);
    float *prep = n.slice_floats
                      ? alloc_floats((uint64_t)D * n.S * n.slice_floats, &oom)
                      : NULL;
    float *wp = n.micro ? alloc_floats(((uint64_t)D * GH + n.nr) * I, &oom)
                        : NULL;
    float *seq = a->out_seq && f16 ? alloc_floats((uint64_t)T * state, &oom)
                                   : a->out_seq;
    if (oom) {
        goto done;
    }
    n.xw = xw;
    n.ldxw = D * GH;
    n.wp = wp;
    if (!wp) {
        /* x W for all steps and directions: [T * B, I] x [D * G * H, I]^T
         * (with the micro-kernel, the threads of run() compute it) */
        cpu_product(&(cpu_gemm_req){.tb = true, .m = T * B, .n = D * GH,
                                    .k = I, .a = a->x, .lda = I, .b = a->w,
                                    .ldb = I, .c = xw, .ldc = D * GH}, NULL);
    }
    /* the biases that are simply added to a gate, summed */
    for (int64_t i = 0; i < D * GH; i++) {
        bool n_after = !a->lstm && a->reset_after && (i % GH) / H == 2;
        bsum[i] = (a->bias ? a->bias[i] : 0.0f) +
                  (a->rbias && !n_after ? a->rbias[i] : 0.0f);
    }
    for (int64_t d = 0; d < D; d++) {
        for (int64_t j = 0; j < H; j++) {
            rbn[d * H + j] = a->rbias && !a->lstm && a->reset_after
                                 ? a->rbias[d * GH + 2 * H + j]
                                 : 0.0f;
        }
    }
    memset(zero, 0, (size_t)zeros * sizeof(float));
    n.bsum = bsum;
    n.rbn = rbn;
    n.zero = zero;
    n.prep = prep;
    if (prep) {
        *(n.micro ? &n.pk : &n.rt) = prep;
    }
    n.hbuf[0] = states;
    n.hbuf[1] = states + state;
    if (a->h0) {
        memcpy(n.hbuf[0], a->h0, state * sizeof(float));
    } else {
        memset(n.hbuf[0], 0, state * sizeof(float));
    }
    if (a->lstm) {
        n.cbuf[0] = states + 2 * state;
        n.cbuf[1] = states + 3 * state;
        if (a->c0) {
            memcpy(n.cbuf[0], a->c0, state * sizeof(float));
        } else {
            memset(n.cbuf[0], 0, state * sizeof(float));
        }
    }
    n.rh = rh;
    n.seq = seq;
    n.scratch = scratch;
    run(&n);
    cpu_from_f32(n.hbuf[T & 1], a->out_h, a->dtype, state);
    if (a->out_c) {
        cpu_from_f32(n.cbuf[T & 1], a->out_c, a->dtype, state);
    }
    if (a->out_seq && f16) {
        cpu_from_f32(seq, a->out_seq, a->dtype, (uint64_t)T * state);
    }
done:
    free(xw);
    free(bsum);
    free(rbn);
    free(zero);
    free(states);
    free(rh);
    free(scratch);
    free(prep);
    free(wp);
    if (seq != a->out_seq) {
        free(seq);
    }
    return oom ? cpu_fail(k, err, "out of memory") : WNN_OK;
}

/* ---- kernels ------------------------------------------------------------ */
/* gru, gruCell, lstm, lstmCell: one network, as lowered at compile
 * (compiler/lower/recurrent.c: sizes, directions, activations, gate
 * blocks, which inputs are the optional operands and which outputs the
 * cell state and the sequence).  Converts the operands, runs the network,
 * frees the conversions. */
static wnn_status
recurrent(const cpu_call *k, wnn_error *err)
{
    const wnn_rnn_params *p = &k->lowered->u.rnn;
    net_args a = { .p = p, .lstm = p->lstm != 0,
                   .reset_after = p->reset_after != 0, .T = p->T, .B = p->B,
                   .I = p->I, .H = p->H, .D = p->D,
                   .direction = p->direction, .dtype = k->in_desc[0].dtype,
                   .out_h = k->out[0],
                   .out_c = p->out_c ? k->out[p->out_c - 1] : NULL,
                   .out_seq = p->out_seq ? k->out[p->out_seq - 1] : NULL };
    operands ops = { .n_owned = 0 };
    bool oom = false;
    a.x = f32_in(k, 1, &ops, &oom);
    a.w = f32_in(k, 2, &ops, &oom);
    a.r = f32_in(k, 3, &ops, &oom);
    a.h0 = f32_in(k, p->h0, &ops, &oom);
    a.c0 = f32_in(k, p->c0, &ops, &oom);
    a.bias = f32_in(k, p->bias, &ops, &oom);
    a.rbias = f32_in(k, p->rbias, &ops, &oom);
    a.peep = f32_in(k, p->peep, &ops, &oom);
    wnn_status st = oom ? cpu_fail(k, err, "out of memory")
                        : network(k, err, &a);
    free_operands(&ops);
    return st;
}

/* gru -- #api-mlgraphbuilder-gru */
wnn_status
cpu_gru(const cpu_call *k, wnn_error *err)
{
    return recurrent(k, err);
}

/* lstm -- #api-mlgraphbuilder-lstm */
wnn_status
cpu_lstm(const cpu_call *k, wnn_error *err)
{
    return recurrent(k, err);
}

/* gruCell -- #api-mlgraphbuilder-grucell: one step of a forward network */
wnn_status
cpu_gru_cell(const cpu_call *k, wnn_error *err)
{
    return recurrent(k, err);
}

/* lstmCell -- #api-mlgraphbuilder-lstmcell: one step of a forward network */
wnn_status
cpu_lstm_cell(const cpu_call *k, wnn_error *err)
{
    return recurrent(k, err);
}
