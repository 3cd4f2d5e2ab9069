//! Replaying a trace against a plan: the session state the engine would have
//! kept, and the active set just before every tool call.
//!
//! Sessions are replayed one after another, in order of first appearance (the
//! lines of different sessions may interleave in the file). Per session:
//!
//! * `user_message`: the intent keywords become the policy's keywords of that
//!   message; the previous ones are remembered for `[keywords.memory] turns`
//!   messages ([`crate::context::Session::user_message_text`], which keeps the
//!   text as written too; none without memory, as the seed does);
//! * `context`: the given fields change;
//! * `tool_call`: the plan is evaluated at the call's time `t` (session
//!   duration = `t` − the session's first time; hysteresis against the
//!   previous evaluation of the session) — that is the step — and then the
//!   call is recorded ([`crate::context::Session::record_call`]: usage counts, last-call
//!   time, recent calls; usage frequencies = count / total for policies with
//!   `normalization = "frequency"`).
//! * A user message answered by no call (the next message or the end of the
//!   session comes first) gives a *no-call step*: the plan is evaluated at the
//!   end of that turn, to measure what is exposed when nothing is needed.

use std::sync::Arc;

use serde::Serialize;

use crate::context::Session;
use crate::eval::Activation;
use crate::eval::ToolScore;
use crate::parse::policy::UsageNormalization;
use crate::plan::Plan;
use crate::replay::trace::{Event, Trace, TraceError, TraceLine};

/// Options of a replay.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayOptions {
    /// Skip lines that name an unknown tool or an undeclared stage (recorded in
    /// [`Replay::skipped`]) instead of failing.
    pub skip_invalid: bool,
    /// Keep each step's full active set in [`Step::active`].
    pub keep_active: bool,
}

/// One evaluation of a replay: before a tool call, or at the end of a turn
/// without a call.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Trace line of the call (or of the message of a no-call turn).
    pub line: usize,
    /// Index into [`Replay::sessions`].
    pub session: usize,
    /// Time of the evaluation.
    pub t: f64,
    /// The called tool (plan index); `None` for a no-call step.
    pub called: Option<usize>,
    /// Whether the called tool was active just before the call.
    pub hit: bool,
    /// The called tool's score.
    pub score: Option<f64>,
    /// 1-based rank of the called tool by score (ties broken by raw score,
    /// then catalog order: `ToolScore::better_first`).
    pub rank: Option<usize>,
    /// Active-set size.
    pub active_count: usize,
    /// Estimated schema tokens of the active set (see [`schema_tokens`]).
    pub schema_tokens: u64,
    /// Tools that entered the active set since the session's previous step.
    pub added: Vec<usize>,
    /// Tools that left it.
    pub removed: Vec<usize>,
    /// Whether this is the session's first step (its list is the initial one, not a change).
    pub initial: bool,
    /// The conversation stage at the time.
    pub stage: Option<String>,
    /// The active set (plan indices), with [`ReplayOptions::keep_active`].
    pub active: Vec<usize>,
}

impl Step {
    /// Whether the active set differs from the previous step of the session.
    pub fn changed(&self) -> bool {
        !self.initial && (!self.added.is_empty() || !self.removed.is_empty())
    }
}

/// Per-session totals.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSummary {
    /// Session id.
    pub id: String,
    /// Tool calls replayed.
    pub calls: usize,
    /// Calls whose tool was active.
    pub hits: usize,
    /// Steps (calls and no-call turns).
    pub steps: usize,
    /// Steps whose active set differed from the previous step's.
    pub changes: usize,
}

/// The result of replaying a trace against one plan.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The plan replayed.
    pub plan: Arc<Plan>,
    /// Every step, session by session.
    pub steps: Vec<Step>,
    /// Sessions in order of first appearance.
    pub sessions: Vec<SessionSummary>,
    /// Lines skipped: by the parser and by the replay (unknown tools, undeclared stages).
    pub skipped: Vec<TraceError>,
    /// Estimated schema tokens of each tool (plan order).
    pub tool_tokens: Vec<u64>,
}

/// Estimated tokens a tool's schema costs in the model's context: the bytes of
/// its JSON `{"name", "description", "inputSchema"}` divided by 4, rounded up
/// (a common rule of thumb for English text and JSON with BPE tokenizers).
pub fn schema_tokens(plan: &Plan, tool: usize) -> u64 {
    let t = &plan.tools[tool];
    // The schema's canonical text is what serialising its tree writes: put
    // it in place of a `null` (keys sorted: description, inputSchema, name).
    let json = serde_json::json!({
        "name": t.name,
        "description": t.description,
        "inputSchema": null,
    });
    let len = json.to_string().len() - "null".len() + t.input_schema.as_str().len();
    (len as u64).div_ceil(4)
}

/// Replays `trace` against `plan`.
pub fn replay(plan: &Arc<Plan>, trace: &Trace, opts: &ReplayOptions) -> Result<Replay, TraceError> {
    replay_with(plan, trace, opts, |_, _| {})
}

/// Checks a line against the plan's catalog and stages: the called tool's
/// plan index for a call, `None` for other events; an unknown tool or an
/// undeclared stage is an error naming the line.
pub fn validate(plan: &Plan, l: &TraceLine) -> Result<Option<usize>, TraceError> {
    let err = |message: String| TraceError {
        column: None,
        line: l.line,
        message,
    };
    match &l.event {
        Event::ToolCall { tool, .. } => match plan.tool_index(tool) {
            Some(i) => Ok(Some(i)),
            None => {
                let hint = crate::diag::did_you_mean(tool, plan.by_name.keys().map(|s| s.as_str()))
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                Err(err(format!(
                    "tool `{}` is not in the catalog{hint}",
                    crate::diag::echo(tool)
                )))
            }
        },
        Event::Context(c) => {
            if let Some(Some(stage)) = &c.conversation_stage
                && plan.stage_index(stage).is_none()
            {
                let hint = crate::diag::did_you_mean(stage, plan.stages.iter().map(|s| s.as_str()))
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default();
                return Err(TraceError {
                    column: l.stage_column,
                    ..err(format!(
                        "stage `{}` is not declared by policy `{}` (declared: {}){hint}",
                        crate::diag::echo(stage),
                        plan.policy_name,
                        plan.stages.join(", ")
                    ))
                });
            }
            Ok(None)
        }
        Event::UserMessage { .. } | Event::Shadow { .. } => Ok(None),
    }
}

struct SessionRun {
    index: usize,
    previous: Option<Activation>,
    prev_active: Vec<bool>,
    summary: SessionSummary,
}

impl SessionRun {
    fn new(plan: &Plan, index: usize, id: &str) -> Self {
        SessionRun {
            index,
            previous: None,
            prev_active: vec![false; plan.tools.len()],
            summary: SessionSummary {
                id: id.to_string(),
                calls: 0,
                hits: 0,
                steps: 0,
                changes: 0,
            },
        }
    }

    /// The step of activation `act` (computed with `self.previous`) in
    /// session state `state`.
    fn step(
        &mut self,
        state: &Session,
        (line, t, called): (usize, f64, Option<usize>),
        act: Activation,
        opts: &ReplayOptions,
        tool_tokens: &[u64],
        on_step: &mut dyn FnMut(&Step, &Activation),
    ) -> Step {
        let initial = self.previous.is_none();
        let mut added = Vec::new();
        let mut removed = Vec::new();
        let mut active = Vec::new();
        let mut active_count = 0;
        let mut tokens = 0u64;
        for (i, s) in act.tools.iter().enumerate() {
            if s.active {
                active_count += 1;
                tokens += tool_tokens[i];
                if opts.keep_active {
                    active.push(i);
                }
            }
            if !initial && s.active != self.prev_active[i] {
                if s.active {
                    added.push(i);
                } else {
                    removed.push(i);
                }
            }
            self.prev_active[i] = s.active;
        }
        if initial {
            added = act
                .tools
                .iter()
                .enumerate()
                .filter(|(_, s)| s.active)
                .map(|(i, _)| i)
                .collect();
        }
        let (hit, score, rank) = match called {
            Some(c) => {
                let s = act.tools[c].score;
                // Ties are broken as `max_active` breaks them (raw score, then
                // catalog order: `ToolScore::better_first`).
                let me = &act.tools[c];
                let better = act
                    .tools
                    .iter()
                    .filter(|x| ToolScore::better_first(x, me) == std::cmp::Ordering::Less)
                    .count();
                (act.tools[c].active, Some(s), Some(better + 1))
            }
            None => (false, None, None),
        };
        let step = Step {
            line,
            session: self.index,
            t,
            called,
            hit,
            score,
            rank,
            active_count,
            schema_tokens: tokens,
            added,
            removed,
            initial,
            stage: state.context.conversation_stage.clone(),
            active,
        };
        on_step(&step, &act);
        self.summary.steps += 1;
        if step.changed() {
            self.summary.changes += 1;
        }
        if called.is_some() {
            self.summary.calls += 1;
            if hit {
                self.summary.hits += 1;
            }
        }
        self.previous = Some(act);
        step
    }
}

/// Estimated schema tokens of every tool of `plan` ([`schema_tokens`], plan order).
pub fn tool_tokens(plan: &Plan) -> Vec<u64> {
    (0..plan.tools.len())
        .map(|i| schema_tokens(plan, i))
        .collect()
}

/// Replays one session: `lines` are its lines in file order (at least one),
/// `(index, id)` its place in order of first appearance and its id, `tool_tokens` from
/// [`tool_tokens`]. Lines that name an unknown tool or an undeclared stage are
/// pushed to `skipped` with [`ReplayOptions::skip_invalid`], else the first is
/// the error. Returns the session's steps (in order) and its totals; calls
/// `on_step` with every step as [`replay_with`] does.
pub fn replay_session<'l, F: FnMut(&Step, &Activation)>(
    plan: &Arc<Plan>,
    (index, id): (usize, &str),
    lines: impl IntoIterator<Item = &'l TraceLine>,
    opts: &ReplayOptions,
    tool_tokens: &[u64],
    skipped: &mut Vec<TraceError>,
    mut on_step: F,
) -> Result<(Vec<Step>, SessionSummary), TraceError> {
    let mut steps = Vec::new();
    let mut run = SessionRun::new(plan, index, id);
    walk_session(plan, lines, opts, skipped, |state, at| {
        let act =
            plan.evaluate_with_previous(&state.context, &state.usage, at.1, run.previous.as_ref());
        steps.push(run.step(state, at, act, opts, tool_tokens, &mut on_step));
    })?;
    Ok((steps, run.summary))
}

/// [`replay_session`] of two plans at once, `plans.1` rescoring the
/// features of `plans.0`'s evaluation at every step
/// ([`Activation::rescore`]): `plans.1` must differ from `plans.0` at most
/// in the formula's weights and in `[activation]` (as the policy the
/// weight fit writes does). Each plan's steps and totals are the ones
/// [`replay_session`] gives it; `tool_tokens` are both plans' (the same
/// catalog). The lines skipped are pushed once.
pub fn replay_session_rescored<'l>(
    plans: (&Arc<Plan>, &Arc<Plan>),
    (index, id): (usize, &str),
    lines: impl IntoIterator<Item = &'l TraceLine>,
    opts: &ReplayOptions,
    tool_tokens: &[u64],
    skipped: &mut Vec<TraceError>,
) -> Result<[(Vec<Step>, SessionSummary); 2], TraceError> {
    let (mut steps_a, mut steps_b) = (Vec::new(), Vec::new());
    let mut a = SessionRun::new(plans.0, index, id);
    let mut b = SessionRun::new(plans.1, index, id);
    let mut none = |_: &Step, _: &Activation| {};
    walk_session(plans.0, lines, opts, skipped, |state, at| {
        let act_a =
            plans
                .0
                .evaluate_with_previous(&state.context, &state.usage, at.1, a.previous.as_ref());
        let act_b = act_a.rescore(plans.1, b.previous.as_ref());
        steps_a.push(a.step(state, at, act_a, opts, tool_tokens, &mut none));
        steps_b.push(b.step(state, at, act_b, opts, tool_tokens, &mut none));
    })?;
    Ok([(steps_a, a.summary), (steps_b, b.summary)])
}

/// Walks one session's lines as [`replay_session`] does, keeping the
/// session state, but evaluates nothing: `on_call` gets, before every
/// tool call, the line, the called tool and the features every tool has
/// then ([`Plan::features_for`]). No-call turns give nothing. Lines are
/// checked and skipped as [`replay_session`] checks them.
pub fn walk_calls<'l>(
    plan: &Arc<Plan>,
    lines: impl IntoIterator<Item = &'l TraceLine>,
    opts: &ReplayOptions,
    skipped: &mut Vec<TraceError>,
    mut on_call: impl FnMut(usize, usize, &crate::eval::FeatureView),
) -> Result<(), TraceError> {
    walk_session(plan, lines, opts, skipped, |state, (line, t, called)| {
        if let Some(c) = called {
            let view = plan.features_for(&state.context, &state.usage, t);
            on_call(line, c, &view);
        }
    })
}

/// The session loop shared by the replays: keeps the session state and
/// calls `at_step(state, (line, t, called))` at every step (before a call,
/// and at the end of a turn without one), with the session duration set.
fn walk_session<'l>(
    plan: &Arc<Plan>,
    lines: impl IntoIterator<Item = &'l TraceLine>,
    opts: &ReplayOptions,
    skipped: &mut Vec<TraceError>,
    mut at_step: impl FnMut(&Session, (usize, f64, Option<usize>)),
) -> Result<(), TraceError> {
    let window = plan.recent_calls_window;
    let frequency = plan.features.usage_normalization == UsageNormalization::Frequency;
    let mut lines = lines.into_iter().peekable();
    let t0 = lines.peek().map(|l| l.t).unwrap_or(0.0);
    let mut state = Session::new();
    let mut step = |state: &mut Session, line: usize, t: f64, called: Option<usize>| {
        state.context.session_duration_seconds = (t - t0).max(0.0);
        at_step(state, (line, t, called));
    };
    // The message of the current turn, while no call has answered it: (line, time of the turn's last line).
    let mut pending: Option<(usize, f64)> = None;
    for l in lines {
        let called = match validate(plan, l) {
            Ok(c) => c,
            Err(e) if opts.skip_invalid => {
                skipped.push(e);
                continue;
            }
            Err(e) => return Err(e),
        };
        match &l.event {
            Event::UserMessage { text } => {
                if let Some((line, t)) = pending.take() {
                    step(&mut state, line, t, None);
                }
                let remember = plan.memory.as_ref().map(|m| m.turns).unwrap_or(0);
                state.user_message_text(text, plan.analyzer.extract(text), remember);
                pending = Some((l.line, l.t));
            }
            Event::Context(c) => {
                let ctx = &mut state.context;
                if let Some(v) = &c.conversation_stage {
                    ctx.conversation_stage = v.clone();
                }
                if let Some(v) = &c.active_language {
                    ctx.active_language = v.clone();
                }
                if let Some(v) = &c.project_type {
                    ctx.project_type = v.clone();
                }
                if let Some(v) = &c.active_files {
                    ctx.active_files = v.clone();
                }
                if let Some(v) = &c.user_intent_entities {
                    ctx.user_intent_entities = v.clone();
                }
                if let Some(p) = &mut pending {
                    p.1 = l.t;
                }
            }
            Event::Shadow { .. } => {}
            Event::ToolCall { .. } => {
                let Some(c) = called else { continue };
                pending = None;
                step(&mut state, l.line, l.t, Some(c));
                let name = plan.tools[c].name.clone();
                state.record_call(&name, l.t, window);
                if frequency {
                    let total = state.usage.total_calls().max(1) as f64;
                    let counts: Vec<(String, u64)> = state
                        .usage
                        .call_counts
                        .iter()
                        .map(|(k, v)| (k.clone(), *v))
                        .collect();
                    for (k, v) in counts {
                        state.usage.usage_frequency.insert(k, v as f64 / total);
                    }
                }
            }
        }
    }
    if let Some((line, t)) = pending.take() {
        step(&mut state, line, t, None);
    }
    Ok(())
}

/// Replays `trace` against `plan`, calling `on_step` with every step and the
/// activation it was computed from (for feature analysis).
pub fn replay_with<F: FnMut(&Step, &Activation)>(
    plan: &Arc<Plan>,
    trace: &Trace,
    opts: &ReplayOptions,
    mut on_step: F,
) -> Result<Replay, TraceError> {
    let tool_tokens = tool_tokens(plan);
    let mut steps = Vec::new();
    let mut sessions = Vec::new();
    let mut skipped = trace.skipped.clone();
    for (index, (id, lines)) in trace.sessions().into_iter().enumerate() {
        let (s, summary) = replay_session(
            plan,
            (index, id),
            lines.iter().map(|&li| &trace.lines[li]),
            opts,
            &tool_tokens,
            &mut skipped,
            &mut on_step,
        )?;
        steps.extend(s);
        sessions.push(summary);
    }
    skipped.sort_by_key(|e| e.line);
    Ok(Replay {
        plan: plan.clone(),
        steps,
        sessions,
        skipped,
        tool_tokens,
    })
}
