/* conv.cu -- CUDA kernels of conv2d and convTranspose2d with the semantics
 * of cpu/kernels/conv/conv2d.c: float32 arithmetic (float16 operands widened, the
 * result rounded once), bias added last, every filter and input layout.
 * A direct kernel, one thread per output element: correctness first (no
 * TF32, no tensor cores); the sums run in another order than the CPU's, so
 * results agree to float32 rounding. */
#include "ck_common.cuh"

namespace {

/* conv2d filter layouts: 0 oihw, 1 hwio, 2 ohwi, 3 ihwo (ci within group) */
__device__ __forceinline__ int64_t
conv_fidx(const wnn_conv_params &p, int64_t o, int64_t ci, int64_t kh, int64_t kw)
{
    int64_t Cg = p.C / p.G;
    switch (p.filter_layout) {
    case 0: return ((o * Cg + ci) * p.KH + kh) * p.KW + kw;
    case 1: return ((kh * p.KW + kw) * Cg + ci) * p.O + o;
    case 2: return ((o * p.KH + kh) * p.KW + kw) * Cg + ci;
    default: return ((ci * p.KH + kh) * p.KW + kw) * p.O + o;
    }
}

/* convTranspose2d filter layouts: 0 iohw, 1 hwoi, 2 ohwi (oo within group,
 * ci the input channel) */
__device__ __forceinline__ int64_t
convt_fidx(const wnn_conv_params &p, int64_t oo, int64_t ci, int64_t kh, int64_t kw)
{
    int64_t Og = p.O / p.G;
    switch (p.filter_layout) {
    case 0: return ((ci * Og + oo) * p.KH + kh) * p.KW + kw;
    case 1: return ((kh * p.KW + kw) * Og + oo) * p.C + ci;
    default: return ((oo * p.KH + kh) * p.KW + kw) * p.C + ci;
    }
}

__device__ __forceinline__ int64_t
in_idx(const wnn_conv_params &p, int64_t n, int64_t c, int64_t h, int64_t w)
{
    return p.nhwc ? ((n * p.H + h) * p.W + w) * p.C + c
                  : ((n * p.C + c) * p.H + h) * p.W + w;
}

__global__ void
k_conv(int dt, int64_t n_out, wnn_conv_params p, const void *__restrict__ x,
       const void *__restrict__ f, const void *__restrict__ bias,
       void *__restrict__ y)
{
    const int64_t Cg = p.C / p.G, Og = p.O / p.G;
    CK_LOOP(i, n_out)
    {
        int64_t n, o, oh, ow, r = i;
        if (p.nhwc) {
            o = r % p.O; r /= p.O;
            ow = r % p.OW; r /= p.OW;
            oh = r % p.OH; n = r / p.OH;
        } else {
            ow = r % p.OW; r /= p.OW;
            oh = r % p.OH; r /= p.OH;
            o = r % p.O; n = r / p.O;
        }
        int64_t g = o / Og;
        float acc = 0.0f;
        if (!p.transpose) {
            for (int64_t kh = 0; kh < p.KH; kh++) {
                int64_t ih = oh * p.sh - p.pad[0] + kh * p.dh;
                if (ih < 0 || ih >= p.H) continue;
                for (int64_t kw = 0; kw < p.KW; kw++) {
                    int64_t iw = ow * p.sw - p.pad[2] + kw * p.dw;
                    if (iw < 0 || iw >= p.W) continue;
                    for (int64_t ci = 0; ci < Cg; ci++) {
                        float xv = ck_ldf(x, dt, in_idx(p, n, g * Cg + ci, ih, iw));
                        float fv = ck_ldf(f, dt, conv_fidx(p, o, ci, kh, kw));
                        acc = acc + xv * fv;
                    }
                }
            }
        } else {
            int64_t oo = o - g * Og;
            int64_t Cg_t = p.C / p.G;
            for (int64_t kh = 0; kh < p.KH; kh++) {
                int64_t th = oh + p.pad[0] - kh * p.dh;
                if (th < 0 || th % p.sh != 0 || th / p.sh >= p.H) continue;
                int64_t ih = th / p.sh;
                for (int64_t kw = 0; kw < p.KW; kw++) {
                    int64_t tw = ow + p.pad[2] - kw * p.dw;
                    if (tw < 0 || tw % p.sw != 0 || tw / p.sw >= p.W) continue;
                    int64_t iw = tw / p.sw;
                    for (int64_t c = 0; c < Cg_t; c++) {
                        int64_t ci = g * Cg_t + c;
                        float xv = ck_ldf(x, dt, in_idx(p, n, ci, ih, iw));
                        float fv = ck_ldf(f, dt, convt_fidx(p, oo, ci, kh, kw));
                        acc = acc + xv * fv;
                    }
                }
            }
        }
        if ((p.bias != 0)) {
            acc = acc + ck_ldf(bias, dt, o);
        }
        ck_stf(y, dt, i, acc);
    }
}

/* ---- resample2d (cpu/kernels/resample2d/resample2d.c) -------------------------------------------- */
__global__ void
k_resample(int dt, int64_t n_out, wnn_resample_params p,
           const void *__restrict__ x, void *__restrict__ y)
{
    CK_LOOP(i, n_out)
    {
        int64_t idx[4], r = i;
        for (int d = 3; d >= 0; d--) {
            idx[d] = r % p.out[d];
            r /= p.out[d];
        }
        int64_t y0, y1, x0, x1;
        double ty, tx;
        wnn_resample_src(p.in[p.ya], p.out[p.ya], idx[p.ya], p.linear, &y0, &y1, &ty);
        wnn_resample_src(p.in[p.xa], p.out[p.xa], idx[p.xa], p.linear, &x0, &x1, &tx);
        int64_t st[4], s = 1;
        for (int d = 3; d >= 0; d--) {
            st[d] = s;
            s *= p.in[d];
        }
        int64_t base = 0;
        for (int d = 0; d < 4; d++) {
            if (d != p.ya && d != p.xa) {
                base += idx[d] * st[d];
            }
        }
        int64_t a00 = base + y0 * st[p.ya] + x0 * st[p.xa];
        if (!p.linear) {
            switch (dt) {
            case WNN_KDT_F32: case WNN_KDT_I32: case WNN_KDT_U32:
                ((uint32_t *)y)[i] = ((const uint32_t *)x)[a00]; break;
            case WNN_KDT_F16: ((uint16_t *)y)[i] = ((const uint16_t *)x)[a00]; break;
            case WNN_KDT_I64: case WNN_KDT_U64:
                ((uint64_t *)y)[i] = ((const uint64_t *)x)[a00]; break;
            default: ((uint8_t *)y)[i] = ((const uint8_t *)x)[a00]; break;
            }
            continue;
        }
        int64_t a10 = base + y0 * st[p.ya] + x1 * st[p.xa];
        int64_t a01 = base + y1 * st[p.ya] + x0 * st[p.xa];
        int64_t a11 = base + y1 * st[p.ya] + x1 * st[p.xa];
        if (dt == WNN_KDT_F32 || dt == WNN_KDT_F16) {
            float wx = (float)tx, wy = (float)ty;
            float vy0 = ck_ldf(x, dt, a00) * (1.0f - wx) + ck_ldf(x, dt, a10) * wx;
            float vy1 = ck_ldf(x, dt, a01) * (1.0f - wx) + ck_ldf(x, dt, a11) * wx;
            ck_stf(y, dt, i, vy0 * (1.0f - wy) + vy1 * wy);
        } else {
            double vy0 = (double)ck_ldi(x, dt, a00) * (1.0 - tx) +
                         (double)ck_ldi(x, dt, a10) * tx;
            double vy1 = (double)ck_ldi(x, dt, a01) * (1.0 - tx) +
                         (double)ck_ldi(x, dt, a11) * tx;
            double v = vy0 * (1.0 - ty) + vy1 * ty;
            if (dt == WNN_KDT_I8) {
                ((int8_t *)y)[i] = (int8_t)wnn_round_clamp(v, -128.0, 127.0);
            } else {
                ((uint8_t *)y)[i] = (uint8_t)wnn_round_clamp(v, 0.0, 255.0);
            }
        }
    }
}

} // namespace

extern "C" cudaError_t
ck_conv2d(const wnn_kernel_args *k, const wnn_conv_params *p, const void *x,
          const void *f, const void *bias, void *y, cudaStream_t s)
{
    CK_LAUNCH(k_conv, ck_blocks(k->n), CK_THREADS, s, k->dt, k->n, *p, x, f,
              bias, y);
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_conv2d(const cu_launch_args *a)
{
    return ck_conv2d(a->k, &a->l->u.conv, a->in[0], a->in[1],
                     cu_opt_in(a, a->x->bias), a->out[0], a->s);
}

extern "C" cudaError_t
ck_resample2d(const wnn_kernel_args *k, const wnn_resample_params *p,
              const void *x, void *y, cudaStream_t s)
{
    CK_LAUNCH(k_resample, ck_blocks(k->n), CK_THREADS, s, k->dt, k->n, *p, x,
              y);
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_resample2d(const cu_launch_args *a)
{
    return ck_resample2d(a->k, &a->l->u.resample, a->in[0], a->out[0], a->s);
}
