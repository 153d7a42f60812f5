/* limits.c -- the spec's "tensor limits" tables: allowed data types and ranks
 * of each operand of each operator (entries for node inputs first, then the
 * outputs).  "N" ranks are WNN_MAX_RANK.  Backends may narrow these; the
 * builder enforces them generically and op_support_limits() reports them. */
#include "ops_internal.h"

#define N WNN_MAX_RANK
#define F WNN_DT_FLOAT
#define ANY WNN_DT_ANY
#define U8 WNN_DT(WNN_UINT8)
#define SIGNED_NUM (F | WNN_DT(WNN_INT64) | WNN_DT(WNN_INT32) | WNN_DT(WNN_INT8))

/* #tensor-limits-elementwise-binary */
const wnn_op_limits wnn_limits_binary = {
    2, 3, { { "a", ANY, 0, N }, { "b", ANY, 0, N }, { "output", ANY, 0, N } } };
/* #tensor-limits-elementwise-logical-equal-...-lesserorequal */
const wnn_op_limits wnn_limits_compare = {
    2, 3, { { "a", ANY, 0, N }, { "b", ANY, 0, N }, { "output", U8, 0, N } } };
/* #tensor-limits-elementwise-logical-logicalnot */
const wnn_op_limits wnn_limits_logical_not = {
    1, 2, { { "a", U8, 0, N }, { "output", U8, 0, N } } };
/* #tensor-limits-elementwise-logical-logicaland-logicalor-logicalxor */
const wnn_op_limits wnn_limits_logical_binary = {
    2, 3, { { "a", U8, 0, N }, { "b", U8, 0, N }, { "output", U8, 0, N } } };
/* #tensor-limits-elementwise-logical-isnan-isinfinite */
const wnn_op_limits wnn_limits_is_nan = {
    1, 2, { { "a", F, 0, N }, { "output", U8, 0, N } } };
/* #tensor-limits-elementwise-unary-abs-neg (and sign) */
const wnn_op_limits wnn_limits_abs = {
    1, 2, { { "input", SIGNED_NUM, 0, N }, { "output", SIGNED_NUM, 0, N } } };
/* #tensor-limits-elementwise-unary-ceil-cos-erf-..., and the float-only
 * activations (elu gelu hardSigmoid hardSwish leakyRelu linear sigmoid
 * softplus softsign tanh) whose tables are the same */
const wnn_op_limits wnn_limits_unary_float = {
    1, 2, { { "input", F, 0, N }, { "output", F, 0, N } } };
/* #tensor-limits-elementwise-unary-identity */
const wnn_op_limits wnn_limits_any = {
    1, 2, { { "input", ANY, 0, N }, { "output", ANY, 0, N } } };
/* #tensor-limits-clamp */
const wnn_op_limits wnn_limits_clamp = {
    1, 2, { { "input", ANY, 0, N }, { "output", ANY, 0, N } } };
/* #tensor-limits-relu */
const wnn_op_limits wnn_limits_relu = {
    1, 2, { { "input", SIGNED_NUM, 0, N }, { "output", SIGNED_NUM, 0, N } } };
/* #tensor-limits-prelu */
const wnn_op_limits wnn_limits_prelu = {
    2, 3, { { "input", SIGNED_NUM, 0, N }, { "slope", SIGNED_NUM, 0, N },
            { "output", SIGNED_NUM, 0, N } } };
/* #tensor-limits-cast */
const wnn_op_limits wnn_limits_cast = {
    1, 2, { { "input", ANY, 0, N }, { "output", ANY, 0, N } } };
/* #tensor-limits-reshape */
const wnn_op_limits wnn_limits_reshape = {
    1, 2, { { "input", ANY, 0, N }, { "output", ANY, 0, N } } };
/* #tensor-limits-where */
const wnn_op_limits wnn_limits_where = {
    3, 4, { { "condition", U8, 0, N }, { "trueValue", ANY, 0, N },
            { "falseValue", ANY, 0, N }, { "output", ANY, 0, N } } };
/* #tensor-limits-gemm */
const wnn_op_limits wnn_limits_gemm = {
    3, 4, { { "a", F, 2, 2 }, { "b", F, 2, 2 }, { "c", F, 0, 2 },
            { "output", F, 2, 2 } } };
/* #tensor-limits-matmul */
const wnn_op_limits wnn_limits_matmul = {
    2, 3, { { "a", F, 2, N }, { "b", F, 2, N }, { "output", F, 2, N } } };
