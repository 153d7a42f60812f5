/* test_compiler.c -- the compiler tested from C: which chains the epilogue
 * fusion analysis (compiler/fuse.c) finds for given graphs, and that the
 * memory plan of fused chains (compiler/plan.c) keeps a chain's inputs apart
 * from its result and stores nothing a chain computes but never writes
 * (harness.h). */
#include "harness.h"

/* ---- epilogue fusion analysis (compiler/fuse.c) ----------------------------- */
/* A tiny graph language for the fusion cases: operands by index (inputs
 * first), nodes appended in order. */
typedef struct fx {
    wnn_builder *b;
    uint32_t id[16];
    uint32_t n;
    bool ok;
    wnn_error err;
} fx;

static uint32_t
fx_input(fx *f, uint32_t rank, const uint32_t *shape)
{
    char name[8];
    snprintf(name, sizeof(name), "i%u", f->n);
    wnn_desc d = desc(WNN_FLOAT32, rank, shape);
    f->ok = f->ok && wnn_builder_input(f->b, name, &d, &f->id[f->n], &f->err) == WNN_OK;
    return f->n++;
}

static uint32_t
fx_op(fx *f, wnn_op op, uint32_t a, uint32_t b2, int n_in, int nhwc)
{
    union {
        wnn_conv2d_options conv;
        wnn_no_options none;
        wnn_gemm_options gemm;
        wnn_clamp_options clamp;
    } o;
    wnn_options_default(op, &o);
    if (op == WNN_OP_CONV2D) {
        o.conv.input_layout = nhwc ? WNN_LAYOUT_NHWC : WNN_LAYOUT_NCHW;
    }
    uint32_t in[2] = { f->id[a], f->id[b2] };
    f->ok = f->ok && add_op(f->b, op, in, (uint32_t)n_in, &o, NULL, &f->id[f->n],
                            &f->err) == WNN_OK;
    return f->n++;
}

/* builds with the operands `outs` as outputs and checks the chains found:
 * want_chains, and for the first one the producer's op, the add kind, the
 * channel axis, whether an activation is part of it, and the result */
static void
fx_check(wnn_context *c, fx *f, const char *what, uint32_t n_outs, const uint32_t *outs,
         uint32_t want_chains, wnn_op prod, wnn_epilogue_add add, uint32_t axis,
         bool act, uint32_t result)
{
    wnn_graph *g = NULL;
    const char *names[4] = { "o0", "o1", "o2", "o3" };
    uint32_t ids[4];
    for (uint32_t i = 0; i < n_outs; i++) {
        ids[i] = f->id[outs[i]];
    }
    if (!f->ok || wnn_builder_build(f->b, n_outs, names, ids, &g, &f->err) != WNN_OK) {
        check_ok(WNN_ERR, &f->err, what);
        wnn_builder_free(f->b);
        return;
    }
    wnn_fusion fu;
    wnn_error err;
    if (check_ok(wnn_fusion_find(g, WNN_FUSE_EPILOGUE, &fu, &err), &err, what)) {
        bool ok = fu.n_chains == want_chains;
        if (ok && want_chains) {
            const wnn_epilogue *e = &fu.chains[0];
            ok = g->ir->nodes[e->producer].op == prod && e->add_kind == add &&
                 (add == WNN_EPI_ADD_NONE) == (e->add == WNN_NO_NODE) &&
                 e->channel_axis == axis && (e->act != WNN_NO_NODE) == act &&
                 e->result == f->id[result] && fu.chain_of[e->producer] == 1 &&
                 fu.chain_of[e->last] == 1;
        }
        check(ok, what, "%u chains", fu.n_chains);
        /* the fused plan keeps the chain's inputs apart from its result */
        if (ok && want_chains) {
            wnn_plan p;
            memset(&p, 0, sizeof(p));
            p.order = malloc(sizeof(uint32_t) * g->plan.n_order);
            memcpy(p.order, g->plan.order, sizeof(uint32_t) * g->plan.n_order);
            p.n_order = g->plan.n_order;
            bool pok = wnn_plan_make_fused(g, &p, &fu, &err) == WNN_OK;
            const wnn_epilogue *e = &fu.chains[0];
            const wnn_node *pn = &g->ir->nodes[e->producer];
            const wnn_slot *r = &p.slots[e->result];
            for (uint32_t j = 0; pok && j < pn->n_in; j++) {
                const wnn_slot *s = &p.slots[pn->in[j]];
                if (r->kind == WNN_SLOT_ARENA && s->kind == WNN_SLOT_ARENA) {
                    uint64_t rb = wnn_desc_bytes(&g->ir->operands[e->result].desc);
                    uint64_t sb = wnn_desc_bytes(&g->ir->operands[pn->in[j]].desc);
                    pok = r->offset + rb <= s->offset || s->offset + sb <= r->offset;
                }
            }
            check(pok, what, "fused plan: the chain's result overlaps an input");
            wnn_plan_free(&p);
        }
        wnn_fusion_free(&fu);
    }
    wnn_graph_release(g);
    wnn_builder_free(f->b);
}

static bool
fx_begin(wnn_context *c, fx *f)
{
    memset(f, 0, sizeof(*f));
    f->ok = wnn_builder_create(c, &f->b, &f->err) == WNN_OK;
    return f->ok;
}

void
test_fusion(wnn_context *c)
{
    fx f;
    const uint32_t sx[4] = { 1, 3, 6, 6 }, sw[4] = { 4, 3, 3, 3 }, sz[4] = { 1, 4, 4, 4 };
    const uint32_t s4[1] = { 4 }, sa[2] = { 5, 8 }, sb[2] = { 8, 6 }, s6[1] = { 6 };
    const uint32_t sxh[4] = { 1, 7, 6, 3 }, sxw[4] = { 1, 3, 7, 6 };
    const uint32_t sc41[3] = { 4, 1, 1 };
    uint32_t x, w, z, y, s, r, a, bm, m, t, outs[2];

    /* conv -> add residual -> relu: one chain */
    if (fx_begin(c, &f)) {
        x = fx_input(&f, 4, sx), w = fx_input(&f, 4, sw), z = fx_input(&f, 4, sz);
        y = fx_op(&f, WNN_OP_CONV2D, x, w, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, y, z, 2, 0);
        r = fx_op(&f, WNN_OP_RELU, s, 0, 1, 0);
        outs[0] = r;
        fx_check(c, &f, "fusion: conv + residual + relu", 1, outs, 1, WNN_OP_CONV2D,
                 WNN_EPI_ADD_RESIDUAL, 1, true, r);
    }
    /* the same with the conv's output also a graph output: nothing */
    if (fx_begin(c, &f)) {
        x = fx_input(&f, 4, sx), w = fx_input(&f, 4, sw), z = fx_input(&f, 4, sz);
        y = fx_op(&f, WNN_OP_CONV2D, x, w, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, y, z, 2, 0);
        r = fx_op(&f, WNN_OP_RELU, s, 0, 1, 0);
        outs[0] = r, outs[1] = y;
        fx_check(c, &f, "fusion: an intermediate that is an output", 2, outs, 0, 0, 0, 0,
                 false, 0);
    }
    /* the add's result is an output: conv + add only */
    if (fx_begin(c, &f)) {
        x = fx_input(&f, 4, sx), w = fx_input(&f, 4, sw), z = fx_input(&f, 4, sz);
        y = fx_op(&f, WNN_OP_CONV2D, x, w, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, z, y, 2, 0);
        r = fx_op(&f, WNN_OP_SIGMOID, s, 0, 1, 0);
        outs[0] = r, outs[1] = s;
        fx_check(c, &f, "fusion: the add's result is an output", 2, outs, 1, WNN_OP_CONV2D,
                 WNN_EPI_ADD_RESIDUAL, 1, false, s);
    }
    /* per-channel bias [4, 1, 1] on nchw, then clamp */
    if (fx_begin(c, &f)) {
        x = fx_input(&f, 4, sx), w = fx_input(&f, 4, sw), z = fx_input(&f, 3, sc41);
        y = fx_op(&f, WNN_OP_CONV2D, x, w, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, z, y, 2, 0);
        r = fx_op(&f, WNN_OP_CLAMP, s, 0, 1, 0);
        outs[0] = r;
        fx_check(c, &f, "fusion: conv + channel bias + clamp", 1, outs, 1, WNN_OP_CONV2D,
                 WNN_EPI_ADD_CHANNEL, 1, true, r);
    }
    /* nhwc: the channel axis is 3 ([4] broadcasts along it) */
    if (fx_begin(c, &f)) {
        x = fx_input(&f, 4, sxh), w = fx_input(&f, 4, sw), z = fx_input(&f, 1, s4);
        y = fx_op(&f, WNN_OP_CONV2D, x, w, 2, 1);
        s = fx_op(&f, WNN_OP_ADD, y, z, 2, 0);
        outs[0] = s;
        fx_check(c, &f, "fusion: nhwc conv + channel bias", 1, outs, 1, WNN_OP_CONV2D,
                 WNN_EPI_ADD_CHANNEL, 3, false, s);
    }
    /* nchw with [4] broadcasting along the width, not the channels: the add
     * stays, and the relu after it is not next to the conv */
    if (fx_begin(c, &f)) {
        x = fx_input(&f, 4, sxw), w = fx_input(&f, 4, sw), z = fx_input(&f, 1, s4);
        y = fx_op(&f, WNN_OP_CONV2D, x, w, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, y, z, 2, 0);
        r = fx_op(&f, WNN_OP_RELU, s, 0, 1, 0);
        outs[0] = r;
        fx_check(c, &f, "fusion: a bias along the width is no channel bias", 1, outs, 0, 0,
                 0, 0, false, 0);
    }
    /* matmul + bias [6] (first operand of the add) + sigmoid */
    if (fx_begin(c, &f)) {
        a = fx_input(&f, 2, sa), bm = fx_input(&f, 2, sb), z = fx_input(&f, 1, s6);
        m = fx_op(&f, WNN_OP_MATMUL, a, bm, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, z, m, 2, 0);
        t = fx_op(&f, WNN_OP_SIGMOID, s, 0, 1, 0);
        outs[0] = t;
        fx_check(c, &f, "fusion: matmul + bias + sigmoid", 1, outs, 1, WNN_OP_MATMUL,
                 WNN_EPI_ADD_CHANNEL, 1, true, t);
    }
    /* add(m, m): the product is used twice */
    if (fx_begin(c, &f)) {
        a = fx_input(&f, 2, sa), bm = fx_input(&f, 2, sb);
        m = fx_op(&f, WNN_OP_MATMUL, a, bm, 2, 0);
        s = fx_op(&f, WNN_OP_ADD, m, m, 2, 0);
        t = fx_op(&f, WNN_OP_RELU, s, 0, 1, 0);
        outs[0] = t;
        fx_check(c, &f, "fusion: add(m, m) is not fused", 1, outs, 0, 0, 0, 0, false, 0);
    }
    /* two consumers of the product */
    if (fx_begin(c, &f)) {
        a = fx_input(&f, 2, sa), bm = fx_input(&f, 2, sb);
        m = fx_op(&f, WNN_OP_GEMM, a, bm, 2, 0);
        t = fx_op(&f, WNN_OP_TANH, m, 0, 1, 0);
        s = fx_op(&f, WNN_OP_EXP, m, 0, 1, 0);
        outs[0] = t, outs[1] = s;
        fx_check(c, &f, "fusion: a product with two consumers", 2, outs, 0, 0, 0, 0, false,
                 0);
    }
    /* gemm + tanh */
    if (fx_begin(c, &f)) {
        a = fx_input(&f, 2, sa), bm = fx_input(&f, 2, sb);
        m = fx_op(&f, WNN_OP_GEMM, a, bm, 2, 0);
        t = fx_op(&f, WNN_OP_TANH, m, 0, 1, 0);
        outs[0] = t;
        fx_check(c, &f, "fusion: gemm + tanh", 1, outs, 1, WNN_OP_GEMM, WNN_EPI_ADD_NONE, 1,
                 true, t);
    }
}

/* mul(x, s) -> conv2d, s per input channel (WNN_FUSE_IN_SCALE): the mul
 * joins the conv's chain, s named; not without that kind, nor where the
 * image is too small for the filter (N H W < 4 O KH KW) */
static void
fx_in_scale(wnn_context *c, const char *what, uint32_t hw, uint32_t kinds,
            bool want)
{
    fx f;
    const uint32_t sx[4] = { 1, hw, hw, 8 }, ss[4] = { 1, 1, 1, 8 },
                   sw[4] = { 4, 8, 1, 1 };
    if (!fx_begin(c, &f)) {
        return;
    }
    uint32_t x = fx_input(&f, 4, sx), s = fx_input(&f, 4, ss), w = fx_input(&f, 4, sw);
    uint32_t m = fx_op(&f, WNN_OP_MUL, s, x, 2, 0);
    uint32_t y = fx_op(&f, WNN_OP_CONV2D, m, w, 2, 1);
    wnn_graph *g = NULL;
    const char *name = "o0";
    if (!f.ok || wnn_builder_build(f.b, 1, &name, &f.id[y], &g, &f.err) != WNN_OK) {
        check_ok(WNN_ERR, &f.err, what);
        wnn_builder_free(f.b);
        return;
    }
    wnn_fusion fu;
    wnn_error err;
    if (check_ok(wnn_fusion_find(g, kinds, &fu, &err), &err, what)) {
        const wnn_ir *ir = g->ir;
        uint32_t mn = ir->operands[f.id[m]].node, cn = ir->operands[f.id[y]].node;
        bool ok = want ? fu.n_chains == 1 && fu.chains[0].in_scale == mn + 1 &&
                             fu.chains[0].scale_in == 0 &&
                             fu.chains[0].producer == cn && fu.chains[0].last == cn &&
                             fu.chain_of[mn] == 1 && fu.chain_of[cn] == 1
                       : fu.n_chains == 0 && fu.chain_of[mn] == 0;
        check(ok, what, "%u chains", fu.n_chains);
        wnn_fusion_free(&fu);
    }
    wnn_graph_release(g);
    wnn_builder_free(f.b);
}

void
test_fusion_in_scale(wnn_context *c)
{
    const uint32_t both = WNN_FUSE_EPILOGUE | WNN_FUSE_IN_SCALE;
    fx_in_scale(c, "fusion: mul(s, x) -> conv2d, an input scale", 8, both, true);
    fx_in_scale(c, "fusion: no input scale without WNN_FUSE_IN_SCALE", 8,
                WNN_FUSE_EPILOGUE, false);
    /* 3 x 3 pixels against 4 output channels: 9 < 16 */
    fx_in_scale(c, "fusion: no input scale on a small image", 3, both, false);
    fx_in_scale(c, "fusion: an input scale at 4 O pixels", 4, both, true);
}

/* ---- the memory plan of fused chains (compiler/plan.c) --------------------- */
int cpu_isa(void); /* cpu/support.c: CPU_ISA_* (cpu/config.h) */

/* x [1, H, H, 16] nhwc -> 1x1 to 96 -> relu -> depthwise 3x3 (pad 1) ->
 * relu -> 1x1 to 24: an inverted residual block.  What a chain computes
 * but never stores has no storage (WNN_SLOT_FUSED).  want_e, want_d: the
 * expansion's chain runs inside the depthwise one's, that inside the
 * projection's; where both are, nothing of the block is stored. */
static void
plan_block(wnn_context *c, uint32_t H, bool want_e, bool want_d)
{
    static uint32_t pad1[4] = { 1, 1, 1, 1 };
    const uint32_t sx[4] = { 1, H, H, 16 }, se[4] = { 96, 16, 1, 1 },
                   sd[4] = { 96, 1, 3, 3 }, sp[4] = { 24, 96, 1, 1 };
    char what[96];
    snprintf(what, sizeof(what), "fused plan: inverted residual block at %ux%u", H, H);
    wnn_builder *b = NULL;
    wnn_graph *g = NULL;
    wnn_error err;
    uint32_t x, we, wd, wp, e, er, d, dr, y;
    wnn_desc dx = desc(WNN_FLOAT32, 4, sx), de = desc(WNN_FLOAT32, 4, se),
             dd = desc(WNN_FLOAT32, 4, sd), dp = desc(WNN_FLOAT32, 4, sp);
    wnn_conv2d_options o;
    wnn_options_default(WNN_OP_CONV2D, &o);
    o.input_layout = WNN_LAYOUT_NHWC;
    union {
        wnn_no_options none;
        wnn_conv2d_options conv; /* room for any options struct */
    } ro;
    wnn_options_default(WNN_OP_RELU, &ro);
    bool ok = wnn_builder_create(c, &b, &err) == WNN_OK &&
              wnn_builder_input(b, "x", &dx, &x, &err) == WNN_OK &&
              wnn_builder_input(b, "we", &de, &we, &err) == WNN_OK &&
              wnn_builder_input(b, "wd", &dd, &wd, &err) == WNN_OK &&
              wnn_builder_input(b, "wp", &dp, &wp, &err) == WNN_OK;
    uint32_t in[2] = { x, we };
    ok = ok && add_op(b, WNN_OP_CONV2D, in, 2, &o, NULL, &e, &err) == WNN_OK &&
         add_op(b, WNN_OP_RELU, &e, 1, &ro, NULL, &er, &err) == WNN_OK;
    wnn_conv2d_options od = o;
    od.groups = 96;
    od.padding = (wnn_u32_list){ .n = 4, .present = true, .v = pad1 };
    in[0] = er, in[1] = wd;
    ok = ok && add_op(b, WNN_OP_CONV2D, in, 2, &od, NULL, &d, &err) == WNN_OK &&
         add_op(b, WNN_OP_RELU, &d, 1, &ro, NULL, &dr, &err) == WNN_OK;
    in[0] = dr, in[1] = wp;
    ok = ok && add_op(b, WNN_OP_CONV2D, in, 2, &o, NULL, &y, &err) == WNN_OK;
    const char *names[1] = { "y" };
    if (!ok || wnn_builder_build(b, 1, names, &y, &g, &err) != WNN_OK) {
        check_ok(WNN_ERR, &err, what);
        wnn_builder_free(b);
        return;
    }
    const wnn_fusion *f = &g->fusion;
    const wnn_slot *sl = g->plan.slots;
    /* the chains' intermediates (the convolutions' own results) are never
     * stored; a chain's result is, unless it runs inside the next chain */
    bool inner = sl[e].kind == WNN_SLOT_FUSED && sl[d].kind == WNN_SLOT_FUSED &&
                 sl[y].kind == WNN_SLOT_OUTPUT;
    uint32_t ke = f->chain_of ? f->chain_of[g->ir->operands[er].node] : 0;
    uint32_t kd = f->chain_of ? f->chain_of[g->ir->operands[dr].node] : 0;
    bool le = ke && kd && f->chains[ke - 1].into == kd && f->chains[ke - 1].pair == 1;
    bool ld = kd && f->chains[kd - 1].into && f->chains[kd - 1].pair == 2;
    if (!(c->backend->fuses & WNN_FUSE_EPILOGUE)) { /* WEBNN_CPU_FUSION=0 */
        inner = !ke && !kd && sl[e].kind == WNN_SLOT_ARENA &&
                sl[d].kind == WNN_SLOT_ARENA && sl[y].kind == WNN_SLOT_OUTPUT;
        ke = kd = 1;
    }
    check(ke && kd && inner && le == want_e && ld == want_d &&
              sl[er].kind == (le ? WNN_SLOT_FUSED : WNN_SLOT_ARENA) &&
              sl[dr].kind == (ld ? WNN_SLOT_FUSED : WNN_SLOT_ARENA) &&
              (!le || !ld || g->plan.arena_bytes == 0),
          what, "chains %u %u, slots e %d er %d d %d dr %d y %d, arena %llu, linked %d %d",
          ke, kd, sl[e].kind, sl[er].kind, sl[d].kind, sl[dr].kind, sl[y].kind,
          (unsigned long long)g->plan.arena_bytes, le, ld);
    /* and it runs: the pair kernel never touches the missing storage */
    float *hx = calloc((size_t)H * H * 16, sizeof(float));
    float *hw = calloc(96 * 16 + 96 * 9 + 24 * 96, sizeof(float));
    float *hy = calloc((size_t)H * H * 24, sizeof(float));
    if (hx && hw && hy) {
        for (uint32_t i = 0; i < H * H * 16; i++) {
            hx[i] = (float)(i % 7) - 3.0f;
        }
        for (uint32_t i = 0; i < 96 * 16 + 96 * 9 + 24 * 96; i++) {
            hw[i] = (float)(i % 5) * 0.25f - 0.5f;
        }
        const void *ins[4] = { hx, hw, hw + 96 * 16, hw + 96 * 16 + 96 * 9 };
        const char *inames[4] = { "x", "we", "wd", "wp" };
        ok = run_graph(c, g, 4, inames, ins, "y", hy, &err) == WNN_OK;
        /* one output pixel by hand (row 1, column 1: no padding involved) */
        double ref[24] = { 0 };
        for (uint32_t ch = 0; ch < 96; ch++) {
            double acc = 0;
            for (uint32_t ky = 0; ky < 3; ky++) {
                for (uint32_t kx = 0; kx < 3; kx++) {
                    double ev = 0;
                    for (uint32_t ci = 0; ci < 16; ci++) {
                        ev += (double)hx[(ky * H + kx) * 16 + ci] * hw[ch * 16 + ci];
                    }
                    acc += (ev > 0 ? ev : 0) * hw[96 * 16 + ch * 9 + ky * 3 + kx];
                }
            }
            acc = acc > 0 ? acc : 0;
            for (uint32_t o2 = 0; o2 < 24; o2++) {
                ref[o2] += acc * hw[96 * 16 + 96 * 9 + o2 * 96 + ch];
            }
        }
        double worst = 0;
        for (uint32_t o2 = 0; o2 < 24 && ok; o2++) {
            double dv = fabs(ref[o2] - hy[(H + 1) * 24 + o2]);
            worst = dv > worst ? dv : worst;
        }
        check(ok && worst < 1e-3, what, "runs: max error %g", worst);
    }
    free(hx);
    free(hw);
    free(hy);
    wnn_graph_release(g);
    wnn_builder_free(b);
}

void
test_plan_fused(wnn_context *c)
{
    /* the CPU's pairs need AVX2 or AVX-512 and its direct kernels
     * (kernels/conv/pair.c): 48 x 48 x 96
     * floats (884 KB) is large enough for the expansion's pair, 8 x 8 is
     * not, but its rows are narrow enough for the depthwise convolution's
     * chunks inside the projection */
    const char *direct = getenv("WEBNN_CONV_DIRECT");
    bool pairs = cpu_isa() >= CPU_ISA_AVX2 &&
                 (c->backend->fuses & WNN_FUSE_CONV_PAIR) &&
                 !(direct && direct[0] == '0');
    plan_block(c, 48, pairs, pairs);
    plan_block(c, 8, false, pairs);
}
