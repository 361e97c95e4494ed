//! Cancellation shared by native tools and adapters: the JS shim trips it from an
//! `AbortSignal` listener; tokio tasks `select!` on it.

use napi_derive::napi;
use tokio_util::sync::CancellationToken;

#[napi]
pub struct CancelHandle {
    pub(crate) token: CancellationToken,
}

#[napi]
impl CancelHandle {
    #[napi(constructor)]
    pub fn new() -> Self {
        CancelHandle { token: CancellationToken::new() }
    }

    #[napi]
    pub fn cancel(&self) {
        self.token.cancel();
    }

    #[napi(getter)]
    pub fn cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}

impl CancelHandle {
    /// A token for a tokio task (clones share the cancelled state).
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}
