/* ops_internal.h -- what checkers see: the wnn_check call record, the shared
 * validation helpers (every message names the operator, its label and the
 * argument) and the prototypes generated from ops.def. */
#ifndef WNN_OPS_INTERNAL_H
#define WNN_OPS_INTERNAL_H
#include <stdarg.h>
#include <stddef.h>

#include "options.h"
#include "webnn_core.h"

#define WNN_CHECK_LISTS 2

typedef struct wnn_check {
    wnn_op op;
    const char *label;
    const wnn_desc *in;   /* node inputs: positional operands, then the
                             present operand-valued options in field order */
    uint32_t n_in;
    const void *options;  /* the IDL defaults + the caller's values: read
                             only (checkers are pure)                      */
    void *resolved;       /* the node's parameter block, a copy of options:
                             the checker writes what it resolves there
                             (defaults that need the rank, lists as arrays)
                             and nothing else; kernels read it            */
    wnn_desc *out;        /* room for WNN_MAX_OUTPUTS descriptors           */
    uint32_t n_out;       /* set by the checker (1 unless it says more)     */
    wnn_error *err;
    /* storage of the lists a checker resolves (wnn_check_list); the builder
     * copies them into the graph after the checker: checkers never
     * allocate */
    uint32_t lists[WNN_CHECK_LISTS][WNN_MAX_RANK];
    uint32_t n_lists;
} wnn_check;

/* A resolved list of n <= WNN_MAX_RANK items for `l` (a list field of
 * c->resolved), in c's own storage: l is set present with n items and its
 * values are returned for the checker to fill in. */
uint32_t *wnn_check_list(wnn_check *c, wnn_u32_list *l, uint32_t n);

#define WNN_MAX_OUTPUTS 64

/* Field tables (options.c and each family's file), made from the X-macro
 * list that also makes the options struct (options.h):
 *   WNN_OPTIONS_TABLE(wnn_conv2d_options, WNN_CONV2D_OPTIONS);
 * ENUM fields (E rows) name a NULL-terminated list of the IDL strings,
 * defined in the family's file before the table (the value stored is the
 * index); the default is an index too. */
/* List fields (U32_LIST, I32_LIST, ENUM_LIST) have no default; their
 * `dflt` says whether the IDL type is a union of one value or a sequence
 * (split's `unsigned long or sequence<unsigned long>`): WNN_LIST_OR_ONE.
 * Any other list given as one integer (wnn_u32_list.scalar) is a TypeError,
 * raised by the builder before the checker runs. */
#define WNN_LIST_OR_ONE 1
#define WNN_OPT_ROW(S, member, camel, kind, dflt) \
    { #member, camel, kind, offsetof(S, member), NULL, (double)(dflt) },
#define WNN_OPT_ROW_ENUM(S, member, camel, kind, values, dflt) \
    { #member, camel, kind, offsetof(S, member), values, (double)(dflt) },
#define WNN_OPT_NO_ROW(...)
#define WNN_OPTIONS_TABLE(S, LIST)                                            \
    static const wnn_field S##_rows[] = {                                     \
        LIST(S, WNN_OPT_ROW, WNN_OPT_ROW_ENUM, WNN_OPT_NO_ROW)                \
    };                                                                        \
    TABLE(S, S##_rows)
#define TABLE(S, arr) \
    const wnn_field_table S##_fields = { sizeof(arr) / sizeof(arr[0]), arr }

typedef wnn_status (*wnn_check_fn)(wnn_check *c);

/* Fill c->err as a TypeError naming c's operator, label and `arg`. */
wnn_status wnn_fail(wnn_check *c, const char *arg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
wnn_status wnn_failk(wnn_error *err, wnn_error_kind kind, const char *op,
                     const char *label, const char *arg, const char *fmt,
                     ...) __attribute__((format(printf, 6, 7)));
wnn_status wnn_vfailk(wnn_error *err, wnn_error_kind kind, const char *op,
                      const char *label, const char *arg, const char *fmt,
                      va_list ap);

/* MLOperandDescriptor "check dimensions" and the byte length limit
 * (validation.c; core/context.c's wnn_desc_check gives it the context's
 * maxTensorByteLength). */
wnn_status wnn_check_dimensions(const wnn_desc *d, uint64_t max_bytes,
                                const char *op, const char *arg,
                                wnn_error *err);

/* Spec "bidirectionally broadcasting": 0 on success. */
int wnn_broadcast_shapes(const uint32_t *a, uint32_t ra, const uint32_t *b,
                         uint32_t rb, uint32_t *out, uint32_t *rout);
/* Spec "unidirectionally broadcastable": true if `from` broadcasts to `to`. */
bool wnn_unidirectional(const uint32_t *from, uint32_t rf, const uint32_t *to,
                        uint32_t rt);
/* "[2, 3, 4]" into buf. */
const char *wnn_shape_str(const uint32_t *s, uint32_t r, char *buf, size_t n);
/* Checks that two inputs have one data type. */
wnn_status wnn_check_same_dtype(wnn_check *c, uint32_t i, uint32_t j,
                                const char *ni, const char *nj);

#define WNN_OP(ID, camel, snake, sig, opts, check, limits, family, traits, lower, cpu) \
    wnn_status check(wnn_check *c);                             \
    extern const wnn_op_limits limits;
#include "ops.def"
#undef WNN_OP

extern const wnn_check_fn wnn_checkers[WNN_OP_COUNT];

#endif
