//! The run's conversation as the machine holds it: messages are appended, or the whole list is
//! replaced (context strategies), never edited in place. Each replacement takes a new `epoch`,
//! so a request builder that has serialised the first n messages under an epoch may reuse that
//! text for as long as the epoch holds (`llm::WireCache`): the wire body of a long tool loop is
//! then built once per message instead of once per call.

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::message::Message;

/// Process-wide, so an epoch never names two different histories.
static NEXT_EPOCH: AtomicU64 = AtomicU64::new(1);

fn next_epoch() -> u64 {
    NEXT_EPOCH.fetch_add(1, Ordering::Relaxed)
}

#[derive(Debug, Clone)]
pub struct History {
    /// Shared with an in-flight native LLM request instead of copied per call; the request is
    /// over before the machine appends again, so `make_mut` does not copy either.
    msgs: Arc<Vec<Message>>,
    epoch: u64,
}

impl History {
    pub fn new(msgs: Vec<Message>) -> History {
        History { msgs: Arc::new(msgs), epoch: next_epoch() }
    }

    pub fn push(&mut self, m: Message) {
        Arc::make_mut(&mut self.msgs).push(m);
    }

    /// A new conversation (compression, a custom strategy): earlier wire text is stale.
    pub fn replace(&mut self, msgs: Vec<Message>) {
        self.msgs = Arc::new(msgs);
        self.epoch = next_epoch();
    }

    /// The first `keep` messages followed by `tail`: an append when all are kept (the epoch
    /// holds), otherwise a replacement. `None` (nothing changed) when `keep` is past the end.
    pub fn keep_then_extend(&mut self, keep: usize, tail: Vec<Message>) -> Option<()> {
        if keep > self.msgs.len() {
            return None;
        }
        if keep == self.msgs.len() {
            Arc::make_mut(&mut self.msgs).extend(tail);
        } else {
            let mut msgs = self.msgs[..keep].to_vec();
            msgs.extend(tail);
            self.replace(msgs);
        }
        Some(())
    }

    /// Same epoch ⇒ the messages seen before under it are still the list's prefix.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The messages for a request that reads them elsewhere (no copy).
    pub fn shared(&self) -> Arc<Vec<Message>> {
        self.msgs.clone()
    }
}

impl Deref for History {
    type Target = [Message];
    fn deref(&self) -> &[Message] {
        &self.msgs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_keep_the_epoch_and_replacements_change_it() {
        let mut h = History::new(vec![Message::user_text("a")]);
        let e = h.epoch();
        let held = h.shared();
        h.push(Message::user_text("b"));
        assert_eq!(h.epoch(), e);
        assert_eq!(h.len(), 2);
        // A request that still holds the old list sees it unchanged.
        assert_eq!(held.len(), 1);
        h.replace(vec![Message::user_text("c")]);
        assert_ne!(h.epoch(), e);
        assert_eq!(h[0].text(), "c");
        // Another history never shares an epoch.
        assert_ne!(History::new(Vec::new()).epoch(), h.epoch());
    }

    #[test]
    fn keep_then_extend_appends_or_replaces() {
        let mut h = History::new(vec![Message::user_text("a"), Message::user_text("b")]);
        let e = h.epoch();
        h.keep_then_extend(2, vec![Message::user_text("c")]).unwrap();
        assert_eq!((h.len(), h.epoch()), (3, e));
        h.keep_then_extend(1, vec![Message::user_text("d")]).unwrap();
        assert_ne!(h.epoch(), e);
        assert_eq!(h.iter().map(Message::text).collect::<Vec<_>>(), ["a", "d"]);
        let e = h.epoch();
        assert!(h.keep_then_extend(3, Vec::new()).is_none());
        assert_eq!((h.len(), h.epoch()), (2, e));
    }
}
