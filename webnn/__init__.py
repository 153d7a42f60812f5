"""webnn: the W3C Web Neural Network API for Python, on a C core with CPU
(BLIS) and NVIDIA GPU (CUDA, cuBLAS, cuDNN) backends.

    import numpy as np, webnn
    ctx = webnn.ml.create_context()
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
    g = b.build({"y": b.relu(x)})
    ctx.compute(g, {"x": np.ones((2, 3), np.float32)})
"""
import os as _os

# BLIS threads very large products itself (OpenMP; webnn's kernels use a pool
# of their own), and libgomp's threads spin for a long time after each by
# default: on few cores that spin holds up the pool's work that follows
# (measured: 50 small ops right after a 2048 matmul, 0.9-1.4 ms with this
# setting, 1.4-3.7 ms without).  Must be set before libgomp loads; a user's
# own setting wins.
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["GOMP_SPINCOUNT"] = "20000"

from ._version import __version__


def _core_import_error(e):
    """An ImportError that says what is wrong with the install: a library the
    compiled core needs cannot be loaded (named, with what to install), or
    the core is absent (a checkout that was not built)."""
    pkg = _os.path.dirname(_os.path.abspath(__file__))
    msg = str(e)
    # the loader's message: "libblis.so.4: cannot open shared object file: ..."
    missing = next((p.strip() for p in msg.split(":")
                    if p.strip().startswith("lib") and ".so" in p), None)
    if missing:
        hint = ""
        if missing.startswith("libblis"):
            hint = (" BLIS is not installed, or not where this build found it: install it "
                    "(Debian/Ubuntu: apt-get install libblis4; Fedora: dnf install blis; "
                    "conda: conda install -c conda-forge blis) or install webnn's wheel "
                    "(pip install webnn), which carries its own copy.")
        elif missing.startswith("libgomp"):
            hint = " Install GCC's OpenMP runtime (Debian/Ubuntu: apt-get install libgomp1)."
        return ImportError(f"webnn: cannot load the compiled core in {pkg}: the shared "
                           f"library {missing} is missing ({msg}).{hint}")
    if isinstance(e, ModuleNotFoundError) or "'_core'" in msg:
        return ImportError(
            f"webnn: the compiled core (webnn._core) is not in {pkg}: a source checkout "
            "that was not built, or a broken install. Build it with `make build` (or "
            "`pip install .`), or install a wheel (`pip install webnn`).")
    return ImportError(f"webnn: cannot load the compiled core in {pkg}: {msg}")


try:
    from . import _core  # noqa: F401  (the C extension: everything else needs it)
except ImportError as _e:
    raise _core_import_error(_e) from _e

from ._api import (DATA_TYPES, ML, OPERATORS, DataType, MLContext,  # noqa: E402
                   MLGraph, MLGraphBuilder, MLOperand, MLTensor, ml)
from ._errors import (AbortError, DataError, DOMException,  # noqa: E402
                      InvalidStateError, NotSupportedError, OperationError,
                      SecurityError, UnknownError, UnknownOptionWarning)

__all__ = [
    "ml", "ML", "MLContext", "MLGraphBuilder", "MLOperand", "MLGraph", "MLTensor",
    "DOMException", "InvalidStateError", "DataError", "NotSupportedError",
    "OperationError", "UnknownError", "AbortError", "SecurityError",
    "UnknownOptionWarning", "DATA_TYPES", "OPERATORS", "DataType",
]
