//! Block assembly, shared by every stream parser: a message's content grows block by block
//! (text, thinking, tool calls), and each step is reported to the sink with the message as
//! it stands. The parsers decide *when* a block opens, grows or ends (each API says it its
//! own way); this is *how*, written once.
//!
//! Ending a block reports its end; a tool call's arguments are then parsed one last time
//! from the JSON text that streamed (`partial`), which is cleared (it is not part of the
//! stored message).

use crate::json_partial;
use crate::message::{AssistantMessage, Block, Event, LlmError, Sink};

/// A message being streamed, between two chunks of the body.
pub(crate) struct Draft {
    msg: AssistantMessage,
    /// The text or thinking block being streamed (see [`Assembler::current`]).
    current: Option<usize>,
}

impl Draft {
    pub(crate) fn new(msg: AssistantMessage) -> Draft {
        Draft { msg, current: None }
    }

    pub(crate) fn message(&self) -> &AssistantMessage {
        &self.msg
    }

    pub(crate) fn into_message(self) -> AssistantMessage {
        self.msg
    }

    /// The draft at work, reporting to `sink`.
    pub(crate) fn assembler<'a>(&'a mut self, sink: Sink<'a>) -> Assembler<'a> {
        Assembler {
            msg: &mut self.msg,
            current: &mut self.current,
            sink,
        }
    }
}

/// Builds a message and reports every step of it.
pub(crate) struct Assembler<'a> {
    pub(crate) msg: &'a mut AssistantMessage,
    current: &'a mut Option<usize>,
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
    /// and reports the fragment (nothing if the block is not a tool call).
    pub(crate) fn append_arguments(&mut self, index: usize, delta: &str) {
        if let Some(Block::ToolCall {
            arguments, partial, ..
        }) = self.msg.content.get_mut(index)
        {
            partial.push_str(delta);
            *arguments = json_partial::parse(partial);
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
