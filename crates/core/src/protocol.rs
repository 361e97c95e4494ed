//! The one protocol of the kernel's three machines: the runner (`kernel::runner`), the Agent
//! (`kernel::agent`) and the tool executor (`tool::executor`).
//!
//! Each machine is sans-IO. It hands the driver an action that carries everything needed to
//! perform it (`poll`; the Agent and the executor hand the next action back from `answer`,
//! since their state is a word the driver keeps between calls), and takes the driver's report
//! through `answer`:
//!
//! - the runner: `Machine::poll` → `Action`; an action that waits carries the one handle that
//!   answers it (`ModelTurn::answer`, `ToolRound::answer`, …).
//! - the Agent: `AgentRun::start` → the first `Step`; `AgentRun::answer(Event)` → the next.
//! - the executor: `ToolCall::poll` → `Action`; `ToolCall::answer(Answer)` → the next.
//!
//! Each has `pending()`, which hands out the handle of what it waits for (`runner::Pending`,
//! `agent::Pending`, `executor::Pending`): each handle takes only the answers its state takes,
//! so a Rust driver cannot give the wrong one (it does not compile). A driver that answers by
//! kind (the JS driver, through the binding: the runner's answers by run id, the Agent's packed
//! word with an event code, the executor's step code with an answer code) can; its wrong answer
//! is the same error in each machine: [`Unexpected`], with what the machine awaited and what
//! came. It is a driver bug, it leaves the machine as it was, and each machine words it for its
//! own driver (the texts JS sees are kept as they were).

/// An answer the machine did not ask for: `awaiting` is what it waits for, `got` what came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unexpected<W, G> {
    pub awaiting: W,
    pub got: G,
}
