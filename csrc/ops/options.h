/* options.h -- one C struct per IDL options dictionary (and positional plain
 * arguments, which live in the same struct).  Operand-valued members hold
 * (node input index + 1); 0 means absent.  `label` lives on the node, not
 * here.
 *
 * Each struct is described once, by an X-macro list
 *     #define WNN_<NAME>_OPTIONS(S, F, E, X)
 *         F(S, member, "camelName", WNN_F_<kind>, default)
 *         E(S, member, "camelName", WNN_F_ENUM or WNN_F_ENUM_LIST, strings, default)
 *         X(C declaration)      -- a member that is not an IDL field (what
 *                                  the checker resolves)
 *     WNN_OPTIONS_STRUCT(wnn_<name>_options, WNN_<NAME>_OPTIONS)
 * from which this header makes the struct (the member's C type follows from
 * its kind, WNN_OPT_CTYPE_*) and the family's file in csrc/ops/ makes the
 * field table through which the Python layer fills the struct generically
 * (WNN_OPTIONS_TABLE, ops_internal.h; `strings` is that file's
 * NULL-terminated list of the IDL enum strings, the value stored is the
 * index; lists and operands have no default: for lists it says whether a
 * single integer is accepted, WNN_LIST_OR_ONE). */
#ifndef WNN_OPTIONS_H
#define WNN_OPTIONS_H
#include "webnn_core.h"

#define WNN_OPT_CTYPE_WNN_F_DOUBLE double
#define WNN_OPT_CTYPE_WNN_F_NUMBER wnn_number
#define WNN_OPT_CTYPE_WNN_F_BOOL bool
#define WNN_OPT_CTYPE_WNN_F_U32 uint32_t
#define WNN_OPT_CTYPE_WNN_F_I32 int32_t
#define WNN_OPT_CTYPE_WNN_F_U32_LIST wnn_u32_list
#define WNN_OPT_CTYPE_WNN_F_I32_LIST wnn_i32_list
#define WNN_OPT_CTYPE_WNN_F_DTYPE wnn_dtype
#define WNN_OPT_CTYPE_WNN_F_ENUM int
#define WNN_OPT_CTYPE_WNN_F_ENUM_LIST wnn_u32_list
#define WNN_OPT_CTYPE_WNN_F_OPERAND uint32_t
#define WNN_OPT_CTYPE_WNN_F_F32_LIST wnn_f32_list

#define WNN_OPT_MEMBER(S, member, camel, kind, dflt) \
    WNN_OPT_CTYPE_##kind member;
#define WNN_OPT_MEMBER_ENUM(S, member, camel, kind, values, dflt) \
    WNN_OPT_CTYPE_##kind member;
#define WNN_OPT_MEMBER_RAW(...) __VA_ARGS__;
#define WNN_OPTIONS_STRUCT(S, LIST)                                           \
    typedef struct S {                                                        \
        LIST(S, WNN_OPT_MEMBER, WNN_OPT_MEMBER_ENUM, WNN_OPT_MEMBER_RAW)      \
    } S;

typedef struct wnn_no_options {
    int unused;
} wnn_no_options;

/* cast(input, dataType) -- #api-mlgraphbuilder-cast */
#define WNN_CAST_OPTIONS(S, F, E, X)                                          \
    F(S, data_type, "dataType", WNN_F_DTYPE, 0)
WNN_OPTIONS_STRUCT(wnn_cast_options, WNN_CAST_OPTIONS)

/* reshape(input, newShape) -- #api-mlgraphbuilder-reshape-method */
#define WNN_RESHAPE_OPTIONS(S, F, E, X)                                       \
    F(S, new_shape, "newShape", WNN_F_U32_LIST, 0)
WNN_OPTIONS_STRUCT(wnn_reshape_options, WNN_RESHAPE_OPTIONS)

/* MLClampOptions -- #api-mlgraphbuilder-clamp */
#define WNN_CLAMP_OPTIONS(S, F, E, X)                                         \
    /* The spec's clamp steps say "minValue ... or Infinity otherwise" and    \
     * "maxValue ... or -Infinity otherwise", which would make every default  \
     * clamp fail its min <= max check; the intent (and every implementation) \
     * is -Infinity / +Infinity. */                                           \
    F(S, min_value, "minValue", WNN_F_NUMBER, -INFINITY)                      \
    F(S, max_value, "maxValue", WNN_F_NUMBER, INFINITY)
WNN_OPTIONS_STRUCT(wnn_clamp_options, WNN_CLAMP_OPTIONS)

/* MLEluOptions */
#define WNN_ELU_OPTIONS(S, F, E, X)                                           \
    F(S, alpha, "alpha", WNN_F_DOUBLE, 1.0) /* 1 */
WNN_OPTIONS_STRUCT(wnn_elu_options, WNN_ELU_OPTIONS)

/* MLHardSigmoidOptions */
#define WNN_HARD_SIGMOID_OPTIONS(S, F, E, X)                                  \
    F(S, alpha, "alpha", WNN_F_DOUBLE, 0.2) /* 0.2 */                         \
    F(S, beta, "beta", WNN_F_DOUBLE, 0.5) /* 0.5 */
WNN_OPTIONS_STRUCT(wnn_hard_sigmoid_options, WNN_HARD_SIGMOID_OPTIONS)

/* MLLeakyReluOptions */
#define WNN_LEAKY_RELU_OPTIONS(S, F, E, X)                                    \
    F(S, alpha, "alpha", WNN_F_DOUBLE, 0.01) /* 0.01 */
WNN_OPTIONS_STRUCT(wnn_leaky_relu_options, WNN_LEAKY_RELU_OPTIONS)

/* MLLinearOptions */
#define WNN_LINEAR_OPTIONS(S, F, E, X)                                        \
    F(S, alpha, "alpha", WNN_F_DOUBLE, 1.0) /* 1 */                           \
    F(S, beta, "beta", WNN_F_DOUBLE, 0.0) /* 0 */
WNN_OPTIONS_STRUCT(wnn_linear_options, WNN_LINEAR_OPTIONS)

/* MLGemmOptions -- #api-mlgraphbuilder-gemm */
#define WNN_GEMM_OPTIONS(S, F, E, X)                                          \
    F(S, c, "c", WNN_F_OPERAND, 0) /* operand */                              \
    F(S, alpha, "alpha", WNN_F_DOUBLE, 1.0) /* 1 */                           \
    F(S, beta, "beta", WNN_F_DOUBLE, 1.0) /* 1 */                             \
    F(S, a_transpose, "aTranspose", WNN_F_BOOL, 0)                            \
    F(S, b_transpose, "bTranspose", WNN_F_BOOL, 0)
WNN_OPTIONS_STRUCT(wnn_gemm_options, WNN_GEMM_OPTIONS)

/* the options of the families in ops/defs/ (their WNN_DEF_OPTIONS sections) */
#define WNN_DEF_OPTIONS
#include "ops.def"
#undef WNN_DEF_OPTIONS

#define WNN_OP(ID, camel, snake, sig, opts, check, limits, family, traits, lower, cpu) \
    extern const wnn_field_table opts##_fields;
#include "ops.def"
#undef WNN_OP

#endif
