"""The spec's exceptions: TypeError is Python's own; each DOMException name is
a subclass of webnn.DOMException (python-api.md, "Errors")."""


class DOMException(Exception):
    """Base of the spec's DOMException errors; `name` is the DOMException name."""

    name = "DOMException"


def _make(name, doc):
    return type(name, (DOMException,), {"name": name, "__doc__": doc, "__module__": "webnn"})


InvalidStateError = _make("InvalidStateError", "The object is in a state that forbids the call.")
DataError = _make("DataError", "The data given is not valid.")
NotSupportedError = _make("NotSupportedError", "The operation or device is not supported.")
OperationError = _make("OperationError", "The operation failed for an operation-specific reason.")
UnknownError = _make("UnknownError", "The operation failed for an unknown transient reason.")
AbortError = _make("AbortError", "The operation was aborted.")
SecurityError = _make("SecurityError", "The operation is insecure.")

class UnknownOptionWarning(UserWarning):
    """An options dict held a member the IDL dictionary does not define: it
    was ignored, as WebIDL ignores unknown dictionary members (the message
    names it and the nearest known member).  An unknown keyword argument is
    a TypeError instead, as in any Python call."""


UnknownOptionWarning.__module__ = "webnn"

__all__ = [
    "DOMException", "InvalidStateError", "DataError", "NotSupportedError",
    "OperationError", "UnknownError", "AbortError", "SecurityError",
    "UnknownOptionWarning",
]
