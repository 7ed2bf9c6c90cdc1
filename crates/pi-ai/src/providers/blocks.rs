//! Block assembly, shared by every stream parser: a message's content grows block by block
//! (text, thinking, tool calls), and each step is reported to the sink with the message as
//! it stands. The parsers decide *when* a block opens, grows or ends (each API says it its
//! own way); this is *how*, written once.
//!
//! Ending a block reports its end; a tool call's arguments are then parsed one last time
//! from the JSON text that streamed (`partial`), which is cleared (it is not part of the
//! stored message).
//!
//! While a tool call streams, its arguments are parsed again only when the text has
//! doubled since the last parse (small texts every time), so that a call streamed in a
//! million tiny deltas costs linear time, not a parse of the whole text per delta; the
//! arguments seen mid-stream may lag behind the text, the final ones never do.

use crate::json_partial;
use crate::message::{AssistantMessage, Block, Event, LlmError, Sink};

/// A message being streamed, between two chunks of the body.
pub(crate) struct Draft {
    msg: AssistantMessage,
    /// The text or thinking block being streamed (see [`Assembler::current`]).
    current: Option<usize>,
    /// Per block: the length of the arguments' text when they were last parsed.
    parsed: Vec<usize>,
}

/// Below this length, a tool call's arguments are parsed again at every delta.
const PARSE_ALWAYS: usize = 4096;

impl Draft {
    pub(crate) fn new(msg: AssistantMessage) -> Draft {
        Draft {
            msg,
            current: None,
            parsed: Vec::new(),
        }
    }

    pub(crate) fn message(&self) -> &AssistantMessage {
        &self.msg
    }

    /// The message, with the arguments of a tool call left open (a stream cut off) parsed
    /// from all of their text.
    pub(crate) fn into_message(mut self) -> AssistantMessage {
        for (i, block) in self.msg.content.iter_mut().enumerate() {
            if let Block::ToolCall {
                arguments, partial, ..
            } = block
                && !partial.is_empty()
                && self.parsed.get(i) != Some(&partial.len())
            {
                *arguments = json_partial::parse(partial);
            }
        }
        self.msg
    }

    /// The draft at work, reporting to `sink`.
    pub(crate) fn assembler<'a>(&'a mut self, sink: Sink<'a>) -> Assembler<'a> {
        Assembler {
            msg: &mut self.msg,
            current: &mut self.current,
            parsed: &mut self.parsed,
            sink,
        }
    }
}

/// Builds a message and reports every step of it.
pub(crate) struct Assembler<'a> {
    pub(crate) msg: &'a mut AssistantMessage,
    current: &'a mut Option<usize>,
    parsed: &'a mut Vec<usize>,
    sink: Sink<'a>,
}

impl Assembler<'_> {
    /// Reports `ev` with the message as it stands.
    pub(crate) fn emit(&mut self, ev: &Event) {
        (self.sink)(ev, self.msg);
    }

    /// Adds a block and reports its start; returns its position in the content.
    pub(crate) fn open(&mut self, block: Block) -> usize {
        let index = self.msg.content.len();
        let ev = match &block {
            Block::Text { .. } => Event::TextStart { index },
            Block::Thinking { .. } => Event::ThinkingStart { index },
            Block::ToolCall { .. } => Event::ToolCallStart { index },
        };
        self.msg.content.push(block);
        self.emit(&ev);
        index
    }

    /// Appends to a text block and reports the delta (nothing if the block is not text).
    pub(crate) fn append_text(&mut self, index: usize, delta: &str) {
        if let Some(Block::Text { text, .. }) = self.msg.content.get_mut(index) {
            text.push_str(delta);
            let delta = delta.to_owned();
            self.emit(&Event::TextDelta { index, delta });
        }
    }

    /// Appends to a thinking block and reports the delta (nothing if the block is not
    /// thinking).
    pub(crate) fn append_thinking(&mut self, index: usize, delta: &str) {
        if let Some(Block::Thinking { thinking, .. }) = self.msg.content.get_mut(index) {
            thinking.push_str(delta);
            let delta = delta.to_owned();
            self.emit(&Event::ThinkingDelta { index, delta });
        }
    }

    /// Appends a fragment of a tool call's JSON arguments, parses what has streamed so far
    /// (when it has doubled since the last parse) and reports the fragment (nothing if the
    /// block is not a tool call).
    pub(crate) fn append_arguments(&mut self, index: usize, delta: &str) {
        if let Some(Block::ToolCall {
            arguments, partial, ..
        }) = self.msg.content.get_mut(index)
        {
            partial.push_str(delta);
            if self.parsed.len() <= index {
                self.parsed.resize(index + 1, 0);
            }
            let last = &mut self.parsed[index];
            if partial.len() <= PARSE_ALWAYS || partial.len() >= 2 * *last {
                *arguments = json_partial::parse(partial);
                *last = partial.len();
            }
            let delta = delta.to_owned();
            self.emit(&Event::ToolCallDelta { index, delta });
        }
    }

    /// Ends a block: a tool call's arguments come from the text that streamed, if any.
    pub(crate) fn close(&mut self, index: usize) {
        let ev = match self.msg.content.get_mut(index) {
            Some(Block::Text { .. }) => Event::TextEnd { index },
            Some(Block::Thinking { .. }) => Event::ThinkingEnd { index },
            Some(Block::ToolCall {
                arguments, partial, ..
            }) => {
                if !partial.is_empty() {
                    *arguments = json_partial::parse(partial);
                }
                partial.clear();
                if let Some(last) = self.parsed.get_mut(index) {
                    *last = 0;
                }
                Event::ToolCallEnd { index }
            }
            None => return,
        };
        if *self.current == Some(index) {
            *self.current = None;
        }
        self.emit(&ev);
    }

    /// Ends every block, in content order (for an API whose blocks all end with the
    /// response).
    pub(crate) fn close_all(&mut self) {
        for index in 0..self.msg.content.len() {
            self.close(index);
        }
    }

    /// The thinking (`thinking`) or text block being streamed: the current one if it is of
    /// that kind, else a new one (the current one, of the other kind, ends first).
    pub(crate) fn current(&mut self, thinking: bool) -> usize {
        let fits = |b: &Block| match b {
            Block::Thinking { .. } => thinking,
            Block::Text { .. } => !thinking,
            Block::ToolCall { .. } => false,
        };
        if let Some(i) = *self.current
            && self.msg.content.get(i).is_some_and(fits)
        {
            return i;
        }
        self.close_current();
        let block = if thinking {
            Block::thinking(None)
        } else {
            Block::text()
        };
        let i = self.open(block);
        *self.current = Some(i);
        i
    }

    /// Ends the text or thinking block being streamed, if any.
    pub(crate) fn close_current(&mut self) {
        if let Some(i) = self.current.take() {
            self.close(i);
        }
    }

    /// Whether the content has a tool call (a finished answer then stops for tool use).
    pub(crate) fn has_tool_calls(&self) -> bool {
        self.msg
            .content
            .iter()
            .any(|b| matches!(b, Block::ToolCall { .. }))
    }

    /// The outcome of a response that ended: one that stopped for an error (a refusal, a
    /// failed status) fails, with the reference's words for it.
    pub(crate) fn outcome(&self) -> Result<(), LlmError> {
        if self.msg.stop_reason.is_failure() {
            return Err("An unknown error occurred".into());
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::message::Follower;

    /// The message with every tool call's arguments parsed from all of its text.
    fn settled(mut m: AssistantMessage) -> AssistantMessage {
        for b in &mut m.content {
            if let Block::ToolCall {
                arguments, partial, ..
            } = b
                && !partial.is_empty()
            {
                *arguments = json_partial::parse(partial);
            }
        }
        m
    }

    #[test]
    fn a_follower_matches_the_message_at_every_event() {
        let mut draft = Draft::new(AssistantMessage::new("a", "p", "m", 1));
        let mut follower = Follower::default();
        let mut checked = 0;
        let mut sink = |ev: &Event, m: &AssistantMessage| {
            follower.follow(ev, m);
            let copy = follower.clone().into_message().unwrap();
            assert_eq!(copy, settled(m.clone()), "after {ev:?}");
            checked += 1;
        };
        let mut out = draft.assembler(&mut sink);
        out.emit(&Event::Start);
        let t = out.open(Block::text());
        for _ in 0..50 {
            out.append_text(t, "ab");
        }
        out.close(t);
        let k = out.open(Block::thinking(None));
        out.append_thinking(k, "hm");
        let c = out.open(Block::tool_call("id".into(), "read".into()));
        let args = format!("{{\"path\": \"{}\"}}", "x".repeat(5_000));
        for piece in args.as_bytes().chunks(7) {
            out.append_arguments(c, std::str::from_utf8(piece).unwrap());
        }
        out.msg.response_id = Some("r1".into());
        out.msg.usage.output = 9;
        out.emit(&Event::Usage);
        out.close_all();
        out.emit(&Event::Done);
        assert!(checked > 700, "{checked}");
        let m = draft.into_message();
        let Block::ToolCall { arguments, .. } = &m.content[2] else {
            panic!("{m:?}")
        };
        assert_eq!(arguments["path"].as_str().unwrap().len(), 5_000);
    }

    #[test]
    fn arguments_cut_off_are_parsed_from_all_their_text() {
        let mut draft = Draft::new(AssistantMessage::new("a", "p", "m", 1));
        let mut sink = |_: &Event, _: &AssistantMessage| {};
        let mut out = draft.assembler(&mut sink);
        let c = out.open(Block::tool_call("id".into(), "read".into()));
        let text = format!("{{\"path\": \"{}", "y".repeat(9000));
        for piece in text.as_bytes().chunks(100) {
            out.append_arguments(c, std::str::from_utf8(piece).unwrap());
        }
        let m = draft.into_message();
        let Block::ToolCall { arguments, .. } = &m.content[0] else {
            panic!("{m:?}")
        };
        assert_eq!(arguments["path"].as_str().unwrap().len(), 9000);
    }
}
