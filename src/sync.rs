//! Lock poisoning, handled one way: recovered. What the host guards with a
//! `std::sync::Mutex` (the SQLite connection, the fleet's table of held units, a
//! unit's spend counters) is left consistent by every writer between statements, so
//! a panic on one task must not turn every later lock into a second panic that
//! takes the whole host — and every other mission — down with it.

use std::sync::{Mutex, MutexGuard, PoisonError};

pub trait LockUnpoisoned<T: ?Sized> {
    /// Lock, taking over the guard of a lock poisoned by a panicking holder.
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> LockUnpoisoned<T> for Mutex<T> {
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_still_locks_and_keeps_its_value() {
        let m = std::sync::Arc::new(Mutex::new(1));
        let held = m.clone();
        let _ = std::thread::spawn(move || {
            let _guard = held.lock().unwrap();
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        *m.lock_unpoisoned() += 1;
        assert_eq!(*m.lock_unpoisoned(), 2);
    }
}
