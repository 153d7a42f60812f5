/* pool.c -- the CPU backend's thread pool (instead of OpenMP).
 *
 * One pool per process: cpu_num_threads() - 1 helper threads, created on
 * first use; the thread that calls cpu_parallel() takes part as thread 0.
 * Why not OpenMP: libgomp throttles its threads' spin-waiting as soon as the
 * process holds more libgomp threads than CPUs (PyTorch having run one
 * parallel op, or a second webnn context: each timeline thread has a team of
 * its own), and every parallel region then pays a futex wake per thread.
 * This pool's behaviour does not depend on anyone else's threads.
 *
 * Waiting: a helper spins (pause, now and then sched_yield) for
 * WEBNN_POOL_SPIN_US microseconds (default 1000) after its last region, then
 * sleeps on a futex; a region wakes only the helpers it uses, and only those
 * asleep pay a system call.  The caller waits for its helpers the same way.
 * Why 1 ms and not less: on a virtual machine a helper that slept wakes
 * slowly, slower still when the machine was idle before (the host stops
 * polling a halted virtual CPU after long halts), and a graph run that
 * starts after an idle pause then pays that wake-up at every gap of more
 * than the spin between its regions.  EfficientNet-B0 run once after 0.2 s
 * idle (2-core Zen 3 VM, 20 runs each, medians, separate processes
 * alternating): 17.4-20.4 ms with 50 us, 13.2-13.6 with 1000; back to back,
 * no change (min 8.6-12.7 against 10.1-12.5).  ONNX Runtime's pool spins
 * for about 50 ms after a run.  Once a graph's run is over (cpu_pool_rest,
 * from the backend's run loop) the helpers spin CPU_POOL_REST_NS at most,
 * until the next region: a spin of 1 ms after every run took a core from
 * the caller's own work between runs (tests/ops, many small graphs, 5 %
 * slower: 59.5-61.4 s against 62.1-65.7).
 *
 * Every share tid of a region runs exactly once: on helper tid, or, if that
 * helper has not started it by the time the caller is done with share 0, on
 * the caller (so a helper that lost its core to another process delays
 * nothing).  Static splits stay the same whoever runs them.
 *
 * One region at a time: a cpu_parallel() call that finds the pool busy
 * (another context's timeline thread is in a region) or that is made from
 * inside a region runs its function on the calling thread alone (nt = 1):
 * correct, never a deadlock.  Functions must therefore work for any nt from
 * 1 up to the number asked for; the nt they are given is the team size.
 *
 * fork: the child has none of the helpers; pthread_atfork resets the pool
 * there, and the child's first region creates new ones.  (A fork while
 * another thread of the parent is inside a region leaves that region's state
 * behind in the child, which has no such thread: it is reset as well.)
 * Nothing is freed at exit: the helpers sleep until the process ends. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

#include "cpu.h"

#define MAX_HELPERS 255

static void
futex_wait(_Atomic uint32_t *w, uint32_t v)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void
futex_wake(_Atomic uint32_t *w, int n)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static uint64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t spin_ns = 1000000;
#define CPU_POOL_REST_NS 50000
/* set by cpu_pool_rest, cleared by the next region */
static _Atomic int resting;

/* A futex word and whether someone sleeps on it. */
typedef struct waitword {
    _Atomic uint32_t v;
    _Atomic int sleepers;
} waitword;

/* Wait until w->v != old: spin for spin_ns, then sleep. */
static void
wait_change(waitword *w, uint32_t old)
{
    if (atomic_load_explicit(&w->v, memory_order_acquire) != old) {
        return;
    }
    uint64_t t0 = now_ns();
    for (unsigned i = 1;; i++) {
        cpu_relax();
        if (atomic_load_explicit(&w->v, memory_order_acquire) != old) {
            return;
        }
        if ((i & 15) == 0) {
            uint64_t lim = spin_ns;
            if (atomic_load_explicit(&resting, memory_order_relaxed) &&
                lim > CPU_POOL_REST_NS) {
                lim = CPU_POOL_REST_NS;
            }
            if (now_ns() - t0 > lim) {
                break;
            }
            if ((i & 127) == 0) {
                sched_yield(); /* a few us apart: lets a thread with work in */
            }
        }
    }
    atomic_fetch_add(&w->sleepers, 1);
    while (atomic_load(&w->v) == old) {
        futex_wait(&w->v, old);
    }
    atomic_fetch_sub(&w->sleepers, 1);
    atomic_thread_fence(memory_order_acquire);
}

/* After changing w->v: wake whoever sleeps on it. */
static void
notify(waitword *w)
{
    if (atomic_load(&w->sleepers) > 0) {
        futex_wake(&w->v, INT_MAX);
    }
}

/* Region g of a helper: the caller bumps go to g; whoever moves taken from
 * g - 1 to g first runs the helper's share, the helper (woken) or the caller
 * (done with its own share, the helper not started yet). */
typedef struct helper {
    waitword go;             /* regions assigned to this helper */
    _Atomic uint32_t taken;  /* regions taken (or taken back)   */
    uint32_t assigned;       /* the caller's copy of go         */
    int id;
} __attribute__((aligned(64))) helper;

static struct {
    pthread_mutex_t mu;          /* creation */
    _Atomic int ready;           /* helpers created (or failed: n = 0) */
    int n;                       /* helpers running                    */
    helper *h;
    _Atomic int busy;            /* a region is running                */
    /* the region: written before the helpers' go words are bumped */
    cpu_par_fn fn;
    void *arg;
    int nt;
    _Atomic int barrier_count;
    waitword barrier_gen;
    waitword done __attribute__((aligned(64))); /* helpers finished */
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int in_region;

static void *
helper_main(void *p)
{
    helper *me = p;
    uint32_t seen = 0;
    in_region = 1; /* regions started by a helper run serially */
    for (;;) {
        wait_change(&me->go, seen);
        seen = atomic_load_explicit(&me->go.v, memory_order_acquire);
        uint32_t prev = seen - 1;
        if (!atomic_compare_exchange_strong(&me->taken, &prev, seen)) {
            continue; /* the caller ran this share itself */
        }
        pool.fn(pool.arg, me->id, pool.nt);
        atomic_fetch_add(&pool.done.v, 1); /* seq_cst: ordered before notify()'s load of sleepers */
        notify(&pool.done);
    }
    return NULL;
}

static void
atfork_child(void)
{
    pthread_mutex_init(&pool.mu, NULL);
    atomic_store(&pool.ready, 0);
    atomic_store(&pool.busy, 0);
    pool.n = 0;
    pool.h = NULL; /* the parent's array (a leak of one small block) */
    in_region = 0;
}

static void
create_helpers(void)
{
    pthread_mutex_lock(&pool.mu);
    if (!atomic_load(&pool.ready)) {
        static bool once = false;
        if (!once) {
            once = true;
            pthread_atfork(NULL, NULL, atfork_child);
            spin_ns = cpu_pool_spin_ns();
        }
        int want = cpu_num_threads() - 1;
        want = want > MAX_HELPERS ? MAX_HELPERS : want < 0 ? 0 : want;
        helper *h = want > 0 ? aligned_alloc(64, sizeof(helper) * (size_t)want) : NULL;
        int n = 0;
        if (h) {
            pthread_attr_t at;
            pthread_attr_init(&at);
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            /* kernels keep little on the stack, but BLIS and the
             * recurrent kernels want some */
            pthread_attr_setstacksize(&at, 8u << 20);
            for (; n < want; n++) {
                h[n].id = n + 1;
                atomic_init(&h[n].go.v, 0);
                atomic_init(&h[n].go.sleepers, 0);
                atomic_init(&h[n].taken, 0);
                h[n].assigned = 0;
                pthread_t t;
                if (pthread_create(&t, &at, helper_main, &h[n]) != 0) {
                    break;
                }
            }
            pthread_attr_destroy(&at);
        }
        pool.h = h;
        pool.n = n;
        atomic_store(&pool.ready, 1);
    }
    pthread_mutex_unlock(&pool.mu);
}

int
cpu_parallel(int nthreads, cpu_par_fn fn, void *arg)
{
    if (nthreads <= 1 || in_region) {
        fn(arg, 0, 1);
        return 1;
    }
    if (!atomic_load_explicit(&pool.ready, memory_order_acquire)) {
        create_helpers();
    }
    int expect = 0;
    if (pool.n == 0 ||
        !atomic_compare_exchange_strong(&pool.busy, &expect, 1)) {
        fn(arg, 0, 1);
        return 1;
    }
    int nt = nthreads < pool.n + 1 ? nthreads : pool.n + 1;
    if (atomic_load_explicit(&resting, memory_order_relaxed)) {
        atomic_store_explicit(&resting, 0, memory_order_relaxed);
    }
    pool.fn = fn;
    pool.arg = arg;
    pool.nt = nt;
    atomic_store_explicit(&pool.barrier_count, 0, memory_order_relaxed);
    uint32_t done0 = atomic_load_explicit(&pool.done.v, memory_order_relaxed);
    for (int i = 0; i < nt - 1; i++) {
        /* seq_cst: the bump before the look at sleepers */
        pool.h[i].assigned = atomic_fetch_add(&pool.h[i].go.v, 1) + 1;
        notify(&pool.h[i].go);
    }
    in_region = 1;
    fn(arg, 0, nt);
    /* the shares of helpers that have not started yet (descheduled on a
     * busy machine, or still waking up): run here rather than wait.  A
     * region with barriers never gets here before all its threads have
     * started. */
    int started = nt - 1;
    for (int i = 0; i < nt - 1; i++) {
        uint32_t g = pool.h[i].assigned, prev = g - 1;
        if (atomic_compare_exchange_strong(&pool.h[i].taken, &prev, g)) {
            fn(arg, i + 1, nt);
            started--;
        }
    }
    in_region = 0;
    uint32_t target = done0 + (uint32_t)started, d;
    while ((d = atomic_load_explicit(&pool.done.v, memory_order_acquire)) != target) {
        wait_change(&pool.done, d);
    }
    atomic_store_explicit(&pool.busy, 0, memory_order_release);
    return nt;
}

bool
cpu_in_region(void)
{
    return in_region != 0;
}

void
cpu_pool_rest(void)
{
    if (!atomic_load_explicit(&resting, memory_order_relaxed)) {
        atomic_store_explicit(&resting, 1, memory_order_relaxed);
    }
}

/* All nt threads of the running region meet here. */
void
cpu_barrier(int nt)
{
    if (nt <= 1) {
        return;
    }
    uint32_t g = atomic_load_explicit(&pool.barrier_gen.v, memory_order_acquire);
    if (atomic_fetch_add(&pool.barrier_count, 1) == nt - 1) {
        atomic_store_explicit(&pool.barrier_count, 0, memory_order_relaxed);
        atomic_fetch_add(&pool.barrier_gen.v, 1);
        notify(&pool.barrier_gen);
        return;
    }
    while (atomic_load_explicit(&pool.barrier_gen.v, memory_order_acquire) == g) {
        wait_change(&pool.barrier_gen, g);
    }
}

/* ---- loops ------------------------------------------------------------- */

typedef struct for_job {
    int64_t n, chunk;
    cpu_for_fn fn;
    void *arg;
    _Atomic int64_t next;
} for_job;

/* schedule(static): nt contiguous blocks, the first n % nt one longer */
static void
static_body(void *p, int tid, int nt)
{
    for_job *j = p;
    int64_t q = j->n / nt, r = j->n % nt;
    int64_t b = tid * q + (tid < r ? tid : r);
    int64_t e = b + q + (tid < r ? 1 : 0);
    if (b < e) {
        j->fn(j->arg, b, e, tid);
    }
}

/* chunks taken in order from one shared counter (the passes over memory) */
static void
shared_body(void *p, int tid, int nt)
{
    (void)nt;
    for_job *j = p;
    for (;;) {
        int64_t b = atomic_fetch_add_explicit(&j->next, j->chunk, memory_order_relaxed);
        if (b >= j->n) {
            return;
        }
        int64_t e = j->n - b < j->chunk ? j->n : b + j->chunk;
        j->fn(j->arg, b, e, tid);
    }
}

void
cpu_parallel_for(int64_t n, int nthreads, cpu_for_fn fn, void *arg)
{
    if (n <= 0) {
        return;
    }
    if (nthreads > n) {
        nthreads = (int)n;
    }
    if (nthreads <= 1) {
        fn(arg, 0, n, 0);
        return;
    }
    for_job j = {.n = n, .fn = fn, .arg = arg};
    cpu_parallel(nthreads, static_body, &j);
}

/* schedule(dynamic, chunk) with affinity: thread t owns the t-th of nt
 * contiguous runs of chunks and takes its chunks in order from the front;
 * a thread done with its own run takes the others' chunks from their backs.
 * On a quiet machine every thread works on the same part of the index
 * space from one call to the next -- the rows of an image it wrote in the
 * layer before, still in its own caches -- and a thread held up by another
 * process still does not keep the others waiting.  Whole MobileNetV2, 2
 * threads: 4.49 -> 4.23 ms (median of 8 alternations) against one shared
 * counter. */
typedef struct aff_run {
    _Atomic uint64_t span; /* chunks [low 32 bits, high 32 bits) left */
    char pad[64 - sizeof(uint64_t)];
} aff_run;

typedef struct aff_job {
    int64_t n, chunk;
    cpu_for_fn fn;
    void *arg;
    aff_run *runs;
    int nruns;
} aff_job;

/* the first (front) or last chunk left in r, in *c */
static bool
aff_take(aff_run *r, bool front, int64_t *c)
{
    uint64_t s = atomic_load_explicit(&r->span, memory_order_relaxed);
    for (;;) {
        uint32_t b = (uint32_t)s, e = (uint32_t)(s >> 32);
        if (b >= e) {
            return false;
        }
        uint64_t ns = front ? ((uint64_t)e << 32) | (b + 1)
                            : ((uint64_t)(e - 1) << 32) | b;
        if (atomic_compare_exchange_weak_explicit(&r->span, &s, ns,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *c = front ? b : e - 1;
            return true;
        }
    }
}

static void
affine_body(void *p, int tid, int nt)
{
    (void)nt;
    aff_job *j = p;
    for (int v = 0; v < j->nruns; v++) {
        aff_run *r = &j->runs[(tid + v) % j->nruns];
        int64_t c;
        while (aff_take(r, v == 0, &c)) {
            int64_t b = c * j->chunk;
            int64_t e = j->n - b < j->chunk ? j->n : b + j->chunk;
            j->fn(j->arg, b, e, tid);
        }
    }
}

/* The start of every loop: the threads for n items in blocks of *chunk
 * (made at least 1), at most one a block and MAX_HELPERS + 1, in
 * *nthreads; *chunks: the number of blocks.  Returns false when the loop
 * is done already: no items, or one thread, which ran fn(arg, 0, n, 0)
 * here. */
static bool
loop_start(int64_t n, int64_t *chunk, int *nthreads, int64_t *chunks,
           cpu_for_fn fn, void *arg)
{
    if (*chunk < 1) {
        *chunk = 1;
    }
    *chunks = n > 0 ? (n + *chunk - 1) / *chunk : 0;
    int nt = *nthreads > *chunks ? (int)*chunks : *nthreads;
    *nthreads = nt > MAX_HELPERS + 1 ? MAX_HELPERS + 1 : nt;
    if (n <= 0) {
        return false;
    }
    if (*nthreads <= 1) {
        fn(arg, 0, n, 0);
        return false;
    }
    return true;
}

void
cpu_parallel_for_dynamic(int64_t n, int64_t chunk, int nthreads, cpu_for_fn fn,
                         void *arg)
{
    int64_t chunks;
    if (!loop_start(n, &chunk, &nthreads, &chunks, fn, arg)) {
        return;
    }
    if (chunks > (int64_t)UINT32_MAX) { /* the runs' spans hold 32 bits */
        cpu_parallel_for_shared(n, chunk, nthreads, fn, arg);
        return;
    }
    aff_run runs[MAX_HELPERS + 1] __attribute__((aligned(64)));
    int64_t q = chunks / nthreads, rem = chunks % nthreads;
    for (int t = 0; t < nthreads; t++) {
        uint64_t b = (uint64_t)(t * q + (t < rem ? t : rem));
        uint64_t e = b + (uint64_t)q + (t < rem ? 1 : 0);
        atomic_init(&runs[t].span, e << 32 | b);
    }
    aff_job j = {.n = n, .chunk = chunk, .fn = fn, .arg = arg, .runs = runs,
                 .nruns = nthreads};
    cpu_parallel(nthreads, affine_body, &j);
}

/* A pass over memory (an element-wise operator, a copy): chunks of about
 * 1 MiB taken in order from one shared counter (not the runs of
 * cpu_parallel_for_dynamic), so that the threads stream through
 * neighbouring memory.  The
 * static split into one contiguous half per thread ran relu of 16 Mi
 * float32 at 3.6-3.8 ms against 2.7 ms (two far-apart streams per
 * direction; measured on the 2-core machines).  Any item order gives the
 * same results. */
void
cpu_parallel_stream(int64_t n, uint64_t item_bytes, int nthreads, cpu_for_fn fn,
                    void *arg)
{
    const uint64_t target = (uint64_t)1 << 20;
    int64_t chunk = item_bytes >= target ? 1 : (int64_t)(target / (item_bytes ? item_bytes : 1));
    /* and at least 4 chunks a thread where there are that many items (a
     * pass of a few hundred KiB still uses every thread) */
    int64_t most = nthreads > 1 ? n / (4 * (int64_t)nthreads) : n;
    if (chunk > most) {
        chunk = most > 1 ? most : 1;
    }
    cpu_parallel_for_shared(n, chunk, nthreads, fn, arg);
}

void
cpu_parallel_for_shared(int64_t n, int64_t chunk, int nthreads, cpu_for_fn fn,
                        void *arg)
{
    int64_t chunks;
    if (!loop_start(n, &chunk, &nthreads, &chunks, fn, arg)) {
        return;
    }
    for_job j = {.n = n, .chunk = chunk, .fn = fn, .arg = arg};
    atomic_init(&j.next, 0);
    cpu_parallel(nthreads, shared_body, &j);
}

typedef struct copy_job {
    void *dst;
    const void *src;
    uint64_t bytes, chunk;
    bool nt;
} copy_job;

static void
copy_body(void *p, int64_t b, int64_t e, int tid)
{
    (void)tid;
    copy_job *j = p;
    for (int64_t i = b; i < e; i++) {
        uint64_t off = (uint64_t)i * j->chunk;
        size_t len = j->bytes - off < j->chunk ? j->bytes - off : j->chunk;
        if (j->nt) {
            cpu_copy_nt((char *)j->dst + off, (const char *)j->src + off, len);
        } else {
            memcpy((char *)j->dst + off, (const char *)j->src + off, len);
        }
    }
    if (j->nt) {
        cpu_nt_fence();
    }
}

void
cpu_parallel_copy(void *dst, const void *src, uint64_t bytes)
{
    const uint64_t chunk = (uint64_t)1 << 18;
    if (bytes < 4 * chunk) {
        memcpy(dst, src, bytes);
        return;
    }
    int64_t n = (int64_t)((bytes + chunk - 1) / chunk);
    copy_job j = {dst, src, bytes, chunk, bytes >= cpu_nt_bytes()};
    cpu_parallel_stream(n, 2 * chunk, cpu_num_threads(), copy_body, &j);
}
