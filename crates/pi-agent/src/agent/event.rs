//! The events of a run, as the reference's JSON mode prints them (1.6): the agent loop's
//! (`agent_start` … `agent_end`, `message_*`, `tool_execution_*`) and the session's
//! (`compaction_start/end`, `auto_retry_start/end`, `extension_error`, `agent_settled`), with
//! upstream's field names and order. `message_update` is delta-only, as 1.6 writes it: the
//! answer's usage so far and the stream event without the partial answer, so the stream
//! grows with the answer, not with its square.
//!
//! Events borrow what they describe; [`Event::to_json`] writes one as the line JSON mode
//! prints (messages as JavaScript's `JSON.stringify` writes them).

use serde_json::Value as Json;

use super::Message;
use crate::compact::{CompactionReason, CompactionResult};
use pi_ai::value::Value;
use pi_ai::{self as llm, AssistantMessage};
use pi_base::js;
use pi_tools::{ToolOutput, ToolResult};

/// One event of a run.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    AgentStart,
    /// All messages this run produced (the prompt included); `will_retry` when an automatic
    /// retry of its failed answer follows.
    AgentEnd {
        messages: &'a [Message],
        will_retry: bool,
    },
    /// Nothing more follows on its own (retries, compaction, queued messages are done):
    /// 1.6's `agent_settled`, after the last `agent_end` of a prompt.
    AgentSettled {
        aborted: bool,
    },
    TurnStart,
    TurnEnd {
        message: &'a Message,
        tool_results: &'a [Message],
    },
    MessageStart {
        message: &'a Message,
    },
    /// The assistant message being streamed, after `event`.
    MessageUpdate {
        partial: &'a AssistantMessage,
        event: &'a llm::Event,
    },
    MessageEnd {
        message: &'a Message,
    },
    ToolExecutionStart {
        id: &'a str,
        name: &'a str,
        args: &'a Json,
    },
    ToolExecutionUpdate {
        id: &'a str,
        name: &'a str,
        args: &'a Json,
        partial: &'a ToolOutput,
    },
    ToolExecutionEnd {
        id: &'a str,
        name: &'a str,
        result: &'a ToolResult,
        is_error: bool,
        /// How long the tool ran (ms); `None` when it did not run (unknown tool, bad
        /// arguments, blocked).
        duration_ms: Option<u64>,
    },
    CompactionStart {
        reason: CompactionReason,
    },
    CompactionEnd {
        reason: CompactionReason,
        result: Option<&'a CompactionResult>,
        aborted: bool,
        will_retry: bool,
        error_message: Option<&'a str>,
    },
    AutoRetryStart {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: &'a str,
    },
    AutoRetryEnd {
        success: bool,
        attempt: u32,
        final_error: Option<&'a str>,
    },
    /// A hook failed (upstream's `extension_error`; `extensionPath` is the hook's command).
    ExtensionError {
        hook: &'a str,
        event: &'a str,
        error: &'a str,
    },
    /// The HTTP client sends a failed request again (429, 5xx, no answer) before anything
    /// streamed, as the providers' SDKs do upstream, where it is invisible. Not part of the
    /// JSON stream ([`Event::to_json`] gives `None`); shown in the human view.
    ProviderRetry {
        attempt: u32,
        max_retries: u32,
        delay_ms: u64,
        error: &'a str,
    },
}

/// A JSON object written key by key.
struct Obj(Vec<u8>);

impl Obj {
    fn new(ty: &str) -> Obj {
        let mut o = Obj(b"{\"type\":".to_vec());
        pi_base::json::write_str(&mut o.0, ty);
        o
    }

    fn raw(mut self, key: &str, value: &[u8]) -> Obj {
        self.0.push(b',');
        pi_base::json::write_str(&mut self.0, key);
        self.0.push(b':');
        self.0.extend_from_slice(value);
        self
    }

    fn str(self, key: &str, value: &str) -> Obj {
        let mut v = Vec::new();
        pi_base::json::write_str(&mut v, value);
        self.raw(key, &v)
    }

    /// [`Obj::str`] when there is a value, else nothing.
    fn opt_str(self, key: &str, value: Option<&str>) -> Obj {
        match value {
            Some(v) => self.str(key, v),
            None => self,
        }
    }

    /// The tool call's id, the tool's name and the arguments (of the start and update events).
    fn tool_call(self, id: &str, name: &str, args: &Json) -> Obj {
        self.str("toolCallId", id)
            .str("toolName", name)
            .raw("args", &js::stringify(args))
    }

    fn num(self, key: &str, n: impl Into<f64>) -> Obj {
        self.raw(key, js::number(n.into()).as_bytes())
    }

    fn bool(self, key: &str, b: bool) -> Obj {
        self.raw(key, if b { b"true" } else { b"false" })
    }

    fn done(mut self) -> Vec<u8> {
        self.0.push(b'}');
        self.0
    }
}

/// The `result` of a `compaction_end` event: the summary first, without a `type`.
fn compaction_result(r: &CompactionResult) -> Vec<u8> {
    let mut v = Obj(b"{".to_vec());
    v.0.extend_from_slice(b"\"summary\":");
    pi_base::json::write_str(&mut v.0, &r.summary);
    v = v
        .str("firstKeptEntryId", &r.first_kept_entry_id)
        .num("tokensBefore", r.tokens_before);
    if let Some(t) = r.estimated_tokens_after {
        v = v.num("estimatedTokensAfter", t);
    }
    if let Some(u) = &r.usage {
        v = v.raw("usage", &js::stringify(&u.to_json()));
    }
    v.raw("details", &js::stringify(&r.details)).done()
}

fn list(ms: &[Message]) -> Vec<u8> {
    let mut out = vec![b'['];
    for (k, m) in ms.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        m.write(&mut out);
    }
    out.push(b']');
    out
}

/// The name of an assistant-message event (`text_delta`, …) and its fields, without the
/// partial answer (1.6's wire form; `toolcall_start` names the call's id and tool); `None`
/// for events that are not `message_update`s.
fn stream_event(e: &llm::Event, partial: &AssistantMessage) -> Option<Vec<u8>> {
    use llm::Event as E;
    let (ty, index) = match e {
        E::TextStart { index } => ("text_start", *index),
        E::TextDelta { index, .. } => ("text_delta", *index),
        E::TextEnd { index } => ("text_end", *index),
        E::ThinkingStart { index } => ("thinking_start", *index),
        E::ThinkingDelta { index, .. } => ("thinking_delta", *index),
        E::ThinkingEnd { index } => ("thinking_end", *index),
        E::ToolCallStart { index } => ("toolcall_start", *index),
        E::ToolCallDelta { index, .. } => ("toolcall_delta", *index),
        E::ToolCallEnd { index } => ("toolcall_end", *index),
        _ => return None,
    };
    let mut o = Obj::new(ty).num("contentIndex", index as f64);
    match e {
        E::ToolCallStart { .. } => {
            if let Some(llm::Block::ToolCall { id, name, .. }) = partial.content.get(index) {
                o = o.str("id", id).str("toolName", name);
            }
        }
        E::TextDelta { delta, .. }
        | E::ThinkingDelta { delta, .. }
        | E::ToolCallDelta { delta, .. } => {
            o = o.str("delta", delta);
        }
        E::TextEnd { .. } | E::ThinkingEnd { .. } => {
            let text = match partial.content.get(index) {
                Some(llm::Block::Text { text, .. }) => text.as_str(),
                Some(llm::Block::Thinking { thinking, .. }) => thinking.as_str(),
                _ => "",
            };
            o = o.str("content", text);
        }
        E::ToolCallEnd { .. } => {
            let block = partial
                .content
                .get(index)
                .map(|b| js::stringify(&b.to_json()))
                .unwrap_or_else(|| b"null".to_vec());
            o = o.raw("toolCall", &block);
        }
        _ => {}
    }
    Some(o.done())
}

/// An assistant message as an agent message.
pub(crate) fn assistant_value(m: &AssistantMessage) -> Message {
    let bytes = serde_json::to_vec(&m.to_json()).unwrap_or_default();
    Value::parse(&bytes).unwrap_or_default()
}

impl Event<'_> {
    /// The event's `type`.
    pub fn name(&self) -> &'static str {
        match self {
            Event::AgentStart => "agent_start",
            Event::AgentEnd { .. } => "agent_end",
            Event::AgentSettled { .. } => "agent_settled",
            Event::TurnStart => "turn_start",
            Event::TurnEnd { .. } => "turn_end",
            Event::MessageStart { .. } => "message_start",
            Event::MessageUpdate { .. } => "message_update",
            Event::MessageEnd { .. } => "message_end",
            Event::ToolExecutionStart { .. } => "tool_execution_start",
            Event::ToolExecutionUpdate { .. } => "tool_execution_update",
            Event::ToolExecutionEnd { .. } => "tool_execution_end",
            Event::CompactionStart { .. } => "compaction_start",
            Event::CompactionEnd { .. } => "compaction_end",
            Event::AutoRetryStart { .. } => "auto_retry_start",
            Event::AutoRetryEnd { .. } => "auto_retry_end",
            Event::ProviderRetry { .. } => "provider_retry",
            Event::ExtensionError { .. } => "extension_error",
        }
    }

    /// The line JSON mode prints for this event (without the newline); `None` for events
    /// upstream does not print.
    pub fn to_json(&self) -> Option<Vec<u8>> {
        let o = Obj::new(self.name());
        Some(match self {
            Event::AgentStart | Event::TurnStart => o.done(),
            Event::AgentEnd {
                messages,
                will_retry,
            } => o
                .raw("messages", &list(messages))
                .bool("willRetry", *will_retry)
                .done(),
            Event::AgentSettled { aborted } => o.bool("aborted", *aborted).done(),
            Event::TurnEnd {
                message,
                tool_results,
            } => o
                .raw("message", &message.to_json())
                .raw("toolResults", &list(tool_results))
                .done(),
            Event::MessageStart { message } | Event::MessageEnd { message } => {
                o.raw("message", &message.to_json()).done()
            }
            Event::MessageUpdate { partial, event } => {
                let e = stream_event(event, partial)?;
                o.raw("usage", &js::stringify(&partial.usage.to_json()))
                    .raw("assistantMessageEvent", &e)
                    .done()
            }
            Event::ToolExecutionStart { id, name, args } => o.tool_call(id, name, args).done(),
            Event::ToolExecutionUpdate {
                id,
                name,
                args,
                partial,
            } => o
                .tool_call(id, name, args)
                .raw("partialResult", &js::stringify(&partial.to_json()))
                .done(),
            Event::ToolExecutionEnd {
                id,
                name,
                result,
                is_error,
                duration_ms,
            } => {
                let o = o
                    .str("toolCallId", id)
                    .str("toolName", name)
                    .raw("result", &js::stringify(&result.to_json()))
                    .bool("isError", *is_error);
                match duration_ms {
                    Some(d) => o.num("durationMs", *d as f64),
                    None => o,
                }
                .done()
            }
            Event::CompactionStart { reason } => o.str("reason", reason.as_str()).done(),
            Event::CompactionEnd {
                reason,
                result,
                aborted,
                will_retry,
                error_message,
            } => {
                let mut o = o.str("reason", reason.as_str());
                if let Some(r) = result {
                    o = o.raw("result", &compaction_result(r));
                }
                o.bool("aborted", *aborted)
                    .bool("willRetry", *will_retry)
                    .opt_str("errorMessage", *error_message)
                    .done()
            }
            Event::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => o
                .num("attempt", *attempt)
                .num("maxAttempts", *max_attempts)
                .num("delayMs", *delay_ms as f64)
                .str("errorMessage", error_message)
                .done(),
            Event::AutoRetryEnd {
                success,
                attempt,
                final_error,
            } => o
                .bool("success", *success)
                .num("attempt", *attempt)
                .opt_str("finalError", *final_error)
                .done(),
            Event::ExtensionError { hook, event, error } => o
                .str("extensionPath", hook)
                .str("event", event)
                .str("error", error)
                .done(),
            Event::ProviderRetry { .. } => return None,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(e: &Event<'_>) -> String {
        String::from_utf8(e.to_json().unwrap()).unwrap()
    }

    #[test]
    fn field_names_and_order_are_upstreams() {
        let args = json!({"command": "ls", "timeout": 5.0});
        assert_eq!(
            text(&Event::ToolExecutionStart {
                id: "c1",
                name: "bash",
                args: &args
            }),
            r#"{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":"ls","timeout":5}}"#
        );
        let r = ToolResult::error("Tool x not found");
        assert_eq!(
            text(&Event::ToolExecutionEnd {
                id: "c2",
                name: "x",
                result: &r,
                is_error: true,
                duration_ms: None,
            }),
            r#"{"type":"tool_execution_end","toolCallId":"c2","toolName":"x","result":{"content":[{"type":"text","text":"Tool x not found"}],"details":{}},"isError":true}"#
        );
        assert!(
            text(&Event::ToolExecutionEnd {
                id: "c2",
                name: "x",
                result: &r,
                is_error: true,
                duration_ms: Some(12),
            })
            .ends_with(r#""isError":true,"durationMs":12}"#)
        );
        assert_eq!(
            text(&Event::AgentEnd {
                messages: &[],
                will_retry: true
            }),
            r#"{"type":"agent_end","messages":[],"willRetry":true}"#
        );
        assert_eq!(
            text(&Event::AgentSettled { aborted: false }),
            r#"{"type":"agent_settled","aborted":false}"#
        );
        assert_eq!(
            text(&Event::AutoRetryStart {
                attempt: 1,
                max_attempts: 3,
                delay_ms: 2000,
                error_message: "429 slow down"
            }),
            r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"429 slow down"}"#
        );
        assert_eq!(
            text(&Event::AutoRetryEnd {
                success: true,
                attempt: 1,
                final_error: None
            }),
            r#"{"type":"auto_retry_end","success":true,"attempt":1}"#
        );
        assert_eq!(
            text(&Event::CompactionEnd {
                reason: CompactionReason::Overflow,
                result: None,
                aborted: false,
                will_retry: false,
                error_message: Some("x")
            }),
            r#"{"type":"compaction_end","reason":"overflow","aborted":false,"willRetry":false,"errorMessage":"x"}"#
        );
        let mut res = CompactionResult {
            summary: "S".into(),
            first_kept_entry_id: "abc".into(),
            tokens_before: 1200.0,
            estimated_tokens_after: None,
            usage: None,
            details: json!({"readFiles": [], "modifiedFiles": ["a"]}),
        };
        assert_eq!(
            text(&Event::CompactionEnd {
                reason: CompactionReason::Threshold,
                result: Some(&res),
                aborted: false,
                will_retry: true,
                error_message: None
            }),
            r#"{"type":"compaction_end","reason":"threshold","result":{"summary":"S","firstKeptEntryId":"abc","tokensBefore":1200,"details":{"readFiles":[],"modifiedFiles":["a"]}},"aborted":false,"willRetry":true}"#
        );
        res.estimated_tokens_after = Some(300.0);
        res.usage = Some(Box::new(pi_ai::Usage {
            input: 100,
            output: 20,
            total_tokens: 120,
            ..Default::default()
        }));
        assert_eq!(
            text(&Event::CompactionEnd {
                reason: CompactionReason::Manual,
                result: Some(&res),
                aborted: false,
                will_retry: false,
                error_message: None
            }),
            r#"{"type":"compaction_end","reason":"manual","result":{"summary":"S","firstKeptEntryId":"abc","tokensBefore":1200,"estimatedTokensAfter":300,"usage":{"input":100,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":120,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"details":{"readFiles":[],"modifiedFiles":["a"]}},"aborted":false,"willRetry":false}"#
        );
        assert!(
            Event::ProviderRetry {
                attempt: 1,
                max_retries: 2,
                delay_ms: 1,
                error: "e"
            }
            .to_json()
            .is_none()
        );
    }

    #[test]
    fn message_update_is_delta_only_with_the_usage() {
        let mut m = AssistantMessage::new("openai-completions", "p", "m", 7);
        m.content.push(llm::Block::Text {
            text: "Hi".into(),
            signature: None,
        });
        m.usage.input = 40;
        m.usage.output = 2;
        let ev = llm::Event::TextDelta {
            index: 0,
            delta: "i".into(),
        };
        let t = text(&Event::MessageUpdate {
            partial: &m,
            event: &ev,
        });
        let v: Json = serde_json::from_str(&t).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["type", "usage", "assistantMessageEvent"]);
        assert_eq!(
            v["assistantMessageEvent"],
            json!({"type": "text_delta", "contentIndex": 0, "delta": "i"})
        );
        assert_eq!(v["usage"]["input"], 40);
        assert_eq!(v["usage"]["output"], 2);
        assert_eq!(v["usage"]["cost"]["total"], 0);
        m.content.push(llm::Block::ToolCall {
            id: "call_1".into(),
            name: "read".into(),
            arguments: json!({}),
            partial: String::new(),
            thought_signature: None,
        });
        let start = text(&Event::MessageUpdate {
            partial: &m,
            event: &llm::Event::ToolCallStart { index: 1 },
        });
        assert!(start.ends_with(r#""assistantMessageEvent":{"type":"toolcall_start","contentIndex":1,"id":"call_1","toolName":"read"}}"#), "{start}");
        let end = text(&Event::MessageUpdate {
            partial: &m,
            event: &llm::Event::TextEnd { index: 0 },
        });
        assert!(end.contains(r#""type":"text_end","contentIndex":0,"content":"Hi""#));
        assert!(
            Event::MessageUpdate {
                partial: &m,
                event: &llm::Event::Usage
            }
            .to_json()
            .is_none()
        );
    }
}
