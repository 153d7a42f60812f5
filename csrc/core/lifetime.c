/* lifetime.c -- the reference count and destroyed state of graphs, a leaf
 * of csrc/core: it calls nothing of the core.  timeline.c (a queued dispatch
 * holds its graph) and graph.c (the graph itself) both call down into it;
 * the graph's teardown, which releases its context, is graph.c's, reached
 * through g->free, set when the graph is made. */
#include "internal.h"

void
wnn_graph_retain(wnn_graph *g)
{
    atomic_fetch_add(&g->refs, 1);
}

void
wnn_graph_release(wnn_graph *g)
{
    if (g && atomic_fetch_sub(&g->refs, 1) == 1) {
        g->free(g);
    }
}

/* #api-mlgraph-destroy: later dispatches fail; queued ones still hold a
 * reference, so resources go when the last of them finishes. */
void
wnn_graph_destroy(wnn_graph *g)
{
    atomic_store(&g->destroyed, true);
}

bool
wnn_graph_is_destroyed(const wnn_graph *g)
{
    return atomic_load(&g->destroyed);
}
