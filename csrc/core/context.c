/* context.c -- MLContext and MLTensor, and the context's timeline: a worker
 * thread that runs tensor creation, writes, reads and dispatches in the order
 * they were queued.  Validation ("throw a TypeError") happens on the calling
 * thread before anything is queued.  When the context is lost (destroy()),
 * queued work fails with InvalidStateError and the worker stops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

#include "../ops/ops_internal.h"
#include "internal.h"
#include "webnn_introspect.h"

/* A waiter is shared by the caller that waits and the queued task, so it
 * lives on the heap with two references.  A pending read also sits in its
 * tensor's list, so that destroy() can reject it at once. */
typedef struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int refs;
    atomic_uint done;           /* set (release) once st and err are */
    wnn_status st;
    wnn_error err;
    struct waiter *next, *prev; /* in the tensor's pending reads */
} waiter;

/* ---- waking up ----------------------------------------------------------
 * Waking a thread that sleeps on a condition variable costs tens of
 * microseconds on virtual machines, paid twice by every read_tensor (the
 * timeline thread wakes, then the caller).  So both sides spin a little
 * before they sleep: the caller waiting for its task, the timeline thread
 * after each task waiting for the next one.  WEBNN_SPIN_US sets the budget
 * (default 100 microseconds; 0 never spins). */
static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t
spin_budget_ns(void)
{
    static atomic_llong budget = -1;
    long long b = atomic_load_explicit(&budget, memory_order_relaxed);
    if (b < 0) {
        const char *e = getenv("WEBNN_SPIN_US");
        b = 100;
        if (e && *e) {
            char *end;
            long long v = strtoll(e, &end, 10);
            if (*end == '\0' && v >= 0 && v <= 1000000) {
                b = v;
            }
        }
        b *= 1000;
        atomic_store_explicit(&budget, b, memory_order_relaxed);
    }
    return b;
}

/* Spin until *flag is nonzero or the budget is spent; true if it is set. */
static bool
spin_until(const atomic_uint *flag)
{
    int64_t budget = spin_budget_ns();
    if (budget == 0) {
        return atomic_load_explicit(flag, memory_order_acquire) != 0;
    }
    int64_t deadline = now_ns() + budget;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (atomic_load_explicit(flag, memory_order_acquire)) {
                return true;
            }
            cpu_relax();
        }
        if (now_ns() >= deadline) {
            return false;
        }
        /* Let a thread that waits for this core (a pool helper of the
         * running task) go first: the spin must not slow the work down. */
        sched_yield();
    }
}

typedef enum task_kind {
    T_CREATE, T_WRITE, T_READ, T_DISPATCH, T_FREE, T_FLUSH,
    T_EXEC,     /* a graph on the caller's host buffers (compute) */
    T_EXPORT,   /* the device address of a pinned tensor (DLPack)  */
    T_WRITE_DEV /* a device-to-device write (DLPack import)        */
} task_kind;

typedef struct wnn_task {
    task_kind kind;
    struct wnn_task *next;
    wnn_tensor *tensor;         /* CREATE WRITE READ FREE (a reference) */
    void *data;                 /* WRITE/CREATE: owned copy; READ: dst  */
    uint64_t bytes;
    wnn_graph *graph;           /* DISPATCH (a reference)               */
    wnn_tensor **tensors;       /* DISPATCH: inputs then outputs (refs) */
    uint32_t n_in, n_out;
    bool pinned;                /* DISPATCH: the tensors are pinned     */
    void **ptrs;                /* EXEC: the inputs' then the outputs'
                                   host buffers (the caller's)          */
    const void *device_src;     /* CREATE WRITE_DEV: device memory of the
                                   backend's device (the caller's)      */
    void **export_ptr;          /* EXPORT: where the address goes       */
    int *export_id;             /* EXPORT: where the device number goes */
    waiter *w;                  /* NULL when nobody waits               */
    struct wnn_task *read;      /* DISPATCH: the read of its output that
                                   was merged into it (below)           */
    uint64_t *prof_ns;          /* EXEC when profiled (wnn_context_profile):
                                   per plan step ns and runs, the whole
                                   execution's ns (the caller's)         */
    uint32_t *prof_ran;
    uint64_t *prof_total;
} wnn_task;

static waiter *
waiter_new(void)
{
    waiter *w = calloc(1, sizeof(*w));
    if (w) {
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        atomic_init(&w->refs, 2);
    }
    return w;
}

static void
waiter_release(waiter *w)
{
    if (w && atomic_fetch_sub(&w->refs, 1) == 1) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
    }
}

/* Settle the waiter (w->mu held): its status, the error when it failed. */
static void
waiter_settle(waiter *w, wnn_status st, const wnn_error *err)
{
    w->st = st;
    if (st != WNN_OK && err) {
        w->err = *err;
    }
    atomic_store_explicit(&w->done, 1, memory_order_release);
    pthread_cond_signal(&w->cv);
}

/* Settle the waiter unless it is settled already (a cancelled read). */
static void
waiter_finish(waiter *w, wnn_status st, const wnn_error *err)
{
    pthread_mutex_lock(&w->mu);
    if (!atomic_load_explicit(&w->done, memory_order_relaxed)) {
        waiter_settle(w, st, err);
    }
    pthread_mutex_unlock(&w->mu);
}

static void
waiter_wait(waiter *w)
{
    if (spin_until(&w->done)) {
        /* The finisher may still hold the mutex (it signals under it):
         * take it once so that destroying the waiter cannot race. */
        pthread_mutex_lock(&w->mu);
        pthread_mutex_unlock(&w->mu);
        return;
    }
    pthread_mutex_lock(&w->mu);
    while (!atomic_load_explicit(&w->done, memory_order_acquire)) {
        pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

static void
task_free(wnn_task *t)
{
    if (t->kind == T_WRITE || t->kind == T_CREATE) {
        free(t->data);
    }
    if (t->tensor) {
        wnn_tensor_release(t->tensor);
    }
    if (t->graph) {
        wnn_graph_release(t->graph);
    }
    for (uint32_t i = 0; t->tensors && i < t->n_in + t->n_out; i++) {
        if (!t->tensors[i]) {
            continue; /* an owed dispatch's output (owed_keep) */
        }
        if (t->pinned) {
            wnn_tensor_unpin(t->tensors[i]);
        }
        wnn_tensor_release(t->tensors[i]);
    }
    if (t->tensors != (wnn_tensor **)(t + 1)) { /* (dispatch's: inline) */
        free(t->tensors);
    }
    free(t->ptrs);
    if (t->read) {
        task_free(t->read);
    }
    waiter_release(t->w);
    free(t);
}

static void
tensor_mark(wnn_tensor *t, const wnn_error *err)
{
    if (err) {
        char buf[sizeof(t->fail_msg)];
        wnn_error_format(err, buf, sizeof(buf));
        memcpy(t->fail_msg, buf, sizeof(buf));
        atomic_store(&t->failed, 1);
    } else {
        atomic_store(&t->failed, 0);
    }
}

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
        v = !(e && strcmp(e, "0") == 0) && spin_budget_ns() > 0;
        atomic_store_explicit(&on, v, memory_order_relaxed);
    }
    return v;
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
static void
merge_read(wnn_context *c, wnn_task *t)
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
    int64_t deadline = now_ns() + MERGE_WAIT_NS;
    while (!atomic_load_explicit(&c->queued, memory_order_acquire)) {
        if (now_ns() >= deadline) {
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
static wnn_status
owed_run(wnn_context *c, const wnn_task *o, void *dst, wnn_error *err)
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

/* Dispatch t ran into its merged read's buffer: keep it as the owed record
 * (true: t now belongs to the context, and may be gone when this returns). */
static bool
owed_keep(wnn_context *c, wnn_task *t)
{
    wnn_tensor *x = t->tensors[t->n_in];
    t->tensors[t->n_in] = NULL; /* the record does not hold its output */
    pthread_mutex_lock(&c->mu);
    /* references: t's, its read's, and the caller's (or no one can read x
     * again and there is nothing to keep) */
    bool keep = !c->owed && !c->lost && atomic_load(&x->refs) > 2;
    if (keep) {
        c->owed = t;
        c->owed_tensor = x;
    }
    pthread_mutex_unlock(&c->mu);
    if (!keep) {
        t->tensors[t->n_in] = x;
        return false;
    }
    task_free(t->read); /* its reference on x: t still holds one */
    t->read = NULL;
    wnn_tensor_unpin(x);
    /* last: if this is x's last reference, its release drops (frees) t */
    wnn_tensor_release(x);
    return true;
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

/* Before task t runs (c->mu held, released here): settle the owed record
 * if t needs the tensor's content or changes the inputs, or drop it. */
static void
owed_settle(wnn_context *c, const wnn_task *t)
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
    if (x) {
        wnn_error err;
        wnn_error_clear(&err);
        wnn_status st = owed_run(c, o, x->storage, &err);
        tensor_mark(x, st == WNN_OK ? NULL : &err);
        wnn_tensor_release(x);
    }
    if (o) {
        task_free(o);
    }
}

/* Returns true when t was kept (owed_keep): the caller must not free it. */
static bool
run_task(wnn_context *c, wnn_task *t)
{
    wnn_backend *be = c->backend;
    wnn_error err;
    wnn_status st = WNN_OK;
    wnn_error_clear(&err);
    switch (t->kind) {
    case T_CREATE:
        st = be->iface->tensor_alloc(be, t->tensor->bytes, &t->tensor->storage,
                                     &err);
        if (st == WNN_OK && t->data) {
            st = be->iface->tensor_write(be, t->tensor->storage, t->data,
                                         t->bytes, &err);
        } else if (st == WNN_OK && t->device_src) {
            st = be->iface->tensor_write_device(be, t->tensor->storage,
                                                t->device_src, t->bytes, &err);
        }
        break;
    case T_WRITE_DEV:
        if (t->tensor->storage) {
            st = be->iface->tensor_write_device(be, t->tensor->storage,
                                                t->device_src, t->bytes, &err);
            tensor_mark(t->tensor, st == WNN_OK ? NULL : &err);
        }
        break;
    case T_EXPORT:
        /* the tensor is pinned: its storage outlives a destroy() */
        if (!t->tensor->storage) {
            st = wnn_failk(&err, WNN_INVALID_STATE, "__dlpack__", NULL,
                           "tensor", "the tensor was destroyed");
        } else if (atomic_load(&t->tensor->failed)) {
            st = wnn_failk(&err, WNN_OPERATION_ERROR, "__dlpack__", NULL,
                           "tensor", "the work that wrote it failed: %s",
                           t->tensor->fail_msg);
        } else {
            be->iface->synchronize(be);
            st = be->iface->tensor_device_ptr(be, t->tensor->storage,
                                              t->export_ptr, t->export_id,
                                              &err);
        }
        break;
    case T_WRITE:
        if (t->tensor->storage) {
            st = be->iface->tensor_write(be, t->tensor->storage, t->data,
                                         t->bytes, &err);
            tensor_mark(t->tensor, st == WNN_OK ? NULL : &err);
        }
        break;
    case T_READ:
        pthread_mutex_lock(&t->w->mu);
        if (atomic_load_explicit(&t->w->done, memory_order_relaxed)) {
            /* rejected by the tensor's destroy() */
            pthread_mutex_unlock(&t->w->mu);
            return false;
        }
        if (atomic_load(&t->tensor->destroyed) || !t->tensor->storage) {
            st = wnn_failk(&err, WNN_INVALID_STATE, "readTensor", NULL,
                           "tensor", "the tensor was destroyed");
        } else if (atomic_load(&t->tensor->failed)) {
            st = wnn_failk(&err, WNN_OPERATION_ERROR, "readTensor", NULL,
                           "tensor", "the work that wrote it failed: %s",
                           t->tensor->fail_msg);
        } else {
            /* an owed tensor (its record cannot go: t holds a reference):
             * run again into the buffer, or, one not aligned to the
             * elements, into the tensor (the record settled) and copied */
            pthread_mutex_lock(&c->mu);
            wnn_task *o = c->owed_tensor == t->tensor ? c->owed : NULL;
            bool settle = o && (uintptr_t)t->data %
                                   wnn_dtype_size(t->tensor->desc.dtype);
            if (settle) {
                c->owed = NULL;
                c->owed_tensor = NULL;
            }
            pthread_mutex_unlock(&c->mu);
            if (settle) {
                st = owed_run(c, o, t->tensor->storage, &err);
                tensor_mark(t->tensor, st == WNN_OK ? NULL : &err);
                task_free(o);
                o = NULL;
            }
            if (o) {
                st = owed_run(c, o, t->data, &err);
            } else if (st == WNN_OK) {
                be->iface->synchronize(be);
                st = be->iface->tensor_read(be, t->tensor->storage, t->data,
                                            t->bytes, &err);
            }
        }
        waiter_settle(t->w, st, &err);
        pthread_mutex_unlock(&t->w->mu);
        return false;
    case T_DISPATCH: {
        void *in[t->n_in + 1], *out[t->n_out + 1];
        for (uint32_t i = 0; i < t->n_in; i++) {
            in[i] = t->tensors[i]->storage;
        }
        for (uint32_t i = 0; i < t->n_out; i++) {
            out[i] = t->tensors[t->n_in + i]->storage;
        }
        /* a merged read: held like a T_READ's (destroy() waits), its
         * buffer taking the output unless the tensor was destroyed */
        waiter *rw = t->read ? t->read->w : NULL;
        if (rw) {
            pthread_mutex_lock(&rw->mu);
            if (atomic_load_explicit(&rw->done, memory_order_relaxed)) {
                pthread_mutex_unlock(&rw->mu); /* rejected by destroy() */
                rw = NULL;
            } else if (!atomic_load(&t->tensors[t->n_in]->destroyed)) {
                out[0] = t->read->data;
            }
        }
        st = be->iface->execute(be, t->graph, t->graph->compiled, in, out,
                                &err);
        for (uint32_t i = 0; i < t->n_out; i++) {
            tensor_mark(t->tensors[t->n_in + i], st == WNN_OK ? NULL : &err);
        }
        if (rw) {
            wnn_tensor *x = t->tensors[t->n_in];
            wnn_status rst = WNN_OK;
            wnn_error rerr;
            if (out[0] != t->read->data) {
                rst = wnn_failk(&rerr, WNN_INVALID_STATE, "readTensor",
                                NULL, "tensor", "the tensor was destroyed");
            } else if (st != WNN_OK) {
                rst = wnn_failk(&rerr, WNN_OPERATION_ERROR, "readTensor",
                                NULL, "tensor",
                                "the work that wrote it failed: %s",
                                x->fail_msg);
            }
            waiter_settle(rw, rst, &rerr);
            pthread_mutex_unlock(&rw->mu);
            if (rst == WNN_OK && owed_keep(c, t)) {
                return true;
            }
        }
        break;
    }
    case T_FREE:
        /* a pinned tensor is freed when its last use unpins it */
        if (t->tensor->storage && atomic_load(&t->tensor->pins) == 0) {
            be->iface->synchronize(be);
            be->iface->tensor_free(be, t->tensor->storage);
            t->tensor->storage = NULL;
        }
        break;
    case T_FLUSH:
        be->iface->synchronize(be);
        break;
    case T_EXEC:
        if (t->prof_ns) {
            int64_t t0 = now_ns();
            st = be->iface->execute_profiled(be, t->graph, t->graph->compiled,
                                             t->ptrs, t->ptrs + t->n_in,
                                             t->prof_ns, t->prof_ran, &err);
            *t->prof_total += (uint64_t)(now_ns() - t0);
        } else {
            st = be->iface->execute(be, t->graph, t->graph->compiled, t->ptrs,
                                    t->ptrs + t->n_in, &err);
        }
        break;
    }
    if (t->w) {
        waiter_finish(t->w, st, &err);
    }
    return false;
}

static void *
worker_main(void *arg)
{
    wnn_context *c = arg;
    for (;;) {
        spin_until(&c->queued);
        pthread_mutex_lock(&c->mu);
        while (atomic_load_explicit(&c->busy, memory_order_relaxed) ||
               (!c->head && !c->stopping)) {
            pthread_cond_wait(&c->cv, &c->mu);
        }
        wnn_task *t = c->head;
        if (!t) { /* stopping and drained */
            pthread_mutex_unlock(&c->mu);
            break;
        }
        c->head = t->next;
        if (!c->head) {
            c->tail = NULL;
        }
        atomic_fetch_sub_explicit(&c->queued, 1, memory_order_relaxed);
        atomic_store_explicit(&c->busy, true, memory_order_relaxed);
        bool lost = c->lost;
        owed_settle(c, t); /* unlocks c->mu */
        if (lost) {
            /* "abort when this is lost": queued work fails. */
            if (t->w) {
                wnn_error err;
                wnn_failk(&err, WNN_INVALID_STATE, "MLContext", NULL, NULL,
                          "the context was lost: %s", c->lost_message);
                waiter_finish(t->w, WNN_ERR, &err);
            }
            if (t->kind == T_FREE && t->tensor->storage &&
                atomic_load(&t->tensor->pins) == 0) {
                c->backend->iface->tensor_free(c->backend, t->tensor->storage);
                t->tensor->storage = NULL;
            }
        } else {
            if (t->kind == T_DISPATCH) {
                merge_read(c, t);
            }
            if (run_task(c, t)) {
                atomic_store_explicit(&c->busy, false, memory_order_release);
                continue; /* kept as the owed record */
            }
        }
        task_free(t);
        atomic_store_explicit(&c->busy, false, memory_order_release);
    }
    if (c->self_free) {
        /* The last reference went on this thread (see release). */
        c->backend->iface->destroy(c->backend);
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
        free(c);
    }
    return NULL;
}

/* Forks of this process so far, counted by a pthread_atfork handler in
 * the child: a context made before the fork sees a different number.  (A
 * getpid() system call per dispatch and read cost a tenth of the small
 * graphs' dispatch time.) */
static atomic_uint fork_count;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void
count_fork(void)
{
    atomic_fetch_add(&fork_count, 1);
}

static void
fork_watch(void)
{
    pthread_atfork(NULL, NULL, count_fork);
}

bool
wnn_context_forked(const wnn_context *c)
{
    return c->fork_gen != atomic_load_explicit(&fork_count, memory_order_relaxed);
}

/* ---- small work on the caller's thread ------------------------------------
 * Handing a task to the timeline thread and its result back costs 1-2 us
 * of wake-ups each way (more when the two threads' virtual CPUs are not
 * both running), the whole cost of a small graph's dispatch + read.  So
 * when the timeline is idle (nothing queued, no task running) the calling
 * thread runs a small task itself, holding `busy` so that the worker
 * starts nothing meanwhile: the order is the timeline's.  Small: reads and
 * writes of up to 64 KiB, dispatches and compute() of run_inline graphs (element-wise
 * operators and normalizations,
 * up to 64 KiB of inputs and outputs: a few microseconds at most); only on
 * backends whose tensors are host memory (a GPU backend's state belongs to
 * its thread). */
#define INLINE_MAX_BYTES (64u << 10)

static bool
inline_ok(const wnn_context *c, const wnn_task *t)
{
    if (!c->backend->iface->host_storage) {
        return false;
    }
    switch (t->kind) {
    case T_DISPATCH:
    case T_EXEC: /* compute() */
        return t->graph->run_inline;
    case T_READ:
    case T_WRITE:
        return t->bytes <= INLINE_MAX_BYTES;
    default:
        return false;
    }
}

/* Queue `t`; fails (and frees t) if the context is lost. */
static wnn_status
enqueue(wnn_context *c, wnn_task *t, const char *op, wnn_error *err)
{
    if (wnn_context_forked(c)) {
        task_free(t);
        return wnn_failk(err, WNN_INVALID_STATE, op, NULL, NULL,
                         "the context was created in another process (this "
                         "one was forked from it): create a new context here");
    }
    pthread_mutex_lock(&c->mu);
    if (c->lost) {
        pthread_mutex_unlock(&c->mu);
        task_free(t);
        return wnn_failk(err, WNN_INVALID_STATE, op, NULL, NULL,
                         "the context is lost: %s", c->lost_message);
    }
    if (!c->head && !atomic_load_explicit(&c->busy, memory_order_acquire) &&
        inline_ok(c, t)) {
        atomic_store_explicit(&c->busy, true, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->inline_runs, 1, memory_order_relaxed);
        owed_settle(c, t); /* unlocks c->mu */
        if (!run_task(c, t)) { /* (only a merged dispatch is kept) */
            task_free(t);
        }
        pthread_mutex_lock(&c->mu);
        atomic_store_explicit(&c->busy, false, memory_order_release);
        if (c->head || c->stopping) {
            /* work queued meanwhile, or the worker's end, waits for busy
             * (with neither, a sleeping worker has nothing to do: no
             * wake-up, which would cost a system call per small task) */
            pthread_cond_signal(&c->cv);
        }
        pthread_mutex_unlock(&c->mu);
        return WNN_OK;
    }
    t->next = NULL;
    if (c->tail) {
        c->tail->next = t;
    } else {
        c->head = t;
    }
    c->tail = t;
    atomic_fetch_add_explicit(&c->queued, 1, memory_order_release);
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return WNN_OK;
}

static wnn_status
enqueue_wait(wnn_context *c, wnn_task *t, const char *op, wnn_error *err)
{
    waiter *w = waiter_new();
    if (!w) {
        task_free(t);
        return wnn_failk(err, WNN_OUT_OF_MEMORY, op, NULL, NULL,
                         "out of memory");
    }
    t->w = w;
    wnn_tensor *pend = t->kind == T_READ ? t->tensor : NULL;
    if (pend) {
        pthread_mutex_lock(&pend->pmu);
        w->next = pend->pending;
        if (w->next) {
            w->next->prev = w;
        }
        pend->pending = w;
        pthread_mutex_unlock(&pend->pmu);
        wnn_tensor_retain(pend);
    }
    wnn_status st;
    if (enqueue(c, t, op, err) != WNN_OK) {
        st = WNN_ERR; /* t and its reference on w are gone */
    } else {
        waiter_wait(w);
        st = w->st;
        if (st != WNN_OK && err) {
            *err = w->err;
        }
    }
    if (pend) {
        pthread_mutex_lock(&pend->pmu);
        if (w->prev) {
            w->prev->next = w->next;
        } else if (pend->pending == w) {
            pend->pending = w->next;
        }
        if (w->next) {
            w->next->prev = w->prev;
        }
        pthread_mutex_unlock(&pend->pmu);
        wnn_tensor_release(pend);
    }
    waiter_release(w);
    return st;
}

/* ---- contexts --------------------------------------------------------- */
wnn_status
wnn_context_create(wnn_device d, wnn_context **out, wnn_error *err)
{
    wnn_context *c = calloc(1, sizeof(*c));
    if (!c) {
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "createContext", NULL, NULL,
                         "out of memory");
    }
    if (wnn_backend_create(d, &c->backend, err) != WNN_OK) {
        free(c);
        return WNN_ERR;
    }
    atomic_init(&c->refs, 1);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (pthread_create(&c->worker, NULL, worker_main, c) != 0) {
        c->backend->iface->destroy(c->backend);
        free(c);
        return wnn_failk(err, WNN_UNKNOWN_ERROR, "createContext", NULL, NULL,
                         "cannot start the timeline thread");
    }
    c->worker_started = true;
    pthread_once(&fork_once, fork_watch);
    c->fork_gen = atomic_load(&fork_count);
    *out = c;
    return WNN_OK;
}

void
wnn_context_retain(wnn_context *c)
{
    atomic_fetch_add(&c->refs, 1);
}

static void
stop_worker(wnn_context *c)
{
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (c->worker_started) {
        pthread_join(c->worker, NULL);
        c->worker_started = false;
    }
}

void
wnn_context_release(wnn_context *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1) {
        return;
    }
    if (wnn_context_forked(c)) {
        return; /* no thread to join here; the memory goes with the process */
    }
    /* Nothing references the context: no task can be queued any more. */
    if (c->worker_started && pthread_equal(pthread_self(), c->worker)) {
        /* Released by a task finishing on the worker: it cannot join
         * itself, so it frees the context when its loop ends. */
        pthread_mutex_lock(&c->mu);
        c->stopping = true;
        c->self_free = true;
        pthread_mutex_unlock(&c->mu);
        pthread_detach(c->worker);
        return;
    }
    stop_worker(c);
    c->backend->iface->destroy(c->backend);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

/* #api-mlcontext-destroy and "lose": pending and later work fails. */
void
wnn_context_destroy(wnn_context *c, const char *message)
{
    if (wnn_context_forked(c)) {
        return;
    }
    pthread_mutex_lock(&c->mu);
    if (c->lost) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    c->lost = true;
    snprintf(c->lost_message, sizeof(c->lost_message), "%s",
             message ? message : "destroy() was called");
    pthread_mutex_unlock(&c->mu);
    stop_worker(c); /* drains the queue, failing each task */
}

bool
wnn_context_is_lost(const wnn_context *c)
{
    wnn_context *m = (wnn_context *)c;
    pthread_mutex_lock(&m->mu);
    bool lost = m->lost;
    pthread_mutex_unlock(&m->mu);
    return lost;
}

const char *
wnn_context_lost_message(const wnn_context *c)
{
    return c->lost_message;
}

bool
wnn_context_accelerated(const wnn_context *c)
{
    return c->backend->iface->accelerated;
}

wnn_device
wnn_context_device(const wnn_context *c)
{
    return c->backend->iface->device;
}

uint64_t
wnn_context_max_tensor_bytes(const wnn_context *c)
{
    return c->backend->iface->max_tensor_bytes;
}

bool
wnn_context_op_limits(const wnn_context *c, wnn_op op, wnn_op_limits *out)
{
    if ((unsigned)op >= WNN_OP_COUNT) {
        return false;
    }
    return c->backend->iface->op_limits(c->backend, op, out);
}

void
wnn_context_timeline_counts(const wnn_context *c, uint64_t *merged_reads,
                            uint64_t *reruns, uint64_t *inline_runs)
{
    wnn_context *m = (wnn_context *)c;
    *merged_reads = atomic_load_explicit(&m->merged_reads, memory_order_relaxed);
    *reruns = atomic_load_explicit(&m->owed_runs, memory_order_relaxed);
    *inline_runs = atomic_load_explicit(&m->inline_runs, memory_order_relaxed);
}

void
wnn_context_flush(wnn_context *c)
{
    wnn_task *t = calloc(1, sizeof(*t));
    wnn_error err;
    if (t) {
        t->kind = T_FLUSH;
        enqueue_wait(c, t, "flush", &err);
    }
}

/* ---- tensors ---------------------------------------------------------- */
/* A descriptor's dimensions and its byte length against this context's
 * maxTensorByteLength (builder.c's input / constant / outputs too). */
wnn_status
wnn_desc_check(wnn_context *c, const wnn_desc *d, const char *op,
               const char *arg, wnn_error *err)
{
    return wnn_check_dimensions(d, wnn_context_max_tensor_bytes(c), op, arg,
                                err);
}

static wnn_status
tensor_create(wnn_context *c, const wnn_desc *d, bool readable,
              bool writable, const void *constant_data,
              const void *device_src, wnn_tensor **out, wnn_error *err)
{
    const char *op = constant_data || device_src ? "createConstantTensor"
                                                 : "createTensor";
    if (device_src && c->backend->iface->host_storage) {
        return wnn_failk(err, WNN_NOT_SUPPORTED, op, NULL, "inputData",
                         "device memory given to a context whose tensors "
                         "are host memory");
    }
    if (wnn_context_is_lost(c)) {
        return wnn_failk(err, WNN_INVALID_STATE, op, NULL, NULL,
                         "the context is lost");
    }
    if (wnn_desc_check(c, d, op, "descriptor", err) != WNN_OK) {
        return WNN_ERR;
    }
    wnn_tensor *t = calloc(1, sizeof(*t));
    wnn_task *task = calloc(1, sizeof(*task));
    uint64_t bytes = wnn_desc_bytes(d);
    void *copy = constant_data ? malloc(bytes) : NULL;
    if (!t || !task || (constant_data && !copy)) {
        free(t);
        free(task);
        free(copy);
        return wnn_failk(err, WNN_OUT_OF_MEMORY, op, NULL, NULL,
                         "out of memory");
    }
    if (copy) {
        memcpy(copy, constant_data, bytes);
    }
    atomic_init(&t->refs, 1);
    atomic_init(&t->destroyed, false);
    atomic_init(&t->pins, 0);
    atomic_init(&t->failed, 0);
    pthread_mutex_init(&t->pmu, NULL);
    t->ctx = c;
    wnn_context_retain(c);
    t->desc = *d;
    t->bytes = bytes;
    bool constant = constant_data != NULL || device_src != NULL;
    t->readable = constant ? false : readable;
    t->writable = constant ? false : writable;
    t->constant = constant;
    task->kind = T_CREATE;
    task->tensor = t;
    wnn_tensor_retain(t);
    task->data = copy;
    task->device_src = device_src;
    task->bytes = bytes;
    if (enqueue_wait(c, task, op, err) != WNN_OK) {
        wnn_tensor_release(t);
        return WNN_ERR;
    }
    *out = t;
    return WNN_OK;
}

wnn_status
wnn_tensor_create(wnn_context *c, const wnn_desc *d, bool readable,
                  bool writable, const void *constant_data, wnn_tensor **out,
                  wnn_error *err)
{
    return tensor_create(c, d, readable, writable, constant_data, NULL, out,
                         err);
}

wnn_status
wnn_tensor_create_constant_device(wnn_context *c, const wnn_desc *d,
                                  const void *device_src, wnn_tensor **out,
                                  wnn_error *err)
{
    return tensor_create(c, d, false, false, NULL, device_src, out, err);
}

void
wnn_tensor_retain(wnn_tensor *t)
{
    atomic_fetch_add(&t->refs, 1);
}

void
wnn_tensor_release(wnn_tensor *t)
{
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1) {
        return;
    }
    /* The last reference: no queued task uses the storage any more, and
     * nothing can read it: drop its owed record (reads merged into
     * dispatches) if it has one. */
    if (!wnn_context_forked(t->ctx)) {
        wnn_context *c = t->ctx;
        wnn_task *o = NULL;
        pthread_mutex_lock(&c->mu);
        if (c->owed_tensor == t) {
            o = c->owed;
            c->owed = NULL;
            c->owed_tensor = NULL;
        }
        pthread_mutex_unlock(&c->mu);
        if (o) {
            task_free(o);
        }
        if (t->storage) {
            c->backend->iface->tensor_free(c->backend, t->storage);
        }
    }
    pthread_mutex_destroy(&t->pmu);
    wnn_context_release(t->ctx);
    free(t);
}

static void
enqueue_free(wnn_tensor *t)
{
    wnn_task *task = calloc(1, sizeof(*task));
    wnn_error err;
    if (task) {
        task->kind = T_FREE;
        task->tensor = t;
        wnn_tensor_retain(t);
        enqueue(t->ctx, task, "destroy", &err); /* lost: freed with refs */
    }
}

/* A use of the tensor's storage that must outlive a concurrent destroy():
 * a dispatch from its validation until it has run, a build while it copies
 * a constant.  false (and no pin) when the tensor is destroyed already. */
bool
wnn_tensor_pin(wnn_tensor *t)
{
    atomic_fetch_add(&t->pins, 1);
    if (atomic_load(&t->destroyed)) {
        wnn_tensor_unpin(t);
        return false;
    }
    return true;
}

void
wnn_tensor_unpin(wnn_tensor *t)
{
    if (atomic_fetch_sub(&t->pins, 1) == 1 && atomic_load(&t->destroyed)) {
        /* the last use of a destroyed tensor: free it on the timeline
         * (its T_FREE, queued earlier, found it pinned) */
        enqueue_free(t);
    }
}

/* #api-mltensor-destroy: release the data after earlier queued work. */
void
wnn_tensor_destroy(wnn_tensor *t)
{
    if (atomic_exchange(&t->destroyed, true)) {
        return;
    }
    /* "For each promise in [[pendingPromises]]: reject it with an
     * InvalidStateError" -- at once, not when the queue gets there. */
    pthread_mutex_lock(&t->pmu);
    for (waiter *w = t->pending; w; w = w->next) {
        wnn_error err;
        wnn_failk(&err, WNN_INVALID_STATE, "readTensor", NULL, "tensor",
                  "the tensor was destroyed while the read was pending");
        waiter_finish(w, WNN_ERR, &err);
    }
    pthread_mutex_unlock(&t->pmu);
    enqueue_free(t);
}

const wnn_desc *wnn_tensor_desc(const wnn_tensor *t) { return &t->desc; }
bool wnn_tensor_readable(const wnn_tensor *t) { return t->readable; }
bool wnn_tensor_writable(const wnn_tensor *t) { return t->writable; }
bool wnn_tensor_is_constant(const wnn_tensor *t) { return t->constant; }
bool wnn_tensor_is_destroyed(const wnn_tensor *t) { return atomic_load(&t->destroyed); }
wnn_context *wnn_tensor_context(const wnn_tensor *t) { return t->ctx; }

static wnn_status
check_tensor(wnn_context *c, wnn_tensor *t, const char *op, wnn_error *err)
{
    if (t->ctx != c) {
        return wnn_failk(err, WNN_TYPE_ERROR, op, NULL, "tensor",
                         "the tensor belongs to another context");
    }
    if (wnn_tensor_is_destroyed(t)) {
        return wnn_failk(err, WNN_TYPE_ERROR, op, NULL, "tensor",
                         "the tensor is destroyed");
    }
    return WNN_OK;
}

/* A task of `kind` on tensor t (a reference taken) for `bytes`; NULL with
 * the out-of-memory error of `op` */
static wnn_task *
tensor_task(task_kind kind, wnn_tensor *t, uint64_t bytes, const char *op,
            wnn_error *err)
{
    wnn_task *task = calloc(1, sizeof(*task));
    if (!task) {
        wnn_failk(err, WNN_OUT_OF_MEMORY, op, NULL, NULL, "out of memory");
        return NULL;
    }
    task->kind = kind;
    task->tensor = t;
    wnn_tensor_retain(t);
    task->bytes = bytes;
    return task;
}

/* #api-mlcontext-writetensor: the tensor and the data's byte length */
static wnn_status
write_check(wnn_context *c, wnn_tensor *t, size_t bytes, wnn_error *err)
{
    if (check_tensor(c, t, "writeTensor", err) != WNN_OK) {
        return WNN_ERR;
    }
    if (!t->writable) {
        return wnn_failk(err, WNN_TYPE_ERROR, "writeTensor", NULL, "tensor",
                         "the tensor is not writable");
    }
    if (bytes != t->bytes) {
        return wnn_failk(err, WNN_TYPE_ERROR, "writeTensor", NULL, "inputData",
                         "byte length %zu differs from the tensor's %llu",
                         bytes, (unsigned long long)t->bytes);
    }
    return WNN_OK;
}

/* #api-mlcontext-writetensor */
wnn_status
wnn_context_write(wnn_context *c, wnn_tensor *t, const void *src, size_t bytes,
                  wnn_error *err)
{
    if (write_check(c, t, bytes, err) != WNN_OK) {
        return WNN_ERR;
    }
    void *copy = malloc(bytes ? bytes : 1);
    if (!copy) {
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "writeTensor", NULL, NULL,
                         "out of memory");
    }
    wnn_task *task = tensor_task(T_WRITE, t, bytes, "writeTensor", err);
    if (!task) {
        free(copy);
        return WNN_ERR;
    }
    memcpy(copy, src, bytes);
    task->data = copy;
    return enqueue(c, task, "writeTensor", err);
}

/* DLPack import: queue a device-to-device copy and wait for it (the
 * caller's device memory may go as soon as this returns). */
wnn_status
wnn_context_write_device(wnn_context *c, wnn_tensor *t, const void *src,
                         size_t bytes, wnn_error *err)
{
    if (write_check(c, t, bytes, err) != WNN_OK) {
        return WNN_ERR;
    }
    if (c->backend->iface->host_storage) {
        return wnn_failk(err, WNN_NOT_SUPPORTED, "writeTensor", NULL,
                         "inputData", "device memory given to a context "
                         "whose tensors are host memory");
    }
    wnn_task *task = tensor_task(T_WRITE_DEV, t, bytes, "writeTensor", err);
    if (!task) {
        return WNN_ERR;
    }
    task->device_src = src;
    return enqueue_wait(c, task, "writeTensor", err);
}

/* DLPack export: pin the tensor, wait for the work queued before it and
 * for the device, and give its storage's device address. */
wnn_status
wnn_tensor_export(wnn_context *c, wnn_tensor *t, void **ptr, int *device_id,
                  wnn_error *err)
{
    if (check_tensor(c, t, "__dlpack__", err) != WNN_OK) {
        return WNN_ERR;
    }
    if (!t->readable) {
        return wnn_failk(err, WNN_TYPE_ERROR, "__dlpack__", NULL, "tensor",
                         "the tensor is not readable");
    }
    if (c->backend->iface->host_storage) {
        return wnn_failk(err, WNN_NOT_SUPPORTED, "__dlpack__", NULL, "tensor",
                         "not a device tensor (the context's tensors are "
                         "host memory)");
    }
    if (!wnn_tensor_pin(t)) {
        return wnn_failk(err, WNN_TYPE_ERROR, "__dlpack__", NULL, "tensor",
                         "the tensor is destroyed");
    }
    wnn_task *task = tensor_task(T_EXPORT, t, 0, "__dlpack__", err);
    if (!task) {
        wnn_tensor_unpin(t);
        return WNN_ERR;
    }
    task->export_ptr = ptr;
    task->export_id = device_id;
    if (enqueue_wait(c, task, "__dlpack__", err) != WNN_OK) {
        wnn_tensor_unpin(t);
        return WNN_ERR;
    }
    wnn_tensor_retain(t); /* the export's own, dropped by export_end */
    return WNN_OK;
}

void
wnn_tensor_export_end(wnn_tensor *t)
{
    wnn_tensor_unpin(t);
    wnn_tensor_release(t);
}

int
wnn_context_device_id(const wnn_context *c)
{
    return c->backend->iface->device_id;
}

/* #api-mlcontext-readtensor and #api-mlcontext-readtensor-byob */
wnn_status
wnn_context_read(wnn_context *c, wnn_tensor *t, void *dst, size_t bytes,
                 wnn_error *err)
{
    if (check_tensor(c, t, "readTensor", err) != WNN_OK) {
        return WNN_ERR;
    }
    if (!t->readable) {
        return wnn_failk(err, WNN_TYPE_ERROR, "readTensor", NULL, "tensor",
                         "the tensor is not readable");
    }
    if (bytes != t->bytes) {
        return wnn_failk(err, WNN_TYPE_ERROR, "readTensor", NULL, "outputData",
                         "byte length %zu differs from the tensor's %llu",
                         bytes, (unsigned long long)t->bytes);
    }
    wnn_task *task = tensor_task(T_READ, t, bytes, "readTensor", err);
    if (!task) {
        return WNN_ERR;
    }
    task->data = dst;
    return enqueue_wait(c, task, "readTensor", err);
}

/* "validating tensors with descriptors"; `index` maps the graph's names
 * to positions in `descs` (linear in the number of tensors). */
static wnn_status
match_tensors(const char *what, uint32_t n, const char *const *names,
              wnn_tensor *const *tensors, const wnn_named *descs, uint32_t nd,
              const wnn_strmap *index, wnn_tensor **sorted, wnn_error *err)
{
    if (n != nd) {
        return wnn_failk(err, WNN_TYPE_ERROR, "dispatch", NULL, what,
                         "%u tensors given, the graph has %u", n, nd);
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j;
        if (!wnn_strmap_get(index, names[i], &j)) {
            return wnn_failk(err, WNN_TYPE_ERROR, "dispatch", NULL, what,
                             "the graph has no %s named '%s'",
                             what[0] == 'i' ? "input" : "output", names[i]);
        }
        if (tensors[i]->constant) {
            return wnn_failk(err, WNN_TYPE_ERROR, "dispatch", NULL, what,
                             "tensor '%s' is a constant tensor", names[i]);
        }
        if (!wnn_desc_equal(&tensors[i]->desc, &descs[j].desc)) {
            char s1[96], s2[96];
            return wnn_failk(
                err, WNN_TYPE_ERROR, "dispatch", NULL, what,
                "tensor '%s' is %s %s, the graph expects %s %s", names[i],
                wnn_dtype_name(tensors[i]->desc.dtype),
                wnn_shape_str(tensors[i]->desc.shape, tensors[i]->desc.rank,
                              s1, sizeof(s1)),
                wnn_dtype_name(descs[j].desc.dtype),
                wnn_shape_str(descs[j].desc.shape, descs[j].desc.rank, s2,
                              sizeof(s2)));
        }
        if (sorted[j]) { /* the C API takes arrays: a name given twice */
            return wnn_failk(err, WNN_TYPE_ERROR, "dispatch", NULL, what,
                             "'%s' is named twice", names[i]);
        }
        sorted[j] = tensors[i];
    }
    return WNN_OK;
}

bool
wnn_context_host_storage(const wnn_context *c)
{
    return c->backend->iface->host_storage;
}

/* compute(): the graph on the caller's arrays, no tensors in between. */
/* compute() and profile(): g run on the caller's host buffers on the
 * timeline, the caller waiting (op: the name errors carry). */
static wnn_status
exec_host(wnn_context *c, wnn_graph *g, uint32_t n_in,
          const void *const *in, uint32_t n_out, void *const *out,
          uint64_t *prof_ns, uint32_t *prof_ran, uint64_t *prof_total,
          const char *op, wnn_error *err)
{
    if (g->ctx != c) {
        return wnn_failk(err, WNN_TYPE_ERROR, op, NULL, "graph",
                         "the graph belongs to another context");
    }
    if (wnn_graph_is_destroyed(g) || wnn_context_is_lost(c)) {
        return wnn_failk(err, WNN_INVALID_STATE, op, NULL, "graph",
                         wnn_context_is_lost(c) ? "the context is lost"
                                                : "the graph is destroyed");
    }
    if (!c->backend->iface->host_storage) {
        return wnn_failk(err, WNN_NOT_SUPPORTED, op, NULL, NULL,
                         "the %s backend's tensors are not host memory",
                         c->backend->iface->name);
    }
    if (prof_ns && !c->backend->iface->execute_profiled) {
        return wnn_failk(err, WNN_NOT_SUPPORTED, op, NULL, NULL,
                         "the %s backend cannot time its steps",
                         c->backend->iface->name);
    }
    if (n_in != g->n_inputs || n_out != g->n_outputs) {
        return wnn_failk(err, WNN_TYPE_ERROR, op, NULL, "inputs",
                         "%u inputs and %u outputs given, the graph has %u "
                         "and %u", n_in, n_out, g->n_inputs, g->n_outputs);
    }
    wnn_task *task = calloc(1, sizeof(*task));
    void **ptrs = malloc(sizeof(void *) * ((size_t)n_in + n_out + 1));
    if (!task || !ptrs) {
        free(task);
        free(ptrs);
        return wnn_failk(err, WNN_OUT_OF_MEMORY, op, NULL, NULL,
                         "out of memory");
    }
    task->prof_ns = prof_ns;
    task->prof_ran = prof_ran;
    task->prof_total = prof_total;
    for (uint32_t i = 0; i < n_in; i++) {
        ptrs[i] = (void *)in[i];
    }
    for (uint32_t i = 0; i < n_out; i++) {
        ptrs[n_in + i] = out[i];
    }
    task->kind = T_EXEC;
    task->graph = g;
    wnn_graph_retain(g);
    task->ptrs = ptrs;
    task->n_in = n_in;
    task->n_out = n_out;
    /* the caller waits: its buffers outlive the task's use of them */
    return enqueue_wait(c, task, op, err);
}

wnn_status
wnn_context_compute(wnn_context *c, wnn_graph *g, uint32_t n_in,
                    const void *const *in, uint32_t n_out, void *const *out,
                    wnn_error *err)
{
    return exec_host(c, g, n_in, in, n_out, out, NULL, NULL, NULL, "compute",
                     err);
}

wnn_status
wnn_context_profile(wnn_context *c, wnn_graph *g, uint32_t n_in,
                    const void *const *in, uint32_t n_out, void *const *out,
                    uint64_t *ns, uint32_t *ran, uint64_t *total_ns,
                    wnn_error *err)
{
    return exec_host(c, g, n_in, in, n_out, out, ns, ran, total_ns, "profile",
                     err);
}

/* #api-mlcontext-dispatch */
wnn_status
wnn_context_dispatch(wnn_context *c, wnn_graph *g, uint32_t n_in,
                     const char *const *in_names,
                     wnn_tensor *const *in_tensors, uint32_t n_out,
                     const char *const *out_names,
                     wnn_tensor *const *out_tensors, wnn_error *err)
{
    if (g->ctx != c) {
        return wnn_failk(err, WNN_TYPE_ERROR, "dispatch", NULL, "graph",
                         "the graph belongs to another context");
    }
    /* losing the context destroys its graphs (spec "lose") */
    if (wnn_graph_is_destroyed(g) || wnn_context_is_lost(c)) {
        return wnn_failk(err, WNN_INVALID_STATE, "dispatch", NULL, "graph",
                         wnn_context_is_lost(c) ? "the context is lost"
                                                : "the graph is destroyed");
    }
    uint32_t n = n_in + n_out;
    /* the task and its tensors in one block (task_free knows) */
    wnn_task *task = calloc(1, sizeof(*task) + ((size_t)n + 1) * sizeof(wnn_tensor *));
    wnn_tensor **all = task ? (wnn_tensor **)(task + 1) : NULL;
    wnn_ptrset seen = { 0 };
    wnn_status st = WNN_OK;
    uint32_t pinned = 0;
    if (!task) {
        st = wnn_failk(err, WNN_OUT_OF_MEMORY, "dispatch", NULL, NULL,
                       "out of memory");
        goto fail;
    }
    /* Each tensor is pinned before it is checked: a destroy() on another
     * thread from here on frees its storage only after this dispatch has
     * run (the timeline unpins it), never before. */
    for (; pinned < n; pinned++) {
        uint32_t i = pinned;
        wnn_tensor *t = i < n_in ? in_tensors[i] : out_tensors[i - n_in];
        const char *arg = i < n_in ? "inputs" : "outputs";
        int dup = 0;
        if (n <= 16) { /* a few tensors: a scan, no set to allocate */
            for (uint32_t j = 0; j < i && !dup; j++) {
                dup = (j < n_in ? in_tensors[j] : out_tensors[j - n_in]) == t;
            }
        } else {
            dup = wnn_ptrset_add(&seen, t);
        }
        if (dup != 0) {
            st = dup < 0 ? wnn_failk(err, WNN_OUT_OF_MEMORY, "dispatch", NULL,
                                     NULL, "out of memory")
                         : wnn_failk(err, WNN_TYPE_ERROR, "dispatch", NULL,
                                     arg, "the same tensor is given twice");
            goto fail;
        }
        if (t->ctx != c) {
            st = wnn_failk(err, WNN_TYPE_ERROR, "dispatch", NULL, arg,
                           "a tensor belongs to another context");
            goto fail;
        }
        if (!wnn_tensor_pin(t)) {
            st = wnn_failk(err, WNN_TYPE_ERROR, "dispatch", NULL, arg,
                           "a tensor is destroyed");
            goto fail;
        }
    }
    if (match_tensors("inputs", n_in, in_names, in_tensors, g->inputs,
                      g->n_inputs, &g->input_index, all, err) != WNN_OK ||
        match_tensors("outputs", n_out, out_names, out_tensors, g->outputs,
                      g->n_outputs, &g->output_index, all + n_in,
                      err) != WNN_OK) {
        st = WNN_ERR;
        goto fail;
    }
    wnn_ptrset_free(&seen);
    for (uint32_t i = 0; i < n; i++) {
        wnn_tensor_retain(all[i]);
    }
    task->kind = T_DISPATCH;
    task->graph = g;
    wnn_graph_retain(g);
    task->tensors = all;
    task->n_in = n_in;
    task->n_out = n_out;
    task->pinned = true;
    return enqueue(c, task, "dispatch", err); /* unpinned by task_free */

fail:
    for (uint32_t i = 0; i < pinned; i++) {
        wnn_tensor_unpin(i < n_in ? in_tensors[i] : out_tensors[i - n_in]);
    }
    wnn_ptrset_free(&seen);
    free(task);
    return st;
}
