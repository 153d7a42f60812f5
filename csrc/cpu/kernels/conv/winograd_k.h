/* winograd_k.h -- Winograd F(2x2, 3x3)'s transforms (winograd.c):
 * included once per level, with WK_TARGET the target attribute, WK_NAME(s)
 * the functions' names and WK_V the level's vector of WK_L floats for the
 * input and output transforms (16 lanes at AVX-512, 8 at AVX2: with 16 the
 * x86-64-v3 build split every operation in two and spilled the 32 halves
 * of a 4 x 4 block from its 16 registers, its input transform 5x the
 * AVX-512 one's time).  The same operations on every lane at both widths,
 * so the same bits.  The filter transform (once per constant filter) runs
 * on 16 lanes at both levels. */
/* u[xi][c][OP] = (G g G^T)[xi] of the filter g of (o, c), from gt, the
 * filter as [C][3][3][OP] (zeros in the padding channels): 16 output
 * channels at a time. */
WK_TARGET static void
WK_NAME(wino_filter)(const float *gt, int64_t C, int64_t OP, float *u)
{
    for (int64_t c = 0; c < C; c++) {
        for (int64_t o = 0; o < OP; o += 16) {
            v16 gk[3][3], t[4][3];
            for (int h = 0; h < 3; h++) {
                for (int q = 0; q < 3; q++) {
                    gk[h][q] = *(const v16 *)(gt + ((c * 3 + h) * 3 + q) * OP + o);
                }
            }
            for (int q = 0; q < 3; q++) {
                t[0][q] = gk[0][q];
                t[1][q] = 0.5f * (gk[0][q] + gk[1][q] + gk[2][q]);
                t[2][q] = 0.5f * (gk[0][q] - gk[1][q] + gk[2][q]);
                t[3][q] = gk[2][q];
            }
            for (int i = 0; i < 4; i++) {
                v16 r[4] = { t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]),
                             0.5f * (t[i][0] - t[i][1] + t[i][2]), t[i][2] };
                for (int q = 0; q < 4; q++) {
                    *(v16 *)(u + ((i * 4 + q) * C + c) * OP + o) = r[q];
                }
            }
        }
    }
}

/* B^T d B of a 4 x 4 block d (rows r, columns q) */
#ifndef WINO_IN
#define WINO_IN(T, d, V)                                                       \
    do {                                                                       \
        T t_[4][4];                                                            \
        for (int q = 0; q < 4; q++) {                                          \
            t_[0][q] = d[0][q] - d[2][q];                                      \
            t_[1][q] = d[1][q] + d[2][q];                                      \
            t_[2][q] = d[2][q] - d[1][q];                                      \
            t_[3][q] = d[1][q] - d[3][q];                                      \
        }                                                                      \
        for (int r = 0; r < 4; r++) {                                          \
            V[r * 4 + 0] = t_[r][0] - t_[r][2];                                \
            V[r * 4 + 1] = t_[r][1] + t_[r][2];                                \
            V[r * 4 + 2] = t_[r][2] - t_[r][1];                                \
            V[r * 4 + 3] = t_[r][1] - t_[r][3];                                \
        }                                                                      \
    } while (0)
#endif

/* v[xi][t][C] for tiles t0 .. t0 + nt - 1 of image n, numbered row by
 * row, TW to a row (inputs outside the image are zeros) */
WK_TARGET static void
WK_NAME(wino_input)(const geom *g, const float *x, int64_t n, int64_t t0, int64_t nt,
           int64_t TW, float *v)
{
    const int64_t C = g->C, H = g->H, W = g->W, CV = C / WK_L * WK_L;
    for (int64_t t = 0; t < nt; t++) {
        const int64_t th = (t0 + t) / TW, tw = (t0 + t) % TW;
        const float *p[4][4];
        for (int r = 0; r < 4; r++) {
            int64_t ih = 2 * th - g->pt + r;
            for (int q = 0; q < 4; q++) {
                int64_t iw = 2 * tw - g->pl + q;
                p[r][q] = ih >= 0 && ih < H && iw >= 0 && iw < W
                              ? x + ((n * H + ih) * W + iw) * C
                              : NULL;
            }
        }
        for (int64_t c = 0; c < CV; c += WK_L) {
            WK_V d[4][4], V[16];
            for (int r = 0; r < 4; r++) {
                for (int q = 0; q < 4; q++) {
                    d[r][q] = p[r][q] ? *(const WK_V *)(p[r][q] + c) : (WK_V){ 0 };
                }
            }
            WINO_IN(WK_V, d, V);
            for (int xi = 0; xi < 16; xi++) {
                *(WK_V *)(v + (xi * nt + t) * C + c) = V[xi];
            }
        }
        for (int64_t c = CV; c < C; c++) {
            float d[4][4], V[16];
            for (int r = 0; r < 4; r++) {
                for (int q = 0; q < 4; q++) {
                    d[r][q] = p[r][q] ? p[r][q][c] : 0.0f;
                }
            }
            WINO_IN(float, d, V);
            for (int xi = 0; xi < 16; xi++) {
                v[(xi * nt + t) * C + c] = V[xi];
            }
        }
    }
}

/* y = A^T m A + bias for the tiles of m[xi][t][OP] (as in wino_input),
 * output channels [o_lo, o_hi) */
WK_TARGET static void
WK_NAME(wino_output)(const geom *g, const float *m, int64_t OP, const float *bp,
            float *y, int64_t n, int64_t t0, int64_t nt, int64_t TW,
            int64_t o_lo, int64_t o_hi)
{
    const int64_t O = g->O, OH = g->OH, OW = g->OW;
    for (int64_t t = 0; t < nt; t++) {
        int64_t oh0 = 2 * ((t0 + t) / TW), ow0 = 2 * ((t0 + t) % TW);
        for (int64_t o = o_lo; o < o_hi; o += WK_L) {
            WK_V a[16], s[2][4], out[2][2];
            for (int xi = 0; xi < 16; xi++) {
                a[xi] = *(const WK_V *)(m + (xi * nt + t) * OP + o);
            }
            for (int q = 0; q < 4; q++) {
                s[0][q] = a[q] + a[4 + q] + a[8 + q];
                s[1][q] = a[4 + q] - a[8 + q] - a[12 + q];
            }
            WK_V bv = *(const WK_V *)(bp + o);
            for (int r = 0; r < 2; r++) {
                out[r][0] = bv + (s[r][0] + s[r][1] + s[r][2]);
                out[r][1] = bv + (s[r][1] - s[r][2] - s[r][3]);
            }
            for (int r = 0; r < 2; r++) {
                for (int q = 0; q < 2; q++) {
                    if (oh0 + r >= OH || ow0 + q >= OW) {
                        continue;
                    }
                    float *yp = y + ((n * OH + oh0 + r) * OW + ow0 + q) * O + o;
                    if (o + WK_L <= O) {
                        *(WK_V *)yp = out[r][q];
                    } else {
                        float tmp[WK_L];
                        *(WK_V *)tmp = out[r][q];
                        for (int64_t i = 0; i < O - o; i++) {
                            yp[i] = tmp[i];
                        }
                    }
                }
            }
        }
    }
}

