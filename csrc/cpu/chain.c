/* chain.c -- fused element-wise chains on the CPU (cpu.h, cpu_chain;
 * compiler/fuse.h, WNN_FUSE_ELTWISE): a run of unary and binary
 * element-wise operators (and float32 batchNormalization, a per-channel
 * affine map) computed in one pass over memory.  The output is
 * cut into chunks of CHAIN_CH elements; for each chunk the first operator
 * reads its inputs, every later one works on the chunk in place (reading a
 * broadcast operand through its node's lowered iterator,
 * compiler/lower/broadcast.c) and the last result is stored once.  The
 * operators' own float32 loops (elementwise.c) compute each step, so the
 * results equal the unfused operators' exactly; float16 chains round every
 * step's result to float16, as the separate operators store it. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define CHAIN_CH 2048

typedef struct chain_src {
    uint32_t slot;              /* index into the run's pointers          */
    bool direct;                /* the output's shape: no iterator needed */
    bool scalar;                /* one element (float32 chains): read as a
                                 * value, not gathered into a chunk       */
    const wnn_broadcast_params *it;
    int k;                      /* the operand's index in `it`           */
} chain_src;

typedef struct chain_step {
    wnn_op op;
    bool binary;
    wnn_scalar_params pr;
    int carried;                /* input position of the running value, or
                                 * -1 (the first step reads its inputs)   */
    chain_src src[2];           /* inputs read from memory               */
    /* batchNormalization: the slots of mean, variance, scale, bias
     * (UINT32_MAX: none), epsilon, the channels and the elements per
     * channel step (e is in channel (e / inner) % C), and its coefficients
     * (cpu_bn_coefficients, remade per dispatch: they may be inputs) */
    bool bn;
    uint32_t bn_slot[4];
    double eps;
    int64_t C, inner;
    double *coef;
} chain_step;

struct cpu_chain {
    wnn_dtype dt;
    uint64_t total;
    uint32_t n_steps;
    chain_step *steps;
    uint32_t n_ops;
    uint32_t *ops;              /* operand ids, by slot                   */
    wnn_broadcast_params *its;  /* one per step (binary steps)            */
};

static uint32_t
slot_of(cpu_chain *c, uint32_t operand)
{
    for (uint32_t i = 0; i < c->n_ops; i++) {
        if (c->ops[i] == operand) {
            return i;
        }
    }
    c->ops[c->n_ops] = operand;
    return c->n_ops++;
}

cpu_chain *
cpu_chain_make(const wnn_graph *g, const uint32_t *nodes, uint32_t n)
{
    const wnn_ir *ir = g->ir;
    cpu_chain *c = calloc(1, sizeof(*c));
    if (!c) {
        return NULL;
    }
    c->steps = calloc(n, sizeof(chain_step));
    c->ops = calloc(5 * n + 1, sizeof(uint32_t));
    c->its = calloc(n, sizeof(wnn_broadcast_params));
    if (!c->steps || !c->ops || !c->its) {
        cpu_chain_free(c);
        return NULL;
    }
    const wnn_desc *od = &ir->operands[ir->nodes[nodes[n - 1]].out[0]].desc;
    c->dt = od->dtype;
    c->total = wnn_desc_elements(od);
    c->n_steps = n;
    uint32_t prev = WNN_NO_NODE;
    for (uint32_t s = 0; s < n; s++) {
        const wnn_node *node = &ir->nodes[nodes[s]];
        chain_step *st = &c->steps[s];
        st->op = node->op;
        st->carried = -1;
        if (node->op == WNN_OP_BATCH_NORMALIZATION) {
            /* x (input 0) is the running value or read; the parameters
             * are read whole per dispatch (fuse.c: float32 only) */
            const wnn_batch_normalization_options *o = node->options;
            const wnn_axis_params *q = &g->lowered[nodes[s]].u.axis;
            st->bn = true;
            st->eps = o->epsilon;
            st->C = (int64_t)q->n;
            st->inner = (int64_t)q->inner;
            st->coef = malloc(3 * sizeof(double) * (size_t)(st->C + 1));
            if (!st->coef) {
                cpu_chain_free(c);
                return NULL;
            }
            const uint32_t ins[4] = { node->in[1], node->in[2],
                                      o->scale ? node->in[o->scale - 1] : UINT32_MAX,
                                      o->bias ? node->in[o->bias - 1] : UINT32_MAX };
            for (int j = 0; j < 4; j++) {
                st->bn_slot[j] = ins[j] == UINT32_MAX ? UINT32_MAX : slot_of(c, ins[j]);
            }
            if (prev != WNN_NO_NODE && node->in[0] == prev) {
                st->carried = 0;
            } else {
                st->src[0] = (chain_src){ .slot = slot_of(c, node->in[0]),
                                          .direct = true };
            }
            prev = node->out[0];
            continue;
        }
        st->binary = node->n_in == 2;
        wnn_scalar_params_of(node->op, node->options, c->dt, &st->pr);
        if (st->binary) {
            /* the node's own iterator, as its unfused kernel reads it */
            c->its[s] = g->lowered[nodes[s]].u.bcast;
        }
        for (uint32_t j = 0; j < node->n_in; j++) {
            uint32_t id = node->in[j];
            if (prev != WNN_NO_NODE && id == prev) {
                st->carried = (int)j;
                continue;
            }
            chain_src *src = &st->src[j];
            src->slot = slot_of(c, id);
            src->direct = wnn_desc_same_shape(&ir->operands[id].desc, od);
            src->scalar = st->binary && c->dt == WNN_FLOAT32 &&
                          wnn_desc_elements(&ir->operands[id].desc) == 1;
            src->it = st->binary ? &c->its[s] : NULL;
            src->k = (int)j;
        }
        prev = node->out[0];
    }
    return c;
}

void
cpu_chain_free(cpu_chain *c)
{
    if (c) {
        for (uint32_t s = 0; c->steps && s < c->n_steps; s++) {
            free(c->steps[s].coef);
        }
        free(c->steps);
        free(c->ops);
        free(c->its);
        free(c);
    }
}

uint32_t
cpu_chain_operands(const cpu_chain *c, const uint32_t **ids)
{
    *ids = c->ops;
    return c->n_ops;
}

/* ---- running ------------------------------------------------------------- */
static inline float
round16(float v)
{
    return wnn_f16_to_f32(wnn_f32_to_f16(v));
}

/* row-major offset of row `row` of the iterator's rows (all dimensions but
 * the last) in operand k */
static int64_t
row_offset(const wnn_broadcast_params *it, int k, uint64_t row)
{
    int64_t off = 0;
    for (int d = (int)it->rank - 2; d >= 0; d--) {
        uint64_t i = row % it->shape[d];
        row /= it->shape[d];
        off += (int64_t)i * it->st[k][d];
    }
    return off;
}

/* the values of `src` at output elements [b, b + n) as float32 */
static void
gather(const cpu_chain *c, const chain_src *src, const void *base, uint64_t b,
       uint64_t n, float *dst)
{
    const bool f16 = c->dt == WNN_FLOAT16;
    if (src->direct) {
        if (f16) {
            const uint16_t *s = (const uint16_t *)base + b;
            for (uint64_t i = 0; i < n; i++) {
                dst[i] = wnn_f16_to_f32(s[i]);
            }
        } else {
            memcpy(dst, (const float *)base + b, n * sizeof(float));
        }
        return;
    }
    const wnn_broadcast_params *it = src->it;
    const uint64_t inner = it->shape[it->rank - 1];
    const int64_t si = it->st[src->k][it->rank - 1];
    for (uint64_t f = b; f < b + n;) {
        uint64_t row = f / inner, col = f % inner;
        uint64_t len = b + n - f < inner - col ? b + n - f : inner - col;
        int64_t off = row_offset(it, src->k, row) + (int64_t)col * si;
        if (f16) {
            for (uint64_t i = 0; i < len; i++) {
                dst[i] = wnn_f16_to_f32(((const uint16_t *)base)[off + (int64_t)i * si]);
            }
        } else if (si == 0) {
            /* a value broadcast along the row (a scalar constant: GPT-2's
             * tanh gelu, 5 of them a chunk): one fill, not a load and a
             * branch an element -- that chain on [128, 3072], compute()
             * included, 0.60-0.61 -> 0.40-0.51 ms (min of 300, in turns) */
            const float v0 = ((const float *)base)[off];
            for (uint64_t i = 0; i < len; i++) {
                dst[i] = v0;
            }
        } else if (si == 1) {
            memcpy(dst, (const float *)base + off, len * sizeof(float));
        } else {
            for (uint64_t i = 0; i < len; i++) {
                dst[i] = ((const float *)base)[off + (int64_t)i * si];
            }
        }
        dst += len;
        f += len;
    }
}

/* the first step of a float32 chain when one of its two operands is a
 * scalar and the other is not: v = x op s (or s op x), x read from its
 * input where it has the output's shape; false: not done */
static bool
first_scalar(const cpu_chain *c, const chain_step *st,
             const void *const *ptrs, uint64_t b, size_t n, float *v)
{
    const chain_src *s0 = &st->src[0], *s1 = &st->src[1];
    if (s0->scalar == s1->scalar) {
        return false;
    }
    const chain_src *xs = s0->scalar ? s1 : s0, *ss = s0->scalar ? s0 : s1;
    const float *x = (const float *)ptrs[xs->slot] + b;
    if (!xs->direct) {
        gather(c, xs, ptrs[xs->slot], b, n, v);
        x = v;
    }
    if (cpu_binary_scalar_f32(st->op, n, x, *(const float *)ptrs[ss->slot],
                              s0->scalar, v)) {
        return true;
    }
    if (x != v) { /* the general path gathers into v itself */
        return false;
    }
    float side[CHAIN_CH];
    gather(c, ss, ptrs[ss->slot], b, n, side);
    if (s0->scalar) {
        cpu_binary_f32(st->op, n, side, v, v);
    } else {
        cpu_binary_f32(st->op, n, v, side, v);
    }
    return true;
}

typedef struct chain_job {
    const cpu_chain *c;
    const void *const *ptrs;
    void *out;
} chain_job;

static void
chain_body(void *p, int64_t b_, int64_t e_, int tid)
{
    (void)tid;
    const chain_job *j = p;
    const cpu_chain *c = j->c;
    const bool f16 = c->dt == WNN_FLOAT16;
    float tmp[CHAIN_CH], side[CHAIN_CH], side2[CHAIN_CH];
    for (int64_t chunk = b_; chunk < e_; chunk++) {
        uint64_t b = (uint64_t)chunk * CHAIN_CH;
        size_t n = c->total - b < CHAIN_CH ? (size_t)(c->total - b) : CHAIN_CH;
        /* the running value: in the output itself (float32) or tmp */
        float *v = f16 ? tmp : (float *)j->out + b;
        for (uint32_t s = 0; s < c->n_steps; s++) {
            const chain_step *st = &c->steps[s];
            if (st->bn) { /* float32 only */
                const float *x = st->carried < 0
                                     ? (const float *)j->ptrs[st->src[0].slot] + b
                                     : v;
                cpu_bn_run(x, v, b, n, st->C, st->inner, st->coef);
            } else if (st->carried < 0 && !f16 && st->binary &&
                       first_scalar(c, st, j->ptrs, b, n, v)) {
                /* (done: one operand a scalar) */
            } else if (st->carried < 0 && !f16 && !st->binary &&
                       st->src[0].direct) {
                /* the first step straight from its input, no copy */
                cpu_unary_f32(st->op, &st->pr, n,
                              (const float *)j->ptrs[st->src[0].slot] + b, v);
            } else if (st->carried < 0) { /* the first step */
                gather(c, &st->src[0], j->ptrs[st->src[0].slot], b, n, v);
                if (st->binary) {
                    gather(c, &st->src[1], j->ptrs[st->src[1].slot], b, n,
                           side);
                    cpu_binary_f32(st->op, n, v, side, v);
                } else {
                    cpu_unary_f32(st->op, &st->pr, n, v, v);
                }
            } else if (st->binary) {
                const chain_src *src = &st->src[1 - st->carried];
                const float *o;
                if (src->scalar &&
                    cpu_binary_scalar_f32(st->op, n, v,
                                          *(const float *)j->ptrs[src->slot],
                                          st->carried == 1, v)) {
                    continue; /* (float32: no rounding to float16 below) */
                }
                if (src->direct && !f16) {
                    o = (const float *)j->ptrs[src->slot] + b;
                } else {
                    gather(c, src, j->ptrs[src->slot], b, n, side2);
                    o = side2;
                }
                if (st->carried == 0) {
                    cpu_binary_f32(st->op, n, v, o, v);
                } else {
                    cpu_binary_f32(st->op, n, o, v, v);
                }
            } else {
                cpu_unary_f32(st->op, &st->pr, n, v, v);
            }
            if (f16) {
                for (size_t i = 0; i < n; i++) {
                    v[i] = round16(v[i]);
                }
            }
        }
        if (f16) {
            uint16_t *y = (uint16_t *)j->out + b;
            for (size_t i = 0; i < n; i++) {
                y[i] = wnn_f32_to_f16(v[i]);
            }
        }
    }
}

void
cpu_chain_run(const cpu_chain *c, const void *const *ptrs, void *out)
{
    for (uint32_t s = 0; s < c->n_steps; s++) {
        const chain_step *st = &c->steps[s];
        if (st->bn) {
            const float *p[4];
            for (int k = 0; k < 4; k++) {
                p[k] = st->bn_slot[k] == UINT32_MAX ? NULL
                                                    : (const float *)ptrs[st->bn_slot[k]];
            }
            cpu_bn_coefficients(p[0], p[1], p[2], p[3], st->eps, st->C,
                                st->coef);
        }
    }
    chain_job j = { c, ptrs, out };
    int64_t chunks = (int64_t)((c->total + CHAIN_CH - 1) / CHAIN_CH);
    cpu_parallel_stream(chunks, (uint64_t)CHAIN_CH * 8,
                        c->total >= CPU_PARALLEL_MIN ? cpu_num_threads() : 1,
                        chain_body, &j);
}
