//! Calling a model: one HTTP request per call, retried while nothing has streamed yet, and
//! the streamed response turned into events and a message by the provider's parser.
//!
//! Contract (the reference's): [`Client::stream`] never fails; a failure is a message whose
//! `stopReason` is `error` (with `errorMessage`), and the content produced before it is
//! kept. Errors read like the reference's (`STATUS BODY` for HTTP errors, `Connection
//! error.`, `Request timed out.`), so the overflow and retry patterns apply to them, and
//! every message has the keys and configured header values cut out. Cancel a call by
//! dropping its future.
//!
//! Retries: a request that gets 429 or a 5xx status, or no response at all (connection
//! error, timeout), is sent again up to `retry.max_retries` times: after the delay the
//! server asks for (`retry-after-ms`, `retry-after`), or 0.5 s, 1 s, 2 s … (at most 8 s,
//! less up to a quarter at random). Other 4xx statuses are final. A server asking for a
//! longer wait than `retry.max_delay_ms` ends the call with its error. Google's APIs are not
//! retried here (their SDK sends a request once, as the reference does).

use std::time::Duration;

use crate::auth::{redact, set_header};
use crate::message::{AssistantMessage, Event, LlmError, Sink, StopReason};
use crate::providers::anthropic;
use crate::providers::google::vertex;
use crate::providers::mistral;
use crate::providers::openai;
use crate::providers::responses::{self, Prepared};
use crate::providers::{bedrock, google};
use crate::request::{Options, Request, Target, Wire};
use crate::sse;

/// The HTTP client could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the HTTP client: {0}")]
pub struct ClientError(String);

/// An HTTP client for model APIs (TLS by rustls with the ring provider).
pub struct Client {
    http: reqwest::Client,
}

/// Why a request produced no response to stream.
struct Failed {
    message: String,
    status: Option<u16>,
    retryable: bool,
    /// The delay the server asked for, in milliseconds.
    retry_after: Option<f64>,
}

fn backoff_ms(retry: u32) -> u64 {
    let base = (500.0 * 2f64.powi(retry as i32)).min(8000.0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let jitter = 1.0 - f64::from(nanos % 1000) / 1000.0 * 0.25;
    (base * jitter) as u64
}

fn retry_after(h: &reqwest::header::HeaderMap) -> Option<f64> {
    let get = |k: &str| h.get(k).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(ms);
    }
    let v = get("retry-after")?;
    if let Ok(s) = v.parse::<f64>() {
        return (s.is_finite() && s >= 0.0).then_some(s * 1000.0);
    }
    // An HTTP date: the wait until then.
    let at = pi_base::clock::parse_http_date(v)?;
    Some((at - pi_base::clock::now_ms()).max(0) as f64)
}

/// The text of an error and its sources (reqwest puts the useful part in the sources).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        let t = x.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = x.source();
    }
    s
}

impl Client {
    pub fn new() -> Result<Client, ClientError> {
        // Several clients in one process share the provider; a second install is refused
        // harmlessly.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .user_agent(concat!("pi/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError(error_chain(&e)))?;
        Ok(Client { http })
    }

    /// The URL, headers and body of a request.
    fn prepare(
        &self,
        target: &Target,
        req: &Request,
        opts: &Options,
        key: &str,
    ) -> Result<Prepared, LlmError> {
        let model = &target.model;
        // Provider settings from the environment (Azure's resource and deployments,
        // Cloudflare's account) as the call sees it: the process's, or the one the
        // options give (tests, embedders).
        let env = |n: &str| opts.var(n);
        let old = |url, headers, body| with_json_headers(opts, url, headers, body);
        Ok(match target.wire {
            Wire::OpenAiCompletions => old(
                openai::url(model),
                vec![
                    ("accept".to_owned(), "application/json".to_owned()),
                    ("authorization".to_owned(), format!("Bearer {key}")),
                ],
                openai::body(target, req, opts),
            ),
            Wire::AnthropicMessages => {
                let oauth = anthropic::is_oauth(key);
                old(
                    anthropic::url(model),
                    anthropic::headers(target, req, key),
                    anthropic::body(target, req, opts, oauth),
                )
            }
            Wire::OpenAiResponses => responses::openai(target, req, opts, key, &env)?,
            Wire::AzureResponses => responses::azure(target, req, opts, key, &env)?,
            Wire::CodexResponses => responses::codex(target, req, opts, key)?,
            Wire::Mistral => mistral::request(target, req, opts, key),
            Wire::GoogleGenerativeAi | Wire::GoogleVertex | Wire::BedrockConverseStream => {
                return Err(LlmError {
                    message: format!("{} requests are prepared by the caller", target.wire.api()),
                    status: None,
                });
            }
        })
    }

    /// Makes a call and returns its final message (see the module documentation).
    pub async fn complete(
        &self,
        target: &Target,
        req: &Request,
        opts: &Options,
    ) -> AssistantMessage {
        self.stream(target, req, opts, &mut |_, _| {}).await
    }

    /// Makes a call, handing every event to `sink` as the response streams.
    pub async fn stream(
        &self,
        target: &Target,
        req: &Request,
        opts: &Options,
        sink: Sink<'_>,
    ) -> AssistantMessage {
        let timestamp = opts.now_ms();
        let env = |k: &str| opts.var(k);
        let model = &target.model;
        let key = opts
            .api_key
            .clone()
            .or_else(|| crate::auth::env_key(&model.provider).map(|(_, v)| v));
        let mut secrets = opts.secrets.clone();
        secrets.extend(key.clone());
        // Google's Gemini API needs a key; Vertex and Bedrock have cloud credentials too.
        let needs_key = !matches!(
            target.wire,
            Wire::GoogleVertex | Wire::BedrockConverseStream
        );
        let key = match key {
            Some(k) => k,
            None if !needs_key => String::new(),
            None => {
                let mut m = AssistantMessage::for_target(target, timestamp);
                m.fail(
                    StopReason::Error,
                    format!("No API key for provider: {}", model.provider),
                );
                sink(&Event::Error, &m);
                return m;
            }
        };
        let oauth = target.wire == Wire::AnthropicMessages && anthropic::is_oauth(&key);
        let prepared = match target.wire {
            Wire::GoogleGenerativeAi => Ok(with_json_headers(
                opts,
                google::url(model),
                vec![("x-goog-api-key".to_owned(), key.clone())],
                google::body(target, req, opts, false),
            )),
            Wire::GoogleVertex => {
                let timeout = Duration::from_millis(opts.retry.timeout_ms.max(1));
                let key = (!key.is_empty()).then_some(key.as_str());
                vertex::prepare(&self.http, model, key, &env, timeout, timestamp)
                    .await
                    .map(|(url, headers, more)| {
                        secrets.extend(more);
                        with_json_headers(opts, url, headers, google::body(target, req, opts, true))
                    })
            }
            // Signed as a whole: no other headers are added (the reference sends none).
            Wire::BedrockConverseStream => {
                bedrock::prepare(&self.http, target, req, opts, &env, timestamp)
                    .await
                    .map(|p| {
                        secrets.extend(p.secrets);
                        Prepared {
                            url: p.url,
                            headers: p.headers,
                            body: p.body,
                        }
                    })
            }
            _ => self.prepare(target, req, opts, &key),
        };
        let Prepared { url, headers, body } = match prepared {
            Ok(p) => p,
            Err(e) => {
                let mut m = AssistantMessage::for_target(target, timestamp);
                m.fail(StopReason::Error, redact(&e.message, &secrets));
                m.http_status = e.status;
                sink(&Event::Error, &m);
                return m;
            }
        };
        let response = self
            .send(
                target.wire,
                &url,
                &headers,
                body,
                opts,
                &secrets,
                timestamp,
                sink,
            )
            .await;
        match target.wire {
            Wire::OpenAiCompletions => {
                let s = openai::Stream::new(target, timestamp);
                parse(s, response, opts, &secrets, sink).await
            }
            Wire::AnthropicMessages => {
                let s = anthropic::Stream::new(target, req, oauth, timestamp);
                parse(s, response, opts, &secrets, sink).await
            }
            Wire::OpenAiResponses | Wire::AzureResponses | Wire::CodexResponses => {
                let s = responses::Stream::new(target, timestamp);
                parse(s, response, opts, &secrets, sink).await
            }
            Wire::Mistral => {
                let s = mistral::Stream::new(target, timestamp);
                parse(s, response, opts, &secrets, sink).await
            }
            Wire::GoogleGenerativeAi | Wire::GoogleVertex => {
                let s = google::Stream::new(target, timestamp);
                parse(s, response, opts, &secrets, sink).await
            }
            Wire::BedrockConverseStream => {
                let s = bedrock::Stream::new(target, timestamp);
                parse_frames(s, response, opts, &secrets, sink).await
            }
        }
    }

    /// Sends the request until it gets a successful response (or gives up).
    #[allow(clippy::too_many_arguments)]
    async fn send(
        &self,
        wire: Wire,
        url: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
        opts: &Options,
        secrets: &[String],
        timestamp: i64,
        sink: Sink<'_>,
    ) -> Result<reqwest::Response, LlmError> {
        let timeout = Duration::from_millis(opts.retry.timeout_ms.max(1));
        let mut retry = 0u32;
        loop {
            let mut rb = self.http.post(url).body(body.clone());
            for (k, v) in headers {
                rb = rb.header(k.as_str(), v.as_str());
            }
            let failed = match tokio::time::timeout(timeout, rb.send()).await {
                Err(_) => Failed {
                    message: "Request timed out.".into(),
                    status: None,
                    retryable: true,
                    retry_after: None,
                },
                Ok(Err(e)) => Failed {
                    message: format!("Connection error. ({})", error_chain(&e)),
                    status: None,
                    retryable: true,
                    retry_after: None,
                },
                Ok(Ok(resp)) if resp.status().is_success() => return Ok(resp),
                Ok(Ok(resp)) => {
                    let status = resp.status().as_u16();
                    let after = retry_after(resp.headers());
                    let should = resp
                        .headers()
                        .get("x-should-retry")
                        .and_then(|v| v.to_str().ok())
                        .map(|v| v == "true");
                    let header = |k: &str| {
                        resp.headers()
                            .get(k)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned)
                    };
                    let content_type = header("content-type").unwrap_or_default();
                    let error_type = header("x-amzn-errortype");
                    let text = match tokio::time::timeout(timeout, resp.bytes()).await {
                        Ok(Ok(b)) => {
                            String::from_utf8_lossy(&b[..b.len().min(64 << 10)]).into_owned()
                        }
                        _ => String::new(),
                    };
                    let message = match wire {
                        Wire::OpenAiCompletions | Wire::OpenAiResponses | Wire::AzureResponses => {
                            openai::http_error(status, &text)
                        }
                        Wire::AnthropicMessages => anthropic::http_error(status, &text),
                        Wire::CodexResponses => {
                            responses::codex_http_error(status, &text, pi_base::clock::now_ms())
                        }
                        Wire::Mistral => mistral::http_error(status, &text),
                        Wire::GoogleGenerativeAi | Wire::GoogleVertex => {
                            google::http_error(status, &content_type, &text)
                        }
                        Wire::BedrockConverseStream => {
                            bedrock::http_error(status, error_type.as_deref(), &text)
                        }
                    };
                    // Never another 4xx than 429, whatever the server says (Codex: also
                    // errors that read like a rate limit).
                    let retryable = (status == 429 || status >= 500)
                        || (wire == Wire::CodexResponses
                            && responses::codex_retryable(status, &text));
                    Failed {
                        message,
                        status: Some(status),
                        retryable: retryable && should != Some(false),
                        retry_after: after,
                    }
                }
            };
            let message = redact(&failed.message, secrets);
            let error = |message: String| LlmError {
                message,
                status: failed.status,
            };
            // Google's SDK sends a request once (the agent's own retries still apply).
            let max_retries = match wire {
                Wire::GoogleGenerativeAi | Wire::GoogleVertex => 0,
                _ => opts.retry.max_retries,
            };
            if !failed.retryable || retry >= max_retries {
                return Err(error(message));
            }
            let delay = match failed.retry_after {
                Some(ms) => {
                    let cap = opts.retry.max_delay_ms;
                    if cap > 0 && ms > cap as f64 {
                        return Err(error(format!(
                            "{message} (the server asked to retry after {:.1} s, longer than \
                             retry.provider.maxRetryDelayMs = {cap})",
                            ms / 1000.0
                        )));
                    }
                    ms as u64
                }
                None => backoff_ms(retry),
            };
            retry += 1;
            let m = AssistantMessage::new(wire.api(), "", "", timestamp);
            sink(
                &Event::Retry {
                    attempt: retry,
                    max_retries: opts.retry.max_retries,
                    delay_ms: delay,
                    error: message,
                },
                &m,
            );
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
    }
}

/// A provider's parser of a streamed response, building the message.
trait Parser {
    fn message(&self) -> &AssistantMessage;
    fn into_message(self) -> AssistantMessage;
    /// Handles one server-sent event; `Ok(true)` when the response is complete.
    fn event(&mut self, ev: &sse::Event, sink: Sink) -> Result<bool, LlmError>;
    /// The body ended: completes the message.
    fn finish(&mut self, sink: Sink) -> Result<(), LlmError>;
}

/// [`Parser`] for the streams whose events are `data:` lines only (`msg`, `done`, and their
/// own `data` and `finish`).
macro_rules! data_parser {
    ($($stream:ty),+) => {$(
        impl Parser for $stream {
            fn message(&self) -> &AssistantMessage {
                &self.msg
            }
            fn into_message(self) -> AssistantMessage {
                self.msg
            }
            fn event(&mut self, ev: &sse::Event, sink: Sink) -> Result<bool, LlmError> {
                self.data(&ev.data, sink).map(|()| self.done)
            }
            fn finish(&mut self, sink: Sink) -> Result<(), LlmError> {
                <$stream>::finish(self, sink)
            }
        }
    )+};
}

data_parser!(openai::Stream, responses::Stream, mistral::Stream);

impl Parser for anthropic::Stream {
    fn message(&self) -> &AssistantMessage {
        &self.msg
    }
    fn into_message(self) -> AssistantMessage {
        self.msg
    }
    fn event(&mut self, ev: &sse::Event, sink: Sink) -> Result<bool, LlmError> {
        anthropic::Stream::event(self, ev.event.as_deref(), &ev.data, sink).map(|()| self.stopped)
    }
    fn finish(&mut self, _sink: Sink) -> Result<(), LlmError> {
        anthropic::Stream::finish(self)
    }
}

impl Parser for google::Stream {
    fn message(&self) -> &AssistantMessage {
        &self.msg
    }
    fn into_message(self) -> AssistantMessage {
        self.msg
    }
    fn event(&mut self, ev: &sse::Event, sink: Sink) -> Result<bool, LlmError> {
        self.data(&ev.data, sink).map(|()| false)
    }
    fn finish(&mut self, sink: Sink) -> Result<(), LlmError> {
        google::Stream::finish(self, sink)
    }
}

/// Streams a Bedrock response (AWS event-stream frames) into the final message; `Start`
/// comes with the stream's `messageStart`, as the reference sends it.
async fn parse_frames(
    mut s: bedrock::Stream,
    response: Result<reqwest::Response, LlmError>,
    opts: &Options,
    secrets: &[String],
    sink: Sink<'_>,
) -> AssistantMessage {
    let result = match response {
        Err(e) => Err(e),
        Ok(resp) => {
            let read = {
                let mut on = |chunk: Option<&[u8]>, sink: Sink| match chunk {
                    Some(c) => s.feed(c, sink).map(|()| false),
                    None => Ok(true),
                };
                read_chunks(resp, opts, &mut on, sink).await
            };
            read.and_then(|()| s.finish(sink))
        }
    };
    end(s.msg, result, secrets, sink)
}

/// Streams the response (if the request got one) through the provider's parser into the
/// final message.
async fn parse<P: Parser>(
    mut p: P,
    response: Result<reqwest::Response, LlmError>,
    opts: &Options,
    secrets: &[String],
    sink: Sink<'_>,
) -> AssistantMessage {
    let result = match response {
        Err(e) => Err(e),
        Ok(resp) => {
            sink(&Event::Start, p.message());
            let read = {
                let mut on = |ev: &sse::Event, sink: Sink| p.event(ev, sink);
                read(resp, opts, &mut on, sink).await
            };
            read.and_then(|()| p.finish(sink))
        }
    };
    end(p.into_message(), result, secrets, sink)
}

/// Handles one server-sent event; `Ok(true)` when the response is complete.
type OnEvent<'a> = dyn FnMut(&sse::Event, &mut dyn FnMut(&Event, &AssistantMessage)) -> Result<bool, LlmError>
    + 'a;

/// Handles a chunk of the body (`None`: it ended); `Ok(true)` when the response is
/// complete.
type OnChunk<'a> = dyn FnMut(Option<&[u8]>, &mut dyn FnMut(&Event, &AssistantMessage)) -> Result<bool, LlmError>
    + 'a;

/// Reads the body as server-sent events until `on_event` says the response is complete or
/// the body ends.
async fn read(
    resp: reqwest::Response,
    opts: &Options,
    on_event: &mut OnEvent<'_>,
    sink: Sink<'_>,
) -> Result<(), LlmError> {
    let mut parser = sse::Parser::new();
    let mut on_chunk = |chunk: Option<&[u8]>, sink: Sink| {
        let events = match chunk {
            Some(bytes) => parser.feed(bytes),
            None => parser.finish().into_iter().collect(),
        };
        for ev in &events {
            if on_event(ev, sink)? {
                return Ok(true);
            }
        }
        Ok(chunk.is_none())
    };
    read_chunks(resp, opts, &mut on_chunk, sink).await
}

/// Reads the body chunk by chunk (each within the timeout) until `on_chunk` says the
/// response is complete; the end of the body is handed over as `None`.
async fn read_chunks(
    mut resp: reqwest::Response,
    opts: &Options,
    on_chunk: &mut OnChunk<'_>,
    sink: Sink<'_>,
) -> Result<(), LlmError> {
    let timeout = Duration::from_millis(opts.retry.timeout_ms.max(1));
    loop {
        let chunk = match tokio::time::timeout(timeout, resp.chunk()).await {
            Err(_) => {
                return Err(
                    format!("Request timed out: no data for {} s", timeout.as_secs()).into(),
                );
            }
            Ok(Err(e)) => {
                return Err(format!(
                    "terminated: the connection failed in the middle of the response ({})",
                    error_chain(&e)
                )
                .into());
            }
            Ok(Ok(c)) => c,
        };
        if on_chunk(chunk.as_deref(), sink)? || chunk.is_none() {
            return Ok(());
        }
    }
}

fn end(
    mut msg: AssistantMessage,
    result: Result<(), LlmError>,
    secrets: &[String],
    sink: Sink<'_>,
) -> AssistantMessage {
    match result {
        Ok(()) => sink(&Event::Done, &msg),
        Err(e) => {
            msg.fail(StopReason::Error, redact(&e.message, secrets));
            msg.http_status = e.status;
            sink(&Event::Error, &msg);
        }
    }
    msg
}

/// A request with a JSON body: `content-type` and the caller's headers over the API's own.
fn with_json_headers(
    opts: &Options,
    url: String,
    mut headers: Vec<(String, String)>,
    body: Vec<u8>,
) -> Prepared {
    set_header(&mut headers, "content-type", "application/json".to_owned());
    for (k, v) in &opts.headers {
        set_header(&mut headers, k, v.clone());
    }
    Prepared { url, headers, body }
}
