"""Prometheus metrics (``TOOLNEXUS["METRICS"]``, the ``metrics`` extra).

Off — the default ``None`` — nothing here imports ``prometheus_client`` and
every recording function returns after one check of :func:`enabled` (a
module global, read once per settings change). On, the metric objects are
made on first use in a registry of this app's own (the project's default
registry is left alone).

Counters and histograms are process-local; ``toolnexus_serve`` aggregates its
workers with prometheus_client's multiprocess mode (:func:`prepare_multiprocess`:
each process writes its values to files in ``PROMETHEUS_MULTIPROC_DIR``, and a
scrape in any worker reads them all). Gauges that are facts about the
database (Requests waiting for a person) are not kept here: the endpoint
(``serving.metrics``) reads them at scrape time, so they are right across
machines. Label values come from closed sets — never a Task id.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..conf import toolnexus_settings

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
#: The classic text format every Prometheus reads (our names need none of 1.0.0's escaping).
TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"
#: How a Task ended (its terminal state).
OUTCOMES = frozenset({"completed", "failed", "canceled", "rejected"})
#: How a push delivery attempt ended (``push.book``).
PUSH_OUTCOMES = ("delivered", "retry", "gave-up", "refused", "disabled")
#: What an answer's event records as its decision (``lifecycle.answers``).
DECISIONS = frozenset({"approve", "authorize", "decline", "expire", "reply", "message"})
#: Distinct tool names given their own label value; later ones count as "other"
#: (a model may call tools that do not exist: the label set stays bounded).
MAX_TOOL_LABELS = 200
OTHER = "other"

RUN_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
MODEL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)

#: None: not read since the setting last changed.
_on: bool | None = None
_metrics: Metrics | None = None
_lock = threading.Lock()
_tool_names: set[str] = set()


def switched_on() -> bool:
    """Whether metrics are recorded: ``METRICS`` is set (and not ``False``)."""
    on = _on
    return _read_setting() if on is None else on


def _read_setting() -> bool:
    global _on
    value = toolnexus_settings.METRICS
    _on = value is not None and value is not False
    return _on


def _forget() -> None:
    global _on
    _on = None


toolnexus_settings.on_reload(_forget)


class Metrics:
    """The metric objects, made once per process (per :func:`reset`)."""

    def __init__(self) -> None:
        import prometheus_client as p

        self.prometheus = p
        self.registry = p.CollectorRegistry(auto_describe=True)
        self.multiprocess = bool(os.environ.get(MULTIPROC_ENV))
        self._tasks_and_people()
        self._runs_and_calls()
        self._process()
        # Every value of a closed label set exposed from the start, at 0: a
        # rate() over a series that appears only at its first event misses it.
        for counter, values in (
            (self.tasks_finished, OUTCOMES),
            (self.decisions, DECISIONS),
            (self.model_calls, ("ok", "error")),
            (self.model_tokens, ("input", "output")),
            (self.push_deliveries, PUSH_OUTCOMES),
        ):
            for label in values:
                counter.labels(label)

    def counter(self, name: str, doc: str, labels: Iterable[str] = ()) -> Any:
        return self.prometheus.Counter(name, doc, list(labels), registry=self.registry)

    def gauge(self, name: str, doc: str) -> Any:
        # livesum: the sum over the live processes of one server.
        return self.prometheus.Gauge(name, doc, registry=self.registry, multiprocess_mode="livesum")

    def histogram(self, name: str, doc: str, buckets: tuple[float, ...]) -> Any:
        return self.prometheus.Histogram(name, doc, registry=self.registry, buckets=buckets)

    def _tasks_and_people(self) -> None:
        counter = self.counter
        self.tasks_started = counter("toolnexus_tasks_started", "Tasks submitted.")
        self.tasks_finished = counter(
            "toolnexus_tasks_finished", "Tasks that reached a terminal state.", ["outcome"]
        )
        self.decisions = counter(
            "toolnexus_decisions", "Answers to Requests, by decision.", ["decision"]
        )
        self.expired = counter("toolnexus_requests_expired", "Requests that expired unanswered.")
        self.reminders = counter("toolnexus_review_reminders", "Reminders sent (one per Request).")
        self.escalations = counter(
            "toolnexus_review_escalations", "Escalations sent (one per Request)."
        )
        self.takeovers = counter(
            "toolnexus_lease_takeovers", "Runs taken back from a worker whose lease lapsed."
        )
        self.exhausted = counter(
            "toolnexus_attempts_exhausted", "Tasks failed after MAX_ATTEMPTS interrupted runs."
        )

    def _runs_and_calls(self) -> None:
        counter = self.counter
        self.runs_in_flight = self.gauge(
            "toolnexus_runs_in_flight", "Runs (and resumes) under way."
        )
        self.run_duration = self.histogram(
            "toolnexus_run_duration_seconds",
            "How long one run (a first run or a resume) took, from its claim to its outcome.",
            RUN_BUCKETS,
        )
        self.model_calls = counter(
            "toolnexus_model_calls", "Calls of the model, by outcome.", ["outcome"]
        )
        self.model_duration = self.histogram(
            "toolnexus_model_call_duration_seconds",
            "How long one call of the model took (answered or failed).",
            MODEL_BUCKETS,
        )
        self.model_tokens = counter(
            "toolnexus_model_tokens", "Tokens the model reported, by direction.", ["direction"]
        )
        self.tool_calls = counter(
            "toolnexus_tool_calls", "Tool calls in runs, by tool and outcome.", ["tool", "outcome"]
        )
        self.mcp_calls = counter(
            "toolnexus_mcp_calls", "tools/call at the MCP endpoint.", ["tool", "outcome"]
        )

    def _process(self) -> None:
        self.push_deliveries = self.counter(
            "toolnexus_push_deliveries", "Push notification attempts, by outcome.", ["outcome"]
        )
        self.push_disabled = self.counter(
            "toolnexus_push_configs_disabled", "Push configs disabled after failing."
        )
        self.streams_open = self.gauge("toolnexus_streams_open", "Event streams open.")
        self.database_queue = self.gauge(
            "toolnexus_database_queue_depth", "Database work waiting for a database thread."
        )


def metrics() -> Metrics | None:
    """The metric objects, or None when metrics are off."""
    if not switched_on():
        return None
    found = _metrics
    if found is None:
        with _lock:
            if _metrics is None:
                _make()
            found = _metrics
    return found


def _make() -> None:
    global _metrics
    _metrics = Metrics()


def reset() -> None:
    """Forget every value (tests; a fresh registry, the same names)."""
    global _metrics
    with _lock:
        _metrics = None
        _tool_names.clear()


# -- recording (each a no-op when metrics are off) -------------------------------------------


def task_moved(kind: str, from_state: str, to_state: str, decision: Any = None) -> None:
    """One move of a Task (the ``task_event`` signal's event)."""
    m = metrics()
    if m is None:
        return
    if kind == "submit":
        m.tasks_started.inc()
    if to_state in OUTCOMES and from_state not in OUTCOMES:
        m.tasks_finished.labels(to_state).inc()
    if kind in ("answer", "expire", "review_approval") and decision is not None:
        m.decisions.labels(decision if decision in DECISIONS else OTHER).inc()
    counter = {
        "expire": m.expired,
        "remind": m.reminders,
        "escalate": m.escalations,
        "requeue": m.takeovers,
        "give_up": m.exhausted,
    }.get(kind)
    if counter is not None:
        counter.inc()


def _noop() -> None:
    return None


def run_started() -> Callable[[], None]:
    """A run begins: counted in flight until the function returned is called,
    which records its duration."""
    m = metrics()
    if m is None:
        return _noop
    m.runs_in_flight.inc()
    began = time.monotonic()

    def finished() -> None:
        m.runs_in_flight.dec()
        m.run_duration.observe(time.monotonic() - began)

    return finished


def model_called(
    outcome: str, seconds: float | None, input_tokens: int, output_tokens: int
) -> None:
    """One call of the model ("ok" or "error"): how long it took, the tokens it reported."""
    m = metrics()
    if m is None:
        return
    m.model_calls.labels("ok" if outcome == "ok" else "error").inc()
    if seconds is not None:
        m.model_duration.observe(max(0.0, seconds))
    if input_tokens:
        m.model_tokens.labels("input").inc(input_tokens)
    if output_tokens:
        m.model_tokens.labels("output").inc(output_tokens)


def tool_label(name: Any) -> str:
    """A tool's name as a label value: the first :data:`MAX_TOOL_LABELS`
    distinct names as they are (cut to 64 characters), later ones "other"."""
    text = str(name or "")[:64] or OTHER
    if text in _tool_names:
        return text
    with _lock:
        if len(_tool_names) >= MAX_TOOL_LABELS:
            return OTHER
        _tool_names.add(text)
    return text


def tool_called(name: Any, outcome: str) -> None:
    """A tool call in a run ended: "ok", "error", "waiting" (it asks a person)
    or "declined" (declined or expired: it does not run again)."""
    m = metrics()
    if m is not None:
        m.tool_calls.labels(tool_label(name), outcome).inc()


def mcp_called(name: Any, outcome: str) -> None:
    """A ``tools/call`` at the MCP endpoint ended ("ok" or "error")."""
    m = metrics()
    if m is not None:
        m.mcp_calls.labels(tool_label(name), outcome if outcome == "ok" else "error").inc()


def push_attempted(outcome: str) -> None:
    """A push delivery attempt ended (delivered, retry, gave-up, refused)."""
    m = metrics()
    if m is not None:
        m.push_deliveries.labels(outcome).inc()


def push_disabled() -> None:
    m = metrics()
    if m is not None:
        m.push_disabled.inc()


def stream_opened() -> None:
    m = metrics()
    if m is not None:
        m.streams_open.inc()


def stream_closed() -> None:
    m = metrics()
    if m is not None:
        m.streams_open.dec()


def database_queue(depth: int) -> None:
    """This process's database-thread queue, sampled (each sweep, each scrape)."""
    m = metrics()
    if m is not None:
        m.database_queue.set(depth)


# -- exposition and processes ----------------------------------------------------------------


def exposition(extra: Iterable[Any] = ()) -> tuple[bytes, str]:
    """(the body, its content type) of a scrape: every process's values in
    multiprocess mode, else this process's, then the ``extra`` collectors'."""
    import prometheus_client as p
    from prometheus_client import multiprocess

    m = metrics()
    registry = p.CollectorRegistry(auto_describe=False)
    if m is not None and m.multiprocess:
        multiprocess.MultiProcessCollector(registry)
    elif m is not None:
        registry.register(_Forward(m.registry))
    for collector in extra:
        registry.register(collector)
    return p.generate_latest(registry), TEXT_FORMAT


class _Forward:
    """Another registry's samples, as one collector (registered in a scrape's)."""

    def __init__(self, source: Any) -> None:
        self.source = source

    def collect(self) -> Iterable[Any]:
        return self.source.collect()


def prepare_multiprocess() -> Path | None:
    """For ``toolnexus_serve`` before its workers fork: with metrics on, each
    process writes its values to ``PROMETHEUS_MULTIPROC_DIR`` — a fresh
    directory made here when unset (returned, for removal at exit), else the
    one named, cleared of a previous run's files."""
    if not switched_on():
        return None
    named = os.environ.get(MULTIPROC_ENV)
    if named:
        for stale in Path(named).glob("*.db"):
            stale.unlink(missing_ok=True)
        return None
    made = Path(tempfile.mkdtemp(prefix="toolnexus-metrics-"))
    os.environ[MULTIPROC_ENV] = str(made)
    return made


def process_exited(pid: int) -> None:
    """A worker of ``toolnexus_serve`` is gone: its live gauges no longer count."""
    if switched_on() and os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


def remove_directory(made: Path | None) -> None:
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)
