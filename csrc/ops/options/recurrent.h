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
typedef struct wnn_gru_options {
    uint32_t steps;
    uint32_t hidden_size;
    uint32_t bias;                 /* operand */
    uint32_t recurrent_bias;       /* operand */
    uint32_t initial_hidden_state; /* operand */
    bool reset_after;              /* true */
    bool return_sequence;          /* false */
    int direction;                 /* "forward" */
    int layout;                    /* "zrn" */
    wnn_u32_list activations;      /* absent: sigmoid, tanh */
} wnn_gru_options;

/* gruCell(input, weight, recurrentWeight, hiddenState, hiddenSize,
 * MLGruCellOptions) -- #api-mlgraphbuilder-grucell */
typedef struct wnn_gru_cell_options {
    uint32_t hidden_size;
    uint32_t bias;                 /* operand */
    uint32_t recurrent_bias;       /* operand */
    bool reset_after;              /* true */
    int layout;                    /* "zrn" */
    wnn_u32_list activations;      /* absent: sigmoid, tanh */
} wnn_gru_cell_options;

/* lstm(input, weight, recurrentWeight, steps, hiddenSize, MLLstmOptions)
 * -- #api-mlgraphbuilder-lstm */
typedef struct wnn_lstm_options {
    uint32_t steps;
    uint32_t hidden_size;
    uint32_t bias;                 /* operand */
    uint32_t recurrent_bias;       /* operand */
    uint32_t peephole_weight;      /* operand */
    uint32_t initial_hidden_state; /* operand */
    uint32_t initial_cell_state;   /* operand */
    bool return_sequence;          /* false */
    int direction;                 /* "forward" */
    int layout;                    /* "iofg" */
    wnn_u32_list activations;      /* absent: sigmoid, tanh, tanh */
} wnn_lstm_options;

/* lstmCell(input, weight, recurrentWeight, hiddenState, cellState,
 * hiddenSize, MLLstmCellOptions) -- #api-mlgraphbuilder-lstmcell */
typedef struct wnn_lstm_cell_options {
    uint32_t hidden_size;
    uint32_t bias;                 /* operand */
    uint32_t recurrent_bias;       /* operand */
    uint32_t peephole_weight;      /* operand */
    int layout;                    /* "iofg" */
    wnn_u32_list activations;      /* absent: sigmoid, tanh, tanh */
} wnn_lstm_cell_options;
