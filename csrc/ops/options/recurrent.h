/* options/recurrent.h -- options structs for gru gruCell lstm lstmCell
 * (included by ops/options.h).  Positional plain arguments (steps,
 * hiddenSize) live in the same struct; operand-valued members hold the node
 * input index + 1 (0 = absent); enum members hold an index into the
 * NULL-terminated IDL string lists of ops/recurrent.c. */
#pragma once

/* MLRecurrentNetworkActivation: indices into the "activations" lists */
enum { WNN_RNN_RELU = 0, WNN_RNN_SIGMOID = 1, WNN_RNN_TANH = 2 };
/* MLRecurrentNetworkDirection */
enum { WNN_RNN_FORWARD = 0, WNN_RNN_BACKWARD = 1, WNN_RNN_BOTH = 2 };
/* MLGruWeightLayout */
enum { WNN_GRU_ZRN = 0, WNN_GRU_RZN = 1 };
/* MLLstmWeightLayout */
enum { WNN_LSTM_IOFG = 0, WNN_LSTM_IFGO = 1 };

/* gru(input, weight, recurrentWeight, steps, hiddenSize, MLGruOptions)
 * -- #api-mlgraphbuilder-gru */
#define WNN_GRU_OPTIONS(S, F, E, X)                                           \
    F(S, steps, "steps", WNN_F_U32, 0)                                        \
    F(S, hidden_size, "hiddenSize", WNN_F_U32, 0)                             \
    F(S, bias, "bias", WNN_F_OPERAND, 0) /* operand */                        \
    F(S, recurrent_bias, "recurrentBias", WNN_F_OPERAND, 0) /* operand */     \
    /* operand */                                                             \
    F(S, initial_hidden_state, "initialHiddenState", WNN_F_OPERAND, 0)        \
    F(S, reset_after, "resetAfter", WNN_F_BOOL, 1) /* true */                 \
    F(S, return_sequence, "returnSequence", WNN_F_BOOL, 0) /* false */        \
    /* "forward" */                                                           \
    E(S, direction, "direction", WNN_F_ENUM, rnn_directions, WNN_RNN_FORWARD) \
    E(S, layout, "layout", WNN_F_ENUM, gru_layouts, WNN_GRU_ZRN) /* "zrn" */  \
    /* absent: sigmoid, tanh */                                               \
    E(S, activations, "activations", WNN_F_ENUM_LIST, rnn_activations, 0)
WNN_OPTIONS_STRUCT(wnn_gru_options, WNN_GRU_OPTIONS)

/* gruCell(input, weight, recurrentWeight, hiddenState, hiddenSize,
 * MLGruCellOptions) -- #api-mlgraphbuilder-grucell */
#define WNN_GRU_CELL_OPTIONS(S, F, E, X)                                      \
    F(S, hidden_size, "hiddenSize", WNN_F_U32, 0)                             \
    F(S, bias, "bias", WNN_F_OPERAND, 0) /* operand */                        \
    F(S, recurrent_bias, "recurrentBias", WNN_F_OPERAND, 0) /* operand */     \
    F(S, reset_after, "resetAfter", WNN_F_BOOL, 1) /* true */                 \
    E(S, layout, "layout", WNN_F_ENUM, gru_layouts, WNN_GRU_ZRN) /* "zrn" */  \
    /* absent: sigmoid, tanh */                                               \
    E(S, activations, "activations", WNN_F_ENUM_LIST, rnn_activations, 0)
WNN_OPTIONS_STRUCT(wnn_gru_cell_options, WNN_GRU_CELL_OPTIONS)

/* lstm(input, weight, recurrentWeight, steps, hiddenSize, MLLstmOptions)
 * -- #api-mlgraphbuilder-lstm */
#define WNN_LSTM_OPTIONS(S, F, E, X)                                          \
    F(S, steps, "steps", WNN_F_U32, 0)                                        \
    F(S, hidden_size, "hiddenSize", WNN_F_U32, 0)                             \
    F(S, bias, "bias", WNN_F_OPERAND, 0) /* operand */                        \
    F(S, recurrent_bias, "recurrentBias", WNN_F_OPERAND, 0) /* operand */     \
    F(S, peephole_weight, "peepholeWeight", WNN_F_OPERAND, 0) /* operand */   \
    /* operand */                                                             \
    F(S, initial_hidden_state, "initialHiddenState", WNN_F_OPERAND, 0)        \
    /* operand */                                                             \
    F(S, initial_cell_state, "initialCellState", WNN_F_OPERAND, 0)            \
    F(S, return_sequence, "returnSequence", WNN_F_BOOL, 0) /* false */        \
    /* "forward" */                                                           \
    E(S, direction, "direction", WNN_F_ENUM, rnn_directions, WNN_RNN_FORWARD) \
    /* "iofg" */                                                              \
    E(S, layout, "layout", WNN_F_ENUM, lstm_layouts, WNN_LSTM_IOFG)           \
    /* absent: sigmoid, tanh, tanh */                                         \
    E(S, activations, "activations", WNN_F_ENUM_LIST, rnn_activations, 0)
WNN_OPTIONS_STRUCT(wnn_lstm_options, WNN_LSTM_OPTIONS)

/* lstmCell(input, weight, recurrentWeight, hiddenState, cellState,
 * hiddenSize, MLLstmCellOptions) -- #api-mlgraphbuilder-lstmcell */
#define WNN_LSTM_CELL_OPTIONS(S, F, E, X)                                     \
    F(S, hidden_size, "hiddenSize", WNN_F_U32, 0)                             \
    F(S, bias, "bias", WNN_F_OPERAND, 0) /* operand */                        \
    F(S, recurrent_bias, "recurrentBias", WNN_F_OPERAND, 0) /* operand */     \
    F(S, peephole_weight, "peepholeWeight", WNN_F_OPERAND, 0) /* operand */   \
    /* "iofg" */                                                              \
    E(S, layout, "layout", WNN_F_ENUM, lstm_layouts, WNN_LSTM_IOFG)           \
    /* absent: sigmoid, tanh, tanh */                                         \
    E(S, activations, "activations", WNN_F_ENUM_LIST, rnn_activations, 0)
WNN_OPTIONS_STRUCT(wnn_lstm_cell_options, WNN_LSTM_CELL_OPTIONS)
