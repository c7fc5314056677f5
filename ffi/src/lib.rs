//! C ABI for ctxscribe (filled in by the C ABI issue).
