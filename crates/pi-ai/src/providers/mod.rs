//! The wire APIs, one folder each, behind one `Provider` trait: how a request is written
//! from a context (its messages in the API's form, the body, the headers), how the API words
//! its HTTP errors and which of them are worth retrying, and how the streamed answer is read
//! back into events and a message. What every provider shares lives here too: the request
//! ready to send (`Prepared`), the failed response (`ErrorResponse`), the reading of a
//! streamed body (`Parser`) and the assembly of content blocks (`blocks`).

pub mod anthropic;
pub mod bedrock;
pub(crate) mod blocks;
pub(crate) mod google;
pub(crate) mod mistral;
pub mod openai;
pub(crate) mod responses;
pub(crate) mod sse;

use serde_json::Value;

use crate::http::set_header;
use crate::message::{AssistantMessage, Event, LlmError, Sink};
use crate::models::Model;
use crate::request::{Options, Request, Target, Wire};

/// Reads an environment variable as the call sees it (set and not empty).
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// An environment of these variables only (for tests).
#[cfg(test)]
pub(crate) fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let m: std::collections::HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k: &str| m.get(k).cloned()
}

/// One call, as a provider sees it.
pub(crate) struct Call<'a> {
    /// For the requests a provider makes before its own (cloud credentials).
    pub(crate) http: &'a reqwest::Client,
    pub(crate) target: &'a Target,
    pub(crate) req: &'a Request,
    pub(crate) opts: &'a Options,
    /// The API key (empty when the provider needs none and none is configured).
    pub(crate) key: &'a str,
    /// The environment (see [`Options::var`]).
    pub(crate) env: Env<'a>,
    /// When the call started, in Unix milliseconds (what the message records).
    pub(crate) now_ms: i64,
}

/// A request ready to send.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub(crate) url: String,
    /// Every header, the caller's included (in the order they apply).
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// Credentials fetched for the request, to cut out of every message.
    pub(crate) secrets: Vec<String>,
}

impl Prepared {
    /// A request with a JSON body: `content-type` and the caller's headers over the API's
    /// own.
    pub(crate) fn json(
        opts: &Options,
        url: String,
        mut headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> Prepared {
        set_header(&mut headers, "content-type", "application/json".to_owned());
        Prepared {
            url,
            headers: with_caller(headers, opts),
            body,
            secrets: Vec::new(),
        }
    }
}

/// Adds the caller's headers (the model's, the provider's, `--header`s) over `headers`.
pub(crate) fn with_caller(
    mut headers: Vec<(String, String)>,
    opts: &Options,
) -> Vec<(String, String)> {
    for (k, v) in &opts.headers {
        set_header(&mut headers, k, v.clone());
    }
    headers
}

/// The output limit of a request: the caller's, else the model's (at most 32000); none
/// when neither is known.
pub(crate) fn max_tokens(opts: &Options, model: &Model) -> Option<u64> {
    opts.max_tokens
        .or_else(|| (model.max_tokens > 0).then(|| model.max_tokens.min(32_000)))
}

/// The thinking level to send, if any: set, not `off`, clamped to the model's levels.
pub(crate) fn thinking_level(target: &Target, opts: &Options) -> Option<&'static str> {
    let level = opts.reasoning.as_deref().filter(|l| *l != "off")?;
    let l = crate::models::clamp_thinking_level(&target.model, &target.details, level);
    (l != "off").then_some(l)
}

/// The reference 1.6's sampling parameters of an OpenAI-compatible request, set over the
/// body's own fields: the model's `samplingParams`, with `samplingParamsByThinkingLevel` of
/// the request's level (clamped to the model's; `off` when none) over them.
pub(crate) fn apply_sampling(b: &mut crate::value::Obj, target: &Target, opts: &Options) {
    let d = &target.details;
    let level = crate::models::clamp_thinking_level(
        &target.model,
        d,
        opts.reasoning.as_deref().unwrap_or("off"),
    );
    let by_level = d.sampling_by_level.get(level).and_then(Value::as_object);
    for (k, v) in d
        .sampling_params
        .iter()
        .chain(by_level.into_iter().flatten())
    {
        b.set(k, openai::js(v));
    }
}

/// An answer with an error status.
pub(crate) struct ErrorResponse {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    /// The body (its first 64 KiB, as text).
    pub(crate) body: String,
}

impl ErrorResponse {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The error statuses worth another try: 429 and 5xx (never another 4xx).
pub(crate) fn retryable_status(status: u16) -> bool {
    status == 429 || status >= 500
}

/// Reads one streamed response into events and the final message.
pub(crate) trait Parser {
    /// The message as it stands.
    fn message(&self) -> &AssistantMessage;

    fn into_message(self) -> AssistantMessage;

    /// The request was accepted: the answer starts (most APIs; Bedrock's starts with its
    /// first event).
    fn start(&mut self, sink: Sink) {
        sink(&Event::Start, self.message());
    }

    /// Reads a chunk of the body (`None`: the body ended); `Ok(true)` when the response is
    /// complete (nothing more is read).
    fn feed(&mut self, chunk: Option<&[u8]>, sink: Sink) -> Result<bool, LlmError>;

    /// After the last chunk read: ends what is left open and checks that the response was
    /// complete and successful.
    fn finish(&mut self, sink: Sink) -> Result<(), LlmError>;
}

/// One wire API (a folder of this module): its requests, its errors and its streamed
/// answers. [`crate::client`] does the rest (sending with retries and timeouts, reading the
/// body, ending the message) for every provider alike.
///
/// To add a provider:
///
/// 1. add a folder here, with the conversion of the LLM messages to the API's form beside
///    a `mod.rs` that writes the request and reads the stream;
/// 2. implement this trait on a type of that folder: [`Provider::request`] (async, so that
///    credentials can be fetched first), [`Provider::http_error`], the retry rules when they
///    differ from the usual ones, and a [`Parser`]: for a server-sent event stream, an
///    [`crate::providers::sse::Events`] handler read by an [`crate::providers::sse::Reader`]; for another
///    framing, a parser of its own that keeps a [`blocks::Draft`] of the message. Either
///    way the content is built with the [`blocks::Assembler`] (opening, appending to and
///    ending blocks), never by hand;
/// 3. add a [`Wire`] variant (and its `api` name in `request.rs`), and its arm in
///    `Client::stream`'s `match`.
pub(crate) trait Provider {
    type Parser: Parser;

    /// Whether a call needs an API key (else the provider finds its credentials itself).
    fn needs_key(_wire: Wire) -> bool {
        true
    }

    /// The URL, headers and body of the request.
    async fn request(call: &Call<'_>) -> Result<Prepared, LlmError>;

    /// The message of a failed request, as the API's SDK words it (the reference's
    /// `errorMessage`).
    fn http_error(call: &Call<'_>, response: &ErrorResponse) -> String;

    /// How many times a failed request may be sent again.
    fn max_retries(call: &Call<'_>) -> u32 {
        call.opts.retry.max_retries
    }

    /// Whether an error status is worth another try (unless the server says not to): 429
    /// and 5xx.
    fn retryable(_call: &Call<'_>, response: &ErrorResponse) -> bool {
        retryable_status(response.status)
    }

    /// The parser of the streamed answer.
    fn parser(call: &Call<'_>) -> Self::Parser;
}
