/* tensors.c -- contexts, tensors, dispatch / compute / profile, result
 * buffers. */
#include "binding.h"

/* ---- contexts ----------------------------------------------------------- */
static int
conv_device(PyObject *o, wnn_device *d)
{
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (s && strcmp(s, "cpu") == 0) {
        *d = WNN_DEVICE_CPU;
        return 0;
    }
    if (s && strcmp(s, "gpu") == 0) {
        *d = WNN_DEVICE_GPU;
        return 0;
    }
    type_error("createContext: argument 'deviceType': expected 'cpu' or 'gpu'");
    return -1;
}

PyObject *
m_device_available(PyObject *m, PyObject *arg)
{
    wnn_device d;
    if (conv_device(arg, &d) != 0) {
        return NULL;
    }
    bool ok;
    Py_BEGIN_ALLOW_THREADS
    ok = wnn_device_available(d);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(ok);
}

PyObject *
m_context_create(PyObject *m, PyObject *arg)
{
    wnn_device d;
    wnn_context *c = NULL;
    wnn_error err;
    wnn_status st;
    if (conv_device(arg, &d) != 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    st = wnn_context_create(d, &c, &err);
    Py_END_ALLOW_THREADS
    if (st != WNN_OK) {
        return raise_error(m, &err);
    }
    PyObject *cap = PyCapsule_New(c, "webnn.context", ctx_del);
    if (!cap) {
        wnn_context_release(c);
    }
    return cap;
}

PyObject *
m_context_destroy(PyObject *m, PyObject *args)
{
    PyObject *cap;
    const char *msg = NULL;
    if (!PyArg_ParseTuple(args, "O|z:context_destroy", &cap, &msg)) {
        return NULL;
    }
    wnn_context *c = cap_get(cap, "webnn.context", "MLContext");
    if (!c) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    wnn_context_destroy(c, msg);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

PyObject *
context_info_impl(PyObject *m, wnn_context *c)
{
    uint64_t merged, reruns, inlined;
    wnn_context_timeline_counts(c, &merged, &reruns, &inlined);
    return Py_BuildValue(
        "{s:O,s:s,s:K,s:O,s:s,s:i,s:K,s:K,s:K}", "accelerated",
        wnn_context_accelerated(c) ? Py_True : Py_False, "device_type",
        wnn_context_device(c) == WNN_DEVICE_GPU ? "gpu" : "cpu",
        "max_tensor_byte_length",
        (unsigned long long)wnn_context_max_tensor_bytes(c), "lost",
        wnn_context_is_lost(c) ? Py_True : Py_False, "lost_message",
        wnn_context_lost_message(c), "device_id", wnn_context_device_id(c),
        "merged_reads", (unsigned long long)merged, "owed_reruns",
        (unsigned long long)reruns, "inline_runs", (unsigned long long)inlined);
}

/* {op id: limits list} for the operators the context supports */
PyObject *
context_op_limits_impl(PyObject *m, wnn_context *c)
{
    PyObject *d = PyDict_New();
    for (int op = 0; d && op < WNN_OP_COUNT; op++) {
        wnn_op_limits l;
        if (!wnn_context_op_limits(c, (wnn_op)op, &l)) {
            continue;
        }
        PyObject *k = PyLong_FromLong(op), *v = limits_obj(&l);
        if (!k || !v || PyDict_SetItem(d, k, v) != 0) {
            Py_XDECREF(k);
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(k);
        Py_DECREF(v);
    }
    return d;
}

/* ---- tensors ------------------------------------------------------------ */
PyObject *
m_tensor_create(PyObject *m, PyObject *args)
{
    PyObject *cap, *desc, *data;
    int readable, writable;
    if (!PyArg_ParseTuple(args, "OOppO:create_tensor", &cap, &desc, &readable,
                          &writable, &data)) {
        return NULL;
    }
    wnn_context *c = cap_get(cap, "webnn.context", "MLContext");
    const char *op = data == Py_None ? "createTensor" : "createConstantTensor";
    wnn_desc d;
    if (!c || conv_desc(desc, op, &d) != 0) {
        return NULL;
    }
    Py_buffer view;
    void *ptr = NULL, *copy = NULL;
    wnn_error err;
    if (data != Py_None) {
        if (wnn_desc_check(c, &d, op, "descriptor", &err) != WNN_OK) {
            return raise_error(m, &err);
        }
        if (conv_buffer(data, &d, op, "inputData", false, &view, &ptr,
                        &copy) != 0) {
            return NULL;
        }
    }
    wnn_tensor *t = NULL;
    wnn_status st;
    Py_BEGIN_ALLOW_THREADS
    st = wnn_tensor_create(c, &d, readable, writable, ptr, &t, &err);
    Py_END_ALLOW_THREADS
    if (data != Py_None) {
        PyMem_Free(copy);
        PyBuffer_Release(&view);
    }
    if (st != WNN_OK) {
        return raise_error(m, &err);
    }
    return tensor_capsule(t);
}

PyObject *
tensor_info_impl(PyObject *m, wnn_tensor *t)
{
    const wnn_desc *d = wnn_tensor_desc(t);
    return Py_BuildValue("(sNOOOO)", wnn_dtype_name(d->dtype), shape_tuple(d),
                         wnn_tensor_readable(t) ? Py_True : Py_False,
                         wnn_tensor_writable(t) ? Py_True : Py_False,
                         wnn_tensor_is_constant(t) ? Py_True : Py_False,
                         wnn_tensor_is_destroyed(t) ? Py_True : Py_False);
}

PyObject *
tensor_destroy_impl(PyObject *m, wnn_tensor *t)
{
    wnn_tensor_destroy(t);
    Py_RETURN_NONE;
}

PyObject *
tensor_write_impl(PyObject *m, wnn_context *c, wnn_tensor *t,
    PyObject *rest)
{
    PyObject *data;
    if (!PyArg_ParseTuple(rest, "O:write_tensor", &data)) {
        return NULL;
    }
    wnn_error err;
    /* the spec's TypeErrors about the tensor come before the buffer's */
    if (wnn_tensor_context(t) != c || wnn_tensor_is_destroyed(t) ||
        !wnn_tensor_writable(t)) {
        wnn_context_write(c, t, NULL, 0, &err);
        return raise_error(m, &err);
    }
    Py_buffer view;
    void *ptr, *copy;
    if (conv_buffer(data, wnn_tensor_desc(t), "writeTensor", "inputData",
                    false, &view, &ptr, &copy) != 0) {
        return NULL;
    }
    wnn_status st;
    Py_BEGIN_ALLOW_THREADS
    st = wnn_context_write(c, t, ptr, (size_t)view.len, &err);
    Py_END_ALLOW_THREADS
    PyMem_Free(copy);
    PyBuffer_Release(&view);
    if (st != WNN_OK) {
        return raise_error(m, &err);
    }
    Py_RETURN_NONE;
}

PyObject *
tensor_read_impl(PyObject *m, wnn_context *c, wnn_tensor *t,
    PyObject *rest)
{
    PyObject *out;
    if (!PyArg_ParseTuple(rest, "O:read_tensor", &out)) {
        return NULL;
    }
    wnn_error err;
    if (wnn_tensor_context(t) != c || wnn_tensor_is_destroyed(t) ||
        !wnn_tensor_readable(t)) {
        char dummy;
        wnn_context_read(c, t, &dummy, 0, &err);
        return raise_error(m, &err);
    }
    Py_buffer view;
    void *ptr, *copy;
    if (conv_buffer(out, wnn_tensor_desc(t), "readTensor", "outputData", true,
                    &view, &ptr, &copy) != 0) {
        return NULL;
    }
    wnn_status st;
    Py_BEGIN_ALLOW_THREADS
    st = wnn_context_read(c, t, ptr, (size_t)view.len, &err);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (st != WNN_OK) {
        return raise_error(m, &err);
    }
    Py_RETURN_NONE;
}


/* dispatch()'s record<USVString, MLTensor>, d a private copy: names and
 * tensors.  The values are the tensors' handles (capsules: the Python
 * layer's _tensor_handles converted them), or, from dispatch_tensors, the
 * MLTensor objects, whose handles are read here and stored in d in their
 * place (d holds them while the GIL is released).  From dispatch_tensors,
 * returns 1 when an entry needs the Python layer's conversion (a name that
 * is not a plain ASCII str or holds NUL, a value that is not an MLTensor;
 * it reports every error with the spec's wording), before anything is
 * done. */
static int
conv_named_tensors(mod_state *st, PyObject *d, bool objects,
                   const char ***names, wnn_tensor ***tensors, uint32_t *n)
{
    if (!PyDict_Check(d)) {
        if (objects) {
            return 1;
        }
        type_error("dispatch: expected a dict of name -> MLTensor");
        return -1;
    }
    Py_ssize_t k = PyDict_Size(d), pos = 0, i = 0;
    *names = PyMem_Calloc((size_t)k + 1, sizeof(char *));
    *tensors = PyMem_Calloc((size_t)k + 1, sizeof(wnn_tensor *));
    *n = (uint32_t)k;
    if (!*names || !*tensors) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *key, *val;
    while (PyDict_Next(d, &pos, &key, &val)) {
        const char *name;
        if (!objects) {
            if (!PyUnicode_Check(key)) {
                type_error("dispatch: names must be strings");
                return -1;
            }
            if (!(name = PyUnicode_AsUTF8(key))) {
                return -1;
            }
        } else {
            if (!PyUnicode_CheckExact(key) || !PyUnicode_IS_ASCII(key) ||
                !st->tensor_type ||
                !PyObject_TypeCheck(val, (PyTypeObject *)st->tensor_type)) {
                return 1;
            }
            name = PyUnicode_AsUTF8(key);
            if (!name || strlen(name) != (size_t)PyUnicode_GET_LENGTH(key)) {
                PyErr_Clear();
                return 1; /* NUL inside */
            }
            PyObject *h = PyObject_GetAttr(val, st->str_h);
            if (!h) {
                return -1;
            }
            /* replacing a value keeps the keys: allowed while iterating */
            int r = PyDict_SetItem(d, key, h);
            Py_DECREF(h);
            if (r < 0) {
                return -1;
            }
            val = h; /* d holds it */
        }
        (*names)[i] = name;
        (*tensors)[i] = cap_get(val, "webnn.tensor", "MLTensor");
        if (!(*tensors)[i]) {
            return -1;
        }
        i++;
    }
    return 0;
}

/* dispatch(ctx, graph, inputs, outputs): dicts of name -> handle;
 * dispatch_tensors: of name -> MLTensor, NotImplemented when the Python
 * layer must convert them first. */
static PyObject *
dispatch_impl(PyObject *m, PyObject *args, bool objects)
{
    PyObject *ccap, *gcap, *ins, *outs;
    if (!PyArg_ParseTuple(args, "OOOO:dispatch", &ccap, &gcap, &ins, &outs)) {
        return NULL;
    }
    wnn_context *c = cap_get(ccap, "webnn.context", "MLContext");
    wnn_graph *g = c ? cap_get(gcap, "webnn.graph", "MLGraph") : NULL;
    if (!g) {
        return NULL;
    }
    /* copies: the names and handles must live while the GIL is released */
    ins = PyDict_Check(ins) ? PyDict_Copy(ins) : (Py_INCREF(ins), ins);
    outs = !ins ? NULL : PyDict_Check(outs) ? PyDict_Copy(outs)
                                            : (Py_INCREF(outs), outs);
    if (!ins || !outs) {
        Py_XDECREF(ins);
        return NULL;
    }
    mod_state *ms = state_of(m);
    const char **in_names = NULL, **out_names = NULL;
    wnn_tensor **in_t = NULL, **out_t = NULL;
    uint32_t n_in = 0, n_out = 0;
    PyObject *result = NULL;
    int ri = conv_named_tensors(ms, ins, objects, &in_names, &in_t, &n_in);
    int ro = ri != 0 ? ri
                     : conv_named_tensors(ms, outs, objects, &out_names,
                                          &out_t, &n_out);
    if (ro == 1) {
        /* the Python layer converts (and reports what is wrong) */
        result = Py_NotImplemented;
        Py_INCREF(result);
    } else if (ro == 0) {
        wnn_error err;
        wnn_status st;
        Py_BEGIN_ALLOW_THREADS
        st = wnn_context_dispatch(c, g, n_in, in_names, in_t, n_out, out_names,
                                  out_t, &err);
        Py_END_ALLOW_THREADS
        if (st != WNN_OK) {
            raise_error(m, &err);
        } else {
            result = Py_None;
            Py_INCREF(result);
        }
    }
    PyMem_Free(in_names);
    PyMem_Free(out_names);
    PyMem_Free(in_t);
    PyMem_Free(out_t);
    Py_DECREF(ins);
    Py_DECREF(outs);
    return result;
}

PyObject *
m_dispatch(PyObject *m, PyObject *args)
{
    return dispatch_impl(m, args, false);
}

PyObject *
m_dispatch_tensors(PyObject *m, PyObject *args)
{
    return dispatch_impl(m, args, true);
}

/* compute(ctx, graph, inputs, outputs): the graph on the caller's arrays,
 * in graph order (inputs: buffers; outputs: writable C-contiguous arrays),
 * with the GIL released.  False when the backend's tensors are not host
 * memory (the caller then goes through tensors). */
typedef struct prof_out {  /* profile(): where the step times go */
    uint64_t *ns, total;
    uint32_t *ran;
} prof_out;

static PyObject *compute_run(PyObject *m, wnn_context *c, wnn_graph *g,
                             PyObject *ins, PyObject *outs, prof_out *prof);

/* (ctx, graph, inputs list, outputs list) of compute() and profile();
 * false with an exception set */
static bool
run_args(PyObject *args, const char *fmt, wnn_context **c, wnn_graph **g,
         PyObject **ins, PyObject **outs)
{
    PyObject *ccap, *gcap;
    if (!PyArg_ParseTuple(args, fmt, &ccap, &gcap, &PyList_Type, ins,
                          &PyList_Type, outs)) {
        return false;
    }
    *c = cap_get(ccap, "webnn.context", "MLContext");
    *g = *c ? cap_get(gcap, "webnn.graph", "MLGraph") : NULL;
    return *g != NULL;
}

PyObject *
m_compute(PyObject *m, PyObject *args)
{
    wnn_context *c;
    wnn_graph *g;
    PyObject *ins, *outs;
    if (!run_args(args, "OOO!O!:compute", &c, &g, &ins, &outs)) {
        return NULL;
    }
    if (!wnn_context_host_storage(c)) {
        Py_RETURN_FALSE;
    }
    return compute_run(m, c, g, ins, outs, NULL);
}

/* profile(ctx, graph, inputs, outputs): compute() once, timing the steps:
 * (ns per plan step, runs per plan step, the whole execution's ns). */
PyObject *
m_profile(PyObject *m, PyObject *args)
{
    wnn_context *c;
    wnn_graph *g;
    PyObject *ins, *outs;
    if (!run_args(args, "OOO!O!:profile", &c, &g, &ins, &outs)) {
        return NULL;
    }
    uint32_t n = wnn_graph_plan_length(g);
    prof_out p = { PyMem_Calloc((size_t)n + 1, sizeof(uint64_t)), 0,
                   PyMem_Calloc((size_t)n + 1, sizeof(uint32_t)) };
    PyObject *ns = NULL, *ran = NULL, *r = NULL;
    if (!p.ns || !p.ran) {
        PyErr_NoMemory();
    } else if ((r = compute_run(m, c, g, ins, outs, &p)) != NULL) {
        Py_DECREF(r);
        r = NULL;
        ns = PyTuple_New(n);
        ran = ns ? PyTuple_New(n) : NULL;
        for (uint32_t i = 0; ran && i < n; i++) {
            PyObject *a = PyLong_FromUnsignedLongLong(p.ns[i]);
            PyObject *b = a ? PyLong_FromUnsignedLong(p.ran[i]) : NULL;
            if (!b) {
                Py_XDECREF(a);
                Py_CLEAR(ran);
                break;
            }
            PyTuple_SET_ITEM(ns, i, a);
            PyTuple_SET_ITEM(ran, i, b);
        }
        if (ran) {
            r = Py_BuildValue("(OOK)", ns, ran, (unsigned long long)p.total);
        }
    }
    Py_XDECREF(ns);
    Py_XDECREF(ran);
    PyMem_Free(p.ns);
    PyMem_Free(p.ran);
    return r;
}

/* The graph on lists of input buffers and output arrays (m_compute,
 * m_compute_dict, m_profile when prof is given). */
static PyObject *
compute_run(PyObject *m, wnn_context *c, wnn_graph *g, PyObject *ins,
            PyObject *outs, prof_out *prof)
{
    uint32_t n_in = wnn_graph_num_inputs(g), n_out = wnn_graph_num_outputs(g);
    if (PyList_GET_SIZE(ins) != (Py_ssize_t)n_in ||
        PyList_GET_SIZE(outs) != (Py_ssize_t)n_out) {
        return type_error("compute: %zd inputs and %zd outputs given, the "
                          "graph has %u and %u", PyList_GET_SIZE(ins),
                          PyList_GET_SIZE(outs), n_in, n_out);
    }
    /* private copies of the lists: getting a buffer may run Python code */
    ins = PyList_GetSlice(ins, 0, n_in);
    outs = ins ? PyList_GetSlice(outs, 0, n_out) : NULL;
    uint32_t n = n_in + n_out;
    Py_buffer *views = PyMem_Calloc((size_t)n + 1, sizeof(Py_buffer));
    void **ptrs = PyMem_Calloc((size_t)n + 1, sizeof(void *));
    void **copies = PyMem_Calloc((size_t)n + 1, sizeof(void *));
    uint32_t got = 0;
    PyObject *result = NULL;
    if (!ins || !outs || !views || !ptrs || !copies) {
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        goto done;
    }
    for (; got < n; got++) {
        bool is_out = got >= n_in;
        uint32_t i = is_out ? got - n_in : got;
        const wnn_desc *d = is_out ? wnn_graph_output_desc(g, i)
                                   : wnn_graph_input_desc(g, i);
        const char *name = is_out ? wnn_graph_output_name(g, i)
                                  : wnn_graph_input_name(g, i);
        PyObject *obj = PyList_GET_ITEM(is_out ? outs : ins, i);
        if (conv_buffer(obj, d, "compute", name, is_out, &views[got],
                        &ptrs[got], &copies[got]) != 0) {
            goto done;
        }
        size_t align = wnn_dtype_size(d->dtype);
        if ((uintptr_t)ptrs[got] % align) {
            if (is_out) {
                PyBuffer_Release(&views[got]);
                type_error("compute: output '%s': the array is not aligned",
                           name);
                goto done;
            }
            /* an unaligned view (np.frombuffer at an odd offset): a copy */
            void *cp = PyMem_Malloc(views[got].len ? views[got].len : 1);
            if (!cp) {
                PyBuffer_Release(&views[got]);
                PyErr_NoMemory();
                goto done;
            }
            memcpy(cp, ptrs[got], (size_t)views[got].len);
            PyMem_Free(copies[got]);
            copies[got] = ptrs[got] = cp;
        }
    }
    {
        wnn_error err;
        wnn_status st;
        Py_BEGIN_ALLOW_THREADS
        st = prof ? wnn_context_profile(c, g, n_in, (const void *const *)ptrs,
                                        n_out, ptrs + n_in, prof->ns,
                                        prof->ran, &prof->total, &err)
                  : wnn_context_compute(c, g, n_in, (const void *const *)ptrs,
                                        n_out, ptrs + n_in, &err);
        Py_END_ALLOW_THREADS
        if (st != WNN_OK) {
            raise_error(m, &err);
        } else {
            result = Py_True;
            Py_INCREF(result);
        }
    }
done:
    for (uint32_t i = 0; i < got; i++) {
        PyBuffer_Release(&views[i]);
        PyMem_Free(copies[i]);
    }
    PyMem_Free(views);
    PyMem_Free(ptrs);
    PyMem_Free(copies);
    Py_XDECREF(ins);
    Py_XDECREF(outs);
    return result;
}

/* ---- result buffers ------------------------------------------------------
 * A large array that compute() or read_tensor() returns is made on an
 * OutBuffer (np.frombuffer): when the last array on it dies, its memory goes
 * to a small cache that the next result of about the same size takes,
 * instead of being unmapped and replaced by fresh pages that the kernel
 * faults in and zeroes (about 3 ms per 64 MiB on the 2-core machines, as
 * long as an add of 16 Mi floats).  Bounded: at most OB_SLOTS buffers and
 * WEBNN_RESULT_CACHE_MB MiB (read once; default 256, 0: no cache); only
 * buffers of OB_MIN bytes or more are made here. */
#define OB_SLOTS 8
#define OB_MIN ((size_t)1 << 20)

typedef struct {
    PyObject_HEAD
    void *p;
    size_t n;      /* bytes asked for (the buffer's length) */
    size_t cap;    /* bytes allocated */
} outbuf_obj;

static struct {
    pthread_mutex_t mu;
    void *p[OB_SLOTS];
    size_t cap[OB_SLOTS];
    size_t bytes, limit;
    int limit_read;
} ob_cache = { .mu = PTHREAD_MUTEX_INITIALIZER };

static size_t
ob_limit(void)
{
    if (!ob_cache.limit_read) {
        const char *e = getenv("WEBNN_RESULT_CACHE_MB");
        long mb = 256;
        if (e && *e) {
            char *end;
            long v = strtol(e, &end, 10);
            mb = (*end == 0 && v >= 0 && v <= (1L << 20)) ? v : 256;
        }
        ob_cache.limit = (size_t)mb << 20;
        ob_cache.limit_read = 1;
    }
    return ob_cache.limit;
}

/* a cached block of n to n + n / 4 bytes (the best fit), or NULL */
static void *
ob_take(size_t n, size_t *cap)
{
    void *p = NULL;
    pthread_mutex_lock(&ob_cache.mu);
    int best = -1;
    for (int i = 0; i < OB_SLOTS; i++) {
        if (ob_cache.p[i] && ob_cache.cap[i] >= n &&
            ob_cache.cap[i] - n <= n / 4 &&
            (best < 0 || ob_cache.cap[i] < ob_cache.cap[best])) {
            best = i;
        }
    }
    if (best >= 0) {
        p = ob_cache.p[best];
        *cap = ob_cache.cap[best];
        ob_cache.p[best] = NULL;
        ob_cache.bytes -= *cap;
    }
    pthread_mutex_unlock(&ob_cache.mu);
    return p;
}

/* keep p (cap bytes) for a later result if it fits, else free it; the
 * oldest-placed blocks make room first */
static void
ob_put(void *p, size_t cap)
{
    size_t limit = ob_limit();
    void *drop[OB_SLOTS + 1];
    int nd = 0;
    if (cap > limit) {
        free(p);
        return;
    }
    pthread_mutex_lock(&ob_cache.mu);
    int slot = -1;
    for (int i = 0; i < OB_SLOTS && slot < 0; i++) {
        if (!ob_cache.p[i]) {
            slot = i;
        }
    }
    for (int i = 0; i < OB_SLOTS &&
                    (slot < 0 || ob_cache.bytes + cap > limit); i++) {
        if (ob_cache.p[i]) {
            drop[nd++] = ob_cache.p[i];
            ob_cache.bytes -= ob_cache.cap[i];
            ob_cache.p[i] = NULL;
            slot = slot < 0 ? i : slot;
        }
    }
    ob_cache.p[slot] = p;
    ob_cache.cap[slot] = cap;
    ob_cache.bytes += cap;
    pthread_mutex_unlock(&ob_cache.mu);
    for (int i = 0; i < nd; i++) {
        free(drop[i]);
    }
}

static void
outbuf_dealloc(outbuf_obj *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->p) {
        ob_put(self->p, self->cap);
    }
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int
outbuf_getbuffer(outbuf_obj *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p,
                             (Py_ssize_t)self->n, 0, flags);
}

static PyType_Slot outbuf_slots[] = {
    { Py_tp_dealloc, outbuf_dealloc },
    { Py_bf_getbuffer, outbuf_getbuffer },
    { Py_tp_doc, "Memory of a result array (compute(), read_tensor()), "
                 "reused for a later result when the array is gone." },
    { 0, NULL },
};

PyType_Spec outbuf_spec = {
    .name = "webnn._OutBuffer",
    .basicsize = sizeof(outbuf_obj),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = outbuf_slots,
};

/* out_buffer(nbytes) -> an OutBuffer of nbytes (64-byte aligned), or None
 * when the cache is off or nbytes is small (the caller uses np.empty) */
/* compute_dict(ctx, graph, inputs, spec): compute()'s common case in one
 * call: `inputs` a dict holding exactly the graph's input names, each an
 * ndarray of the input's dtype and shape in native order and C order; spec
 * = (input names in graph order, ((output name, allocator, shape, dtype),
 * ...)), made once per graph by the Python layer; the allocator (np.empty,
 * or the result cache's) makes each output array.  Returns the dict of
 * results, or NotImplemented (before anything is run) when the Python layer
 * must convert or check something (another kind of value, a missing name,
 * a non-host backend), which then reports every error. */
PyObject *
m_compute_dict(PyObject *m, PyObject *args)
{
    PyObject *ccap, *gcap, *inputs, *spec;
    if (!PyArg_ParseTuple(args, "OOOO!:compute_dict", &ccap, &gcap, &inputs,
                          &PyTuple_Type, &spec)) {
        return NULL;
    }
    mod_state *ms = state_of(m);
    wnn_context *c = cap_get(ccap, "webnn.context", "MLContext");
    wnn_graph *g = c ? cap_get(gcap, "webnn.graph", "MLGraph") : NULL;
    if (!g) {
        return NULL;
    }
    PyObject *names = PyTuple_GET_SIZE(spec) == 2 ? PyTuple_GET_ITEM(spec, 0) : NULL;
    PyObject *ospec = names ? PyTuple_GET_ITEM(spec, 1) : NULL;
    uint32_t n_in = wnn_graph_num_inputs(g), n_out = wnn_graph_num_outputs(g);
    if (!names || !PyTuple_Check(names) || !PyTuple_Check(ospec) ||
        PyTuple_GET_SIZE(names) != (Py_ssize_t)n_in ||
        PyTuple_GET_SIZE(ospec) != (Py_ssize_t)n_out) {
        return type_error("compute_dict: a bad spec");
    }
    if (!PyDict_CheckExact(inputs) || PyDict_GET_SIZE(inputs) != (Py_ssize_t)n_in ||
        !ms->ndarray_type || !wnn_context_host_storage(c)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *ins = PyList_New(n_in), *outs = NULL, *res = NULL, *r = NULL;
    if (!ins) {
        return NULL;
    }
    for (uint32_t i = 0; i < n_in; i++) {
        PyObject *v = PyDict_GetItemWithError(inputs, PyTuple_GET_ITEM(names, i));
        if (!v) {
            goto fallback; /* (an error in a key's __eq__ too: reported there) */
        }
        if (Py_TYPE(v) != (PyTypeObject *)ms->ndarray_type) {
            goto fallback;
        }
        /* the element type, the shape, native order, C order */
        const wnn_desc *d = wnn_graph_input_desc(g, i);
        Py_buffer view;
        if (PyObject_GetBuffer(v, &view, PyBUF_FORMAT | PyBUF_STRIDES) != 0) {
            goto fallback;
        }
        wnn_dtype t = WNN_DTYPE_COUNT;
        bool ok = format_dtype(view.format, view.itemsize, &t) == 0 &&
                  t == d->dtype && view.ndim == (int)d->rank &&
                  PyBuffer_IsContiguous(&view, 'C');
        for (uint32_t k = 0; ok && k < d->rank; k++) {
            ok = (uint64_t)view.shape[k] == d->shape[k];
        }
        PyBuffer_Release(&view);
        if (!ok) {
            goto fallback;
        }
        Py_INCREF(v);
        PyList_SET_ITEM(ins, i, v);
    }
    outs = PyList_New(n_out);
    res = outs ? PyDict_New() : NULL;
    if (!res) {
        goto done;
    }
    for (uint32_t i = 0; i < n_out; i++) {
        PyObject *o = PyTuple_GET_ITEM(ospec, i);
        if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != 4) {
            type_error("compute_dict: a bad spec");
            goto done;
        }
        PyObject *a = PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(o, 1),
                                                   PyTuple_GET_ITEM(o, 2),
                                                   PyTuple_GET_ITEM(o, 3), NULL);
        if (!a) {
            goto done;
        }
        PyList_SET_ITEM(outs, i, a);
        if (PyDict_SetItem(res, PyTuple_GET_ITEM(o, 0), a) < 0) {
            goto done;
        }
    }
    r = compute_run(m, c, g, ins, outs, NULL); /* True, or NULL: an error */
    if (r) {
        Py_DECREF(r);
        r = res;
        res = NULL;
    }
    goto done;
fallback:
    if (!PyErr_Occurred()) {
        r = Py_NotImplemented;
        Py_INCREF(r);
    }
done:
    Py_DECREF(ins);
    Py_XDECREF(outs);
    Py_XDECREF(res);
    return r;
}

PyObject *
m_out_buffer(PyObject *m, PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0) {
        return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError,
                                                      "negative size");
    }
    if ((size_t)n < OB_MIN || ob_limit() == 0 || (size_t)n > ob_limit()) {
        Py_RETURN_NONE;
    }
    size_t cap = (size_t)n;
    void *p = ob_take((size_t)n, &cap);
    if (!p) {
        cap = ((size_t)n + 63) & ~(size_t)63;
        if (!(p = wnn_host_alloc(cap))) {
            return PyErr_NoMemory();
        }
    }
    outbuf_obj *o = PyObject_New(outbuf_obj, state_of(m)->outbuf_type);
    if (!o) {
        ob_put(p, cap);
        return NULL;
    }
    o->p = p;
    o->n = (size_t)n;
    o->cap = cap;
    return (PyObject *)o;
}

