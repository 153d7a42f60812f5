/* qdq.c -- the CPU's integer step of a quantized region (a WNN_FUSE_QDQ
 * chain, compiler/fuse_qdq.c):
 *
 *   y = quantizeLinear(act(dequantizeLinear(x) (*) dequantizeLinear(w)
 *                          + bias))
 *
 * with x uint8 / int8 (int8 shifted to uint8 by adding 128, and its zero
 * point with it), w int8 / uint8 (uint8 shifted to int8), packed once at
 * compile for kernels/qgemm/.  The product of the quantized values is exact
 * in int32:
 *
 *   acc[m][n] = sum_k (x[m][k] - zx) * (w[k][n] - zw[n])
 *             = sum_k x w - zx colsum[n] - zw[n] rowsum[m] + K zx zw[n]
 *
 * (zw[n] rowsum[m] only where a weight zero point is not 0).  The epilogue
 * then follows the unfused graph's float32 arithmetic:
 *   v = (float)(acc * (sx * sw[n]))     the float32 product's value
 *   v = v + bias[n]                      float32, as the unfused add
 *   v = relu(v) / clamp(v, lo, hi)
 *   y = saturate(rint((double)v / sy) + zy)   quantizeLinear's formula
 *   [y = (float)((y - zd) * sd)]           a dequantizeLinear of it
 * so it equals the unfused evaluation wherever the float32 convolution or
 * matmul is exact (every partial sum representable, e.g. power-of-two
 * scales), and otherwise differs from it only by the float32 rounding of
 * the unfused sum (the integer result is the exact one).
 *
 * conv2d (nhwc, groups 1): A is im2col of x, rows (batch, oh, ow), columns
 * (kh, kw, c), the padding filled with the zero point; matmul: A is x as
 * [rows, K] (gemm: x [M, K]; its weights [K, N] or, transposed, [N, K]).
 * Where x is A as it is (direct_a) the threads take tiles of C; otherwise
 * blocks of rows, each packed into the thread's buffer while it stays in
 * cache, then every column tile of them.  Each tile is requantized as soon
 * as it is computed.
 *
 * A matmul of two activations (attention's q k^T and p v: w is not a
 * constant, or is one of a batch of matrices) packs w per dispatch (dyn):
 * one B per matrix of w's batch, filled before the rows run (uint8 w
 * flipped to int8 as it is packed, its zero point shifted with it), and the
 * corrections per matrix from its colsum; w's scale and zero point are per
 * tensor.  A's rows of matrix i use B i. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops_internal.h"
#include "cpu.h"
#include "kernels/qgemm/qgemm.h"

#define MB 96   /* rows per tile: a multiple of both kernels' 6 and 4 */
#define NB 256  /* columns per tile: a multiple of 64                 */

struct cpu_qdq {
    bool conv, x_signed, y_signed, any_zw;
    bool b_t;                     /* gemm's bTranspose: weights [N][K]    */
    bool dyn;                     /* w packed per dispatch (see above)    */
    bool out_f32;                 /* the result dequantized: (q - zd) sd  */
    double sd, zd;
    wnn_conv_params cp;
    int64_t M, K, N, Kp;
    int32_t zx, zy;               /* zx in the uint8 domain              */
    double sy;
    cpu_qgemm_b b;
    double *zw;                   /* [N], in the int8 domain             */
    double *corr;                 /* [N]: K zx zw[n] - zx colsum[n]      */
    double *mult;                 /* [N]: sx * sw[n]                     */
    float *bias;                  /* [N] (zeros without a bias)          */
    float lo, hi;                 /* relu / clamp bounds (+-inf: none)   */
    uint32_t x_operand;
    /* dyn: w's operand, its matrices, rows of A per matrix (M / batch),
     * one packed B per matrix and their corrections [batch][N] */
    uint32_t w_operand;
    uint8_t w_flip;
    int64_t batch, Mb;
    cpu_qgemm_b *bb;
    double *corrb;
    /* per dispatch */
    /* x is A as it is (uint8, rows of K = Kp bytes, no im2col, no row
     * sums needed): a matmul or a 1x1 conv of stride 1 without padding */
    bool direct_a;
    uint8_t *a;                   /* per thread [MB][Kp]                 */
    int64_t mb;                   /* rows per task (run_rows)            */
    int32_t *rowsum;              /* [M]                                 */
    int32_t *tiles;               /* per thread [MB + 1][NB + 32]        */
    int nt;
    const void *x, *w;
    void *y;
};

/* element n of a per-tensor (1 element) or per-channel constant */
static double
chan(void *const *constants, const wnn_ir *ir, uint32_t id, int64_t n)
{
    const wnn_desc *d = &ir->operands[id].desc;
    return wnn_load_num(constants[id], d->dtype,
                  wnn_desc_elements(d) == 1 ? 0 : (uint64_t)n);
}

void
cpu_qdq_free(cpu_qdq *q)
{
    if (!q) {
        return;
    }
    cpu_qgemm_free(&q->b);
    for (int64_t i = 0; q->bb && i < q->batch; i++) {
        cpu_qgemm_free(&q->bb[i]);
    }
    free(q->bb);
    free(q->corrb);
    free(q->zw);
    free(q->corr);
    free(q->mult);
    free(q->bias);
    free(q->a);
    free(q->rowsum);
    free(q->tiles);
    free(q);
}

/* the weights as int8 [K][N] (K in the order (kh, kw, c) for a conv) */
static int8_t *
weights_kn(const cpu_qdq *q, const void *w, bool u8, int layout)
{
    int8_t *t = malloc((size_t)(q->K * q->N) + 1);
    if (!t) {
        return NULL;
    }
    const int64_t N = q->N, C = q->cp.C, KH = q->cp.KH, KW = q->cp.KW;
    for (int64_t k = 0; k < q->K; k++) {
        /* a conv's k: (kh, kw, c) */
        int64_t c = q->conv ? k % C : 0, kw = q->conv ? (k / C) % KW : 0;
        int64_t kh = q->conv ? k / (C * KW) : 0;
        for (int64_t n = 0; n < N; n++) {
            int64_t i = q->b_t ? n * q->K + k : k * N + n;
            if (q->conv) {
                switch (layout) {
                case WNN_CONV_OIHW: i = ((n * C + c) * KH + kh) * KW + kw; break;
                case WNN_CONV_HWIO: i = ((kh * KW + kw) * C + c) * N + n; break;
                case WNN_CONV_OHWI: i = ((n * KH + kh) * KW + kw) * C + c; break;
                default: i = ((c * KH + kh) * KW + kw) * N + n; break;
                }
            }
            t[k * N + n] = u8 ? (int8_t)(((const uint8_t *)w)[i] - 128)
                              : ((const int8_t *)w)[i];
        }
    }
    return t;
}

/* the epilogue's activation bounds (+-inf: none) */
static void
act_bounds(cpu_qdq *q, const wnn_ir *ir, const wnn_epilogue *e)
{
    q->lo = -INFINITY;
    q->hi = INFINITY;
    if (e->act != WNN_NO_NODE) {
        const wnn_node *a = &ir->nodes[e->act];
        wnn_scalar_params pr;
        wnn_scalar_params_of(a->op, a->options, WNN_FLOAT32, &pr);
        q->lo = a->op == WNN_OP_RELU ? 0.0f : pr.lo;
        q->hi = a->op == WNN_OP_RELU ? INFINITY : pr.hi;
    }
}

/* constant weights, packed once, and their corrections */
static bool
pack_weights(cpu_qdq *q, const wnn_ir *ir, const wnn_node *dw,
             void *const *constants, int layout, double sx, bool wu8)
{
    int8_t *kn = weights_kn(q, constants[dw->in[0]], wu8, layout);
    if (!kn || cpu_qgemm_pack(&q->b, kn, q->K, q->N, q->N, 1) < 0) {
        free(kn);
        return false;
    }
    free(kn);
    for (int64_t n = 0; n < q->N; n++) {
        int64_t zw = (int64_t)chan(constants, ir, dw->in[2], n) - (wu8 ? 128 : 0);
        q->zw[n] = (double)zw;
        q->any_zw |= zw != 0;
        q->corr[n] = (double)(q->K * (int64_t)q->zx * zw -
                              (int64_t)q->zx * q->b.colsum[n]);
        q->mult[n] = sx * chan(constants, ir, dw->in[1], n);
    }
    return true;
}

/* a product of two activations (dyn): w's matrices, packed per dispatch;
 * its scale and zero point per tensor (fuse_qdq.c) */
static bool
make_dyn(cpu_qdq *q, const wnn_ir *ir, const wnn_node *dx,
         const wnn_node *dw, const wnn_desc *wd, void *const *constants)
{
    const bool wu8 = wd->dtype == WNN_UINT8;
    q->w_operand = dw->in[0];
    q->w_flip = wu8 ? 0x80 : 0;
    q->batch = (int64_t)(wnn_desc_elements(wd) / (uint64_t)(q->K * q->N));
    q->Mb = q->M / q->batch;
    const int64_t zw = (int64_t)chan(constants, ir, dw->in[2], 0) - (wu8 ? 128 : 0);
    const double m = chan(constants, ir, dx->in[1], 0) *
                     chan(constants, ir, dw->in[1], 0);
    q->any_zw = zw != 0;
    q->bb = calloc((size_t)q->batch, sizeof(cpu_qgemm_b));
    q->corrb = malloc(sizeof(double) * (size_t)(q->batch * q->N + 1));
    if (!q->bb || !q->corrb) {
        return false;
    }
    for (int64_t i = 0; i < q->batch; i++) {
        if (cpu_qgemm_alloc(&q->bb[i], q->K, q->N) < 0) {
            return false;
        }
    }
    for (int64_t n = 0; n < q->N; n++) {
        q->zw[n] = (double)zw;
        q->mult[n] = m;
    }
    return true;
}

cpu_qdq *
cpu_qdq_make(const wnn_graph *g, const wnn_epilogue *e, void *const *constants)
{
    const wnn_ir *ir = g->ir;
    const wnn_node *p = &ir->nodes[e->producer];
    const wnn_node *dx = &ir->nodes[e->dq_x - 1], *dw = &ir->nodes[e->dq_w - 1];
    const wnn_node *qn = &ir->nodes[e->last], *dn = NULL;
    if (qn->op == WNN_OP_DEQUANTIZE_LINEAR) { /* the chain ends in a float32 */
        dn = qn;
        qn = &ir->nodes[ir->operands[dn->in[0]].node];
    }
    const wnn_desc *xd = &ir->operands[dx->in[0]].desc;
    const wnn_desc *wd = &ir->operands[dw->in[0]].desc;
    const wnn_desc *yd = &ir->operands[qn->out[0]].desc;
    cpu_qdq *q = calloc(1, sizeof(*q));
    if (!q) {
        return NULL;
    }
    q->conv = p->op == WNN_OP_CONV2D;
    q->x_operand = dx->in[0];
    q->x_signed = xd->dtype == WNN_INT8;
    q->y_signed = yd->dtype == WNN_INT8;
    int layout = 0;
    if (q->conv) {
        q->cp = g->lowered[e->producer].u.conv;
        layout = ((const wnn_conv2d_options *)p->options)->filter_layout;
        q->M = q->cp.N * q->cp.OH * q->cp.OW;
        q->K = q->cp.KH * q->cp.KW * q->cp.C;
        q->N = q->cp.O;
    } else {
        q->b_t = p->op == WNN_OP_GEMM &&
                 ((const wnn_gemm_options *)p->options)->b_transpose;
        q->K = wd->shape[wd->rank - (q->b_t ? 1 : 2)];
        q->N = wd->shape[wd->rank - (q->b_t ? 2 : 1)];
        q->M = (int64_t)(wnn_desc_elements(xd) / (uint64_t)q->K);
        q->dyn = ir->operands[dw->in[0]].kind != WNN_OPERAND_CONSTANT ||
                 wd->rank > 2;
    }
    q->Kp = (q->K + 3) / 4 * 4;
    q->batch = 1;
    q->Mb = q->M;
    const int64_t N = q->N;
    q->zx = (int32_t)chan(constants, ir, dx->in[2], 0) + (q->x_signed ? 128 : 0);
    const double sx = chan(constants, ir, dx->in[1], 0);
    q->sy = chan(constants, ir, qn->in[1], 0);
    q->zy = (int32_t)chan(constants, ir, qn->in[2], 0);
    if (dn) {
        q->out_f32 = true;
        q->sd = chan(constants, ir, dn->in[1], 0);
        q->zd = chan(constants, ir, dn->in[2], 0);
    }
    q->zw = malloc(sizeof(double) * (size_t)(N + 1));
    q->corr = malloc(sizeof(double) * (size_t)(N + 1));
    q->mult = malloc(sizeof(double) * (size_t)(N + 1));
    q->bias = calloc((size_t)N + 1, sizeof(float));
    const bool wu8 = wd->dtype == WNN_UINT8;
    if (!q->zw || !q->corr || !q->mult || !q->bias ||
        (q->dyn ? !make_dyn(q, ir, dx, dw, wd, constants)
                : !pack_weights(q, ir, dw, constants, layout, sx, wu8))) {
        cpu_qdq_free(q);
        return NULL;
    }
    if (e->bias != WNN_NO_NODE) {
        const wnn_node *db = e->dq_b ? &ir->nodes[e->dq_b - 1] : NULL;
        for (int64_t n = 0; n < N; n++) {
            /* dequantizeLinear's formula, rounded once to float32 */
            q->bias[n] = db ? (float)((chan(constants, ir, db->in[0], n) -
                                       chan(constants, ir, db->in[2], n)) *
                                      chan(constants, ir, db->in[1], n))
                            : (float)chan(constants, ir, e->bias, n);
        }
    }
    const wnn_conv_params *cp = &q->cp;
    q->direct_a = !q->dyn && !q->x_signed && !q->any_zw && q->K == q->Kp &&
                  (!q->conv || (cp->KH == 1 && cp->KW == 1 && cp->sh == 1 &&
                                cp->sw == 1 && !cp->pad[0] && !cp->pad[1] &&
                                !cp->pad[2] && !cp->pad[3]));
    act_bounds(q, ir, e);
    return q;
}

uint32_t
cpu_qdq_input(const cpu_qdq *q)
{
    return q->x_operand;
}

uint32_t
cpu_qdq_weights(const cpu_qdq *q)
{
    return q->dyn ? q->w_operand : UINT32_MAX;
}

/* ---- per dispatch ------------------------------------------------------ */

/* A's rows [r0, r1) (uint8, zero past K) into dst (row r0 first), their
 * sums into rowsum */
CPU_HOT_VOID(static, , pack_rows,
             (cpu_qdq *q, int64_t r0, int64_t r1, uint8_t *dst0),
             (q, r0, r1, dst0))
{
    const uint8_t flip = q->x_signed ? 0x80 : 0;
    const uint8_t *x = q->x;
    const wnn_conv_params *c = &q->cp;
    for (int64_t m = r0; m < r1; m++) {
        uint8_t *row = dst0 + (m - r0) * q->Kp;
        if (!q->conv) {
            const uint8_t *xr = x + m * q->K;
            for (int64_t k = 0; k < q->K; k++) {
                row[k] = xr[k] ^ flip;
            }
        } else {
            int64_t ow = m % c->OW, oh = (m / c->OW) % c->OH;
            int64_t b = m / (c->OW * c->OH);
            uint8_t *dst = row;
            for (int64_t kh = 0; kh < c->KH; kh++) {
                int64_t ih = oh * c->sh - c->pad[0] + kh * c->dh;
                for (int64_t kw = 0; kw < c->KW; kw++, dst += c->C) {
                    int64_t iw = ow * c->sw - c->pad[2] + kw * c->dw;
                    if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) {
                        memset(dst, q->zx, (size_t)c->C);
                        continue;
                    }
                    const uint8_t *src = x + ((b * c->H + ih) * c->W + iw) * c->C;
                    if (!flip) {
                        memcpy(dst, src, (size_t)c->C);
                        continue;
                    }
                    for (int64_t ch = 0; ch < c->C; ch++) {
                        dst[ch] = src[ch] ^ 0x80;
                    }
                }
            }
        }
        memset(row + q->K, 0, (size_t)(q->Kp - q->K));
        if (q->any_zw) {
            int32_t s = 0;
            for (int64_t k = 0; k < q->K; k++) {
                s += row[k];
            }
            q->rowsum[m] = s;
        }
    }
}

/* one row of a tile's epilogue, in vectors: acc = c + corr - zw rowsum
 * exactly in double (|values| < 2^53), then the float32 steps into v; then
 * quantizeLinear's rint(v / sy) + zy saturated (NaN -> 0) by the
 * standalone kernel's loop (cpu_quantize_f32_8: kernels/quantize/) */
CPU_HOT_VOID(static, , requant_row,
             (const int32_t *restrict c, int64_t nn,
              const double *restrict corr, const double *restrict zw,
              double rs, const double *restrict mult,
              const float *restrict bias, float lo, float hi,
              float *restrict v),
             (c, nn, corr, zw, rs, mult, bias, lo, hi, v))
{
    for (int64_t j = 0; j < nn; j++) {
        double acc = (double)c[j] + corr[j] - zw[j] * rs;
        float t = (float)(acc * mult[j]) + bias[j];
        t = t < lo ? lo : t;
        v[j] = t > hi ? hi : t;
    }
}

/* dequantizeLinear's (x - z) s in double, rounded once to float32, of nn
 * uint8 / int8 values */
CPU_HOT_VOID(static, , dequant_row,
             (const uint8_t *restrict b, int64_t nn, bool sgn, double s,
              double z, float *restrict y),
             (b, nn, sgn, s, z, y))
{
    if (sgn) {
        for (int64_t j = 0; j < nn; j++) {
            y[j] = (float)(((double)(int8_t)b[j] - z) * s);
        }
    } else {
        for (int64_t j = 0; j < nn; j++) {
            y[j] = (float)(((double)b[j] - z) * s);
        }
    }
}

/* the epilogue of a tile: rows [m0, m0 + mm), columns [n0, n0 + nn); v:
 * nn floats of scratch */
static void
requant(const cpu_qdq *q, const double *corr, const int32_t *c, int64_t ldc,
        int64_t m0, int64_t mm, int64_t n0, int64_t nn, float *v)
{
    for (int64_t i = 0; i < mm; i++) {
        const int64_t m = m0 + i;
        const double rs = q->any_zw ? q->rowsum[m] : 0;
        requant_row(c + i * ldc, nn, corr + n0, q->zw + n0, rs, q->mult + n0,
                    q->bias + n0, q->lo, q->hi, v);
        if (!q->out_f32) {
            cpu_quantize_f32_8(v, (char *)q->y + m * q->N + n0, (size_t)nn,
                               q->sy, q->zy, q->y_signed);
            continue;
        }
        uint8_t b[NB];
        cpu_quantize_f32_8(v, b, (size_t)nn, q->sy, q->zy, q->y_signed);
        dequant_row(b, nn, q->y_signed, q->sd, q->zd,
                    (float *)q->y + m * q->N + n0);
    }
}

/* tasks of (rows, columns) tiles of C where x is A */
static void
run_tiles(void *arg, int64_t t0, int64_t t1, int tid)
{
    cpu_qdq *q = arg;
    const int64_t nbn = (q->N + NB - 1) / NB, ldc = NB + 32;
    int32_t *c = q->tiles + (size_t)tid * (MB + 1) * ldc;
    float *r = (float *)(c + MB * ldc);
    const uint8_t *a = q->x;
    for (int64_t t = t0; t < t1; t++) {
        int64_t m0 = (t / nbn) * MB, n0 = (t % nbn) * NB;
        int64_t mm = q->M - m0 < MB ? q->M - m0 : MB;
        int64_t nn = q->N - n0 < NB ? q->N - n0 : NB;
        cpu_qgemm_run(&q->b, a + m0 * q->Kp, q->Kp, mm, n0, nn, c, ldc);
        requant(q, q->corr, c, ldc, m0, mm, n0, nn, r);
    }
}

/* tasks of q->mb rows of one matrix (q->Mb rows each; dyn: each with its
 * B), packed into the thread's A block (im2col, int8 shifted) while it
 * stays in cache, then every column tile of them */
static void
run_rows(void *arg, int64_t t0, int64_t t1, int tid)
{
    cpu_qdq *q = arg;
    const int64_t ldc = NB + 32, per = (q->Mb + q->mb - 1) / q->mb;
    int32_t *c = q->tiles + (size_t)tid * (MB + 1) * ldc;
    float *r = (float *)(c + MB * ldc);
    uint8_t *a = q->a + (size_t)tid * MB * q->Kp;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t i = t / per, end = (i + 1) * q->Mb;
        const int64_t m0 = i * q->Mb + (t % per) * q->mb;
        const int64_t mm = end - m0 < q->mb ? end - m0 : q->mb;
        const cpu_qgemm_b *b = q->dyn ? &q->bb[i] : &q->b;
        const double *corr = q->dyn ? q->corrb + i * q->N : q->corr;
        pack_rows(q, m0, m0 + mm, a);
        for (int64_t n0 = 0; n0 < q->N; n0 += NB) {
            int64_t nn = q->N - n0 < NB ? q->N - n0 : NB;
            cpu_qgemm_run(b, a, q->Kp, mm, n0, nn, c, ldc);
            requant(q, corr, c, ldc, m0, mm, n0, nn, r);
        }
    }
}

/* dyn: tasks of w's matrices, packed (uint8 flipped to int8) with their
 * corrections K zx zw - zx colsum[n] */
static void
fill_b(void *arg, int64_t t0, int64_t t1, int tid)
{
    (void)tid;
    cpu_qdq *q = arg;
    const double kzz = (double)q->K * q->zx * q->zw[0];
    for (int64_t i = t0; i < t1; i++) {
        cpu_qgemm_b *b = &q->bb[i];
        cpu_qgemm_fill(b, (const int8_t *)q->w + i * q->K * q->N, q->N, 1,
                       q->w_flip);
        double *corr = q->corrb + i * q->N;
        for (int64_t n = 0; n < q->N; n++) {
            corr[n] = kzz - (double)q->zx * b->colsum[n];
        }
    }
}

wnn_status
cpu_qdq_run(cpu_qdq *q, const void *x, const void *w, void *y,
            wnn_error *err)
{
    int nt = cpu_num_threads();
    if (!q->tiles) {
        q->nt = nt;
        q->a = q->direct_a ? NULL : malloc((size_t)nt * MB * q->Kp + 64);
        q->rowsum = malloc(sizeof(int32_t) * (size_t)(q->M + 1));
        q->tiles = malloc(sizeof(int32_t) * (size_t)nt * (MB + 1) * (NB + 32));
        if ((!q->a && !q->direct_a) || !q->rowsum || !q->tiles) {
            return wnn_failk(err, WNN_OUT_OF_MEMORY, "dispatch", NULL, NULL,
                             "out of memory for a quantized step");
        }
    }
    nt = nt < q->nt ? nt : q->nt;
    q->x = x;
    q->w = w;
    q->y = y;
    const bool big = q->M * q->K * q->N >= CPU_PARALLEL_MIN * 16;
    if (!big) {
        nt = 1;
    }
    if (q->dyn) {
        cpu_parallel_for_dynamic(q->batch, 1, q->batch > 1 ? nt : 1, fill_b, q);
    }
    if (q->direct_a) {
        const int64_t tasks = ((q->M + MB - 1) / MB) * ((q->N + NB - 1) / NB);
        cpu_parallel_for_dynamic(tasks, 1, nt, run_tiles, q);
        return WNN_OK;
    }
    /* blocks of rows: a multiple of 12 (both kernels' tiles), at most MB,
     * about four per thread at least */
    int64_t mb = (q->M + 4 * nt - 1) / (4 * nt);
    mb = (mb + 11) / 12 * 12;
    q->mb = mb > MB ? MB : mb;
    cpu_parallel_for_dynamic(q->batch * ((q->Mb + q->mb - 1) / q->mb), 1, nt,
                             run_rows, q);
    return WNN_OK;
}
