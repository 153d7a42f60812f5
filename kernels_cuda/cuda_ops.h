/* cuda_ops.h -- the CUDA backend's column of the operator table
 * (csrc/ops/ops.def has the spec's rows; this file says which of them the
 * GPU runs and with which kernel), and its launcher kinds.  An X-macro
 * table, included several times (no include guard): cuda_kernels.h
 * generates the kernels' op codes (CK_U_*, CK_B_*, CK_R_*) and the run
 * launchers' declarations from it, cu_internal.h the K_* enum, cu_ops.c
 * the dispatch table (operator -> launcher kind + op code), op_limits and
 * the kinds' data types, cu_launch.c run_node's table of run launchers.
 * Adding an operator to the GPU is one row here plus its kernel; a new
 * kind is one CU_KIND row more and its run launcher in its .cu file.
 *
 *   CU_KIND(KIND, run, dtypes)
 *                           launcher kind K_<KIND>: run_node calls
 *                           `cudaError_t run(const cu_launch_args *)`
 *                           (declared by cuda_kernels.h, defined in the
 *                           family's .cu file next to its ck_* launcher);
 *                           its kernels take the data types
 *                           WNN_DT_<dtypes> (ANY or FLOAT)
 *   CU_SERVICE_KIND(KIND, dtypes)
 *                           a kind that runs on the backend's own services
 *                           (cuBLAS, its view copies: cu_blas.c,
 *                           cu_device.c), called by name in run_node
 *   CU_OP(ID, kind, code)   WNN_OP_<ID> runs on launcher `kind` (K_*), the
 *                           kernel switching on `code`
 *   CU_UNARY / CU_BINARY / CU_REDUCE(ID, code)
 *                           the same for the three families whose kernels
 *                           take an op code; the order of their rows is the
 *                           order of the codes (comparisons after
 *                           arithmetic: elementwise.cu tests op >= CK_B_EQ)
 *
 * The includer defines the macros it reads (CU_OP, CU_KIND, ...) and
 * #undefs them afterwards; CU_OP must be defined, the kind macros default
 * to nothing and the family macros to CU_OP, and those defaults are
 * #undef'd here. */
#ifndef CU_KIND
#define CU_KIND(KIND, run, dtypes)
#define CU_KIND_DEFAULTED
#endif
#ifndef CU_SERVICE_KIND
#define CU_SERVICE_KIND(KIND, dtypes)
#define CU_SERVICE_KIND_DEFAULTED
#endif
#ifndef CU_UNARY
#define CU_UNARY(ID, code) CU_OP(ID, K_UNARY, code)
#endif
#ifndef CU_BINARY
#define CU_BINARY(ID, code) CU_OP(ID, K_BINARY, code)
#endif
#ifndef CU_REDUCE
#define CU_REDUCE(ID, code) CU_OP(ID, K_REDUCE, code)
#endif

/* the launcher kinds, in K_* order (the .cu file of each run launcher) */
CU_KIND(UNARY, ck_run_unary, ANY)                       /* elementwise.cu */
CU_KIND(BINARY, ck_run_binary, ANY)                     /* elementwise.cu */
CU_KIND(WHERE, ck_run_where, ANY)                       /* elementwise.cu */
CU_KIND(CAST, ck_run_cast, ANY)                         /* elementwise.cu */
CU_KIND(COPY, ck_run_copy, ANY)                         /* movement.cu */
CU_SERVICE_KIND(VIEWS, ANY) /* transpose expand slice tile reverse split concat */
CU_KIND(PAD, ck_run_pad, ANY)                           /* movement.cu */
CU_KIND(TRI, ck_run_triangular, ANY)                    /* movement.cu */
CU_KIND(GATHER, ck_run_gather, ANY)                     /* movement.cu */
CU_KIND(GATHER_EL, ck_run_gather_elements, ANY)         /* movement.cu */
CU_KIND(GATHER_ND, ck_run_gather_nd, ANY)               /* movement.cu */
CU_KIND(SCATTER_EL, ck_run_scatter_elements, ANY)       /* movement.cu */
CU_KIND(SCATTER_ND, ck_run_scatter_nd, ANY)             /* movement.cu */
CU_KIND(NORM, ck_run_norm, FLOAT)                       /* normalization.cu */
CU_KIND(BN, ck_run_batch_norm, FLOAT)                   /* normalization.cu */
CU_KIND(SOFTMAX, ck_run_softmax, FLOAT)                 /* normalization.cu */
CU_KIND(QUANT, ck_run_quantize, ANY)                    /* normalization.cu */
CU_SERVICE_KIND(MATMUL, FLOAT)                          /* cu_blas.c */
CU_SERVICE_KIND(GEMM, FLOAT)                            /* cu_blas.c */
CU_KIND(REDUCE, ck_run_reduce, ANY)                     /* reduce.cu */
CU_KIND(ARG, ck_run_arg_min_max, ANY)                   /* reduce.cu */
CU_KIND(CUMSUM, ck_run_cumulative_sum, ANY)             /* reduce.cu */
CU_KIND(POOL, ck_run_pool2d, ANY)                       /* reduce.cu */
CU_KIND(CONV, ck_run_conv2d, FLOAT)                     /* conv.cu */
CU_KIND(RESAMPLE, ck_run_resample2d, ANY)               /* conv.cu */
CU_SERVICE_KIND(RNN, FLOAT) /* gru gruCell lstm lstmCell: cu_blas.c */

/* element-wise unary and activations (elementwise.cu ck_unary) */
CU_UNARY(ABS, CK_U_ABS)
CU_UNARY(CEIL, CK_U_CEIL)
CU_UNARY(COS, CK_U_COS)
CU_UNARY(ERF, CK_U_ERF)
CU_UNARY(EXP, CK_U_EXP)
CU_UNARY(FLOOR, CK_U_FLOOR)
CU_UNARY(LOG, CK_U_LOG)
CU_UNARY(NEG, CK_U_NEG)
CU_UNARY(RECIPROCAL, CK_U_RECIPROCAL)
CU_UNARY(ROUND_EVEN, CK_U_ROUND_EVEN)
CU_UNARY(SIN, CK_U_SIN)
CU_UNARY(SIGN, CK_U_SIGN)
CU_UNARY(SQRT, CK_U_SQRT)
CU_UNARY(TAN, CK_U_TAN)
CU_UNARY(CLAMP, CK_U_CLAMP)
CU_UNARY(ELU, CK_U_ELU)
CU_UNARY(GELU, CK_U_GELU)
CU_UNARY(HARD_SIGMOID, CK_U_HARD_SIGMOID)
CU_UNARY(HARD_SWISH, CK_U_HARD_SWISH)
CU_UNARY(LEAKY_RELU, CK_U_LEAKY_RELU)
CU_UNARY(LINEAR, CK_U_LINEAR)
CU_UNARY(RELU, CK_U_RELU)
CU_UNARY(SIGMOID, CK_U_SIGMOID)
CU_UNARY(SOFTPLUS, CK_U_SOFTPLUS)
CU_UNARY(SOFTSIGN, CK_U_SOFTSIGN)
CU_UNARY(TANH, CK_U_TANH)
CU_UNARY(LOGICAL_NOT, CK_U_LOGICAL_NOT)
CU_UNARY(IS_NAN, CK_U_IS_NAN)
CU_UNARY(IS_INFINITE, CK_U_IS_INFINITE)

/* element-wise binary, broadcasting (elementwise.cu ck_binary) */
CU_BINARY(ADD, CK_B_ADD)
CU_BINARY(SUB, CK_B_SUB)
CU_BINARY(MUL, CK_B_MUL)
CU_BINARY(DIV, CK_B_DIV)
CU_BINARY(MAX, CK_B_MAX)
CU_BINARY(MIN, CK_B_MIN)
CU_BINARY(POW, CK_B_POW)
CU_BINARY(PRELU, CK_B_PRELU)
CU_BINARY(EQUAL, CK_B_EQ)
CU_BINARY(NOT_EQUAL, CK_B_NE)
CU_BINARY(GREATER, CK_B_GT)
CU_BINARY(GREATER_OR_EQUAL, CK_B_GE)
CU_BINARY(LESSER, CK_B_LT)
CU_BINARY(LESSER_OR_EQUAL, CK_B_LE)
CU_BINARY(LOGICAL_AND, CK_B_AND)
CU_BINARY(LOGICAL_OR, CK_B_OR)
CU_BINARY(LOGICAL_XOR, CK_B_XOR)

/* reductions (reduce.cu ck_reduce) */
CU_REDUCE(REDUCE_L1, CK_R_L1)
CU_REDUCE(REDUCE_L2, CK_R_L2)
CU_REDUCE(REDUCE_LOG_SUM, CK_R_LOG_SUM)
CU_REDUCE(REDUCE_LOG_SUM_EXP, CK_R_LOG_SUM_EXP)
CU_REDUCE(REDUCE_MAX, CK_R_MAX)
CU_REDUCE(REDUCE_MEAN, CK_R_MEAN)
CU_REDUCE(REDUCE_MIN, CK_R_MIN)
CU_REDUCE(REDUCE_PRODUCT, CK_R_PRODUCT)
CU_REDUCE(REDUCE_SUM, CK_R_SUM)
CU_REDUCE(REDUCE_SUM_SQUARE, CK_R_SUM_SQUARE)

/* one launcher each */
CU_OP(IDENTITY, K_COPY, 0)
CU_OP(RESHAPE, K_COPY, 0)
CU_OP(CAST, K_CAST, 0)
CU_OP(WHERE, K_WHERE, 0)
CU_OP(GEMM, K_GEMM, 0)
CU_OP(MATMUL, K_MATMUL, 0)
CU_OP(CONCAT, K_VIEWS, 0)
CU_OP(EXPAND, K_VIEWS, 0)
CU_OP(TRANSPOSE, K_VIEWS, 0)
CU_OP(SLICE, K_VIEWS, 0)
CU_OP(SPLIT, K_VIEWS, 0)
CU_OP(TILE, K_VIEWS, 0)
CU_OP(REVERSE, K_VIEWS, 0)
CU_OP(TRIANGULAR, K_TRI, 0)
CU_OP(PAD, K_PAD, 0)
CU_OP(GATHER, K_GATHER, 0)
CU_OP(GATHER_ELEMENTS, K_GATHER_EL, 0)
CU_OP(GATHER_ND, K_GATHER_ND, 0)
CU_OP(SCATTER_ELEMENTS, K_SCATTER_EL, 0)
CU_OP(SCATTER_ND, K_SCATTER_ND, 0)
CU_OP(BATCH_NORMALIZATION, K_BN, 0)
CU_OP(INSTANCE_NORMALIZATION, K_NORM, 0)
CU_OP(LAYER_NORMALIZATION, K_NORM, 0)
CU_OP(SOFTMAX, K_SOFTMAX, 0)
CU_OP(QUANTIZE_LINEAR, K_QUANT, 0)
CU_OP(DEQUANTIZE_LINEAR, K_QUANT, 0)
CU_OP(ARG_MIN, K_ARG, 0)
CU_OP(ARG_MAX, K_ARG, 0)
CU_OP(CUMULATIVE_SUM, K_CUMSUM, 0)
CU_OP(AVERAGE_POOL2D, K_POOL, 0)
CU_OP(L2_POOL2D, K_POOL, 0)
CU_OP(MAX_POOL2D, K_POOL, 0)
CU_OP(CONV2D, K_CONV, 0)
CU_OP(CONV_TRANSPOSE2D, K_CONV, 0)
CU_OP(RESAMPLE2D, K_RESAMPLE, 0)
CU_OP(GRU, K_RNN, 0)
CU_OP(GRU_CELL, K_RNN, 0)
CU_OP(LSTM, K_RNN, 0)
CU_OP(LSTM_CELL, K_RNN, 0)

#undef CU_UNARY
#undef CU_BINARY
#undef CU_REDUCE
#ifdef CU_KIND_DEFAULTED
#undef CU_KIND
#undef CU_KIND_DEFAULTED
#endif
#ifdef CU_SERVICE_KIND_DEFAULTED
#undef CU_SERVICE_KIND
#undef CU_SERVICE_KIND_DEFAULTED
#endif
