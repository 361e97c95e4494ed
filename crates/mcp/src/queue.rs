//! The queues between a peer and the driver, bounded by bytes (not by items: one server line
//! may be up to [`MAX_LINE_BYTES`](crate::stdio::MAX_LINE_BYTES), so a count of lines would
//! still let a few hundred MB pile up). Each item carries a permit for its size from a
//! semaphore of [`QUEUE_BYTES`]; the permit is released when the receiver has handled the item.
//! A sender with no room waits, and so stops reading its peer: back-pressure all the way to the
//! server's pipe or TCP window, so a peer that writes faster than it reads cannot make the client
//! buffer without end.

use std::sync::Arc;

use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// The bytes one queue holds at most, besides the one item a larger line takes alone.
pub const QUEUE_BYTES: usize = 1024 * 1024;
/// What an item counts besides its text, so that empty items cannot pile up either.
const ITEM_OVERHEAD: usize = 64;

/// The permits `bytes` take: at most the whole queue, so a line longer than the queue still
/// passes (alone, once the queue is empty).
pub(crate) fn permits(bytes: usize) -> u32 {
    (bytes.saturating_add(ITEM_OVERHEAD)).min(QUEUE_BYTES) as u32
}

pub(crate) struct Sender<T> {
    tx: mpsc::UnboundedSender<(T, OwnedSemaphorePermit)>,
    room: Arc<Semaphore>,
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender { tx: self.tx.clone(), room: self.room.clone() }
    }
}

pub(crate) type Receiver<T> = mpsc::UnboundedReceiver<(T, OwnedSemaphorePermit)>;

pub(crate) fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Sender { tx, room: Arc::new(Semaphore::new(QUEUE_BYTES)) }, rx)
}

impl<T> Sender<T> {
    /// Waits for room for `bytes`, then queues `item`. `Err` when the receiver is gone.
    pub async fn send(&self, item: T, bytes: usize) -> Result<(), T> {
        match self.room.clone().acquire_many_owned(permits(bytes)).await {
            Ok(p) => self.tx.send((item, p)).map_err(|e| e.0 .0),
            Err(_) => Err(item),
        }
    }

    /// Room for `bytes`, when the caller must keep serving other work while it waits.
    pub async fn room(&self, bytes: usize) -> Option<OwnedSemaphorePermit> {
        self.room.clone().acquire_many_owned(permits(bytes)).await.ok()
    }

    /// Room for `bytes` if there is some now.
    pub fn try_room(&self, bytes: usize) -> Option<OwnedSemaphorePermit> {
        self.room.clone().try_acquire_many_owned(permits(bytes)).ok()
    }

    /// Queues `item` with room already taken.
    pub fn send_with(&self, item: T, permit: OwnedSemaphorePermit) -> Result<(), T> {
        self.tx.send((item, permit)).map_err(|e| e.0 .0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn room_is_bytes_and_comes_back_when_handled() {
        let (tx, mut rx) = channel::<Vec<u8>>();
        let half = QUEUE_BYTES / 2;
        tx.send(vec![0; half], half).await.unwrap();
        assert!(tx.try_room(half).is_none(), "half plus overhead twice does not fit");
        // A line larger than the queue takes the whole queue: only once the queue is empty.
        assert!(tx.try_room(10 * QUEUE_BYTES).is_none());
        let (item, permit) = rx.recv().await.unwrap();
        assert_eq!(item.len(), half);
        assert!(tx.try_room(1).is_some(), "room while the item is still being handled");
        drop(permit);
        let big = tx.try_room(10 * QUEUE_BYTES).expect("an empty queue takes a long line");
        assert!(tx.try_room(0).is_none(), "even an empty item counts");
        tx.send_with(vec![], big).unwrap();
        drop(rx);
        assert!(tx.send(vec![1], 1).await.is_err(), "no receiver");
    }
}
