/* registry.c -- the operator registry, made from ops.def: name, signature,
 * options size and field table, limits table and checker of every operator. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ops_internal.h"

static const wnn_op_info wnn_ops[WNN_OP_COUNT] = {
#define WNN_OP(ID, camel_, snake_, sig, opts, check, limits_, fam_, traits_, lower, cpu) \
    [WNN_OP_##ID] = { .camel = camel_,                            \
                      .snake = snake_,                            \
                      .signature = sig,                           \
                      .options_size = sizeof(opts),               \
                      .fields = &opts##_fields,                   \
                      .limits = &limits_,                         \
                      .family = WNN_FAMILY_##fam_,                \
                      .traits = (traits_) },
#include "ops.def"
#undef WNN_OP
};

const wnn_check_fn wnn_checkers[WNN_OP_COUNT] = {
#define WNN_OP(ID, camel, snake, sig, opts, check, limits, family, traits, lower, cpu) \
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

wnn_family
wnn_op_family(wnn_op op)
{
    return (unsigned)op < WNN_OP_COUNT ? wnn_ops[op].family
                                       : WNN_FAMILY_COUNT;
}

bool
wnn_op_has(wnn_op op, uint32_t traits)
{
    return (unsigned)op < WNN_OP_COUNT && (wnn_ops[op].traits & traits);
}

const char *
wnn_family_name(wnn_family f)
{
    static const char *const names[WNN_FAMILY_COUNT] = {
#define WNN_DEF_FAMILIES
#define WNN_FAMILY(F) #F,
#include "ops.def"
#undef WNN_FAMILY
#undef WNN_DEF_FAMILIES
    };
    return (unsigned)f < WNN_FAMILY_COUNT ? names[f] : NULL;
}

const char *
wnn_trait_name(uint32_t bit)
{
    static const char *const names[WNN_TR_BIT_COUNT] = {
#define WNN_TRAIT_NAME(T) #T,
        WNN_TRAITS(WNN_TRAIT_NAME)
#undef WNN_TRAIT_NAME
    };
    return bit < WNN_TR_BIT_COUNT ? names[bit] : NULL;
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

/* ---- signatures: parsed once, here ------------------------------------- */
static wnn_op_params wnn_params[WNN_OP_COUNT];
static char wnn_param_names[WNN_OP_COUNT][WNN_MAX_PARAMS][2][40];
static pthread_once_t wnn_params_once = PTHREAD_ONCE_INIT;

/* python-api.md's rule: '_' before an uppercase letter that follows a
 * lowercase letter or a digit; then lowercase. */
static void
snake_of(const char *camel, char *buf, size_t n)
{
    size_t k = 0;
    for (const char *p = camel; *p && k + 2 < n; p++) {
        if (*p >= 'A' && *p <= 'Z' && p > camel &&
            ((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= '0' && p[-1] <= '9'))) {
            buf[k++] = '_';
        }
        buf[k++] = (*p >= 'A' && *p <= 'Z') ? (char)(*p - 'A' + 'a') : *p;
    }
    buf[k] = '\0';
}

static void
parse_signatures(void)
{
    for (int op = 0; op < WNN_OP_COUNT; op++) {
        const wnn_op_info *info = &wnn_ops[op];
        wnn_op_params *ps = &wnn_params[op];
        ps->seq = -1;
        for (const char *p = info->signature; *p;) {
            while (*p == ' ') {
                p++;
            }
            const char *start = p;
            while (*p && *p != ' ') {
                p++;
            }
            if (p == start) {
                continue;
            }
            if (strncmp(start, "->list", (size_t)(p - start)) == 0) {
                ps->returns_list = true;
                continue;
            }
            if (ps->n >= WNN_MAX_PARAMS) {
                break; /* ops.def has at most 6 */
            }
            wnn_param *prm = &ps->p[ps->n];
            prm->field = -1;
            prm->kind = WNN_PARAM_OPERAND;
            if (*start == '*') {
                prm->kind = WNN_PARAM_SEQUENCE;
                ps->seq = (int)ps->n_operands;
                start++;
            } else if (*start == '%') {
                prm->kind = WNN_PARAM_VALUE;
                start++;
            }
            char *camel = wnn_param_names[op][ps->n][0];
            char *snake = wnn_param_names[op][ps->n][1];
            snprintf(camel, 40, "%.*s", (int)(p - start), start);
            snake_of(camel, snake, 40);
            prm->camel = camel;
            prm->snake = snake;
            if (prm->kind == WNN_PARAM_VALUE) {
                for (uint32_t f = 0; f < info->fields->n; f++) {
                    if (strcmp(info->fields->f[f].camel, camel) == 0) {
                        prm->field = (int)f;
                    }
                }
            } else {
                ps->n_operands++;
            }
            ps->n++;
        }
    }
}

const wnn_op_params *
wnn_op_params_get(wnn_op op)
{
    if ((unsigned)op >= WNN_OP_COUNT) {
        return NULL;
    }
    pthread_once(&wnn_params_once, parse_signatures);
    return &wnn_params[op];
}

void
wnn_op_operand_name(wnn_op op, uint32_t i, uint32_t n, char *buf, size_t len)
{
    const wnn_op_params *ps = wnn_op_params_get(op);
    const char *names[WNN_MAX_PARAMS];
    uint32_t k = 0;
    for (uint32_t j = 0; ps && j < ps->n; j++) {
        if (ps->p[j].kind != WNN_PARAM_VALUE) {
            names[k++] = ps->p[j].camel;
        }
    }
    if (!ps || ps->seq < 0) {
        snprintf(buf, len, "%s", i < k ? names[i] : "operand");
        return;
    }
    uint32_t seq = (uint32_t)ps->seq;
    uint32_t n_seq = n + 1 >= k ? n + 1 - k : 0;
    if (i < seq) {
        snprintf(buf, len, "%s", names[i]);
    } else if (i < seq + n_seq) {
        snprintf(buf, len, "%s[%u]", names[seq], i - seq);
    } else {
        uint32_t t = i - n_seq + 1;
        snprintf(buf, len, "%s", t < k ? names[t] : "operand");
    }
}
