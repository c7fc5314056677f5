//! A small pool of reusable, expensive per-call objects (decoder states, VAD contexts).

use std::sync::Mutex;

/// Keeps objects returned after use so the next call does not allocate them again.
/// The pool never holds more than the peak number of concurrent users.
#[derive(Debug)]
pub(crate) struct Pool<T> {
    idle: Mutex<Vec<T>>,
}

impl<T> Pool<T> {
    pub(crate) fn new() -> Self {
        Pool {
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Takes an idle object, or makes one with `make`.
    pub(crate) fn take_or<E>(&self, make: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let idle = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        match idle {
            Some(item) => Ok(item),
            None => make(),
        }
    }

    /// Returns an object for reuse.
    pub(crate) fn give_back(&self, item: T) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_returned_items() {
        let pool = Pool::new();
        let a: Result<u32, ()> = pool.take_or(|| Ok(1));
        assert_eq!(a, Ok(1));
        pool.give_back(7);
        assert_eq!(pool.take_or(|| Ok::<_, ()>(2)), Ok(7));
        assert_eq!(pool.take_or(|| Ok::<_, ()>(3)), Ok(3));
    }
}
