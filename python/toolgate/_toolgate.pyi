"""Type stubs of the compiled module ``toolgate._toolgate`` (PyO3)."""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Literal, Mapping, Optional, Sequence, Union

__version__: str

_Path = Union[str, "os.PathLike[str]"]
_Paths = Union[_Path, Sequence[_Path], None]
Decision = Literal["allow", "ask", "deny"]

class Diagnostic:
    """One problem of a failed load, located in its file."""

    kind: str
    """Stable code of the kind of problem (``toolgate::unknown_key``)."""
    message: str
    """What is wrong, in one sentence."""
    file: Optional[str]
    """The file's name as given (``None`` for a problem with no file)."""
    line: Optional[int]
    """1-based line (``None`` when unknown)."""
    column: Optional[int]
    """1-based column in characters (``None`` when unknown)."""
    help: Optional[str]
    """A hint: did-you-mean, accepted values."""
    text: str
    """``file:line:column: message (help)``, as the CLI prints it."""

class Term:
    """One term of a tool's score."""

    term: str
    """The term's text in the formula (``w_domain * domain_match``)."""
    value: Optional[float]
    """The feature's value (``None`` for a term of several features)."""
    weight: Optional[float]
    """The weight (``None`` for a term that is not ``weight * feature``)."""
    contribution: float
    """What the term adds to the raw score."""

class ToolResult:
    """One tool's score in a selection."""

    name: str
    """The tool's catalog name."""
    score: float
    """The clamped score."""
    raw_score: float
    """The score before the clamp (the sum of the contributions)."""
    active: bool
    """Whether the tool is exposed."""
    reason: str
    """``above_threshold``, ``below_threshold``, ``hysteresis``, ``pinned``,
    ``min_active``, ``max_active`` or ``invalid_score``."""
    terms: dict[str, Term]
    """Per term, keyed by feature name (or ``term_N``), in formula order."""

class Selection:
    """The result of :meth:`Engine.select`: every tool's score and the active set."""

    @property
    def active(self) -> list[str]:
        """Names of the active tools, best first (``toolgate eval``'s order)."""
    @property
    def tools(self) -> list[ToolResult]:
        """Every tool: active ones first, best first."""
    @property
    def effective_threshold(self) -> float:
        """The threshold after the cold-start rule."""
    @property
    def threshold(self) -> float:
        """The policy's threshold."""
    @property
    def cold_start(self) -> bool:
        """Whether the cold-start rule applied."""
    @property
    def intent_terms(self) -> list[str]:
        """The intent terms of the context and the message."""
    @property
    def rules_applied(self) -> list[str]:
        """Names of the domain rules that applied."""
    @property
    def warnings(self) -> list[str]:
        """Warnings of the evaluation."""
    @property
    def domain_weights(self) -> list[tuple[str, float]]:
        """The inferred domain weights (empty when none were inferred)."""
    def tool(self, name: str) -> ToolResult:
        """One tool's result; raises :class:`toolgate.errors.UnknownToolError`."""
    def to_dict(self) -> dict[str, Any]:
        """The report exactly as ``toolgate eval --format json`` prints it."""

class Finding:
    """One thing the gate found in a call."""

    rule_id: str
    """Id of the rule or check that fired."""
    kind: str
    """The layer: ``tool``, ``input``, ``schema``, ``pattern``, ``shell``,
    ``sql``, ``path``, ``parse``, ``risk``."""
    path: str
    """JSON pointer of the argument (``/command``; empty for the whole call)."""
    severity: str
    """``low``, ``medium``, ``high`` or ``critical``."""
    action: Decision
    """What the rule asks for."""
    message: str
    """For the model: what was found and what to do instead."""

class Verdict:
    """The gate's answer for one call."""

    decision: Decision
    """``allow``, ``ask`` or ``deny``."""
    arguments: Any
    """The arguments after coercion (as received when they could not be read)."""
    findings: list[Finding]
    """Everything found, most decisive first."""
    message: str
    """For the model: what was found, which parameter, what to do instead."""
    tool: str
    """The tool's canonical name (as called when it is unknown)."""
    risk_rule: Optional[str]
    """The risk rule that decided, if one did."""
    latency: float
    """Seconds spent in the gate."""
    @property
    def allowed(self) -> bool:
        """Whether the call may run as is."""
    def to_dict(self) -> dict[str, Any]:
        """The verdict as ``toolgate guard --format json`` prints it."""

class WatchEvent:
    """One load attempt of a watched engine."""

    kind: Literal["loaded", "rejected"]
    """``loaded`` (the new plan is served) or ``rejected`` (the last good plan stays)."""
    version: int
    """The version served after this attempt."""
    previous_version: int
    """The version served before it (for a rejection: the one still served)."""
    policy_name: str
    """The new plan's policy name (empty for a rejection)."""
    content_hash: str
    """The new plan's content hash, hex (empty for a rejection)."""
    tool_names: list[str]
    """The new plan's tools, in catalog order (empty for a rejection)."""
    error: Optional[str]
    """For a rejection: every problem, ``file:line:column: message`` a line."""
    diagnostics: list[Diagnostic]
    """For a rejection: the problems as fields."""

class Engine:
    """The toolgate engine: a compiled plan (policy, tool catalog, call gate)."""

    @staticmethod
    def load(
        policy: Optional[_Path] = None,
        tags: Optional[_Path] = None,
        tools: _Paths = None,
        *,
        audit: Optional[_Path] = None,
    ) -> Engine:
        """Loads a policy and a catalog, as the CLI's ``--policy``, ``--tags``
        and ``--tools`` (defaults: the embedded policy and tags; with ``tools``
        and no ``tags``, those tools alone). ``audit``: a JSON Lines audit log
        that every :meth:`check` appends to. Raises
        :class:`toolgate.errors.LoadError`."""
    @staticmethod
    def from_mcp_tools(
        list_result: Any, *, policy: Optional[_Path] = None, audit: Optional[_Path] = None
    ) -> Engine:
        """An engine over the tools of an MCP ``tools/list`` result: a dict with
        ``tools``, a list of tool dicts, or the ``mcp`` SDK's objects."""
    @staticmethod
    def from_openai_tools(
        tools: Sequence[Mapping[str, Any]],
        *,
        policy: Optional[_Path] = None,
        audit: Optional[_Path] = None,
    ) -> Engine:
        """An engine over an OpenAI ``tools`` array."""
    @staticmethod
    def watch(
        policy: Optional[_Path] = None,
        tags: Optional[_Path] = None,
        tools: _Paths = None,
        *,
        on_event: Optional[Callable[[WatchEvent], Any]] = None,
        poll_ms: Optional[int] = None,
        debounce_ms: Optional[int] = None,
        audit: Optional[_Path] = None,
    ) -> Engine:
        """An engine that serves the plan of these files and reloads it when
        they change, as ``toolgate watch``: a bad edit keeps the last good
        plan. Each load attempt goes to ``on_event`` (called from a watcher
        thread) or, without it, to :meth:`next_event` / :meth:`events`.
        ``poll_ms`` polls instead of using file-system events. The first load
        must succeed (else :class:`toolgate.errors.LoadError`). Use it as a
        context manager, or call :meth:`close`."""
    def select(
        self,
        *,
        context: Optional[Mapping[str, Any]] = None,
        message: Optional[str] = None,
        usage: Optional[Mapping[str, Any]] = None,
        tools: Optional[Sequence[Mapping[str, Any]]] = None,
        now: Optional[float] = None,
    ) -> Selection:
        """Scores every tool for one session: the keys of ``toolgate eval``'s
        input (``context``: the session context; ``message``: the user's raw
        text; ``usage``: ``call_counts``, ``seconds_since_last_call``,
        ``usage_frequency``; ``tools``: inline tagged tools replacing the
        catalog; ``now``: seconds). Raises :class:`toolgate.errors.InputError`."""
    def explain(
        self,
        tool: str,
        *,
        context: Optional[Mapping[str, Any]] = None,
        message: Optional[str] = None,
        usage: Optional[Mapping[str, Any]] = None,
        tools: Optional[Sequence[Mapping[str, Any]]] = None,
        now: Optional[float] = None,
    ) -> ToolResult:
        """Why ``tool`` is in or out of this session's selection, term by term."""
    def session(
        self,
        *,
        context: Optional[Mapping[str, Any]] = None,
        usage: Optional[Mapping[str, Any]] = None,
        now: Optional[float] = None,
    ) -> Session:
        """A session kept on the Rust side: ``context``, ``usage`` and ``now``
        (as :meth:`select` takes them) are read and checked once
        (:class:`toolgate.errors.InputError`), then updated in place by
        :meth:`Session.record_call` and :meth:`Session.user_message`, so each
        :meth:`Session.select` only evaluates."""
    def check(
        self,
        tool: str,
        arguments: Union[Mapping[str, Any], str, Any],
        *,
        session: Optional[str] = None,
        root: _Paths = None,
    ) -> Verdict:
        """Checks one call with the call gate: ``arguments`` as a dict or as
        JSON text (as ``toolgate guard --args``); ``session`` names the session
        in the audit log; ``root``: the project's directories (an MCP client's
        roots), which the policy's relative ``[gate.paths] roots`` are taken
        relative to."""
    @property
    def tool_names(self) -> list[str]:
        """The catalog's tool names, in catalog order."""
    @property
    def policy_name(self) -> str:
        """The policy's name."""
    @property
    def content_hash(self) -> str:
        """The content hash of the plan's inputs (hex)."""
    @property
    def version(self) -> int:
        """The version of the plan served (1 for a loaded engine)."""
    @property
    def watching(self) -> bool:
        """Whether the engine watches its files."""
    def status(self) -> dict[str, Any]:
        """A watched engine's reload status: ``version``, ``loads``,
        ``rejections``, ``last_error``, ``policy_name``, ``content_hash``."""
    def reload(self) -> WatchEvent:
        """Reloads a watched engine's files now and returns the attempt."""
    def next_event(self, timeout: Optional[float] = None) -> Optional[WatchEvent]:
        """The next load attempt of a watched engine, waiting at most
        ``timeout`` seconds; ``None`` on time-out or once closed."""
    def events(self, timeout: Optional[float] = None) -> Iterable[WatchEvent]:
        """The load attempts as they come, until ``timeout`` seconds pass
        without one (``None``: until :meth:`close`)."""
    def close(self) -> None:
        """Stops watching (the last plan is still served)."""
    def __enter__(self) -> Engine: ...
    def __exit__(self, *args: Any) -> bool: ...

class Session:
    """One agent session kept by the engine between calls (:meth:`Engine.session`):
    the context and usage as the crate's ``Session`` holds them, and a clock
    (``now``, seconds on the caller's clock)."""

    def select(self, *, message: Optional[str] = None, now: Optional[float] = None) -> Selection:
        """The same :class:`Selection` as ``engine.select(context=..., message=message,
        usage=..., now=now)`` with this session's context and usage. ``now``
        (default: the session's clock) becomes the session's clock; ``message``
        joins the intent keywords of this selection only."""
    def explain(self, tool: str, *, message: Optional[str] = None, now: Optional[float] = None) -> ToolResult:
        """Why ``tool`` is in or out of this session's selection, term by term."""
    def record_call(self, tool: str, *, at: Optional[float] = None) -> None:
        """Records a call of ``tool`` (a name or an alias, counted under the
        catalog name) at ``at`` seconds (default: the session's clock, which
        ``at`` moves to): ``call_counts``, the time of the last call, the
        policy's recent-calls window; with ``normalization = "frequency"``,
        every used tool's ``usage_frequency``. Raises
        :class:`toolgate.errors.UnknownToolError`."""
    def user_message(self, text: str) -> None:
        """Records a new user message: its keywords become the context's
        ``user_intent_keywords``; the previous ones move to
        ``previous_intent_keywords`` for as many turns as the policy's
        ``[keywords.memory] turns`` (none without it)."""
    now: float
    """The session's clock, seconds (a finite number)."""
    @property
    def context(self) -> dict[str, Any]:
        """The context, as :meth:`Engine.select` takes ``context=``."""
    @property
    def usage(self) -> dict[str, Any]:
        """The usage, as :meth:`Engine.select` takes ``usage=``
        (``seconds_since_last_call`` relative to ``now``)."""
    @property
    def engine(self) -> Engine:
        """The engine this session selects with."""
