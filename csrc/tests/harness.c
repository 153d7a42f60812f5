/* harness.c -- the C tests' reporting (one line per check; main prints the
 * count) and the helpers they share: descriptors, deterministic random
 * values, one-node graphs, a graph run through the timeline, tolerances. */
#include "harness.h"

/* ---- reporting ---------------------------------------------------------- */
int n_passed;
int n_failed;

bool
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
bool
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
bool
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
wnn_desc
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

float
frand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
}

void
fill_random(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = frand();
    }
}

/* One operator node with options (defaults, then `set` may change them). */
wnn_status
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
wnn_status
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

bool
close_enough(double got, double want, double rtol, double atol)
{
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* Index of the first element of `got` that differs from `want`, or -1. */
long
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
