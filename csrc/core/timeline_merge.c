/* timeline_merge.c -- reads merged into dispatches: the timeline thread
 * (timeline.c) runs a cheap graph straight into the buffer of the read that
 * follows its dispatch, and keeps the dispatch as the context's owed record
 * until the output tensor's content is needed. */
#include <stdlib.h>
#include <string.h>

#include "timeline.h"

/* ---- reads merged into dispatches ----------------------------------------
 * dispatch() then readTensor() of its output is the spec's way to run a
 * graph, and it costs two passes over the output (the kernels write the
 * tensor, the read copies it out) where compute() and ONNX Runtime's bound
 * outputs write once.  For a graph whose whole cost is about a pass over its
 * operands (g->rerun_cheap: one output, element-wise operators), the
 * timeline waits a moment after popping its dispatch for the read that
 * usually follows, and when that read of the output comes next, it runs the
 * graph straight into the read's buffer.  The tensor's storage is then
 * stale: the context keeps the dispatch (graph and pinned inputs) as
 * `owed`, and
 *   - a later read of the tensor runs the graph again into its buffer;
 *   - the tensor used as a dispatch input, or a write (writeTensor or a
 *     dispatch output) into one of the owed dispatch's inputs, first runs
 *     the graph again into the tensor's storage;
 *   - a writeTensor or dispatch that overwrites the tensor, its destroy()
 *     or its last release drops the record.
 * Every run reads the same input contents (they cannot change while the
 * record exists), so every result a caller can observe is the unmerged
 * timeline's.  One record per context: a dispatch merges only when there is
 * none.  owed_score counts records dropped (the merge paid off) against
 * runs forced by a write into an input (-4) and skips (+1); below zero the
 * context does not merge, so a program that rewrites a graph's inputs
 * before reading its output again pays about what it paid before.
 * Only outputs of MERGE_MIN_BYTES or more: below, the copy saved is worth
 * less than what the wait costs (the dispatch could run while the caller
 * makes its read; the tiny graph's dispatch + read 2.5 -> 3-5 us merged).
 * WEBNN_MERGE_READS=0 turns merging off; WEBNN_SPIN_US=0 too (the wait is
 * a spin). */
#define MERGE_WAIT_NS 50000
#define MERGE_MIN_BYTES (256u << 10)

static bool
merge_enabled(void)
{
    static atomic_int on = -1;
    int v = atomic_load_explicit(&on, memory_order_relaxed);
    if (v < 0) {
        const char *e = getenv("WEBNN_MERGE_READS");
        v = !(e && strcmp(e, "0") == 0) && wnn_spin_budget_ns() > 0;
        atomic_store_explicit(&on, v, memory_order_relaxed);
    }
    return v;
}

void
wnn_timeline_prime(void)
{
    (void)merge_enabled(); /* and wnn_spin_budget_ns() */
}

static void
score_add(wnn_context *c, int d)
{
    int s = c->owed_score + d;
    c->owed_score = s < -16 ? -16 : s > 8 ? 8 : s;
}

static bool
ranges_meet(const void *a, uint64_t na, const void *b, uint64_t nb)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + nb && y < x + na;
}

/* Dispatch t (just popped) takes the read that comes next off the queue if
 * it reads t's output into a buffer that no input shares. */
void
wnn_merge_read(wnn_context *c, wnn_task *t)
{
    wnn_backend *be = c->backend;
    if (!merge_enabled() || !t->graph->rerun_cheap || !be->iface->host_storage ||
        t->n_out != 1 || t->tensors[t->n_in]->bytes < MERGE_MIN_BYTES) {
        return;
    }
    pthread_mutex_lock(&c->mu); /* (callers running small work settle too) */
    bool skip = c->owed_score < 0;
    if (skip) {
        score_add(c, 1);
    }
    pthread_mutex_unlock(&c->mu);
    if (skip) {
        return;
    }
    wnn_tensor *x = t->tensors[t->n_in];
    int64_t deadline = wnn_now_ns() + MERGE_WAIT_NS;
    while (!atomic_load_explicit(&c->queued, memory_order_acquire)) {
        if (wnn_now_ns() >= deadline) {
            return;
        }
        for (int i = 0; i < 16; i++) {
            cpu_relax();
        }
    }
    pthread_mutex_lock(&c->mu);
    wnn_task *r = c->head;
    /* (a buffer not aligned to the elements stays a copy: the kernels
     * access whole elements) */
    bool ok = r && r->kind == T_READ && r->tensor == x && !c->lost &&
              !c->owed && r->bytes > 0 && r->data &&
              (uintptr_t)r->data % wnn_dtype_size(x->desc.dtype) == 0;
    for (uint32_t i = 0; ok && i < t->n_in; i++) {
        ok = !ranges_meet(r->data, r->bytes, t->tensors[i]->storage,
                          t->tensors[i]->bytes);
    }
    if (ok) {
        atomic_fetch_add_explicit(&c->merged_reads, 1, memory_order_relaxed);
        c->head = r->next;
        if (!c->head) {
            c->tail = NULL;
        }
        atomic_fetch_sub_explicit(&c->queued, 1, memory_order_relaxed);
        r->next = NULL;
        t->read = r;
    }
    pthread_mutex_unlock(&c->mu);
}

/* The owed dispatch o run again, its output into dst. */
wnn_status
wnn_owed_run(wnn_context *c, const wnn_task *o, void *dst, wnn_error *err)
{
    void *in[o->n_in + 1], *out[1] = { dst };
    atomic_fetch_add_explicit(&c->owed_runs, 1,
                              memory_order_relaxed);
    for (uint32_t i = 0; i < o->n_in; i++) {
        in[i] = o->tensors[i]->storage;
    }
    return c->backend->iface->execute(c->backend, o->graph,
                                      o->graph->compiled, in, out, err);
}

typedef enum { OWED_KEEP, OWED_DROP, OWED_RUN } owed_action;

static bool
task_has(const wnn_task *t, uint32_t from, uint32_t to, const wnn_tensor *x)
{
    for (uint32_t i = from; i < to; i++) {
        if (t->tensors[i] == x) {
            return true;
        }
    }
    return false;
}

/* What task t, about to run, does to the owed record (c->mu held). */
static owed_action
owed_effect(const wnn_context *c, const wnn_task *t)
{
    const wnn_task *o = c->owed;
    const wnn_tensor *x = c->owed_tensor;
    switch (t->kind) {
    case T_WRITE:
    case T_WRITE_DEV:
        if (t->tensor == x) {
            return OWED_DROP;
        }
        return task_has(o, 0, o->n_in, t->tensor) ? OWED_RUN : OWED_KEEP;
    case T_FREE:
        return t->tensor == x ? OWED_DROP : OWED_KEEP;
    case T_EXPORT:
        return t->tensor == x ? OWED_RUN : OWED_KEEP;
    case T_DISPATCH:
        if (task_has(t, 0, t->n_in, x)) {
            return OWED_RUN;
        }
        for (uint32_t i = t->n_in; i < t->n_in + t->n_out; i++) {
            if (task_has(o, 0, o->n_in, t->tensors[i])) {
                return OWED_RUN;
            }
        }
        return task_has(t, t->n_in, t->n_in + t->n_out, x) ? OWED_DROP
                                                            : OWED_KEEP;
    default: /* READ runs the record into its buffer (run_task); CREATE,
                EXEC and FLUSH touch no tensor of it */
        return OWED_KEEP;
    }
}

/* A reference on t unless its last one is gone already (then its release
 * is waiting for c->mu, held by the caller, to drop the record). */
static bool
tensor_try_retain(wnn_tensor *t)
{
    int n = atomic_load(&t->refs);
    while (n > 0) {
        if (atomic_compare_exchange_weak(&t->refs, &n, n + 1)) {
            return true;
        }
    }
    return false;
}

/* Before task t runs (c->mu held, released here): what t does to the owed
 * record.  The record taken off the context when t needs the tensor's
 * content or changes the inputs, or drops it (NULL: it stays); *rerun: the
 * tensor (a reference) that the record must first be run again into, or
 * NULL. */
wnn_task *
wnn_owed_take(wnn_context *c, const wnn_task *t, wnn_tensor **rerun)
{
    wnn_task *o = NULL;
    wnn_tensor *x = NULL;
    owed_action a = c->owed && !c->lost ? owed_effect(c, t) : OWED_KEEP;
    if (a != OWED_KEEP) {
        o = c->owed;
        if (a == OWED_RUN && tensor_try_retain(c->owed_tensor)) {
            x = c->owed_tensor;
            score_add(c, -4);
        } else {
            score_add(c, 1);
        }
        c->owed = NULL;
        c->owed_tensor = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    *rerun = x;
    return o;
}
