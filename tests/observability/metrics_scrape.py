"""Reading ``<prefix>/metrics`` over real HTTP, parsed with prometheus_client's
own text parser: ``samples(body)[("toolnexus_tasks_finished_total",
{"outcome": "failed"})]`` reads as ``value(found, name, outcome="failed")``."""

from __future__ import annotations

from typing import Any

from tests.conftest import HttpReply, http, wait_until

TOKEN = "scrape-s3cret"
BEARER = {"Authorization": f"Bearer {TOKEN}"}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(agent_url: str, headers: dict[str, str] | None = None) -> HttpReply:
    """GET ``<agent_url>metrics`` (``agent_url`` ends with the mount's slash)."""
    return http(f"{agent_url}metrics", headers=headers or {})


def samples(body: bytes) -> Samples:
    """Every sample of a scrape: (name, its labels) -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    found: Samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def read(agent_url: str) -> Samples:
    reply = scrape(agent_url, BEARER)
    assert reply.status == 200, (reply.status, reply.body[:300])
    return samples(reply.body)


def read_once(agent_url: str, what: str, **expected: float) -> Samples:
    """A scrape in which each named (unlabelled) metric has its ``expected``
    value, once one has: what a run or a stream records as it ends comes just
    after the Task or the stream shows its end."""
    return wait_until(
        lambda: (
            (found := read(agent_url))
            and all(value(found, name) == want for name, want in expected.items())
            and found
        ),
        what=what,
    )


def value(found: Samples, name: str, **labels: str) -> float:
    """One sample's value; 0 for a labelled counter never incremented (not exposed)."""
    return found.get((name, frozenset(labels.items())), 0.0)


def names(found: Samples) -> set[str]:
    return {name for name, _ in found}


def by_label(found: Samples, name: str, label: str) -> dict[str, Any]:
    """A labelled counter's values by one label: ``{"completed": 2.0, ...}``."""
    return {dict(labels)[label]: v for (n, labels), v in found.items() if n == name and v != 0}
