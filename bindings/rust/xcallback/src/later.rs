//! Answering later, from any thread: the `Responder` a `*_later` route's
//! handler gets, the Rust form of the Swift kit's `async:` handlers.
//!
//! The host's request is valid until it is completed, and the handler holds
//! `&Request` until it returns. So a reply sent while the handler still runs
//! is held, and given to the host when the handler returns: a handler can
//! never read a request its own reply has ended.

use crate::reply::{send, IntoReply, Reply};
use crate::sys;
use std::sync::{Arc, Mutex};

/// The host's table. Immutable, owned by the host, valid until the plug-in
/// is shut down, and its completion functions may be called from any thread.
#[derive(Clone, Copy)]
pub(crate) struct Table(pub(crate) &'static sys::HostApi);
unsafe impl Send for Table {}
unsafe impl Sync for Table {}

enum State {
    /// The handler is running; a reply sent meanwhile waits here.
    InCall(Option<Reply>),
    /// The handler has returned; the next reply goes to the host at once.
    Returned,
    Done,
}

pub(crate) struct Pending {
    table: Table,
    reply: sys::Reply,
    state: Mutex<State>,
}

impl Pending {
    pub(crate) fn new(table: Table, reply: sys::Reply) -> Arc<Pending> {
        Arc::new(Pending { table, reply, state: Mutex::new(State::InCall(None)) })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The first answer wins; later ones are ignored.
    fn complete(&self, answer: Reply) {
        let mut state = self.state();
        match &mut *state {
            State::InCall(held @ None) => *held = Some(answer),
            State::Returned => {
                *state = State::Done;
                drop(state);
                send(self.table.0, self.reply, answer);
            }
            State::InCall(Some(_)) | State::Done => {}
        }
    }

    /// The handler has returned, with `failure` if it failed before it
    /// answered (an `Err`, a panic): the held reply, or that, goes to the host.
    pub(crate) fn handler_returned(&self, failure: Option<Reply>) {
        let mut state = self.state();
        let answer = match std::mem::replace(&mut *state, State::Done) {
            State::InCall(Some(held)) => Some(held),
            State::InCall(None) if failure.is_some() => failure,
            State::InCall(None) => {
                *state = State::Returned;
                None
            }
            other => {
                *state = other;
                None
            }
        };
        drop(state);
        if let Some(answer) = answer {
            send(self.table.0, self.reply, answer);
        }
    }
}

impl Drop for Pending {
    /// Every `Responder` is gone and none answered: the request must still end.
    fn drop(&mut self) {
        if matches!(*self.state(), State::Returned) {
            let answer = if std::thread::panicking() {
                Reply::error("Panic", "the handler panicked")
            } else {
                Reply::error("NoReply", "the handler dropped its Responder without answering")
            };
            send(self.table.0, self.reply, answer);
        }
    }
}

/// A request's reply, to send later from any thread: move it where the work
/// is done, and `send` the answer once (it is consumed). Dropped unsent, the
/// request ends in the error `NoReply` (`Panic` if a panic dropped it).
/// Copy out of the `Request` what that work needs before the handler returns.
pub struct Responder {
    pending: Arc<Pending>,
}

impl Responder {
    pub(crate) fn new(pending: Arc<Pending>) -> Responder {
        Responder { pending }
    }

    /// Completes the request with `answer`: a `Reply` or a `Result<Reply>`.
    pub fn send(self, answer: impl IntoReply) {
        self.pending.complete(answer.into_reply());
    }
}

// A Responder is for moving to another thread.
const _: fn() = || {
    fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Responder>();
};
