//! The tower layer that counts and times every response.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::MatchedPath;
use axum::http::{Method, Request, Response, StatusCode};
use tower::{Layer, Service};

use super::{Metrics, Route};
use crate::error::ErrorCode;

/// A fixed label for the method, so an odd method cannot make a new series.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::OPTIONS => "OPTIONS",
        Method::HEAD => "HEAD",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        _ => "other",
    }
}

/// Counts and times every response, errors from the layers inside it
/// included. Applied through `Router::layer`, so routing has already put the
/// `MatchedPath` in the request.
#[derive(Clone)]
pub struct MetricsLayer(pub Arc<Metrics>);

impl<S> Layer<S> for MetricsLayer {
    type Service = Measured<S>;

    fn layer(&self, inner: S) -> Measured<S> {
        Measured {
            inner,
            metrics: Arc::clone(&self.0),
        }
    }
}

#[derive(Clone)]
pub struct Measured<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, B, R> Service<Request<B>> for Measured<S>
where
    S: Service<Request<B>, Response = Response<R>>,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = MeasuredFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let route = Route(request.extensions().get::<MatchedPath>().cloned());
        let method = method_label(request.method());
        MeasuredFuture {
            inner: self.inner.call(request),
            metrics: Arc::clone(&self.metrics),
            route: Some(route),
            method,
            start: Instant::now(),
        }
    }
}

pin_project_lite::pin_project! {
    pub struct MeasuredFuture<F> {
        #[pin]
        inner: F,
        metrics: Arc<Metrics>,
        route: Option<Route>,
        method: &'static str,
        start: Instant,
    }
}

impl<F, R, E> Future for MeasuredFuture<F>
where
    F: Future<Output = Result<Response<R>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let output = std::task::ready!(this.inner.poll(cx));
        if let (Ok(response), Some(route)) = (&output, this.route.take()) {
            let status = response.status();
            this.metrics
                .answered(route, this.method, status, this.start.elapsed());
            if status == StatusCode::TOO_MANY_REQUESTS {
                let code = response.extensions().get::<ErrorCode>();
                this.metrics.rejected(code.map_or("rate_limited", |c| c.0));
            }
        }
        Poll::Ready(output)
    }
}
