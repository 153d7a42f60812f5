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

from ._api import (DATA_TYPES, ML, OPERATORS, DataType, MLContext, MLGraph,
                   MLGraphBuilder, MLOperand, MLTensor, ml)
from ._errors import (AbortError, DataError, DOMException, InvalidStateError,
                      NotSupportedError, OperationError, SecurityError,
                      UnknownError)

__version__ = "0.1.0"

__all__ = [
    "ml", "ML", "MLContext", "MLGraphBuilder", "MLOperand", "MLGraph", "MLTensor",
    "DOMException", "InvalidStateError", "DataError", "NotSupportedError",
    "OperationError", "UnknownError", "AbortError", "SecurityError",
    "DATA_TYPES", "OPERATORS", "DataType",
]
