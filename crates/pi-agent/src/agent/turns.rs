//! The agent loop (upstream's `runAgentLoop`, 0.73): turns of one streamed answer and the
//! tools it calls, until the model answers without tool calls; steering messages after each
//! turn, follow-up messages when it would stop.
//!
//! Tool calls of one answer run at the same time: each is announced and checked in call
//! order (an unknown tool, bad arguments or a blocked call end at once), then all checked
//! calls start together, each reports `tool_execution_end` when it finishes, and the
//! `toolResult` messages are emitted and recorded in call order.

use serde_json::Value as Json;
use tokio::sync::mpsc;

use super::event::{Event, assistant_value};
use super::hooks::{self, Hooks};
use super::session::{AgentSession, RunError, ToolExecution};
use super::{Message, Observer};
use crate::context::llm as llm_messages;
use pi_ai::value::Value;
use pi_ai::{self as llm, AssistantMessage, Block, Request, StopReason};
use pi_tools::{OnUpdate, Ready, ToolOutput, ToolResult};

/// How a loop ended early.
pub(super) enum Stop {
    /// The run threw before producing an answer (upstream's `handleRunFailure`).
    Thrown(String),
    /// Recording failed: the run cannot go on.
    Fatal(RunError),
}

impl From<RunError> for Stop {
    fn from(e: RunError) -> Stop {
        Stop::Fatal(e)
    }
}

/// A tool call of an answer.
struct Call {
    id: String,
    name: String,
    args: Json,
}

fn tool_calls(m: &AssistantMessage) -> Vec<Call> {
    m.content
        .iter()
        .filter_map(|b| match b {
            Block::ToolCall {
                id,
                name,
                arguments,
                ..
            } => Some(Call {
                id: id.clone(),
                name: name.clone(),
                args: arguments.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// A `toolResult` message.
fn result_message(call: &Call, r: &ToolResult) -> Message {
    let v = r.to_message(&call.id, &call.name, pi_base::clock::now_ms());
    Value::parse(&pi_base::js::stringify(&v)).unwrap_or_default()
}

/// What a running tool reports.
enum Report {
    Update(usize, ToolOutput),
    /// The result, and how long the tool ran (ms).
    Done(usize, ToolResult, u64),
}

impl<H: Hooks, O: Observer> AgentSession<'_, H, O> {
    /// One run of the loop: `agent_start` … `agent_end`. `prompts` (empty: a continuation)
    /// are emitted and recorded first.
    pub(super) async fn agent_loop(&mut self, prompts: Vec<Message>) -> Result<(), RunError> {
        let mut produced: Vec<Message> = Vec::new();
        self.emit(Event::AgentStart);
        self.emit(Event::TurnStart);
        let r = async {
            for p in prompts {
                self.start_message(&p);
                let p = self.finish_message(p).await?;
                self.messages.push(p.clone());
                produced.push(p);
            }
            self.turns_loop(&mut produced).await
        }
        .await;
        match r {
            Ok(()) => Ok(()),
            Err(Stop::Fatal(e)) => Err(e),
            Err(Stop::Thrown(e)) => {
                let m = self.thrown_message(&e);
                self.messages.push(m.clone());
                self.observer.messages_changed(&self.messages);
                self.thrown = Some(e);
                match self.end(std::slice::from_ref(&m)).await {
                    Err(Stop::Fatal(e)) => Err(e),
                    _ => Ok(()),
                }
            }
        }
    }

    /// `agent_end` (with whether an automatic retry follows, as 1.6 tells), and the
    /// `agent_end` hooks.
    async fn end(&mut self, produced: &[Message]) -> Result<(), Stop> {
        let will_retry = self.thrown.is_none()
            && !self.max_turns_hit
            && !self.cancel.is_cancelled()
            && self.will_retry(produced);
        self.emit(Event::AgentEnd {
            messages: produced,
            will_retry,
        });
        self.hooks.agent_end(produced).await;
        self.apply_effects()?;
        Ok(())
    }

    /// `turn_end`, and the `turn_end` hooks.
    async fn turn_end(&mut self, message: &Message, tool_results: &[Message]) -> Result<(), Stop> {
        self.emit(Event::TurnEnd {
            message,
            tool_results,
        });
        self.hooks.turn_end(message, tool_results).await;
        self.apply_effects()?;
        Ok(())
    }

    async fn turns_loop(&mut self, produced: &mut Vec<Message>) -> Result<(), Stop> {
        let mut first = true;
        let mut pending = self.queue.take_steering();
        loop {
            let mut more_tools = true;
            while more_tools || !pending.is_empty() {
                if !first {
                    self.emit(Event::TurnStart);
                }
                first = false;
                self.flush_custom(Some(produced))?;
                for m in std::mem::take(&mut pending) {
                    self.start_message(&m);
                    let m = self.finish_message(m).await?;
                    self.messages.push(m.clone());
                    produced.push(m);
                }
                let (answer, message) = self.stream_answer().await?;
                produced.push(message.clone());
                if answer.stop_reason.is_failure() {
                    self.turn_end(&message, &[]).await?;
                    return self.end(produced).await;
                }
                let calls = tool_calls(&answer);
                let results = if calls.is_empty() {
                    Vec::new()
                } else {
                    self.run_tools(calls).await?
                };
                more_tools = !results.is_empty();
                produced.extend(results.iter().cloned());
                self.turn_end(&message, &results).await?;
                self.turns += 1;
                let go_on = more_tools || self.queue.has_queued();
                if go_on && self.config.max_turns.is_some_and(|n| self.turns >= n) {
                    self.max_turns_hit = true;
                    return self.end(produced).await;
                }
                pending = self.queue.take_steering();
            }
            let follow = self.queue.take_follow_up();
            if follow.is_empty() {
                break;
            }
            pending = follow;
        }
        self.end(produced).await
    }

    /// Streams one answer: `message_start`, `message_update`s, then `message_end` (the
    /// answer recorded). Cancelling ends it as `aborted`, keeping what had streamed.
    async fn stream_answer(&mut self) -> Result<(AssistantMessage, Message), Stop> {
        let messages = self.hooks.context(self.messages.clone()).await;
        if let Some(stop) = self.apply_effects()? {
            return Err(Stop::Thrown(stop));
        }
        let (system_prompt, messages) = super::loadout::collapse(messages, self.forced_prompt());
        let request = Request {
            system_prompt: Some(system_prompt),
            messages: llm_messages::convert(&messages, self.config.settings.block_images),
            tools: self
                .tools
                .iter()
                .map(|t| {
                    let d = t.definition();
                    llm::Tool {
                        name: d.name,
                        description: d.description,
                        parameters: d.parameters,
                    }
                })
                .collect(),
        };
        let mut options = self
            .config
            .credentials
            .options(&self.config.target, &self.config.options)
            .map_err(|e| Stop::Thrown(e.to_string()))?;
        options.tool_choice = self.config.tool_choice.clone();
        options.reasoning = Some(self.config.thinking_level.clone()).filter(|l| l != "off");
        let target = &self.config.target;
        let mut started = false;
        // What streamed, kept for an abort (which drops the stream).
        let mut latest = llm::Follower::default();
        let streamed = if self.cancel.is_cancelled() {
            None
        } else {
            let observer = &mut self.observer;
            let mut sink = |ev: &llm::Event, m: &AssistantMessage| {
                match ev {
                    llm::Event::Start => {
                        started = true;
                        let v = assistant_value(m);
                        observer.event(&Event::MessageStart { message: &v });
                    }
                    llm::Event::Retry {
                        attempt,
                        max_retries,
                        delay_ms,
                        error,
                    } => observer.event(&Event::ProviderRetry {
                        attempt: *attempt,
                        max_retries: *max_retries,
                        delay_ms: *delay_ms,
                        error,
                    }),
                    llm::Event::Usage | llm::Event::Done | llm::Event::Error => {}
                    _ if started => observer.event(&Event::MessageUpdate {
                        partial: m,
                        event: ev,
                    }),
                    _ => {}
                }
                if started {
                    latest.follow(ev, m);
                }
            };
            let cancel = self.cancel.clone();
            tokio::select! {
                m = self.client.stream(target, &request, &options, &mut sink) => Some(m),
                () = cancel.cancelled() => None,
            }
        };
        let answer = match streamed {
            Some(m) => m,
            None => {
                let mut m = latest.into_message().unwrap_or_else(|| {
                    AssistantMessage::for_target(target, pi_base::clock::now_ms())
                });
                m.fail(StopReason::Aborted, "Request was aborted".to_owned());
                m
            }
        };
        let message = assistant_value(&answer);
        if !started {
            self.emit(Event::MessageStart { message: &message });
        }
        let message = self.finish_message(message).await?;
        self.messages.push(message.clone());
        Ok((answer, message))
    }

    /// Checks a call (upstream's `prepareToolCall`): the tool must be active, the arguments
    /// valid, and the `tool_call` hook must allow it. `Ok(Err)` is the immediate result.
    async fn prepare_call(&mut self, call: &Call) -> Result<Result<Ready, ToolResult>, Stop> {
        let Some(tool) = self.tools.iter().find(|t| t.name() == call.name).cloned() else {
            return Ok(Err(ToolResult::not_found(&call.name)));
        };
        let prepared = match tool.prepare(&call.args) {
            Ok(p) => p,
            Err(r) => return Ok(Err(r)),
        };
        let decision = self
            .hooks
            .tool_call(&call.id, &call.name, prepared.args())
            .await;
        self.apply_effects()?;
        Ok(match decision {
            hooks::ToolCall::Allow => Ok(prepared),
            hooks::ToolCall::Modify(args) => tool.prepare(&args),
            hooks::ToolCall::Block(reason) => Err(ToolResult::error(
                reason.unwrap_or_else(|| "Tool execution was blocked".to_owned()),
            )),
        })
    }

    fn tool_end(&mut self, call: &Call, r: &ToolResult, duration_ms: Option<u64>) {
        self.emit(Event::ToolExecutionEnd {
            id: &call.id,
            name: &call.name,
            result: r,
            is_error: r.is_error,
            duration_ms,
        });
    }

    /// Runs the tool calls of one answer; returns the recorded `toolResult` messages in
    /// call order.
    async fn run_tools(&mut self, calls: Vec<Call>) -> Result<Vec<Message>, Stop> {
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        let sequential = self.config.tool_execution == ToolExecution::Sequential;
        let mut out = Vec::with_capacity(calls.len());
        let mut ready: Vec<(usize, Ready)> = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            self.emit(Event::ToolExecutionStart {
                id: &call.id,
                name: &call.name,
                args: &call.args,
            });
            match self.prepare_call(call).await? {
                Err(r) => {
                    self.tool_end(call, &r, None);
                    results[i] = Some(r);
                }
                Ok(p) if sequential => {
                    let r = self.execute(&calls, vec![(i, p)]).await?;
                    results[i] = r.into_iter().nth(i).flatten();
                }
                Ok(p) => ready.push((i, p)),
            }
            if sequential {
                out.push(self.record_result(call, results[i].take()).await?);
            }
        }
        if sequential {
            return Ok(out);
        }
        for (i, r) in self.execute(&calls, ready).await?.into_iter().enumerate() {
            if r.is_some() {
                results[i] = r;
            }
        }
        for (call, r) in calls.iter().zip(results) {
            out.push(self.record_result(call, r).await?);
        }
        Ok(out)
    }

    /// Emits and records the `toolResult` message of a call.
    async fn record_result(&mut self, call: &Call, r: Option<ToolResult>) -> Result<Message, Stop> {
        let r = r.unwrap_or_else(|| ToolResult::error("Tool execution did not finish"));
        let m = result_message(call, &r);
        self.start_message(&m);
        let m = self.finish_message(m).await?;
        self.messages.push(m.clone());
        Ok(m)
    }

    /// Starts the prepared calls together and reports updates and ends as they come; the
    /// results are indexed like `calls`.
    async fn execute(
        &mut self,
        calls: &[Call],
        ready: Vec<(usize, Ready)>,
    ) -> Result<Vec<Option<ToolResult>>, Stop> {
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        if ready.is_empty() {
            return Ok(results);
        }
        let mut fatal: Option<RunError> = None;
        let (tx, mut rx) = mpsc::unbounded_channel::<Report>();
        let started: Vec<usize> = ready.iter().map(|(i, _)| *i).collect();
        // Started in call order: edits and writes of one file queue in that order.
        for (i, p) in ready {
            let updates = tx.clone();
            let on_update: OnUpdate = Box::new(move |o| {
                let _ = updates.send(Report::Update(i, o));
            });
            let run = p.execute(
                self.config.tool_ctx.clone(),
                self.cancel.clone(),
                Some(on_update),
            );
            let done = tx.clone();
            tokio::spawn(async move {
                let t = std::time::Instant::now();
                let r = run.await;
                let ms = t.elapsed().as_millis().try_into().unwrap_or(u64::MAX);
                let _ = done.send(Report::Done(i, r, ms));
            });
        }
        drop(tx);
        while let Some(report) = rx.recv().await {
            match report {
                Report::Update(i, o) => {
                    let call = &calls[i];
                    self.emit(Event::ToolExecutionUpdate {
                        id: &call.id,
                        name: &call.name,
                        args: &call.args,
                        partial: &o,
                    });
                }
                Report::Done(i, r, ms) => {
                    let call = &calls[i];
                    let r = self
                        .hooks
                        .tool_result(&call.id, &call.name, &call.args, r)
                        .await;
                    if let Err(e) = self.apply_effects() {
                        fatal.get_or_insert(e);
                    }
                    self.tool_end(call, &r, Some(ms));
                    results[i] = Some(r);
                }
            }
        }
        // A tool that panicked never reported.
        for i in started {
            if results[i].is_none() {
                let r = ToolResult::error("Tool execution failed");
                self.tool_end(&calls[i], &r, None);
                results[i] = Some(r);
            }
        }
        match fatal {
            Some(e) => Err(Stop::Fatal(e)),
            None => Ok(results),
        }
    }
}
