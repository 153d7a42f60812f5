/* builder.c -- builders: inputs, constants (host blocks viewed without a
 * copy), operators with their options, build; graphs. */
#include "binding.h"

/* ---- builder ------------------------------------------------------------ */
PyObject *
builder_create_impl(PyObject *m, wnn_context *c)
{
    wnn_builder *b;
    wnn_error err;
    if (wnn_builder_create(c, &b, &err) != WNN_OK) {
        return raise_error(m, &err);
    }
    PyObject *r = PyCapsule_New(b, "webnn.builder", builder_del);
    if (!r) {
        wnn_builder_free(b);
    }
    return r;
}

PyObject *
m_builder_input(PyObject *m, PyObject *args)
{
    PyObject *cap, *desc;
    const char *name;
    if (!PyArg_ParseTuple(args, "OsO:input", &cap, &name, &desc)) {
        return NULL;
    }
    wnn_builder *b = builder_get(m, cap, "input");
    wnn_desc d;
    uint32_t id;
    wnn_error err;
    if (!b || conv_desc(desc, "input", &d) != 0) {
        return NULL;
    }
    if (wnn_builder_input(b, name, &d, &id, &err) != WNN_OK) {
        return raise_error(m, &err);
    }
    return new_operand(m, cap, id);
}

/* ---- host blocks: constant memory shared with the core ------------------
 * host_buffer(nbytes) -> a _HostBuffer: 64-byte aligned memory with a
 * reference count of its own (atomic: the core gives it back from whichever
 * thread frees the graph, without the GIL).  webnn.onnx reads the model's
 * weights into these and makes read-only arrays over them; constant() of
 * such an array takes the memory as the constant (wnn_builder_constant_view)
 * instead of copying it.  Private: the library that makes the block promises
 * not to write it after handing it to a builder. */
typedef struct hb_block {
    atomic_size_t refs;
    size_t n;
    void *p;
} hb_block;

typedef struct {
    PyObject_HEAD
    hb_block *blk;
} hostbuf_obj;

static void
hb_block_release(void *owner)
{
    hb_block *b = owner;
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) {
        free(b->p);
        free(b);
    }
}

static void
hostbuf_dealloc(hostbuf_obj *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->blk) {
        hb_block_release(self->blk);
    }
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int
hostbuf_getbuffer(hostbuf_obj *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->blk->p,
                             (Py_ssize_t)self->blk->n, 0, flags);
}

static PyType_Slot hostbuf_slots[] = {
    { Py_tp_dealloc, hostbuf_dealloc },
    { Py_bf_getbuffer, hostbuf_getbuffer },
    { Py_tp_doc, "Memory that constant() takes without a copy (webnn.onnx's "
                 "weights); private." },
    { 0, NULL },
};

PyType_Spec hostbuf_spec = {
    .name = "webnn._HostBuffer",
    .basicsize = sizeof(hostbuf_obj),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = hostbuf_slots,
};

PyObject *
m_host_buffer(PyObject *m, PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "host_buffer: negative size");
        }
        return NULL;
    }
    hb_block *b = malloc(sizeof(*b));
    void *p = NULL;
    if (b && posix_memalign(&p, 64, n ? (size_t)n : 1) != 0) {
        p = NULL;
    }
    if (!b || !p) {
        free(b);
        free(p);
        return PyErr_NoMemory();
    }
    atomic_init(&b->refs, 1);
    b->n = (size_t)n;
    b->p = p;
    hostbuf_obj *o = PyObject_New(hostbuf_obj, state_of(m)->hostbuf_type);
    if (!o) {
        hb_block_release(b);
        return NULL;
    }
    o->blk = b;
    return (PyObject *)o;
}

/* The host block under buf (a _HostBuffer, or an ndarray whose base chain
 * ends in one) holding [data, data + len), or NULL. */
static hb_block *
hostbuf_under(mod_state *ms, PyObject *buf, const void *data, size_t len)
{
    PyObject *o = buf;
    Py_INCREF(o);
    for (int depth = 0; depth < 4 && o != Py_None; depth++) {
        if (Py_TYPE(o) == ms->hostbuf_type) {
            hb_block *b = ((hostbuf_obj *)o)->blk;
            Py_DECREF(o);
            const char *p = b->p, *d = data;
            return d >= p && len <= b->n && (size_t)(d - p) <= b->n - len ? b
                                                                           : NULL;
        }
        if (!ms->ndarray_type || Py_TYPE(o) != (PyTypeObject *)ms->ndarray_type) {
            break;
        }
        PyObject *base = PyObject_GetAttrString(o, "base");
        Py_DECREF(o);
        if (!base) {
            PyErr_Clear();
            return NULL;
        }
        o = base;
    }
    Py_DECREF(o);
    return NULL;
}

PyObject *
m_builder_constant(PyObject *m, PyObject *args)
{
    PyObject *cap, *desc, *buf;
    if (!PyArg_ParseTuple(args, "OOO:constant", &cap, &desc, &buf)) {
        return NULL;
    }
    wnn_builder *b = builder_get(m, cap, "constant");
    wnn_desc d;
    uint32_t id;
    wnn_error err;
    Py_buffer view;
    void *data, *copy;
    if (!b || conv_desc(desc, "constant", &d) != 0) {
        return NULL;
    }
    if (wnn_builder_has_built(b)) { /* the spec checks "can build" first */
        wnn_status s = wnn_builder_constant(b, &d, NULL, 0, &id, &err);
        (void)s;
        return raise_error(m, &err);
    }
    if (wnn_desc_check(wnn_builder_context(b), &d, "constant", "descriptor",
                       &err) != WNN_OK) {
        return raise_error(m, &err);
    }
    if (conv_buffer(buf, &d, "constant", "buffer", false, &view, &data,
                    &copy) != 0) {
        return NULL;
    }
    /* a read-only array over a host block: the block is the constant */
    hb_block *blk = copy || !view.readonly ? NULL :
        hostbuf_under(state_of(m), buf, data, (size_t)view.len);
    wnn_status st;
    if (blk && (uintptr_t)data % wnn_dtype_size(d.dtype) == 0) {
        atomic_fetch_add_explicit(&blk->refs, 1, memory_order_relaxed);
        st = wnn_builder_constant_view(b, &d, data, (size_t)view.len,
                                       hb_block_release, blk, &id, &err);
        if (st != WNN_OK) {
            hb_block_release(blk);
        }
    } else {
        st = wnn_builder_constant(b, &d, data, (size_t)view.len, &id, &err);
    }
    PyMem_Free(copy);
    PyBuffer_Release(&view);
    if (st != WNN_OK) {
        return raise_error(m, &err);
    }
    return new_operand(m, cap, id);
}

PyObject *
m_builder_constant_scalar(PyObject *m, PyObject *args)
{
    PyObject *cap, *dt, *val;
    if (!PyArg_ParseTuple(args, "OOO:constant", &cap, &dt, &val)) {
        return NULL;
    }
    wnn_builder *b = builder_get(m, cap, "constant");
    wnn_dtype t;
    wnn_number v;
    uint32_t id;
    wnn_error err;
    if (!b || conv_dtype(dt, "constant: argument 'dataType'", &t) != 0 ||
        conv_number(val, "constant: argument 'value'", &v) != 0) {
        return NULL;
    }
    if (wnn_builder_constant_scalar(b, t, &v, &id, &err) != WNN_OK) {
        return raise_error(m, &err);
    }
    return new_operand(m, cap, id);
}

PyObject *
m_builder_constant_tensor(PyObject *m, PyObject *args)
{
    PyObject *cap, *tcap;
    if (!PyArg_ParseTuple(args, "OO:constant", &cap, &tcap)) {
        return NULL;
    }
    wnn_builder *b = builder_get(m, cap, "constant");
    wnn_tensor *t = cap_get(tcap, "webnn.tensor", "MLTensor");
    uint32_t id;
    wnn_error err;
    if (!b || !t) {
        return NULL;
    }
    if (wnn_builder_constant_tensor(b, t, &id, &err) != WNN_OK) {
        return raise_error(m, &err);
    }
    return new_operand(m, cap, id);
}

/* An integer where the IDL has (integer or sequence): an int or a NumPy
 * integer scalar, not an array (which also has __index__ but is a
 * sequence of integers; a 0-d integer array counts as an integer). */
static bool
is_integer_scalar(PyObject *v)
{
    if (PyBool_Check(v) || !PyIndex_Check(v)) {
        return false;
    }
    if (PyLong_Check(v) || !PySequence_Check(v)) {
        return true;
    }
    Py_ssize_t n = PySequence_Size(v);
    if (n < 0) {
        PyErr_Clear(); /* unsized (a 0-d array): a scalar */
        return true;
    }
    return false;
}

/* Memory for option lists while they are converted: converting an item
 * runs Python code (__index__, __float__, ...) that may even build() the
 * builder, which hands its arena to the graph.  So no arena memory is held
 * across such calls: lists are converted into these blocks and copied into
 * the builder's arena only once every option is converted (move_lists). */
typedef struct temps {
    void **p;
    size_t n, cap;
} temps;

static void *
temp_alloc(temps *t, size_t bytes)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        void **p = PyMem_Realloc(t->p, cap * sizeof(void *));
        if (!p) {
            return NULL;
        }
        t->p = p;
        t->cap = cap;
    }
    void *q = PyMem_Malloc(bytes ? bytes : 1);
    if (q) {
        t->p[t->n++] = q;
    }
    return q;
}

static void
temps_free(temps *t)
{
    for (size_t i = 0; i < t->n; i++) {
        PyMem_Free(t->p[i]);
    }
    PyMem_Free(t->p);
    memset(t, 0, sizeof(*t));
}

/* Copy the converted lists of `opts` into the builder's arena (no Python
 * code runs between this and wnn_builder_op). */
static int
move_lists(wnn_builder *b, const wnn_op_info *info, void *opts)
{
    for (uint32_t i = 0; i < info->fields->n; i++) {
        const wnn_field *f = &info->fields->f[i];
        void *p = (char *)opts + f->offset;
        if (f->type == WNN_F_U32_LIST || f->type == WNN_F_I32_LIST ||
            f->type == WNN_F_ENUM_LIST || f->type == WNN_F_F32_LIST) {
            /* wnn_f32_list has wnn_u32_list's layout (webnn_core.h) */
            wnn_u32_list *l = p;
            if (!l->present || !l->v) {
                continue;
            }
            size_t bytes = sizeof(uint32_t) * ((size_t)l->n + 1);
            void *a = wnn_builder_alloc(b, bytes);
            if (!a) {
                PyErr_NoMemory();
                return -1;
            }
            memcpy(a, l->v, bytes);
            l->v = a;
        }
    }
    return 0;
}

/* Fill one option field from a Python value. */
/* IDL double (not unrestricted): a finite number */
static int
conv_double(PyObject *v, const char *what, void *p)
{
    if (PyBool_Check(v) || !(PyFloat_Check(v) || PyIndex_Check(v) ||
                             PyNumber_Check(v))) {
        type_error("%s: expected a number, got %s", what,
                   Py_TYPE(v)->tp_name);
        return -1;
    }
    double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
            return -1;
        }
        PyErr_Clear(); /* an integer beyond double's range: not finite */
        d = INFINITY;
    }
    if (!isfinite(d)) { /* IDL double (not unrestricted) */
        type_error("%s: %g is not a finite number", what, d);
        return -1;
    }
    *(double *)p = d;
    return 0;
}

/* one of the enum's values, as its index */
static int
conv_enum(const wnn_field *f, PyObject *v, const char *what, void *p)
{
    const char *s = enum_utf8(v);
    for (int i = 0; s && f->enum_values[i]; i++) {
        if (strcmp(s, f->enum_values[i]) == 0) {
            *(int *)p = i;
            return 0;
        }
    }
    PyErr_Format(PyExc_TypeError, "%s: %R is not one of the allowed values",
                 what, v);
    return -1;
}

/* sequence<unsigned long> / sequence<long> / sequence<enum> (an integer
 * where the IDL has (integer or sequence)) into the temps */
static int
conv_int_list(temps *tmp, const wnn_field *f, PyObject *v, const char *what,
              void *p)
{
    if (f->type != WNN_F_ENUM_LIST && is_integer_scalar(v)) {
        /* an integer where the IDL has (integer or sequence) */
        wnn_u32_list *l = p;
        l->v = temp_alloc(tmp, sizeof(uint32_t) * 2);
        if (!l->v) {
            PyErr_NoMemory();
            return -1;
        }
        l->n = 1;
        l->present = true;
        l->scalar = true;
        return f->type == WNN_F_U32_LIST ? conv_u32(v, what, &l->v[0])
                                         : conv_i32(v, what, (int32_t *)&l->v[0]);
    }
    if (PyUnicode_Check(v) || PyBytes_Check(v) || PyDict_Check(v)) {
        type_error("%s: expected a sequence, got %s", what,
                   Py_TYPE(v)->tp_name);
        return -1;
    }
    PyObject *fs = private_seq(v);
    if (!fs) {
        PyErr_Clear();
        type_error("%s: expected a sequence, got %s", what,
                   Py_TYPE(v)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(fs);
    wnn_u32_list *l = p;
    l->n = (uint32_t)n;
    l->present = true;
    l->scalar = false;
    l->v = n > 0x7fffffff ? NULL
                          : temp_alloc(tmp, sizeof(uint32_t) * (size_t)(n + 1));
    if (!l->v) {
        Py_DECREF(fs);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PyTuple_GET_ITEM(fs, i);
        int r;
        if (f->type == WNN_F_U32_LIST) {
            r = conv_u32(it, what, &l->v[i]);
        } else if (f->type == WNN_F_I32_LIST) {
            r = conv_i32(it, what, (int32_t *)&l->v[i]);
        } else {
            const char *s = enum_utf8(it);
            r = -1;
            for (int j = 0; s && f->enum_values[j]; j++) {
                if (strcmp(s, f->enum_values[j]) == 0) {
                    l->v[i] = (uint32_t)j;
                    r = 0;
                }
            }
            if (r) {
                PyErr_Format(PyExc_TypeError,
                             "%s: %R is not one of the allowed values",
                             what, it);
            }
        }
        if (r) {
            Py_DECREF(fs);
            return -1;
        }
    }
    Py_DECREF(fs);
    return 0;
}

/* sequence<float>: each item a finite number that stays finite when
 * rounded to float (WebIDL "float" conversion) */
static int
conv_f32_list(temps *tmp, PyObject *v, const char *what, void *p)
{
    if (PyUnicode_Check(v) || PyBytes_Check(v)) {
        type_error("%s: expected a sequence of numbers", what);
        return -1;
    }
    PyObject *fs = private_seq(v);
    if (!fs) {
        PyErr_Clear();
        type_error("%s: expected a sequence of numbers, got %s", what,
                   Py_TYPE(v)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(fs);
    wnn_f32_list *l = p;
    l->v = n > 0x7fffffff ? NULL
                          : temp_alloc(tmp, sizeof(float) * (size_t)(n + 1));
    if (!l->v) {
        Py_DECREF(fs);
        PyErr_NoMemory();
        return -1;
    }
    l->n = (uint32_t)n;
    l->present = true;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PyTuple_GET_ITEM(fs, i);
        if (PyBool_Check(it) || !(PyFloat_Check(it) || PyIndex_Check(it) ||
                                  PyNumber_Check(it))) {
            type_error("%s: expected a number, got %s", what,
                       Py_TYPE(it)->tp_name);
            Py_DECREF(fs);
            return -1;
        }
        double d = PyFloat_AsDouble(it);
        if (d == -1.0 && PyErr_Occurred()) {
            Py_DECREF(fs);
            return -1;
        }
        /* 2^128 - 2^103 and above round to Infinity as a float */
        if (!isfinite(d) || fabs(d) >= 0x1.ffffffp+127) {
            type_error("%s: %g is not a finite float", what, d);
            Py_DECREF(fs);
            return -1;
        }
        l->v[i] = (float)d;
    }
    Py_DECREF(fs);
    return 0;
}

static int
conv_field(PyObject *m, PyObject *builder_cap, temps *tmp,
           const char *op, const wnn_field *f, PyObject *v, void *opts)
{
    char what[128];
    void *p = (char *)opts + f->offset;
    snprintf(what, sizeof(what), "%s: argument '%s'", op, f->camel);
    switch (f->type) {
    case WNN_F_DOUBLE:
        return conv_double(v, what, p);
    case WNN_F_NUMBER:
        return conv_number(v, what, p);
    case WNN_F_BOOL:
        if (!PyBool_Check(v) && !(PyLong_Check(v))) {
            type_error("%s: expected a bool, got %s", what, Py_TYPE(v)->tp_name);
            return -1;
        }
        *(bool *)p = PyObject_IsTrue(v) == 1;
        return 0;
    case WNN_F_U32:
        return conv_u32(v, what, p);
    case WNN_F_I32:
        return conv_i32(v, what, p);
    case WNN_F_DTYPE:
        return conv_dtype(v, what, p);
    case WNN_F_ENUM:
        return conv_enum(f, v, what, p);
    case WNN_F_U32_LIST:
    case WNN_F_I32_LIST:
    case WNN_F_ENUM_LIST:
        return conv_int_list(tmp, f, v, what, p);
    case WNN_F_F32_LIST:
        return conv_f32_list(tmp, v, what, p);
    case WNN_F_OPERAND: {
        uint32_t id;
        if (v == Py_None) {
            *(uint32_t *)p = 0;
            return 0;
        }
        if (conv_operand(m, v, builder_cap, op, f->camel, &id) != 0) {
            return -1;
        }
        *(uint32_t *)p = id + 1;
        return 0;
    }
    }
    return type_error("%s: unsupported option kind", what) ? 0 : -1;
}

/* builder_op(builder, op_id, operands, options_dict, label) */
PyObject *
m_builder_op(PyObject *m, PyObject *args)
{
    PyObject *cap, *operands, *options, *label_obj;
    int opid;
    if (!PyArg_ParseTuple(args, "OiOOO:builder_op", &cap, &opid, &operands,
                          &options, &label_obj)) {
        return NULL;
    }
    const wnn_op_info *info = wnn_op_get((wnn_op)opid);
    wnn_builder *b = builder_get(m, cap, info ? info->camel : "MLGraphBuilder");
    if (!b || !info || !PyList_Check(operands) || !PyDict_Check(options)) {
        return b ? type_error("builder_op: bad arguments") : NULL;
    }
    const char *label = NULL;
    if (label_obj != Py_None) {
        if (!PyUnicode_Check(label_obj)) {
            return type_error("%s: argument 'label': expected a string",
                              info->camel);
        }
        label = PyUnicode_AsUTF8(label_obj);
        if (!label) {
            return NULL;
        }
    }
    /* "conv2d (label 'stem')": the prefix of every message below */
    char op[160];
    wnn_op_prefix(info->camel, label, op, sizeof(op));
    Py_ssize_t n = PyList_GET_SIZE(operands);
    uint32_t *ids = PyMem_Malloc(sizeof(uint32_t) * (size_t)(n + 1));
    char *opts = PyMem_Calloc(1, info->options_size + 16);
    temps tmp = { 0 };
    PyObject *result = NULL;
    /* a copy: converting a value may run code that changes the caller's
     * dict (and would free the values PyDict_Next lent us) */
    options = PyDict_Copy(options);
    if (!ids || !opts || !options) {
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        goto done;
    }
    if (wnn_builder_has_built(b)) {
        /* "can build" is the first step of every method */
        wnn_error err;
        uint32_t nout;
        wnn_builder_op(b, (wnn_op)opid, NULL, 0, opts, label, NULL, 0,
                       &nout, &err);
        raise_error(m, &err);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        char arg[64];
        wnn_op_operand_name((wnn_op)opid, (uint32_t)i, (uint32_t)n, arg,
                            sizeof(arg));
        if (conv_operand(m, PyList_GET_ITEM(operands, i), cap, op, arg,
                         &ids[i]) != 0) {
            goto done;
        }
    }
    wnn_options_default((wnn_op)opid, opts);
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(options, &pos, &key, &val)) {
        const char *k = enum_utf8(key); /* NULL: matches no field */
        const wnn_field *f = NULL;
        for (uint32_t i = 0; k && i < info->fields->n; i++) {
            if (strcmp(k, info->fields->f[i].snake) == 0 ||
                strcmp(k, info->fields->f[i].camel) == 0) {
                f = &info->fields->f[i];
            }
        }
        if (!f) {
            PyObject *r = PyObject_Repr(key);
            type_error("%s: unknown option %s", op, r ? PyUnicode_AsUTF8(r) : "?");
            Py_XDECREF(r);
            goto done;
        }
        if (val == Py_None && f->type != WNN_F_OPERAND) {
            continue; /* None means "not given" */
        }
        if (conv_field(m, cap, &tmp, op, f, val, opts) != 0) {
            goto done;
        }
    }
    if (wnn_builder_has_built(b)) {
        /* the conversion's Python code built the graph meanwhile */
        wnn_error err;
        uint32_t nout;
        wnn_builder_op(b, (wnn_op)opid, NULL, 0, opts, label, NULL, 0,
                       &nout, &err);
        raise_error(m, &err);
        goto done;
    }
    if (move_lists(b, info, opts) != 0) {
        goto done;
    }
    {
        uint32_t outs[64], nout = 0;
        wnn_error err;
        if (wnn_builder_op(b, (wnn_op)opid, ids, (uint32_t)n, opts, label, outs,
                           64, &nout, &err) != WNN_OK) {
            raise_error(m, &err);
            goto done;
        }
        result = PyList_New(nout);
        for (uint32_t i = 0; result && i < nout; i++) {
            PyObject *o = new_operand(m, cap, outs[i]);
            if (!o) {
                Py_CLEAR(result);
                break;
            }
            PyList_SET_ITEM(result, i, o);
        }
    }
done:
    temps_free(&tmp);
    Py_XDECREF(options);
    PyMem_Free(ids);
    PyMem_Free(opts);
    return result;
}

PyObject *
m_builder_build(PyObject *m, PyObject *args)
{
    PyObject *cap, *outputs;
    if (!PyArg_ParseTuple(args, "OO:build", &cap, &outputs)) {
        return NULL;
    }
    wnn_builder *b = builder_get(m, cap, "build");
    if (!b) {
        return NULL;
    }
    if (!PyDict_Check(outputs)) {
        return type_error("build: argument 'outputs': expected a dict of "
                          "name -> MLOperand, got %s", Py_TYPE(outputs)->tp_name);
    }
    /* a copy: the names must live while the GIL is released, whatever
     * another thread does to the caller's dict */
    outputs = PyDict_Copy(outputs);
    if (!outputs) {
        return NULL;
    }
    Py_ssize_t n = PyDict_Size(outputs);
    const char **names = PyMem_Calloc((size_t)n + 1, sizeof(char *));
    uint32_t *ids = PyMem_Calloc((size_t)n + 1, sizeof(uint32_t));
    PyObject *result = NULL;
    if (!names || !ids) {
        PyErr_NoMemory();
        goto done;
    }
    if (!wnn_builder_has_built(b)) {
        PyObject *key, *val;
        Py_ssize_t pos = 0, i = 0;
        while (PyDict_Next(outputs, &pos, &key, &val)) {
            if (!PyUnicode_Check(key)) {
                type_error("build: argument 'outputs': names must be strings");
                goto done;
            }
            names[i] = PyUnicode_AsUTF8(key);
            if (!names[i] ||
                conv_operand(m, val, cap, "build", names[i], &ids[i]) != 0) {
                goto done;
            }
            i++;
        }
    }
    wnn_graph *g = NULL;
    wnn_error err;
    wnn_status st;
    builder_set_busy(cap, true);
    Py_BEGIN_ALLOW_THREADS
    st = wnn_builder_build(b, (uint32_t)n, names, ids, &g, &err);
    Py_END_ALLOW_THREADS
    builder_set_busy(cap, false);
    if (st != WNN_OK) {
        raise_error(m, &err);
        goto done;
    }
    result = PyCapsule_New(g, "webnn.graph", graph_del);
    if (!result) {
        wnn_graph_release(g);
    }
done:
    PyMem_Free(names);
    PyMem_Free(ids);
    Py_DECREF(outputs);
    return result;
}

/* ---- graphs ------------------------------------------------------------- */
static PyObject *
named_list(const wnn_graph *g, bool inputs)
{
    uint32_t n = inputs ? wnn_graph_num_inputs(g) : wnn_graph_num_outputs(g);
    PyObject *l = PyList_New(n);
    for (uint32_t i = 0; l && i < n; i++) {
        const wnn_desc *d = inputs ? wnn_graph_input_desc(g, i)
                                   : wnn_graph_output_desc(g, i);
        const char *nm = inputs ? wnn_graph_input_name(g, i)
                                : wnn_graph_output_name(g, i);
        PyObject *e = Py_BuildValue("(ssN)", nm, wnn_dtype_name(d->dtype),
                                    shape_tuple(d));
        if (!e) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, e);
    }
    return l;
}

PyObject *
graph_info_impl(PyObject *m, wnn_graph *g)
{
    return Py_BuildValue("(NNO)", named_list(g, true), named_list(g, false),
                         wnn_graph_is_destroyed(g) ? Py_True : Py_False);
}

PyObject *
graph_destroy_impl(PyObject *m, wnn_graph *g)
{
    wnn_graph_destroy(g);
    Py_RETURN_NONE;
}

