//! A scripted model server for tests: HTTP on 127.0.0.1 (a port of its own), speaking the
//! OpenAI Chat Completions, Anthropic Messages and OpenAI Responses streaming formats (and
//! any other given as SSE text).
//!
//! Replies are queued by the test ([`ModelServer::push`]) and taken in order by the requests
//! that arrive; a reply may only match requests whose body contains a text
//! ([`Reply::when`]), for calls made at the same time. Every request is recorded (method,
//! path, headers, body, arrival time) for assertions. A reply can split its bytes into
//! small chunks (in the middle of lines), wait between chunks, cut the connection midway,
//! or be an error status with headers (429 with `retry-after`, 500, an overflow body). A
//! request with no reply queued gets a 599 error.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Time since the server started.
    pub at: Duration,
}

impl Recorded {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header by name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One step of writing a reply body.
#[derive(Debug, Clone)]
pub enum Step {
    Bytes(Vec<u8>),
    Wait(Duration),
    /// Close the connection here, without ending the body.
    Cut,
}

/// A scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub steps: Vec<Step>,
    /// Only for a request whose body contains this text.
    pub when: Option<String>,
    /// Streamed with chunked transfer encoding (else sent with a content length).
    pub chunked: bool,
}

impl Reply {
    /// A stream of server-sent events, as written.
    pub fn sse(body: String) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            steps: vec![Step::Bytes(body.into_bytes())],
            when: None,
            chunked: true,
        }
    }

    /// A JSON error (or any status) with a body.
    pub fn status(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            steps: vec![Step::Bytes(body.as_bytes().to_vec())],
            when: None,
            chunked: false,
        }
    }

    /// OpenAI: these chunks as `data:` events, then `data: [DONE]`.
    pub fn openai_chunks(chunks: &[Value]) -> Reply {
        let mut body = String::new();
        for c in chunks {
            body.push_str(&format!("data: {c}\n\n"));
        }
        body.push_str("data: [DONE]\n\n");
        Reply::sse(body)
    }

    /// OpenAI: a text answer streamed in pieces, with usage.
    pub fn openai_text(pieces: &[&str]) -> Reply {
        let mut chunks = vec![
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": null}}]}),
        ];
        for p in pieces {
            chunks.push(
                json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": p}}]}),
            );
        }
        chunks.push(json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}));
        chunks.push(json!({"id": "chatcmpl-1", "choices": [],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}}));
        Reply::openai_chunks(&chunks)
    }

    /// Anthropic: these `(event, data)` pairs.
    pub fn anthropic_events(events: &[(&str, Value)]) -> Reply {
        let mut body = String::new();
        for (name, data) in events {
            body.push_str(&format!("event: {name}\ndata: {data}\n\n"));
        }
        Reply::sse(body)
    }

    /// Anthropic: a text answer streamed in pieces, with usage.
    pub fn anthropic_text(pieces: &[&str]) -> Reply {
        let mut ev = vec![
            (
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "content": [], "model": "a", "stop_reason": null,
                "usage": {"input_tokens": 120, "output_tokens": 1}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ),
            ("ping", json!({"type": "ping"})),
        ];
        for p in pieces {
            ev.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": p}}),
            ));
        }
        ev.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ));
        ev.push((
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 30}}),
        ));
        ev.push(("message_stop", json!({"type": "message_stop"})));
        Reply::anthropic_events(&ev)
    }

    /// OpenAI Responses: these events (each with its `type` as the SSE event name).
    pub fn responses_events(events: &[Value]) -> Reply {
        let mut body = String::new();
        for (n, e) in events.iter().enumerate() {
            let mut e = e.clone();
            e["sequence_number"] = json!(n);
            body.push_str(&format!(
                "event: {}\ndata: {e}\n\n",
                e["type"].as_str().unwrap_or("")
            ));
        }
        Reply::sse(body)
    }

    /// OpenAI Responses: a text answer streamed in pieces, with usage.
    pub fn responses_text(pieces: &[&str]) -> Reply {
        let text: String = pieces.concat();
        let resp = |status: &str| json!({"id": "resp_1", "object": "response", "status": status, "model": "m", "output": []});
        let mut ev = vec![
            json!({"type": "response.created", "response": resp("in_progress")}),
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
            json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0,
                   "part": {"type": "output_text", "annotations": [], "text": ""}}),
        ];
        for p in pieces {
            ev.push(json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": p}));
        }
        ev.push(
            json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
                     "content": [{"type": "output_text", "annotations": [], "text": text}]}}),
        );
        let mut done = resp("completed");
        done["usage"] = json!({"input_tokens": 120, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 30, "total_tokens": 150});
        ev.push(json!({"type": "response.completed", "response": done}));
        Reply::responses_events(&ev)
    }

    /// Only for requests whose body contains `text`.
    pub fn when(mut self, text: &str) -> Reply {
        self.when = Some(text.to_owned());
        self
    }

    pub fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.to_owned(), v.to_owned()));
        self
    }

    fn body(&self) -> Vec<u8> {
        self.steps
            .iter()
            .flat_map(|s| match s {
                Step::Bytes(b) => b.clone(),
                _ => Vec::new(),
            })
            .collect()
    }

    /// Sends the body in pieces of `n` bytes (lines and characters split anywhere).
    pub fn split(mut self, n: usize) -> Reply {
        let body = self.body();
        self.steps = body
            .chunks(n.max(1))
            .map(|c| Step::Bytes(c.to_vec()))
            .collect();
        self
    }

    /// Waits before sending anything.
    pub fn delay(mut self, d: Duration) -> Reply {
        self.steps.insert(0, Step::Wait(d));
        self
    }

    /// Waits between every two pieces.
    pub fn pace(mut self, d: Duration) -> Reply {
        let mut steps = Vec::new();
        for s in self.steps {
            if matches!(s, Step::Bytes(_)) && !steps.is_empty() {
                steps.push(Step::Wait(d));
            }
            steps.push(s);
        }
        self.steps = steps;
        self
    }

    /// Sends the body up to the first occurrence of `marker`, waits `d`, then sends the
    /// rest (a stream that stalls in the middle).
    pub fn stall_at(mut self, marker: &str, d: Duration) -> Reply {
        let body = self.body();
        let at = body
            .windows(marker.len().max(1))
            .position(|w| w == marker.as_bytes())
            .unwrap_or(body.len());
        self.steps = vec![
            Step::Bytes(body[..at].to_vec()),
            Step::Wait(d),
            Step::Bytes(body[at..].to_vec()),
        ];
        self
    }

    /// Sends only the first `n` bytes of the body, then closes the connection.
    pub fn cut_after(mut self, n: usize) -> Reply {
        let body = self.body();
        self.steps = vec![Step::Bytes(body[..n.min(body.len())].to_vec()), Step::Cut];
        self
    }
}

#[derive(Default)]
struct State {
    replies: VecDeque<Reply>,
    requests: Vec<Recorded>,
}

/// The server; it stops when dropped.
pub struct ModelServer {
    port: u16,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl ModelServer {
    pub fn start() -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local addr").port();
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        let started = Instant::now();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if sp.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let st = st.clone();
                std::thread::spawn(move || serve(conn, &st, started));
            }
        });
        ModelServer { port, state, stop }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn push(&self, reply: Reply) {
        self.state.lock().unwrap().replies.push_back(reply);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Waits (at most 20 s) until `n` requests have arrived.
    pub fn wait_for(&self, n: usize) {
        let start = Instant::now();
        while self.requests().len() < n {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the model server got {} requests, waited for {n}",
                self.requests().len()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(conn: TcpStream, state: &Mutex<State>, started: Instant) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(match conn.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    });
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let len = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let reply = {
        let mut st = state.lock().unwrap();
        st.requests.push(Recorded {
            method,
            path,
            headers,
            body: body.clone(),
            at: started.elapsed(),
        });
        let pos = st.replies.iter().position(|r| {
            r.when
                .as_ref()
                .is_none_or(|w| String::from_utf8_lossy(&body).contains(w.as_str()))
        });
        pos.and_then(|p| st.replies.remove(p))
    };
    let reply =
        reply.unwrap_or_else(|| Reply::status(599, r#"{"error":{"message":"no reply scripted"}}"#));
    let _ = respond(conn, &reply);
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn respond(mut conn: TcpStream, r: &Reply) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nconnection: close\r\n",
        r.status,
        reason(r.status)
    );
    for (k, v) in &r.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if r.chunked {
        head.push_str("transfer-encoding: chunked\r\n\r\n");
    } else {
        head.push_str(&format!("content-length: {}\r\n\r\n", r.body().len()));
    }
    conn.write_all(head.as_bytes())?;
    conn.flush()?;
    for s in &r.steps {
        match s {
            Step::Wait(d) => std::thread::sleep(*d),
            Step::Cut => {
                let _ = conn.shutdown(std::net::Shutdown::Both);
                return Ok(());
            }
            Step::Bytes(b) if r.chunked => {
                conn.write_all(format!("{:x}\r\n", b.len()).as_bytes())?;
                conn.write_all(b)?;
                conn.write_all(b"\r\n")?;
                conn.flush()?;
            }
            Step::Bytes(b) => {
                conn.write_all(b)?;
                conn.flush()?;
            }
        }
    }
    if r.chunked {
        conn.write_all(b"0\r\n\r\n")?;
    }
    conn.flush()
}
