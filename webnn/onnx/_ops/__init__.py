"""The ONNX operators' conversions, one module per family.  Each conversion
is fn(conv, node, attrs) -> output value(s) (conv: the _Converter), put in
the one operator table _convert._OPS by @_reg(*op_types) when _convert
imports this package."""
from . import (control, elementwise, nn, normalization, quantization,  # noqa: F401
               recurrent, sampling, sequence, signal, tensor)
