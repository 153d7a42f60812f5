"""webnn: the W3C Web Neural Network API for Python, on a C core with CPU
(BLIS) and NVIDIA GPU (CUDA, cuBLAS, cuDNN) backends.

    import numpy as np, webnn
    ctx = webnn.ml.create_context()
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
    g = b.build({"y": b.relu(x)})
    ctx.compute(g, {"x": np.ones((2, 3), np.float32)})
"""
from ._api import (DATA_TYPES, ML, OPERATORS, MLContext, MLGraph,
                   MLGraphBuilder, MLOperand, MLTensor, ml)
from ._errors import (AbortError, DataError, DOMException, InvalidStateError,
                      NotSupportedError, OperationError, SecurityError,
                      UnknownError)

__version__ = "0.1.0"

__all__ = [
    "ml", "ML", "MLContext", "MLGraphBuilder", "MLOperand", "MLGraph", "MLTensor",
    "DOMException", "InvalidStateError", "DataError", "NotSupportedError",
    "OperationError", "UnknownError", "AbortError", "SecurityError",
    "DATA_TYPES", "OPERATORS",
]
