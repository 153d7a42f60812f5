"""DLPack on a GPU context (issue 14): MLTensor.__dlpack__ exports the tensor's
own device memory (kDLCUDA, no copy, the storage pinned until the consumer's
deleter runs), and CUDA producers given to write_tensor(), compute(),
constant() and create_constant_tensor() are copied device to device.

Every test needs a GPU context and is skipped without one.  Without a GPU
they run on the CPU emulation of the CUDA backend (test_cuda_emu.py runs this
file with WEBNN_CUDA_LIBRARY=the emulated library), where "device memory" is
host memory: the tests then read and write it through the exported pointer,
give the context host arrays dressed as CUDA producers (FakeCuda), and read
the emulation's counters (copies per cudaMemcpyKind, cudaMalloc'd blocks
alive) to tell a device-to-device copy from a host round trip and to see the
storage freed.  The tests marked `realgpu` need a real GPU and PyTorch with
CUDA; they are skipped elsewhere.

The capsules are parsed here with ctypes (a minimal consumer), with the
DLPack ABI's structs declared below."""
import ctypes
import gc
import os
import threading

import numpy as np
import pytest

import webnn
from webnn import _core

GPU = _core.device_available("gpu")
pytestmark = pytest.mark.skipif(not GPU, reason="no usable GPU context (libwebnn_cuda.so, "
                                                 "driver or device missing)")


def _emu():
    """The emulated CUDA library when it is the one loaded, else None."""
    path = os.environ.get("WEBNN_CUDA_LIBRARY")
    if not GPU or not path:
        return None
    try:
        lib = ctypes.CDLL(path)     # the loaded one: dlopen returns its handle
        lib.wnn_emu_copies.restype = ctypes.c_ulonglong
        lib.wnn_emu_copies.argtypes = [ctypes.c_int]
        lib.wnn_emu_device_syncs.restype = ctypes.c_ulonglong
        lib.wnn_emu_live_allocs.restype = ctypes.c_longlong
    except (OSError, AttributeError):
        return None
    return lib


EMU = _emu()
emu_only = pytest.mark.skipif(EMU is None, reason="reads device memory from the host: "
                                                  "only on the CPU emulation of the backend")
H2D, D2H, D2D = 1, 2, 3   # cudaMemcpyKind


# ---- the DLPack ABI (dlpack.h v1.0) ---------------------------------------------
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DELETER_V = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                                     ("deleter", DELETER_V), ("flags", ctypes.c_uint64),
                                     ("dl_tensor", DLTensor)]

FLAG_READ_ONLY, FLAG_IS_COPIED = 1, 2
# capsule names live as long as the module (PyCapsule_SetName keeps the pointer)
NAMES = {False: b"dltensor", True: b"dltensor_versioned"}
USED = {False: b"used_dltensor", True: b"used_dltensor_versioned"}

_api = ctypes.pythonapi
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class Consumer:
    """A minimal DLPack consumer: reads the capsule's struct and consumes it
    (renames the capsule, calls the deleter when released)."""

    def __init__(self, cap):
        self.versioned = bool(_api.PyCapsule_IsValid(cap, NAMES[True]))
        assert self.versioned or _api.PyCapsule_IsValid(cap, NAMES[False]), cap
        ptr = _api.PyCapsule_GetPointer(cap, NAMES[self.versioned])
        kind = DLManagedTensorVersioned if self.versioned else DLManagedTensor
        self.m = kind.from_address(ptr)
        self.ptr = ptr
        assert _api.PyCapsule_SetName(cap, USED[self.versioned]) == 0
        t = self.m.dl_tensor
        self.device = (t.device.device_type, t.device.device_id)
        self.dtype = (t.dtype.code, t.dtype.bits, t.dtype.lanes)
        self.shape = tuple(t.shape[i] for i in range(t.ndim))
        self.strides = None if not t.strides else tuple(t.strides[i] for i in range(t.ndim))
        self.data = t.data + t.byte_offset
        self.flags = self.m.flags if self.versioned else 0
        self.version = (self.m.version.major, self.m.version.minor) if self.versioned else None
        self.released = False

    def array(self, dtype):
        """The memory as an ndarray (valid only on the emulation: host memory)."""
        n = int(np.prod(self.shape))
        buf = (ctypes.c_char * (n * np.dtype(dtype).itemsize)).from_address(self.data)
        return np.frombuffer(buf, dtype).reshape(self.shape)

    def release(self):
        assert not self.released
        self.released = True
        kind = DLManagedTensorVersioned if self.versioned else DLManagedTensor
        self.m.deleter(ctypes.cast(self.ptr, ctypes.POINTER(kind)))


class FakeCuda:
    """A CUDA DLPack producer as the emulation understands one: a host array
    (the emulated device memory) in a DLManagedTensor claiming kDLCUDA."""

    def __init__(self, a, device_id=0, dtype=None, versioned=True):
        self.a = a
        self.device_id = device_id
        self.dtype = dtype or ({"f": 2, "i": 0, "u": 1}[a.dtype.kind], 8 * a.dtype.itemsize, 1)
        self.versioned = versioned
        self.streams = []
        self._keep = []

    def __dlpack_device__(self):
        return (2, self.device_id)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.streams.append(stream)
        a = self.a
        shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        strides = (ctypes.c_int64 * max(a.ndim, 1))(*(s // a.itemsize for s in a.strides))
        t = DLTensor(ctypes.c_void_p(a.ctypes.data), DLDevice(2, self.device_id), a.ndim,
                     DLDataType(*self.dtype), ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
                     ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)), 0)
        versioned = self.versioned and max_version is not None and max_version[0] >= 1
        if versioned:
            m = DLManagedTensorVersioned(DLPackVersion(1, 0), None, DELETER_V(), 0, t)
        else:
            m = DLManagedTensor(t, None, DELETER())    # no deleter: we own it
        self._keep.append((shape, strides, m))
        return _api.PyCapsule_New(ctypes.addressof(m), NAMES[versioned], None)


class OldFakeCuda(FakeCuda):
    """A producer older than DLPack 1.0's protocol (no max_version)."""

    def __dlpack__(self, stream=None):
        return super().__dlpack__(stream=stream)


# ---- fixtures -------------------------------------------------------------------
@pytest.fixture
def gctx():
    ctx = webnn.ml.create_context(device_type="gpu")
    yield ctx
    ctx.destroy()


X = np.arange(6, dtype=np.float32).reshape(2, 3)


def tensor(ctx, data=X, readable=True, writable=True):
    t = ctx.create_tensor({"dataType": str(data.dtype), "shape": list(data.shape),
                           "readable": readable, "writable": writable})
    if writable:
        ctx.write_tensor(t, data)
    return t


def timeline_drained(ctx):
    """Everything queued so far has run (a read waits for the timeline; the
    probe tensor stays, so that it does not change the count of blocks)."""
    probe = getattr(ctx, "_test_probe", None)
    if probe is None:
        probe = ctx._test_probe = ctx.create_tensor({"dataType": "uint8", "shape": [1],
                                                      "readable": True})
    ctx.read_tensor(probe)


def settle(ctx):
    """Tensors of earlier tests collected and freed, this context's timeline
    drained: the emulation's counters then move only with what follows."""
    gc.collect()
    timeline_drained(ctx)


# ---- export -----------------------------------------------------------------------
def test_dlpack_device_is_cuda(gctx):
    t = tensor(gctx)
    assert t.__dlpack_device__() == (2, gctx._device_id)
    assert repr(t).startswith("MLTensor(data_type='float32', shape=(2, 3), device='gpu'")


@pytest.mark.parametrize("versioned", [True, False])
def test_export_describes_the_tensor(gctx, versioned):
    t = tensor(gctx, np.arange(24, dtype=np.int32).reshape(2, 3, 4))
    c = Consumer(t.__dlpack__(max_version=(1, 0) if versioned else None))
    assert c.versioned is versioned
    assert c.device == (2, gctx._device_id)
    assert c.dtype == (0, 32, 1)                          # kDLInt, 32 bits
    assert c.shape == (2, 3, 4) and c.strides == (12, 4, 1)
    assert c.data != 0
    if versioned:
        assert c.version == (1, 0) and c.flags == 0      # writable, not a copy
    c.release()


@pytest.mark.parametrize("dt,code", [("float32", (2, 32)), ("float16", (2, 16)),
                                     ("int32", (0, 32)), ("uint32", (1, 32)),
                                     ("int64", (0, 64)), ("uint64", (1, 64)),
                                     ("int8", (0, 8)), ("uint8", (1, 8))])
def test_export_dtype_codes(gctx, dt, code):
    t = tensor(gctx, np.ones(4, dt))
    c = Consumer(t.__dlpack__(max_version=(1, 0)))
    assert c.dtype == code + (1,)
    c.release()


@emu_only
def test_export_is_the_tensor_storage_not_a_copy(gctx):
    t = tensor(gctx)
    settle(gctx)
    d2h = EMU.wnn_emu_copies(D2H)
    c1 = Consumer(t.__dlpack__(max_version=(1, 0)))
    c2 = Consumer(t.__dlpack__())
    assert c1.data == c2.data                           # one storage, twice
    assert EMU.wnn_emu_copies(D2H) == d2h               # nothing went to the host
    np.testing.assert_array_equal(c1.array(np.float32), X)
    # a write through the pointer is the tensor's data
    c1.array(np.float32)[1, 2] = 42.0
    assert gctx.read_tensor(t)[1, 2] == 42.0
    # and a write by the context is seen through the pointer
    gctx.write_tensor(t, X * 3)
    c3 = Consumer(t.__dlpack__())     # the export waits for the queued write
    np.testing.assert_array_equal(c3.array(np.float32), X * 3)
    for c in (c1, c2, c3):
        c.release()


@emu_only
def test_export_waits_for_the_device(gctx):
    t = tensor(gctx)
    syncs = EMU.wnn_emu_device_syncs()
    Consumer(t.__dlpack__(stream=1)).release()
    assert EMU.wnn_emu_device_syncs() == syncs + 1


@emu_only
def test_export_sees_a_dispatch_queued_before(gctx):
    b = webnn.MLGraphBuilder(gctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
    g = b.build({"y": b.mul(x, b.constant("float32", 2.0))})
    tin, tout = tensor(gctx), tensor(gctx, np.zeros((2, 3), np.float32))
    gctx.dispatch(g, {"x": tin}, {"y": tout})
    c = Consumer(tout.__dlpack__())
    np.testing.assert_array_equal(c.array(np.float32), X * 2)
    c.release()


@emu_only
def test_destroy_while_exported_is_deferred_to_the_deleter(gctx):
    settle(gctx)
    live = EMU.wnn_emu_live_allocs()
    t = tensor(gctx)
    assert EMU.wnn_emu_live_allocs() == live + 1
    c = Consumer(t.__dlpack__(max_version=(1, 0)))
    t.destroy()
    timeline_drained(gctx)
    assert EMU.wnn_emu_live_allocs() == live + 1        # pinned: still there
    np.testing.assert_array_equal(c.array(np.float32), X)
    with pytest.raises(TypeError, match="destroyed"):
        t.__dlpack__()
    c.release()
    timeline_drained(gctx)
    assert EMU.wnn_emu_live_allocs() == live            # freed by the deleter


@emu_only
def test_unconsumed_capsule_releases_the_tensor(gctx):
    settle(gctx)
    live = EMU.wnn_emu_live_allocs()
    t = tensor(gctx)
    cap = t.__dlpack__(max_version=(1, 0))
    t.destroy()
    timeline_drained(gctx)
    assert EMU.wnn_emu_live_allocs() == live + 1
    del cap
    gc.collect()
    timeline_drained(gctx)
    assert EMU.wnn_emu_live_allocs() == live


@emu_only
def test_deleter_on_another_thread_without_the_gil(gctx):
    settle(gctx)
    live = EMU.wnn_emu_live_allocs()
    ts = [tensor(gctx) for _ in range(8)]
    cs = [Consumer(t.__dlpack__(max_version=(1, 0))) for t in ts]
    for t in ts:
        t.destroy()
    # ctypes calls the C deleter with the GIL released
    th = [threading.Thread(target=c.release) for c in cs]
    for x in th:
        x.start()
    for x in th:
        x.join(30)
    timeline_drained(gctx)
    assert EMU.wnn_emu_live_allocs() == live


@emu_only
def test_context_destroyed_while_exported():
    ctx = webnn.ml.create_context(device_type="gpu")
    gc.collect()
    live = EMU.wnn_emu_live_allocs()
    t = tensor(ctx)
    c = Consumer(t.__dlpack__())
    ctx.destroy()
    # the memory stays valid until the consumer lets go, then it is freed
    np.testing.assert_array_equal(c.array(np.float32), X)
    c.release()
    del t, ctx
    gc.collect()
    assert EMU.wnn_emu_live_allocs() == live


def test_export_of_a_lost_context_fails(gctx):
    t = tensor(gctx)
    gctx.destroy()
    with pytest.raises(webnn.InvalidStateError, match="lost"):
        t.__dlpack__()


def test_export_errors(gctx):
    w = tensor(gctx, readable=False)
    with pytest.raises(TypeError, match="not readable"):
        w.__dlpack__()
    t = tensor(gctx)
    with pytest.raises(BufferError, match=r"\(2, 1\)"):
        t.__dlpack__(dl_device=(2, gctx._device_id + 1))
    with pytest.raises(BufferError, match="copy=False"):
        t.__dlpack__(dl_device=(1, 0), copy=False)
    with pytest.raises(ValueError, match="stream"):
        t.__dlpack__(stream=0)
    with pytest.raises(TypeError, match="stream"):
        t.__dlpack__(stream="default")
    with pytest.raises(TypeError, match="dl_device"):
        t.__dlpack__(dl_device="cuda")
    # streams the array API allows are accepted
    for s in (None, -1, 1, 2):
        Consumer(t.__dlpack__(stream=s)).release()


def test_export_to_the_host_is_a_copy(gctx):
    t = tensor(gctx)
    a = np.from_dlpack(t, device="cpu")
    np.testing.assert_array_equal(a, X)
    a[0, 0] = 7
    assert gctx.read_tensor(t)[0, 0] == 0                # a copy
    c = Consumer(t.__dlpack__(dl_device=(1, 0), max_version=(1, 0)))
    assert c.device == (1, 0)
    np.testing.assert_array_equal(c.array(np.float32), X)
    c.release()


@emu_only
def test_export_copy_true_is_a_device_copy(gctx):
    settle(gctx)
    live = EMU.wnn_emu_live_allocs()
    t = tensor(gctx)
    timeline_drained(gctx)
    d2d, d2h = EMU.wnn_emu_copies(D2D), EMU.wnn_emu_copies(D2H)
    mine = Consumer(t.__dlpack__())
    c = Consumer(t.__dlpack__(max_version=(1, 0), copy=True))
    assert c.device == (2, gctx._device_id)
    assert c.flags == FLAG_IS_COPIED
    assert c.data != mine.data
    assert EMU.wnn_emu_copies(D2D) == d2d + 1 and EMU.wnn_emu_copies(D2H) == d2h
    np.testing.assert_array_equal(c.array(np.float32), X)
    c.array(np.float32)[0, 0] = 9
    assert gctx.read_tensor(t)[0, 0] == 0
    mine.release()
    assert EMU.wnn_emu_live_allocs() == live + 2         # t and the copy
    c.release()
    t.destroy()
    timeline_drained(gctx)
    assert EMU.wnn_emu_live_allocs() == live


# ---- import ------------------------------------------------------------------------
@emu_only
@pytest.mark.parametrize("make", [FakeCuda, OldFakeCuda], ids=["dlpack-1.0", "pre-1.0"])
def test_write_tensor_copies_device_to_device(gctx, make):
    t = tensor(gctx, np.zeros((2, 3), np.float32))
    src = make(X.copy())
    settle(gctx)
    h2d, d2d = EMU.wnn_emu_copies(H2D), EMU.wnn_emu_copies(D2D)
    gctx.write_tensor(t, src)
    assert EMU.wnn_emu_copies(D2D) == d2d + 1 and EMU.wnn_emu_copies(H2D) == h2d
    assert src.streams == [1]                   # ready on the legacy default stream
    src.a[...] = -1                             # the write has finished: a copy
    np.testing.assert_array_equal(gctx.read_tensor(t), X)


@emu_only
def test_compute_and_constants_copy_device_to_device(gctx):
    b = webnn.MLGraphBuilder(gctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
    settle(gctx)
    h2d, d2d = EMU.wnn_emu_copies(H2D), EMU.wnn_emu_copies(D2D)
    c1 = b.constant(FakeCuda(X + 10))
    c2 = b.constant({"dataType": "float32", "shape": [2, 3]}, FakeCuda(X * 100))
    assert c1.shape == (2, 3) and c1.data_type == "float32"
    ct = gctx.create_constant_tensor({"dataType": "float32", "shape": [2, 3]},
                                     FakeCuda(X * 1000))
    assert ct.constant
    c3 = b.constant(ct)
    assert EMU.wnn_emu_copies(D2D) == d2d + 3 and EMU.wnn_emu_copies(H2D) == h2d
    g = b.build({"y": b.add(b.add(b.add(x, c1), c2), c3)})
    d2d = EMU.wnn_emu_copies(D2D)
    y = gctx.compute(g, {"x": FakeCuda(X.copy())})["y"]
    assert EMU.wnn_emu_copies(D2D) >= d2d + 1
    np.testing.assert_array_equal(y, X + (X + 10) + X * 100 + X * 1000)


def test_wrong_producers_are_clear_errors(gctx):
    t = tensor(gctx, np.zeros((2, 3), np.float32))
    with pytest.raises(TypeError, match=r"not C-contiguous.*\(1, 2\).*\(2, 3\).*\(3, 1\)"):
        gctx.write_tensor(t, FakeCuda(np.arange(6, dtype=np.float32).reshape(3, 2).T))
    with pytest.raises(TypeError, match="int32 does not match the expected data type float32"):
        gctx.write_tensor(t, FakeCuda(np.zeros((2, 3), np.int32)))
    with pytest.raises(TypeError, match="float64 is not an MLOperandDataType"):
        gctx.write_tensor(t, FakeCuda(np.zeros((2, 3), np.float64)))
    with pytest.raises(TypeError, match="bfloat16 is not an MLOperandDataType"):
        gctx.write_tensor(t, FakeCuda(np.zeros((2, 3), np.uint16), dtype=(4, 16, 1)))
    with pytest.raises(TypeError, match="float32x4 is not"):
        gctx.write_tensor(t, FakeCuda(np.zeros((2, 3), np.float32), dtype=(2, 32, 4)))
    with pytest.raises(TypeError, match="CUDA device 3, the context's is device 0"):
        gctx.write_tensor(t, FakeCuda(np.zeros((2, 3), np.float32), device_id=3))
    with pytest.raises(TypeError, match="byte length 12 differs"):
        gctx.write_tensor(t, FakeCuda(np.zeros(3, np.float32)))
    b = webnn.MLGraphBuilder(gctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
    g = b.build({"y": b.relu(x)})
    with pytest.raises(TypeError, match=r"compute: input 'x': array shape \(3, 2\)"):
        gctx.compute(g, {"x": FakeCuda(np.zeros((3, 2), np.float32))})
    with pytest.raises(TypeError, match="constant.*float64"):
        webnn.MLGraphBuilder(gctx).constant(FakeCuda(np.zeros(2, np.float64)))
    with pytest.raises(TypeError, match="byte length 8 differs from the descriptor's 24"):
        gctx.create_constant_tensor({"dataType": "float32", "shape": [2, 3]},
                                    FakeCuda(np.zeros(2, np.float32)))
    # a write into a tensor that is not writable names the tensor first
    r = tensor(gctx, readable=True, writable=False)
    with pytest.raises(TypeError, match="not writable"):
        gctx.write_tensor(r, FakeCuda(np.zeros((2, 3), np.int32)))
    t.destroy()
    with pytest.raises(TypeError, match="destroyed"):
        gctx.write_tensor(t, FakeCuda(np.zeros((2, 3), np.int32)))
    other = webnn.ml.create_context(device_type="gpu")
    try:
        with pytest.raises(TypeError, match="another context"):
            other.write_tensor(r, FakeCuda(X.copy()))
    finally:
        other.destroy()


def test_cuda_producer_on_a_cpu_context_is_a_type_error():
    ctx = webnn.ml.create_context(device_type="cpu")
    try:
        t = ctx.create_tensor({"dataType": "float32", "shape": [2, 3], "writable": True})
        with pytest.raises(TypeError, match=r"device type 2.*CPU context.*cpu\(\)"):
            ctx.write_tensor(t, FakeCuda(X.copy()))
    finally:
        ctx.destroy()


# ---- a real GPU with PyTorch ---------------------------------------------------------
def _torch_cuda():
    if EMU is not None:
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


TORCH = _torch_cuda()
realgpu = pytest.mark.skipif(TORCH is None, reason="needs a real GPU and PyTorch with CUDA")


@realgpu
def test_torch_round_trip_without_host_copies(gctx):
    torch = TORCH
    t = tensor(gctx)
    tt = torch.from_dlpack(t)
    assert tt.is_cuda and tt.shape == (2, 3) and tt.dtype == torch.float32
    assert tt.data_ptr() == _core.dlpack_info(t.__dlpack__())[2]
    np.testing.assert_array_equal(tt.cpu().numpy(), X)
    tt.mul_(2)                                   # the consumer writes the tensor's memory
    torch.cuda.synchronize()
    np.testing.assert_array_equal(gctx.read_tensor(t), X * 2)
    src = torch.arange(6, dtype=torch.float32, device="cuda").reshape(2, 3) + 1
    gctx.write_tensor(t, src)
    np.testing.assert_array_equal(gctx.read_tensor(t), X + 1)
    b = webnn.MLGraphBuilder(gctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
    g = b.build({"y": b.add(x, b.constant(src))})
    np.testing.assert_array_equal(gctx.compute(g, {"x": src})["y"], (X + 1) * 2)
    with pytest.raises(TypeError, match="not C-contiguous"):
        gctx.write_tensor(t, torch.zeros(3, 2, device="cuda").t())
    del tt
    t.destroy()
