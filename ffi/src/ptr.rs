//! Turning the caller's pointers into references, with the NULL checks in one place, and
//! the panic guard of infallible calls.
//!
//! Each helper is `unsafe` with the contract it relies on; the exported functions pass
//! their own contract (stated in their `# Safety` sections) down to these.

use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;

/// A pointer argument that must not be NULL was NULL: the argument's name. Becomes
/// `CTXSCRIBE_STATUS_NULL_ARGUMENT` (`crate::error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NullArgument(pub(crate) &'static str);

/// `&T` from a pointer the caller passed as `argument`.
///
/// # Safety
///
/// `ptr` is NULL or points to a live `T` that nothing mutates during `'a`.
pub(crate) unsafe fn try_ref<'a, T>(
    ptr: *const T,
    argument: &'static str,
) -> Result<&'a T, NullArgument> {
    // SAFETY: NULL or live and not mutated during 'a, by this function's contract.
    unsafe { ptr.as_ref() }.ok_or(NullArgument(argument))
}

/// `&mut T` from a pointer the caller passed as `argument`.
///
/// # Safety
///
/// `ptr` is NULL or points to a live `T` that nothing else accesses during `'a`.
pub(crate) unsafe fn try_mut<'a, T>(
    ptr: *mut T,
    argument: &'static str,
) -> Result<&'a mut T, NullArgument> {
    // SAFETY: NULL or live and exclusively ours during 'a, by this function's contract.
    unsafe { ptr.as_mut() }.ok_or(NullArgument(argument))
}

/// A NUL-terminated string the caller passed as `argument`.
///
/// # Safety
///
/// `ptr` is NULL or points to a NUL-terminated string that stays valid and unchanged
/// during `'a`.
pub(crate) unsafe fn try_c_str<'a>(
    ptr: *const c_char,
    argument: &'static str,
) -> Result<&'a CStr, NullArgument> {
    if ptr.is_null() {
        return Err(NullArgument(argument));
    }
    // SAFETY: not NULL, NUL-terminated and valid during 'a, by this function's contract.
    Ok(unsafe { CStr::from_ptr(ptr) })
}

/// An optional NUL-terminated string: `None` for NULL.
///
/// # Safety
///
/// As [`try_c_str`].
pub(crate) unsafe fn opt_c_str<'a>(ptr: *const c_char) -> Option<&'a CStr> {
    // SAFETY: as `try_c_str`, by this function's contract.
    unsafe { try_c_str(ptr, "") }.ok()
}

/// `len` elements at `ptr`, which the caller passed as `argument`.
///
/// # Safety
///
/// `ptr` is NULL or points to `len` initialised, properly aligned `T`s that stay valid
/// and unchanged during `'a`.
pub(crate) unsafe fn try_slice<'a, T>(
    ptr: *const T,
    len: usize,
    argument: &'static str,
) -> Result<&'a [T], NullArgument> {
    if ptr.is_null() {
        return Err(NullArgument(argument));
    }
    // SAFETY: not NULL, and `len` valid, aligned, unchanged elements during 'a, by this
    // function's contract (which implies `len * size_of::<T>() <= isize::MAX`).
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Where an output handle goes; checked before any work is done.
pub(crate) fn out_slot<T>(
    out: *mut *mut T,
    argument: &'static str,
) -> Result<NonNull<*mut T>, NullArgument> {
    NonNull::new(out).ok_or(NullArgument(argument))
}

/// Moves `value` to the heap and stores the handle in `slot`.
///
/// # Safety
///
/// `slot` is valid for writing one pointer.
pub(crate) unsafe fn write_out<T>(slot: NonNull<*mut T>, value: T) {
    let handle = Box::into_raw(Box::new(value));
    // SAFETY: valid for writing one pointer, by this function's contract.
    unsafe { slot.as_ptr().write(handle) };
}

/// The body of a `_new` function: a new handle to `value()`, or NULL if that panics.
pub(crate) fn new_handle<T>(value: impl FnOnce() -> T) -> *mut T {
    guard_or(std::ptr::null_mut(), || Box::into_raw(Box::new(value())))
}

/// The body of a `_free` function: frees a handle made by [`new_handle`] or
/// [`write_out`]; NULL does nothing, and a panic while dropping is caught.
///
/// # Safety
///
/// `ptr` is NULL or came from `Box::into_raw(Box<T>)`, was not freed yet, and is not
/// used afterwards.
pub(crate) unsafe fn free<T>(ptr: *mut T) {
    if !ptr.is_null() {
        // SAFETY: from `Box::into_raw`, freed exactly once, by this function's contract.
        guard_or((), || drop(unsafe { Box::from_raw(ptr) }));
    }
}

/// Runs the body of an infallible exported function (an accessor, a `_free`), returning
/// `fallback` if it panics.
pub(crate) fn guard_or<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}
