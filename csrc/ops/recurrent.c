/* recurrent.c -- field tables, tensor limits and checkers of the recurrent
 * network operators: gru, gruCell, lstm, lstmCell.
 *
 * The builder has already checked every node input's data type and rank
 * against the limits tables below (including the operand-valued options);
 * the checkers add the spec's "same type as input" rules, the shape rules
 * and the option rules.  Shape arithmetic (3 * hiddenSize, ...) is done in
 * 64 bits. */
#include <stdio.h>

#include "ops_internal.h"

/* ---- enums and field tables ------------------------------------------- */
static const char *const rnn_activations[] = { "relu", "sigmoid", "tanh", NULL };
static const char *const rnn_directions[] = { "forward", "backward", "both", NULL };
static const char *const gru_layouts[] = { "zrn", "rzn", NULL };
static const char *const lstm_layouts[] = { "iofg", "ifgo", NULL };

WNN_OPTIONS_TABLE(wnn_gru_options, WNN_GRU_OPTIONS);

WNN_OPTIONS_TABLE(wnn_gru_cell_options, WNN_GRU_CELL_OPTIONS);

WNN_OPTIONS_TABLE(wnn_lstm_options, WNN_LSTM_OPTIONS);

WNN_OPTIONS_TABLE(wnn_lstm_cell_options, WNN_LSTM_CELL_OPTIONS);

/* ---- tensor limits ------------------------------------------------------ */
#define F WNN_DT_FLOAT

/* #tensor-limits-gru: outputs[0], outputs[1] if returnSequence (the
 * builder checks output i against entry n_inputs + i), then both together:
 * op_support_limits() has one "output" member, the last entry of that name
 * (the spec's MLGruSupportLimits names them output0 and output1). */
const wnn_op_limits wnn_limits_gru = {
    6, 9, { { "input", F, 3, 3 }, { "weight", F, 3, 3 },
            { "recurrentWeight", F, 3, 3 }, { "bias", F, 2, 2 },
            { "recurrentBias", F, 2, 2 }, { "initialHiddenState", F, 3, 3 },
            { "output", F, 3, 3 }, { "output", F, 4, 4 },
            { "output", F, 3, 4 } } };
/* #tensor-limits-gruCell */
const wnn_op_limits wnn_limits_gru_cell = {
    6, 7, { { "input", F, 2, 2 }, { "weight", F, 2, 2 },
            { "recurrentWeight", F, 2, 2 }, { "hiddenState", F, 2, 2 },
            { "bias", F, 1, 1 }, { "recurrentBias", F, 1, 1 },
            { "output", F, 2, 2 } } };
/* #tensor-limits-lstm: outputs[0], outputs[1], outputs[2] if
 * returnSequence, then all of them (as for gru) */
const wnn_op_limits wnn_limits_lstm = {
    8, 12, { { "input", F, 3, 3 }, { "weight", F, 3, 3 },
             { "recurrentWeight", F, 3, 3 }, { "bias", F, 2, 2 },
             { "recurrentBias", F, 2, 2 }, { "peepholeWeight", F, 2, 2 },
             { "initialHiddenState", F, 3, 3 },
             { "initialCellState", F, 3, 3 }, { "output", F, 3, 3 },
             { "output", F, 3, 3 }, { "output", F, 4, 4 },
             { "output", F, 3, 4 } } };
/* #tensor-limits-lstmCell */
const wnn_op_limits wnn_limits_lstm_cell = {
    8, 10, { { "input", F, 2, 2 }, { "weight", F, 2, 2 },
             { "recurrentWeight", F, 2, 2 }, { "hiddenState", F, 2, 2 },
             { "cellState", F, 2, 2 }, { "bias", F, 1, 1 },
             { "recurrentBias", F, 1, 1 }, { "peepholeWeight", F, 1, 1 },
             { "output", F, 2, 2 }, { "output", F, 2, 2 } } };

/* ---- helpers ------------------------------------------------------------ */
static const char *
shape64_str(const uint64_t *s, uint32_t r, char *buf, size_t n)
{
    size_t k = snprintf(buf, n, "[");
    for (uint32_t i = 0; i < r && k < n; i++) {
        k += snprintf(buf + k, n - k, i ? ", %llu" : "%llu",
                      (unsigned long long)s[i]);
    }
    if (k < n) {
        snprintf(buf + k, n - k, "]");
    }
    return buf;
}

/* "If <arg>'s shape is not equal to « want »": input `i` of the node. */
static wnn_status
expect_shape(wnn_check *c, uint32_t i, const char *arg, const uint64_t *want,
             uint32_t rank)
{
    char s1[96], s2[96];
    const wnn_desc *d = &c->in[i];
    bool eq = d->rank == rank;
    for (uint32_t k = 0; eq && k < rank; k++) {
        eq = d->shape[k] == want[k];
    }
    if (!eq) {
        return wnn_fail(c, arg, "shape %s is not %s",
                        wnn_shape_str(d->shape, d->rank, s1, sizeof(s1)),
                        shape64_str(want, rank, s2, sizeof(s2)));
    }
    return WNN_OK;
}

/* An operand-valued option that exists: same data type as input, and the
 * shape the spec requires. */
static wnn_status
check_option(wnn_check *c, uint32_t slot, const char *arg, const uint64_t *want,
             uint32_t rank)
{
    if (!slot) {
        return WNN_OK;
    }
    if (wnn_check_same_dtype(c, 0, slot - 1, "input", arg) != WNN_OK) {
        return WNN_ERR;
    }
    return expect_shape(c, slot - 1, arg, want, rank);
}

/* "If hiddenSize * k is not a valid dimension" */
static wnn_status
check_hidden_size(wnn_check *c, uint32_t hidden, uint32_t k)
{
    uint64_t v = (uint64_t)hidden * k;
    if (v == 0 || v > WNN_MAX_DIM) {
        return wnn_fail(c, "hiddenSize",
                        "hiddenSize * %u = %llu is not a valid dimension "
                        "(1 to %u)", k, (unsigned long long)v, WNN_MAX_DIM);
    }
    return WNN_OK;
}

/* "If options.activations exists: if its size is not n, throw". */
static wnn_status
check_activations(wnn_check *c, const wnn_u32_list *a, uint32_t n)
{
    if (!a->present) {
        return WNN_OK;
    }
    if (a->n != n) {
        return wnn_fail(c, "options.activations",
                        "%u activation functions given, %u expected", a->n, n);
    }
    for (uint32_t i = 0; i < a->n; i++) {
        if (a->v[i] > WNN_RNN_TANH) {
            return wnn_fail(c, "options.activations",
                            "activation %u is not a MLRecurrentNetworkActivation",
                            i);
        }
    }
    return WNN_OK;
}

static wnn_status
check_direction_layout(wnn_check *c, int direction, int layout)
{
    if (direction < WNN_RNN_FORWARD || direction > WNN_RNN_BOTH) {
        return wnn_fail(c, "options.direction",
                        "not a MLRecurrentNetworkDirection");
    }
    if (layout < 0 || layout > 1) {
        return wnn_fail(c, "options.layout", "not a weight layout");
    }
    return WNN_OK;
}

/* The positional operands 1.. (weight, recurrentWeight, hiddenState,
 * cellState) have the input's data type ("same as input"). */
static wnn_status
check_same_types(wnn_check *c, uint32_t n, const char *const *names)
{
    for (uint32_t i = 1; i < n; i++) {
        if (wnn_check_same_dtype(c, 0, i, "input", names[i]) != WNN_OK) {
            return WNN_ERR;
        }
    }
    return WNN_OK;
}

/* gru and lstm share every step but the gate count and the options. */
typedef struct rnn_args {
    uint32_t steps, hidden, gates;  /* gates: 3 (gru) or 4 (lstm) */
    int direction, layout;
    bool return_sequence;
    const wnn_u32_list *activations;
    uint32_t n_activations;
    uint32_t bias, recurrent_bias, peephole, h0, c0;
} rnn_args;

static wnn_status
check_network(wnn_check *c, const rnn_args *a)
{
    static const char *const names[] = { "input", "weight", "recurrentWeight" };
    const wnn_desc *in = &c->in[0];
    if (check_direction_layout(c, a->direction, a->layout) != WNN_OK ||
        check_same_types(c, 3, names) != WNN_OK) {
        return WNN_ERR;
    }
    /* ranks (3, 3, 3) were checked against the limits table */
    if (a->steps == 0) {
        return wnn_fail(c, "steps", "steps is 0");
    }
    if (in->shape[0] != a->steps) {
        return wnn_fail(c, "steps", "steps %u is not input's shape[0] %u",
                        a->steps, in->shape[0]);
    }
    uint64_t batch = in->shape[1], input_size = in->shape[2];
    uint64_t dirs = a->direction == WNN_RNN_BOTH ? 2 : 1;
    uint64_t h = a->hidden, gh = (uint64_t)a->gates * h;
    uint64_t w[3] = { dirs, gh, input_size };
    uint64_t rw[3] = { dirs, gh, h };
    if (expect_shape(c, 1, "weight", w, 3) != WNN_OK ||
        expect_shape(c, 2, "recurrentWeight", rw, 3) != WNN_OK ||
        check_hidden_size(c, a->hidden, 2 * a->gates) != WNN_OK) {
        return WNN_ERR;
    }
    uint64_t b[2] = { dirs, gh };
    uint64_t p[2] = { dirs, 3 * h };
    uint64_t s[3] = { dirs, batch, h };
    if (check_option(c, a->bias, "options.bias", b, 2) != WNN_OK ||
        check_option(c, a->recurrent_bias, "options.recurrentBias", b, 2) !=
            WNN_OK ||
        check_option(c, a->peephole, "options.peepholeWeight", p, 2) !=
            WNN_OK ||
        check_option(c, a->h0, "options.initialHiddenState", s, 3) != WNN_OK ||
        check_option(c, a->c0, "options.initialCellState", s, 3) != WNN_OK ||
        check_activations(c, a->activations, a->n_activations) != WNN_OK) {
        return WNN_ERR;
    }
    /* outputs: hidden state (and cell state for lstm), then the sequence */
    uint32_t n = 0;
    wnn_desc state = { .dtype = in->dtype, .rank = 3,
                       .shape = { (uint32_t)dirs, (uint32_t)batch, a->hidden } };
    c->out[n++] = state;
    if (a->gates == 4) {
        c->out[n++] = state;
    }
    if (a->return_sequence) {
        c->out[n++] = (wnn_desc){ .dtype = in->dtype, .rank = 4,
                                  .shape = { a->steps, (uint32_t)dirs,
                                             (uint32_t)batch, a->hidden } };
    }
    c->n_out = n;
    return WNN_OK;
}

/* ---- checkers ----------------------------------------------------------- */
/* gru -- #api-mlgraphbuilder-gru */
wnn_status
wnn_check_gru(wnn_check *c)
{
    const wnn_gru_options *o = c->options;
    rnn_args a = { .steps = o->steps, .hidden = o->hidden_size, .gates = 3,
                   .direction = o->direction, .layout = o->layout,
                   .return_sequence = o->return_sequence,
                   .activations = &o->activations, .n_activations = 2,
                   .bias = o->bias, .recurrent_bias = o->recurrent_bias,
                   .h0 = o->initial_hidden_state };
    return check_network(c, &a);
}

/* lstm -- #api-mlgraphbuilder-lstm */
wnn_status
wnn_check_lstm(wnn_check *c)
{
    const wnn_lstm_options *o = c->options;
    rnn_args a = { .steps = o->steps, .hidden = o->hidden_size, .gates = 4,
                   .direction = o->direction, .layout = o->layout,
                   .return_sequence = o->return_sequence,
                   .activations = &o->activations, .n_activations = 3,
                   .bias = o->bias, .recurrent_bias = o->recurrent_bias,
                   .peephole = o->peephole_weight,
                   .h0 = o->initial_hidden_state,
                   .c0 = o->initial_cell_state };
    return check_network(c, &a);
}

/* gruCell and lstmCell: one time step.  `n_state` is 1 (hiddenState) or 2
 * (hiddenState, cellState): positional operands 3 and 4. */
static wnn_status
check_cell(wnn_check *c, uint32_t gates, uint32_t hidden, int layout,
           uint32_t n_state, uint32_t bias, uint32_t rbias, uint32_t peephole,
           const wnn_u32_list *activations, uint32_t n_activations)
{
    static const char *const names[] = { "input", "weight", "recurrentWeight",
                                         "hiddenState", "cellState" };
    const wnn_desc *in = &c->in[0];
    if (check_direction_layout(c, WNN_RNN_FORWARD, layout) != WNN_OK ||
        check_same_types(c, 3 + n_state, names) != WNN_OK) {
        return WNN_ERR;
    }
    uint64_t batch = in->shape[0], input_size = in->shape[1];
    uint64_t h = hidden, gh = (uint64_t)gates * h;
    uint64_t w[2] = { gh, input_size }, rw[2] = { gh, h }, s[2] = { batch, h };
    if (expect_shape(c, 1, "weight", w, 2) != WNN_OK ||
        expect_shape(c, 2, "recurrentWeight", rw, 2) != WNN_OK) {
        return WNN_ERR;
    }
    for (uint32_t i = 0; i < n_state; i++) {
        if (expect_shape(c, 3 + i, names[3 + i], s, 2) != WNN_OK) {
            return WNN_ERR;
        }
    }
    uint64_t b[1] = { gh }, p[1] = { 3 * h };
    if (check_hidden_size(c, hidden, 2 * gates) != WNN_OK ||
        check_option(c, bias, "options.bias", b, 1) != WNN_OK ||
        check_option(c, rbias, "options.recurrentBias", b, 1) != WNN_OK ||
        check_option(c, peephole, "options.peepholeWeight", p, 1) != WNN_OK ||
        check_activations(c, activations, n_activations) != WNN_OK) {
        return WNN_ERR;
    }
    wnn_desc out = { .dtype = in->dtype, .rank = 2,
                     .shape = { (uint32_t)batch, hidden } };
    c->out[0] = out;
    c->n_out = 1;
    if (n_state == 2) {
        c->out[1] = out;
        c->n_out = 2;
    }
    return WNN_OK;
}

/* gruCell -- #api-mlgraphbuilder-grucell */
wnn_status
wnn_check_gru_cell(wnn_check *c)
{
    const wnn_gru_cell_options *o = c->options;
    return check_cell(c, 3, o->hidden_size, o->layout, 1, o->bias,
                      o->recurrent_bias, 0, &o->activations, 2);
}

/* lstmCell -- #api-mlgraphbuilder-lstmcell */
wnn_status
wnn_check_lstm_cell(wnn_check *c)
{
    const wnn_lstm_cell_options *o = c->options;
    return check_cell(c, 4, o->hidden_size, o->layout, 2, o->bias,
                      o->recurrent_bias, o->peephole_weight, &o->activations,
                      3);
}
