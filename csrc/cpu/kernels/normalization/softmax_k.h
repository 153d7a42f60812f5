/* softmax_k.h -- the exp passes of softmax (normalization.c) at one vector
 * width, included once per ISA level with:
 *
 *   SMK_NAME(s)          the name of the function s at this level
 *   SMK_TARGET           the attribute that compiles it for the level
 *   SMK_VT, SMK_VD, SMK_W the vectors of floats and doubles, floats a vector
 *   SMK(op)              the intrinsic op of the level (_mm512_##op, ...)
 *   SMK_EXP(v)           vm_exp's bits for v = x - max <= 0 or NaN (exp512,
 *                        exp256_neg)
 *   SMK_KEEP_GT(a, b, v) v where a > b, else 0
 *   SMK_LO(r), SMK_HI(r) the lower / upper half of r (float32 lanes)
 *   SMK_MASK_T, SMK_MASK(r) the lane mask of the first r lanes
 *   SMK_MLOAD(k, p), SMK_MSTORE(p, k, v), SMK_MZERO(k, v)
 *                        masked load (zeros), store, lanes outside k zeroed
 *   SMK_REDUCE(d)        the sum of a vector of doubles
 *   SMK_EXP_X4(v, e)     (optional) SMK_EXP of v[0..4) into e[0..4) in lock
 *                        step (exp256_neg_n): the whole vectors then go four
 *                        at a time, each step for the four in turn
 *   SMK_PIN(a, b, c, d)  keeps the four sums in registers (AVX2: an empty asm
 *                        whose operands they are; GCC spilled two or three
 *                        of them to the stack with 16 registers, a store and
 *                        a reload on each one's chain an iteration: rows of
 *                        1500 6 % slower; AVX-512: nothing)
 *
 * The same values as the portable loops: wnn_two_diff's v = x - m and its
 * rounding error lo, e = exp(v) and r = e + e lo (one fma); the sum in four
 * double accumulators of SMK_W / 2 lanes (vector 2k's halves into the
 * first two, 2k + 1's into the last two, in the four-vector loop as in the
 * two-vector one: the same sums), the tail through lane masks.
 * WHAT: SM_STORE y = r and return the sum (softmax_row), SM_SUM the sum
 * only (a long row's part statistics), SM_SCALED y = r inv (a long row's
 * write pass, returns 0).  The file undefines its parameters at its end. */

SMK_TARGET static inline __attribute__((always_inline)) double
SMK_NAME(exp)(const float *x, float *y, int64_t n, float m, float inv, int what)
{
    const SMK_VT vm = SMK(set1_ps)(m), negm = SMK(set1_ps)(-m);
    const SMK_VT ninf = SMK(set1_ps)(-INFINITY), vinv = SMK(set1_ps)(inv);
    SMK_VD s0 = SMK(setzero_pd)(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
#define SM_STEP(xv, r)                                                         \
    do {                                                                       \
        SMK_VT v = SMK(sub_ps)(xv, vm);                                \
        SMK_VT bx = SMK(sub_ps)(v, xv);                                \
        SMK_VT lo = SMK(add_ps)(SMK(sub_ps)(xv, SMK(sub_ps)(v, bx)),   \
                                        SMK(sub_ps)(negm, bx));                \
        lo = SMK_KEEP_GT(v, ninf, lo);                                         \
        SMK_VT e = SMK_EXP(v);                                         \
        r = SMK(fmadd_ps)(e, lo, e);                                           \
    } while (0)
#define SM_ADD(sa, sb, r)                                                      \
    do {                                                                       \
        sa = SMK(add_pd)(sa, SMK(cvtps_pd)(SMK_LO(r)));                        \
        sb = SMK(add_pd)(sb, SMK(cvtps_pd)(SMK_HI(r)));                        \
    } while (0)
#ifdef SMK_EXP_X4
    for (; i + 4 * SMK_W <= n; i += 4 * SMK_W) {
        SMK_VT xv[4], v[4], lo[4], e[4], r[4];
        VM_X4(j) xv[j] = SMK(loadu_ps)(x + i + j * SMK_W);
        VM_X4(j) v[j] = SMK(sub_ps)(xv[j], vm);
        VM_X4(j) { /* SM_STEP's (a macro shared with it, giving each
                    * vector's steps in turn, measured 3 % slower) */
            SMK_VT bx = SMK(sub_ps)(v[j], xv[j]);
            lo[j] = SMK(add_ps)(SMK(sub_ps)(xv[j], SMK(sub_ps)(v[j], bx)),
                                SMK(sub_ps)(negm, bx));
            lo[j] = SMK_KEEP_GT(v[j], ninf, lo[j]);
        }
        SMK_EXP_X4(v, e);
        VM_X4(j) r[j] = SMK(fmadd_ps)(e[j], lo[j], e[j]);
        if (what == SM_SCALED) {
            VM_X4(j) SMK(storeu_ps)(y + i + j * SMK_W, SMK(mul_ps)(r[j], vinv));
            continue;
        }
        if (what == SM_STORE) {
            VM_X4(j) SMK(storeu_ps)(y + i + j * SMK_W, r[j]);
        }
        SM_ADD(s0, s1, r[0]);
        SM_ADD(s2, s3, r[1]);
        SM_ADD(s0, s1, r[2]);
        SM_ADD(s2, s3, r[3]);
        SMK_PIN(s0, s1, s2, s3);
    }
#endif
    for (; i + 2 * SMK_W <= n; i += 2 * SMK_W) {
        SMK_VT a = SMK(loadu_ps)(x + i), b = SMK(loadu_ps)(x + i + SMK_W);
        SMK_VT ra, rb;
        SM_STEP(a, ra);
        SM_STEP(b, rb);
        if (what == SM_SCALED) {
            SMK(storeu_ps)(y + i, SMK(mul_ps)(ra, vinv));
            SMK(storeu_ps)(y + i + SMK_W, SMK(mul_ps)(rb, vinv));
            continue;
        }
        if (what == SM_STORE) {
            SMK(storeu_ps)(y + i, ra);
            SMK(storeu_ps)(y + i + SMK_W, rb);
        }
        SM_ADD(s0, s1, ra);
        SM_ADD(s2, s3, rb);
        SMK_PIN(s0, s1, s2, s3);
    }
    for (; i < n; i += SMK_W) {
        const SMK_MASK_T k = SMK_MASK(n - i >= SMK_W ? SMK_W : (int)(n - i));
        SMK_VT a = SMK_MLOAD(k, x + i), ra;
        SM_STEP(a, ra);
        ra = SMK_MZERO(k, ra);
        if (what == SM_SCALED) {
            SMK_MSTORE(y + i, k, SMK(mul_ps)(ra, vinv));
            continue;
        }
        if (what == SM_STORE) {
            SMK_MSTORE(y + i, k, ra);
        }
        SM_ADD(s0, s1, ra);
    }
#undef SM_STEP
#undef SM_ADD
    return SMK_REDUCE(SMK(add_pd)(SMK(add_pd)(s0, s1), SMK(add_pd)(s2, s3)));
}

SMK_TARGET static double
SMK_NAME(row_exp)(const float *x, float *y, int64_t n, float m)
{
    return SMK_NAME(exp)(x, y, n, m, 1.0f, SM_STORE);
}

SMK_TARGET static double
SMK_NAME(part_sum)(const float *x, int64_t n, float m)
{
    return SMK_NAME(exp)(x, NULL, n, m, 1.0f, SM_SUM);
}

SMK_TARGET static void
SMK_NAME(part_write)(const float *x, float *y, int64_t n, float m, float inv)
{
    (void)SMK_NAME(exp)(x, y, n, m, inv, SM_SCALED);
}

#undef SMK_NAME
#undef SMK_TARGET
#undef SMK_VT
#undef SMK_VD
#undef SMK_W
#undef SMK
#undef SMK_EXP
#undef SMK_KEEP_GT
#undef SMK_LO
#undef SMK_HI
#undef SMK_MASK_T
#undef SMK_MASK
#undef SMK_MLOAD
#undef SMK_MSTORE
#undef SMK_MZERO
#undef SMK_REDUCE
#undef SMK_PIN
#undef SMK_EXP_X4
