//! Calling a model: one HTTP request per call, retried while nothing has streamed yet, and
//! the streamed response turned into events and a message by the provider's parser. This is
//! the HTTP plumbing every provider shares (sending with retries and timeouts, reading the
//! body chunk by chunk, ending the message); what differs comes from the wire API's
//! `Provider` (see [`crate::providers`]), picked once in [`Client::stream`].
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
//!
//! Bounds: one answer may hold at most [`MAX_ANSWER_CONTENT`] bytes of text, thinking and
//! tool-call arguments, and its body at most [`MAX_ANSWER_BODY`] bytes (events and their
//! framing); past either the call ends with an error saying so, the content so far kept.
//! An error response's body is read up to [`MAX_ERROR_BODY`] bytes. Deltas are accumulated
//! in amortised linear time (see `providers::blocks`), so a hostile server costs time and
//! memory in proportion to what it sends, up to these caps.

use std::time::Duration;

/// The most text, thinking and tool-call arguments one answer may hold (32 MiB).
pub const MAX_ANSWER_CONTENT: usize = 32 << 20;

/// The most bytes of body one answer may stream (128 MiB).
pub const MAX_ANSWER_BODY: usize = 128 << 20;

/// The most bytes of an error response's body that are read (64 KiB).
pub const MAX_ERROR_BODY: usize = 64 << 10;

use crate::http::{error_chain, timeout};
use crate::message::{AssistantMessage, Event, LlmError, Sink, StopReason};
use crate::providers::{
    Call, ErrorResponse, Parser, Prepared, Provider, anthropic, bedrock, google, mistral, openai,
    responses,
};
use crate::request::{Options, Request, Target, Wire};
use crate::secrets::redact;

/// The HTTP client could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the HTTP client: {0}")]
pub struct ClientError(String);

/// An HTTP client for model APIs (TLS by rustls with the ring provider).
pub struct Client {
    http: reqwest::Client,
}

/// What a call asks: of which model, with which context and options.
#[derive(Clone, Copy)]
struct Ask<'a> {
    target: &'a Target,
    req: &'a Request,
    opts: &'a Options,
}

/// Why a request produced no response to stream.
struct Failed {
    message: String,
    status: Option<u16>,
    retryable: bool,
    /// The delay the server asked for, in milliseconds.
    retry_after: Option<f64>,
}

impl Failed {
    /// No answer at all (a connection error, a timeout): worth another try.
    fn unanswered(message: String) -> Failed {
        Failed {
            message,
            status: None,
            retryable: true,
            retry_after: None,
        }
    }
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

    /// Makes a call, handing every event to `sink` as the response streams.
    pub async fn stream(
        &self,
        target: &Target,
        req: &Request,
        opts: &Options,
        sink: Sink<'_>,
    ) -> AssistantMessage {
        let ask = Ask { target, req, opts };
        match target.wire {
            Wire::OpenAiCompletions => self.call::<openai::Completions>(ask, sink).await,
            Wire::AnthropicMessages => self.call::<anthropic::Messages>(ask, sink).await,
            Wire::OpenAiResponses | Wire::AzureResponses | Wire::CodexResponses => {
                self.call::<responses::Responses>(ask, sink).await
            }
            Wire::Mistral => self.call::<mistral::Conversations>(ask, sink).await,
            Wire::GoogleGenerativeAi | Wire::GoogleVertex => {
                self.call::<google::Gemini>(ask, sink).await
            }
            Wire::BedrockConverseStream => self.call::<bedrock::ConverseStream>(ask, sink).await,
        }
    }

    /// A call to provider `P`: its key, its request, sent and read.
    async fn call<P: Provider>(&self, ask: Ask<'_>, sink: Sink<'_>) -> AssistantMessage {
        let Ask { target, req, opts } = ask;
        let now_ms = opts.now_ms();
        let env = |k: &str| opts.var(k);
        let key = opts
            .api_key
            .clone()
            .or_else(|| crate::auth::env_api_key(&target.model.provider));
        let mut secrets = opts.secrets.clone();
        secrets.extend(key.clone());
        let key = match key {
            Some(k) => k,
            None if !P::needs_key(target.wire) => String::new(),
            None => {
                let message = format!("No API key for provider: {}", target.model.provider);
                let m = AssistantMessage::for_target(target, now_ms);
                return end(m, Err(message.into()), &[], sink);
            }
        };
        let call = Call {
            http: &self.http,
            target,
            req,
            opts,
            key: &key,
            env: &env,
            now_ms,
        };
        let request = match P::request(&call).await {
            Ok(r) => r,
            Err(e) => {
                return end(
                    AssistantMessage::for_target(target, now_ms),
                    Err(e),
                    &secrets,
                    sink,
                );
            }
        };
        secrets.extend(request.secrets.iter().cloned());
        let response = self.send::<P>(&call, &request, &secrets, sink).await;
        read(P::parser(&call), response, opts, &secrets, sink).await
    }

    /// Sends the request until it gets a successful response (or gives up).
    async fn send<P: Provider>(
        &self,
        call: &Call<'_>,
        request: &Prepared,
        secrets: &[String],
        sink: Sink<'_>,
    ) -> Result<reqwest::Response, LlmError> {
        let retries = &call.opts.retry;
        let mut retry = 0u32;
        loop {
            let failed = match self.attempt::<P>(call, request).await {
                Ok(resp) => return Ok(resp),
                Err(f) => f,
            };
            let message = redact(&failed.message, secrets);
            let error = |message: String| LlmError {
                message,
                status: failed.status,
            };
            if !failed.retryable || retry >= P::max_retries(call) {
                return Err(error(message));
            }
            let delay = match failed.retry_after {
                Some(ms) => {
                    let cap = retries.max_delay_ms;
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
            let m = AssistantMessage::new(call.target.wire.api(), "", "", call.now_ms);
            let retrying = Event::Retry {
                attempt: retry,
                max_retries: retries.max_retries,
                delay_ms: delay,
                error: message,
            };
            sink(&retrying, &m);
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
    }

    /// Sends the request once.
    async fn attempt<P: Provider>(
        &self,
        call: &Call<'_>,
        request: &Prepared,
    ) -> Result<reqwest::Response, Failed> {
        let timeout = timeout(call.opts);
        let mut rb = self.http.post(&request.url).body(request.body.clone());
        for (k, v) in &request.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        match tokio::time::timeout(timeout, rb.send()).await {
            Err(_) => Err(Failed::unanswered("Request timed out.".into())),
            Ok(Err(e)) => Err(Failed::unanswered(format!(
                "Connection error. ({})",
                error_chain(&e)
            ))),
            Ok(Ok(resp)) if resp.status().is_success() => Ok(resp),
            Ok(Ok(resp)) => Err(refused::<P>(call, resp, timeout).await),
        }
    }
}

/// A response with an error status, in the provider's words. Never another 4xx than 429
/// is retried, whatever the server says (Codex: also errors that read like a rate limit).
async fn refused<P: Provider>(
    call: &Call<'_>,
    resp: reqwest::Response,
    timeout: Duration,
) -> Failed {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = String::from_utf8_lossy(&error_body(resp, timeout).await).into_owned();
    let response = ErrorResponse {
        status,
        headers,
        body,
    };
    let should = response.header("x-should-retry").map(|v| v == "true");
    Failed {
        message: P::http_error(call, &response),
        status: Some(status),
        retryable: P::retryable(call, &response) && should != Some(false),
        retry_after: retry_after(&response.headers),
    }
}

/// The first [`MAX_ERROR_BODY`] bytes of an error response's body (what arrived in time);
/// the rest is not read.
async fn error_body(mut resp: reqwest::Response, timeout: Duration) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY {
        match tokio::time::timeout(timeout, resp.chunk()).await {
            Ok(Ok(Some(c))) => body.extend_from_slice(&c),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY);
    body
}

/// Streams the response (if the request got one) through the provider's parser into the
/// final message.
async fn read<P: Parser>(
    mut p: P,
    response: Result<reqwest::Response, LlmError>,
    opts: &Options,
    secrets: &[String],
    sink: Sink<'_>,
) -> AssistantMessage {
    let result = match response {
        Err(e) => Err(e),
        Ok(resp) => {
            // The content of the answer, counted from its deltas.
            let content = std::cell::Cell::new(0usize);
            let mut counted = |ev: &Event, m: &AssistantMessage| {
                if let Event::TextDelta { delta, .. }
                | Event::ThinkingDelta { delta, .. }
                | Event::ToolCallDelta { delta, .. } = ev
                {
                    content.set(content.get().saturating_add(delta.len()));
                }
                sink(ev, m);
            };
            p.start(&mut counted);
            let read = read_chunks(resp, opts, &mut p, &mut counted, &content).await;
            read.and_then(|()| p.finish(&mut counted))
        }
    };
    end(p.into_message(), result, secrets, sink)
}

/// Hands the body to the parser chunk by chunk (each within the timeout) until it says the
/// response is complete; the end of the body is handed over as `None`.
async fn read_chunks<P: Parser>(
    mut resp: reqwest::Response,
    opts: &Options,
    parser: &mut P,
    sink: Sink<'_>,
    content: &std::cell::Cell<usize>,
) -> Result<(), LlmError> {
    let timeout = timeout(opts);
    let mut body = 0usize;
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
        body = body.saturating_add(chunk.as_ref().map_or(0, |c| c.len()));
        if body > MAX_ANSWER_BODY {
            return Err(format!(
                "the answer is too large: its body passed {} MiB (pi's limit for one answer)",
                MAX_ANSWER_BODY >> 20
            )
            .into());
        }
        if parser.feed(chunk.as_deref(), sink)? || chunk.is_none() {
            return Ok(());
        }
        if content.get() > MAX_ANSWER_CONTENT {
            return Err(format!(
                "the answer is too large: its text, thinking and tool-call arguments passed {} MiB (pi's limit for one answer)",
                MAX_ANSWER_CONTENT >> 20
            )
            .into());
        }
    }
}

/// Reports the end of the call: done, or failed with the error's message (secrets cut out).
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
