/* reduce.c -- field tables, tensor limits and checkers of the reduction
 * family: reduceL1 reduceL2 reduceLogSum reduceLogSumExp reduceMax
 * reduceMean reduceMin reduceProduct reduceSum reduceSumSquare, argMin,
 * argMax and cumulativeSum.  Data types and ranks of the operands are
 * checked generically by the builder against the limits tables below before
 * the checkers run (the spec's "allowedDataTypes" steps), and the output
 * descriptors after. */
#include "ops_internal.h"

#define N WNN_MAX_RANK
#define F WNN_DT_FLOAT
#define ANY WNN_DT_ANY
/* float32 float16 int32 uint32 int64 uint64 */
#define SUM_TYPES (F | WNN_DT(WNN_INT32) | WNN_DT(WNN_UINT32) | \
                   WNN_DT(WNN_INT64) | WNN_DT(WNN_UINT64))
#define INDEX_TYPES (WNN_DT(WNN_INT32) | WNN_DT(WNN_INT64))

/* ---- options ------------------------------------------------------------ */
WNN_OPTIONS_TABLE(wnn_reduce_options, WNN_REDUCE_OPTIONS);

WNN_OPTIONS_TABLE(wnn_arg_min_max_options, WNN_ARG_MIN_MAX_OPTIONS);

WNN_OPTIONS_TABLE(wnn_cumulative_sum_options, WNN_CUMULATIVE_SUM_OPTIONS);

/* ---- tensor limits ------------------------------------------------------ */
/* #tensor-limits-reduction-reducel1-reducesum-reducesumsquare */
const wnn_op_limits wnn_limits_reduce_sum = {
    1, 2, { { "input", SUM_TYPES, 0, N }, { "output", SUM_TYPES, 0, N } } };
/* #tensor-limits-reduction-reducel2-reducelogsum-reducelogsumexp-reducemean */
const wnn_op_limits wnn_limits_reduce_float = {
    1, 2, { { "input", F, 0, N }, { "output", F, 0, N } } };
/* #tensor-limits-reduction-reducemax-reducemin */
const wnn_op_limits wnn_limits_reduce_max = {
    1, 2, { { "input", ANY, 0, N }, { "output", ANY, 0, N } } };
/* #tensor-limits-reduction-reduceproduct */
const wnn_op_limits wnn_limits_reduce_product = {
    1, 2, { { "input", SUM_TYPES, 0, N }, { "output", SUM_TYPES, 0, N } } };
/* #tensor-limits-argMin-argMax */
const wnn_op_limits wnn_limits_arg_min_max = {
    1, 2, { { "input", ANY, 1, N }, { "output", INDEX_TYPES, 0, N } } };
/* #tensor-limits-cumulativesum */
const wnn_op_limits wnn_limits_cumulative_sum = {
    1, 2, { { "input", SUM_TYPES, 1, N }, { "output", SUM_TYPES, 1, N } } };

/* ---- checkers ----------------------------------------------------------- */
/* #api-mlgraphbuilder-reduce: "calculate reduction output sizes" given the
 * set of reduced dimensions as a bit mask (ranks are <= WNN_MAX_RANK <= 32).
 * Output dimensions are input dimensions, so they are valid already. */
static void
reduction_output(const wnn_desc *in, uint32_t mask, bool keep, wnn_dtype t,
                 wnn_desc *out)
{
    out->dtype = t;
    out->rank = 0;
    for (uint32_t d = 0; d < in->rank; d++) {
        if (!(mask >> d & 1u)) {
            out->shape[out->rank++] = in->shape[d];
        } else if (keep) {
            out->shape[out->rank++] = 1;
        }
    }
}

/* #api-mlgraphbuilder-reduce: "create reduction operation".  The
 * allowedDataTypes step is the builder's check against the limits table.
 * Stores the reduced dimensions in options->axes_mask for the kernels. */
wnn_status
wnn_check_reduce(wnn_check *c)
{
    const wnn_reduce_options *o = c->options;
    const wnn_desc *in = &c->in[0];
    uint32_t mask = 0;
    if (!o->axes.present) {
        /* "If axes is not given, let axes be the range 0 to inputRank" */
        mask = in->rank ? (uint32_t)((1ull << in->rank) - 1) : 0;
    } else {
        if (o->axes.scalar) {
            /* IDL sequence<unsigned long>: a bare number is not a sequence */
            return wnn_fail(c, "options.axes",
                            "expected a sequence of axes, got the number %u",
                            o->axes.v[0]);
        }
        for (uint32_t i = 0; i < o->axes.n; i++) {
            uint32_t a = o->axes.v[i];
            if (a >= in->rank) {
                return wnn_fail(c, "options.axes",
                                "axis %u (item %u) is not in the range [0, %u) "
                                "of the input's rank %u",
                                a, i, in->rank, in->rank);
            }
            if (mask >> a & 1u) {
                return wnn_fail(c, "options.axes",
                                "axis %u appears more than once", a);
            }
            mask |= 1u << a;
        }
    }
    ((wnn_reduce_options *)c->resolved)->axes_mask = mask;
    reduction_output(in, mask, o->keep_dimensions, in->dtype, &c->out[0]);
    c->n_out = 1;
    return WNN_OK;
}

/* #api-mlgraphbuilder-argminmax: "create an argMin/argMax operation" */
wnn_status
wnn_check_arg_min_max(wnn_check *c)
{
    const wnn_arg_min_max_options *o = c->options;
    const wnn_desc *in = &c->in[0];
    if (o->axis >= in->rank) {
        return wnn_fail(c, "axis",
                        "axis %u is not in the range [0, %u) of the input's "
                        "rank %u", o->axis, in->rank, in->rank);
    }
    const wnn_op_limits *l = wnn_op_get(c->op)->limits;
    wnn_dtype t = o->output_data_type;
    if (!(l->e[1].dtypes & WNN_DT(t))) {
        return wnn_fail(c, "options.outputDataType",
                        "%s is not an allowed output data type (int32 or "
                        "int64)", wnn_dtype_name(t));
    }
    /* "If input's shape[axis] is greater than outputDataType's maximum
     * value": dimensions are at most 2^31 - 1, so this cannot happen for
     * int32 or int64; kept as the spec's step. */
    uint64_t max = t == WNN_INT32 ? 2147483647ull : 9223372036854775807ull;
    if ((uint64_t)in->shape[o->axis] > max) {
        return wnn_fail(c, "axis",
                        "dimension %u (%u) exceeds the largest %s value",
                        o->axis, in->shape[o->axis], wnn_dtype_name(t));
    }
    reduction_output(in, 1u << o->axis, o->keep_dimensions, t, &c->out[0]);
    c->n_out = 1;
    return WNN_OK;
}

/* #api-mlgraphbuilder-cumulativesum: the data type and rank (>= 1) are the
 * limits table's; the output is a copy of the input's descriptor. */
wnn_status
wnn_check_cumulative_sum(wnn_check *c)
{
    const wnn_cumulative_sum_options *o = c->options;
    const wnn_desc *in = &c->in[0];
    if (o->axis >= in->rank) {
        return wnn_fail(c, "axis",
                        "axis %u is not in the range [0, %u) of the input's "
                        "rank %u", o->axis, in->rank, in->rank);
    }
    c->out[0] = *in;
    c->n_out = 1;
    return WNN_OK;
}
