/* dlpack.c -- DLPack: tensors exported as DLPack capsules, device-to-device
 * imports. */
#include "binding.h"

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
PyObject *
tensor_dlpack_impl(PyObject *m, wnn_context *c, wnn_tensor *t,
    PyObject *rest)
{
    int versioned, copied;
    if (!PyArg_ParseTuple(rest, "pp:tensor_dlpack", &versioned,
                          &copied)) {
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
PyObject *
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
PyObject *
tensor_write_device_impl(PyObject *m, wnn_context *c, wnn_tensor *t,
    PyObject *rest)
{
    unsigned long long addr, bytes;
    if (!PyArg_ParseTuple(rest, "KK:tensor_write_device", &addr, &bytes)) {
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
PyObject *
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
