//! A request abandoned mid-statement never hands its connection on.
//!
//! A request is abandoned when its future is dropped before it completes: the
//! request timeout (`app::time_limit`) or a client that hung up. Its
//! connections go back to the pool as they are dropped, and one whose
//! statement is still running would be handed to the next request, which
//! then waits behind it (issue 60: an image assessment that ignored its
//! statement timeout held the only pooled connection, and every endpoint
//! waited and failed). So each connection a request takes is a [`Conn`],
//! which knows whether its request was abandoned: if so, it is taken out of
//! the pool (the pool opens a new one when needed), its statement is
//! cancelled (a cancel request to the server, as `pg_cancel_backend` sends),
//! and the connection is closed once the cancel was sent, whether or not the
//! server confirms it. A connection's statement that finished is not told
//! apart from one still running: an abandoned request's connections are all
//! discarded, which costs one connection's set-up.

use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use deadpool_postgres::Object;
use tokio::task::futures::TaskLocalFuture;
use tokio_postgres::NoTls;

tokio::task_local! {
    /// Set by [`watch`] while a request runs: whether it was abandoned.
    static ABANDONED: Arc<AtomicBool>;
}

/// Runs a request's `future`, marking it abandoned if it is dropped first.
pub fn watch<F: Future>(future: F) -> Watched<F> {
    let abandoned = Arc::new(AtomicBool::new(false));
    Watched {
        inner: Box::pin(ABANDONED.scope(Arc::clone(&abandoned), future)),
        abandoned,
        done: false,
    }
}

/// A request's future under [`watch`].
pub struct Watched<F: Future> {
    inner: Pin<Box<TaskLocalFuture<Arc<AtomicBool>, F>>>,
    abandoned: Arc<AtomicBool>,
    done: bool,
}

impl<F: Future> Future for Watched<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let output = std::task::ready!(self.inner.as_mut().poll(cx));
        self.done = true;
        Poll::Ready(output)
    }
}

impl<F: Future> Drop for Watched<F> {
    /// Runs before the fields drop: the request's connections, dropped with
    /// `inner`, see the mark.
    fn drop(&mut self) {
        if !self.done {
            self.abandoned.store(true, Ordering::Release);
        }
    }
}

/// A pooled connection taken for a request; used as the pool's [`Object`].
pub struct Conn {
    object: Option<Object>,
    /// The request's mark; `None` outside a request (nothing to abandon).
    abandoned: Option<Arc<AtomicBool>>,
}

impl Conn {
    /// `object`, taken for the request running now, if any.
    pub fn new(object: Object) -> Self {
        Conn {
            object: Some(object),
            abandoned: ABANDONED.try_with(Arc::clone).ok(),
        }
    }
}

impl Deref for Conn {
    type Target = Object;

    fn deref(&self) -> &Object {
        self.object.as_ref().expect("present until dropped")
    }
}

impl DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Object {
        self.object.as_mut().expect("present until dropped")
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let abandoned = self
            .abandoned
            .as_ref()
            .is_some_and(|a| a.load(Ordering::Acquire));
        let Some(object) = self.object.take() else {
            return;
        };
        if !abandoned {
            return; // back to the pool
        }
        let cancel = object.cancel_token();
        let client = Object::take(object);
        tracing::warn!(
            "request abandoned: its connection is discarded and its statement cancelled"
        );
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(error) = cancel.cancel_query(NoTls).await {
                        tracing::warn!(%error, "cancelling an abandoned request's statement failed");
                    }
                    drop(client);
                });
            }
            Err(_) => drop(client),
        }
    }
}
