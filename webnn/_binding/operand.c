/* operand.c -- the MLOperand type (webnn._core.MLOperand). */
#include "binding.h"

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

PyObject *
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

PyType_Spec operand_spec = {
    .name = "webnn.MLOperand",
    .basicsize = sizeof(operand_obj),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = operand_slots,
};

PyObject *
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
int
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

