/* recurrent.cu -- the gate kernels of gru, gruCell, lstm and lstmCell with
 * the semantics of cpu/kernels/recurrent/recurrent.c (see its comment for the math): the
 * products (x W^T for all steps at once, h R^T per step) run on cuBLAS in
 * float32 (backend_cuda.c), these kernels add the biases, apply the
 * activations (relu; sigmoid with the CPU's float32 exp; tanh with the CPU's
 * Cephes polynomial, so the same bits for the same arguments) and update
 * the states, one thread per (direction, batch row, hidden unit). */
#include "ck_common.cuh"

namespace {

__device__ __forceinline__ float
rnn_act(int kind, float x)
{
    if (kind == WNN_KRNN_RELU) {
        return (x > 0 || x != x) ? x : 0.0f; /* NaN stays */
    }
    if (kind == WNN_KRNN_SIGMOID) {
        /* the CPU's libm way below -87 and for NaN */
        return wnn_sigmoid_needs_libm(x) ? wnn_sigmoid_libm(x)
                                         : wnn_sigmoid_core(x);
    }
    return wnn_tanh_cephes(x);
}

__global__ void
k_rnn_init(wnn_rnn_params p, const void *bias, const void *rbias, const void *h0,
           const void *c0, float *bsum, float *rbn, float *h, float *c)
{
    const int64_t G = p.lstm ? 4 : 3, GH = G * p.H;
    const int64_t nb = p.D * GH, ns = p.D * p.B * p.H;
    const int64_t n = nb > ns ? nb : ns;
    CK_LOOP(i, n)
    {
        if (i < nb) {
            bool n_after = !p.lstm && p.reset_after && (i % GH) / p.H == 2;
            bsum[i] = (bias ? ck_ldf(bias, p.dt, i) : 0.0f) +
                      (rbias && !n_after ? ck_ldf(rbias, p.dt, i) : 0.0f);
            if (n_after) {
                int64_t d = i / GH, j = i % GH - 2 * p.H;
                rbn[d * p.H + j] = rbias ? ck_ldf(rbias, p.dt, i) : 0.0f;
            }
        }
        if (i < ns) {
            h[i] = h0 ? ck_ldf(h0, p.dt, i) : 0.0f;
            if (p.lstm) {
                c[i] = c0 ? ck_ldf(c0, p.dt, i) : 0.0f;
            }
        }
    }
}

__global__ void
k_rnn_gates(wnn_rnn_params p, int phase, int64_t k, const float *xw, float *hr,
            const float *bsum, const float *rbn, const void *peep,
            const float *hp, const float *cp, float *hn, float *cn, float *rh,
            void *seq)
{
    const int64_t H = p.H, B = p.B, D = p.D, G = p.lstm ? 4 : 3, GH = G * H;
    CK_LOOP(i, D * B * H)
    {
        int64_t j = i % H, b = (i / H) % B, d = i / (B * H);
        bool back = p.direction == WNN_KRNN_BACKWARD || d == 1;
        int64_t t = back ? p.T - 1 - k : k;
        const float *row_x = xw + (t * B + b) * (D * GH) + d * GH;
        float *row = hr + (d * B + b) * GH;
        const float *bs = bsum + d * GH;
        float h_new;
        if (p.lstm) {
            float v[4];
            for (int g = 0; g < 4; g++) {
                v[g] = row[g * H + j] + (row_x[g * H + j] + bs[g * H + j]);
            }
            float c = cp[i];
            if (peep) {
                const int64_t pb = d * 3 * H + j;
                v[p.gi] += c * ck_ldf(peep, p.dt, pb);
                v[p.go] += c * ck_ldf(peep, p.dt, pb + H);
                v[p.gf] += c * ck_ldf(peep, p.dt, pb + 2 * H);
            }
            float iv = rnn_act(p.act_f, v[p.gi]);
            float ov = rnn_act(p.act_f, v[p.go]);
            float fv = rnn_act(p.act_f, v[p.gf]);
            float gv = rnn_act(p.act_g, v[p.gg]);
            float c_new = fv * c + iv * gv;
            cn[i] = c_new;
            h_new = rnn_act(p.act_h, c_new) * ov;
        } else if (phase == 0) {
            float v[2];
            for (int g = 0; g < 2; g++) {
                v[g] = rnn_act(p.act_f, row[g * H + j] +
                                            (row_x[g * H + j] + bs[g * H + j]));
            }
            float z = v[p.gz], r = v[p.gr];
            if (!p.reset_after) {
                rh[i] = r * hp[i];
                row[p.gz * H + j] = z; /* for phase 1 */
                continue;
            }
            float nv = row_x[2 * H + j] + bs[2 * H + j] +
                       r * (row[2 * H + j] + rbn[d * H + j]);
            nv = rnn_act(p.act_g, nv);
            h_new = z * hp[i] + nv * (1.0f - z);
        } else {
            float z = row[p.gz * H + j];
            float nv = row[2 * H + j] + (row_x[2 * H + j] + bs[2 * H + j]);
            nv = rnn_act(p.act_g, nv);
            h_new = z * hp[i] + nv * (1.0f - z);
        }
        hn[i] = h_new;
        if (seq) {
            ck_stf(seq, p.dt, ((t * D + d) * B + b) * H + j, h_new);
        }
    }
}

} // namespace

extern "C" cudaError_t
ck_rnn_init(const wnn_rnn_params *p, const void *bias, const void *rbias,
            const void *h0, const void *c0, float *bsum, float *rbn, float *h,
            float *c, cudaStream_t s)
{
    int64_t G = p->lstm ? 4 : 3, nb = p->D * G * p->H;
    int64_t ns = p->D * p->B * p->H;
    CK_LAUNCH(k_rnn_init, ck_blocks(nb > ns ? nb : ns), CK_THREADS, s, *p,
              bias, rbias, h0, c0, bsum, rbn, h, c);
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_rnn_gates(const wnn_rnn_params *p, int phase, int64_t k, const float *xw,
             float *hr, const float *bsum, const float *rbn, const void *peep,
             const float *hp, const float *cp, float *hn, float *cn,
             float *rh, void *seq, cudaStream_t s)
{
    CK_LAUNCH(k_rnn_gates, ck_blocks(p->D * p->B * p->H), CK_THREADS, s, *p,
              phase, k, xw, hr, bsum, rbn, peep, hp, cp, hn, cn, rh, seq);
    return cudaGetLastError();
}
