/* timeline.c -- the context's timeline: a worker thread that runs tensor
 * creation, writes, reads and dispatches in the order they were queued
 * (small work may run on the caller's thread, in the same order), the
 * tasks, and what the tasks hold: the references of tensors and contexts,
 * whose last release frees them, and the thread's stop when a context goes
 * or is lost.  The context and tensor API that validates and queues the
 * tasks is context.c; waking up and waiters timeline_wait.c; reads merged
 * into dispatches timeline_merge.c (the files below this one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeline.h"

void
wnn_task_free(wnn_task *t)
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
        wnn_task_free(t->read);
    }
    wnn_waiter_release(t->w);
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
    wnn_task_free(t->read); /* its reference on x: t still holds one */
    t->read = NULL;
    wnn_tensor_unpin(x);
    /* last: if this is x's last reference, its release drops (frees) t */
    wnn_tensor_release(x);
    return true;
}

/* Before task t runs (c->mu held, released here): settle the owed record
 * if t needs the tensor's content or changes the inputs, or drop it. */
static void
owed_settle(wnn_context *c, const wnn_task *t)
{
    wnn_tensor *x;
    wnn_task *o = wnn_owed_take(c, t, &x);
    if (x) {
        wnn_error err;
        wnn_error_clear(&err);
        wnn_status st = wnn_owed_run(c, o, x->storage, &err);
        tensor_mark(x, st == WNN_OK ? NULL : &err);
        wnn_tensor_release(x);
    }
    if (o) {
        wnn_task_free(o);
    }
}

static wnn_status
run_create(wnn_backend *be, wnn_task *t, wnn_error *err)
{
    wnn_status st = be->iface->tensor_alloc(be, t->tensor->bytes,
                                            &t->tensor->storage, err);
    if (st == WNN_OK && t->data) {
        st = be->iface->tensor_write(be, t->tensor->storage, t->data,
                                     t->bytes, err);
    } else if (st == WNN_OK && t->device_src) {
        st = be->iface->tensor_write_device(be, t->tensor->storage,
                                            t->device_src, t->bytes, err);
    }
    return st;
}

static wnn_status
run_export(wnn_backend *be, wnn_task *t, wnn_error *err)
{
    /* the tensor is pinned: its storage outlives a destroy() */
    if (!t->tensor->storage) {
        return wnn_failk(err, WNN_INVALID_STATE, "__dlpack__", NULL,
                         "tensor", "the tensor was destroyed");
    }
    if (atomic_load(&t->tensor->failed)) {
        return wnn_failk(err, WNN_OPERATION_ERROR, "__dlpack__", NULL,
                         "tensor", "the work that wrote it failed: %s",
                         t->tensor->fail_msg);
    }
    be->iface->synchronize(be);
    return be->iface->tensor_device_ptr(be, t->tensor->storage, t->export_ptr,
                                        t->export_id, err);
}

/* A read of a tensor that is neither destroyed nor failed into t->data. */
static wnn_status
run_read_data(wnn_context *c, wnn_task *t, wnn_error *err)
{
    wnn_backend *be = c->backend;
    wnn_status st = WNN_OK;
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
        st = wnn_owed_run(c, o, t->tensor->storage, err);
        tensor_mark(t->tensor, st == WNN_OK ? NULL : err);
        wnn_task_free(o);
        o = NULL;
    }
    if (o) {
        st = wnn_owed_run(c, o, t->data, err);
    } else if (st == WNN_OK) {
        be->iface->synchronize(be);
        st = be->iface->tensor_read(be, t->tensor->storage, t->data,
                                    t->bytes, err);
    }
    return st;
}

/* A read: settles its waiter itself (under the waiter's mutex, so that the
 * tensor's destroy() cannot reject it meanwhile). */
static void
run_read(wnn_context *c, wnn_task *t)
{
    wnn_error err;
    wnn_status st;
    wnn_error_clear(&err);
    pthread_mutex_lock(&t->w->mu);
    if (atomic_load_explicit(&t->w->done, memory_order_relaxed)) {
        /* rejected by the tensor's destroy() */
        pthread_mutex_unlock(&t->w->mu);
        return;
    }
    if (atomic_load(&t->tensor->destroyed) || !t->tensor->storage) {
        st = wnn_failk(&err, WNN_INVALID_STATE, "readTensor", NULL,
                       "tensor", "the tensor was destroyed");
    } else if (atomic_load(&t->tensor->failed)) {
        st = wnn_failk(&err, WNN_OPERATION_ERROR, "readTensor", NULL,
                       "tensor", "the work that wrote it failed: %s",
                       t->tensor->fail_msg);
    } else {
        st = run_read_data(c, t, &err);
    }
    wnn_waiter_settle(t->w, st, &err);
    pthread_mutex_unlock(&t->w->mu);
}

/* Settle the read merged into dispatch t (its waiter rw held), given the
 * dispatch's status st and where its output went; true when t was kept as
 * the owed record (owed_keep). */
static bool
settle_merged_read(wnn_context *c, wnn_task *t, waiter *rw, void *out0,
                   wnn_status st)
{
    wnn_tensor *x = t->tensors[t->n_in];
    wnn_status rst = WNN_OK;
    wnn_error rerr;
    if (out0 != t->read->data) {
        rst = wnn_failk(&rerr, WNN_INVALID_STATE, "readTensor",
                        NULL, "tensor", "the tensor was destroyed");
    } else if (st != WNN_OK) {
        rst = wnn_failk(&rerr, WNN_OPERATION_ERROR, "readTensor",
                        NULL, "tensor",
                        "the work that wrote it failed: %s",
                        x->fail_msg);
    }
    wnn_waiter_settle(rw, rst, &rerr);
    pthread_mutex_unlock(&rw->mu);
    return rst == WNN_OK && owed_keep(c, t);
}

/* A dispatch (and the read merged into it, if any): true when t was kept as
 * the owed record, else its status in *st. */
static bool
run_dispatch(wnn_context *c, wnn_task *t, wnn_status *st, wnn_error *err)
{
    wnn_backend *be = c->backend;
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
    *st = be->iface->execute(be, t->graph, t->graph->compiled, in, out, err);
    for (uint32_t i = 0; i < t->n_out; i++) {
        tensor_mark(t->tensors[t->n_in + i], *st == WNN_OK ? NULL : err);
    }
    return rw && settle_merged_read(c, t, rw, out[0], *st);
}

static wnn_status
run_exec(wnn_backend *be, wnn_task *t, wnn_error *err)
{
    if (!t->prof_ns) {
        return be->iface->execute(be, t->graph, t->graph->compiled, t->ptrs,
                                  t->ptrs + t->n_in, err);
    }
    int64_t t0 = wnn_now_ns();
    wnn_status st = be->iface->execute_profiled(be, t->graph,
                                                t->graph->compiled, t->ptrs,
                                                t->ptrs + t->n_in, t->prof_ns,
                                                t->prof_ran, err);
    *t->prof_total += (uint64_t)(wnn_now_ns() - t0);
    return st;
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
        st = run_create(be, t, &err);
        break;
    case T_WRITE_DEV:
        if (t->tensor->storage) {
            st = be->iface->tensor_write_device(be, t->tensor->storage,
                                                t->device_src, t->bytes, &err);
            tensor_mark(t->tensor, st == WNN_OK ? NULL : &err);
        }
        break;
    case T_EXPORT:
        st = run_export(be, t, &err);
        break;
    case T_WRITE:
        if (t->tensor->storage) {
            st = be->iface->tensor_write(be, t->tensor->storage, t->data,
                                         t->bytes, &err);
            tensor_mark(t->tensor, st == WNN_OK ? NULL : &err);
        }
        break;
    case T_READ:
        run_read(c, t);
        return false;
    case T_DISPATCH:
        if (run_dispatch(c, t, &st, &err)) {
            return true;
        }
        break;
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
        st = run_exec(be, t, &err);
        break;
    }
    if (t->w) {
        wnn_waiter_finish(t->w, st, &err);
    }
    return false;
}

void *
wnn_timeline_main(void *arg)
{
    wnn_context *c = arg;
    for (;;) {
        wnn_spin_until(&c->queued);
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
                wnn_waiter_finish(t->w, WNN_ERR, &err);
            }
            if (t->kind == T_FREE && t->tensor->storage &&
                atomic_load(&t->tensor->pins) == 0) {
                c->backend->iface->tensor_free(c->backend, t->tensor->storage);
                t->tensor->storage = NULL;
            }
        } else {
            if (t->kind == T_DISPATCH) {
                wnn_merge_read(c, t);
            }
            if (run_task(c, t)) {
                atomic_store_explicit(&c->busy, false, memory_order_release);
                continue; /* kept as the owed record */
            }
        }
        wnn_task_free(t);
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

unsigned
wnn_fork_generation(void)
{
    pthread_once(&fork_once, fork_watch);
    return atomic_load(&fork_count);
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
wnn_status
wnn_enqueue(wnn_context *c, wnn_task *t, const char *op, wnn_error *err)
{
    if (wnn_context_forked(c)) {
        wnn_task_free(t);
        return wnn_failk(err, WNN_INVALID_STATE, op, NULL, NULL,
                         "the context was created in another process (this "
                         "one was forked from it): create a new context here");
    }
    pthread_mutex_lock(&c->mu);
    if (c->lost) {
        pthread_mutex_unlock(&c->mu);
        wnn_task_free(t);
        return wnn_failk(err, WNN_INVALID_STATE, op, NULL, NULL,
                         "the context is lost: %s", c->lost_message);
    }
    if (!c->head && !atomic_load_explicit(&c->busy, memory_order_acquire) &&
        inline_ok(c, t)) {
        atomic_store_explicit(&c->busy, true, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->inline_runs, 1, memory_order_relaxed);
        owed_settle(c, t); /* unlocks c->mu */
        if (!run_task(c, t)) { /* (only a merged dispatch is kept) */
            wnn_task_free(t);
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

wnn_status
wnn_enqueue_wait(wnn_context *c, wnn_task *t, const char *op, wnn_error *err)
{
    waiter *w = wnn_waiter_new();
    if (!w) {
        wnn_task_free(t);
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
    if (wnn_enqueue(c, t, op, err) != WNN_OK) {
        st = WNN_ERR; /* t and its reference on w are gone */
    } else {
        wnn_waiter_wait(w);
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
    wnn_waiter_release(w);
    return st;
}

/* ---- what the tasks hold: tensors and contexts --------------------------- */
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
            wnn_task_free(o);
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
        wnn_enqueue(t->ctx, task, "destroy", &err); /* lost: freed with refs */
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
        wnn_waiter_finish(w, WNN_ERR, &err);
    }
    pthread_mutex_unlock(&t->pmu);
    enqueue_free(t);
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
