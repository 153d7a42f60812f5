/* test_core.c -- the webnn core tested from C alone (no Python), and the
 * tests' main.
 *
 * Built and run by `make test-c` (with harness.c, test_errors.c and
 * test_compiler.c: harness.h says which file tests what).  Every check
 * prints one line ("ok" or "FAIL" and what it looked at); the last line is
 * "N passed, M failed" and the exit status is non-zero when anything failed.
 *
 * Here: contexts (create, destroy, lost state), the builder (inputs,
 * constants, operators through wnn_builder_op with options structs, build),
 * tensors and the timeline (create, write, dispatch, read), the values of
 * add (broadcasting), relu, matmul, gemm (transposes, alpha, beta, c), cast
 * (float32 -> int32), where and an element-wise chain; the error format,
 * type and operator names, float16 conversion; vmath.h's gelu in the ISA
 * clones; the registry's signatures and the introspection views; device
 * interop refused on the host. */
#include "harness.h"

/* ---- contexts ----------------------------------------------------------- */
static void
test_context(void)
{
    wnn_error err;
    wnn_context *c = NULL;
    check(wnn_device_available(WNN_DEVICE_CPU), "context: cpu available",
          NULL);
    if (!check_ok(wnn_context_create(WNN_DEVICE_CPU, &c, &err), &err,
                  "context: create cpu")) {
        return;
    }
    check(wnn_context_device(c) == WNN_DEVICE_CPU, "context: device is cpu",
          NULL);
    check(!wnn_context_accelerated(c), "context: cpu is not accelerated",
          NULL);
    check(wnn_context_max_tensor_bytes(c) > 0, "context: maxTensorByteLength",
          NULL);
    check(!wnn_context_is_lost(c), "context: fresh context not lost", NULL);
    wnn_op_limits lim;
    check(wnn_context_op_limits(c, WNN_OP_MATMUL, &lim) && lim.n_inputs == 2,
          "context: op limits of matmul", NULL);
    wnn_context_flush(c);
    wnn_context_destroy(c, "test destroy");
    check(wnn_context_is_lost(c), "context: lost after destroy", NULL);
    check(strcmp(wnn_context_lost_message(c), "test destroy") == 0,
          "context: lost message", "'%s'", wnn_context_lost_message(c));
    wnn_context_destroy(c, "again"); /* idempotent */
    check(strcmp(wnn_context_lost_message(c), "test destroy") == 0,
          "context: destroy is idempotent", NULL);
    wnn_context_release(c);
}

/* ---- values ------------------------------------------------------------- */

/* add with broadcasting: a[2,3,4] + b[3,1] */
static void
test_add_broadcast(wnn_context *c)
{
    wnn_error err;
    wnn_builder *b = NULL;
    wnn_graph *g = NULL;
    const uint32_t sa[3] = { 2, 3, 4 }, sb[2] = { 3, 1 };
    wnn_desc da = desc(WNN_FLOAT32, 3, sa), db = desc(WNN_FLOAT32, 2, sb);
    uint32_t ia, ib, io;
    wnn_no_options o;
    if (!check_ok(wnn_builder_create(c, &b, &err), &err, "add: builder")) {
        return;
    }
    wnn_options_default(WNN_OP_ADD, &o);
    uint32_t in[2];
    bool ok = wnn_builder_input(b, "a", &da, &ia, &err) == WNN_OK &&
              wnn_builder_input(b, "b", &db, &ib, &err) == WNN_OK;
    in[0] = ia;
    in[1] = ib;
    ok = ok && add_op(b, WNN_OP_ADD, in, 2, &o, NULL, &io, &err) == WNN_OK;
    if (!check_ok(ok ? WNN_OK : WNN_ERR, &err, "add: build nodes")) {
        wnn_builder_free(b);
        return;
    }
    const wnn_desc *od = wnn_builder_operand_desc(b, io);
    check(od && od->dtype == WNN_FLOAT32 && od->rank == 3 &&
              od->shape[0] == 2 && od->shape[1] == 3 && od->shape[2] == 4,
          "add: output descriptor float32 [2,3,4]", NULL);
    const char *names[1] = { "y" };
    if (!check_ok(wnn_builder_build(b, 1, names, &io, &g, &err), &err,
                  "add: build")) {
        wnn_builder_free(b);
        return;
    }
    check(wnn_builder_has_built(b), "add: builder has built", NULL);
    check(wnn_graph_num_inputs(g) == 2 && wnn_graph_num_outputs(g) == 1,
          "add: graph has 2 inputs and 1 output", NULL);
    float a[24], bv[3], y[24];
    double want[24];
    for (int i = 0; i < 24; i++) {
        a[i] = (float)i;
    }
    bv[0] = 100.0f;
    bv[1] = 200.0f;
    bv[2] = 300.0f;
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 3; j++) {
            for (int k = 0; k < 4; k++) {
                want[i * 12 + j * 4 + k] = a[i * 12 + j * 4 + k] + bv[j];
            }
        }
    }
    const char *in_names[2] = { "a", "b" };
    const void *in_data[2] = { a, bv };
    if (check_ok(run_graph(c, g, 2, in_names, in_data, "y", y, &err), &err,
                 "add: dispatch and read")) {
        long bad = first_mismatch(y, want, 24, 0, 0);
        check(bad < 0, "add: values with broadcasting", "y[%ld] = %g, want %g",
              bad, bad < 0 ? 0.0 : y[bad], bad < 0 ? 0.0 : want[bad]);
    }
    wnn_graph_release(g);
    wnn_builder_free(b);
}

/* relu on a vector large enough to take the threaded path, and a small one */
static void
test_relu(wnn_context *c)
{
    static const uint32_t sizes[2] = { 7, 100003 };
    for (int s = 0; s < 2; s++) {
        wnn_error err;
        wnn_builder *b = NULL;
        wnn_graph *g = NULL;
        uint32_t n = sizes[s];
        wnn_desc d = desc(WNN_FLOAT32, 1, &n);
        uint32_t ix, iy;
        wnn_no_options o;
        char name[64];
        snprintf(name, sizeof(name), "relu: n=%u build", n);
        wnn_options_default(WNN_OP_RELU, &o);
        if (wnn_builder_create(c, &b, &err) != WNN_OK ||
            wnn_builder_input(b, "x", &d, &ix, &err) != WNN_OK ||
            add_op(b, WNN_OP_RELU, &ix, 1, &o, "r", &iy, &err) != WNN_OK) {
            check_ok(WNN_ERR, &err, name);
            wnn_builder_free(b);
            continue;
        }
        const char *names[1] = { "y" };
        if (!check_ok(wnn_builder_build(b, 1, names, &iy, &g, &err), &err,
                      name)) {
            wnn_builder_free(b);
            continue;
        }
        float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
        double *want = malloc(sizeof(double) * n);
        fill_random(x, n);
        x[0] = -0.0f;
        x[1] = 0.0f;
        x[2] = -5.5f;
        x[3] = 5.5f;
        for (uint32_t i = 0; i < n; i++) {
            want[i] = x[i] > 0 ? x[i] : 0.0;
        }
        const char *in_names[1] = { "x" };
        const void *in_data[1] = { x };
        snprintf(name, sizeof(name), "relu: n=%u dispatch", n);
        if (check_ok(run_graph(c, g, 1, in_names, in_data, "y", y, &err), &err,
                     name)) {
            long bad = first_mismatch(y, want, n, 0, 0);
            snprintf(name, sizeof(name), "relu: values n=%u", n);
            check(bad < 0, name, "y[%ld] = %g for x = %g", bad,
                  bad < 0 ? 0.0 : y[bad], bad < 0 ? 0.0 : x[bad]);
        }
        free(x);
        free(y);
        free(want);
        wnn_graph_release(g);
        wnn_builder_free(b);
    }
}

/* matmul: a[..., M, K] @ b[..., K, N] against a naive triple loop. */
static void
naive_matmul(const float *a, const float *b, double *c, uint32_t m,
             uint32_t k, uint32_t n)
{
    for (uint32_t i = 0; i < m; i++) {
        for (uint32_t j = 0; j < n; j++) {
            double s = 0;
            for (uint32_t p = 0; p < k; p++) {
                s += (double)a[i * k + p] * b[p * n + j];
            }
            c[i * n + j] = s;
        }
    }
}

static void
matmul_case(wnn_context *c, const char *what, uint32_t ra, const uint32_t *sa,
            uint32_t rb, const uint32_t *sb)
{
    wnn_error err;
    wnn_builder *b = NULL;
    wnn_graph *g = NULL;
    wnn_desc da = desc(WNN_FLOAT32, ra, sa), db = desc(WNN_FLOAT32, rb, sb);
    uint32_t ids[2], io;
    wnn_no_options o;
    char name[96];
    snprintf(name, sizeof(name), "matmul: %s build", what);
    wnn_options_default(WNN_OP_MATMUL, &o);
    if (wnn_builder_create(c, &b, &err) != WNN_OK ||
        wnn_builder_input(b, "a", &da, &ids[0], &err) != WNN_OK ||
        wnn_builder_input(b, "b", &db, &ids[1], &err) != WNN_OK ||
        add_op(b, WNN_OP_MATMUL, ids, 2, &o, NULL, &io, &err) != WNN_OK) {
        check_ok(WNN_ERR, &err, name);
        wnn_builder_free(b);
        return;
    }
    const char *names[1] = { "c" };
    if (!check_ok(wnn_builder_build(b, 1, names, &io, &g, &err), &err, name)) {
        wnn_builder_free(b);
        return;
    }
    const wnn_desc *od = wnn_graph_output_desc(g, 0);
    uint32_t m = sa[ra - 2], k = sa[ra - 1], n = sb[rb - 1];
    uint64_t na = wnn_desc_elements(&da), nb = wnn_desc_elements(&db);
    uint64_t no = wnn_desc_elements(od);
    float *a = malloc(na * sizeof(float)), *bv = malloc(nb * sizeof(float));
    float *y = malloc(no * sizeof(float));
    double *want = malloc(no * sizeof(double));
    fill_random(a, na);
    fill_random(bv, nb);
    /* Reference: walk the output's batch index, broadcasting a and b. */
    uint32_t r = od->rank, rbat = r - 2;
    uint64_t batch = no / ((uint64_t)m * n);
    for (uint64_t bi = 0; bi < batch; bi++) {
        uint64_t rem = bi, oa = 0, ob = 0, stra = 1, strb = 1;
        for (int d = (int)rbat - 1; d >= 0; d--) {
            uint32_t idx = (uint32_t)(rem % od->shape[d]);
            rem /= od->shape[d];
            int dai = d - (int)(rbat - (ra - 2));
            int dbi = d - (int)(rbat - (rb - 2));
            uint32_t xa = dai >= 0 ? sa[dai] : 1, xb = dbi >= 0 ? sb[dbi] : 1;
            oa += (xa == 1 ? 0 : idx) * stra;
            ob += (xb == 1 ? 0 : idx) * strb;
            stra *= xa;
            strb *= xb;
        }
        naive_matmul(a + oa * m * k, bv + ob * k * n, want + bi * m * n, m, k,
                     n);
    }
    const char *in_names[2] = { "a", "b" };
    const void *in_data[2] = { a, bv };
    snprintf(name, sizeof(name), "matmul: %s dispatch", what);
    if (check_ok(run_graph(c, g, 2, in_names, in_data, "c", y, &err), &err,
                 name)) {
        long bad = first_mismatch(y, want, no, 1e-4, 1e-4 * k);
        snprintf(name, sizeof(name), "matmul: %s values", what);
        check(bad < 0, name, "y[%ld] = %.8g, want %.8g", bad,
              bad < 0 ? 0.0 : y[bad], bad < 0 ? 0.0 : want[bad]);
    }
    free(a);
    free(bv);
    free(y);
    free(want);
    wnn_graph_release(g);
    wnn_builder_free(b);
}

static void
test_matmul(wnn_context *c)
{
    const uint32_t a1[2] = { 37, 53 }, b1[2] = { 53, 29 };
    matmul_case(c, "[37,53]@[53,29]", 2, a1, 2, b1);
    const uint32_t a2[3] = { 3, 5, 7 }, b2[2] = { 7, 4 };
    matmul_case(c, "[3,5,7]@[7,4]", 3, a2, 2, b2);
    const uint32_t a3[4] = { 2, 1, 4, 6 }, b3[3] = { 3, 6, 5 };
    matmul_case(c, "[2,1,4,6]@[3,6,5]", 4, a3, 3, b3);
}

/* gemm: alpha * A^T * B^T + beta * c, with c of shape [N] and [M, 1]. */
static void
gemm_case(wnn_context *c, bool at, bool bt, uint32_t rc, const uint32_t *sc,
          double alpha, double beta)
{
    const uint32_t M = 6, K = 9, N = 5;
    wnn_error err;
    wnn_builder *b = NULL;
    wnn_graph *g = NULL;
    uint32_t sa[2] = { at ? K : M, at ? M : K };
    uint32_t sb[2] = { bt ? N : K, bt ? K : N };
    wnn_desc da = desc(WNN_FLOAT32, 2, sa), db = desc(WNN_FLOAT32, 2, sb);
    wnn_desc dc = desc(WNN_FLOAT32, rc, sc);
    float a[6 * 9], bv[9 * 5], cv[6 * 5], y[6 * 5];
    double want[6 * 5];
    uint64_t ncv = wnn_desc_elements(&dc);
    fill_random(a, M * K);
    fill_random(bv, K * N);
    fill_random(cv, ncv);
    char what[96], name[128];
    snprintf(what, sizeof(what), "aT=%d bT=%d c rank %u alpha=%g beta=%g",
             at, bt, rc, alpha, beta);
    uint32_t ids[2], ic, io;
    wnn_gemm_options o;
    wnn_options_default(WNN_OP_GEMM, &o);
    snprintf(name, sizeof(name), "gemm: %s build", what);
    if (wnn_builder_create(c, &b, &err) != WNN_OK ||
        wnn_builder_input(b, "a", &da, &ids[0], &err) != WNN_OK ||
        wnn_builder_input(b, "b", &db, &ids[1], &err) != WNN_OK ||
        wnn_builder_constant(b, &dc, cv, ncv * sizeof(float), &ic, &err) !=
            WNN_OK) {
        check_ok(WNN_ERR, &err, name);
        wnn_builder_free(b);
        return;
    }
    if (!at && !bt) {
        check(o.alpha == 1.0 && o.beta == 1.0 && !o.a_transpose &&
                  !o.b_transpose && o.c == 0,
              "gemm: options defaults (alpha 1, beta 1, no c)", NULL);
    }
    o.c = ic + 1; /* operand-valued options hold operand id + 1 */
    o.alpha = alpha;
    o.beta = beta;
    o.a_transpose = at;
    o.b_transpose = bt;
    if (add_op(b, WNN_OP_GEMM, ids, 2, &o, "g", &io, &err) != WNN_OK) {
        check_ok(WNN_ERR, &err, name);
        wnn_builder_free(b);
        return;
    }
    const char *names[1] = { "y" };
    if (!check_ok(wnn_builder_build(b, 1, names, &io, &g, &err), &err, name)) {
        wnn_builder_free(b);
        return;
    }
    for (uint32_t i = 0; i < M; i++) {
        for (uint32_t j = 0; j < N; j++) {
            double s = 0;
            for (uint32_t p = 0; p < K; p++) {
                double x = at ? a[p * M + i] : a[i * K + p];
                double z = bt ? bv[j * K + p] : bv[p * N + j];
                s += x * z;
            }
            double cval;
            if (rc == 0) {
                cval = cv[0];
            } else if (rc == 1) {
                cval = cv[sc[0] == 1 ? 0 : j];
            } else {
                cval = cv[(sc[0] == 1 ? 0 : i) * sc[1] + (sc[1] == 1 ? 0 : j)];
            }
            want[i * N + j] = alpha * s + beta * cval;
        }
    }
    const char *in_names[2] = { "a", "b" };
    const void *in_data[2] = { a, bv };
    snprintf(name, sizeof(name), "gemm: %s dispatch", what);
    if (check_ok(run_graph(c, g, 2, in_names, in_data, "y", y, &err), &err,
                 name)) {
        long bad = first_mismatch(y, want, M * N, 1e-5, 1e-5);
        snprintf(name, sizeof(name), "gemm: %s values", what);
        check(bad < 0, name, "y[%ld] = %.8g, want %.8g", bad,
              bad < 0 ? 0.0 : y[bad], bad < 0 ? 0.0 : want[bad]);
    }
    wnn_graph_release(g);
    wnn_builder_free(b);
}

static void
test_gemm(wnn_context *c)
{
    const uint32_t c_n[1] = { 5 }, c_m1[2] = { 6, 1 }, c_mn[2] = { 6, 5 };
    gemm_case(c, true, true, 1, c_n, 1.0, 1.0);
    gemm_case(c, true, false, 2, c_m1, 0.5, 2.0);
    gemm_case(c, false, true, 2, c_mn, -1.5, 0.25);
    gemm_case(c, false, false, 0, NULL, 2.0, 3.0);
}

/* cast float32 -> int32: truncation toward zero, saturation, NaN -> 0 */
static void
test_cast(wnn_context *c)
{
    wnn_error err;
    wnn_builder *b = NULL;
    wnn_graph *g = NULL;
    uint32_t n = 10, ix, iy;
    wnn_desc d = desc(WNN_FLOAT32, 1, &n);
    wnn_cast_options o;
    wnn_options_default(WNN_OP_CAST, &o);
    if (wnn_builder_create(c, &b, &err) != WNN_OK ||
        wnn_builder_input(b, "x", &d, &ix, &err) != WNN_OK) {
        check_ok(WNN_ERR, &err, "cast: build");
        wnn_builder_free(b);
        return;
    }
    /* regression: a data type value out of the enum reached a shift by
     * 40 (undefined behaviour) in the limits check */
    o.data_type = (wnn_dtype)40;
    check_err(add_op(b, WNN_OP_CAST, &ix, 1, &o, "L", &iy, &err), &err,
              WNN_TYPE_ERROR, "cast (label 'L'): argument 'options.dataType': ",
              "cast: an invalid data type value is a TypeError");
    o.data_type = WNN_INT32;
    if (add_op(b, WNN_OP_CAST, &ix, 1, &o, NULL, &iy, &err) != WNN_OK) {
        check_ok(WNN_ERR, &err, "cast: build");
        wnn_builder_free(b);
        return;
    }
    const wnn_desc *od = wnn_builder_operand_desc(b, iy);
    check(od && od->dtype == WNN_INT32 && od->rank == 1 && od->shape[0] == 10,
          "cast: output descriptor int32 [10]", NULL);
    const char *names[1] = { "y" };
    if (!check_ok(wnn_builder_build(b, 1, names, &iy, &g, &err), &err,
                  "cast: build")) {
        wnn_builder_free(b);
        return;
    }
    const float x[10] = { 1.9f, -1.9f, 2.5f, -0.5f, 0.0f, 1e9f, 3e9f, -3e9f,
                          NAN, -7.0f };
    const int32_t want[10] = { 1, -1, 2, 0, 0, 1000000000, INT32_MAX,
                               INT32_MIN, 0, -7 };
    int32_t y[10];
    const char *in_names[1] = { "x" };
    const void *in_data[1] = { x };
    if (check_ok(run_graph(c, g, 1, in_names, in_data, "y", y, &err), &err,
                 "cast: dispatch")) {
        int bad = -1;
        for (int i = 0; i < 10 && bad < 0; i++) {
            if (y[i] != want[i]) {
                bad = i;
            }
        }
        check(bad < 0, "cast: float32 -> int32 truncates and saturates",
              "y[%d] = %d for x = %g, want %d", bad, bad < 0 ? 0 : y[bad],
              bad < 0 ? 0.0 : x[bad], bad < 0 ? 0 : want[bad]);
    }
    wnn_graph_release(g);
    wnn_builder_free(b);
}

/* where(condition[4] uint8, trueValue[2,4], falseValue[] scalar constant) */
static void
test_where(wnn_context *c)
{
    wnn_error err;
    wnn_builder *b = NULL;
    wnn_graph *g = NULL;
    uint32_t s4[1] = { 4 }, s24[2] = { 2, 4 };
    wnn_desc dcond = desc(WNN_UINT8, 1, s4), dt = desc(WNN_FLOAT32, 2, s24);
    uint32_t ids[3], io;
    wnn_number fv = { .present = true, .d = -1.0 };
    wnn_no_options o;
    wnn_options_default(WNN_OP_WHERE, &o);
    if (wnn_builder_create(c, &b, &err) != WNN_OK ||
        wnn_builder_input(b, "cond", &dcond, &ids[0], &err) != WNN_OK ||
        wnn_builder_input(b, "t", &dt, &ids[1], &err) != WNN_OK ||
        wnn_builder_constant_scalar(b, WNN_FLOAT32, &fv, &ids[2], &err) !=
            WNN_OK ||
        add_op(b, WNN_OP_WHERE, ids, 3, &o, NULL, &io, &err) != WNN_OK) {
        check_ok(WNN_ERR, &err, "where: build");
        wnn_builder_free(b);
        return;
    }
    const char *names[1] = { "y" };
    if (!check_ok(wnn_builder_build(b, 1, names, &io, &g, &err), &err,
                  "where: build")) {
        wnn_builder_free(b);
        return;
    }
    const uint8_t cond[4] = { 1, 0, 7, 0 };
    const float t[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    const double want[8] = { 1, -1, 3, -1, 5, -1, 7, -1 };
    float y[8];
    const char *in_names[2] = { "cond", "t" };
    const void *in_data[2] = { cond, t };
    if (check_ok(run_graph(c, g, 2, in_names, in_data, "y", y, &err), &err,
                 "where: dispatch")) {
        long bad = first_mismatch(y, want, 8, 0, 0);
        check(bad < 0, "where: values with broadcasting",
              "y[%ld] = %g, want %g", bad, bad < 0 ? 0.0 : y[bad],
              bad < 0 ? 0.0 : want[bad]);
    }
    wnn_graph_release(g);
    wnn_builder_free(b);
}

/* A chain with intermediates in the scratch arena and three outputs, one of
 * them also consumed by a later node and one operand named twice:
 *   s = a + b; r = relu(s); m = r * s; k = sub(m, r)
 *   outputs: "m" = m, "r" = r, "r2" = r, "k" = k */
static void
test_chain(wnn_context *c)
{
    enum { N = 40000 }; /* threaded kernels, arena buffers of 160 kB */
    wnn_error err;
    wnn_builder *b = NULL;
    wnn_graph *g = NULL;
    uint32_t n = N, ia, ib, is, ir, im, ik, ids[2];
    wnn_desc d = desc(WNN_FLOAT32, 1, &n);
    wnn_no_options o;
    wnn_options_default(WNN_OP_ADD, &o);
    bool ok = wnn_builder_create(c, &b, &err) == WNN_OK &&
              wnn_builder_input(b, "a", &d, &ia, &err) == WNN_OK &&
              wnn_builder_input(b, "b", &d, &ib, &err) == WNN_OK;
    ids[0] = ia;
    ids[1] = ib;
    ok = ok && add_op(b, WNN_OP_ADD, ids, 2, &o, "s", &is, &err) == WNN_OK &&
         add_op(b, WNN_OP_RELU, &is, 1, &o, "r", &ir, &err) == WNN_OK;
    ids[0] = ir;
    ids[1] = is;
    ok = ok && add_op(b, WNN_OP_MUL, ids, 2, &o, "m", &im, &err) == WNN_OK;
    ids[0] = im;
    ids[1] = ir;
    ok = ok && add_op(b, WNN_OP_SUB, ids, 2, &o, "k", &ik, &err) == WNN_OK;
    const char *names[4] = { "m", "r", "r2", "k" };
    const uint32_t outs[4] = { im, ir, ir, ik };
    ok = ok && wnn_builder_build(b, 4, names, outs, &g, &err) == WNN_OK;
    if (!check_ok(ok ? WNN_OK : WNN_ERR, &err, "chain: build")) {
        wnn_builder_free(b);
        return;
    }
    check(wnn_graph_num_outputs(g) == 4, "chain: 4 outputs", NULL);
    float *a = malloc(sizeof(float) * N), *bv = malloc(sizeof(float) * N);
    float *y[4];
    wnn_tensor *ta = NULL, *tb = NULL, *to[4] = { NULL };
    fill_random(a, N);
    fill_random(bv, N);
    ok = wnn_tensor_create(c, &d, false, true, NULL, &ta, &err) == WNN_OK &&
         wnn_tensor_create(c, &d, false, true, NULL, &tb, &err) == WNN_OK;
    for (int i = 0; i < 4; i++) {
        y[i] = malloc(sizeof(float) * N);
        ok = ok && wnn_tensor_create(c, &d, true, false, NULL, &to[i],
                                     &err) == WNN_OK;
    }
    const char *in_names[2] = { "a", "b" };
    wnn_tensor *tin[2] = { ta, tb };
    ok = ok && wnn_context_write(c, ta, a, sizeof(float) * N, &err) ==
                   WNN_OK &&
         wnn_context_write(c, tb, bv, sizeof(float) * N, &err) == WNN_OK &&
         wnn_context_dispatch(c, g, 2, in_names, tin, 4, names, to, &err) ==
             WNN_OK;
    for (int i = 0; i < 4; i++) {
        ok = ok && wnn_context_read(c, to[i], y[i], sizeof(float) * N,
                                    &err) == WNN_OK;
    }
    if (check_ok(ok ? WNN_OK : WNN_ERR, &err, "chain: dispatch and read")) {
        long bad = -1;
        int which = -1;
        for (long i = 0; i < N && bad < 0; i++) {
            float sv = a[i] + bv[i];
            float rv = sv > 0 ? sv : 0.0f;
            float mv = rv * sv;
            float kv = mv - rv;
            const float want[4] = { mv, rv, rv, kv };
            for (int j = 0; j < 4; j++) {
                if (y[j][i] != want[j]) {
                    bad = i;
                    which = j;
                }
            }
        }
        check(bad < 0, "chain: values of all four outputs",
              "output '%s' differs at %ld", which >= 0 ? names[which] : "",
              bad);
    }
    for (int i = 0; i < 4; i++) {
        if (to[i]) {
            wnn_tensor_release(to[i]);
        }
        free(y[i]);
    }
    if (ta) {
        wnn_tensor_release(ta);
    }
    if (tb) {
        wnn_tensor_release(tb);
    }
    free(a);
    free(bv);
    wnn_graph_release(g);
    wnn_builder_free(b);
}

/* ---- misc --------------------------------------------------------------- */
/* ---- vmath.h's portable gelu, in the ISA clones the library builds ------
 * The operator runs elementwise.c's AVX-512 intrinsics where the CPU has
 * them (tests/ops/test_vector_math.py checks that path); these are the
 * x86-64-v4 (AVX-512), x86-64-v3 (AVX2 + FMA) and baseline (SSE2, no FMA)
 * clones of vm_gelu,
 * compiled as the library compiles them (a * b + c contracted, no trapping
 * math), against 0.5 x erfc(-x / sqrt 2) in double on every 4099th float32
 * bit pattern and the special values. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VM_GELU_LOOP(name, isa)                                                \
    __attribute__((noinline, target(isa),                                      \
                   optimize("fp-contract=fast", "no-trapping-math"))) static void \
    name(const float *x, float *y, size_t n)                                   \
    {                                                                          \
        for (size_t i = 0; i < n; i++) {                                       \
            y[i] = vm_gelu(x[i]);                                              \
        }                                                                      \
    }
VM_GELU_LOOP(gelu_baseline, "arch=x86-64")
VM_GELU_LOOP(gelu_v3, "arch=x86-64-v3")
VM_GELU_LOOP(gelu_v4, "arch=x86-64-v4")

/* |got - ref| in float32 ulps of ref (the subnormal grid below 2^-126) */
static double
ulps_f32(float got, double ref)
{
    if (isnan(ref) || isnan(got)) {
        return isnan(ref) && isnan(got) ? 0.0 : INFINITY;
    }
    float r = (float)ref;
    if (isinf(r) || isinf(got)) {
        return got == r ? 0.0 : INFINITY;
    }
    int e = r == 0.0f ? -149 : ilogb(fabs((double)r)) - 23;
    return fabs((double)got - ref) / ldexp(1.0, e < -149 ? -149 : e);
}

static void
test_vmath_gelu(void)
{
    enum { N = 4096 };
    static float x[N], y[N];
    void (*fns[3])(const float *, float *, size_t) = { gelu_baseline, gelu_v3, gelu_v4 };
    const char *names[3] = { "baseline", "x86-64-v3", "x86-64-v4" };
    __builtin_cpu_init();
    for (int k = 0; k < 3; k++) {
        if ((k >= 1 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) ||
            (k == 2 && !(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")))) {
            continue;
        }
        double worst = 0.0;
        float at = 0.0f;
        size_t n = 0;
        for (uint64_t b = 0;; b += 4099) {
            bool last = b >= (1ull << 32);
            if (!last) {
                uint32_t u = (uint32_t)b;
                memcpy(&x[n++], &u, 4);
            }
            if (n == N || (last && n)) {
                fns[k](x, y, n);
                for (size_t i = 0; i < n; i++) {
                    double xd = x[i];
                    double ref = isinf(xd) && xd < 0 ? NAN /* -Inf * 0 */
                                                     : 0.5 * xd * erfc(-xd / sqrt(2.0));
                    double e = ulps_f32(y[i], ref);
                    if (!(e <= worst)) {
                        worst = e;
                        at = x[i];
                    }
                }
                n = 0;
            }
            if (last) {
                break;
            }
        }
        const float sp[4] = { INFINITY, -INFINITY, NAN, -0.0f };
        float sy[4];
        fns[k](sp, sy, 4);
        char what[96];
        snprintf(what, sizeof(what), "vmath gelu (%s clone): <= 9 ulp, specials", names[k]);
        check(worst <= 9.0 && sy[0] == INFINITY && isnan(sy[1]) && isnan(sy[2]) &&
                  sy[3] == 0.0f && signbit(sy[3]),
              what, "worst %.2f ulp at %.9g; gelu(+Inf, -Inf, NaN, -0) = %g %g %g %g",
              worst, (double)at, (double)sy[0], (double)sy[1], (double)sy[2], (double)sy[3]);
    }
}
#else
static void
test_vmath_gelu(void)
{
}
#endif

static void
test_misc(void)
{
    char buf[64];
    wnn_error e;
    wnn_error_clear(&e);
    e.kind = WNN_TYPE_ERROR;
    snprintf(e.op, sizeof(e.op), "conv2d");
    snprintf(e.label, sizeof(e.label), "stem");
    snprintf(e.argument, sizeof(e.argument), "options.groups");
    snprintf(e.message, sizeof(e.message), "bad");
    wnn_error_format(&e, buf, sizeof(buf));
    check(strcmp(buf, "conv2d (label 'stem'): argument 'options.groups': bad")
              == 0,
          "error format: op, label, argument, message", "'%s'", buf);
    char tiny[8];
    wnn_error_format(&e, tiny, sizeof(tiny));
    check(strlen(tiny) == 7 && strncmp(tiny, "conv2d ", 7) == 0,
          "error format: truncates safely", "'%s'", tiny);
    wnn_dtype t;
    check(wnn_dtype_from_name("float16", &t) == 0 && t == WNN_FLOAT16 &&
              wnn_dtype_from_name("bogus", &t) == -1,
          "dtype names", NULL);
    check(wnn_op_from_name("matmul") == WNN_OP_MATMUL &&
              wnn_op_from_name("leakyRelu") == WNN_OP_LEAKY_RELU &&
              wnn_op_from_name("leaky_relu") == WNN_OP_LEAKY_RELU &&
              wnn_op_from_name("nope") == -1,
          "op names (camel and snake)", NULL);
    uint32_t s[3] = { 2, 3, 4 };
    wnn_desc d = desc(WNN_FLOAT16, 3, s);
    check(wnn_desc_elements(&d) == 24 && wnn_desc_bytes(&d) == 48,
          "descriptor elements and bytes", NULL);
    check(wnn_f16_to_f32(wnn_f32_to_f16(1.5f)) == 1.5f &&
              wnn_f32_to_f16(1.0f) == 0x3C00,
          "float16 conversion", NULL);
}

/* The signature parsed once by the registry (wnn_op_params_get), the
 * argument names derived from it, and the read-only views of a builder and a
 * graph (webnn_introspect.h). */
static void
test_signatures_and_views(wnn_context *c)
{
    const wnn_op_params *ps = wnn_op_params_get(WNN_OP_LSTM);
    check(ps && ps->n == 5 && ps->n_operands == 3 && ps->seq < 0 && ps->returns_list &&
              ps->p[2].kind == WNN_PARAM_OPERAND &&
              strcmp(ps->p[2].camel, "recurrentWeight") == 0 &&
              strcmp(ps->p[2].snake, "recurrent_weight") == 0 &&
              ps->p[4].kind == WNN_PARAM_VALUE && strcmp(ps->p[4].camel, "hiddenSize") == 0 &&
              ps->p[4].field >= 0 &&
              strcmp(wnn_op_get(WNN_OP_LSTM)->fields->f[ps->p[4].field].camel,
                     "hiddenSize") == 0,
          "signature: lstm", NULL);
    ps = wnn_op_params_get(WNN_OP_CONCAT);
    char nm[48];
    wnn_op_operand_name(WNN_OP_CONCAT, 2, 3, nm, sizeof(nm));
    check(ps && ps->n == 2 && ps->seq == 0 && !ps->returns_list &&
              ps->p[0].kind == WNN_PARAM_SEQUENCE && strcmp(nm, "inputs[2]") == 0,
          "signature: concat", "%s", nm);
    wnn_op_operand_name(WNN_OP_WHERE, 1, 3, nm, sizeof(nm));
    check(strcmp(nm, "trueValue") == 0, "signature: where operand names", "%s", nm);
    check(wnn_op_params_get(WNN_OP_COUNT) == NULL, "signature: out of range", NULL);

    wnn_error err;
    wnn_builder *b = NULL;
    wnn_graph *g = NULL;
    uint32_t n = 6;
    wnn_desc d = desc(WNN_FLOAT32, 1, &n);
    uint32_t ix, iy;
    wnn_no_options o;
    wnn_options_default(WNN_OP_RELU, &o);
    if (wnn_builder_create(c, &b, &err) != WNN_OK ||
        wnn_builder_input(b, "x", &d, &ix, &err) != WNN_OK ||
        add_op(b, WNN_OP_RELU, &ix, 1, &o, "act", &iy, &err) != WNN_OK) {
        check_ok(WNN_ERR, &err, "views: build");
        wnn_builder_free(b);
        return;
    }
    wnn_operand_view v;
    check(wnn_builder_operand_view(b, iy, &v) && v.kind == WNN_ORIGIN_NODE &&
              v.op == WNN_OP_RELU && v.label && strcmp(v.label, "act") == 0,
          "views: builder operand", NULL);
    check(wnn_builder_operand_view(b, ix, &v) && v.kind == WNN_ORIGIN_INPUT &&
              strcmp(v.name, "x") == 0 && !wnn_builder_operand_view(b, 99, &v),
          "views: builder input", NULL);
    const char *names[1] = { "y" };
    if (!check_ok(wnn_builder_build(b, 1, names, &iy, &g, &err), &err, "views: build")) {
        wnn_builder_free(b);
        return;
    }
    wnn_node_view nv;
    check(wnn_graph_num_nodes(g) == 1 && wnn_graph_num_operands(g) == 2 &&
              wnn_graph_node_view(g, 0, &nv) && nv.op == WNN_OP_RELU && nv.n_in == 1 &&
              nv.in[0] == ix && nv.out[0] == iy && strcmp(nv.label, "act") == 0 &&
              !wnn_graph_node_view(g, 1, &nv),
          "views: graph node", NULL);
    check(wnn_graph_plan_length(g) == 1 && wnn_graph_plan_node(g, 0) == 0 &&
              wnn_graph_input_operand(g, 0) == ix && wnn_graph_output_operand(g, 0) == iy,
          "views: plan", NULL);
    uint32_t groups[2] = { 7, 7 };
    check(wnn_graph_fusion_groups(g, groups) == 0 && groups[0] == 0,
          "views: no fusable chain", NULL);
    check(strcmp(wnn_context_backend_name(c), "cpu") == 0 && wnn_context_threads(c) >= 1,
          "views: backend", NULL);
    wnn_graph_release(g);
    wnn_builder_free(b);
}

/* DLPack interop on a context whose tensors are host memory: the core
 * refuses to hand them out as device memory or to copy device memory in,
 * and a refused export leaves no pin (destroy() frees at once). */
static void
test_device_interop_on_host(wnn_context *c)
{
    wnn_error err;
    uint32_t s[1] = { 4 };
    wnn_desc d = desc(WNN_FLOAT32, 1, s);
    wnn_tensor *t = NULL, *k = NULL;
    float v[4] = { 1, 2, 3, 4 }, r[4];
    void *ptr = NULL;
    int dev = 7;
    check(wnn_context_device_id(c) == -1, "interop: CPU device id is -1", NULL);
    if (!check_ok(wnn_tensor_create(c, &d, true, true, NULL, &t, &err), &err,
                  "interop: create tensor")) {
        return;
    }
    check_err(wnn_tensor_export(c, t, &ptr, &dev, &err), &err,
              WNN_NOT_SUPPORTED, "__dlpack__: ", "interop: export refused");
    check(ptr == NULL && dev == 7, "interop: refused export writes nothing",
          NULL);
    check_err(wnn_context_write_device(c, t, v, sizeof(v), &err), &err,
              WNN_NOT_SUPPORTED, "writeTensor: ",
              "interop: device write refused");
    check_err(wnn_context_write_device(c, t, v, 8, &err), &err,
              WNN_TYPE_ERROR, "writeTensor: ",
              "interop: device write of the wrong length is a TypeError");
    check_err(wnn_tensor_create_constant_device(c, &d, v, &k, &err), &err,
              WNN_NOT_SUPPORTED, "createConstantTensor: ",
              "interop: device constant refused");
    check(k == NULL, "interop: no constant tensor made", NULL);
    check_ok(wnn_context_write(c, t, v, sizeof(v), &err), &err,
             "interop: host write still works");
    if (check_ok(wnn_context_read(c, t, r, sizeof(r), &err), &err,
                 "interop: read")) {
        check(r[3] == 4, "interop: values", NULL);
    }
    wnn_tensor_destroy(t);
    check_err(wnn_tensor_export(c, t, &ptr, &dev, &err), &err,
              WNN_TYPE_ERROR, "__dlpack__: ",
              "interop: export of a destroyed tensor is a TypeError");
    wnn_context_flush(c);
    check(t->storage == NULL && atomic_load(&t->pins) == 0,
          "interop: destroy freed the storage (no pin left)", NULL);
    wnn_tensor_release(t);
}

int
main(void)
{
    wnn_error err;
    wnn_context *c = NULL;
    test_misc();
    test_vmath_gelu();
    test_context();
    if (check_ok(wnn_context_create(WNN_DEVICE_CPU, &c, &err), &err,
                 "main: create context")) {
        test_add_broadcast(c);
        test_relu(c);
        test_matmul(c);
        test_gemm(c);
        test_cast(c);
        test_where(c);
        test_chain(c);
        test_validation(c);
        test_invalid_state_after_build(c);
        test_constant_view(c);
        test_dispatch_errors(c);
        test_fusion(c);
        test_fusion_in_scale(c);
        test_plan_fused(c);
        test_signatures_and_views(c);
        test_device_interop_on_host(c);
        wnn_context_release(c);
    }
    test_destroyed_context();
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
