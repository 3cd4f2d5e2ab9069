//! OpenTelemetry traces of the proxy (feature `otel`, on with the CLI).
//!
//! When the standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` variable is set (and `OTEL_SDK_DISABLED`
//! is not `true`, nor `OTEL_TRACES_EXPORTER` `none`), spans are exported as
//! OTLP over HTTP/protobuf (`opentelemetry-otlp`, with the reqwest client
//! and the tokio runtime the proxy already has; the other `OTEL_*`
//! variables of the exporter and the batch processor apply: headers,
//! timeout, `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_SERVICE_NAME`, default
//! `toolgate`). Each client request the proxy serves is a server span,
//! named and attributed after OpenTelemetry's semantic conventions for MCP
//! (`{mcp.method.name} {target}`, the target being the tool or prompt name
//! where there is one; `mcp.method.name`, `mcp.session.id`,
//! `jsonrpc.request.id`, `gen_ai.tool.name`, `gen_ai.prompt.name`,
//! `mcp.resource.uri`; an error answer sets the span's status and
//! `rpc.response.status_code`): `initialize`, `server/discover`, `ping`,
//! `tools/list`, `tools/call`, `resources/list`, `resources/templates/list`,
//! `resources/read`, `resources/subscribe`, `resources/unsubscribe`,
//! `prompts/list`, `prompts/get`, `completion/complete`,
//! `logging/setLevel`. A `tools/call` has a child span for the call gate
//! (`toolgate.gate`) and one for the downstream call (`tools/call TOOL`, a
//! client span). The long-lived `subscriptions/listen` stream and requests
//! of unknown methods have no span.
//!
//! The incoming W3C trace context is continued: `traceparent` /
//! `tracestate` at the root of the request's `params._meta` (SEP-414), else
//! in the HTTP request's headers (Streamable HTTP). The downstream request
//! carries the downstream span's `traceparent` (and `tracestate`) in its
//! `params._meta`. Every audit record written while a request is served
//! carries its trace id (`trace_id`).
//!
//! With no endpoint set no span is made, but the client's trace context is
//! still passed on: the downstream request carries the client's own
//! `traceparent`, and the audit its trace id.

use std::future::Future;

use rmcp::ErrorData as McpError;
use rmcp::model::{JsonObject, RequestMetaObject};
use rmcp::service::{RequestContext, RoleServer};

use super::handler::ProxySession;
use super::proxy::metas;

/// What a request span names besides its method (OpenTelemetry's MCP
/// conventions): the tool of a `tools/call` and the prompt of a
/// `prompts/get` are the span name's target; a resource URI is an attribute
/// only (`mcp.resource.uri`: unbounded, so never in the name).
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    /// No target: the span is named by the method alone.
    None,
    /// `gen_ai.tool.name` (and `gen_ai.operation.name` = `execute_tool`).
    Tool(&'a str),
    /// `gen_ai.prompt.name`.
    Prompt(&'a str),
    /// `mcp.resource.uri`.
    Resource(&'a str),
}

impl ProxySession {
    /// The server span of one client request `method` (see the module
    /// docs) under the client's trace context from the request's `_meta`
    /// (`params_meta`, or what rmcp lifted into the context) or headers.
    pub(crate) fn request_span(
        &self,
        context: &RequestContext<RoleServer>,
        params_meta: Option<&RequestMetaObject>,
        method: &'static str,
        target: Target<'_>,
    ) -> Cx {
        request(
            self.inner.tel(),
            context,
            &metas(context, params_meta.map(|m| &m.0.0)),
            method,
            target,
            &self.session.id,
        )
    }
}

/// The proxy's span exporter, when traces are on.
pub struct Telemetry {
    #[cfg(feature = "otel")]
    provider: opentelemetry_sdk::trace::SdkTracerProvider,
    #[cfg(feature = "otel")]
    tracer: opentelemetry_sdk::trace::SdkTracer,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

/// Whether the environment asks for traces: an OTLP endpoint variable is
/// set and non-empty, the SDK is not disabled, and the traces exporter is
/// not `none`.
pub fn wanted_by_env() -> bool {
    let set = |v: &str| std::env::var(v).is_ok_and(|s| !s.trim().is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|s| s.eq_ignore_ascii_case("true"));
    let none = std::env::var("OTEL_TRACES_EXPORTER").is_ok_and(|s| s.trim() == "none");
    (set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") || set("OTEL_EXPORTER_OTLP_ENDPOINT"))
        && !disabled
        && !none
}

#[cfg(feature = "otel")]
mod imp {
    use super::*;
    use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
    use opentelemetry::trace::{
        SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
    };
    use opentelemetry::{Context, KeyValue};
    use opentelemetry_sdk::propagation::TraceContextPropagator;

    /// A request's (or a child's) trace context.
    pub(crate) type Cx = Context;

    impl Telemetry {
        /// The exporter the environment asks for ([`wanted_by_env`]), or
        /// `None`. Call inside a tokio runtime (the batch exporter runs on
        /// it). Errors: a bad endpoint or exporter setting, named.
        pub fn from_env() -> Result<Option<Telemetry>, String> {
            if !wanted_by_env() {
                return Ok(None);
            }
            if tokio::runtime::Handle::try_current().is_err() {
                return Err("OpenTelemetry traces need a tokio runtime".into());
            }
            // the exporter's reqwest client is the proxy's: rustls, whose
            // provider (ring) the proxy installs
            super::super::http::install_crypto_provider();
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .build()
                .map_err(|e| {
                    format!(
                        "OpenTelemetry: cannot export traces to the OTEL_EXPORTER_OTLP_ENDPOINT given: {e}"
                    )
                })?;
            let batch =
                opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor::builder(
                    exporter,
                    opentelemetry_sdk::runtime::Tokio,
                )
                .build();
            let mut resource = opentelemetry_sdk::Resource::builder();
            if std::env::var("OTEL_SERVICE_NAME").is_err() {
                resource = resource.with_service_name("toolgate");
            }
            let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
                .with_span_processor(batch)
                .with_resource(resource.build())
                .build();
            let tracer = provider.tracer_with_scope(
                opentelemetry::InstrumentationScope::builder("toolgate")
                    .with_version(env!("CARGO_PKG_VERSION"))
                    .build(),
            );
            Ok(Some(Telemetry { provider, tracer }))
        }

        /// Exports what is pending and stops the exporter (at most 5 s).
        pub async fn shutdown(&self) {
            let p = self.provider.clone();
            let done = tokio::task::spawn_blocking(move || {
                p.shutdown_with_timeout(std::time::Duration::from_secs(5))
            });
            match tokio::time::timeout(std::time::Duration::from_secs(6), done).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) => {
                    tracing::warn!("OpenTelemetry: the last spans were not exported: {e}")
                }
                _ => tracing::warn!("OpenTelemetry: the exporter did not stop in time"),
            }
        }
    }

    struct MetaExtractor<'a>(&'a JsonObject);

    impl Extractor for MetaExtractor<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(|v| v.as_str())
        }
        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(|k| k.as_str()).collect()
        }
    }

    struct HeaderExtractor<'a>(&'a axum::http::HeaderMap);

    impl Extractor for HeaderExtractor<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(|v| v.to_str().ok())
        }
        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(|k| k.as_str()).collect()
        }
    }

    struct MetaInjector<'a>(&'a mut JsonObject);

    impl Injector for MetaInjector<'_> {
        fn set(&mut self, key: &str, value: String) {
            self.0
                .insert(key.to_string(), serde_json::Value::String(value));
        }
    }

    /// The client's trace context: `traceparent` in one of `metas` (the
    /// request's `_meta`), else in the HTTP request's headers.
    fn parent(ctx: &RequestContext<RoleServer>, metas: &[&JsonObject]) -> Context {
        let prop = TraceContextPropagator::new();
        for m in metas {
            if m.contains_key("traceparent") {
                let cx = prop.extract(&MetaExtractor(m));
                if cx.span().span_context().is_valid() {
                    return cx;
                }
            }
        }
        if let Some(parts) = ctx.extensions.get::<axum::http::request::Parts>() {
            return prop.extract(&HeaderExtractor(&parts.headers));
        }
        Context::new()
    }

    /// The context of one client request: a server span named `method
    /// target` under the client's trace context (or that context alone,
    /// without telemetry).
    pub(crate) fn request(
        tel: Option<&Telemetry>,
        ctx: &RequestContext<RoleServer>,
        metas: &[&JsonObject],
        method: &'static str,
        target: Target<'_>,
        session: &str,
    ) -> Cx {
        let parent = parent(ctx, metas);
        let Some(t) = tel else { return parent };
        let mut attrs = vec![
            KeyValue::new("mcp.method.name", method),
            KeyValue::new("mcp.session.id", session.to_string()),
            KeyValue::new("jsonrpc.request.id", format!("{}", ctx.id)),
        ];
        let name = match target {
            Target::None => method.to_string(),
            Target::Tool(tool) => {
                attrs.push(KeyValue::new("gen_ai.tool.name", tool.to_string()));
                attrs.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
                format!("{method} {tool}")
            }
            Target::Prompt(prompt) => {
                attrs.push(KeyValue::new("gen_ai.prompt.name", prompt.to_string()));
                format!("{method} {prompt}")
            }
            Target::Resource(uri) => {
                attrs.push(KeyValue::new("mcp.resource.uri", uri.to_string()));
                method.to_string()
            }
        };
        let span = t
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attrs)
            .start_with_context(&t.tracer, &parent);
        parent.with_span(span)
    }

    /// Runs the request `f` in `cx`, then ends `cx`'s span; an error
    /// answer marks the span as failed (its message as the status,
    /// `rpc.response.status_code` and `error.type` the JSON-RPC code).
    pub(crate) async fn run_rpc<T, F>(cx: Cx, f: F) -> Result<T, McpError>
    where
        F: Future<Output = Result<T, McpError>>,
    {
        let out = within(cx.clone(), f).await;
        if let Err(e) = &out {
            let span = cx.span();
            let code = e.code.0.to_string();
            span.set_attribute(KeyValue::new("rpc.response.status_code", code.clone()));
            span.set_attribute(KeyValue::new("error.type", code));
            span.set_status(Status::error(e.message.to_string()));
        }
        cx.span().end();
        out
    }

    /// Runs `f` in `cx`.
    pub(crate) async fn within<F: Future>(cx: Cx, f: F) -> F::Output {
        use opentelemetry::context::FutureExt as _;
        f.with_context(cx).await
    }

    /// A child span of the current context that ends when dropped.
    pub(crate) struct Child(Option<Context>);

    impl Child {
        /// Records `key = value` on the span.
        pub(crate) fn set(&self, key: &'static str, value: impl Into<String>) {
            if let Some(cx) = &self.0 {
                cx.span().set_attribute(KeyValue::new(key, value.into()));
            }
        }

        /// Marks the span as failed with `message`.
        pub(crate) fn error(&self, message: impl Into<String>) {
            if let Some(cx) = &self.0 {
                cx.span().set_status(Status::error(message.into()));
            }
        }

        /// The span's context (for the work it covers), else the current one.
        pub(crate) fn context(&self) -> Cx {
            self.0.clone().unwrap_or_else(Context::current)
        }
    }

    impl Drop for Child {
        fn drop(&mut self) {
            if let Some(cx) = &self.0 {
                cx.span().end();
            }
        }
    }

    /// A child span `name` of the current context, of `kind`
    /// (`client`: a downstream call; else internal).
    pub(crate) fn child(tel: Option<&Telemetry>, name: String, client: bool) -> Child {
        let Some(t) = tel else { return Child(None) };
        let cur = Context::current();
        if !cur.has_active_span() {
            return Child(None);
        }
        let span = t
            .tracer
            .span_builder(name)
            .with_kind(if client {
                SpanKind::Client
            } else {
                SpanKind::Internal
            })
            .start_with_context(&t.tracer, &cur);
        Child(Some(cur.with_span(span)))
    }

    /// Puts the current trace context (`traceparent`, `tracestate`) into a
    /// downstream request's `_meta`, when there is one.
    pub(crate) fn inject(meta: &mut Option<RequestMetaObject>) {
        let cx = Context::current();
        if !cx.span().span_context().is_valid() {
            return;
        }
        let m = meta.get_or_insert_with(RequestMetaObject::default);
        TraceContextPropagator::new().inject_context(&cx, &mut MetaInjector(&mut (m.0).0));
    }

    /// The current trace id (32 hex digits), if the request has one.
    pub(crate) fn current_trace_id() -> Option<String> {
        let cx = Context::current();
        let sc = cx.span().span_context().clone();
        sc.is_valid().then(|| sc.trace_id().to_string())
    }
}

#[cfg(not(feature = "otel"))]
mod imp {
    use super::*;

    /// Without the `otel` feature: no trace context.
    pub(crate) type Cx = ();

    impl Telemetry {
        /// Without the `otel` feature traces are never on.
        pub fn from_env() -> Result<Option<Telemetry>, String> {
            if wanted_by_env() {
                tracing::warn!(
                    "OTEL_EXPORTER_OTLP_ENDPOINT is set, but this build has no `otel` feature: no traces"
                );
            }
            Ok(None)
        }
        /// Nothing to stop.
        pub async fn shutdown(&self) {}
    }

    pub(crate) fn request(
        _: Option<&Telemetry>,
        _: &RequestContext<RoleServer>,
        _: &[&JsonObject],
        _: &'static str,
        _: Target<'_>,
        _: &str,
    ) -> Cx {
    }

    pub(crate) async fn run_rpc<T, F>(_: Cx, f: F) -> Result<T, McpError>
    where
        F: Future<Output = Result<T, McpError>>,
    {
        f.await
    }

    pub(crate) async fn within<F: Future>(_: Cx, f: F) -> F::Output {
        f.await
    }

    pub(crate) struct Child;

    impl Child {
        pub(crate) fn set(&self, _: &'static str, _: impl Into<String>) {}
        pub(crate) fn error(&self, _: impl Into<String>) {}
        pub(crate) fn context(&self) -> Cx {}
    }

    pub(crate) fn child(_: Option<&Telemetry>, _: String, _: bool) -> Child {
        Child
    }

    pub(crate) fn inject(_: &mut Option<RequestMetaObject>) {}

    pub(crate) fn current_trace_id() -> Option<String> {
        None
    }
}

pub(crate) use imp::{Cx, child, current_trace_id, inject, request, run_rpc, within};
