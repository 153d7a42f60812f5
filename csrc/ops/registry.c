/* registry.c -- the operator registry, made from ops.def: name, signature,
 * options size and field table, limits table and checker of every operator. */
#include <string.h>

#include "ops_internal.h"

static const wnn_op_info wnn_ops[WNN_OP_COUNT] = {
#define WNN_OP(ID, camel_, snake_, sig, opts, check, limits_, cpu) \
    [WNN_OP_##ID] = { .camel = camel_,                            \
                      .snake = snake_,                            \
                      .signature = sig,                           \
                      .options_size = sizeof(opts),               \
                      .fields = &opts##_fields,                   \
                      .limits = &limits_ },
#include "ops.def"
#undef WNN_OP
};

const wnn_check_fn wnn_checkers[WNN_OP_COUNT] = {
#define WNN_OP(ID, camel, snake, sig, opts, check, limits, cpu) \
    [WNN_OP_##ID] = check,
#include "ops.def"
#undef WNN_OP
};

const wnn_op_info *
wnn_op_get(wnn_op op)
{
    if ((unsigned)op >= WNN_OP_COUNT) {
        return NULL;
    }
    return &wnn_ops[op];
}

int
wnn_op_from_name(const char *name)
{
    for (int i = 0; i < WNN_OP_COUNT; i++) {
        if (strcmp(wnn_ops[i].camel, name) == 0 ||
            strcmp(wnn_ops[i].snake, name) == 0) {
            return i;
        }
    }
    return -1;
}
