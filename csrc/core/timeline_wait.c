/* timeline_wait.c -- waking up and waiting on the context's timeline
 * (timeline.c): the spin that both sides do before they sleep, and the
 * waiters that a caller sleeps on until its queued task has run. */
#include <stdlib.h>
#include <sched.h>
#include <time.h>

#include "timeline.h"

/* ---- waking up ----------------------------------------------------------
 * Waking a thread that sleeps on a condition variable costs tens of
 * microseconds on virtual machines, paid twice by every read_tensor (the
 * timeline thread wakes, then the caller).  So both sides spin a little
 * before they sleep: the caller waiting for its task, the timeline thread
 * after each task waiting for the next one.  WEBNN_SPIN_US sets the budget
 * (default 100 microseconds; 0 never spins). */
int64_t
wnn_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
wnn_spin_budget_ns(void)
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
bool
wnn_spin_until(const atomic_uint *flag)
{
    int64_t budget = wnn_spin_budget_ns();
    if (budget == 0) {
        return atomic_load_explicit(flag, memory_order_acquire) != 0;
    }
    int64_t deadline = wnn_now_ns() + budget;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (atomic_load_explicit(flag, memory_order_acquire)) {
                return true;
            }
            cpu_relax();
        }
        if (wnn_now_ns() >= deadline) {
            return false;
        }
        /* Let a thread that waits for this core (a pool helper of the
         * running task) go first: the spin must not slow the work down. */
        sched_yield();
    }
}

waiter *
wnn_waiter_new(void)
{
    waiter *w = calloc(1, sizeof(*w));
    if (w) {
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        atomic_init(&w->refs, 2);
    }
    return w;
}

void
wnn_waiter_release(waiter *w)
{
    if (w && atomic_fetch_sub(&w->refs, 1) == 1) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
    }
}

/* Settle the waiter (w->mu held): its status, the error when it failed. */
void
wnn_waiter_settle(waiter *w, wnn_status st, const wnn_error *err)
{
    w->st = st;
    if (st != WNN_OK && err) {
        w->err = *err;
    }
    atomic_store_explicit(&w->done, 1, memory_order_release);
    pthread_cond_signal(&w->cv);
}

/* Settle the waiter unless it is settled already (a cancelled read). */
void
wnn_waiter_finish(waiter *w, wnn_status st, const wnn_error *err)
{
    pthread_mutex_lock(&w->mu);
    if (!atomic_load_explicit(&w->done, memory_order_relaxed)) {
        wnn_waiter_settle(w, st, err);
    }
    pthread_mutex_unlock(&w->mu);
}

void
wnn_waiter_wait(waiter *w)
{
    if (wnn_spin_until(&w->done)) {
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
