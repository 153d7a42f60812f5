/* gather_scatter.c -- option fields, tensor limits and checkers of gather,
 * gatherElements, gatherND, scatterElements and scatterND.
 *
 * Data types and ranks of each operand are checked generically by the
 * builder against the limits tables below before the checkers run; the
 * checkers do the "same as" rules (ranks, data types) and the shape steps of
 * the spec.  Index values are only known at run time: the kernels
 * (cpu/kernels/gather_scatter/gather_scatter.c) clamp them. */
#include "ops_internal.h"

#define N WNN_MAX_RANK
#define ANY WNN_DT_ANY
#define IDX (WNN_DT(WNN_INT32) | WNN_DT(WNN_UINT32) | WNN_DT(WNN_INT64))

/* ---- option fields ---------------------------------------------------- */
WNN_OPTIONS_TABLE(wnn_gather_options, WNN_GATHER_OPTIONS);

WNN_OPTIONS_TABLE(wnn_scatter_options, WNN_SCATTER_OPTIONS);

/* ---- tensor limits ------------------------------------------------------ */
/* #tensor-limits-gather.  The table gives the output "1 to N", but the
 * method steps give rank(input) + rank(indices) - 1, which is 0 for a 1-D
 * input and scalar indices (a case of the WPT conformance vectors): the
 * output's range here is 0 to N so that case builds. */
const wnn_op_limits wnn_limits_gather = {
    2, 3, { { "input", ANY, 1, N }, { "indices", IDX, 0, N },
            { "output", ANY, 0, N } } };
/* #tensor-limits-gatherelements (indices: same rank as input, checked
 * below) */
const wnn_op_limits wnn_limits_gather_elements = {
    2, 3, { { "input", ANY, 1, N }, { "indices", IDX, 1, N },
            { "output", ANY, 1, N } } };
/* #tensor-limits-gathernd */
const wnn_op_limits wnn_limits_gather_nd = {
    2, 3, { { "input", ANY, 1, N }, { "indices", IDX, 1, N },
            { "output", ANY, 0, N } } };
/* #tensor-limits-scatterelements (indices, updates: same rank as input) */
const wnn_op_limits wnn_limits_scatter_elements = {
    3, 4, { { "input", ANY, 1, N }, { "indices", IDX, 1, N },
            { "updates", ANY, 1, N }, { "output", ANY, 1, N } } };
/* #tensor-limits-scatternd */
const wnn_op_limits wnn_limits_scatter_nd = {
    3, 4, { { "input", ANY, 1, N }, { "indices", IDX, 1, N },
            { "updates", ANY, 0, N }, { "output", ANY, 1, N } } };

/* ---- helpers -------------------------------------------------------------- */
static wnn_status
check_axis(wnn_check *c, uint32_t axis)
{
    if (axis >= c->in[0].rank) {
        return wnn_fail(c, "options.axis",
                        "axis %u is not less than input's rank %u", axis,
                        c->in[0].rank);
    }
    return WNN_OK;
}

static wnn_status
check_same_rank(wnn_check *c, uint32_t i, const char *name)
{
    if (c->in[i].rank != c->in[0].rank) {
        return wnn_fail(c, name, "rank %u is not input's rank %u",
                        c->in[i].rank, c->in[0].rank);
    }
    return WNN_OK;
}

static bool
shape_equal(const uint32_t *a, uint32_t ra, const uint32_t *b, uint32_t rb)
{
    if (ra != rb) {
        return false;
    }
    for (uint32_t i = 0; i < ra; i++) {
        if (a[i] != b[i]) {
            return false;
        }
    }
    return true;
}

/* gatherElements and scatterElements: indicesShapeExpected is input's shape
 * with the axis dimension taken from indices. */
static wnn_status
check_elements_indices(wnn_check *c, uint32_t axis)
{
    char s1[96], s2[96];
    uint32_t expected[WNN_MAX_RANK];
    const wnn_desc *in = &c->in[0], *ix = &c->in[1];
    for (uint32_t i = 0; i < in->rank; i++) {
        expected[i] = in->shape[i];
    }
    expected[axis] = ix->shape[axis];
    if (!shape_equal(ix->shape, ix->rank, expected, in->rank)) {
        return wnn_fail(c, "indices",
                        "shape %s is not %s (input's shape with dimension "
                        "%u of indices)",
                        wnn_shape_str(ix->shape, ix->rank, s1, sizeof(s1)),
                        wnn_shape_str(expected, in->rank, s2, sizeof(s2)),
                        axis);
    }
    return WNN_OK;
}

/* gatherND and scatterND: indices[..., coordinateSize] index the leading
 * coordinateSize dimensions of input; the result shape is
 * indices.shape[:-1] + input.shape[coordinateSize:].  Its rank may exceed
 * WNN_MAX_RANK (up to 2 * WNN_MAX_RANK - 2), hence the larger buffer. */
static wnn_status
nd_shape(wnn_check *c, uint32_t *shape, uint32_t *rank)
{
    const wnn_desc *in = &c->in[0], *ix = &c->in[1];
    uint32_t indexable = ix->rank - 1; /* rank >= 1 by the limits */
    uint32_t coord = ix->shape[indexable];
    if (coord > in->rank) {
        return wnn_fail(c, "indices",
                        "coordinate size %u (last dimension) is greater than "
                        "input's rank %u",
                        coord, in->rank);
    }
    uint32_t r = 0;
    for (uint32_t i = 0; i < indexable; i++) {
        shape[r++] = ix->shape[i];
    }
    for (uint32_t i = coord; i < in->rank; i++) {
        shape[r++] = in->shape[i];
    }
    *rank = r;
    return WNN_OK;
}

/* ---- checkers ------------------------------------------------------------- */
/* gather -- #api-mlgraphbuilder-gather */
wnn_status
wnn_check_gather(wnn_check *c)
{
    const wnn_gather_options *o = c->options;
    const wnn_desc *in = &c->in[0], *ix = &c->in[1];
    wnn_desc *out = &c->out[0];
    if (check_axis(c, o->axis) != WNN_OK) {
        return WNN_ERR;
    }
    uint32_t rank = in->rank + ix->rank - 1;
    if (rank > WNN_MAX_RANK) {
        return wnn_fail(c, "indices",
                        "the output's rank %u (input's rank %u + indices' "
                        "rank %u - 1) exceeds the supported maximum %u",
                        rank, in->rank, ix->rank, WNN_MAX_RANK);
    }
    uint32_t r = 0;
    for (uint32_t i = 0; i < o->axis; i++) {
        out->shape[r++] = in->shape[i];
    }
    for (uint32_t i = 0; i < ix->rank; i++) {
        out->shape[r++] = ix->shape[i];
    }
    for (uint32_t i = o->axis + 1; i < in->rank; i++) {
        out->shape[r++] = in->shape[i];
    }
    out->rank = r;
    out->dtype = in->dtype;
    c->n_out = 1;
    return WNN_OK;
}

/* gatherElements -- #api-mlgraphbuilder-gatherelements */
wnn_status
wnn_check_gather_elements(wnn_check *c)
{
    const wnn_gather_options *o = c->options;
    if (check_same_rank(c, 1, "indices") != WNN_OK ||
        check_axis(c, o->axis) != WNN_OK ||
        check_elements_indices(c, o->axis) != WNN_OK) {
        return WNN_ERR;
    }
    /* The output has indices' shape (the spec's "copying an MLOperand given
     * input" would keep input's shape, contradicting the returned rank and
     * examples: [4,3] input, [2,3] indices give a [2,3] output). */
    c->out[0] = c->in[1];
    c->out[0].dtype = c->in[0].dtype;
    c->n_out = 1;
    return WNN_OK;
}

/* gatherND -- #api-mlgraphbuilder-gathernd */
wnn_status
wnn_check_gather_nd(wnn_check *c)
{
    uint32_t shape[2 * WNN_MAX_RANK], rank = 0;
    wnn_desc *out = &c->out[0];
    if (nd_shape(c, shape, &rank) != WNN_OK) {
        return WNN_ERR;
    }
    if (rank > WNN_MAX_RANK) {
        return wnn_fail(c, "indices",
                        "the output's rank %u exceeds the supported maximum "
                        "%u",
                        rank, WNN_MAX_RANK);
    }
    for (uint32_t i = 0; i < rank; i++) {
        out->shape[i] = shape[i];
    }
    out->rank = rank;
    out->dtype = c->in[0].dtype;
    c->n_out = 1;
    return WNN_OK;
}

/* scatterElements -- #api-mlgraphbuilder-scatterelements */
wnn_status
wnn_check_scatter_elements(wnn_check *c)
{
    char s1[96], s2[96];
    const wnn_scatter_options *o = c->options;
    const wnn_desc *ix = &c->in[1], *up = &c->in[2];
    if (wnn_check_same_dtype(c, 0, 2, "input", "updates") != WNN_OK ||
        check_same_rank(c, 1, "indices") != WNN_OK ||
        check_same_rank(c, 2, "updates") != WNN_OK ||
        check_axis(c, o->axis) != WNN_OK ||
        check_elements_indices(c, o->axis) != WNN_OK) {
        return WNN_ERR;
    }
    if (!shape_equal(up->shape, up->rank, ix->shape, ix->rank)) {
        return wnn_fail(c, "updates", "shape %s is not indices' shape %s",
                        wnn_shape_str(up->shape, up->rank, s1, sizeof(s1)),
                        wnn_shape_str(ix->shape, ix->rank, s2, sizeof(s2)));
    }
    c->out[0] = c->in[0];
    c->n_out = 1;
    return WNN_OK;
}

/* scatterND -- #api-mlgraphbuilder-scatternd */
wnn_status
wnn_check_scatter_nd(wnn_check *c)
{
    char s1[96], s2[200];
    uint32_t expected[2 * WNN_MAX_RANK], rank = 0;
    const wnn_desc *up = &c->in[2];
    if (wnn_check_same_dtype(c, 0, 2, "input", "updates") != WNN_OK ||
        nd_shape(c, expected, &rank) != WNN_OK) {
        return WNN_ERR;
    }
    if (!shape_equal(up->shape, up->rank, expected, rank)) {
        return wnn_fail(c, "updates",
                        "shape %s is not %s (indices' shape without its last "
                        "dimension, then input's dimensions from the "
                        "coordinate size on)",
                        wnn_shape_str(up->shape, up->rank, s1, sizeof(s1)),
                        wnn_shape_str(expected, rank, s2, sizeof(s2)));
    }
    c->out[0] = c->in[0];
    c->n_out = 1;
    return WNN_OK;
}
