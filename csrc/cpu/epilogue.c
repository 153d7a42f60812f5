/* epilogue.c -- the fused epilogues of the CPU backend (cpu.h, cpu_epi):
 * y = act(bn(y) + addend) on a producer's output, as compiler/fuse.c's
 * chains producer -> [batchNormalization] -> [add] -> [activation] say (the
 * normalization as its kernel computes it, in double per element).  The results equal the unfused
 * operators' exactly: the same float32 add, then the activation's own loop
 * (elementwise.c); float16 chains round after the add and after the
 * activation, as the separate operators do.
 *
 * An epilogue program (WNN_FUSE_EPI_PROG) instead of the activation runs
 * its nodes in pieces of PROG_PIECE values, each node's result in a buffer
 * of its own, with the loops an element-wise chain runs (chain.c:
 * cpu_unary_f32, cpu_binary_f32 and cpu_binary_scalar_f32), so it too
 * gives the unfused operators' values.
 *
 * A convolution or product kernel calls cpu_epi_tile on each block of its
 * output right after storing it (the block is still in the cache); where a
 * kernel does not, the backend calls cpu_epi_output after it, one pass over
 * the output instead of the add's and the activation's two. */
#include "cpu.h"
#include "kernels/elementwise/vloops.h"

#define PROG_PIECE 256

/* the program on x[0, m), m <= PROG_PIECE, its result in out[0, m) */
static void
prog_piece(const cpu_prog *pg, const float *x, size_t m, float *out)
{
    if (pg->kind == CPU_PROG_GELU_TANH &&
        vl_gelu_tanh(pg->k, pg->order, m, x, out)) {
        return;
    }
    float buf[WNN_EPI_PROG_MAX][PROG_PIECE], side[PROG_PIECE];
    for (uint32_t k = 0; k < pg->n; k++) {
        const cpu_prog_node *pn = &pg->nodes[k];
        const float *a = pn->src[0] > 0    ? buf[pn->src[0] - 1]
                         : pn->src[0] == 0 ? x
                                           : NULL;
        if (!pn->binary) {
            cpu_unary_f32(pn->op, &pn->pr, m, a, buf[k]);
            continue;
        }
        const float *b = pn->src[1] > 0    ? buf[pn->src[1] - 1]
                         : pn->src[1] == 0 ? x
                                           : NULL;
        if (a && b) {
            cpu_binary_f32(pn->op, m, a, b, buf[k]);
        } else if (!cpu_binary_scalar_f32(pn->op, m, a ? a : b, pn->s, !a,
                                          buf[k])) {
            for (size_t q = 0; q < m; q++) {
                side[q] = pn->s;
            }
            cpu_binary_f32(pn->op, m, a ? a : side, b ? b : side, buf[k]);
        }
    }
    memcpy(out, buf[pg->n - 1], m * sizeof(float));
}

/* the program on y[0, n) in place */
static void
run_prog(const cpu_prog *pg, float *y, int64_t n)
{
    if (pg->kind == CPU_PROG_GELU_TANH &&
        vl_gelu_tanh(pg->k, pg->order, (size_t)n, y, y)) {
        return;
    }
    for (int64_t i = 0; i < n; i += PROG_PIECE) {
        const size_t m = (size_t)(n - i < PROG_PIECE ? n - i : PROG_PIECE);
        prog_piece(pg, y + i, m, y + i);
    }
}

/* the program on rows r < rows of y (stride ys), n values each, in place:
 * rows shorter than a piece gathered into pieces of whole rows (a product
 * kernel's block is 64 columns wide: one piece of 4 rows runs each node's
 * loop once, not 4 times) */
static void
run_prog_rows(const cpu_prog *pg, float *y, int64_t ys, int64_t rows,
              int64_t n)
{
    if (n >= PROG_PIECE / 2 || rows == 1 || pg->kind == CPU_PROG_GELU_TANH) {
        for (int64_t r = 0; r < rows; r++) {
            run_prog(pg, y + r * ys, n);
        }
        return;
    }
    float in[PROG_PIECE];
    const int64_t per = PROG_PIECE / n; /* rows a piece */
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
        const int64_t nr = rows - r0 < per ? rows - r0 : per;
        for (int64_t r = 0; r < nr; r++) {
            memcpy(in + r * n, y + (r0 + r) * ys, (size_t)n * sizeof(float));
        }
        prog_piece(pg, in, (size_t)(nr * n), in);
        for (int64_t r = 0; r < nr; r++) {
            memcpy(y + (r0 + r) * ys, in + r * n, (size_t)n * sizeof(float));
        }
    }
}

/* float32: add (when `add`), then the activation (when `act`); compiled
 * for AVX-512, AVX2 and baseline (it runs on every block a kernel stores) */
CPU_HOT_VOID(static, , epi_f32,
             (const cpu_epi *e, float *y, int64_t off, int64_t n, int64_t ch,
              int chstep, bool add, bool act),
             (e, y, off, n, ch, chstep, add, act))
{
    if (add && e->bn) { /* cpu_batch_normalization's expression */
        const int64_t C = e->bn_c;
        const double *m = e->bn, *a = e->bn + C, *b = e->bn + 2 * C;
        if (chstep == 0) {
            const double mc = m[ch], ac = a[ch], bc = b[ch];
            for (int64_t i = 0; i < n; i++) {
                y[i] = (float)(((double)y[i] - mc) * ac + bc);
            }
        } else {
            m += ch, a += ch, b += ch;
            for (int64_t i = 0; i < n; i++) {
                y[i] = (float)(((double)y[i] - m[i]) * a[i] + b[i]);
            }
        }
    }
    if (add && e->add_kind == WNN_EPI_ADD_RESIDUAL) {
        const float *a = (const float *)e->addend + off;
        for (int64_t i = 0; i < n; i++) {
            y[i] = y[i] + a[i];
        }
    } else if (add && e->add_kind == WNN_EPI_ADD_CHANNEL && chstep == 0) {
        const float v = ((const float *)e->addend)[ch];
        for (int64_t i = 0; i < n; i++) {
            y[i] = y[i] + v;
        }
    } else if (add && e->add_kind == WNN_EPI_ADD_CHANNEL) {
        const float *a = (const float *)e->addend + ch;
        for (int64_t i = 0; i < n; i++) {
            y[i] = y[i] + a[i];
        }
    }
    if (!act) {
        return;
    }
    if (e->prog) {
        run_prog(e->prog, y, n);
        return;
    }
    if (e->gate) { /* y * act(y): the act's loop, then the mul, as unfused */
        if (cpu_gate_f32(e->act, (size_t)n, y)) {
            return;
        }
        float s[256];
        for (int64_t i = 0; i < n; i += 256) {
            int64_t m = n - i < 256 ? n - i : 256;
            cpu_unary_f32(e->act, &e->pr, (size_t)m, y + i, s);
            for (int64_t k = 0; k < m; k++) {
                y[i + k] = y[i + k] * s[k];
            }
        }
        return;
    }
    switch (e->act) {
    case WNN_OP_COUNT:
        break;
    case WNN_OP_CLAMP: { /* elementwise.c's clamp: NaN stays NaN */
        const float lo = e->pr.lo, hi = e->pr.hi;
        for (int64_t i = 0; i < n; i++) {
            float v = y[i] < lo ? lo : y[i];
            y[i] = v > hi ? hi : v;
        }
        break;
    }
    case WNN_OP_RELU: /* max(0, x), NaN propagating */
        for (int64_t i = 0; i < n; i++) {
            y[i] = (y[i] > 0 || y[i] != y[i]) ? y[i] : 0.0f;
        }
        break;
    default:
        cpu_unary_f32(e->act, &e->pr, (size_t)n, y, y);
        break;
    }
}

void
cpu_epi_tile(const cpu_epi *e, float *y, int64_t off, int64_t n, int64_t ch,
             int chstep)
{
    epi_f32(e, y, off, n, ch, chstep, true, true);
}

void
cpu_epi_rows(const cpu_epi *e, float *y, int64_t ys, int64_t rows,
             int64_t off, int64_t n, int64_t ch)
{
    /* a per-channel add (or none) and an activation with a vector loop: one
     * pass, the rows in one call (an nhwc pixel or a matmul row of a 64
     * channel block paid a call, a copy and the add's own pass each) */
    const bool plain = !e->bn && e->dtype == WNN_FLOAT32 &&
                       (e->add_kind == WNN_EPI_ADD_NONE ||
                        e->add_kind == WNN_EPI_ADD_CHANNEL);
    const float *b = e->add_kind == WNN_EPI_ADD_CHANNEL
                         ? (const float *)e->addend + ch : NULL;
    if (plain && e->act != WNN_OP_COUNT &&
        cpu_act_rows_f32(e->act, e->gate, (size_t)rows, (size_t)n, y,
                         (size_t)ys, b)) {
        return;
    }
    if (e->prog && e->dtype == WNN_FLOAT32) { /* the add row by row, then
                                               * the program on the rows */
        for (int64_t r = 0; r < rows; r++) {
            epi_f32(e, y + r * ys, off + r * ys, n, ch, 1, true, false);
        }
        run_prog_rows(e->prog, y, ys, rows, n);
        return;
    }
    for (int64_t r = 0; r < rows; r++) {
        epi_f32(e, y + r * ys, off + r * ys, n, ch, 1, true, true);
    }
}

/* ---- the whole output ---------------------------------------------------- */
#define EPI_CHUNK 4096

typedef struct epi_job {
    const cpu_epi *e;
    void *y;
    int64_t total, inner, C; /* inner: elements per step of the channel */
} epi_job;

/* the runs of [b, end) that stay in one channel (inner > 1) or step
 * through consecutive channels (inner == 1): fn(off, len, ch, chstep) */
#define FOR_RUNS(j, b, end, BODY)                                              \
    for (int64_t off = (b); off < (end);) {                                    \
        int64_t len = (end) - off, ch = 0;                                     \
        int chstep = 0;                                                        \
        if (cpu_epi_per_channel((j)->e)) {                                     \
            if ((j)->inner == 1) {                                             \
                ch = off % (j)->C;                                             \
                chstep = 1;                                                    \
                len = len < (j)->C - ch ? len : (j)->C - ch;                   \
            } else {                                                           \
                ch = off / (j)->inner % (j)->C;                                \
                int64_t r = (j)->inner - off % (j)->inner;                     \
                len = len < r ? len : r;                                       \
            }                                                                  \
        }                                                                      \
        BODY;                                                                  \
        off += len;                                                            \
    }

static void
epi_f32_body(void *p, int64_t b_, int64_t e_, int tid)
{
    (void)tid;
    const epi_job *j = p;
    float *y = j->y;
    int64_t b = b_ * EPI_CHUNK;
    int64_t end = e_ * EPI_CHUNK < j->total ? e_ * EPI_CHUNK : j->total;
    FOR_RUNS(j, b, end, epi_f32(j->e, y + off, off, len, ch, chstep, true, true));
}

/* float16: widen, add, round; widen, activate, round (as the separate add
 * and activation compute in float32 and store float16) */
static void
epi_f16_body(void *p, int64_t b_, int64_t e_, int tid)
{
    (void)tid;
    const epi_job *j = p;
    uint16_t *y = j->y;
    const uint16_t *a = j->e->addend;
    float t[EPI_CHUNK];
    for (int64_t c = b_; c < e_; c++) {
        int64_t b = c * EPI_CHUNK;
        int64_t end = b + EPI_CHUNK < j->total ? b + EPI_CHUNK : j->total;
        for (int64_t i = b; i < end; i++) {
            t[i - b] = wnn_f16_to_f32(y[i]);
        }
        if (j->e->add_kind != WNN_EPI_ADD_NONE) {
            FOR_RUNS(j, b, end, {
                for (int64_t i = 0; i < len; i++) {
                    int64_t ai = j->e->add_kind == WNN_EPI_ADD_RESIDUAL
                                     ? off + i
                                     : ch + (chstep ? i : 0);
                    t[off - b + i] = wnn_f16_to_f32(wnn_f32_to_f16(
                        t[off - b + i] + wnn_f16_to_f32(a[ai])));
                }
            });
        }
        epi_f32(j->e, t, 0, end - b, 0, 0, false, true);
        for (int64_t i = b; i < end; i++) {
            y[i] = wnn_f32_to_f16(t[i - b]);
        }
    }
}

void
cpu_epi_output(const cpu_epi *e, void *y)
{
    /* the extents: the schedule's (compiler/schedule.c epi_extents) */
    epi_job j = { .e = e, .y = y, .total = e->n, .inner = 1, .C = 1 };
    if (cpu_epi_per_channel(e)) {
        j.C = e->C;
        j.inner = e->inner;
    }
    int64_t chunks = (j.total + EPI_CHUNK - 1) / EPI_CHUNK;
    int nt = j.total >= CPU_PARALLEL_MIN ? cpu_num_threads() : 1;
    cpu_parallel_stream(chunks, (uint64_t)EPI_CHUNK * 8, nt,
                        e->dtype == WNN_FLOAT16 ? epi_f16_body : epi_f32_body,
                        &j);
}
