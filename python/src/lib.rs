//! Python bindings for ctxscribe (filled in by the Python issue).
