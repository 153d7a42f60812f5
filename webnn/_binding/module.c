/* module.c -- the extension's module: errors, capsules, the method table and
 * the module state (binding.h says what each file of webnn/_binding does). */
#include "binding.h"

/* ---- errors ------------------------------------------------------------ */
PyObject *
raise_error(PyObject *m, const wnn_error *e)
{
    char msg[512];
    wnn_error_format(e, msg, sizeof(msg));
    if (e->kind == WNN_OUT_OF_MEMORY) {
        return PyErr_Format(PyExc_MemoryError, "%s", msg);
    }
    PyObject *cls = NULL;
    mod_state *st = state_of(m);
    if (st->errors) {
        PyObject *k = PyLong_FromLong(e->kind);
        cls = k ? PyDict_GetItemWithError(st->errors, k) : NULL;
        Py_XDECREF(k);
    }
    if (!cls) {
        cls = e->kind == WNN_TYPE_ERROR ? PyExc_TypeError : PyExc_RuntimeError;
    }
    PyErr_SetString(cls, msg);
    return NULL;
}

PyObject *
type_error(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    PyErr_SetString(PyExc_TypeError, msg);
    return NULL;
}

/* ---- capsules ----------------------------------------------------------- */
void
ctx_del(PyObject *cap)
{
    wnn_context *c = PyCapsule_GetPointer(cap, "webnn.context");
    if (c) {
        Py_BEGIN_ALLOW_THREADS
        wnn_context_release(c);
        Py_END_ALLOW_THREADS
    }
}

void
builder_del(PyObject *cap)
{
    wnn_builder *b = PyCapsule_GetPointer(cap, "webnn.builder");
    if (b) {
        wnn_builder_free(b);
    }
}

void
graph_del(PyObject *cap)
{
    wnn_graph *g = PyCapsule_GetPointer(cap, "webnn.graph");
    if (g) {
        wnn_graph_release(g);
    }
}

static void
tensor_del(PyObject *cap)
{
    wnn_tensor *t = PyCapsule_GetPointer(cap, "webnn.tensor");
    if (t) {
        wnn_tensor_release(t);
    }
}

/* a new tensor's capsule (the tensor released if it cannot be made) */
PyObject *
tensor_capsule(wnn_tensor *t)
{
    PyObject *r = PyCapsule_New(t, "webnn.tensor", tensor_del);
    if (!r) {
        wnn_tensor_release(t);
    }
    return r;
}

void *
cap_get(PyObject *o, const char *name, const char *what)
{
    if (!PyCapsule_IsValid(o, name)) {
        type_error("%s is not a %s", Py_TYPE(o)->tp_name, what);
        return NULL;
    }
    return PyCapsule_GetPointer(o, name);
}

/* The core's builder is single-threaded.  Python threads are serialised by
 * the GIL, except while build() runs without it (it may compile for long):
 * meanwhile the builder capsule is marked busy and every other call on the
 * builder -- a second build() included -- is an InvalidStateError, as it
 * would be once build() has set [[hasBuilt]].  Without this, two threads
 * calling build() at once made two graphs over one IR (a double free), and
 * an operator added during build() raced with it. */
static bool
builder_busy(PyObject *cap)
{
    return PyCapsule_GetContext(cap) != NULL;
}

void
builder_set_busy(PyObject *cap, bool busy)
{
    PyCapsule_SetContext(cap, busy ? (void *)1 : NULL);
}


static PyObject *
busy_error(PyObject *m, const char *op)
{
    wnn_error e;
    memset(&e, 0, sizeof(e));
    e.kind = WNN_INVALID_STATE;
    snprintf(e.op, sizeof(e.op), "%s", op);
    snprintf(e.message, sizeof(e.message),
             "build() of this builder is in progress (on another thread)");
    return raise_error(m, &e);
}

/* A builder of `cap` that is not busy, else NULL with an exception. */
wnn_builder *
builder_get(PyObject *m, PyObject *cap, const char *op)
{
    wnn_builder *b = cap_get(cap, "webnn.builder", "MLGraphBuilder");
    if (b && builder_busy(cap)) {
        busy_error(m, op);
        return NULL;
    }
    return b;
}

PyObject *
wnn_py_newref(PyObject *o)
{
    Py_INCREF(o);
    return o;
}


PyObject *
m_set_errors(PyObject *m, PyObject *d)
{
    if (!PyDict_Check(d)) {
        return type_error("set_errors: expected a dict");
    }
    mod_state *st = state_of(m);
    Py_INCREF(d);
    Py_XSETREF(st->errors, d);
    Py_RETURN_NONE;
}

PyObject *
m_set_types(PyObject *m, PyObject *args)
{
    PyObject *tensor, *ndarray;
    if (!PyArg_ParseTuple(args, "O!O!:set_types", &PyType_Type, &tensor,
                          &PyType_Type, &ndarray)) {
        return NULL;
    }
    mod_state *st = state_of(m);
    Py_INCREF(tensor);
    Py_XSETREF(st->tensor_type, tensor);
    Py_INCREF(ndarray);
    Py_XSETREF(st->ndarray_type, ndarray);
    Py_RETURN_NONE;
}

/* the capsule-taking functions' wrappers, generated (methods.def) */
#define WNN_PY_CAP(name, ctype, capsule, what, doc)                          \
    static PyObject *m_##name(PyObject *m, PyObject *cap)                    \
    {                                                                        \
        ctype *p = cap_get(cap, capsule, what);                              \
        return p ? name##_impl(m, p) : NULL;                                 \
    }
#define WNN_PY_CT(name, doc)                                                 \
    static PyObject *m_##name(PyObject *m, PyObject *args)                   \
    {                                                                        \
        Py_ssize_t n = PyTuple_GET_SIZE(args);                               \
        if (n < 2) {                                                         \
            return type_error(#name "() takes a context and a tensor");     \
        }                                                                    \
        wnn_context *c =                                                     \
            cap_get(PyTuple_GET_ITEM(args, 0), "webnn.context", "MLContext"); \
        wnn_tensor *t = c ? cap_get(PyTuple_GET_ITEM(args, 1),               \
                                    "webnn.tensor", "MLTensor")              \
                          : NULL;                                            \
        PyObject *rest = t ? PyTuple_GetSlice(args, 2, n) : NULL;            \
        if (!rest) {                                                         \
            return NULL;                                                     \
        }                                                                    \
        PyObject *r = name##_impl(m, c, t, rest);                            \
        Py_DECREF(rest);                                                     \
        return r;                                                            \
    }
#define WNN_PY_O(name, doc)
#define WNN_PY_ARGS(name, doc)
#define WNN_PY_NOARGS(name, doc)
#include "methods.def"
#undef WNN_PY_CAP
#undef WNN_PY_CT
#undef WNN_PY_O
#undef WNN_PY_ARGS
#undef WNN_PY_NOARGS

/* the method table, generated (methods.def) */
static PyMethodDef core_methods[] = {
#define WNN_PY_CAP(name, ctype, capsule, what, doc) {#name, m_##name, METH_O, doc},
#define WNN_PY_CT(name, doc) {#name, m_##name, METH_VARARGS, doc},
#define WNN_PY_O(name, doc) {#name, m_##name, METH_O, doc},
#define WNN_PY_ARGS(name, doc) {#name, m_##name, METH_VARARGS, doc},
#define WNN_PY_NOARGS(name, doc) {#name, m_##name, METH_NOARGS, doc},
#include "methods.def"
#undef WNN_PY_CAP
#undef WNN_PY_CT
#undef WNN_PY_O
#undef WNN_PY_ARGS
#undef WNN_PY_NOARGS
    { NULL, NULL, 0, NULL },
};

static int
core_exec(PyObject *m)
{
    mod_state *st = state_of(m);
    st->errors = NULL;
    st->tensor_type = NULL;
    st->ndarray_type = NULL;
    st->str_h = PyUnicode_InternFromString("_h");
    if (!st->str_h) {
        return -1;
    }
    st->operand_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(m, &operand_spec, NULL);
    if (!st->operand_type) {
        return -1;
    }
    if (PyModule_AddObjectRef(m, "MLOperand", (PyObject *)st->operand_type) <
        0) {
        return -1;
    }
    st->outbuf_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(m, &outbuf_spec, NULL);
    if (!st->outbuf_type) {
        return -1;
    }
    st->hostbuf_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(m, &hostbuf_spec, NULL);
    if (!st->hostbuf_type) {
        return -1;
    }
    static const struct { const char *name; int v; } kinds[] = {
        { "TYPE_ERROR", WNN_TYPE_ERROR },
        { "INVALID_STATE", WNN_INVALID_STATE },
        { "DATA_ERROR", WNN_DATA_ERROR },
        { "NOT_SUPPORTED", WNN_NOT_SUPPORTED },
        { "OPERATION_ERROR", WNN_OPERATION_ERROR },
        { "UNKNOWN_ERROR", WNN_UNKNOWN_ERROR },
        { "ABORT_ERROR", WNN_ABORT_ERROR },
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (PyModule_AddIntConstant(m, kinds[i].name, kinds[i].v) < 0) {
            return -1;
        }
    }
    return PyModule_AddIntConstant(m, "MAX_RANK", WNN_MAX_RANK);
}

static int
core_traverse(PyObject *m, visitproc visit, void *arg)
{
    mod_state *st = state_of(m);
    Py_VISIT(st->errors);
    Py_VISIT(st->operand_type);
    Py_VISIT(st->outbuf_type);
    Py_VISIT(st->hostbuf_type);
    Py_VISIT(st->tensor_type);
    Py_VISIT(st->ndarray_type);
    return 0;
}

static int
core_clear(PyObject *m)
{
    mod_state *st = state_of(m);
    Py_CLEAR(st->errors);
    Py_CLEAR(st->operand_type);
    Py_CLEAR(st->outbuf_type);
    Py_CLEAR(st->hostbuf_type);
    Py_CLEAR(st->tensor_type);
    Py_CLEAR(st->ndarray_type);
    Py_CLEAR(st->str_h);
    return 0;
}

static PyModuleDef_Slot core_slots[] = {
    { Py_mod_exec, core_exec },
    { 0, NULL },
};

PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "webnn._core",
    .m_doc = "The C core of webnn (see csrc/include/webnn_core.h).",
    .m_size = sizeof(mod_state),
    .m_methods = core_methods,
    .m_slots = core_slots,
    .m_traverse = core_traverse,
    .m_clear = core_clear,
};

PyMODINIT_FUNC
PyInit__core(void)
{
    return PyModuleDef_Init(&core_module);
}

