/* test_core.c -- the webnn core tested from C alone (no Python).
 *
 * Built and run by `make test-c`.  Every check prints one line ("ok" or
 * "FAIL" and what it looked at); the last line is "N passed, M failed" and
 * the exit status is non-zero when anything failed.
 *
 * Covered: contexts (create, destroy, lost state), the builder (inputs,
 * constants, operators through wnn_builder_op with options structs, build),
 * tensors and the timeline (create, write, dispatch, read), the values of
 * add (broadcasting), relu, matmul, gemm (transposes, alpha, beta, c), cast
 * (float32 -> int32) and where, validation errors and their messages,
 * InvalidStateError after build, dispatch TypeErrors, a destroyed
 * context, and the epilogue fusion analysis (compiler/fuse.c: which chains
 * it finds for given graphs, and that the fused memory plan keeps a chain's
 * inputs apart from its result). */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webnn_core.h"
#include "webnn_introspect.h"
#include "../compiler/fuse.h"
#include "../cpu/config.h"
#include "../ops/options.h"
#include "../cpu/kernels/elementwise/vmath.h"

/* ---- reporting ---------------------------------------------------------- */
static int n_passed;
static int n_failed;

static bool
check(bool ok, const char *name, const char *fmt, ...)
{
    if (ok) {
        n_passed++;
        printf("ok    %s\n", name);
    } else {
        n_failed++;
        printf("FAIL  %s", name);
        if (fmt) {
            va_list ap;
            va_start(ap, fmt);
            printf(": ");
            vprintf(fmt, ap);
            va_end(ap);
        }
        printf("\n");
    }
    fflush(stdout);
    return ok;
}

/* A call that must succeed; on failure prints the formatted error. */
static bool
check_ok(wnn_status st, const wnn_error *err, const char *name)
{
    char buf[512];
    if (st == WNN_OK) {
        return check(true, name, NULL);
    }
    wnn_error_format(err, buf, sizeof(buf));
    return check(false, name, "unexpected error: %s", buf);
}

static const char *
kind_name(wnn_error_kind k)
{
    switch (k) {
    case WNN_NO_ERROR: return "none";
    case WNN_TYPE_ERROR: return "TypeError";
    case WNN_INVALID_STATE: return "InvalidStateError";
    case WNN_DATA_ERROR: return "DataError";
    case WNN_NOT_SUPPORTED: return "NotSupportedError";
    case WNN_OPERATION_ERROR: return "OperationError";
    case WNN_UNKNOWN_ERROR: return "UnknownError";
    case WNN_ABORT_ERROR: return "AbortError";
    case WNN_OUT_OF_MEMORY: return "OutOfMemory";
    }
    return "?";
}

/* A call that must fail with `kind`; when `prefix` is not NULL the
 * formatted message must start with it. */
static bool
check_err(wnn_status st, const wnn_error *err, wnn_error_kind kind,
          const char *prefix, const char *name)
{
    char buf[512];
    if (st == WNN_OK) {
        return check(false, name, "succeeded, expected %s", kind_name(kind));
    }
    wnn_error_format(err, buf, sizeof(buf));
    if (err->kind != kind) {
        return check(false, name, "got %s (%s), expected %s",
                     kind_name(err->kind), buf, kind_name(kind));
    }
    if (prefix && strncmp(buf, prefix, strlen(prefix)) != 0) {
        return check(false, name, "message \"%s\" does not start with \"%s\"",
                     buf, prefix);
    }
    return check(true, name, NULL);
}

/* ---- helpers ------------------------------------------------------------ */
static wnn_desc
desc(wnn_dtype t, uint32_t rank, const uint32_t *shape)
{
    wnn_desc d;
    memset(&d, 0, sizeof(d));
    d.dtype = t;
    d.rank = rank;
    for (uint32_t i = 0; i < rank; i++) {
        d.shape[i] = shape[i];
    }
    return d;
}

/* Deterministic values in [-1, 1). */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static float
frand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
}

static void
fill_random(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = frand();
    }
}

/* One operator node with options (defaults, then `set` may change them). */
static wnn_status
add_op(wnn_builder *b, wnn_op op, const uint32_t *in, uint32_t n_in,
       const void *options, const char *label, uint32_t *out, wnn_error *err)
{
    uint32_t n_out = 0;
    return wnn_builder_op(b, op, in, n_in, options, label, out, 1, &n_out,
                          err);
}

/* Run a built graph once through the timeline: create tensors, write the
 * inputs, dispatch, read the single output.  Returns the status of the first
 * failing step. */
static wnn_status
run_graph(wnn_context *c, wnn_graph *g, uint32_t n_in,
          const char *const *names, const void *const *data,
          const char *out_name, void *out, wnn_error *err)
{
    wnn_tensor *tin[8] = { NULL };
    wnn_tensor *tout = NULL;
    wnn_status st = WNN_OK;
    const wnn_desc *od = NULL;
    for (uint32_t i = 0; i < wnn_graph_num_outputs(g); i++) {
        if (strcmp(wnn_graph_output_name(g, i), out_name) == 0) {
            od = wnn_graph_output_desc(g, i);
        }
    }
    if (!od) {
        fprintf(stderr, "run_graph: no output '%s'\n", out_name);
        return WNN_ERR;
    }
    for (uint32_t i = 0; i < n_in && st == WNN_OK; i++) {
        const wnn_desc *d = NULL;
        for (uint32_t j = 0; j < wnn_graph_num_inputs(g); j++) {
            if (strcmp(wnn_graph_input_name(g, j), names[i]) == 0) {
                d = wnn_graph_input_desc(g, j);
            }
        }
        if (!d) {
            fprintf(stderr, "run_graph: no input '%s'\n", names[i]);
            st = WNN_ERR;
            break;
        }
        st = wnn_tensor_create(c, d, false, true, NULL, &tin[i], err);
        if (st == WNN_OK) {
            st = wnn_context_write(c, tin[i], data[i], wnn_desc_bytes(d), err);
        }
    }
    if (st == WNN_OK) {
        st = wnn_tensor_create(c, od, true, false, NULL, &tout, err);
    }
    if (st == WNN_OK) {
        const char *on[1] = { out_name };
        st = wnn_context_dispatch(c, g, n_in, names, tin, 1, on, &tout, err);
    }
    if (st == WNN_OK) {
        st = wnn_context_read(c, tout, out, wnn_desc_bytes(od), err);
    }
    for (uint32_t i = 0; i < n_in; i++) {
        if (tin[i]) {
            wnn_tensor_destroy(tin[i]);
            wnn_tensor_release(tin[i]);
        }
    }
    if (tout) {
        wnn_tensor_destroy(tout);
        wnn_tensor_release(tout);
    }
    return st;
}

static bool
close_enough(double got, double want, double rtol, double atol)
{
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* Index of the first element of `got` that differs from `want`, or -1. */
static long
first_mismatch(const float *got, const double *want, size_t n, double rtol,
               double atol)
{
    for (size_t i = 0; i < n; i++) {
        if (!close_enough(got[i], want[i], rtol, atol)) {
            return (long)i;
        }
    }
    return -1;
}

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

/* ---- validation --------------------------------------------------------- */
static void
test_validation(wnn_context *c)
{
    wnn_error err;
    wnn_builder *b = NULL;
    uint32_t s23[2] = { 2, 3 }, s4[1] = { 4 }, s34[2] = { 3, 4 };
    wnn_desc f23 = desc(WNN_FLOAT32, 2, s23), i23 = desc(WNN_INT32, 2, s23);
    wnn_desc f4 = desc(WNN_FLOAT32, 1, s4), f34 = desc(WNN_FLOAT32, 2, s34);
    uint32_t x, xi, x4, x34, out = 0, ids[2];
    wnn_no_options o;
    wnn_options_default(WNN_OP_ADD, &o);
    if (!check_ok(wnn_builder_create(c, &b, &err), &err,
                  "validation: builder") ||
        !check_ok(wnn_builder_input(b, "x", &f23, &x, &err), &err,
                  "validation: input x") ||
        !check_ok(wnn_builder_input(b, "xi", &i23, &xi, &err), &err,
                  "validation: input xi") ||
        !check_ok(wnn_builder_input(b, "x4", &f4, &x4, &err), &err,
                  "validation: input x4") ||
        !check_ok(wnn_builder_input(b, "x34", &f34, &x34, &err), &err,
                  "validation: input x34")) {
        wnn_builder_free(b);
        return;
    }
    /* add: data type mismatch, the exact message of the README */
    ids[0] = x;
    ids[1] = xi;
    wnn_error_clear(&err);
    wnn_status st = add_op(b, WNN_OP_ADD, ids, 2, &o, "L", &out, &err);
    check_err(st, &err, WNN_TYPE_ERROR,
              "add (label 'L'): argument 'b': data type int32 does not match "
              "a's data type float32",
              "validation: add dtype mismatch names op, label, argument");
    check(strcmp(err.op, "add") == 0 && strcmp(err.label, "L") == 0 &&
              strcmp(err.argument, "b") == 0,
          "validation: error fields op/label/argument", "'%s' '%s' '%s'",
          err.op, err.label, err.argument);
    /* add: shapes that do not broadcast */
    ids[1] = x4;
    st = add_op(b, WNN_OP_ADD, ids, 2, &o, "L", &out, &err);
    check_err(st, &err, WNN_TYPE_ERROR, "add (label 'L'): ",
              "validation: add [2,3] + [4] does not broadcast");
    /* wrong number of operands */
    st = add_op(b, WNN_OP_ADD, ids, 1, &o, "L", &out, &err);
    check_err(st, &err, WNN_TYPE_ERROR, "add (label 'L'): ",
              "validation: add with one operand");
    /* an operand id from nowhere */
    ids[1] = 9999;
    st = add_op(b, WNN_OP_ADD, ids, 2, &o, "L", &out, &err);
    check_err(st, &err, WNN_TYPE_ERROR, "add (label 'L'): ",
              "validation: add with an unknown operand");
    /* matmul: inner dimensions, and a data type the limits exclude */
    ids[0] = x;
    ids[1] = x;
    st = add_op(b, WNN_OP_MATMUL, ids, 2, &o, "mm", &out, &err);
    check_err(st, &err, WNN_TYPE_ERROR,
              "matmul (label 'mm'): argument 'b': ",
              "validation: matmul [2,3] @ [2,3]");
    ids[0] = xi;
    ids[1] = xi;
    st = add_op(b, WNN_OP_MATMUL, ids, 2, &o, "mm", &out, &err);
    check_err(st, &err, WNN_TYPE_ERROR,
              "matmul (label 'mm'): argument 'a': data type int32 is not "
              "supported",
              "validation: matmul int32 not allowed by limits");
    /* matmul rank limit: rank 1 */
    ids[0] = x4;
    ids[1] = x4;
    st = add_op(b, WNN_OP_MATMUL, ids, 2, &o, "mm", &out, &err);
    check_err(st, &err, WNN_TYPE_ERROR, "matmul (label 'mm'): argument 'a': ",
              "validation: matmul rank 1 not allowed");
    /* gemm: options.c that does not broadcast */
    {
        wnn_gemm_options g;
        wnn_options_default(WNN_OP_GEMM, &g);
        ids[0] = x;   /* [2,3] */
        ids[1] = x34; /* [3,4] */
        g.c = x + 1;  /* [2,3] is not broadcastable to [2,4] */
        st = add_op(b, WNN_OP_GEMM, ids, 2, &g, "G", &out, &err);
        check_err(st, &err, WNN_TYPE_ERROR,
                  "gemm (label 'G'): argument 'options.c': ",
                  "validation: gemm options.c shape");
        g.c = 0;
        g.a_transpose = true; /* [3,2] @ [3,4] */
        st = add_op(b, WNN_OP_GEMM, ids, 2, &g, "G", &out, &err);
        check_err(st, &err, WNN_TYPE_ERROR, "gemm (label 'G'): argument 'b': ",
                  "validation: gemm aTranspose mismatch");
    }
    /* where: condition must be uint8 */
    {
        uint32_t w[3] = { x, x, x };
        wnn_no_options wo;
        wnn_options_default(WNN_OP_WHERE, &wo);
        st = add_op(b, WNN_OP_WHERE, w, 3, &wo, "W", &out, &err);
        check_err(st, &err, WNN_TYPE_ERROR,
                  "where (label 'W'): argument 'condition': ",
                  "validation: where float32 condition");
    }
    /* no label: "add: ..." */
    ids[0] = x;
    ids[1] = xi;
    st = add_op(b, WNN_OP_ADD, ids, 2, &o, NULL, &out, &err);
    check_err(st, &err, WNN_TYPE_ERROR, "add: argument 'b': ",
              "validation: message without a label");
    /* inputs */
    uint32_t bad_shape[2] = { 2, 0 };
    wnn_desc d0 = desc(WNN_FLOAT32, 2, bad_shape);
    check_err(wnn_builder_input(b, "x", &f23, &out, &err), &err,
              WNN_TYPE_ERROR, "input: argument 'name': ",
              "validation: duplicate input name");
    check_err(wnn_builder_input(b, "", &f23, &out, &err), &err,
              WNN_TYPE_ERROR, "input: ", "validation: empty input name");
    check_err(wnn_builder_input(b, "z", &d0, &out, &err), &err,
              WNN_TYPE_ERROR, "input: argument 'descriptor': ",
              "validation: zero dimension");
    float buf[6] = { 0 };
    check_err(wnn_builder_constant(b, &f23, buf, 5 * sizeof(float), &out,
                                   &err),
              &err, WNN_TYPE_ERROR, "constant: ",
              "validation: constant byte length");
    /* build: an input is not an output; no outputs */
    const char *names[1] = { "y" };
    check_err(wnn_builder_build(b, 1, names, &x, NULL, &err), &err,
              WNN_TYPE_ERROR, "build: ", "validation: build input as output");
    check_err(wnn_builder_build(b, 0, names, &x, NULL, &err), &err,
              WNN_TYPE_ERROR, "build: ", "validation: build without outputs");
    check(!wnn_builder_has_built(b), "validation: failed builds do not build",
          NULL);
    wnn_builder_free(b);
}

/* ---- constants viewed, not copied (wnn_builder_constant_view) ------------ */
static int n_released;
static void
count_release(void *owner)
{
    n_released += *(int *)owner;
}

static void
test_constant_view(wnn_context *c)
{
    wnn_error err;
    wnn_builder *b = NULL;
    wnn_graph *g = NULL;
    const uint32_t s[1] = { 4 };
    wnn_desc d = desc(WNN_FLOAT32, 1, s);
    float k[4] = { 1.5f, -2.0f, 4.0f, 0.25f }, unused[4] = { 0 };
    int one = 1, ten = 10;
    uint32_t x, ik, iu, y;
    wnn_no_options o;
    wnn_options_default(WNN_OP_ADD, &o);
    n_released = 0;
    if (!check_ok(wnn_builder_create(c, &b, &err), &err, "view: builder")) {
        return;
    }
    check_err(wnn_builder_constant_view(b, &d, (char *)k + 1, sizeof(k),
                                        count_release, &one, &ik, &err),
              &err, WNN_TYPE_ERROR, "constant: ", "view: misaligned data");
    bool ok = wnn_builder_input(b, "x", &d, &x, &err) == WNN_OK &&
              wnn_builder_constant_view(b, &d, k, sizeof(k), count_release,
                                        &one, &ik, &err) == WNN_OK &&
              wnn_builder_constant_view(b, &d, unused, sizeof(unused),
                                        count_release, &ten, &iu, &err) ==
                  WNN_OK;
    uint32_t in[2] = { x, ik };
    ok = ok && add_op(b, WNN_OP_ADD, in, 2, &o, NULL, &y, &err) == WNN_OK;
    const char *names[1] = { "y" };
    if (!check_ok(ok ? WNN_OK : WNN_ERR, &err, "view: nodes") ||
        !check_ok(wnn_builder_build(b, 1, names, &y, &g, &err), &err,
                  "view: build")) {
        wnn_builder_free(b);
        return;
    }
    check(n_released == 10, "view: an unreachable viewed constant is given "
          "back at build", "released %d", n_released);
    wnn_builder_free(b);
    check(n_released == 10, "view: the graph keeps its viewed constant",
          "released %d", n_released);
    float xv[4] = { 1, 2, 3, 4 }, yv[4];
    double want[4];
    for (int i = 0; i < 4; i++) {
        want[i] = (double)xv[i] + k[i];
    }
    const char *in_names[1] = { "x" };
    const void *in_data[1] = { xv };
    if (check_ok(run_graph(c, g, 1, in_names, in_data, "y", yv, &err), &err,
                 "view: dispatch and read")) {
        long bad = first_mismatch(yv, want, 4, 0, 0);
        check(bad < 0, "view: values", "y[%ld] wrong", bad);
    }
    wnn_graph_release(g);
    check(n_released == 11, "view: the graph gives its constant back once",
          "released %d", n_released);
}

/* ---- InvalidStateError after build -------------------------------------- */
static void
test_invalid_state_after_build(wnn_context *c)
{
    wnn_error err;
    wnn_builder *b = NULL;
    wnn_graph *g = NULL, *g2 = NULL;
    uint32_t s[1] = { 3 }, x, y, out;
    wnn_desc d = desc(WNN_FLOAT32, 1, s);
    wnn_no_options o;
    wnn_options_default(WNN_OP_RELU, &o);
    const char *names[1] = { "y" };
    if (wnn_builder_create(c, &b, &err) != WNN_OK ||
        wnn_builder_input(b, "x", &d, &x, &err) != WNN_OK ||
        add_op(b, WNN_OP_RELU, &x, 1, &o, NULL, &y, &err) != WNN_OK ||
        wnn_builder_build(b, 1, names, &y, &g, &err) != WNN_OK) {
        check_ok(WNN_ERR, &err, "after build: first build");
        wnn_builder_free(b);
        return;
    }
    check_err(wnn_builder_input(b, "x2", &d, &out, &err), &err,
              WNN_INVALID_STATE, "input: ", "after build: input()");
    float v[3] = { 0 };
    check_err(wnn_builder_constant(b, &d, v, sizeof(v), &out, &err), &err,
              WNN_INVALID_STATE, "constant: ", "after build: constant()");
    check_err(add_op(b, WNN_OP_RELU, &x, 1, &o, "late", &out, &err), &err,
              WNN_INVALID_STATE, "relu (label 'late'): ",
              "after build: relu() names op and label");
    check_err(wnn_builder_build(b, 1, names, &y, &g2, &err), &err,
              WNN_INVALID_STATE, "build: ", "after build: build() again");
    /* a destroyed graph cannot be dispatched */
    wnn_tensor *tx = NULL, *ty = NULL;
    if (wnn_tensor_create(c, &d, false, true, NULL, &tx, &err) == WNN_OK &&
        wnn_tensor_create(c, &d, true, false, NULL, &ty, &err) == WNN_OK) {
        const char *in[1] = { "x" };
        wnn_graph_destroy(g);
        check_err(wnn_context_dispatch(c, g, 1, in, &tx, 1, names, &ty, &err),
                  &err, WNN_INVALID_STATE, "dispatch: ",
                  "after build: dispatch of a destroyed graph");
    }
    if (tx) {
        wnn_tensor_release(tx);
    }
    if (ty) {
        wnn_tensor_release(ty);
    }
    wnn_graph_release(g);
    wnn_builder_free(b);
}

/* ---- dispatch TypeErrors ------------------------------------------------ */
static void
test_dispatch_errors(wnn_context *c)
{
    wnn_error err;
    wnn_builder *b = NULL;
    wnn_graph *g = NULL;
    uint32_t s[1] = { 4 }, s5[1] = { 5 }, ia, ib, io;
    wnn_desc d = desc(WNN_FLOAT32, 1, s), d5 = desc(WNN_FLOAT32, 1, s5);
    wnn_desc di = desc(WNN_INT32, 1, s);
    wnn_no_options o;
    wnn_options_default(WNN_OP_ADD, &o);
    const char *out_names[1] = { "y" };
    uint32_t ids[2];
    if (wnn_builder_create(c, &b, &err) != WNN_OK ||
        wnn_builder_input(b, "a", &d, &ia, &err) != WNN_OK ||
        wnn_builder_input(b, "b", &d, &ib, &err) != WNN_OK) {
        check_ok(WNN_ERR, &err, "dispatch errors: build");
        wnn_builder_free(b);
        return;
    }
    ids[0] = ia;
    ids[1] = ib;
    if (add_op(b, WNN_OP_ADD, ids, 2, &o, NULL, &io, &err) != WNN_OK ||
        wnn_builder_build(b, 1, out_names, &io, &g, &err) != WNN_OK) {
        check_ok(WNN_ERR, &err, "dispatch errors: build");
        wnn_builder_free(b);
        return;
    }
    wnn_tensor *ta = NULL, *tb = NULL, *ty = NULL, *t5 = NULL, *ti = NULL;
    wnn_tensor *tc = NULL;
    float ones[4] = { 1, 1, 1, 1 };
    wnn_tensor **slots[5] = { &ta, &tb, &ty, &t5, &ti };
    const wnn_desc *descs[5] = { &d, &d, &d, &d5, &di };
    bool ok = true;
    for (int i = 0; i < 5 && ok; i++) {
        ok = wnn_tensor_create(c, descs[i], true, true, NULL, slots[i],
                               &err) == WNN_OK;
    }
    ok = ok && wnn_tensor_create(c, &d, false, false, ones, &tc, &err) ==
                   WNN_OK;
    if (!check_ok(ok ? WNN_OK : WNN_ERR, &err, "dispatch errors: tensors")) {
        goto done;
    }
    check(wnn_tensor_is_constant(tc) && !wnn_tensor_readable(tc) &&
              !wnn_tensor_writable(tc),
          "tensors: constant tensor is neither readable nor writable", NULL);
    const char *in_names[2] = { "a", "b" };
    wnn_tensor *in[2];
    /* the same tensor twice among the inputs, and as input and output */
    in[0] = ta;
    in[1] = ta;
    check_err(wnn_context_dispatch(c, g, 2, in_names, in, 1, out_names, &ty,
                                   &err),
              &err, WNN_TYPE_ERROR, "dispatch: argument 'inputs': ",
              "dispatch: same tensor as two inputs");
    in[1] = tb;
    check_err(wnn_context_dispatch(c, g, 2, in_names, in, 1, out_names, &ta,
                                   &err),
              &err, WNN_TYPE_ERROR, "dispatch: argument 'outputs': ",
              "dispatch: same tensor as input and output");
    /* regression: one name given twice (count right) crashed the dispatch */
    {
        const char *twice[2] = { "a", "a" };
        check_err(wnn_context_dispatch(c, g, 2, twice, in, 1, out_names, &ty,
                                       &err),
                  &err, WNN_TYPE_ERROR, "dispatch: argument 'inputs': ",
                  "dispatch: an input name given twice is a TypeError");
    }
    /* wrong descriptor: shape, then data type */
    in[1] = t5;
    check_err(wnn_context_dispatch(c, g, 2, in_names, in, 1, out_names, &ty,
                                   &err),
              &err, WNN_TYPE_ERROR, "dispatch: argument 'inputs': tensor 'b'",
              "dispatch: input of the wrong shape");
    in[1] = tb;
    check_err(wnn_context_dispatch(c, g, 2, in_names, in, 1, out_names, &ti,
                                   &err),
              &err, WNN_TYPE_ERROR, "dispatch: argument 'outputs': tensor 'y'",
              "dispatch: output of the wrong data type");
    /* missing input, unknown name, constant tensor */
    check_err(wnn_context_dispatch(c, g, 1, in_names, in, 1, out_names, &ty,
                                   &err),
              &err, WNN_TYPE_ERROR, "dispatch: argument 'inputs': ",
              "dispatch: one input missing");
    const char *bad_names[2] = { "a", "nope" };
    check_err(wnn_context_dispatch(c, g, 2, bad_names, in, 1, out_names, &ty,
                                   &err),
              &err, WNN_TYPE_ERROR, "dispatch: argument 'inputs': ",
              "dispatch: unknown input name");
    in[1] = tc;
    check_err(wnn_context_dispatch(c, g, 2, in_names, in, 1, out_names, &ty,
                                   &err),
              &err, WNN_TYPE_ERROR, "dispatch: argument 'inputs': ",
              "dispatch: constant tensor as input");
    /* writes and reads: byte lengths and flags */
    check_err(wnn_context_write(c, ta, ones, 3 * sizeof(float), &err), &err,
              WNN_TYPE_ERROR, "writeTensor: argument 'inputData': ",
              "tensors: write of the wrong byte length");
    check_err(wnn_context_write(c, tc, ones, sizeof(ones), &err), &err,
              WNN_TYPE_ERROR, "writeTensor: ",
              "tensors: write to a constant tensor");
    float r[4];
    check_err(wnn_context_read(c, tc, r, sizeof(r), &err), &err,
              WNN_TYPE_ERROR, "readTensor: ",
              "tensors: read of a non-readable tensor");
    /* the valid dispatch after all the failed ones still works */
    in[0] = ta;
    in[1] = tb;
    float av[4] = { 1, 2, 3, 4 }, bv[4] = { 10, 20, 30, 40 };
    ok = wnn_context_write(c, ta, av, sizeof(av), &err) == WNN_OK &&
         wnn_context_write(c, tb, bv, sizeof(bv), &err) == WNN_OK &&
         wnn_context_dispatch(c, g, 2, in_names, in, 1, out_names, &ty,
                              &err) == WNN_OK &&
         wnn_context_read(c, ty, r, sizeof(r), &err) == WNN_OK;
    if (check_ok(ok ? WNN_OK : WNN_ERR, &err, "dispatch: valid dispatch")) {
        check(r[0] == 11 && r[1] == 22 && r[2] == 33 && r[3] == 44,
              "dispatch: values after failed dispatches", "%g %g %g %g",
              r[0], r[1], r[2], r[3]);
    }
    /* a destroyed tensor: TypeError on dispatch and on read */
    wnn_tensor_destroy(tb);
    check_err(wnn_context_dispatch(c, g, 2, in_names, in, 1, out_names, &ty,
                                   &err),
              &err, WNN_TYPE_ERROR, "dispatch: ",
              "dispatch: destroyed input tensor");
    check_err(wnn_context_read(c, tb, r, sizeof(r), &err), &err,
              WNN_TYPE_ERROR, "readTensor: ",
              "tensors: read of a destroyed tensor");
done:
    if (ta) {
        wnn_tensor_release(ta);
    }
    if (tb) {
        wnn_tensor_release(tb);
    }
    if (ty) {
        wnn_tensor_release(ty);
    }
    if (t5) {
        wnn_tensor_release(t5);
    }
    if (ti) {
        wnn_tensor_release(ti);
    }
    if (tc) {
        wnn_tensor_release(tc);
    }
    wnn_graph_release(g);
    wnn_builder_free(b);
}

/* ---- a destroyed context ------------------------------------------------ */
static void
test_destroyed_context(void)
{
    wnn_error err;
    wnn_context *c = NULL;
    wnn_builder *b = NULL, *b2 = NULL, *b3 = NULL;
    wnn_graph *g = NULL;
    wnn_tensor *tx = NULL, *ty = NULL, *tz = NULL;
    uint32_t s[1] = { 4 }, x, y, out;
    wnn_desc d = desc(WNN_FLOAT32, 1, s);
    wnn_no_options o;
    wnn_options_default(WNN_OP_RELU, &o);
    const char *in_names[1] = { "x" }, *out_names[1] = { "y" };
    if (!check_ok(wnn_context_create(WNN_DEVICE_CPU, &c, &err), &err,
                  "lost: create context")) {
        return;
    }
    float v[4] = { -1, 2, -3, 4 }, r[4];
    bool ok = wnn_builder_create(c, &b, &err) == WNN_OK &&
              wnn_builder_input(b, "x", &d, &x, &err) == WNN_OK &&
              add_op(b, WNN_OP_RELU, &x, 1, &o, NULL, &y, &err) == WNN_OK &&
              wnn_builder_build(b, 1, out_names, &y, &g, &err) == WNN_OK &&
              wnn_builder_create(c, &b2, &err) == WNN_OK &&
              wnn_tensor_create(c, &d, true, true, NULL, &tx, &err) ==
                  WNN_OK &&
              wnn_tensor_create(c, &d, true, true, NULL, &ty, &err) ==
                  WNN_OK &&
              wnn_context_write(c, tx, v, sizeof(v), &err) == WNN_OK &&
              wnn_context_dispatch(c, g, 1, in_names, &tx, 1, out_names, &ty,
                                   &err) == WNN_OK &&
              wnn_context_read(c, ty, r, sizeof(r), &err) == WNN_OK;
    if (check_ok(ok ? WNN_OK : WNN_ERR, &err, "lost: work before destroy")) {
        check(r[0] == 0 && r[1] == 2 && r[2] == 0 && r[3] == 4,
              "lost: values before destroy", NULL);
    }
    wnn_context_destroy(c, "gone");
    check(wnn_context_is_lost(c), "lost: is_lost", NULL);
    if (ty) {
        check_err(wnn_context_read(c, ty, r, sizeof(r), &err), &err,
                  WNN_INVALID_STATE, "readTensor: ",
                  "lost: read after destroy is InvalidStateError");
    }
    if (tx) {
        check_err(wnn_context_write(c, tx, v, sizeof(v), &err), &err,
                  WNN_INVALID_STATE, "writeTensor: ",
                  "lost: write after destroy is InvalidStateError");
    }
    if (g && tx && ty) {
        check_err(wnn_context_dispatch(c, g, 1, in_names, &tx, 1, out_names,
                                       &ty, &err),
                  &err, WNN_INVALID_STATE, "dispatch: ",
                  "lost: dispatch after destroy is InvalidStateError");
    }
    check_err(wnn_tensor_create(c, &d, true, true, NULL, &tz, &err), &err,
              WNN_INVALID_STATE, "createTensor: ",
              "lost: createTensor after destroy");
    check_err(wnn_builder_create(c, &b3, &err), &err, WNN_INVALID_STATE,
              "MLGraphBuilder: ", "lost: new builder after destroy");
    if (b2) {
        check_err(wnn_builder_input(b2, "x", &d, &out, &err), &err,
                  WNN_INVALID_STATE, "input: ",
                  "lost: old builder's input() after destroy");
    }
    if (tx) {
        wnn_tensor_destroy(tx);
        wnn_tensor_release(tx);
    }
    if (ty) {
        wnn_tensor_release(ty);
    }
    wnn_graph_release(g);
    wnn_builder_free(b);
    wnn_builder_free(b2);
    wnn_builder_free(b3); /* NULL unless the check above failed */
    wnn_context_release(c);
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

/* ---- epilogue fusion analysis (compiler/fuse.c) ----------------------------- */
/* A tiny graph language for the fusion cases: operands by index (inputs
 * first), nodes appended in order. */
typedef struct fx {
    wnn_builder *b;
    uint32_t id[16];
    uint32_t n;
    bool ok;
    wnn_error err;
} fx;

static uint32_t
fx_input(fx *f, uint32_t rank, const uint32_t *shape)
{
    char name[8];
    snprintf(name, sizeof(name), "i%u", f->n);
    wnn_desc d = desc(WNN_FLOAT32, rank, shape);
    f->ok = f->ok && wnn_builder_input(f->b, name, &d, &f->id[f->n], &f->err) == WNN_OK;
    return f->n++;
}

static uint32_t
fx_op(fx *f, wnn_op op, uint32_t a, uint32_t b2, int n_in, int nhwc)
{
    union {
        wnn_conv2d_options conv;
        wnn_no_options none;
        wnn_gemm_options gemm;
        wnn_clamp_options clamp;
    } o;
    wnn_options_default(op, &o);
    if (op == WNN_OP_CONV2D) {
        o.conv.input_layout = nhwc ? WNN_LAYOUT_NHWC : WNN_LAYOUT_NCHW;
    }
    uint32_t in[2] = { f->id[a], f->id[b2] };
    f->ok = f->ok && add_op(f->b, op, in, (uint32_t)n_in, &o, NULL, &f->id[f->n],
                            &f->err) == WNN_OK;
    return f->n++;
}

/* builds with the operands `outs` as outputs and checks the chains found:
 * want_chains, and for the first one the producer's op, the add kind, the
 * channel axis, whether an activation is part of it, and the result */
static void
fx_check(wnn_context *c, fx *f, const char *what, uint32_t n_outs, const uint32_t *outs,
         uint32_t want_chains, wnn_op prod, wnn_epilogue_add add, uint32_t axis,
         bool act, uint32_t result)
{
    wnn_graph *g = NULL;
    const char *names[4] = { "o0", "o1", "o2", "o3" };
    uint32_t ids[4];
    for (uint32_t i = 0; i < n_outs; i++) {
        ids[i] = f->id[outs[i]];
    }
    if (!f->ok || wnn_builder_build(f->b, n_outs, names, ids, &g, &f->err) != WNN_OK) {
        check_ok(WNN_ERR, &f->err, what);
        wnn_builder_free(f->b);
        return;
    }
    wnn_fusion fu;
    wnn_error err;
    if (check_ok(wnn_fusion_find(g, WNN_FUSE_EPILOGUE, &fu, &err), &err, what)) {
        bool ok = fu.n_chains == want_chains;
        if (ok && want_chains) {
            const wnn_epilogue *e = &fu.chains[0];
            ok = g->ir->nodes[e->producer].op == prod && e->add_kind == add &&
                 (add == WNN_EPI_ADD_NONE) == (e->add == WNN_NO_NODE) &&
                 e->channel_axis == axis && (e->act != WNN_NO_NODE) == act &&
                 e->result == f->id[result] && fu.chain_of[e->producer] == 1 &&
                 fu.chain_of[e->last] == 1;
        }
        check(ok, what, "%u chains", fu.n_chains);
        /* the fused plan keeps the chain's inputs apart from its result */
        if (ok && want_chains) {
            wnn_plan p;
            memset(&p, 0, sizeof(p));
            p.order = malloc(sizeof(uint32_t) * g->plan.n_order);
            memcpy(p.order, g->plan.order, sizeof(uint32_t) * g->plan.n_order);
            p.n_order = g->plan.n_order;
            bool pok = wnn_plan_make_fused(g, &p, &fu, &err) == WNN_OK;
            const wnn_epilogue *e = &fu.chains[0];
            const wnn_node *pn = &g->ir->nodes[e->producer];
            const wnn_slot *r = &p.slots[e->result];
            for (uint32_t j = 0; pok && j < pn->n_in; j++) {
                const wnn_slot *s = &p.slots[pn->in[j]];
                if (r->kind == WNN_SLOT_ARENA && s->kind == WNN_SLOT_ARENA) {
                    uint64_t rb = wnn_desc_bytes(&g->ir->operands[e->result].desc);
                    uint64_t sb = wnn_desc_bytes(&g->ir->operands[pn->in[j]].desc);
                    pok = r->offset + rb <= s->offset || s->offset + sb <= r->offset;
                }
            }
            check(pok, what, "fused plan: the chain's result overlaps an input");
            wnn_plan_free(&p);
        }
        wnn_fusion_free(&fu);
    }
    wnn_graph_release(g);
    wnn_builder_free(f->b);
}

static bool
fx_begin(wnn_context *c, fx *f)
{
    memset(f, 0, sizeof(*f));
    f->ok = wnn_builder_create(c, &f->b, &f->err) == WNN_OK;
    return f->ok;
}

static void
test_fusion(wnn_context *c)
{
    fx f;
    const uint32_t sx[4] = { 1, 3, 6, 6 }, sw[4] = { 4, 3, 3, 3 }, sz[4] = { 1, 4, 4, 4 };
    const uint32_t s4[1] = { 4 }, sa[2] = { 5, 8 }, sb[2] = { 8, 6 }, s6[1] = { 6 };
    const uint32_t sxh[4] = { 1, 7, 6, 3 }, sxw[4] = { 1, 3, 7, 6 };
    const uint32_t sc41[3] = { 4, 1, 1 };
    uint32_t x, w, z, y, s, r, a, bm, m, t, outs[2];

    /* conv -> add residual -> relu: one chain */
    if (fx_begin(c, &f)) {
        x = fx_input(&f, 4, sx), w = fx_input(&f, 4, sw), z = fx_input(&f, 4, sz);
        y = fx_op(&f, WNN_OP_CONV2D, x, w, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, y, z, 2, 0);
        r = fx_op(&f, WNN_OP_RELU, s, 0, 1, 0);
        outs[0] = r;
        fx_check(c, &f, "fusion: conv + residual + relu", 1, outs, 1, WNN_OP_CONV2D,
                 WNN_EPI_ADD_RESIDUAL, 1, true, r);
    }
    /* the same with the conv's output also a graph output: nothing */
    if (fx_begin(c, &f)) {
        x = fx_input(&f, 4, sx), w = fx_input(&f, 4, sw), z = fx_input(&f, 4, sz);
        y = fx_op(&f, WNN_OP_CONV2D, x, w, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, y, z, 2, 0);
        r = fx_op(&f, WNN_OP_RELU, s, 0, 1, 0);
        outs[0] = r, outs[1] = y;
        fx_check(c, &f, "fusion: an intermediate that is an output", 2, outs, 0, 0, 0, 0,
                 false, 0);
    }
    /* the add's result is an output: conv + add only */
    if (fx_begin(c, &f)) {
        x = fx_input(&f, 4, sx), w = fx_input(&f, 4, sw), z = fx_input(&f, 4, sz);
        y = fx_op(&f, WNN_OP_CONV2D, x, w, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, z, y, 2, 0);
        r = fx_op(&f, WNN_OP_SIGMOID, s, 0, 1, 0);
        outs[0] = r, outs[1] = s;
        fx_check(c, &f, "fusion: the add's result is an output", 2, outs, 1, WNN_OP_CONV2D,
                 WNN_EPI_ADD_RESIDUAL, 1, false, s);
    }
    /* per-channel bias [4, 1, 1] on nchw, then clamp */
    if (fx_begin(c, &f)) {
        x = fx_input(&f, 4, sx), w = fx_input(&f, 4, sw), z = fx_input(&f, 3, sc41);
        y = fx_op(&f, WNN_OP_CONV2D, x, w, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, z, y, 2, 0);
        r = fx_op(&f, WNN_OP_CLAMP, s, 0, 1, 0);
        outs[0] = r;
        fx_check(c, &f, "fusion: conv + channel bias + clamp", 1, outs, 1, WNN_OP_CONV2D,
                 WNN_EPI_ADD_CHANNEL, 1, true, r);
    }
    /* nhwc: the channel axis is 3 ([4] broadcasts along it) */
    if (fx_begin(c, &f)) {
        x = fx_input(&f, 4, sxh), w = fx_input(&f, 4, sw), z = fx_input(&f, 1, s4);
        y = fx_op(&f, WNN_OP_CONV2D, x, w, 2, 1);
        s = fx_op(&f, WNN_OP_ADD, y, z, 2, 0);
        outs[0] = s;
        fx_check(c, &f, "fusion: nhwc conv + channel bias", 1, outs, 1, WNN_OP_CONV2D,
                 WNN_EPI_ADD_CHANNEL, 3, false, s);
    }
    /* nchw with [4] broadcasting along the width, not the channels: the add
     * stays, and the relu after it is not next to the conv */
    if (fx_begin(c, &f)) {
        x = fx_input(&f, 4, sxw), w = fx_input(&f, 4, sw), z = fx_input(&f, 1, s4);
        y = fx_op(&f, WNN_OP_CONV2D, x, w, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, y, z, 2, 0);
        r = fx_op(&f, WNN_OP_RELU, s, 0, 1, 0);
        outs[0] = r;
        fx_check(c, &f, "fusion: a bias along the width is no channel bias", 1, outs, 0, 0,
                 0, 0, false, 0);
    }
    /* matmul + bias [6] (first operand of the add) + sigmoid */
    if (fx_begin(c, &f)) {
        a = fx_input(&f, 2, sa), bm = fx_input(&f, 2, sb), z = fx_input(&f, 1, s6);
        m = fx_op(&f, WNN_OP_MATMUL, a, bm, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, z, m, 2, 0);
        t = fx_op(&f, WNN_OP_SIGMOID, s, 0, 1, 0);
        outs[0] = t;
        fx_check(c, &f, "fusion: matmul + bias + sigmoid", 1, outs, 1, WNN_OP_MATMUL,
                 WNN_EPI_ADD_CHANNEL, 1, true, t);
    }
    /* add(m, m): the product is used twice */
    if (fx_begin(c, &f)) {
        a = fx_input(&f, 2, sa), bm = fx_input(&f, 2, sb);
        m = fx_op(&f, WNN_OP_MATMUL, a, bm, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, m, m, 2, 0);
        t = fx_op(&f, WNN_OP_RELU, s, 0, 1, 0);
        outs[0] = t;
        fx_check(c, &f, "fusion: add(m, m) is not fused", 1, outs, 0, 0, 0, 0, false, 0);
    }
    /* two consumers of the product */
    if (fx_begin(c, &f)) {
        a = fx_input(&f, 2, sa), bm = fx_input(&f, 2, sb);
        m = fx_op(&f, WNN_OP_GEMM, a, bm, 2, 0);
        t = fx_op(&f, WNN_OP_TANH, m, 0, 1, 0);
        s = fx_op(&f, WNN_OP_EXP, m, 0, 1, 0);
        outs[0] = t, outs[1] = s;
        fx_check(c, &f, "fusion: a product with two consumers", 2, outs, 0, 0, 0, 0, false,
                 0);
    }
    /* gemm + tanh */
    if (fx_begin(c, &f)) {
        a = fx_input(&f, 2, sa), bm = fx_input(&f, 2, sb);
        m = fx_op(&f, WNN_OP_GEMM, a, bm, 2, 0);
        t = fx_op(&f, WNN_OP_TANH, m, 0, 1, 0);
        outs[0] = t;
        fx_check(c, &f, "fusion: gemm + tanh", 1, outs, 1, WNN_OP_GEMM, WNN_EPI_ADD_NONE, 1,
                 true, t);
    }
}

/* ---- the memory plan of fused chains (compiler/plan.c) --------------------- */
int cpu_isa(void); /* cpu/support.c: CPU_ISA_* (cpu/config.h) */

/* x [1, H, H, 16] nhwc -> 1x1 to 96 -> relu -> depthwise 3x3 (pad 1) ->
 * relu -> 1x1 to 24: an inverted residual block.  What a chain computes
 * but never stores has no storage (WNN_SLOT_FUSED).  want_e, want_d: the
 * expansion's chain runs inside the depthwise one's, that inside the
 * projection's; where both are, nothing of the block is stored. */
static void
plan_block(wnn_context *c, uint32_t H, bool want_e, bool want_d)
{
    static uint32_t pad1[4] = { 1, 1, 1, 1 };
    const uint32_t sx[4] = { 1, H, H, 16 }, se[4] = { 96, 16, 1, 1 },
                   sd[4] = { 96, 1, 3, 3 }, sp[4] = { 24, 96, 1, 1 };
    char what[96];
    snprintf(what, sizeof(what), "fused plan: inverted residual block at %ux%u", H, H);
    wnn_builder *b = NULL;
    wnn_graph *g = NULL;
    wnn_error err;
    uint32_t x, we, wd, wp, e, er, d, dr, y;
    wnn_desc dx = desc(WNN_FLOAT32, 4, sx), de = desc(WNN_FLOAT32, 4, se),
             dd = desc(WNN_FLOAT32, 4, sd), dp = desc(WNN_FLOAT32, 4, sp);
    wnn_conv2d_options o;
    wnn_options_default(WNN_OP_CONV2D, &o);
    o.input_layout = WNN_LAYOUT_NHWC;
    union {
        wnn_no_options none;
        wnn_conv2d_options conv; /* room for any options struct */
    } ro;
    wnn_options_default(WNN_OP_RELU, &ro);
    bool ok = wnn_builder_create(c, &b, &err) == WNN_OK &&
              wnn_builder_input(b, "x", &dx, &x, &err) == WNN_OK &&
              wnn_builder_input(b, "we", &de, &we, &err) == WNN_OK &&
              wnn_builder_input(b, "wd", &dd, &wd, &err) == WNN_OK &&
              wnn_builder_input(b, "wp", &dp, &wp, &err) == WNN_OK;
    uint32_t in[2] = { x, we };
    ok = ok && add_op(b, WNN_OP_CONV2D, in, 2, &o, NULL, &e, &err) == WNN_OK &&
         add_op(b, WNN_OP_RELU, &e, 1, &ro, NULL, &er, &err) == WNN_OK;
    wnn_conv2d_options od = o;
    od.groups = 96;
    od.padding = (wnn_u32_list){ .n = 4, .present = true, .v = pad1 };
    in[0] = er, in[1] = wd;
    ok = ok && add_op(b, WNN_OP_CONV2D, in, 2, &od, NULL, &d, &err) == WNN_OK &&
         add_op(b, WNN_OP_RELU, &d, 1, &ro, NULL, &dr, &err) == WNN_OK;
    in[0] = dr, in[1] = wp;
    ok = ok && add_op(b, WNN_OP_CONV2D, in, 2, &o, NULL, &y, &err) == WNN_OK;
    const char *names[1] = { "y" };
    if (!ok || wnn_builder_build(b, 1, names, &y, &g, &err) != WNN_OK) {
        check_ok(WNN_ERR, &err, what);
        wnn_builder_free(b);
        return;
    }
    const wnn_fusion *f = &g->fusion;
    const wnn_slot *sl = g->plan.slots;
    /* the chains' intermediates (the convolutions' own results) are never
     * stored; a chain's result is, unless it runs inside the next chain */
    bool inner = sl[e].kind == WNN_SLOT_FUSED && sl[d].kind == WNN_SLOT_FUSED &&
                 sl[y].kind == WNN_SLOT_OUTPUT;
    uint32_t ke = f->chain_of ? f->chain_of[g->ir->operands[er].node] : 0;
    uint32_t kd = f->chain_of ? f->chain_of[g->ir->operands[dr].node] : 0;
    bool le = ke && kd && f->chains[ke - 1].into == kd && f->chains[ke - 1].pair == 1;
    bool ld = kd && f->chains[kd - 1].into && f->chains[kd - 1].pair == 2;
    if (!(c->backend->fuses & WNN_FUSE_EPILOGUE)) { /* WEBNN_CPU_FUSION=0 */
        inner = !ke && !kd && sl[e].kind == WNN_SLOT_ARENA &&
                sl[d].kind == WNN_SLOT_ARENA && sl[y].kind == WNN_SLOT_OUTPUT;
        ke = kd = 1;
    }
    check(ke && kd && inner && le == want_e && ld == want_d &&
              sl[er].kind == (le ? WNN_SLOT_FUSED : WNN_SLOT_ARENA) &&
              sl[dr].kind == (ld ? WNN_SLOT_FUSED : WNN_SLOT_ARENA) &&
              (!le || !ld || g->plan.arena_bytes == 0),
          what, "chains %u %u, slots e %d er %d d %d dr %d y %d, arena %llu, linked %d %d",
          ke, kd, sl[e].kind, sl[er].kind, sl[d].kind, sl[dr].kind, sl[y].kind,
          (unsigned long long)g->plan.arena_bytes, le, ld);
    /* and it runs: the pair kernel never touches the missing storage */
    float *hx = calloc((size_t)H * H * 16, sizeof(float));
    float *hw = calloc(96 * 16 + 96 * 9 + 24 * 96, sizeof(float));
    float *hy = calloc((size_t)H * H * 24, sizeof(float));
    if (hx && hw && hy) {
        for (uint32_t i = 0; i < H * H * 16; i++) {
            hx[i] = (float)(i % 7) - 3.0f;
        }
        for (uint32_t i = 0; i < 96 * 16 + 96 * 9 + 24 * 96; i++) {
            hw[i] = (float)(i % 5) * 0.25f - 0.5f;
        }
        const void *ins[4] = { hx, hw, hw + 96 * 16, hw + 96 * 16 + 96 * 9 };
        const char *inames[4] = { "x", "we", "wd", "wp" };
        ok = run_graph(c, g, 4, inames, ins, "y", hy, &err) == WNN_OK;
        /* one output pixel by hand (row 1, column 1: no padding involved) */
        double ref[24] = { 0 };
        for (uint32_t ch = 0; ch < 96; ch++) {
            double acc = 0;
            for (uint32_t ky = 0; ky < 3; ky++) {
                for (uint32_t kx = 0; kx < 3; kx++) {
                    double ev = 0;
                    for (uint32_t ci = 0; ci < 16; ci++) {
                        ev += (double)hx[(ky * H + kx) * 16 + ci] * hw[ch * 16 + ci];
                    }
                    acc += (ev > 0 ? ev : 0) * hw[96 * 16 + ch * 9 + ky * 3 + kx];
                }
            }
            acc = acc > 0 ? acc : 0;
            for (uint32_t o2 = 0; o2 < 24; o2++) {
                ref[o2] += acc * hw[96 * 16 + 96 * 9 + o2 * 96 + ch];
            }
        }
        double worst = 0;
        for (uint32_t o2 = 0; o2 < 24 && ok; o2++) {
            double dv = fabs(ref[o2] - hy[(H + 1) * 24 + o2]);
            worst = dv > worst ? dv : worst;
        }
        check(ok && worst < 1e-3, what, "runs: max error %g", worst);
    }
    free(hx);
    free(hw);
    free(hy);
    wnn_graph_release(g);
    wnn_builder_free(b);
}

static void
test_plan_fused(wnn_context *c)
{
    /* the CPU's pairs need AVX2 or AVX-512 and its direct kernels
     * (kernels/conv/pair.c): 48 x 48 x 96
     * floats (884 KB) is large enough for the expansion's pair, 8 x 8 is
     * not, but its rows are narrow enough for the depthwise convolution's
     * chunks inside the projection */
    const char *direct = getenv("WEBNN_CONV_DIRECT");
    bool pairs = cpu_isa() >= CPU_ISA_AVX2 &&
                 (c->backend->fuses & WNN_FUSE_CONV_PAIR) &&
                 !(direct && direct[0] == '0');
    plan_block(c, 48, pairs, pairs);
    plan_block(c, 8, false, pairs);
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
        test_plan_fused(c);
        test_signatures_and_views(c);
        test_device_interop_on_host(c);
        wnn_context_release(c);
    }
    test_destroyed_context();
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
