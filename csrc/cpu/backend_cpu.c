/* backend_cpu.c -- the CPU backend: host memory, kernels in cpu/kernels/<family>/ and
 * BLIS in cpu/blis.  compile() prepares each step of the schedule
 * (g->schedule, backend/steps.h) once: constants kept, packed weights,
 * epilogues, element-wise runs, quantized regions; execute() is one loop
 * over the steps that resolves their operands through the plan's slots
 * (graph tensor, constant, scratch arena) and calls the step's kernel. */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../ops/ops_internal.h"
#include "cpu.h"

static const cpu_kernel cpu_kernels[WNN_OP_COUNT] = {
#define WNN_OP(ID, camel, snake, sig, opts, check, limits, family, traits, lower, cpu) \
    [WNN_OP_##ID] = cpu,
#include "../ops/ops.def"
#undef WNN_OP
};

/* the backend (its base first: the core sees a wnn_backend) */
typedef struct cpu_backend {
    wnn_backend base;
    bool fold_bn;            /* cpu_config_fold_bn() at creation          */
} cpu_backend;

typedef struct cpu_node cpu_node;
/* the state of one step of the schedule (g->schedule.steps[i] for
 * c->nodes[i], backend/steps.h) */
struct cpu_node {
    const wnn_step *step;
    cpu_call call;
    const void **in;
    void **out;
    wnn_desc *in_desc, *out_desc;
    /* an epilogue chain (WNN_STEP_EPILOGUE): the producer's kernel with
     * the chain's epilogue, writing the step's result */
    cpu_epi epi;
    /* a batchNormalization in the chain (WNN_FUSE_BN): its node, and its
     * coefficients (3 C doubles, remade per dispatch from its operands) */
    const wnn_node *bn_node;
    double *bn_coef;
    /* or that normalization folded into the conv2d's constant filter and
     * bias at compile (fold_bn): the kernel reads these instead, the bias
     * as input fold_bias_in of fold_opts */
    float *fold_w, *fold_b;
    uint32_t fold_bias_in;
    wnn_conv2d_options fold_opts;
    cpu_prep prep;           /* data the kernel prepared (cpu.h)          */
    cpu_chain *chain;        /* an element-wise run (WNN_STEP_ELTWISE)     */
    cpu_qdq *qdq;            /* a quantized region (WNN_STEP_QDQ)          */
    cpu_attn *attn;          /* an attention block (WNN_STEP_ATTENTION)    */
    cpu_prog *prog;          /* the epilogue's program (epi.prog)          */
    /* conv pairs (kernels/conv/pair.c, WNN_STEP_CONV_PAIR): the expansion
     * run inside this depthwise chain, the depthwise chain run inside this
     * projection (its own expansion in its pre_e), or NULL: the step's
     * pre_e, pre_d (inner steps, never run alone) */
    cpu_node *pre_e, *pre_d;
    const void **chain_ptrs; /* its operands' addresses, per dispatch      */
};

typedef struct cpu_compiled {
    unsigned char *arena;
    void **constants;        /* per operand: host pointer of constant data */
    void **owned;            /* copies of constant tensors                 */
    uint32_t n_owned;
    cpu_node *nodes;
    uint32_t n_nodes;
    cpu_config config;       /* kernel choices, read at compile            */
    pthread_mutex_t mu;      /* one execution at a time per graph          */
} cpu_compiled;

static bool
cpu_op_limits(wnn_backend *be, wnn_op op, wnn_op_limits *out)
{
    (void)be;
    if (!cpu_kernels[op]) {
        return false;
    }
    *out = *wnn_op_get(op)->limits;
    return true;
}

static void
cpu_compiled_free(wnn_backend *be, void *p)
{
    (void)be;
    cpu_compiled *c = p;
    if (!c) {
        return;
    }
    for (uint32_t i = 0; i < c->n_owned; i++) {
        free(c->owned[i]);
    }
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        cpu_chain_free(c->nodes[i].chain);
        cpu_qdq_free(c->nodes[i].qdq);
        cpu_attn_free(c->nodes[i].attn);
        for (int s = 0; s < CPU_PREP_SLOTS; s++) {
            free(c->nodes[i].prep.slot[s]);
        }
        free(c->nodes[i].prep.scratch);
        free(c->nodes[i].chain_ptrs);
        free(c->nodes[i].bn_coef);
        free(c->nodes[i].prog);
        free(c->nodes[i].fold_w);
        free(c->nodes[i].fold_b);
        free(c->nodes[i].in);
        free(c->nodes[i].out);
        free(c->nodes[i].in_desc);
        free(c->nodes[i].out_desc);
    }
    pthread_mutex_destroy(&c->mu);
    free(c->nodes);
    free(c->owned);
    free(c->constants);
    free(c->arena);
    free(c);
}

static bool
is_constant(const wnn_graph *g, uint32_t id)
{
    return g->plan.slots[id].kind == WNN_SLOT_CONSTANT;
}

/* conv2d -> batchNormalization over its channels (a WNN_FUSE_BN chain)
 * with the filter, the conv's bias and mean, variance, scale and bias all
 * constants -- how ONNX exports of ResNet, DenseNet, ShuffleNet arrive --
 * folded once into the filter and bias, as ONNX Runtime does: with
 * a = scale / sqrt(variance + epsilon) (batchNormalization's own double
 * expression), filter[o] * a[o] and (bias[o] - mean[o]) * a[o] + beta[o],
 * each computed in double and rounded once.  The kernel then runs with no
 * normalization at all (and its add / activation in registers); results
 * differ from the unfused graph's by the rounding of the scaled filter (a
 * few float32 ulps of the convolution's terms).  1: folded, 0: not
 * foldable, -1: out of memory. */
static int
fold_bn(const wnn_graph *g, cpu_compiled *c, cpu_node *cn)
{
    const wnn_node *node = cn->call.node, *bn = cn->bn_node;
    if (!c->config.fold_bn || node->op != WNN_OP_CONV2D ||
        cn->out_desc[0].dtype != WNN_FLOAT32 ||
        cn->in_desc[1].dtype != WNN_FLOAT32) {
        return 0;
    }
    const wnn_conv2d_options *o = node->options;
    const wnn_batch_normalization_options *bo = bn->options;
    if (!is_constant(g, node->in[1]) ||
        (o->bias && !is_constant(g, node->in[o->bias - 1]))) {
        return 0;
    }
    for (uint32_t j = 1; j < bn->n_in; j++) {
        if (!is_constant(g, bn->in[j])) {
            return 0;
        }
    }
    const int64_t O = cn->out_desc[0].shape[cn->epi.channel_axis];
    const uint64_t nw = wnn_desc_elements(&cn->in_desc[1]);
    if (O <= 0 || nw % (uint64_t)O) {
        return 0;
    }
    const float *w = c->constants[node->in[1]];
    const float *cb = o->bias ? c->constants[node->in[o->bias - 1]] : NULL;
    const float *mean = c->constants[bn->in[1]];
    const float *var = c->constants[bn->in[2]];
    const float *scale = bo->scale ? c->constants[bn->in[bo->scale - 1]] : NULL;
    const float *beta = bo->bias ? c->constants[bn->in[bo->bias - 1]] : NULL;
    double *coef = malloc(3 * sizeof(double) * (size_t)O);
    cn->fold_w = malloc(sizeof(float) * nw);
    cn->fold_b = malloc(sizeof(float) * (size_t)O);
    if (!coef || !cn->fold_w || !cn->fold_b) {
        free(coef);
        return -1;
    }
    /* m, a, b as the normalization's kernel makes them */
    cpu_bn_coefficients(mean, var, scale, beta, bo->epsilon, O, coef);
    const double *m = coef, *a = coef + O, *b = coef + 2 * O;
    for (int64_t k = 0; k < O; k++) {
        cn->fold_b[k] = (float)(((cb ? (double)cb[k] : 0.0) - m[k]) * a[k] + b[k]);
    }
    /* the output channel is the filter's first axis (oihw, ohwi) or its
     * last (hwio, ihwo) */
    const bool o_first = o->filter_layout == WNN_CONV_OIHW ||
                         o->filter_layout == WNN_CONV_OHWI;
    const uint64_t per = nw / (uint64_t)O;
    for (uint64_t i = 0; i < nw; i++) {
        uint64_t k = o_first ? i / per : i % (uint64_t)O;
        cn->fold_w[i] = (float)((double)w[i] * a[k]);
    }
    free(coef);
    cn->fold_opts = *o;
    cn->fold_bias_in = o->bias ? o->bias - 1 : node->n_in;
    cn->fold_opts.bias = cn->fold_bias_in + 1;
    if (!o->bias) { /* a bias input of its own (in and in_desc have room) */
        cn->in_desc[node->n_in] = (wnn_desc){ .dtype = WNN_FLOAT32, .rank = 1,
                                              .shape = { (uint32_t)O } };
        cn->call.n_in = node->n_in + 1;
    }
    cn->call.options = &cn->fold_opts;
    cn->call.const_in |= 1u << cn->fold_bias_in;
    cn->bn_node = NULL; /* no coefficients per dispatch, no epi.bn */
    return 1;
}

static cpu_compiled *
compiled_new(wnn_backend *be, const wnn_graph *g)
{
    const wnn_plan *p = &g->plan;
    cpu_compiled *c = calloc(1, sizeof(*c));
    if (!c) {
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    cpu_config_read(&c->config);
    c->config.fold_bn = ((const cpu_backend *)be)->fold_bn;
    c->constants = calloc(g->ir->n_operands + 1, sizeof(void *));
    c->owned = calloc(g->ir->n_operands + 1, sizeof(void *));
    c->nodes = calloc(g->schedule.n_steps + 1, sizeof(cpu_node));
    c->arena = p->arena_bytes ? wnn_host_alloc(p->arena_bytes) : NULL;
    if (!c->constants || !c->owned || !c->nodes ||
        (p->arena_bytes && !c->arena)) {
        cpu_compiled_free(be, c);
        return NULL;
    }
    c->n_nodes = g->schedule.n_steps; /* freed per step from here on */
    return c;
}

/* the constants' host addresses; constant tensors copied (a tensor may be
 * destroyed after build) */
static bool
keep_constants(const wnn_graph *g, cpu_compiled *c)
{
    for (uint32_t i = 0; i < g->ir->n_operands; i++) {
        const wnn_operand *o = &g->ir->operands[i];
        if (g->plan.slots[i].kind != WNN_SLOT_CONSTANT) {
            continue;
        }
        if (o->tensor) {
            void *copy = malloc(o->tensor->bytes);
            if (!copy) {
                return false;
            }
            memcpy(copy, o->tensor->storage, o->tensor->bytes);
            c->owned[c->n_owned++] = copy;
            c->constants[i] = copy;
        } else {
            c->constants[i] = o->data;
        }
    }
    return true;
}

/* an element-wise run (WNN_STEP_ELTWISE): one pass (chain.c) */
static bool
prepare_run(const wnn_graph *g, const wnn_step *s, cpu_node *cn)
{
    const uint32_t *ops;
    cn->chain = cpu_chain_make(g, s->nodes, s->n_nodes);
    if (!cn->chain) {
        return false;
    }
    uint32_t no = cpu_chain_operands(cn->chain, &ops);
    cn->chain_ptrs = calloc(no + 1, sizeof(void *));
    return cn->chain_ptrs != NULL;
}

/* the node of value v (v >= 1), or NULL */
static const cpu_prog_node *
prog_node(const cpu_prog *pg, int v)
{
    return v >= 1 && v <= (int)pg->n ? &pg->nodes[v - 1] : NULL;
}

/* nd is op(value, scalar), or op(scalar, value) but for pow: the value's
 * index in *v, the scalar in *s */
static bool
scalar_op(const cpu_prog_node *nd, wnn_op op, int *v, float *s)
{
    if (!nd || nd->op != op || !nd->binary) {
        return false;
    }
    if (nd->src[0] >= 0 && nd->src[1] < 0) {
        *v = nd->src[0];
    } else if (nd->src[1] >= 0 && nd->src[0] < 0 && op != WNN_OP_POW) {
        *v = nd->src[1];
    } else {
        return false;
    }
    *s = nd->s;
    return true;
}

/* GPT-2's tanh gelu, (t a) (tanh((t + t^3 b) c) + d), as its exporter
 * writes it (any order of the nodes; the scalars on either side): the
 * program's kind CPU_PROG_GELU_TANH, run in registers (vl_gelu_tanh) */
static void
prog_gelu_tanh(cpu_prog *pg)
{
    const cpu_prog_node *l = &pg->nodes[pg->n - 1];
    if (pg->n != 8 || l->op != WNN_OP_MUL || !l->binary || l->src[0] < 1 ||
        l->src[1] < 1) {
        return;
    }
    for (int o = 0; o < 2; o++) {
        int vt, ve, vc, va, ct;
        float k[4], three;
        const cpu_prog_node *gn = prog_node(pg, l->src[o]);
        const cpu_prog_node *fn = prog_node(pg, l->src[1 - o]), *en, *cn;
        if (!scalar_op(gn, WNN_OP_MUL, &vt, &k[0]) || vt != 0 ||
            !scalar_op(fn, WNN_OP_ADD, &ve, &k[3]) ||
            !(en = prog_node(pg, ve)) || en->op != WNN_OP_TANH || en->binary ||
            !scalar_op(prog_node(pg, en->src[0]), WNN_OP_MUL, &vc, &k[2]) ||
            !(cn = prog_node(pg, vc)) || cn->op != WNN_OP_ADD || !cn->binary) {
            continue;
        }
        ct = cn->src[0] == 0 ? 0 : cn->src[1] == 0 ? 1 : -1;
        if (ct < 0 ||
            !scalar_op(prog_node(pg, cn->src[1 - ct]), WNN_OP_MUL, &va, &k[1]) ||
            !scalar_op(prog_node(pg, va), WNN_OP_POW, &vt, &three) ||
            vt != 0 || three != 3.0f) {
            continue;
        }
        pg->kind = CPU_PROG_GELU_TANH;
        memcpy(pg->k, k, sizeof(k));
        pg->order = ct | o << 1;
        return;
    }
}

/* an epilogue chain's program (fuse.c prog_of): each node's operands as
 * value indices (0: the running value, k: node k - 1's result), its scalar
 * read from the graph's constants now */
static bool
prepare_prog(const wnn_graph *g, const cpu_compiled *c, const wnn_epilogue *e,
             cpu_node *cn)
{
    const wnn_ir *ir = g->ir;
    cpu_prog *pg = calloc(1, sizeof(*pg));
    if (!pg) {
        return false;
    }
    pg->n = e->n_prog;
    /* vals[k]: the operand id of value k (0: the chain's running value,
     * the first program node's input that no program node produces) */
    uint32_t vals[WNN_EPI_PROG_MAX + 1];
    vals[0] = WNN_NO_NODE;
    for (uint32_t i = 0; i < e->n_prog; i++) {
        vals[i + 1] = ir->nodes[e->prog[i]].out[0];
    }
    for (uint32_t i = 0; i < e->n_prog; i++) {
        const wnn_node *nd = &ir->nodes[e->prog[i]];
        cpu_prog_node *pn = &pg->nodes[i];
        pn->op = nd->op;
        pn->binary = nd->n_in == 2;
        wnn_scalar_params_of(nd->op, nd->options, WNN_FLOAT32, &pn->pr);
        for (uint32_t j = 0; j < nd->n_in; j++) {
            uint32_t id = nd->in[j];
            int v = -1;
            for (uint32_t k = 1; k <= i && v < 0; k++) {
                v = vals[k] == id ? (int)k : -1;
            }
            if (v < 0 && ir->operands[id].kind == WNN_OPERAND_CONSTANT &&
                wnn_desc_elements(&ir->operands[id].desc) == 1 &&
                c->constants[id]) {
                pn->s = *(const float *)c->constants[id];
            } else if (v < 0) {
                v = 0; /* the running value */
            }
            pn->src[j] = v;
        }
    }
    prog_gelu_tanh(pg);
    cn->prog = pg;
    cn->epi.prog = pg;
    return true;
}

/* an epilogue chain's epilogue: [bn] -> [add] -> [activation | gate |
 * program] */
static bool
prepare_epilogue(const wnn_graph *g, const cpu_compiled *c, const wnn_step *s,
                 cpu_node *cn)
{
    const wnn_ir *ir = g->ir;
    const wnn_node *act = s->act != WNN_NO_NODE ? &ir->nodes[s->act] : NULL;
    cn->epi = (cpu_epi){ .act = act ? act->op : WNN_OP_COUNT,
                         .gate = s->epi->gate != 0,
                         .add_kind = s->epi->add_kind,
                         .channel_axis = s->epi->channel_axis,
                         .n = s->epi_n, .C = s->epi_c,
                         .inner = s->epi_inner,
                         .dtype = cn->out_desc[0].dtype };
    if (act) {
        wnn_scalar_params_of(act->op, act->options, cn->out_desc[0].dtype,
                             &cn->epi.pr);
    }
    if (s->epi->n_prog && !prepare_prog(g, c, s->epi, cn)) {
        return false;
    }
    if (s->bn != WNN_NO_NODE) {
        cn->bn_node = &ir->nodes[s->bn];
        cn->bn_coef = malloc(s->scratch);
        return cn->bn_coef != NULL;
    }
    return true;
}

/* a kernel's call (a node, an epilogue chain's producer, a conv pair's
 * convolution): descriptors, epilogue, constant inputs, folded bn */
static bool
prepare_kernel(const wnn_graph *g, cpu_compiled *c, const wnn_step *s,
               cpu_node *cn)
{
    const wnn_ir *ir = g->ir;
    const wnn_node *node = &ir->nodes[s->node];
    cn->in = calloc(node->n_in + 1, sizeof(void *));
    cn->out = calloc(node->n_out + 1, sizeof(void *));
    cn->in_desc = calloc(node->n_in + 1, sizeof(wnn_desc));
    cn->out_desc = calloc(node->n_out + 1, sizeof(wnn_desc));
    if (!cn->in || !cn->out || !cn->in_desc || !cn->out_desc) {
        return false;
    }
    uint32_t const_in = 0;
    for (uint32_t j = 0; j < node->n_in; j++) {
        cn->in_desc[j] = ir->operands[node->in[j]].desc;
        if (j < 32 && is_constant(g, node->in[j])) {
            const_in |= 1u << j;
        }
    }
    for (uint32_t j = 0; j < node->n_out; j++) {
        cn->out_desc[j] = ir->operands[node->out[j]].desc;
    }
    if (s->epi && !prepare_epilogue(g, c, s, cn)) {
        return false;
    }
    cn->call = (cpu_call){ .node = node,
                           .prep = &cn->prep,
                           .const_in = const_in,
                           .epi = s->epi ? &cn->epi : NULL,
                           .config = &c->config,
                           .lowered = s->lowered,
                           .options = node->options,
                           .n_in = node->n_in,
                           .n_out = node->n_out,
                           .in_desc = cn->in_desc,
                           .in = (const void *const *)cn->in,
                           .out_desc = cn->out_desc,
                           .out = cn->out };
    return !(cn->bn_node && node->n_in < 32 && fold_bn(g, c, cn) < 0);
}

/* compile(): each step of the schedule (g->schedule) prepared once; the
 * conv pairs' steps linked to the steps they run inside */
static wnn_status
cpu_compile(wnn_backend *be, const wnn_graph *g, void **out, wnn_error *err)
{
    const wnn_schedule *s = &g->schedule;
    cpu_compiled *c = compiled_new(be, g);
    bool ok = c && keep_constants(g, c);
    for (uint32_t i = 0; ok && i < s->n_steps; i++) {
        const wnn_step *st = &s->steps[i];
        cpu_node *cn = &c->nodes[i];
        cn->step = st;
        cn->call.node = &g->ir->nodes[st->node];
        switch (st->kind) {
        case WNN_STEP_QDQ:
            ok = (cn->qdq = cpu_qdq_make(g, st->epi, c->constants)) != NULL;
            break;
        case WNN_STEP_ELTWISE: ok = prepare_run(g, st, cn); break;
        case WNN_STEP_ATTENTION:
            ok = (cn->attn = cpu_attn_make(g, st, &c->config)) != NULL;
            break;
        default: ok = prepare_kernel(g, c, st, cn); break;
        }
        cn->pre_e = st->pre_e ? &c->nodes[st->pre_e - 1] : NULL;
        cn->pre_d = st->pre_d ? &c->nodes[st->pre_d - 1] : NULL;
    }
    if (!ok) {
        cpu_compiled_free(be, c);
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                         "out of memory while compiling for the CPU");
    }
    *out = c;
    return WNN_OK;
}

static void *
resolve(const wnn_graph *g, cpu_compiled *c, uint32_t id, void *const *in,
        void *const *out)
{
    const wnn_slot *s = &g->plan.slots[id];
    switch (s->kind) {
    case WNN_SLOT_INPUT: return in[s->index];
    case WNN_SLOT_OUTPUT: return out[s->index];
    case WNN_SLOT_CONSTANT: return c->constants[id];
    case WNN_SLOT_ARENA: return c->arena + s->offset;
    default: return NULL;
    }
}

/* a fused batchNormalization's coefficients for this dispatch, as
 * cpu_batch_normalization makes them: m = mean, a = scale / sqrt(variance
 * + epsilon), b = bias (all float32 [C], fuse.c) */
static void
bn_coefficients(const wnn_graph *g, cpu_compiled *c, cpu_node *cn,
                void *const *in, void *const *out)
{
    const wnn_node *n = cn->bn_node;
    const wnn_batch_normalization_options *o = n->options;
    const int64_t C = g->ir->operands[n->in[1]].desc.shape[0];
    const float *mean = resolve(g, c, n->in[1], in, out);
    const float *var = resolve(g, c, n->in[2], in, out);
    const float *scale = o->scale ? resolve(g, c, n->in[o->scale - 1], in, out)
                                  : NULL;
    const float *bias = o->bias ? resolve(g, c, n->in[o->bias - 1], in, out)
                                : NULL;
    double *m = cn->bn_coef;
    cpu_bn_coefficients(mean, var, scale, bias, o->epsilon, C, m);
    cn->epi.bn = m;
    cn->epi.bn_c = C;
}

/* a kernel step's operand addresses for this dispatch */
static void
bind(const wnn_graph *g, cpu_compiled *c, cpu_node *cn, void *const *in,
     void *const *out)
{
    const wnn_step *s = cn->step;
    for (uint32_t j = 0; j < s->n_in; j++) {
        cn->in[j] = resolve(g, c, s->in[j], in, out);
    }
    for (uint32_t j = 0; j < s->n_out; j++) {
        cn->out[j] = resolve(g, c, s->out[j], in, out);
    }
    if (cn->call.epi) {
        cn->epi.addend = s->addend != WNN_NO_NODE
                             ? resolve(g, c, s->addend, in, out)
                             : NULL;
        cn->epi.applied = false;
        if (cn->bn_node) {
            bn_coefficients(g, c, cn, in, out);
        }
    }
    if (s->epi && s->epi->in_scale) { /* s after the producer's inputs */
        cn->call.in_scale = cn->in[s->n_in - 1];
    }
    if (cn->fold_w) {
        cn->in[1] = cn->fold_w;
        cn->in[cn->fold_bias_in] = cn->fold_b;
    }
}

static uint64_t
mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One step of the schedule: a node's kernel, an epilogue chain, an
 * element-wise run, a quantized region, a conv pair. */
static wnn_status
run_step(const wnn_graph *g, cpu_compiled *c, cpu_node *cn, void *const *in,
         void *const *out, wnn_error *err)
{
    if (cn->qdq) {
        uint32_t w = cpu_qdq_weights(cn->qdq);
        return cpu_qdq_run(cn->qdq,
                           resolve(g, c, cpu_qdq_input(cn->qdq), in, out),
                           w == UINT32_MAX ? NULL : resolve(g, c, w, in, out),
                           resolve(g, c, cn->step->result, in, out), err);
    }
    if (cn->attn) {
        const uint32_t *i = cn->step->in;
        return cpu_attn_run(cn->attn, resolve(g, c, i[0], in, out),
                            resolve(g, c, i[1], in, out),
                            resolve(g, c, i[2], in, out),
                            cn->step->n_in > 3 ? resolve(g, c, i[3], in, out)
                                               : NULL,
                            resolve(g, c, cn->step->result, in, out));
    }
    if (cn->chain) {
        const uint32_t *ops;
        uint32_t no = cpu_chain_operands(cn->chain, &ops);
        for (uint32_t j = 0; j < no; j++) {
            cn->chain_ptrs[j] = resolve(g, c, ops[j], in, out);
        }
        cpu_chain_run(cn->chain, cn->chain_ptrs,
                      resolve(g, c, cn->step->result, in, out));
        return WNN_OK;
    }
    const wnn_node *node = cn->call.node;
    bind(g, c, cn, in, out);
    if (cn->pre_e || cn->pre_d) { /* linked conv pairs: one kernel */
        cpu_node *d = cn->pre_d ? cn->pre_d : cn;
        cpu_node *pj = cn->pre_d ? cn : NULL, *e = d->pre_e;
        if (d != cn) {
            bind(g, c, d, in, out);
        }
        if (e) {
            bind(g, c, e, in, out);
        }
        return cpu_conv_pair(e ? &e->call : NULL, &d->call,
                             pj ? &pj->call : NULL, err);
    }
    wnn_status st = cpu_kernels[node->op](&cn->call, err);
    if (st == WNN_OK && cn->call.epi && !cn->epi.applied) {
        cpu_epi_output(&cn->epi, cn->out[0]);
    }
    return st;
}

/* execute(), and execute_profiled() when ns / ran are given: one loop over
 * the schedule's run steps, each step's wall time added to ns[at] and
 * ran[at] counted, at its plan position. */
static wnn_status
cpu_run(const wnn_graph *g, cpu_compiled *c, void *const *in,
        void *const *out, uint64_t *ns, uint32_t *ran, wnn_error *err)
{
    wnn_status st = WNN_OK;
    pthread_mutex_lock(&c->mu);
    for (uint32_t i = 0; i < g->schedule.n_run && st == WNN_OK; i++) {
        cpu_node *cn = &c->nodes[i];
        if (ns) {
            uint64_t t0 = mono_ns();
            st = run_step(g, c, cn, in, out, err);
            ns[cn->step->at] += mono_ns() - t0;
            ran[cn->step->at]++;
        } else {
            st = run_step(g, c, cn, in, out, err);
        }
    }
    for (uint32_t i = 0; i < g->plan.n_copies && st == WNN_OK; i++) {
        const wnn_output_copy *cp = &g->plan.copies[i];
        cpu_parallel_copy(out[cp->to_output], out[cp->from_output],
                          wnn_desc_bytes(&g->outputs[cp->to_output].desc));
    }
    pthread_mutex_unlock(&c->mu);
    cpu_pool_rest(); /* the long spin is for the gaps inside a run */
    return st;
}

static wnn_status
cpu_execute(wnn_backend *be, const wnn_graph *g, void *compiled,
            void *const *in, void *const *out, wnn_error *err)
{
    (void)be;
    return cpu_run(g, compiled, in, out, NULL, NULL, err);
}

static wnn_status
cpu_execute_profiled(wnn_backend *be, const wnn_graph *g, void *compiled,
                     void *const *in, void *const *out, uint64_t *ns,
                     uint32_t *ran, wnn_error *err)
{
    (void)be;
    return cpu_run(g, compiled, in, out, ns, ran, err);
}

static wnn_status
cpu_tensor_alloc(wnn_backend *be, uint64_t bytes, void **storage,
                 wnn_error *err)
{
    (void)be;
    size_t n = (bytes + 63) / 64 * 64;
    void *p = wnn_host_alloc(n ? n : 64);
    if (!p) {
        return wnn_failk(err, WNN_UNKNOWN_ERROR, "createTensor", NULL, NULL,
                         "cannot allocate %llu bytes",
                         (unsigned long long)bytes);
    }
    memset(p, 0, n ? n : 64);
    *storage = p;
    return WNN_OK;
}

static void
cpu_tensor_free(wnn_backend *be, void *storage)
{
    (void)be;
    free(storage);
}

static wnn_status
cpu_tensor_write(wnn_backend *be, void *storage, const void *src,
                 uint64_t bytes, wnn_error *err)
{
    (void)be;
    (void)err;
    cpu_parallel_copy(storage, src, bytes);
    cpu_pool_rest(); /* a copy is a task of its own */
    return WNN_OK;
}

static wnn_status
cpu_tensor_read(wnn_backend *be, const void *storage, void *dst,
                uint64_t bytes, wnn_error *err)
{
    (void)be;
    (void)err;
    cpu_parallel_copy(dst, storage, bytes);
    cpu_pool_rest(); /* a copy is a task of its own */
    return WNN_OK;
}

static void
cpu_synchronize(wnn_backend *be)
{
    (void)be;
}

/* Tensors here are host memory: nothing to hand out as device memory. */
static wnn_status
cpu_tensor_device_ptr(wnn_backend *be, void *storage, void **ptr,
                      int *device_id, wnn_error *err)
{
    (void)be;
    (void)storage;
    (void)ptr;
    (void)device_id;
    return wnn_failk(err, WNN_NOT_SUPPORTED, "MLTensor", NULL, NULL,
                     "not a device tensor (a CPU context's tensors are host "
                     "memory)");
}

static wnn_status
cpu_tensor_write_device(wnn_backend *be, void *storage, const void *src,
                        uint64_t bytes, wnn_error *err)
{
    (void)be;
    (void)storage;
    (void)src;
    (void)bytes;
    return wnn_failk(err, WNN_NOT_SUPPORTED, "writeTensor", NULL, "inputData",
                     "not a device tensor (a CPU context's tensors are host "
                     "memory)");
}

static void
cpu_destroy(wnn_backend *be)
{
    free(be);
}

void cpu_blis_init(void);

/* wnn_backend_i.conv_pair: runs the pair linked where the pair kernel
 * takes these geometries on this CPU (kernels/conv/pair.c) */
static bool
cpu_conv_pair_linked(wnn_backend *be, const wnn_conv_params *a,
                     const wnn_conv_params *b, int kind, bool a_linked)
{
    (void)be;
    cpu_config cfg;
    cpu_config_read(&cfg);
    return cpu_conv_pair_fuses(&cfg, a, b, a_linked) == kind;
}

/* wnn_backend_i.threads: the pool's threads and the caller (config.c) */
static int
cpu_threads(wnn_backend *be)
{
    (void)be;
    return cpu_num_threads();
}

static const wnn_backend_i cpu_iface = {
    .api_version = WNN_BACKEND_API_VERSION,
    .name = "cpu",
    .device = WNN_DEVICE_CPU,
    .accelerated = false,
    /* Element counts are < 2^31 by the spec; bytes are bounded too. */
    .max_tensor_bytes = (uint64_t)1 << 32,
    .op_limits = cpu_op_limits,
    .compile = cpu_compile,
    .compiled_free = cpu_compiled_free,
    .execute = cpu_execute,
    .execute_profiled = cpu_execute_profiled,
    .tensor_alloc = cpu_tensor_alloc,
    .tensor_free = cpu_tensor_free,
    .tensor_write = cpu_tensor_write,
    .tensor_read = cpu_tensor_read,
    .synchronize = cpu_synchronize,
    .destroy = cpu_destroy,
    .host_storage = true,
    .tensor_device_ptr = cpu_tensor_device_ptr,
    .tensor_write_device = cpu_tensor_write_device,
    .device_id = -1,
    .conv_pair = cpu_conv_pair_linked,
    .threads = cpu_threads,
};

/* Reads every switch that is read once per process and kept (the threads,
 * WEBNN_NT_BYTES, WEBNN_POOL_SPIN_US, WEBNN_CPU_VM_TWINS, the ISA level and
 * its cap) now, on the thread creating a context: the first kernel to need
 * one would otherwise call getenv on the timeline or a pool thread, and
 * getenv racing a setenv of the caller (Python's os.environ while another
 * context runs) may read freed memory (tests/stress/test_getenv_threads.py) */
static void
prime_switches(void)
{
    (void)cpu_num_threads();
    (void)cpu_nt_bytes();
    (void)cpu_pool_spin_ns();
    (void)cpu_config_vm_twins();
    (void)cpu_isa();
}

wnn_status
wnn_cpu_backend_create(wnn_backend **out, wnn_error *err)
{
    cpu_backend *cb = calloc(1, sizeof(*cb));
    wnn_backend *be = cb ? &cb->base : NULL;
    if (!be) {
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "createContext", NULL, NULL,
                         "out of memory");
    }
    cpu_blis_init();
    prime_switches(); /* no getenv on the timeline or pool threads */
    be->iface = &cpu_iface;
    /* conv2d / convTranspose2d / matmul / gemm -> [add] -> [activation]
     * chains run as one kernel with its epilogue (epilogue.c); runs of
     * element-wise operators in one pass (chain.c) */
    be->fuses = cpu_config_fusion()
                    ? WNN_FUSE_EPILOGUE | WNN_FUSE_ELTWISE | WNN_FUSE_BN |
                          WNN_FUSE_GATE
                    : 0;
    /* element-wise programs after a producer's add (epilogue.c) */
    if (be->fuses && cpu_config_epi_prog()) {
        be->fuses |= WNN_FUSE_EPI_PROG;
    }
    /* a conv2d reading x * s (s per input channel) as conv(x, W diag(s)):
     * the end of a squeeze-and-excitation block (kernels/conv/conv2d.c) */
    if (be->fuses && cpu_config_in_scale()) {
        be->fuses |= WNN_FUSE_IN_SCALE;
    }
    /* and a 1x1 expansion with the depthwise convolution that reads it,
     * band of rows by band of rows (kernels/conv/pair.c) */
    if (be->fuses && cpu_config_conv_pairs()) {
        be->fuses |= WNN_FUSE_CONV_PAIR;
    }
    /* its nhwc convolutions are faster (depthwise most): nchw graphs are
     * planned to run them in nhwc (compiler/layout.c) */
    if (cpu_config_layout()) {
        be->fuses |= WNN_PLAN_NHWC;
    }
    /* reshapes and identities into intermediates are views of their
     * input (plan.c) */
    be->fuses |= WNN_PLAN_ALIAS;
    /* quantized regions in integer arithmetic (qdq.c): a fusion too,
     * off with the others */
    if (cpu_config_fusion() && cpu_config_int8()) {
        be->fuses |= WNN_FUSE_QDQ;
    }
    /* attention blocks as one step that never stores the scores whole
     * (attention.c): a fusion too, off with the others */
    if (cpu_config_fusion() && cpu_config_attention()) {
        be->fuses |= WNN_FUSE_ATTENTION;
    }
    cb->fold_bn = cpu_config_fold_bn();
    *out = be;
    return WNN_OK;
}
