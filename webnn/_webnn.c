/* _webnn.c -- the CPython extension `webnn._core`.  It does three jobs:
 * convert Python objects to C values (descriptors, buffers, options through
 * the core's field tables), call the core (without the GIL where the core may
 * wait or compute), and map wnn_error to exceptions.  No validation lives
 * here: every rule is in csrc/.  The Python classes in webnn/_api.py wrap the
 * capsules this module returns. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webnn_core.h"
#include "webnn_introspect.h"

typedef struct {
    PyObject *errors; /* dict: int kind -> exception class */
    PyTypeObject *operand_type;
    PyTypeObject *outbuf_type;
    PyObject *tensor_type;  /* webnn.MLTensor (set_types), for dispatch */
    PyObject *ndarray_type; /* numpy.ndarray (set_types), for compute */
    PyObject *str_h;       /* "_h": an MLTensor's handle attribute */
} mod_state;

static PyModuleDef core_module;

static mod_state *
state_of(PyObject *m)
{
    return (mod_state *)PyModule_GetState(m);
}

/* ---- errors ------------------------------------------------------------ */
static PyObject *
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

static PyObject *
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
static void
ctx_del(PyObject *cap)
{
    wnn_context *c = PyCapsule_GetPointer(cap, "webnn.context");
    if (c) {
        Py_BEGIN_ALLOW_THREADS
        wnn_context_release(c);
        Py_END_ALLOW_THREADS
    }
}

static void
builder_del(PyObject *cap)
{
    wnn_builder *b = PyCapsule_GetPointer(cap, "webnn.builder");
    if (b) {
        wnn_builder_free(b);
    }
}

static void
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
static PyObject *
tensor_capsule(wnn_tensor *t)
{
    PyObject *r = PyCapsule_New(t, "webnn.tensor", tensor_del);
    if (!r) {
        wnn_tensor_release(t);
    }
    return r;
}

static void *
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

static void
builder_set_busy(PyObject *cap, bool busy)
{
    PyCapsule_SetContext(cap, busy ? (void *)1 : NULL);
}

static PyObject *raise_error(PyObject *m, const wnn_error *e);

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
static wnn_builder *
builder_get(PyObject *m, PyObject *cap, const char *op)
{
    wnn_builder *b = cap_get(cap, "webnn.builder", "MLGraphBuilder");
    if (b && builder_busy(cap)) {
        busy_error(m, op);
        return NULL;
    }
    return b;
}

static PyObject *
wnn_py_newref(PyObject *o)
{
    Py_INCREF(o);
    return o;
}

/* ---- MLOperand ---------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *builder; /* the builder capsule */
    uint32_t id;
    wnn_desc desc;
    int origin;        /* wnn_origin_kind, -1 unknown                    */
    int op;            /* NODE: the producer's operator                  */
    PyObject *label;   /* NODE: the producer's label; INPUT: its name; or NULL */
} operand_obj;

static void
operand_dealloc(operand_obj *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->builder);
    Py_CLEAR(self->label);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int
operand_traverse(operand_obj *self, visitproc visit, void *arg)
{
    Py_VISIT(self->builder);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static PyObject *
shape_tuple(const wnn_desc *d)
{
    PyObject *t = PyTuple_New(d->rank);
    for (uint32_t i = 0; t && i < d->rank; i++) {
        PyTuple_SET_ITEM(t, i, PyLong_FromUnsignedLong(d->shape[i]));
    }
    return t;
}

static PyObject *
operand_get_dtype(operand_obj *self, void *c)
{
    return PyUnicode_FromString(wnn_dtype_name(self->desc.dtype));
}

static PyObject *
operand_get_shape(operand_obj *self, void *c)
{
    return shape_tuple(&self->desc);
}

static PyObject *
operand_get_rank(operand_obj *self, void *c)
{
    return PyLong_FromUnsignedLong(self->desc.rank);
}

/* What made the operand: "input", "constant" or the operator's spec name. */
static PyObject *
operand_get_operator(operand_obj *self, void *c)
{
    if (self->origin == WNN_ORIGIN_INPUT) {
        return PyUnicode_FromString("input");
    }
    if (self->origin == WNN_ORIGIN_CONSTANT) {
        return PyUnicode_FromString("constant");
    }
    const wnn_op_info *info =
        self->origin == WNN_ORIGIN_NODE ? wnn_op_get((wnn_op)self->op) : NULL;
    if (!info) {
        Py_RETURN_NONE;
    }
    return PyUnicode_FromString(info->camel);
}

static PyObject *
operand_get_label(operand_obj *self, void *c)
{
    if (self->origin != WNN_ORIGIN_NODE || !self->label) {
        Py_RETURN_NONE;
    }
    return wnn_py_newref(self->label);
}

static PyObject *
operand_get_name(operand_obj *self, void *c)
{
    if (self->origin != WNN_ORIGIN_INPUT || !self->label) {
        Py_RETURN_NONE;
    }
    return wnn_py_newref(self->label);
}

static PyObject *
operand_repr(operand_obj *self)
{
    PyObject *s = shape_tuple(&self->desc);
    PyObject *what = s ? operand_get_operator(self, NULL) : NULL;
    if (!what) {
        Py_XDECREF(s);
        return NULL;
    }
    PyObject *r;
    if (self->label && self->origin == WNN_ORIGIN_INPUT) {
        r = PyUnicode_FromFormat("MLOperand(input %R, data_type='%s', shape=%R)",
                                 self->label, wnn_dtype_name(self->desc.dtype), s);
    } else if (self->label) {
        r = PyUnicode_FromFormat("MLOperand(%S, label=%R, data_type='%s', shape=%R)",
                                 what, self->label, wnn_dtype_name(self->desc.dtype), s);
    } else if (what != Py_None) {
        r = PyUnicode_FromFormat("MLOperand(%S, data_type='%s', shape=%R)",
                                 what, wnn_dtype_name(self->desc.dtype), s);
    } else {
        r = PyUnicode_FromFormat("MLOperand(data_type='%s', shape=%R)",
                                 wnn_dtype_name(self->desc.dtype), s);
    }
    Py_DECREF(s);
    Py_DECREF(what);
    return r;
}

static PyGetSetDef operand_getset[] = {
    { "data_type", (getter)operand_get_dtype, NULL, "the operand's data type", NULL },
    { "dataType", (getter)operand_get_dtype, NULL, "alias of data_type", NULL },
    { "shape", (getter)operand_get_shape, NULL, "the operand's shape (tuple)", NULL },
    { "rank", (getter)operand_get_rank, NULL, "len(shape)", NULL },
    { "operator", (getter)operand_get_operator, NULL,
      "what made the operand: 'input', 'constant' or the operator's spec name "
      "(an extension of this package)", NULL },
    { "label", (getter)operand_get_label, NULL,
      "the label given to the operator that made the operand, or None", NULL },
    { "name", (getter)operand_get_name, NULL,
      "an input's name, else None", NULL },
    { NULL },
};

static PyType_Slot operand_slots[] = {
    { Py_tp_dealloc, operand_dealloc },
    { Py_tp_traverse, operand_traverse },
    { Py_tp_getset, operand_getset },
    { Py_tp_repr, operand_repr },
    { Py_tp_doc, "An operand of a graph being built (spec: MLOperand)." },
    { 0, NULL },
};

static PyType_Spec operand_spec = {
    .name = "webnn.MLOperand",
    .basicsize = sizeof(operand_obj),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = operand_slots,
};

static PyObject *
new_operand(PyObject *m, PyObject *builder_cap, uint32_t id)
{
    wnn_builder *b = PyCapsule_GetPointer(builder_cap, "webnn.builder");
    operand_obj *o =
        PyObject_GC_New(operand_obj, state_of(m)->operand_type);
    if (!o) {
        return NULL;
    }
    Py_INCREF(builder_cap);
    o->builder = builder_cap;
    o->id = id;
    o->desc = *wnn_builder_operand_desc(b, id);
    o->origin = -1;
    o->op = -1;
    o->label = NULL;
    wnn_operand_view v;
    if (wnn_builder_operand_view(b, id, &v)) {
        o->origin = (int)v.kind;
        o->op = (int)v.op;
        const char *s = v.kind == WNN_ORIGIN_INPUT ? v.name
                        : v.kind == WNN_ORIGIN_NODE ? v.label : NULL;
        if (s) {
            o->label = PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
            if (!o->label) {
                PyErr_Clear();
            }
        }
    }
    PyObject_GC_Track(o);
    return (PyObject *)o;
}

/* An MLOperand of `builder`, else TypeError naming op and argument. */
static int
conv_operand(PyObject *m, PyObject *obj, PyObject *builder_cap,
             const char *op, const char *arg, uint32_t *id)
{
    if (!PyObject_TypeCheck(obj, state_of(m)->operand_type)) {
        type_error("%s: argument '%s': expected an MLOperand, got %s", op, arg,
                   Py_TYPE(obj)->tp_name);
        return -1;
    }
    operand_obj *o = (operand_obj *)obj;
    if (o->builder != builder_cap) {
        type_error("%s: argument '%s': the operand belongs to another "
                   "MLGraphBuilder", op, arg);
        return -1;
    }
    *id = o->id;
    return 0;
}

/* ---- values ------------------------------------------------------------- */
/* o.__index__(), with a TypeError that names the argument (NumPy's own
 * says "only integer scalar arrays can be converted to a scalar index"). */
static PyObject *
index_of(PyObject *o, const char *what)
{
    PyObject *i = PyNumber_Index(o);
    if (!i && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        type_error("%s: expected an integer, got %s%s", what,
                   Py_TYPE(o)->tp_name,
                   PySequence_Check(o) ? " (a sequence where an integer "
                                         "belongs)" : "");
    }
    return i;
}

static int
conv_u32(PyObject *o, const char *what, uint32_t *out)
{
    if (PyBool_Check(o) || !PyIndex_Check(o)) {
        type_error("%s: expected an integer, got %s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *i = index_of(o, what);
    if (!i) {
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow || v < 0 || v > 4294967295LL) {
        type_error("%s: value is out of the range of unsigned long", what);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

static int
conv_i32(PyObject *o, const char *what, int32_t *out)
{
    if (PyBool_Check(o) || !PyIndex_Check(o)) {
        type_error("%s: expected an integer, got %s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *i = index_of(o, what);
    if (!i) {
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow || v < INT32_MIN || v > INT32_MAX) {
        type_error("%s: value is out of the range of long", what);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

/* The UTF-8 of an enum-like string (a data type, an enum value), or NULL
 * without an exception when it cannot be one: not a str, a lone surrogate,
 * or a NUL character (which C would cut the string at). */
static const char *
enum_utf8(PyObject *o)
{
    Py_ssize_t n;
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &n) : NULL;
    if (!s) {
        PyErr_Clear();
        return NULL;
    }
    return strlen(s) == (size_t)n ? s : NULL;
}

static int
conv_dtype(PyObject *o, const char *what, wnn_dtype *out)
{
    if (!PyUnicode_Check(o)) {
        type_error("%s: expected a data type string, got %s", what,
                   Py_TYPE(o)->tp_name);
        return -1;
    }
    const char *s = enum_utf8(o);
    if (!s) {
        /* a lone surrogate or a NUL: no data type has one */
        type_error("%s: not a valid MLOperandDataType", what);
        return -1;
    }
    if (wnn_dtype_from_name(s, out) != 0) {
        type_error("%s: '%s' is not a valid MLOperandDataType", what, s);
        return -1;
    }
    return 0;
}

/* MLNumber: an exact integer (bigint) or a double. */
static int
conv_number(PyObject *o, const char *what, wnn_number *out)
{
    memset(out, 0, sizeof(*out));
    out->present = true;
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        int neg = PyObject_RichCompareBool(o, Py_False, Py_LT); /* o < 0 */
        PyObject *mag = neg ? PyNumber_Negative(o) : (Py_INCREF(o), o);
        if (neg < 0 || !mag) {
            Py_XDECREF(mag);
            return -1;
        }
        unsigned long long v = PyLong_AsUnsignedLongLong(mag);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            /* beyond 64 bits: keep it as a double (casting clamps) */
            PyErr_Clear();
            out->d = PyLong_AsDouble(o);
            Py_DECREF(mag);
            if (out->d == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                out->d = neg ? -INFINITY : INFINITY;
            }
            return 0;
        }
        Py_DECREF(mag);
        out->is_int = true;
        out->is_neg = neg && v != 0;
        out->mag = v;
        out->d = neg ? -(double)v : (double)v;
        return 0;
    }
    if (PyFloat_Check(o) || (PyIndex_Check(o) && !PyBool_Check(o)) ||
        PyNumber_Check(o)) {
        if (PyBool_Check(o)) {
            type_error("%s: expected a number, got bool", what);
            return -1;
        }
        if (PyIndex_Check(o) && !PyFloat_Check(o)) {
            /* NumPy integers and the like: exact, as Python ints */
            PyObject *i = PyNumber_Index(o);
            if (!i) {
                return -1;
            }
            int r = conv_number(i, what, out);
            Py_DECREF(i);
            return r;
        }
        out->d = PyFloat_AsDouble(o);
        if (out->d == -1.0 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
                return -1;
            }
            /* beyond double's range (a Fraction, a Decimal): +-Infinity */
            PyErr_Clear();
            int neg = PyObject_RichCompareBool(o, Py_False, Py_LT);
            if (neg < 0) {
                return -1;
            }
            out->d = neg ? -INFINITY : INFINITY;
        }
        return 0;
    }
    type_error("%s: expected a number, got %s", what, Py_TYPE(o)->tp_name);
    return -1;
}

/* A tuple holding the items of a sequence, owned by the caller: converting
 * the items may run Python code (__index__, __float__) that changes or
 * frees the original list, never this copy. */
static PyObject *
private_seq(PyObject *seq)
{
    return PySequence_Tuple(seq);
}

/* dict -> wnn_desc; accepts dataType/data_type and shape. */
static PyObject *
dict_get2(PyObject *d, const char *snake, const char *camel)
{
    PyObject *v = PyDict_GetItemString(d, snake);
    if (!v && camel) {
        v = PyDict_GetItemString(d, camel);
    }
    return v;
}

static int
conv_shape(PyObject *seq, const char *what, uint32_t *shape, uint32_t *rank,
           uint32_t max)
{
    if (PyUnicode_Check(seq) || PyBytes_Check(seq) || PyDict_Check(seq)) {
        type_error("%s: expected a sequence of integers", what);
        return -1;
    }
    /* a private copy: the items' __index__ may change the caller's list */
    PyObject *f = private_seq(seq);
    if (!f) {
        PyErr_Clear();
        type_error("%s: expected a sequence of integers, got %s", what,
                   Py_TYPE(seq)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(f);
    if ((size_t)n > max) {
        Py_DECREF(f);
        type_error("%s: %zd dimensions exceed the supported rank %u", what, n,
                   max);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (conv_u32(PyTuple_GET_ITEM(f, i), what, &shape[i]) != 0) {
            Py_DECREF(f);
            return -1;
        }
    }
    *rank = (uint32_t)n;
    Py_DECREF(f);
    return 0;
}

static int
conv_desc(PyObject *o, const char *op, wnn_desc *d)
{
    char what[96];
    snprintf(what, sizeof(what), "%s: descriptor", op);
    if (!PyDict_Check(o)) {
        type_error("%s: expected a dict, got %s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    memset(d, 0, sizeof(*d));
    if (PyDict_GetItemString(o, "data_type") &&
        PyDict_GetItemString(o, "dataType")) {
        type_error("%s: 'dataType' and 'data_type' name the same member; "
                   "give one", what);
        return -1;
    }
    /* the dict's values are held while they are converted (their
     * conversion may run code that changes the caller's dict) */
    PyObject *dt = dict_get2(o, "data_type", "dataType");
    PyObject *sh = dict_get2(o, "shape", NULL);
    if (!dt || !sh) {
        type_error("%s: '%s' is required", what, dt ? "shape" : "dataType");
        return -1;
    }
    char w2[128];
    snprintf(w2, sizeof(w2), "%s.dataType", what);
    if (conv_dtype(dt, w2, &d->dtype) != 0) {
        return -1;
    }
    snprintf(w2, sizeof(w2), "%s.shape", what);
    Py_INCREF(sh);
    int r = conv_shape(sh, w2, d->shape, &d->rank, WNN_MAX_RANK);
    Py_DECREF(sh);
    return r;
}

/* ---- buffers ------------------------------------------------------------ */
#define FORMAT_BYTE_ORDER (-2)

/* The data type of a buffer's struct-module format: 0 and *t, 1 for raw
 * bytes (uint8, which stands for any type), -1 for an element type with no
 * MLOperandDataType, FORMAT_BYTE_ORDER for multi-byte elements in the
 * other byte order than this machine's (never read as native: issue 16,
 * '>f4' [1, 2, 3] came back as -4.6e-41). */
static int
format_dtype(const char *fmt, Py_ssize_t itemsize, wnn_dtype *t)
{
    if (!fmt) {
        return 1; /* raw bytes */
    }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const char foreign = '>';
#else
    const char foreign = '<';
#endif
    bool swapped = false;
    while (*fmt == '<' || *fmt == '=' || *fmt == '@' || *fmt == '!' ||
           *fmt == '>') {
        swapped = *fmt == foreign || (*fmt == '!' && foreign == '>');
        fmt++;
    }
    if (fmt[0] == '\0' || fmt[1] != '\0') {
        return -1;
    }
    if (swapped && itemsize > 1) {
        return FORMAT_BYTE_ORDER;
    }
    switch (fmt[0]) {
    case 'B': return 1; /* uint8 stands for any type */
    case 'f': *t = WNN_FLOAT32; return itemsize == 4 ? 0 : -1;
    case 'e': *t = WNN_FLOAT16; return 0;
    case 'b': *t = WNN_INT8; return 0;
    case 'h': case 'H': return -1;
    case 'i': case 'l': case 'q':
        *t = itemsize == 4 ? WNN_INT32 : itemsize == 8 ? WNN_INT64 : WNN_DTYPE_COUNT;
        return *t == WNN_DTYPE_COUNT ? -1 : 0;
    case 'I': case 'L': case 'Q':
        *t = itemsize == 4 ? WNN_UINT32 : itemsize == 8 ? WNN_UINT64 : WNN_DTYPE_COUNT;
        return *t == WNN_DTYPE_COUNT ? -1 : 0;
    default: return -1;
    }
}

/* A reader's name for a struct-module element type ("float64" for 'd'). */
static const char *
format_name(const char *fmt, Py_ssize_t itemsize)
{
    while (*fmt && strchr("<>=@!", *fmt)) {
        fmt++;
    }
    switch (fmt[0]) {
    case 'd': return "float64";
    case 'f': return itemsize == 4 ? "float32" : "a float";
    case 'e': return "float16";
    case '?': return "bool";
    case 'b': return "int8";
    case 'h': return "int16";
    case 'H': return "uint16";
    case 'i': case 'l': case 'q':
        return itemsize == 4 ? "int32" : itemsize == 8 ? "int64" : "an integer";
    case 'I': case 'L': case 'Q':
        return itemsize == 4 ? "uint32" : itemsize == 8 ? "uint64"
                                                        : "an unsigned integer";
    case 'Z': return "complex";
    default: return "an element type";
    }
}

/* Get a C-contiguous view (or copy) of `obj` whose byte length and element
 * type fit `d` ("validate buffer with descriptor").  *copy is malloc'd when
 * the buffer was not contiguous. */
static int
conv_buffer(PyObject *obj, const wnn_desc *d, const char *op, const char *arg,
            bool writable, Py_buffer *view, void **data, void **copy)
{
    *copy = NULL;
    int flags = PyBUF_FORMAT | PyBUF_STRIDES | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) != 0) {
        PyErr_Clear();
        type_error("%s: argument '%s': expected a%s buffer (an object with "
                   "the buffer protocol), got %s", op, arg,
                   writable ? " writable" : "", Py_TYPE(obj)->tp_name);
        return -1;
    }
    /* the element type first: a float64 array for a float32 tensor is a
     * data type mismatch, whatever its byte length */
    wnn_dtype t = WNN_DTYPE_COUNT;
    int r = format_dtype(view->format, view->itemsize, &t);
    if (r == FORMAT_BYTE_ORDER) {
        type_error("%s: argument '%s': the buffer's elements ('%s') are in "
                   "the other byte order than this machine's; pass native "
                   "data (NumPy: a.astype(a.dtype.newbyteorder('=')))", op,
                   arg, view->format);
        PyBuffer_Release(view);
        return -1;
    }
    if (r < 0 || (r == 0 && t != d->dtype)) {
        type_error("%s: argument '%s': element type %s ('%s') does not match "
                   "the data type %s (pass a %s array or raw uint8 bytes)", op,
                   arg, format_name(view->format, view->itemsize),
                   view->format, wnn_dtype_name(d->dtype),
                   wnn_dtype_name(d->dtype));
        PyBuffer_Release(view);
        return -1;
    }
    uint64_t want = wnn_desc_bytes(d);
    if ((uint64_t)view->len != want) {
        type_error("%s: argument '%s': byte length %zd differs from the "
                   "descriptor's %llu", op, arg, view->len,
                   (unsigned long long)want);
        PyBuffer_Release(view);
        return -1;
    }
    if (PyBuffer_IsContiguous(view, 'C')) {
        *data = view->buf;
        return 0;
    }
    if (writable) {
        type_error("%s: argument '%s': the buffer is not C-contiguous", op,
                   arg);
        PyBuffer_Release(view);
        return -1;
    }
    *copy = PyMem_Malloc(view->len ? view->len : 1);
    if (!*copy) {
        PyBuffer_Release(view);
        PyErr_NoMemory();
        return -1;
    }
    if (PyBuffer_ToContiguous(*copy, view, view->len, 'C') != 0) {
        PyMem_Free(*copy);
        PyBuffer_Release(view);
        return -1;
    }
    *data = *copy;
    return 0;
}

/* ---- module functions: operators table ---------------------------------- */
/* ops_internal.h's WNN_LIST_OR_ONE: a list field's `def` when the IDL type
 * is a union of one value or a sequence */
#define WNN_LIST_OR_ONE_VALUE 1
static const char *const field_type_names[] = {
    "double", "number", "bool", "u32", "i32", "u32_list", "i32_list",
    "dtype", "enum", "enum_list", "operand", "f32_list",
};

static PyObject *
dtypes_list(uint16_t mask)
{
    PyObject *l = PyList_New(0);
    for (int t = 0; l && t < WNN_DTYPE_COUNT; t++) {
        if (mask & WNN_DT(t)) {
            PyObject *s = PyUnicode_FromString(wnn_dtype_name((wnn_dtype)t));
            if (!s || PyList_Append(l, s) != 0) {
                Py_XDECREF(s);
                Py_DECREF(l);
                return NULL;
            }
            Py_DECREF(s);
        }
    }
    return l;
}

static PyObject *
limits_obj(const wnn_op_limits *l)
{
    PyObject *out = PyList_New(l->n);
    for (uint32_t i = 0; out && i < l->n; i++) {
        PyObject *dt = dtypes_list(l->e[i].dtypes);
        PyObject *e = dt ? Py_BuildValue("(sNII)", l->e[i].name, dt,
                                         (unsigned)l->e[i].rank_min,
                                         (unsigned)l->e[i].rank_max)
                         : NULL;
        if (!e) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, e);
    }
    return out;
}

/* The IDL default of a field as a Python value; None where the IDL has none
 * (lists, operands) or where it depends on the input (the checker fills it). */
static PyObject *
field_default(const wnn_field *f)
{
    switch (f->type) {
    case WNN_F_DOUBLE:
    case WNN_F_NUMBER:
        return PyFloat_FromDouble(f->def);
    case WNN_F_BOOL:
        return PyBool_FromLong(f->def != 0);
    case WNN_F_U32:
    case WNN_F_I32:
        return PyLong_FromDouble(f->def);
    case WNN_F_DTYPE:
        return PyUnicode_FromString(wnn_dtype_name((wnn_dtype)(int)f->def));
    case WNN_F_ENUM:
        if (f->enum_values && f->def >= 0) {
            int k = (int)f->def, j = 0;
            while (f->enum_values[j] && j < k) {
                j++;
            }
            if (f->enum_values[j]) {
                return PyUnicode_FromString(f->enum_values[j]);
            }
        }
        Py_RETURN_NONE;
    default:
        Py_RETURN_NONE;
    }
}

/* The signature parsed by the core (wnn_op_params_get): a tuple of
 * (snake, camel, kind, field index or -1), kind "operand", "sequence" or
 * "value". */
static PyObject *
params_obj(wnn_op op)
{
    static const char *const kinds[] = { "operand", "sequence", "value" };
    const wnn_op_params *ps = wnn_op_params_get(op);
    PyObject *t = PyTuple_New(ps->n);
    for (uint32_t i = 0; t && i < ps->n; i++) {
        PyObject *e = Py_BuildValue("(sssi)", ps->p[i].snake, ps->p[i].camel,
                                    kinds[ps->p[i].kind], ps->p[i].field);
        if (!e) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, e);
    }
    return t;
}

static PyObject *
m_op_table(PyObject *m, PyObject *noargs)
{
    PyObject *out = PyList_New(WNN_OP_COUNT);
    for (int op = 0; out && op < WNN_OP_COUNT; op++) {
        const wnn_op_info *info = wnn_op_get((wnn_op)op);
        PyObject *fields = PyList_New(info->fields->n);
        /* the kind of each field ("u32", "enum", ...), for generic tests */
        PyObject *ftypes = PyList_New(info->fields->n);
        /* fields that the IDL also takes as one integer (split's `unsigned
         * long or sequence<unsigned long>`) */
        PyObject *or_one = PyList_New(0);
        for (uint32_t i = 0; ftypes && i < info->fields->n; i++) {
            const wnn_field *f = &info->fields->f[i];
            unsigned t = (unsigned)f->type;
            PyList_SET_ITEM(ftypes, i, PyUnicode_FromString(
                t < sizeof(field_type_names) / sizeof(field_type_names[0])
                    ? field_type_names[t] : "?"));
            if (or_one && (f->type == WNN_F_U32_LIST || f->type == WNN_F_I32_LIST) &&
                f->def == WNN_LIST_OR_ONE_VALUE) {
                PyObject *s = PyUnicode_FromString(f->snake);
                if (!s || PyList_Append(or_one, s) != 0) {
                    Py_CLEAR(or_one);
                }
                Py_XDECREF(s);
            }
        }
        for (uint32_t i = 0; fields && i < info->fields->n; i++) {
            const wnn_field *f = &info->fields->f[i];
            PyObject *ev = Py_None;
            Py_INCREF(ev);
            if (f->enum_values) {
                Py_DECREF(ev);
                ev = PyList_New(0);
                for (int j = 0; ev && f->enum_values[j]; j++) {
                    PyObject *s = PyUnicode_FromString(f->enum_values[j]);
                    PyList_Append(ev, s);
                    Py_XDECREF(s);
                }
            }
            PyList_SET_ITEM(fields, i,
                            Py_BuildValue("(ssN)", f->snake, f->camel, ev));
        }
        PyObject *defaults = PyList_New(info->fields->n);
        for (uint32_t i = 0; defaults && i < info->fields->n; i++) {
            PyObject *d = field_default(&info->fields->f[i]);
            if (!d) {
                Py_CLEAR(defaults);
                break;
            }
            PyList_SET_ITEM(defaults, i, d);
        }
        PyObject *params = params_obj((wnn_op)op);
        PyObject *lim = limits_obj(info->limits);
        /* ops.def's family and traits columns, by name */
        PyObject *traits = PyList_New(0);
        for (uint32_t t = 0; traits && t < WNN_TR_BIT_COUNT; t++) {
            if (info->traits >> t & 1u) {
                PyObject *s = PyUnicode_FromString(wnn_trait_name(t));
                if (!s || PyList_Append(traits, s) != 0) {
                    Py_CLEAR(traits);
                }
                Py_XDECREF(s);
            }
        }
        bool ok = fields && lim && ftypes && defaults && params && or_one &&
                  traits;
        PyObject *row = ok
                            ? Py_BuildValue("{s:i,s:s,s:s,s:N,s:N,s:N,s:N,s:N,s:N,s:O,s:I,s:s,s:N}",
                                            "id", op, "camel", info->camel,
                                            "snake", info->snake, "fields", fields,
                                            "field_types", ftypes,
                                            "defaults", defaults,
                                            "params", params,
                                            "list_or_one", or_one,
                                            "limits", lim, "returns_list",
                                            wnn_op_params_get((wnn_op)op)->returns_list
                                                ? Py_True : Py_False,
                                            "n_inputs",
                                            (unsigned)info->limits->n_inputs,
                                            "family",
                                            wnn_family_name(info->family),
                                            "traits", traits)
                            : NULL;
        if (!ok) {
            Py_XDECREF(fields);
            Py_XDECREF(ftypes);
            Py_XDECREF(defaults);
            Py_XDECREF(params);
            Py_XDECREF(or_one);
            Py_XDECREF(traits);
            Py_XDECREF(lim);
        }
        if (!row) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, op, row);
    }
    return out;
}

static PyObject *
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

static PyObject *
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

static PyObject *
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

static PyObject *
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

static PyObject *
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

static PyObject *
m_context_info(PyObject *m, PyObject *cap)
{
    wnn_context *c = cap_get(cap, "webnn.context", "MLContext");
    if (!c) {
        return NULL;
    }
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
static PyObject *
m_context_op_limits(PyObject *m, PyObject *cap)
{
    wnn_context *c = cap_get(cap, "webnn.context", "MLContext");
    if (!c) {
        return NULL;
    }
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

/* ---- builder ------------------------------------------------------------ */
static PyObject *
m_builder_create(PyObject *m, PyObject *cap)
{
    wnn_context *c = cap_get(cap, "webnn.context", "MLContext");
    wnn_builder *b;
    wnn_error err;
    if (!c) {
        return NULL;
    }
    if (wnn_builder_create(c, &b, &err) != WNN_OK) {
        return raise_error(m, &err);
    }
    PyObject *r = PyCapsule_New(b, "webnn.builder", builder_del);
    if (!r) {
        wnn_builder_free(b);
    }
    return r;
}

static PyObject *
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

static PyObject *
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
    wnn_status st = wnn_builder_constant(b, &d, data, (size_t)view.len, &id,
                                         &err);
    PyMem_Free(copy);
    PyBuffer_Release(&view);
    if (st != WNN_OK) {
        return raise_error(m, &err);
    }
    return new_operand(m, cap, id);
}

static PyObject *
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

static PyObject *
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
static int
conv_field(PyObject *m, PyObject *builder_cap, temps *tmp,
           const char *op, const wnn_field *f, PyObject *v, void *opts)
{
    char what[128];
    void *p = (char *)opts + f->offset;
    snprintf(what, sizeof(what), "%s: argument '%s'", op, f->camel);
    switch (f->type) {
    case WNN_F_DOUBLE: {
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
    case WNN_F_ENUM: {
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
    case WNN_F_U32_LIST:
    case WNN_F_I32_LIST:
    case WNN_F_ENUM_LIST: {
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
    case WNN_F_F32_LIST: {
        /* sequence<float>: each item a finite number that stays finite
         * when rounded to float (WebIDL "float" conversion) */
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
static PyObject *
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

static PyObject *
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

static PyObject *
m_graph_info(PyObject *m, PyObject *cap)
{
    wnn_graph *g = cap_get(cap, "webnn.graph", "MLGraph");
    if (!g) {
        return NULL;
    }
    return Py_BuildValue("(NNO)", named_list(g, true), named_list(g, false),
                         wnn_graph_is_destroyed(g) ? Py_True : Py_False);
}

static PyObject *
m_graph_destroy(PyObject *m, PyObject *cap)
{
    wnn_graph *g = cap_get(cap, "webnn.graph", "MLGraph");
    if (!g) {
        return NULL;
    }
    wnn_graph_destroy(g);
    Py_RETURN_NONE;
}

/* ---- tensors ------------------------------------------------------------ */
static PyObject *
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

static PyObject *
m_tensor_info(PyObject *m, PyObject *cap)
{
    wnn_tensor *t = cap_get(cap, "webnn.tensor", "MLTensor");
    if (!t) {
        return NULL;
    }
    const wnn_desc *d = wnn_tensor_desc(t);
    return Py_BuildValue("(sNOOOO)", wnn_dtype_name(d->dtype), shape_tuple(d),
                         wnn_tensor_readable(t) ? Py_True : Py_False,
                         wnn_tensor_writable(t) ? Py_True : Py_False,
                         wnn_tensor_is_constant(t) ? Py_True : Py_False,
                         wnn_tensor_is_destroyed(t) ? Py_True : Py_False);
}

static PyObject *
m_tensor_destroy(PyObject *m, PyObject *cap)
{
    wnn_tensor *t = cap_get(cap, "webnn.tensor", "MLTensor");
    if (!t) {
        return NULL;
    }
    wnn_tensor_destroy(t);
    Py_RETURN_NONE;
}

static PyObject *
m_tensor_write(PyObject *m, PyObject *args)
{
    PyObject *ccap, *tcap, *data;
    if (!PyArg_ParseTuple(args, "OOO:write_tensor", &ccap, &tcap, &data)) {
        return NULL;
    }
    wnn_context *c = cap_get(ccap, "webnn.context", "MLContext");
    wnn_tensor *t = c ? cap_get(tcap, "webnn.tensor", "MLTensor") : NULL;
    if (!t) {
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

static PyObject *
m_tensor_read(PyObject *m, PyObject *args)
{
    PyObject *ccap, *tcap, *out;
    if (!PyArg_ParseTuple(args, "OOO:read_tensor", &ccap, &tcap, &out)) {
        return NULL;
    }
    wnn_context *c = cap_get(ccap, "webnn.context", "MLContext");
    wnn_tensor *t = c ? cap_get(tcap, "webnn.tensor", "MLTensor") : NULL;
    if (!t) {
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

/* ---- DLPack (device memory interop) -------------------------------------
 * The DLPack ABI (dlpack.h, v1.0), declared here: it is small and stable.
 * Export (tensor_dlpack) builds a DLManagedTensor[Versioned] over a GPU
 * tensor's device memory, pinned in the core until the deleter runs; import
 * (dlpack_info) reads a producer's capsule without consuming it (the
 * producer's capsule destructor frees it; the Python layer copies from the
 * memory while it holds the capsule). */
enum { DL_CPU = 1, DL_CUDA = 2 };
enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2 };
#define DL_FLAG_READ_ONLY (1ull << 0)
#define DL_FLAG_IS_COPIED (1ull << 1)

typedef struct {
    int32_t device_type;
    int32_t device_id;
} DLDevice;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* One allocation per export: the managed struct (either kind), then the
 * shape and strides it points to.  manager_ctx is the pinned wnn_tensor. */
typedef struct {
    union {
        DLManagedTensor legacy;
        DLManagedTensorVersioned versioned;
    } m;
    int64_t shape[WNN_MAX_RANK + 1];
    int64_t strides[WNN_MAX_RANK + 1];
} dl_export;

/* The deleters run on whatever thread the consumer drops the tensor, with
 * or without the GIL: plain C, no Python. */
static void
dl_legacy_deleter(DLManagedTensor *self)
{
    wnn_tensor_export_end((wnn_tensor *)self->manager_ctx);
    free(self); /* m is the first member of dl_export */
}

static void
dl_versioned_deleter(DLManagedTensorVersioned *self)
{
    wnn_tensor_export_end((wnn_tensor *)self->manager_ctx);
    free(self);
}

/* A capsule not consumed (still named "dltensor[_versioned]") deletes its
 * tensor when it goes; a consumer renames it "used_dltensor[_versioned]". */
static void
dl_capsule_del(PyObject *cap)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (PyCapsule_IsValid(cap, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        if (m && m->deleter) {
            m->deleter(m);
        }
    } else if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        DLManagedTensorVersioned *m =
            PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m && m->deleter) {
            m->deleter(m);
        }
    }
    PyErr_Restore(et, ev, tb);
}

static DLDataType
dl_dtype(wnn_dtype t)
{
    DLDataType d = { DL_FLOAT, (uint8_t)(8 * wnn_dtype_size(t)), 1 };
    switch (t) {
    case WNN_FLOAT32: case WNN_FLOAT16:
        d.code = DL_FLOAT;
        break;
    case WNN_INT32: case WNN_INT64: case WNN_INT8:
        d.code = DL_INT;
        break;
    default:
        d.code = DL_UINT;
        break;
    }
    return d;
}

/* tensor_dlpack(context, tensor, versioned) -> a "dltensor" /
 * "dltensor_versioned" capsule over the tensor's device memory (no copy),
 * after the work queued before it and the device's have finished. */
static PyObject *
m_tensor_dlpack(PyObject *m, PyObject *args)
{
    PyObject *ccap, *tcap;
    int versioned, copied;
    if (!PyArg_ParseTuple(args, "OOpp:tensor_dlpack", &ccap, &tcap, &versioned,
                          &copied)) {
        return NULL;
    }
    wnn_context *c = cap_get(ccap, "webnn.context", "MLContext");
    wnn_tensor *t = c ? cap_get(tcap, "webnn.tensor", "MLTensor") : NULL;
    if (!t) {
        return NULL;
    }
    dl_export *x = calloc(1, sizeof(*x));
    if (!x) {
        return PyErr_NoMemory();
    }
    void *ptr = NULL;
    int dev = 0;
    wnn_error err;
    wnn_status st;
    Py_BEGIN_ALLOW_THREADS
    st = wnn_tensor_export(c, t, &ptr, &dev, &err);
    Py_END_ALLOW_THREADS
    if (st != WNN_OK) {
        free(x);
        return raise_error(m, &err);
    }
    const wnn_desc *d = wnn_tensor_desc(t);
    int64_t stride = 1;
    for (int i = (int)d->rank - 1; i >= 0; i--) {
        x->shape[i] = d->shape[i];
        x->strides[i] = stride;
        stride *= d->shape[i];
    }
    DLTensor dl = {
        .data = ptr,
        .device = { DL_CUDA, dev },
        .ndim = (int32_t)d->rank,
        .dtype = dl_dtype(d->dtype),
        .shape = x->shape,
        .strides = x->strides,
        .byte_offset = 0,
    };
    PyObject *cap;
    if (versioned) {
        x->m.versioned.version.major = 1;
        x->m.versioned.version.minor = 0;
        x->m.versioned.manager_ctx = t;
        x->m.versioned.deleter = dl_versioned_deleter;
        x->m.versioned.flags = copied ? DL_FLAG_IS_COPIED : 0;
        x->m.versioned.dl_tensor = dl;
        cap = PyCapsule_New(&x->m.versioned, "dltensor_versioned",
                            dl_capsule_del);
    } else {
        x->m.legacy.dl_tensor = dl;
        x->m.legacy.manager_ctx = t;
        x->m.legacy.deleter = dl_legacy_deleter;
        cap = PyCapsule_New(&x->m.legacy, "dltensor", dl_capsule_del);
    }
    if (!cap) {
        wnn_tensor_export_end(t);
        free(x);
    }
    return cap;
}

/* dlpack_info(capsule) -> (device_type, device_id, address, (code, bits,
 * lanes), shape, strides or None, read_only): a producer's capsule, read
 * and not consumed (its memory is valid while the capsule lives). */
static PyObject *
m_dlpack_info(PyObject *m, PyObject *cap)
{
    DLTensor *dl = NULL;
    uint64_t flags = 0;
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        DLManagedTensorVersioned *v =
            PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (v->version.major != 1) {
            return type_error("DLPack version %u.%u is not supported (1.x)",
                              v->version.major, v->version.minor);
        }
        dl = &v->dl_tensor;
        flags = v->flags;
    } else if (PyCapsule_IsValid(cap, "dltensor")) {
        dl = &((DLManagedTensor *)PyCapsule_GetPointer(cap, "dltensor"))
                  ->dl_tensor;
    } else {
        return type_error("not a DLPack capsule (\"dltensor\" or "
                          "\"dltensor_versioned\", unconsumed)");
    }
    if (dl->ndim < 0 || dl->ndim > 64 || (dl->ndim && !dl->shape)) {
        return type_error("DLPack: invalid ndim %d", (int)dl->ndim);
    }
    PyObject *shape = PyTuple_New(dl->ndim);
    PyObject *strides = dl->strides ? PyTuple_New(dl->ndim) : wnn_py_newref(Py_None);
    if (!shape || !strides) {
        Py_XDECREF(shape);
        Py_XDECREF(strides);
        return NULL;
    }
    for (int i = 0; i < dl->ndim; i++) {
        PyTuple_SET_ITEM(shape, i, PyLong_FromLongLong(dl->shape[i]));
        if (dl->strides) {
            PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong(dl->strides[i]));
        }
    }
    if (PyErr_Occurred()) {
        Py_DECREF(shape);
        Py_DECREF(strides);
        return NULL;
    }
    return Py_BuildValue("(iiK(iii)NNO)", (int)dl->device.device_type,
                         (int)dl->device.device_id,
                         (unsigned long long)((uintptr_t)dl->data +
                                              dl->byte_offset),
                         (int)dl->dtype.code, (int)dl->dtype.bits,
                         (int)dl->dtype.lanes, shape, strides,
                         flags & DL_FLAG_READ_ONLY ? Py_True : Py_False);
}

/* tensor_write_device(context, tensor, address, bytes): device-to-device
 * copy from memory of the context's device (a DLPack producer's) */
static PyObject *
m_tensor_write_device(PyObject *m, PyObject *args)
{
    PyObject *ccap, *tcap;
    unsigned long long addr, bytes;
    if (!PyArg_ParseTuple(args, "OOKK:tensor_write_device", &ccap, &tcap,
                          &addr, &bytes)) {
        return NULL;
    }
    wnn_context *c = cap_get(ccap, "webnn.context", "MLContext");
    wnn_tensor *t = c ? cap_get(tcap, "webnn.tensor", "MLTensor") : NULL;
    if (!t) {
        return NULL;
    }
    wnn_error err;
    wnn_status st;
    Py_BEGIN_ALLOW_THREADS
    st = wnn_context_write_device(c, t, (const void *)(uintptr_t)addr,
                                  (size_t)bytes, &err);
    Py_END_ALLOW_THREADS
    if (st != WNN_OK) {
        return raise_error(m, &err);
    }
    Py_RETURN_NONE;
}

/* tensor_create_constant_device(context, descriptor, address) -> a
 * constant tensor copied device to device from a producer's memory */
static PyObject *
m_tensor_create_constant_device(PyObject *m, PyObject *args)
{
    PyObject *cap, *desc;
    unsigned long long addr;
    if (!PyArg_ParseTuple(args, "OOK:tensor_create_constant_device", &cap,
                          &desc, &addr)) {
        return NULL;
    }
    wnn_context *c = cap_get(cap, "webnn.context", "MLContext");
    wnn_desc d;
    if (!c || conv_desc(desc, "createConstantTensor", &d) != 0) {
        return NULL;
    }
    wnn_tensor *t = NULL;
    wnn_error err;
    wnn_status st;
    Py_BEGIN_ALLOW_THREADS
    st = wnn_tensor_create_constant_device(c, &d, (const void *)(uintptr_t)addr,
                                           &t, &err);
    Py_END_ALLOW_THREADS
    if (st != WNN_OK) {
        return raise_error(m, &err);
    }
    return tensor_capsule(t);
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

static PyObject *
m_dispatch(PyObject *m, PyObject *args)
{
    return dispatch_impl(m, args, false);
}

static PyObject *
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

static PyObject *
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
static PyObject *
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

/* ---- module ------------------------------------------------------------- */
/* ---- read-only views (webnn_introspect.h) ------------------------------- */
static PyObject *
view_obj(const wnn_operand_view *v)
{
    const wnn_op_info *info = v->kind == WNN_ORIGIN_NODE ? wnn_op_get(v->op) : NULL;
    PyObject *shape = shape_tuple(&v->desc);
    if (!shape) {
        return NULL;
    }
    return Py_BuildValue(
        "{s:s,s:s,s:N,s:z,s:z,s:z,s:K}", "kind",
        v->kind == WNN_ORIGIN_INPUT ? "input"
        : v->kind == WNN_ORIGIN_CONSTANT ? "constant" : "node",
        "data_type", wnn_dtype_name(v->desc.dtype), "shape", shape, "name",
        v->name, "operator", info ? info->camel : NULL, "label", v->label,
        "constant_bytes", (unsigned long long)v->constant_bytes);
}

static PyObject *
ids_list(const uint32_t *ids, uint32_t n)
{
    PyObject *l = PyList_New(n);
    for (uint32_t i = 0; l && i < n; i++) {
        PyList_SET_ITEM(l, i, PyLong_FromUnsignedLong(ids[i]));
    }
    return l;
}

/* graph_view(graph) -> {"operands": [...], "nodes": [...], "inputs": [ids],
 * "outputs": [ids], "order": [node ids], "arena_bytes": n, "fusion":
 * [group per node, 0 = none], "n_fused": n}; None once the IR is gone. */
static PyObject *
m_graph_view(PyObject *m, PyObject *cap)
{
    wnn_graph *g = cap_get(cap, "webnn.graph", "MLGraph");
    if (!g) {
        return NULL;
    }
    uint32_t no = wnn_graph_num_operands(g), nn = wnn_graph_num_nodes(g);
    if (no == 0) {
        Py_RETURN_NONE;
    }
    PyObject *ops = PyList_New(no), *nodes = PyList_New(nn);
    PyObject *ins = PyList_New(0), *outs = PyList_New(0), *order = PyList_New(0);
    PyObject *fusion = PyList_New(nn);
    uint32_t *groups = PyMem_Calloc((size_t)nn + 1, sizeof(uint32_t));
    PyObject *result = NULL;
    if (!ops || !nodes || !ins || !outs || !order || !fusion || !groups) {
        PyErr_NoMemory();
        goto done;
    }
    for (uint32_t i = 0; i < no; i++) {
        wnn_operand_view v;
        PyObject *e = wnn_graph_operand_view(g, i, &v) ? view_obj(&v)
                                                        : wnn_py_newref(Py_None);
        if (!e) {
            goto done;
        }
        PyList_SET_ITEM(ops, i, e);
    }
    for (uint32_t i = 0; i < nn; i++) {
        wnn_node_view v;
        PyObject *e = NULL;
        if (wnn_graph_node_view(g, i, &v)) {
            e = Py_BuildValue("{s:s,s:z,s:N,s:N}", "operator",
                              wnn_op_get(v.op)->camel, "label", v.label,
                              "inputs", ids_list(v.in, v.n_in), "outputs",
                              ids_list(v.out, v.n_out));
        }
        if (!e) {
            goto done;
        }
        PyList_SET_ITEM(nodes, i, e);
    }
    for (uint32_t i = 0; i < wnn_graph_num_inputs(g); i++) {
        PyObject *x = PyLong_FromUnsignedLong(wnn_graph_input_operand(g, i));
        if (!x || PyList_Append(ins, x) != 0) {
            Py_XDECREF(x);
            goto done;
        }
        Py_DECREF(x);
    }
    for (uint32_t i = 0; i < wnn_graph_num_outputs(g); i++) {
        PyObject *x = PyLong_FromUnsignedLong(wnn_graph_output_operand(g, i));
        if (!x || PyList_Append(outs, x) != 0) {
            Py_XDECREF(x);
            goto done;
        }
        Py_DECREF(x);
    }
    for (uint32_t i = 0; i < wnn_graph_plan_length(g); i++) {
        PyObject *x = PyLong_FromUnsignedLong(wnn_graph_plan_node(g, i));
        if (!x || PyList_Append(order, x) != 0) {
            Py_XDECREF(x);
            goto done;
        }
        Py_DECREF(x);
    }
    int n_fused = wnn_graph_fusion_groups(g, groups);
    for (uint32_t i = 0; i < nn; i++) {
        PyList_SET_ITEM(fusion, i, PyLong_FromUnsignedLong(n_fused > 0 ? groups[i] : 0));
    }
    result = Py_BuildValue("{s:O,s:O,s:O,s:O,s:O,s:K,s:O,s:i,s:O}", "operands", ops,
                           "nodes", nodes, "inputs", ins, "outputs", outs,
                           "order", order,
                           "arena_bytes",
                           (unsigned long long)wnn_graph_plan_arena_bytes(g),
                           "fusion", fusion, "n_fused", n_fused < 0 ? 0 : n_fused,
                           "fuses", wnn_graph_fuses(g) ? Py_True : Py_False);
done:
    Py_XDECREF(ops);
    Py_XDECREF(nodes);
    Py_XDECREF(ins);
    Py_XDECREF(outs);
    Py_XDECREF(order);
    Py_XDECREF(fusion);
    PyMem_Free(groups);
    return result;
}

/* context_backend(context) -> (backend name, threads) */
static PyObject *
m_context_backend(PyObject *m, PyObject *cap)
{
    wnn_context *c = cap_get(cap, "webnn.context", "MLContext");
    if (!c) {
        return NULL;
    }
    return Py_BuildValue("(si)", wnn_context_backend_name(c), wnn_context_threads(c));
}

/* op_prefix(op, label) -> "conv2d (label 'stem')": the one place that
 * writes the prefix of an operator's messages (the core's wnn_op_prefix). */
static PyObject *
m_op_prefix(PyObject *m, PyObject *args)
{
    const char *op, *label = NULL;
    if (!PyArg_ParseTuple(args, "s|z:op_prefix", &op, &label)) {
        return NULL;
    }
    char buf[160];
    wnn_op_prefix(op, label, buf, sizeof(buf));
    return PyUnicode_DecodeUTF8(buf, (Py_ssize_t)strlen(buf), "replace");
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

static PyType_Spec outbuf_spec = {
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
static PyObject *
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

static PyObject *
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

static PyMethodDef core_methods[] = {
    { "graph_view", m_graph_view, METH_O, "A built graph's nodes, operands and plan." },
    { "context_backend", m_context_backend, METH_O, NULL },
    { "op_prefix", m_op_prefix, METH_VARARGS, NULL },
    { "op_table", m_op_table, METH_NOARGS, "The operator registry (ops.def)." },
    { "set_errors", m_set_errors, METH_O, "Map error kinds to classes." },
    { "device_available", m_device_available, METH_O, NULL },
    { "context_create", m_context_create, METH_O, NULL },
    { "context_destroy", m_context_destroy, METH_VARARGS, NULL },
    { "context_info", m_context_info, METH_O, NULL },
    { "context_op_limits", m_context_op_limits, METH_O, NULL },
    { "builder_create", m_builder_create, METH_O, NULL },
    { "builder_input", m_builder_input, METH_VARARGS, NULL },
    { "builder_constant", m_builder_constant, METH_VARARGS, NULL },
    { "builder_constant_scalar", m_builder_constant_scalar, METH_VARARGS, NULL },
    { "builder_constant_tensor", m_builder_constant_tensor, METH_VARARGS, NULL },
    { "builder_op", m_builder_op, METH_VARARGS, NULL },
    { "builder_build", m_builder_build, METH_VARARGS, NULL },
    { "graph_info", m_graph_info, METH_O, NULL },
    { "graph_destroy", m_graph_destroy, METH_O, NULL },
    { "tensor_create", m_tensor_create, METH_VARARGS, NULL },
    { "tensor_info", m_tensor_info, METH_O, NULL },
    { "tensor_destroy", m_tensor_destroy, METH_O, NULL },
    { "tensor_write", m_tensor_write, METH_VARARGS, NULL },
    { "tensor_read", m_tensor_read, METH_VARARGS, NULL },
    { "tensor_dlpack", m_tensor_dlpack, METH_VARARGS, NULL },
    { "tensor_write_device", m_tensor_write_device, METH_VARARGS, NULL },
    { "tensor_create_constant_device", m_tensor_create_constant_device,
      METH_VARARGS, NULL },
    { "dlpack_info", m_dlpack_info, METH_O, NULL },
    { "dispatch", m_dispatch, METH_VARARGS, NULL },
    { "dispatch_tensors", m_dispatch_tensors, METH_VARARGS, NULL },
    { "set_types", m_set_types, METH_VARARGS, NULL },
    { "compute", m_compute, METH_VARARGS, NULL },
    { "profile", m_profile, METH_VARARGS, NULL },
    { "compute_dict", m_compute_dict, METH_VARARGS, NULL },
    { "out_buffer", m_out_buffer, METH_O, NULL },
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
    Py_CLEAR(st->tensor_type);
    Py_CLEAR(st->ndarray_type);
    Py_CLEAR(st->str_h);
    return 0;
}

static PyModuleDef_Slot core_slots[] = {
    { Py_mod_exec, core_exec },
    { 0, NULL },
};

static PyModuleDef core_module = {
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
