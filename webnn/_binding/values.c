/* values.c -- Python values to C: numbers, data types, shapes, descriptors,
 * buffers; the operator table as Python data. */
#include "binding.h"

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

int
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

int
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
const char *
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

int
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
int
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
PyObject *
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

int
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
int
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
int
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

PyObject *
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

PyObject *
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
