/* timeline.h -- private to the context and tensor API (context.c), the
 * timeline (timeline.c), its waking up and waiters (timeline_wait.c) and the
 * reads merged into dispatches (timeline_merge.c): the queued tasks, the
 * waiters that callers sleep on, and the functions that pass them between
 * these files, which call each other downwards only (context.c ->
 * timeline.c -> timeline_merge.c -> timeline_wait.c). */
#ifndef WNN_TIMELINE_H
#define WNN_TIMELINE_H
#include <stdint.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

#include "../ops/ops_internal.h"
#include "internal.h"

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

/* ---- timeline_wait.c: waking up and waiting ----------------------------- */
/* CLOCK_MONOTONIC in nanoseconds */
int64_t wnn_now_ns(void);
/* how long a waiting thread spins before it sleeps (WEBNN_SPIN_US; 0: never) */
int64_t wnn_spin_budget_ns(void);
/* reads the timeline's switches (WEBNN_SPIN_US, WEBNN_MERGE_READS) on the
 * calling thread, before a context's timeline thread starts: that thread
 * never calls getenv (which a setenv on another thread may race) */
void wnn_timeline_prime(void);
/* Spin until *flag is nonzero or the budget is spent; true if it is set. */
bool wnn_spin_until(const atomic_uint *flag);
/* a waiter with two references (the caller's and the task's); NULL: OOM */
waiter *wnn_waiter_new(void);
void wnn_waiter_release(waiter *w);
/* Settle the waiter (w->mu held): its status, the error when it failed. */
void wnn_waiter_settle(waiter *w, wnn_status st, const wnn_error *err);
/* Settle the waiter unless it is settled already (a cancelled read). */
void wnn_waiter_finish(waiter *w, wnn_status st, const wnn_error *err);
/* until the waiter is settled (spinning first) */
void wnn_waiter_wait(waiter *w);

/* ---- timeline_merge.c: reads merged into dispatches ---------------------- */
/* Dispatch t (just popped) takes the read that comes next off the queue if
 * it reads t's output into a buffer that no input shares. */
void wnn_merge_read(wnn_context *c, wnn_task *t);
/* The owed dispatch o run again, its output into dst. */
wnn_status wnn_owed_run(wnn_context *c, const wnn_task *o, void *dst,
                        wnn_error *err);
/* Before task t runs (c->mu held, released here): the owed record taken
 * off the context if t needs the tensor's content, changes the inputs or
 * drops it (NULL: it stays); *rerun: the tensor (a reference) that the
 * record must first be run again into, or NULL. */
wnn_task *wnn_owed_take(wnn_context *c, const wnn_task *t, wnn_tensor **rerun);

/* ---- timeline.c ---------------------------------------------------------- */
/* the task, its references, its merged read and its waiter's reference */
void wnn_task_free(wnn_task *t);
/* Queue `t` (or run it on the caller's thread when it is small and the
 * timeline idle); fails (and frees t) if the context is lost. */
wnn_status wnn_enqueue(wnn_context *c, wnn_task *t, const char *op,
                       wnn_error *err);
/* wnn_enqueue, then wait until t has run: its status and error */
wnn_status wnn_enqueue_wait(wnn_context *c, wnn_task *t, const char *op,
                            wnn_error *err);
/* the timeline thread's loop (arg: the context) */
void *wnn_timeline_main(void *arg);
/* forks of this process so far (the fork watch installed on first use) */
unsigned wnn_fork_generation(void);

#endif
