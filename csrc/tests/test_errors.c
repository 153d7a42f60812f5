/* test_errors.c -- the core's errors tested from C: validation errors and
 * their messages, constants viewed rather than copied (and released once),
 * InvalidStateError after build, dispatch TypeErrors, a destroyed context
 * (harness.h). */
#include "harness.h"

/* ---- validation --------------------------------------------------------- */
void
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

void
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
void
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
void
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
void
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
