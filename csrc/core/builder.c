/* builder.c -- MLGraphBuilder: inputs, constants, operators (generic spec
 * steps: "can build", "validating operand", the tensor-limits data type and
 * rank checks, then the operator's own checker), and build(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops_internal.h"
#include "internal.h"

/* ---- arena ------------------------------------------------------------ */
struct wnn_arena_block {
    wnn_arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *
wnn_arena_alloc(wnn_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size == 0) {
        size = 16;
    }
    wnn_arena_block *b = a->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > 16384 ? size : 16384;
        b = malloc(sizeof(*b) + cap);
        if (!b) {
            return NULL;
        }
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

char *
wnn_arena_strdup(wnn_arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = wnn_arena_alloc(a, n);
    if (p) {
        memcpy(p, s, n);
    }
    return p;
}

void
wnn_arena_free(wnn_arena *a)
{
    while (a->head) {
        wnn_arena_block *n = a->head->next;
        free(a->head);
        a->head = n;
    }
}

void
wnn_ir_free(wnn_ir *ir)
{
    if (!ir) {
        return;
    }
    for (uint32_t i = 0; i < ir->n_operands; i++) {
        wnn_operand_drop_data(&ir->operands[i]);
        if (ir->operands[i].tensor) {
            wnn_tensor_release(ir->operands[i].tensor);
        }
    }
    free(ir->operands);
    free(ir->nodes);
    free(ir->inputs);
    wnn_strmap_free(&ir->input_names);
    wnn_arena_free(&ir->arena);
    free(ir);
}

bool
wnn_grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap) {
        return true;
    }
    uint32_t nc = *cap ? *cap * 2 : 16;
    while (nc < need) {
        nc *= 2;
    }
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) {
        return false;
    }
    *p = q;
    *cap = nc;
    return true;
}

/* ---- builder ---------------------------------------------------------- */
static wnn_status
oom(wnn_error *err, const char *op)
{
    return wnn_failk(err, WNN_OUT_OF_MEMORY, op, NULL, NULL, "out of memory");
}

wnn_status
wnn_builder_create(wnn_context *c, wnn_builder **out, wnn_error *err)
{
    if (wnn_context_is_lost(c)) {
        return wnn_failk(err, WNN_INVALID_STATE, "MLGraphBuilder", NULL,
                         "context", "the context is lost");
    }
    wnn_builder *b = calloc(1, sizeof(*b));
    wnn_ir *ir = calloc(1, sizeof(*ir));
    if (!b || !ir) {
        free(b);
        free(ir);
        return oom(err, "MLGraphBuilder");
    }
    b->ir = ir;
    b->ctx = c;
    wnn_context_retain(c);
    *out = b;
    return WNN_OK;
}

void
wnn_builder_free(wnn_builder *b)
{
    if (!b) {
        return;
    }
    wnn_ir_free(b->ir);
    wnn_context_release(b->ctx);
    free(b);
}

bool
wnn_builder_has_built(const wnn_builder *b)
{
    return b->built;
}

wnn_context *
wnn_builder_context(const wnn_builder *b)
{
    return b->ctx;
}

const wnn_desc *
wnn_builder_operand_desc(const wnn_builder *b, uint32_t id)
{
    if (!b->ir || id >= b->ir->n_operands) {
        return NULL;
    }
    return &b->ir->operands[id].desc;
}

void *
wnn_builder_alloc(wnn_builder *b, size_t bytes)
{
    return b->ir ? wnn_arena_alloc(&b->ir->arena, bytes) : NULL;
}

/* "If this can not build, then throw an InvalidStateError." */
static wnn_status
check_can_build(wnn_builder *b, const char *op, const char *label,
                wnn_error *err)
{
    if (b->built || !b->ir) {
        return wnn_failk(err, WNN_INVALID_STATE, op, label, NULL,
                         "the builder has already built a graph");
    }
    if (wnn_context_is_lost(b->ctx)) {
        return wnn_failk(err, WNN_INVALID_STATE, op, label, NULL,
                         "the context is lost");
    }
    return WNN_OK;
}

static wnn_operand *
new_operand(wnn_ir *ir, uint32_t *id)
{
    if (!wnn_grow((void **)&ir->operands, &ir->cap_operands, ir->n_operands + 1,
                  sizeof(wnn_operand))) {
        return NULL;
    }
    *id = ir->n_operands++;
    wnn_operand *o = &ir->operands[*id];
    memset(o, 0, sizeof(*o));
    return o;
}

/* #api-mlgraphbuilder-input */
wnn_status
wnn_builder_input(wnn_builder *b, const char *name, const wnn_desc *d,
                  uint32_t *id, wnn_error *err)
{
    if (check_can_build(b, "input", NULL, err) != WNN_OK) {
        return WNN_ERR;
    }
    if (!name || !name[0]) {
        return wnn_failk(err, WNN_TYPE_ERROR, "input", NULL, "name",
                         "the name is empty");
    }
    wnn_ir *ir = b->ir;
    if (wnn_strmap_get(&ir->input_names, name, NULL)) {
        return wnn_failk(err, WNN_TYPE_ERROR, "input", NULL, "name",
                         "an input named '%s' already exists", name);
    }
    if (wnn_desc_check(b->ctx, d, "input", "descriptor", err) != WNN_OK) {
        return WNN_ERR;
    }
    if (!wnn_grow((void **)&ir->inputs, &ir->cap_inputs, ir->n_inputs + 1,
                  sizeof(uint32_t))) {
        return oom(err, "input");
    }
    char *nm = wnn_arena_strdup(&ir->arena, name);
    if (!nm || wnn_strmap_put(&ir->input_names, nm, ir->n_inputs) < 0) {
        return oom(err, "input");
    }
    wnn_operand *o = new_operand(ir, id);
    if (!o) {
        return oom(err, "input");
    }
    o->desc = *d;
    o->kind = WNN_OPERAND_INPUT;
    o->name = nm;
    ir->inputs[ir->n_inputs++] = *id;
    return WNN_OK;
}

/* #api-mlgraphbuilder-constant-buffer */
wnn_status
wnn_builder_constant(wnn_builder *b, const wnn_desc *d, const void *data,
                     size_t bytes, uint32_t *id, wnn_error *err)
{
    if (check_can_build(b, "constant", NULL, err) != WNN_OK ||
        wnn_desc_check(b->ctx, d, "constant", "descriptor", err) != WNN_OK) {
        return WNN_ERR;
    }
    if (bytes != wnn_desc_bytes(d)) {
        return wnn_failk(err, WNN_TYPE_ERROR, "constant", NULL, "buffer",
                         "byte length %zu differs from the descriptor's %llu",
                         bytes, (unsigned long long)wnn_desc_bytes(d));
    }
    void *copy = malloc(bytes ? bytes : 1);
    if (!copy) {
        return oom(err, "constant");
    }
    memcpy(copy, data, bytes); /* the spec requires a copy */
    wnn_operand *o = new_operand(b->ir, id);
    if (!o) {
        free(copy);
        return oom(err, "constant");
    }
    o->desc = *d;
    o->kind = WNN_OPERAND_CONSTANT;
    o->data = copy;
    return WNN_OK;
}

/* A constant whose data is not copied: the caller's memory, which must not
 * change and stays valid until release(owner) (called once, from whichever
 * thread frees the graph or the builder).  For data a library owns and never
 * writes again (webnn.onnx's weights read from the model file); the spec's
 * constant() copies.  On an error release is not called. */
wnn_status
wnn_builder_constant_view(wnn_builder *b, const wnn_desc *d, const void *data,
                          size_t bytes, void (*release)(void *owner),
                          void *owner, uint32_t *id, wnn_error *err)
{
    if (check_can_build(b, "constant", NULL, err) != WNN_OK ||
        wnn_desc_check(b->ctx, d, "constant", "descriptor", err) != WNN_OK) {
        return WNN_ERR;
    }
    if (bytes != wnn_desc_bytes(d) || !data || !release ||
        (uintptr_t)data % wnn_dtype_size(d->dtype) != 0) {
        return wnn_failk(err, WNN_TYPE_ERROR, "constant", NULL, "buffer",
                         "a viewed constant needs %llu bytes aligned to its "
                         "elements and an owner",
                         (unsigned long long)wnn_desc_bytes(d));
    }
    wnn_operand *o = new_operand(b->ir, id);
    if (!o) {
        return oom(err, "constant");
    }
    o->desc = *d;
    o->kind = WNN_OPERAND_CONSTANT;
    o->data = (void *)data;
    o->release = release;
    o->owner = owner;
    return WNN_OK;
}

void
wnn_operand_drop_data(wnn_operand *o)
{
    if (o->release) {
        if (o->data) {
            o->release(o->owner);
        }
    } else {
        free(o->data);
    }
    o->data = NULL;
    o->release = NULL;
    o->owner = NULL;
}

/* #api-mlgraphbuilder-constant-datatype-value */
wnn_status
wnn_builder_constant_scalar(wnn_builder *b, wnn_dtype t, const wnn_number *v,
                            uint32_t *id, wnn_error *err)
{
    unsigned char buf[8];
    wnn_desc d = { .dtype = t, .rank = 0 };
    if (check_can_build(b, "constant", NULL, err) != WNN_OK) {
        return WNN_ERR;
    }
    if ((unsigned)t >= WNN_DTYPE_COUNT) {
        return wnn_failk(err, WNN_TYPE_ERROR, "constant", NULL, "dataType",
                         "unknown data type");
    }
    wnn_number_store(v, t, buf);
    return wnn_builder_constant(b, &d, buf, wnn_dtype_size(t), id, err);
}

/* #api-mlgraphbuilder-constant-tensor */
wnn_status
wnn_builder_constant_tensor(wnn_builder *b, wnn_tensor *t, uint32_t *id,
                            wnn_error *err)
{
    if (t->ctx != b->ctx) {
        return wnn_failk(err, WNN_TYPE_ERROR, "constant", NULL, "tensor",
                         "the tensor belongs to another context");
    }
    if (wnn_tensor_is_destroyed(t)) {
        return wnn_failk(err, WNN_TYPE_ERROR, "constant", NULL, "tensor",
                         "the tensor is destroyed");
    }
    if (!t->constant) {
        return wnn_failk(err, WNN_TYPE_ERROR, "constant", NULL, "tensor",
                         "the tensor is not a constant tensor");
    }
    if (check_can_build(b, "constant", NULL, err) != WNN_OK) {
        return WNN_ERR;
    }
    wnn_operand *o = new_operand(b->ir, id);
    if (!o) {
        return oom(err, "constant");
    }
    o->desc = t->desc;
    o->kind = WNN_OPERAND_CONSTANT;
    o->tensor = t;
    wnn_tensor_retain(t);
    return WNN_OK;
}

/* Is `camel` a positional plain value ("%camel") of the signature? */
static bool
is_positional(wnn_op op, const char *camel)
{
    const wnn_op_params *ps = wnn_op_params_get(op);
    for (uint32_t i = 0; i < ps->n; i++) {
        if (ps->p[i].kind == WNN_PARAM_VALUE &&
            strcmp(ps->p[i].camel, camel) == 0) {
            return true;
        }
    }
    return false;
}

static int
limit_entry_named(const wnn_op_limits *l, const char *name)
{
    for (uint32_t i = 0; i < l->n_inputs; i++) {
        if (strcmp(l->e[i].name, name) == 0) {
            return (int)i;
        }
    }
    return -1;
}

static void
dtypes_str(uint16_t mask, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int t = 0; t < WNN_DTYPE_COUNT && k < n; t++) {
        if (mask & WNN_DT(t)) {
            k += snprintf(buf + k, n - k, "%s%s", k ? ", " : "",
                          wnn_dtype_name((wnn_dtype)t));
        }
    }
    if (k == 0) {
        snprintf(buf, n, "none");
    }
}

static wnn_status
check_limit(wnn_check *c, const wnn_operand_limit *l, const wnn_desc *d,
            const char *arg)
{
    char types[128];
    if (!(l->dtypes & WNN_DT(d->dtype))) {
        dtypes_str(l->dtypes, types, sizeof(types));
        return wnn_fail(c, arg, "data type %s is not supported (allowed: %s)",
                        wnn_dtype_name(d->dtype), types);
    }
    if (d->rank < l->rank_min || d->rank > l->rank_max) {
        if (l->rank_min == l->rank_max) {
            return wnn_fail(c, arg, "rank %u is not %u", d->rank, l->rank_min);
        }
        return wnn_fail(c, arg, "rank %u is not in [%u, %u]", d->rank,
                        l->rank_min, l->rank_max);
    }
    return WNN_OK;
}

/* IDL: a sequence argument given as one integer (the Python layer passes
 * unions through as `scalar` lists) is a TypeError, unless the IDL type is
 * a union with a single value (WNN_LIST_OR_ONE). */
static wnn_status
check_list_scalars(wnn_op op, const wnn_field_table *ft, const void *opts,
                   const char *name, const char *lbl, wnn_error *err)
{
    for (uint32_t i = 0; i < ft->n; i++) {
        const wnn_field *f = &ft->f[i];
        if ((f->type == WNN_F_U32_LIST || f->type == WNN_F_I32_LIST ||
             f->type == WNN_F_ENUM_LIST) && f->def != WNN_LIST_OR_ONE) {
            const wnn_u32_list *l =
                (const wnn_u32_list *)((const char *)opts + f->offset);
            if (l->present && l->scalar) {
                char an[64];
                snprintf(an, sizeof(an), "%s%s",
                         is_positional(op, f->camel) ? ""
                                                                  : "options.",
                         f->camel);
                return wnn_failk(err, WNN_TYPE_ERROR, name, lbl, an,
                                 "expected a sequence, got an integer");
            }
        }
    }
    return WNN_OK;
}

/* The node's inputs (in) with their limit entries (entry, -1: none) and
 * argument names (arg): the positional operands (a sequence one spread),
 * then the operand-valued options, whose fields in opts are rewritten from
 * operand id + 1 to node input index + 1. */
static wnn_status
gather_inputs(wnn_op op, const wnn_op_limits *lim, const uint32_t *inputs,
              uint32_t n_inputs, void *opts, uint32_t *in, int *entry,
              const char **arg, const char *name, const char *label,
              wnn_error *err)
{
    const wnn_op_params *ps = wnn_op_params_get(op);
    const wnn_field_table *ft = wnn_op_get(op)->fields;
    int seq = ps->seq;
    uint32_t n_pos = ps->n_operands;
    uint32_t n_seq = n_inputs - (n_pos - (seq >= 0 ? 1 : 0));
    if ((seq < 0 && n_inputs != n_pos) || (seq >= 0 && n_inputs + 1 < n_pos)) {
        return wnn_failk(err, WNN_TYPE_ERROR, name, label, NULL,
                         "expected %u operands, got %u", n_pos, n_inputs);
    }
    for (uint32_t p = 0, i = 0; p < n_pos; p++) {
        uint32_t cnt = (int)p == seq ? n_seq : 1;
        for (uint32_t j = 0; j < cnt && i < n_inputs; j++, i++) {
            in[i] = inputs[i];
            entry[i] = p < lim->n_inputs ? (int)p : -1;
            arg[i] = entry[i] >= 0 ? lim->e[entry[i]].name : "input";
        }
    }
    uint32_t k = n_inputs;
    for (uint32_t i = 0; i < ft->n; i++) {
        if (ft->f[i].type != WNN_F_OPERAND) {
            continue;
        }
        uint32_t *slot = (uint32_t *)((char *)opts + ft->f[i].offset);
        if (*slot == 0) {
            continue;
        }
        in[k] = *slot - 1;
        entry[k] = limit_entry_named(lim, ft->f[i].camel);
        arg[k] = ft->f[i].camel;
        *slot = k + 1; /* from operand id + 1 to node input index + 1 */
        k++;
    }
    return WNN_OK;
}

/* Enum-valued fields hold valid values (the C API can pass anything). */
static wnn_status
check_enum_fields(const wnn_field_table *ft, const void *opts,
                  const char *name, const char *lbl, wnn_error *err)
{
    for (uint32_t i = 0; i < ft->n; i++) {
        const wnn_field *f = &ft->f[i];
        int v = -1, count = 0;
        if (f->type == WNN_F_DTYPE) {
            v = (int)*(const wnn_dtype *)((const char *)opts + f->offset);
            count = WNN_DTYPE_COUNT;
        } else if (f->type == WNN_F_ENUM && f->enum_values) {
            v = *(const int *)((const char *)opts + f->offset);
            while (f->enum_values[count]) {
                count++;
            }
        } else {
            continue;
        }
        if (v < 0 || v >= count) {
            char an[64];
            snprintf(an, sizeof(an), "options.%s", f->camel);
            return wnn_failk(err, WNN_TYPE_ERROR, name, lbl, an,
                             "value %d is not a valid enumeration value", v);
        }
    }
    return WNN_OK;
}

/* The inputs are this builder's operands (their descriptors into in_desc,
 * which is c->in) and within the backend's limits. */
static wnn_status
check_inputs(wnn_check *c, const wnn_ir *ir, const wnn_op_limits *lim,
             const uint32_t *in, const int *entry, const char **arg,
             uint32_t n_inputs, wnn_desc *in_desc)
{
    for (uint32_t i = 0; i < c->n_in; i++) {
        if (in[i] >= ir->n_operands) {
            return wnn_fail(c, arg[i], "the operand is not from this builder");
        }
        in_desc[i] = ir->operands[in[i]].desc;
    }
    for (uint32_t i = 0; i < c->n_in; i++) {
        char an[64];
        snprintf(an, sizeof(an), "%s%s", i >= n_inputs ? "options." : "",
                 arg[i]);
        if (entry[i] >= 0 &&
            check_limit(c, &lim->e[entry[i]], &in_desc[i], an) != WNN_OK) {
            return WNN_ERR;
        }
    }
    return WNN_OK;
}

/* Lists the checker resolved live in c: into the graph's memory. */
static wnn_status
keep_resolved_lists(wnn_ir *ir, const wnn_field_table *ft, void *resolved,
                    const wnn_check *c, const char *name, wnn_error *err)
{
    for (uint32_t i = 0; i < ft->n && c->n_lists; i++) {
        const wnn_field *f = &ft->f[i];
        if (f->type != WNN_F_U32_LIST && f->type != WNN_F_I32_LIST &&
            f->type != WNN_F_ENUM_LIST) {
            continue;
        }
        wnn_u32_list *l = (wnn_u32_list *)((char *)resolved + f->offset);
        for (uint32_t j = 0; j < c->n_lists; j++) {
            if (l->v != c->lists[j]) {
                continue;
            }
            uint32_t *v = wnn_arena_alloc(&ir->arena,
                                          sizeof(uint32_t) * (l->n + 1));
            if (!v) {
                return oom(err, name);
            }
            memcpy(v, c->lists[j], sizeof(uint32_t) * l->n);
            l->v = v;
        }
    }
    return WNN_OK;
}

/* The outputs within the backend's limits and the context's tensor size. */
static wnn_status
check_outputs(wnn_builder *b, wnn_check *c, const wnn_op_limits *lim,
              const char *name, const char *lbl, wnn_error *err)
{
    for (uint32_t i = 0; i < c->n_out; i++) {
        uint32_t e = lim->n_inputs + i < lim->n ? lim->n_inputs + i : lim->n - 1u;
        if (check_limit(c, &lim->e[e], &c->out[i], "output") != WNN_OK ||
            wnn_desc_check(b->ctx, &c->out[i], name, "output", err) !=
                WNN_OK) {
            if (err->label[0] == '\0' && lbl) {
                snprintf(err->label, sizeof(err->label), "%s", lbl);
            }
            return WNN_ERR;
        }
    }
    return WNN_OK;
}

/* Make graph connections: the node and its output operands. */
static wnn_status
add_node(wnn_ir *ir, wnn_op op, uint32_t *in, const wnn_check *c,
         void *resolved, char *lbl, uint32_t *outs, const char *name,
         wnn_error *err)
{
    if (!wnn_grow((void **)&ir->nodes, &ir->cap_nodes, ir->n_nodes + 1,
                  sizeof(wnn_node))) {
        return oom(err, name);
    }
    uint32_t *out_ids = wnn_arena_alloc(&ir->arena, sizeof(uint32_t) * c->n_out);
    if (!out_ids) {
        return oom(err, name);
    }
    uint32_t nid = ir->n_nodes;
    for (uint32_t i = 0; i < c->n_out; i++) {
        wnn_operand *o = new_operand(ir, &out_ids[i]);
        if (!o) {
            ir->n_operands -= i; /* drop the half-made outputs */
            return oom(err, name);
        }
        o->desc = c->out[i];
        o->kind = WNN_OPERAND_NODE;
        o->node = nid;
        outs[i] = out_ids[i];
    }
    wnn_node *node = &ir->nodes[ir->n_nodes++];
    node->op = op;
    node->n_in = c->n_in;
    node->in = in;
    node->n_out = c->n_out;
    node->out = out_ids;
    node->options = resolved;
    node->label = lbl;
    return WNN_OK;
}

wnn_status
wnn_builder_op(wnn_builder *b, wnn_op op, const uint32_t *inputs,
               uint32_t n_inputs, const void *options, const char *label,
               uint32_t *outs, uint32_t max_out, uint32_t *n_out,
               wnn_error *err)
{
    const wnn_op_info *info = wnn_op_get(op);
    if (!info) {
        return wnn_failk(err, WNN_TYPE_ERROR, "MLGraphBuilder", NULL, NULL,
                         "unknown operator %d", (int)op);
    }
    const char *name = info->camel;
    if (check_can_build(b, name, label, err) != WNN_OK) {
        return WNN_ERR;
    }
    wnn_ir *ir = b->ir;
    wnn_op_limits lim;
    if (!wnn_context_op_limits(b->ctx, op, &lim)) {
        return wnn_failk(err, WNN_TYPE_ERROR, name, label, NULL,
                         "the operator is not supported by this context's "
                         "%s backend", b->ctx->backend->iface->name);
    }

    /* Node inputs: positional operands, then operand-valued options. */
    const wnn_field_table *ft = info->fields;
    uint32_t n_all = n_inputs;
    for (uint32_t i = 0; i < ft->n; i++) {
        if (ft->f[i].type == WNN_F_OPERAND &&
            *(const uint32_t *)((const char *)options + ft->f[i].offset)) {
            n_all++;
        }
    }
    uint32_t *in = wnn_arena_alloc(&ir->arena, sizeof(uint32_t) * (n_all + 1));
    wnn_desc *in_desc = malloc(sizeof(wnn_desc) * (n_all + 1));
    int *entry = malloc(sizeof(int) * (n_all + 1));
    const char **arg = malloc(sizeof(char *) * (n_all + 1));
    void *opts = wnn_arena_alloc(&ir->arena, info->options_size);
    char *lbl = label ? wnn_arena_strdup(&ir->arena, label) : NULL;
    wnn_status st = WNN_ERR;
    if (!in || !in_desc || !entry || !arg || !opts || (label && !lbl)) {
        oom(err, name);
        goto done;
    }
    memcpy(opts, options, info->options_size);
    if (check_list_scalars(op, ft, opts, name, lbl, err) != WNN_OK ||
        gather_inputs(op, &lim, inputs, n_inputs, opts, in, entry, arg, name,
                      label, err) != WNN_OK ||
        check_enum_fields(ft, opts, name, lbl, err) != WNN_OK) {
        goto done;
    }
    /* The checker reads opts and writes what it resolves into the node's
     * own copy (checkers are pure: no allocation, opts untouched). */
    void *resolved = wnn_arena_alloc(&ir->arena, info->options_size);
    if (!resolved) {
        oom(err, name);
        goto done;
    }
    memcpy(resolved, opts, info->options_size);
    wnn_check c = { .op = op, .label = lbl, .in = in_desc, .n_in = n_all,
                    .options = opts, .resolved = resolved, .err = err };
    if (check_inputs(&c, ir, &lim, in, entry, arg, n_inputs, in_desc) != WNN_OK) {
        goto done;
    }
    wnn_desc out_desc[WNN_MAX_OUTPUTS];
    c.out = out_desc;
    c.n_out = 1;
    if (wnn_checkers[op](&c) != WNN_OK) {
        goto done;
    }
    if (c.n_out > max_out) {
        wnn_fail(&c, NULL, "too many outputs (%u)", c.n_out);
        goto done;
    }
    if (keep_resolved_lists(ir, ft, resolved, &c, name, err) != WNN_OK ||
        check_outputs(b, &c, &lim, name, lbl, err) != WNN_OK ||
        add_node(ir, op, in, &c, resolved, lbl, outs, name, err) != WNN_OK) {
        goto done;
    }
    *n_out = c.n_out;
    st = WNN_OK;
done:
    free(in_desc);
    free(entry);
    free(arg);
    return st;
}
