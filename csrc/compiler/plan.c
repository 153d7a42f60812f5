/* plan.c -- the memory plan of a built graph, shared by every backend: where
 * each operand lives (a graph input or output tensor, constant data, or an
 * offset in one scratch arena).  Intermediates whose lifetimes (producer to
 * last consumer, in topological order) do not overlap share arena bytes, so
 * dead buffers are reused.  A node's inputs and outputs never alias.
 *
 * With p->alias_reshapes (a backend that declares WNN_PLAN_ALIAS), a
 * reshape or identity whose input is an intermediate or a graph input and
 * whose output is an intermediate takes no storage of its own: its output
 * is its input's bytes (neither changes a byte), the input's lifetime runs
 * to the output's last reader, and p->aliased marks the node, which the
 * backend does not run.  One into a graph output, or of a constant, copies
 * as before.
 *
 * With fused chains (wnn_plan_make_fused), what a chain computes but never
 * stores -- its nodes' results before the last, and the result of a chain
 * run inside another (a linked conv pair's first chain) -- takes no storage
 * either: WNN_SLOT_FUSED, no address.  MobileNetV2's arena at batch 8 was
 * 105 MB with them (an expansion's result alone is 38.5 MB), which put
 * the first writes of many layers on memory no longer in any cache; it is
 * 11.2 MB without them (batch 1: 13.2 -> 1.4 MB). */
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "../ops/ops_internal.h"
#include "fuse.h"

#define ALIGN 64u

typedef struct live {
    uint32_t operand;
    uint32_t first, last;
    uint64_t bytes, offset;
} live;

static int
by_size_desc(const void *a, const void *b)
{
    const live *x = a, *y = b;
    if (x->bytes != y->bytes) {
        return x->bytes < y->bytes ? 1 : -1;
    }
    return x->operand < y->operand ? -1 : 1;
}

static int
by_offset(const void *a, const void *b)
{
    const live *x = *(live *const *)a, *y = *(live *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int
by_first(const void *a, const void *b)
{
    const live *x = *(live *const *)a, *y = *(live *const *)b;
    if (x->first != y->first) {
        return x->first < y->first ? -1 : 1;
    }
    return x->operand < y->operand ? -1 : 1;
}

static int
by_last(const void *a, const void *b)
{
    const live *x = *(live *const *)a, *y = *(live *const *)b;
    if (x->last != y->last) {
        return x->last < y->last ? -1 : 1;
    }
    return x->operand < y->operand ? -1 : 1;
}

/* Graphs with up to GREEDY_MAX intermediates: greedy by size (largest
 * first, each at the lowest offset that overlaps no placed buffer whose
 * lifetime meets its own), which packs best; O(n^2).  Larger graphs place
 * in time order (first fit from a free list), O(n log n) for the usual
 * shapes, so building 10^5-node graphs stays near-linear. */
#define GREEDY_MAX 2048u

static wnn_status
place_by_size(live *lv, uint32_t n)
{
    qsort(lv, n, sizeof(live), by_size_desc);
    live **conf = malloc(sizeof(live *) * (n + 1));
    if (!conf) {
        return WNN_ERR;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = 0;
        for (uint32_t j = 0; j < i; j++) {
            if (!(lv[j].last < lv[i].first || lv[i].last < lv[j].first)) {
                conf[k++] = &lv[j];
            }
        }
        /* the lowest offset below, between or above the conflicts */
        qsort(conf, k, sizeof(live *), by_offset);
        uint64_t off = 0;
        for (uint32_t j = 0; j < k; j++) {
            if (conf[j]->offset >= off + lv[i].bytes) {
                break;
            }
            if (conf[j]->offset + conf[j]->bytes > off) {
                off = conf[j]->offset + conf[j]->bytes;
            }
        }
        lv[i].offset = off;
    }
    free(conf);
    return WNN_OK;
}

typedef struct block {
    uint64_t offset, bytes;
} block;

static wnn_status
place_in_time_order(live *lv, uint32_t n)
{
    live **by_start = malloc(sizeof(live *) * (n + 1));
    live **by_end = malloc(sizeof(live *) * (n + 1));
    block *fr = malloc(sizeof(block) * (n + 1)); /* free blocks by offset */
    if (!by_start || !by_end || !fr) {
        free(by_start);
        free(by_end);
        free(fr);
        return WNN_ERR;
    }
    for (uint32_t i = 0; i < n; i++) {
        by_start[i] = by_end[i] = &lv[i];
    }
    qsort(by_start, n, sizeof(live *), by_first);
    qsort(by_end, n, sizeof(live *), by_last);
    uint32_t nf = 0, e = 0;
    uint64_t top = 0;
    for (uint32_t i = 0; i < n; i++) {
        live *b = by_start[i];
        /* release every buffer whose last use is before b's first */
        for (; e < n && by_end[e]->last < b->first; e++) {
            block r = { by_end[e]->offset, by_end[e]->bytes };
            uint32_t at = 0;
            while (at < nf && fr[at].offset < r.offset) {
                at++;
            }
            memmove(&fr[at + 1], &fr[at], sizeof(block) * (nf - at));
            fr[at] = r;
            nf++;
            /* coalesce with the neighbours */
            if (at + 1 < nf && fr[at].offset + fr[at].bytes == fr[at + 1].offset) {
                fr[at].bytes += fr[at + 1].bytes;
                memmove(&fr[at + 1], &fr[at + 2], sizeof(block) * (nf - at - 2));
                nf--;
            }
            if (at > 0 && fr[at - 1].offset + fr[at - 1].bytes == fr[at].offset) {
                fr[at - 1].bytes += fr[at].bytes;
                memmove(&fr[at], &fr[at + 1], sizeof(block) * (nf - at - 1));
                nf--;
            }
            if (nf && fr[nf - 1].offset + fr[nf - 1].bytes == top) {
                top = fr[nf - 1].offset; /* the last block gives back the top */
                nf--;
            }
        }
        uint32_t j = 0;
        while (j < nf && fr[j].bytes < b->bytes) {
            j++;
        }
        if (j < nf) {
            b->offset = fr[j].offset;
            fr[j].offset += b->bytes;
            fr[j].bytes -= b->bytes;
            if (!fr[j].bytes) {
                memmove(&fr[j], &fr[j + 1], sizeof(block) * (nf - j - 1));
                nf--;
            }
        } else {
            b->offset = top;
            top += b->bytes;
        }
    }
    free(by_start);
    free(by_end);
    free(fr);
    return WNN_OK;
}

void
wnn_plan_free(wnn_plan *p)
{
    free(p->order);
    free(p->slots);
    free(p->copies);
    free(p->aliased);
    memset(p, 0, sizeof(*p));
}

/* f: the fused chains of a backend that runs each chain at its last node
 * (fuse.h), or NULL (every node at its own position). */
/* chain_end[k]: the position in p->order of fused chain k's last node, or
 * of the end of the chain it runs inside. */
static void
chain_ends(const wnn_plan *p, const wnn_fusion *f, uint32_t *chain_end)
{
    for (uint32_t pos = 0; pos < p->n_order; pos++) {
        uint32_t k = f->chain_of[p->order[pos]];
        if (k && f->chains[k - 1].last == p->order[pos]) {
            chain_end[k - 1] = pos;
        }
    }
    /* a chain run inside the chain that reads it (a conv pair):
     * its inputs stay alive to that chain's end, or to the end of the
     * chain that one runs inside (from the last chain back: `into`
     * names a later chain) */
    for (uint32_t k = f->n_chains; k-- > 0;) {
        uint32_t into = f->chains[k].into;
        if (into && chain_end[into - 1] > chain_end[k]) {
            chain_end[k] = chain_end[into - 1];
        }
    }
}

/* The slots of the graph's inputs and outputs (an operand output twice:
 * a copy), everything else unused; first, last and root initialised. */
static void
init_slots(const wnn_graph *g, wnn_plan *p, uint32_t n, uint32_t *first,
           uint32_t *last, uint32_t *root)
{
    for (uint32_t i = 0; i < n; i++) {
        p->slots[i].kind = WNN_SLOT_UNUSED;
        first[i] = UINT32_MAX;
        last[i] = 0;
        root[i] = i;
    }
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        p->slots[g->inputs[i].operand] =
            (wnn_slot){ .kind = WNN_SLOT_INPUT, .index = i };
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t id = g->outputs[i].operand;
        if (p->slots[id].kind == WNN_SLOT_OUTPUT) {
            p->copies[p->n_copies++] =
                (wnn_output_copy){ p->slots[id].index, i };
        } else {
            p->slots[id] = (wnn_slot){ .kind = WNN_SLOT_OUTPUT, .index = i };
        }
    }
}

/* reshapes that share their input's storage (topological order: the
 * input's root is already final) */
static void
alias_reshapes(const wnn_ir *ir, wnn_plan *p, const wnn_fusion *f,
               const uint32_t *chain_end, uint32_t *root)
{
    for (uint32_t pos = 0; p->aliased && pos < p->n_order; pos++) {
        const wnn_node *node = &ir->nodes[p->order[pos]];
        if (!wnn_op_has(node->op, WNN_TR_ALIAS) ||
            node->n_in != 1 || node->n_out != 1 ||
            (chain_end && f->chain_of[p->order[pos]])) {
            continue;
        }
        uint32_t r = root[node->in[0]], o = node->out[0];
        if (p->slots[o].kind == WNN_SLOT_UNUSED &&
            ir->operands[r].kind != WNN_OPERAND_CONSTANT &&
            (p->slots[r].kind == WNN_SLOT_UNUSED ||
             p->slots[r].kind == WNN_SLOT_INPUT)) {
            root[o] = r;
            p->aliased[p->order[pos]] = true;
        }
    }
}

/* Each operand's first and last position (a fused chain's inputs live to
 * the chain's end; a root until the last reader of any operand aliasing
 * it); constants' slots. */
static void
lifetimes(const wnn_ir *ir, wnn_plan *p, const wnn_fusion *f,
          const uint32_t *chain_end, const uint32_t *root, uint32_t *first,
          uint32_t *last)
{
    for (uint32_t pos = 0; pos < p->n_order; pos++) {
        const wnn_node *node = &ir->nodes[p->order[pos]];
        uint32_t k = chain_end ? f->chain_of[p->order[pos]] : 0;
        uint32_t use = k && chain_end[k - 1] > pos ? chain_end[k - 1] : pos;
        for (uint32_t j = 0; j < node->n_in; j++) {
            uint32_t id = node->in[j];
            if (last[id] < use) {
                last[id] = use;
            }
            if (ir->operands[id].kind == WNN_OPERAND_CONSTANT) {
                p->slots[id].kind = WNN_SLOT_CONSTANT;
            }
        }
        for (uint32_t j = 0; j < node->n_out; j++) {
            uint32_t id = node->out[j];
            first[id] = pos;
            if (last[id] < pos) {
                last[id] = pos;
            }
        }
    }
    /* a quantized chain whose dequantizeLinear of x runs outside it (read
     * elsewhere too, fuse_qdq.c) reads that node's inputs itself at its end */
    for (uint32_t k = 0; chain_end && k < f->n_chains; k++) {
        const wnn_epilogue *e = &f->chains[k];
        if (e->kind != WNN_FUSE_QDQ || !e->dq_x || f->chain_of[e->dq_x - 1]) {
            continue;
        }
        const wnn_node *dx = &ir->nodes[e->dq_x - 1];
        for (uint32_t j = 0; j < dx->n_in; j++) {
            if (last[dx->in[j]] < chain_end[k]) {
                last[dx->in[j]] = chain_end[k];
            }
        }
    }
    /* a root lives until the last reader of any operand aliasing it */
    for (uint32_t i = 0; i < ir->n_operands; i++) {
        if (root[i] != i && last[root[i]] < last[i]) {
            last[root[i]] = last[i];
        }
    }
}

/* what a fused chain computes but never stores: the results of its
 * nodes before the last (the backend runs the chain at its last node,
 * fuse.h), and the result of a chain run inside another one (a linked
 * conv pair's first chain, which the backend confirmed) */
static void
mark_fused(const wnn_ir *ir, wnn_plan *p, const wnn_fusion *f,
           const uint32_t *root)
{
    for (uint32_t id = 0; id < ir->n_nodes; id++) {
        uint32_t k = f->chain_of[id];
        if (!k || (f->chains[k - 1].last == id && !f->chains[k - 1].into)) {
            continue;
        }
        for (uint32_t j = 0; j < ir->nodes[id].n_out; j++) {
            uint32_t o = ir->nodes[id].out[j];
            if (p->slots[o].kind == WNN_SLOT_UNUSED && root[o] == o) {
                p->slots[o].kind = WNN_SLOT_FUSED;
            }
        }
    }
}

/* The operands still unused (the intermediates) placed in the arena; the
 * aliases take their root's slot.  WNN_ERR: out of memory. */
static wnn_status
place_arena(const wnn_ir *ir, wnn_plan *p, const uint32_t *first,
            const uint32_t *last, const uint32_t *root, live *lv)
{
    uint32_t n = ir->n_operands;
    uint32_t n_live = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (first[i] != UINT32_MAX && p->slots[i].kind == WNN_SLOT_UNUSED &&
            root[i] == i) {
            uint64_t bytes = wnn_desc_bytes(&ir->operands[i].desc);
            lv[n_live++] = (live){ i, first[i], last[i],
                                   (bytes + ALIGN - 1) / ALIGN * ALIGN, 0 };
        }
    }
    wnn_status st = n_live <= GREEDY_MAX ? place_by_size(lv, n_live)
                                         : place_in_time_order(lv, n_live);
    if (st != WNN_OK) {
        return st;
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < n_live; i++) {
        if (lv[i].offset + lv[i].bytes > total) {
            total = lv[i].offset + lv[i].bytes;
        }
        p->slots[lv[i].operand] =
            (wnn_slot){ .kind = WNN_SLOT_ARENA, .offset = lv[i].offset };
    }
    p->arena_bytes = total;
    for (uint32_t i = 0; i < n; i++) {
        if (root[i] != i) {
            p->slots[i] = p->slots[root[i]];
        }
    }
    return WNN_OK;
}

static wnn_status
plan_make(const wnn_graph *g, wnn_plan *p, const wnn_fusion *f,
          wnn_error *err)
{
    const wnn_ir *ir = g->ir;
    uint32_t n = ir->n_operands;
    p->slots = calloc(n + 1, sizeof(wnn_slot));
    p->copies = calloc(g->n_outputs + 1, sizeof(wnn_output_copy));
    uint32_t *first = malloc(sizeof(uint32_t) * (n + 1));
    /* fused chains: the position of each chain's last node */
    uint32_t *chain_end = NULL;
    if (f && f->n_chains) {
        chain_end = calloc(f->n_chains, sizeof(uint32_t));
        if (!chain_end) {
            free(first);
            return wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                             "out of memory");
        }
        chain_ends(p, f, chain_end);
    }
    uint32_t *last = malloc(sizeof(uint32_t) * (n + 1));
    live *lv = malloc(sizeof(live) * (n + 1));
    /* root[i]: the operand whose storage operand i is (itself, or the
     * first input of a run of aliased reshapes) */
    uint32_t *root = malloc(sizeof(uint32_t) * (n + 1));
    free(p->aliased);
    p->aliased = p->alias_reshapes ? calloc(ir->n_nodes + 1, sizeof(bool))
                                   : NULL;
    if (!p->slots || !p->copies || !first || !last || !lv || !root ||
        (p->alias_reshapes && !p->aliased)) {
        free(first);
        free(last);
        free(lv);
        free(root);
        free(chain_end);
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                         "out of memory");
    }
    init_slots(g, p, n, first, last, root);
    alias_reshapes(ir, p, f, chain_end, root);
    lifetimes(ir, p, f, chain_end, root, first, last);
    if (chain_end) {
        mark_fused(ir, p, f, root);
    }
    wnn_status st = place_arena(ir, p, first, last, root, lv);
    free(chain_end);
    free(first);
    free(last);
    free(lv);
    free(root);
    if (st != WNN_OK) {
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                         "out of memory");
    }
    return WNN_OK;
}

wnn_status
wnn_plan_make(const wnn_graph *g, wnn_plan *p, wnn_error *err)
{
    return plan_make(g, p, NULL, err);
}

wnn_status
wnn_plan_make_fused(const wnn_graph *g, wnn_plan *p, const wnn_fusion *f,
                    wnn_error *err)
{
    return plan_make(g, p, f, err);
}
