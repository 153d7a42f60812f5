/* cu_ops.c -- the dispatch table from cuda_ops.h, op_limits, and each
 * node's extras at compile (prep_node).  The parameter blocks are the
 * core's lowering's (g->lowered, compiler/lower/: broadcast iterators, conv
 * and pool geometry, reduce runs, axis extents, gather / scatter strides,
 * quantize shapes, the movement operators' views; the CPU kernels read the
 * same blocks), in the kernel ABI's types (csrc/include/wnn_kernel_abi.h):
 * the launchers take them as they are, with the node's wnn_kernel_args
 * (data types, element count, op code, options) made here; only the
 * backend's own plans (gemm's broadcast of c, the recurrent networks'
 * scratch layout) are made here (cu_internal.h has the overview). */
#include "cu_internal.h"

/* The dispatch table, generated from cuda_ops.h (the CUDA column of the
 * operator table): launcher kind + 1 (0: no kernel) and the kernel's op
 * code of each operator. */
static const struct {
    int8_t kind1;
    int8_t code;
} cu_ops[WNN_OP_COUNT] = {
#define CU_OP(ID, kind, code) [WNN_OP_##ID] = { (kind) + 1, (code) },
#include "cuda_ops.h"
#undef CU_OP
};

int
cu_kind_of(wnn_op op)
{
    return (unsigned)op < WNN_OP_COUNT ? cu_ops[op].kind1 - 1 : K_NONE;
}

/* Data types the kernels of each kind handle (intersected with the
 * spec's), from cuda_ops.h's kind rows. */
static const uint16_t cu_kind_dtypes[K_COUNT] = {
#define CU_OP(ID, kind, code)
#define CU_KIND(KIND, run, dtypes) [K_##KIND] = WNN_DT_##dtypes,
#define CU_SERVICE_KIND(KIND, dtypes) [K_##KIND] = WNN_DT_##dtypes,
#include "cuda_ops.h"
#undef CU_OP
#undef CU_KIND
#undef CU_SERVICE_KIND
};

uint64_t
cu_prod(const uint32_t *shape, uint32_t lo, uint32_t hi)
{
    uint64_t p = 1;
    for (uint32_t i = lo; i < hi; i++) {
        p *= shape[i];
    }
    return p;
}

/* Scratch bytes, 256-byte aligned pieces. */
uint64_t
rnn_take(uint64_t *at, uint64_t floats)
{
    uint64_t off = *at;
    *at += (floats * sizeof(float) + 255) / 256 * 256;
    return off;
}

/* the scratch layout of a recurrent node (its parameters: the lowered
 * block, compiler/lower/recurrent.c) */
void
prep_rnn(cu_node *cn)
{
    rnn_plan *r = &cn->u.rnn;
    const wnn_rnn_params *p = &cn->lowered->u.rnn;
    memset(r, 0, sizeof(*r));
    const uint64_t T = p->T, B = p->B, H = p->H, D = p->D, I = p->I;
    const uint64_t GH = (p->lstm ? 4 : 3) * H, state = D * B * H;
    uint64_t at = 0;
    if (p->dt == WNN_FLOAT16) {
        r->x32 = rnn_take(&at, T * B * I);
        r->w32 = rnn_take(&at, D * GH * I);
        r->r32 = rnn_take(&at, D * GH * H);
    }
    r->xw = rnn_take(&at, T * B * D * GH);
    r->bsum = rnn_take(&at, D * GH);
    r->rbn = rnn_take(&at, D * H);
    for (int k = 0; k < 2; k++) {
        r->h[k] = rnn_take(&at, state);
        r->c[k] = p->lstm ? rnn_take(&at, state) : 0;
    }
    r->rh = rnn_take(&at, state);
    r->hr = rnn_take(&at, D * B * GH);
    cn->scratch = at;
}

/* Fill cn's extras for its node (the launchers' wnn_kernel_args, scratch,
 * operands); false when out of memory. */
bool
prep_node(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    const wnn_node *node = cn->node;
    const wnn_lowered *l = cn->lowered;
    wnn_kernel_args *k = &cn->ka;
    memset(k, 0, sizeof(*k));
    memset(&cn->x, 0, sizeof(cn->x));
    k->op = cu_ops[node->op].code;
    k->dt = node->n_in ? in[0].dtype : out[0].dtype;
    k->to = out[0].dtype;
    k->es = (int)cu_core->dtype_size(k->dt);
    k->n = (int64_t)cu_core->desc_elements(&out[0]);
    switch (cn->kind) {
    case K_UNARY:
        cu_core->scalar_params_of(node->op, node->options, in[0].dtype, &k->sp);
        break;
    case K_WHERE: k->es = (int)cu_core->dtype_size(out[0].dtype); break;
    case K_COPY: cn->x.bytes = cu_core->desc_bytes(&out[0]); break;
    case K_GATHER:
    case K_GATHER_EL:
    case K_GATHER_ND: k->it = in[1].dtype; break;
    case K_SCATTER_EL:
        k->it = in[1].dtype;
        cn->x.bytes = cu_core->desc_bytes(&in[0]);
        break;
    case K_SCATTER_ND:
        k->it = in[1].dtype;
        cn->x.bytes = cu_core->desc_bytes(&in[0]);
        cn->scratch = l->u.gather.n_slices * sizeof(int32_t);
        break;
    case K_NORM:
        if (node->op == WNN_OP_INSTANCE_NORMALIZATION) {
            const wnn_instance_normalization_options *o = node->options;
            k->eps = o->epsilon;
            cn->x.scale = o->scale;
            cn->x.bias = o->bias;
        } else {
            const wnn_layer_normalization_options *o = node->options;
            k->eps = o->epsilon;
            cn->x.scale = o->scale;
            cn->x.bias = o->bias;
        }
        break;
    case K_BN: {
        const wnn_batch_normalization_options *o = node->options;
        k->n = (int64_t)cu_core->desc_elements(&in[0]);
        k->eps = o->epsilon;
        cn->x.scale = o->scale;
        cn->x.bias = o->bias;
        cn->scratch = 3 * l->u.axis.n * sizeof(double);
        break;
    }
    case K_QUANT:
        k->flags = node->op == WNN_OP_DEQUANTIZE_LINEAR ? WNN_KF_DEQUANT : 0;
        k->it = in[1].dtype;
        k->zt = in[2].dtype;
        k->n = (int64_t)cu_core->desc_elements(&in[0]);
        break;
    case K_MATMUL:
        if (l->u.matmul.mode == WNN_MM_BROADCAST) {
            /* the pointer arrays of the batched product */
            cn->scratch = 3 * (uint64_t)l->u.matmul.batch * sizeof(void *);
        }
        break;
    case K_GEMM: {
        const wnn_gemm_params *q = &l->u.gemm;
        if (q->c) {
            /* c broadcast into the output, then accumulated onto; a view
             * of the backend's own, simplified by the core's rule */
            wnn_view *v = &cn->u.gm.cview;
            memset(v, 0, sizeof(*v));
            v->rank = 2;
            v->in = q->c - 1;
            v->shape[0] = q->M;
            v->shape[1] = q->N;
            v->is[0] = q->cs0;
            v->is[1] = q->cs1;
            v->os[0] = q->N;
            v->os[1] = 1;
            cu_core->view_simplify(v);
            if (out[0].dtype == WNN_FLOAT16) {
                /* the float32 sum (cu_blas.c run_gemm) */
                cn->scratch = (uint64_t)q->M * q->N * sizeof(float);
            }
        }
        break;
    }
    case K_ARG: k->op = node->op == WNN_OP_ARG_MAX; break;
    case K_CUMSUM: {
        const wnn_cumulative_sum_options *o = node->options;
        k->flags = (o->exclusive ? WNN_KF_EXCLUSIVE : 0) |
                   (o->reversed ? WNN_KF_REVERSED : 0);
        break;
    }
    case K_POOL:
        k->op = node->op == WNN_OP_AVERAGE_POOL2D ? WNN_KPOOL_AVG
                : node->op == WNN_OP_L2_POOL2D    ? WNN_KPOOL_L2
                                                  : WNN_KPOOL_MAX;
        break;
    case K_CONV: cn->x.bias = l->u.conv.bias; break;
    case K_RNN: prep_rnn(cn); break;
    default: break;
    }
    return true;
}

/* ---- the interface ---------------------------------------------------------------- */
bool
cu_op_limits(wnn_backend *be, wnn_op op, wnn_op_limits *out)
{
    (void)be;
    int kind = cu_kind_of(op);
    if (kind == K_NONE) {
        return false;
    }
    *out = *cu_core->op_get(op)->limits;
    uint16_t mask = cu_kind_dtypes[kind];
    for (uint32_t i = 0; i < out->n; i++) {
        out->e[i].dtypes &= mask;
    }
    return true;
}
