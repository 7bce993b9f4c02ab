//! [`Elements`]: the elements of one [`Buffer`](crate::Buffer) variant, either owned (a
//! `Vec`) or borrowed from foreign memory that someone else owns (a numpy array handed to the
//! Python package), so an input can reach Kiln without a copy.
//!
//! Reading is the same for both (`Deref<Target = [T]>`). Writing is copy-on-write: the first
//! mutable access to foreign elements copies them into an owned `Vec`, so Kiln never writes
//! through a borrowed pointer. What this type deliberately does not do: grow in place
//! (`push`, `extend`) — convert with [`Elements::into_vec`] first; and it never frees or
//! touches foreign memory beyond reading it, the owner's `Drop` does that.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::any::Any;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;

/// The elements of a host buffer: an owned `Vec<T>` or foreign memory kept alive by an owner.
pub struct Elements<T>(Repr<T>);

enum Repr<T> {
    Owned(Vec<T>),
    Foreign {
        ptr: NonNull<T>,
        len: usize,
        /// Keeps the memory alive and unchanged; dropped with the last clone.
        owner: Arc<dyn Any + Send + Sync>,
    },
}

// SAFETY: owned elements are a `Vec<T>`; foreign ones are shared, immutable `T`s (like an
// `Arc<[T]>`) whose owner is `Send + Sync` by its type and whose memory the `from_foreign`
// contract keeps valid and unwritten from any thread. Both are sound to send or share when
// `T` is `Send + Sync`.
unsafe impl<T: Send + Sync> Send for Elements<T> {}
// SAFETY: as for `Send`: `&Elements<T>` only ever hands out `&[T]`.
unsafe impl<T: Send + Sync> Sync for Elements<T> {}

impl<T> Elements<T> {
    /// Elements borrowed from foreign memory: `len` values of `T` starting at `ptr`, kept
    /// alive by `owner` (cloning the result clones the `Arc`, not the elements).
    ///
    /// # Safety
    /// For as long as `owner` (or any clone of the `Arc`) is alive:
    /// - `ptr` is non-null, aligned for `T` and points at `len` consecutive, initialised,
    ///   valid values of `T` (for `bool`: every byte 0 or 1), `len * size_of::<T>()` bytes
    ///   in one allocation (at most `isize::MAX`);
    /// - nothing writes that memory (not the owner, not another thread, not Python code);
    /// - the memory may be read from any thread (the owner's `Send + Sync` covers releasing
    ///   it on whichever thread drops the last clone).
    pub unsafe fn from_foreign(
        ptr: NonNull<T>,
        len: usize,
        owner: Arc<dyn Any + Send + Sync>,
    ) -> Self {
        Elements(Repr::Foreign { ptr, len, owner })
    }

    /// True when the elements are borrowed from foreign memory (not yet copied).
    pub fn is_foreign(&self) -> bool {
        matches!(self.0, Repr::Foreign { .. })
    }

    /// The elements as a slice.
    pub fn as_slice(&self) -> &[T] {
        match &self.0 {
            Repr::Owned(v) => v,
            // SAFETY: `from_foreign`'s contract: valid, aligned, initialised and unwritten
            // while `owner` (held by `self`) lives.
            Repr::Foreign { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr().cast_const(), *len)
            },
        }
    }
}

impl<T: Clone> Elements<T> {
    /// The elements as a `Vec`: no copy when owned, one copy when foreign.
    pub fn into_vec(self) -> Vec<T> {
        match self.0 {
            Repr::Owned(v) => v,
            Repr::Foreign { .. } => self.as_slice().to_vec(),
        }
    }

    /// The elements as a mutable slice, copying foreign elements into an owned `Vec` first.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.make_mut()
    }

    /// The owned `Vec`, after copying foreign elements into one (copy-on-write).
    pub fn make_mut(&mut self) -> &mut Vec<T> {
        if let Repr::Foreign { .. } = self.0 {
            self.0 = Repr::Owned(self.as_slice().to_vec());
        }
        match &mut self.0 {
            Repr::Owned(v) => v,
            Repr::Foreign { .. } => unreachable!("just made owned"),
        }
    }
}

impl<T> Deref for Elements<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Clone> DerefMut for Elements<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T: Clone> Clone for Elements<T> {
    /// Owned: a copy of the `Vec`. Foreign: another handle on the same memory (no copy).
    fn clone(&self) -> Self {
        Elements(match &self.0 {
            Repr::Owned(v) => Repr::Owned(v.clone()),
            Repr::Foreign { ptr, len, owner } => Repr::Foreign {
                ptr: *ptr,
                len: *len,
                owner: Arc::clone(owner),
            },
        })
    }
}

impl<T> Default for Elements<T> {
    fn default() -> Self {
        Elements(Repr::Owned(Vec::new()))
    }
}

impl<T> From<Vec<T>> for Elements<T> {
    fn from(v: Vec<T>) -> Self {
        Elements(Repr::Owned(v))
    }
}

impl<T: Clone> From<&[T]> for Elements<T> {
    fn from(v: &[T]) -> Self {
        Elements(Repr::Owned(v.to_vec()))
    }
}

impl<T: Clone> From<Elements<T>> for Vec<T> {
    fn from(e: Elements<T>) -> Vec<T> {
        e.into_vec()
    }
}

impl<T> FromIterator<T> for Elements<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Elements(Repr::Owned(iter.into_iter().collect()))
    }
}

impl<T: Clone> IntoIterator for Elements<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl<'a, T> IntoIterator for &'a Elements<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl<'a, T: Clone> IntoIterator for &'a mut Elements<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_mut_slice().iter_mut()
    }
}

impl<T: PartialEq> PartialEq for Elements<T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: PartialEq> PartialEq<Vec<T>> for Elements<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: PartialEq> PartialEq<Elements<T>> for Vec<T> {
    fn eq(&self, other: &Elements<T>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: PartialEq> PartialEq<[T]> for Elements<T> {
    fn eq(&self, other: &[T]) -> bool {
        self.as_slice() == other
    }
}

impl<T: fmt::Debug> fmt::Debug for Elements<T> {
    /// As a `Vec` prints (`[1.0, 2.0]`), owned or foreign alike.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_slice(), f)
    }
}

impl<T: Serialize> Serialize for Elements<T> {
    /// A plain sequence, exactly as `Vec<T>` serialises (so cache entries stay compatible).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(s)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Elements<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<T>::deserialize(d).map(Elements::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Foreign elements over a `Vec` kept in the owner `Arc` (as the Python package keeps the
    /// numpy buffer), with the address of the foreign memory.
    fn foreign(values: Vec<f32>) -> (Elements<f32>, Arc<Vec<f32>>) {
        let owner = Arc::new(values);
        let ptr = NonNull::new(owner.as_ptr().cast_mut()).unwrap();
        // SAFETY: the Vec in `owner` is never written and lives as long as the Arc.
        let e = unsafe { Elements::from_foreign(ptr, owner.len(), owner.clone()) };
        (e, owner)
    }

    #[test]
    fn foreign_elements_read_the_foreign_memory() {
        let (e, owner) = foreign(vec![1.0, 2.0, 3.0]);
        assert!(e.is_foreign());
        assert_eq!(&*e, &[1.0, 2.0, 3.0]);
        assert_eq!(e.as_ptr(), owner.as_ptr(), "no copy was made");
        assert_eq!(e, Elements::from(vec![1.0, 2.0, 3.0]));
        assert_eq!(format!("{e:?}"), format!("{:?}", vec![1.0f32, 2.0, 3.0]));
    }

    #[test]
    fn writing_copies_first_and_leaves_the_foreign_memory_unchanged() {
        let (mut e, owner) = foreign(vec![1.0, 2.0, 3.0]);
        e[1] = 20.0;
        assert!(!e.is_foreign());
        assert_ne!(e.as_ptr(), owner.as_ptr());
        assert_eq!(&*e, &[1.0, 20.0, 3.0]);
        assert_eq!(owner.as_slice(), &[1.0, 2.0, 3.0]);
        assert_eq!(Arc::strong_count(&owner), 1, "the copy let go of the owner");
    }

    #[test]
    fn clones_share_foreign_memory_and_keep_the_owner_alive() {
        let (e, owner) = foreign(vec![4.0, 5.0]);
        let c = e.clone();
        assert!(c.is_foreign());
        assert_eq!(c.as_ptr(), owner.as_ptr());
        assert_eq!(Arc::strong_count(&owner), 3);
        drop(e);
        drop(c);
        assert_eq!(Arc::strong_count(&owner), 1);
    }

    #[test]
    fn into_vec_copies_foreign_elements_only() {
        let owned = Elements::from(vec![1u32, 2]);
        let p = owned.as_ptr();
        let v = owned.into_vec();
        assert_eq!(v.as_ptr(), p, "owned: the same allocation");
        let (e, owner) = foreign(vec![7.0]);
        let v = e.into_vec();
        assert_ne!(v.as_ptr(), owner.as_ptr());
        assert_eq!(v, vec![7.0]);
        let (e, _owner) = foreign(vec![1.0, 2.0]);
        assert_eq!(e.into_iter().collect::<Vec<_>>(), vec![1.0, 2.0]);
    }

    #[test]
    fn serialises_as_the_same_bytes_as_a_vec() {
        let cfg = bincode::config::standard();
        let values = vec![1.5f32, -0.0, f32::NAN, 3e38];
        let want = bincode::serde::encode_to_vec(&values, cfg).unwrap();
        let (e, _owner) = foreign(values.clone());
        assert_eq!(bincode::serde::encode_to_vec(&e, cfg).unwrap(), want);
        let owned = Elements::from(values.clone());
        assert_eq!(bincode::serde::encode_to_vec(&owned, cfg).unwrap(), want);
        let (back, used): (Elements<f32>, usize) =
            bincode::serde::decode_from_slice(&want, cfg).unwrap();
        assert_eq!(used, want.len());
        assert!(!back.is_foreign());
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&values));
        // Bytes (`u8`) and bools too: no special byte-string encoding on either side.
        let bytes = vec![0u8, 255, 7];
        assert_eq!(
            bincode::serde::encode_to_vec(Elements::from(bytes.clone()), cfg).unwrap(),
            bincode::serde::encode_to_vec(&bytes, cfg).unwrap()
        );
    }

    #[test]
    fn empty_foreign_elements_are_an_empty_slice() {
        let owner: Arc<dyn Any + Send + Sync> = Arc::new(());
        // SAFETY: zero elements at a dangling, aligned pointer are a valid empty slice.
        let e = unsafe { Elements::<u64>::from_foreign(NonNull::dangling(), 0, owner) };
        assert!(e.is_empty());
        assert_eq!(e, Elements::default());
    }
}
