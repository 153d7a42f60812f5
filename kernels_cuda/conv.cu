/* conv.cu -- CUDA kernels of conv2d and convTranspose2d with the semantics
 * of cpu/ref/conv2d.c: float32 arithmetic (float16 operands widened, the
 * result rounded once), bias added last, every filter and input layout.
 * A direct kernel, one thread per output element: correctness first (no
 * TF32, no tensor cores); the sums run in another order than the CPU's, so
 * results agree to float32 rounding. */
#include "ck_common.cuh"

namespace {

/* conv2d filter layouts: 0 oihw, 1 hwio, 2 ohwi, 3 ihwo (ci within group) */
__device__ __forceinline__ int64_t
conv_fidx(const ck_conv_p &p, int64_t o, int64_t ci, int64_t kh, int64_t kw)
{
    int64_t Cg = p.C / p.groups;
    switch (p.flayout) {
    case 0: return ((o * Cg + ci) * p.KH + kh) * p.KW + kw;
    case 1: return ((kh * p.KW + kw) * Cg + ci) * p.O + o;
    case 2: return ((o * p.KH + kh) * p.KW + kw) * Cg + ci;
    default: return ((ci * p.KH + kh) * p.KW + kw) * p.O + o;
    }
}

/* convTranspose2d filter layouts: 0 iohw, 1 hwoi, 2 ohwi (oo within group,
 * ci the input channel) */
__device__ __forceinline__ int64_t
convt_fidx(const ck_conv_p &p, int64_t oo, int64_t ci, int64_t kh, int64_t kw)
{
    int64_t Og = p.O / p.groups;
    switch (p.flayout) {
    case 0: return ((ci * Og + oo) * p.KH + kh) * p.KW + kw;
    case 1: return ((kh * p.KW + kw) * Og + oo) * p.C + ci;
    default: return ((oo * p.KH + kh) * p.KW + kw) * p.C + ci;
    }
}

__device__ __forceinline__ int64_t
in_idx(const ck_conv_p &p, int64_t n, int64_t c, int64_t h, int64_t w)
{
    return p.nhwc ? ((n * p.H + h) * p.W + w) * p.C + c
                  : ((n * p.C + c) * p.H + h) * p.W + w;
}

__global__ void
k_conv(ck_conv_p p, const void *__restrict__ x, const void *__restrict__ f,
       const void *__restrict__ bias, void *__restrict__ y)
{
    const int64_t Cg = p.C / p.groups, Og = p.O / p.groups;
    CK_LOOP(i, p.n)
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
                int64_t ih = oh * p.sh - p.pt + kh * p.dh;
                if (ih < 0 || ih >= p.H) continue;
                for (int64_t kw = 0; kw < p.KW; kw++) {
                    int64_t iw = ow * p.sw - p.pl + kw * p.dw;
                    if (iw < 0 || iw >= p.W) continue;
                    for (int64_t ci = 0; ci < Cg; ci++) {
                        float xv = ck_ldf(x, p.dt, in_idx(p, n, g * Cg + ci, ih, iw));
                        float fv = ck_ldf(f, p.dt, conv_fidx(p, o, ci, kh, kw));
                        acc = acc + xv * fv;
                    }
                }
            }
        } else {
            int64_t oo = o - g * Og;
            int64_t Cg_t = p.C / p.groups;
            for (int64_t kh = 0; kh < p.KH; kh++) {
                int64_t th = oh + p.pt - kh * p.dh;
                if (th < 0 || th % p.sh != 0 || th / p.sh >= p.H) continue;
                int64_t ih = th / p.sh;
                for (int64_t kw = 0; kw < p.KW; kw++) {
                    int64_t tw = ow + p.pl - kw * p.dw;
                    if (tw < 0 || tw % p.sw != 0 || tw / p.sw >= p.W) continue;
                    int64_t iw = tw / p.sw;
                    for (int64_t c = 0; c < Cg_t; c++) {
                        int64_t ci = g * Cg_t + c;
                        float xv = ck_ldf(x, p.dt, in_idx(p, n, ci, ih, iw));
                        float fv = ck_ldf(f, p.dt, convt_fidx(p, oo, ci, kh, kw));
                        acc = acc + xv * fv;
                    }
                }
            }
        }
        if (p.has_bias) {
            acc = acc + ck_ldf(bias, p.dt, o);
        }
        ck_stf(y, p.dt, i, acc);
    }
}

} // namespace

extern "C" cudaError_t
ck_conv2d(const ck_conv_p *p, const void *x, const void *f, const void *bias,
          void *y, cudaStream_t s)
{
    CK_LAUNCH(k_conv, ck_blocks(p->n), CK_THREADS, s, *p, x, f, bias, y);
    return cudaGetLastError();
}
