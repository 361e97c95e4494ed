//! The run's conversation as the machine holds it: messages are appended, or the whole list is
//! replaced (context strategies), never edited in place. Each replacement takes a new `epoch`,
//! so a request builder that has serialised the first n messages under an epoch may reuse that
//! text for as long as the epoch holds (`llm::WireCache`): the wire body of a long tool loop is
//! then built once per message instead of once per call.
//!
//! It also keeps, as data, every message the run added (`RunResult.messages`): those still in
//! the list are its tail from `fresh_from` (no copy on the append path, the hot one); a
//! replacement first moves that tail, as it was, into `earlier`. A context strategy rewrites
//! only the conversation sent to the model, never what the run reports it added.

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
    /// The run's added messages that a replacement took out of `msgs`, in the order added.
    earlier: Vec<Message>,
    /// Where the run's added messages still in `msgs` begin.
    fresh_from: usize,
}

impl History {
    pub fn new(msgs: Vec<Message>) -> History {
        History { fresh_from: msgs.len(), msgs: Arc::new(msgs), epoch: next_epoch(), earlier: Vec::new() }
    }

    /// A history restored from a snapshot: the conversation and the run's added messages (those
    /// that are the conversation's tail from `fresh_from`, and the `earlier` ones). `None` when
    /// `fresh_from` is past the end.
    pub fn restore(msgs: Vec<Message>, earlier: Vec<Message>, fresh_from: usize) -> Option<History> {
        (fresh_from <= msgs.len()).then(|| History { msgs: Arc::new(msgs), epoch: next_epoch(), earlier, fresh_from })
    }

    /// Every message the run added, in the order added (`RunResult.messages`).
    pub fn added(&self) -> impl Iterator<Item = &Message> {
        self.earlier.iter().chain(&self.msgs[self.fresh_from..])
    }

    /// How many messages the run has added.
    pub fn added_len(&self) -> usize {
        self.earlier.len() + self.msgs.len() - self.fresh_from
    }

    /// The added messages a replacement took out of the list (see `added`), and where the
    /// list's own added tail begins: what a snapshot writes.
    pub fn added_parts(&self) -> (&[Message], usize) {
        (&self.earlier, self.fresh_from)
    }

    pub fn push(&mut self, m: Message) {
        Arc::make_mut(&mut self.msgs).push(m);
    }

    /// A new conversation (compression, a custom strategy): earlier wire text is stale.
    pub fn replace(&mut self, msgs: Vec<Message>) {
        // (Rare: a strategy's rewrite. The added messages are kept as they were added.)
        self.earlier.extend_from_slice(&self.msgs[self.fresh_from..]);
        self.fresh_from = msgs.len();
        self.msgs = Arc::new(msgs);
        self.epoch = next_epoch();
    }

    /// The first `keep` messages followed by `tail` (messages the run adds): an append when all
    /// are kept (the epoch holds), otherwise a replacement. `None` (nothing changed) when `keep` is past the end.
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
            // The tail is added, as it is when appended.
            self.fresh_from = keep;
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

    #[test]
    fn added_messages_survive_replacements_as_they_were_added() {
        let texts = |h: &History| h.added().map(Message::text).collect::<Vec<_>>();
        let mut h = History::new(vec![Message::user_text("initial")]);
        assert!(texts(&h).is_empty());
        h.push(Message::user_text("a"));
        h.push(Message::user_text("b"));
        // A strategy rewrites the conversation: the added messages stay as they were.
        h.replace(vec![Message::user_text("initial"), Message::user_text("b, shortened")]);
        assert_eq!(texts(&h), ["a", "b"]);
        h.push(Message::user_text("c"));
        assert_eq!(texts(&h), ["a", "b", "c"]);
        h.keep_then_extend(1, vec![Message::user_text("d")]).unwrap();
        assert_eq!(texts(&h), ["a", "b", "c", "d"]);
        // Restored from its parts, a history adds on as the original does.
        let (earlier, from) = h.added_parts();
        let mut r = History::restore(h.to_vec(), earlier.to_vec(), from).unwrap();
        r.push(Message::user_text("e"));
        h.push(Message::user_text("e"));
        assert_eq!(texts(&r), texts(&h));
        assert!(History::restore(Vec::new(), Vec::new(), 1).is_none());
    }
}
