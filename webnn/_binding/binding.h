/* binding.h -- what the files of the CPython extension `webnn._core`
 * (webnn/_binding/) share: the module state, the conversions every part
 * uses, and the functions the method table (module.c) lists.
 *
 * The extension does three jobs: convert Python objects to C values
 * (descriptors, buffers, options through the core's field tables), call the
 * core (without the GIL where the core may wait or compute), and map
 * wnn_error to exceptions.  No validation lives here: every rule is in
 * csrc/.  The Python classes in webnn/_api.py wrap the capsules this module
 * returns.  The parts, by concern:
 *   module.c      errors, capsules, the method table, module state
 *   operand.c     the MLOperand type
 *   values.c      Python values -> C (numbers, shapes, descriptors, buffers)
 *                 and the operator table as Python data
 *   builder.c     builders, constants (host blocks), operators, build, graphs
 *   tensors.c     contexts, tensors, dispatch / compute / profile, result buffers
 *   dlpack.c      DLPack export and device-to-device imports
 *   introspect.c  read-only views of graphs (webnn_introspect.h) */
#ifndef WEBNN_BINDING_H
#define WEBNN_BINDING_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webnn_core.h"
#include "webnn_introspect.h"

typedef struct {
    PyObject *errors; /* dict: int kind -> exception class */
    PyTypeObject *operand_type;
    PyTypeObject *outbuf_type;
    PyTypeObject *hostbuf_type;
    PyObject *tensor_type;  /* webnn.MLTensor (set_types), for dispatch */
    PyObject *ndarray_type; /* numpy.ndarray (set_types), for compute */
    PyObject *str_h;       /* "_h": an MLTensor's handle attribute */
} mod_state;

static inline mod_state *
state_of(PyObject *m)
{
    return (mod_state *)PyModule_GetState(m);
}

extern PyModuleDef core_module;
extern PyType_Spec operand_spec;   /* operand.c */
extern PyType_Spec hostbuf_spec;   /* builder.c */
extern PyType_Spec outbuf_spec;    /* tensors.c */

/* module.c */
PyObject *raise_error(PyObject *m, const wnn_error *e);
PyObject *type_error(const char *fmt, ...);
void ctx_del(PyObject *cap);
void builder_del(PyObject *cap);
void graph_del(PyObject *cap);
PyObject *tensor_capsule(wnn_tensor *t);
void *cap_get(PyObject *o, const char *name, const char *what);
void builder_set_busy(PyObject *cap, bool busy);
wnn_builder *builder_get(PyObject *m, PyObject *cap, const char *op);
PyObject *wnn_py_newref(PyObject *o);

/* operand.c */
PyObject *shape_tuple(const wnn_desc *d);
PyObject *new_operand(PyObject *m, PyObject *builder_cap, uint32_t id);
int conv_operand(PyObject *m, PyObject *obj, PyObject *builder_cap, const char *op, const char *arg, uint32_t *id);

/* values.c */
int conv_u32(PyObject *o, const char *what, uint32_t *out);
int conv_i32(PyObject *o, const char *what, int32_t *out);
const char * enum_utf8(PyObject *o);
int conv_dtype(PyObject *o, const char *what, wnn_dtype *out);
int conv_number(PyObject *o, const char *what, wnn_number *out);
PyObject *private_seq(PyObject *seq);
int conv_desc(PyObject *o, const char *op, wnn_desc *d);
int format_dtype(const char *fmt, Py_ssize_t itemsize, wnn_dtype *t);
int conv_buffer(PyObject *obj, const wnn_desc *d, const char *op, const char *arg, bool writable, Py_buffer *view, void **data, void **copy);
PyObject *limits_obj(const wnn_op_limits *l);

/* the functions of webnn._core (methods.def): m_<name>, and for a
 * capsule-taking one the body it calls, <name>_impl */
#define WNN_PY_CAP(name, ctype, capsule, what, doc) \
    PyObject *name##_impl(PyObject *m, ctype *p);
#define WNN_PY_CT(name, doc)                                               \
    PyObject *name##_impl(PyObject *m, wnn_context *c, wnn_tensor *t,       \
                          PyObject *rest);
#define WNN_PY_O(name, doc) PyObject *m_##name(PyObject *m, PyObject *arg);
#define WNN_PY_ARGS(name, doc) PyObject *m_##name(PyObject *m, PyObject *args);
#define WNN_PY_NOARGS(name, doc) \
    PyObject *m_##name(PyObject *m, PyObject *noargs);
#include "methods.def"
#undef WNN_PY_CAP
#undef WNN_PY_CT
#undef WNN_PY_O
#undef WNN_PY_ARGS
#undef WNN_PY_NOARGS

#endif
