/* context.c -- MLContext and MLTensor: the API that validates on the
 * calling thread ("throw a TypeError") and queues the work on the context's
 * timeline (timeline.c).  When the context is lost (destroy()), queued work
 * fails with InvalidStateError and the timeline thread stops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops_internal.h"
#include "timeline.h"
#include "webnn_introspect.h"

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
    wnn_timeline_prime();
    if (pthread_create(&c->worker, NULL, wnn_timeline_main, c) != 0) {
        c->backend->iface->destroy(c->backend);
        free(c);
        return wnn_failk(err, WNN_UNKNOWN_ERROR, "createContext", NULL, NULL,
                         "cannot start the timeline thread");
    }
    c->worker_started = true;
    c->fork_gen = wnn_fork_generation();
    *out = c;
    return WNN_OK;
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
        wnn_enqueue_wait(c, t, "flush", &err);
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
    if (wnn_enqueue_wait(c, task, op, err) != WNN_OK) {
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
    return wnn_enqueue(c, task, "writeTensor", err);
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
    return wnn_enqueue_wait(c, task, "writeTensor", err);
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
    if (wnn_enqueue_wait(c, task, "__dlpack__", err) != WNN_OK) {
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
    return wnn_enqueue_wait(c, task, "readTensor", err);
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
    return wnn_enqueue_wait(c, task, op, err);
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
    /* the task and its tensors in one block (wnn_task_free knows) */
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
    return wnn_enqueue(c, task, "dispatch", err); /* unpinned by wnn_task_free */

fail:
    for (uint32_t i = 0; i < pinned; i++) {
        wnn_tensor_unpin(i < n_in ? in_tensors[i] : out_tensors[i - n_in]);
    }
    wnn_ptrset_free(&seen);
    free(task);
    return st;
}
