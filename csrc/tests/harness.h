/* harness.h -- what the C tests of the core share (harness.c): the checks
 * that print one line each and count it, the helpers, and the test groups
 * main (test_core.c) runs, one file per concern:
 *
 *   test_core.c      contexts, operator values, error formatting and names,
 *                    vmath.h's gelu clones, the registry's signatures and the
 *                    introspection views, device interop on the host
 *   test_errors.c    validation errors and their messages, constants viewed
 *                    not copied, InvalidStateError after build, dispatch
 *                    TypeErrors, a destroyed context
 *   test_compiler.c  the epilogue fusion analysis (compiler/fuse.c) and the
 *                    memory plan of fused chains (compiler/plan.c) */
#ifndef WNN_TESTS_HARNESS_H
#define WNN_TESTS_HARNESS_H

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

extern int n_passed;
extern int n_failed;

/* one check: "ok    name" or "FAIL  name: <fmt ...>"; returns ok */
bool check(bool ok, const char *name, const char *fmt, ...);
/* a call that must succeed (on failure the formatted error is printed) */
bool check_ok(wnn_status st, const wnn_error *err, const char *name);
/* a call that must fail with `kind`; prefix (not NULL): how the formatted
 * message must start */
bool check_err(wnn_status st, const wnn_error *err, wnn_error_kind kind,
               const char *prefix, const char *name);
wnn_desc desc(wnn_dtype t, uint32_t rank, const uint32_t *shape);
/* deterministic values in [-1, 1) */
float frand(void);
void fill_random(float *p, size_t n);
/* one operator node with its options struct (NULL: the defaults) */
wnn_status add_op(wnn_builder *b, wnn_op op, const uint32_t *in, uint32_t n_in,
                  const void *options, const char *label, uint32_t *out, wnn_error *err);
/* a built graph run once through the timeline (tensors created, inputs
 * written, dispatched, the one output read); the first failing step's status */
wnn_status run_graph(wnn_context *c, wnn_graph *g, uint32_t n_in,
                     const char *const *names, const void *const *data,
                     const char *out_name, void *out, wnn_error *err);
bool close_enough(double got, double want, double rtol, double atol);
/* index of the first element of got that differs from want, or -1 */
long first_mismatch(const float *got, const double *want, size_t n, double rtol,
                    double atol);

/* test_errors.c */
void test_validation(wnn_context *c);
void test_constant_view(wnn_context *c);
void test_invalid_state_after_build(wnn_context *c);
void test_dispatch_errors(wnn_context *c);
void test_destroyed_context(void);
/* test_compiler.c */
void test_fusion(wnn_context *c);
void test_fusion_in_scale(wnn_context *c);
void test_plan_fused(wnn_context *c);

#endif
