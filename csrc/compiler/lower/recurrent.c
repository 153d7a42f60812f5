/* recurrent.c -- the family RECURRENT (lower.h): gru, gruCell, lstm,
 * lstmCell as one network -- steps, batch, units, input features,
 * directions, activations, the gate blocks of the layout, and which node
 * inputs / outputs are the optional operands -- once per node at compile;
 * cpu/kernels/recurrent/ and the CUDA recurrent launchers read it.  One
 * lowering per operator (their options differ), one block for the four. */
#include <string.h>

#include "../../ops/ops_internal.h"
#include "lower.h"

/* The parts common to the four: directions, activations (default sigmoid,
 * tanh[, tanh]) and the gate blocks of the layout. */
static wnn_status
rnn_end(wnn_lowered *l, const wnn_u32_list *acts, int layout)
{
    wnn_rnn_params *p = &l->u.rnn;
    l->kind = WNN_LOWER_RNN;
    p->D = p->direction == WNN_KRNN_BOTH ? 2 : 1;
    const uint32_t *av = acts->present ? acts->v : NULL;
    p->act_f = av ? (int32_t)av[0] : WNN_KRNN_SIGMOID;
    p->act_g = av ? (int32_t)av[1] : WNN_KRNN_TANH;
    p->act_h = p->lstm && av ? (int32_t)av[2] : WNN_KRNN_TANH;
    if (p->lstm) {
        bool iofg = layout == WNN_LSTM_IOFG;
        p->gi = 0;
        p->go = iofg ? 1 : 3;
        p->gf = iofg ? 2 : 1;
        p->gg = iofg ? 3 : 2;
    } else {
        p->gz = layout == WNN_GRU_ZRN ? 0 : 1;
        p->gr = 1 - p->gz;
    }
    return WNN_OK;
}

/* input 0's type and shape: [T, B, I] (the networks) or [B, I] (cells) */
static wnn_rnn_params *
rnn_begin(wnn_lowered *l, const wnn_ir *ir, const wnn_node *node, bool seq)
{
    const wnn_desc *x = &ir->operands[node->in[0]].desc;
    wnn_rnn_params *p = &l->u.rnn;
    memset(p, 0, sizeof(*p));
    p->dt = x->dtype;
    p->direction = WNN_KRNN_FORWARD;
    p->T = seq ? x->shape[0] : 1;
    p->B = x->shape[seq ? 1 : 0];
    p->I = x->shape[seq ? 2 : 1];
    return p;
}

WNN_LOWER_FN(wnn_lower_op_gru)
{
    (void)views, (void)err;
    const wnn_gru_options *o = node->options;
    wnn_rnn_params *p = rnn_begin(l, ir, node, true);
    p->H = o->hidden_size, p->reset_after = o->reset_after;
    p->direction = o->direction;
    p->bias = o->bias, p->rbias = o->recurrent_bias;
    p->h0 = o->initial_hidden_state;
    p->out_seq = o->return_sequence && node->n_out > 1 ? 2 : 0;
    return rnn_end(l, &o->activations, o->layout);
}

WNN_LOWER_FN(wnn_lower_op_gru_cell)
{
    (void)views, (void)err;
    const wnn_gru_cell_options *o = node->options;
    wnn_rnn_params *p = rnn_begin(l, ir, node, false);
    p->H = o->hidden_size, p->reset_after = o->reset_after;
    p->bias = o->bias, p->rbias = o->recurrent_bias, p->h0 = 4;
    return rnn_end(l, &o->activations, o->layout);
}

WNN_LOWER_FN(wnn_lower_op_lstm)
{
    (void)views, (void)err;
    const wnn_lstm_options *o = node->options;
    wnn_rnn_params *p = rnn_begin(l, ir, node, true);
    p->lstm = 1;
    p->H = o->hidden_size, p->direction = o->direction;
    p->bias = o->bias, p->rbias = o->recurrent_bias;
    p->peep = o->peephole_weight, p->h0 = o->initial_hidden_state;
    p->c0 = o->initial_cell_state, p->out_c = 2;
    p->out_seq = o->return_sequence && node->n_out > 2 ? 3 : 0;
    return rnn_end(l, &o->activations, o->layout);
}

WNN_LOWER_FN(wnn_lower_op_lstm_cell)
{
    (void)views, (void)err;
    const wnn_lstm_cell_options *o = node->options;
    wnn_rnn_params *p = rnn_begin(l, ir, node, false);
    p->lstm = 1;
    p->H = o->hidden_size;
    p->bias = o->bias, p->rbias = o->recurrent_bias;
    p->peep = o->peephole_weight, p->h0 = 4, p->c0 = 5, p->out_c = 2;
    return rnn_end(l, &o->activations, o->layout);
}
