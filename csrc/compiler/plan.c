/* plan.c -- the memory plan of a built graph, shared by every backend: where
 * each operand lives (a graph input or output tensor, constant data, or an
 * offset in one scratch arena).  Intermediates whose lifetimes (producer to
 * last consumer, in topological order) do not overlap share arena bytes, so
 * dead buffers are reused.  A node's inputs and outputs never alias. */
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

void
wnn_plan_free(wnn_plan *p)
{
    free(p->order);
    free(p->slots);
    free(p->copies);
    memset(p, 0, sizeof(*p));
}

/* f: the fused chains of a backend that runs each chain at its last node
 * (fuse.h), or NULL (every node at its own position). */
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
        for (uint32_t pos = 0; pos < p->n_order; pos++) {
            uint32_t k = f->chain_of[p->order[pos]];
            if (k && f->chains[k - 1].last == p->order[pos]) {
                chain_end[k - 1] = pos;
            }
        }
    }
    uint32_t *last = malloc(sizeof(uint32_t) * (n + 1));
    live *lv = malloc(sizeof(live) * (n + 1));
    if (!p->slots || !p->copies || !first || !last || !lv) {
        free(first);
        free(last);
        free(lv);
        free(chain_end);
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                         "out of memory");
    }
    for (uint32_t i = 0; i < n; i++) {
        p->slots[i].kind = WNN_SLOT_UNUSED;
        first[i] = UINT32_MAX;
        last[i] = 0;
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
    uint32_t n_live = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (first[i] != UINT32_MAX && p->slots[i].kind == WNN_SLOT_UNUSED) {
            uint64_t bytes = wnn_desc_bytes(&ir->operands[i].desc);
            lv[n_live++] = (live){ i, first[i], last[i],
                                   (bytes + ALIGN - 1) / ALIGN * ALIGN, 0 };
        }
    }
    qsort(lv, n_live, sizeof(live), by_size_desc);
    /* Greedy by size: the lowest offset that overlaps no placed buffer
     * whose lifetime meets this one's. */
    uint64_t total = 0;
    for (uint32_t i = 0; i < n_live; i++) {
        uint64_t off = 0;
        bool moved = true;
        while (moved) {
            moved = false;
            for (uint32_t j = 0; j < i; j++) {
                if (lv[j].last < lv[i].first || lv[i].last < lv[j].first) {
                    continue;
                }
                if (off < lv[j].offset + lv[j].bytes &&
                    lv[j].offset < off + lv[i].bytes) {
                    off = lv[j].offset + lv[j].bytes;
                    moved = true;
                }
            }
        }
        lv[i].offset = off;
        if (off + lv[i].bytes > total) {
            total = off + lv[i].bytes;
        }
        p->slots[lv[i].operand] =
            (wnn_slot){ .kind = WNN_SLOT_ARENA, .offset = off };
    }
    p->arena_bytes = total;
    free(chain_end);
    free(first);
    free(last);
    free(lv);
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
