"""Tasks whose every text field holds hostile text (:mod:`tests.corpus.xss`),
made the way the app makes them, and the admin pages that show them — for the
stored-XSS tests on the HTML (tests/admin/test_admin_xss.py) and in chromium
(tests/admin/test_browser_admin_xss.py), issue 18 item 1.

A scene is one of each kind of Task the admin shows — waiting on an approval
(claimed, with a push config and an MCP call), on a sign-in (its URL as sent,
and inside a web URL), four eyes with a first approval, answered in the admin
with edited arguments and a comment, failed, completed — built with the
lifecycle's verbs, the reviewers' own moves (admin POSTs, ``answer_task``)
and the MCP audit's writer. Each field gets its own two-letter code, so a
marker that survives names the field."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from toolnexus import Answer

from tests.corpus import xss
from tests.utils import pending_id, task_in
from toolnexus_django.mcp import audit
from toolnexus_django.models import McpCall, PushConfig, PushDelivery, TaskRecord
from toolnexus_django.review import answer_task
from toolnexus_django.stores import DjangoTaskStore

#: Every field a scene fills, by code.
FIELDS = {
    "ow": "owner username",
    "rv": "reviewer username",
    "cx": "contextId",
    "in": "message text (the original request)",
    "pr": "Request prompt (and status message)",
    "ri": "Request id",
    "rd": "Request data",
    "rk": "a key of the Request data",
    "st": "reply schema: a title",
    "sd": "reply schema: a description",
    "sf": "reply schema: a default",
    "sp": "reply schema: a pattern",
    "se": "reply schema: an enum value",
    "sn": "reply schema: an enum name",
    "sq": "reply schema: a property name",
    "ty": "reply schema the form cannot do (its note)",
    "sy": "system prompt",
    "sk": "skill",
    "sb": "a tool result (the skill's body)",
    "as": "assistant text",
    "ci": "tool call id",
    "tn": "tool name",
    "tf": "tool name (four eyes)",
    "ar": "tool argument",
    "an": "tool argument (no description: the edit form's help text)",
    "tt": "tool schema: a title",
    "td": "tool schema: a description",
    "tr": "the halted tool result",
    "bp": "sign-in prompt",
    "bu": "sign-in URL",
    "bv": "sign-in URL, inside a web URL",
    "ed": "edited argument",
    "cm": "reviewer comment",
    "fc": "reviewer comment of a first approval",
    "fr": "failure reason",
    "at": "artifact text",
    "pu": "push URL",
    "pc": "push config id",
    "pd": "push config: why disabled",
    "pn": "push notification id",
    "pe": "push delivery error",
    "mt": "MCP tool name",
    "mc": "MCP caller name",
    "mr": "MCP request id",
}

TASK = "admin:toolnexus_django_taskrecord_change"
REVIEW = "admin:toolnexus_django_awaitinghumantask_review"


@dataclass
class Scene:
    """One payload set's Tasks and rows (ids), and what went into them."""

    indices: tuple[int, ...]
    waiting: str  # an approval, claimed by the hostile reviewer
    sign_in: str  # authorization, its URL as sent
    sign_in_web: str  # authorization, the payload inside an https URL
    four_eyes: str  # one of two approvals given
    answered: str  # approved in the admin with edited arguments
    failed: str
    completed: str
    push_config: int = 0
    delivery: int = 0
    mcp_call: int = 0
    owner_pk: int = 0
    reviewer_name: str = ""
    tool: str = ""
    texts: dict[str, str] = field(default_factory=dict)

    @property
    def reviewable(self) -> list[str]:
        return [self.waiting, self.sign_in, self.sign_in_web, self.four_eyes]

    def task_ids(self) -> list[str]:
        return [*self.reviewable, self.answered, self.failed, self.completed]

    def markers(self) -> set[str]:
        return xss.markers(FIELDS, self.indices)


def four_eyes(settings: Any, payload_sets: Iterable[Iterable[int]]) -> None:
    """``REVIEW["APPROVALS"]``: two for the four-eyes tool of each payload set."""
    review = {**settings.TOOLNEXUS.get("REVIEW", {})}
    review["APPROVALS"] = {xss.text("tf", indices): 2 for indices in payload_sets}
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": review}


def transcript(t: Any, tool: str) -> list[dict[str, Any]]:
    """A run that loaded a skill, said something, then stopped in ``tool``."""
    call_id = t("ci", 64)
    return [
        {"role": "system", "content": t("sy")},
        {"role": "user", "content": t("in")},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "k1",
                    "type": "function",
                    "function": {"name": "skill", "arguments": json.dumps({"name": t("sk")})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "k1", "content": t("sb")},
        {
            "role": "assistant",
            "content": t("as"),
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": tool,
                        "arguments": json.dumps({"amount": t("ar"), "note": t("an")}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": t("tr")},
    ]


def tool_schema(t: Any) -> dict[str, Any]:
    """The halted tool's input schema (the edit form is generated from it)."""
    return {
        "type": "object",
        "properties": {
            "amount": {"type": "string", "title": t("tt"), "description": t("td")},
            "note": {"type": "string"},
        },
        "required": ["amount"],
    }


def reply_schema(t: Any) -> dict[str, Any]:
    """The Request's ``data.schema`` (the reply form is generated from it)."""
    return {
        "type": "object",
        "properties": {
            "why": {
                "type": "string",
                "title": t("st"),
                "description": t("sd"),
                "default": t("sf"),
                "pattern": "^" + re.escape(t("sp")) + "$",
            },
            "pick": {"type": "string", "enum": [t("se"), "b"], "enumNames": [t("sn"), "B"]},
            t("sq"): {"type": "string"},
        },
    }


def build(indices: Iterable[int], root: Any, django_user_model: Any) -> Scene:
    """One scene holding the payloads ``indices``; ``root`` (a superuser)
    answers its answered Task through the admin."""
    indices = tuple(indices)

    def t(code: str, limit: int | None = None) -> str:
        return xss.text(code, indices, limit)

    store = DjangoTaskStore()
    # No passwords: they log in by session (and hashing one costs a quarter second).
    owner = django_user_model.objects.create_user(t("ow", 150))
    reviewer = django_user_model.objects.create_user(t("rv", 150), is_staff=True)
    reviewer.user_permissions.add(Permission.objects.get(codename="answer_task"))
    common = {"owner": str(owner.pk), "store": store, "text": t("in"), "context_id": t("cx", 255)}
    tool = SimpleNamespace(name=t("tn"), source="native", input_schema=tool_schema(t))

    def approval(code_id: str, data: Any) -> dict[str, Any]:
        return {"id": t(code_id), "kind": "approval", "prompt": t("pr"), "data": data}

    data = {"note": t("rd"), t("rk"): 1, "schema": reply_schema(t)}
    waiting = task_in(
        "input-required", request=approval("ri", data), transcript=transcript(t, t("tn")),
        tool=tool, **common,
    )["id"]  # fmt: skip
    sign_in = task_in(
        "auth-required",
        request={"id": t("ri"), "kind": "authorization", "prompt": t("bp"), "url": t("bu")},
        transcript=transcript(t, t("tn")), **common,
    )["id"]  # fmt: skip
    sign_in_web = task_in(
        "auth-required",
        request={"id": t("ri"), "kind": "authorization", "prompt": t("bp"),
                 "url": "https://login.example.com/" + t("bv")},
        transcript=transcript(t, t("tn")), **common,
    )["id"]  # fmt: skip
    unsupported = {"type": "object", "properties": {"x": {"type": t("ty")}}}
    four_eyes = task_in(
        "input-required", request=approval("ri", {"schema": unsupported}),
        transcript=transcript(t, t("tf")), **common,
    )["id"]  # fmt: skip
    answered = task_in(
        "input-required", request=approval("ri", None), transcript=transcript(t, t("tn")),
        tool=tool, **common,
    )["id"]  # fmt: skip
    failed = task_in("failed", result=t("fr"), **common)["id"]
    completed = task_in("completed", result=t("at"), **common)["id"]
    scene = Scene(
        indices, waiting, sign_in, sign_in_web, four_eyes, answered, failed, completed,
        owner_pk=owner.pk, reviewer_name=reviewer.get_username(), tool=t("tn"),
        texts={code: t(code) for code in FIELDS},
    )  # fmt: skip

    # The reviewers' moves, as they make them: a claim in the admin (logged),
    # a first approval from code, root's edit-then-approve in the admin (logged).
    by_reviewer = Client()
    by_reviewer.force_login(reviewer)
    claimed = by_reviewer.post(reverse("admin:toolnexus_django_awaitinghumantask_hold",
                                       args=[waiting]))  # fmt: skip
    assert claimed.status_code == 302, claimed.status_code
    return scene_rows(scene, root, reviewer, store)


def scene_rows(scene: Scene, root: Any, reviewer: Any, store: Any) -> Scene:
    t = scene.texts
    request_id = pending_id(scene.four_eyes, store)
    answer_task(
        scene.four_eyes, Answer(id=request_id, ok=True), decision="approve", user=reviewer,
        comment=t["fc"], store=store,
    )  # fmt: skip
    by_root = Client()
    by_root.force_login(root)
    edited = by_root.post(
        reverse(REVIEW, args=[scene.answered]),
        {"_answer": "edit", "request_id": pending_id(scene.answered, store),
         "edit-amount": t["ed"], "edit-note": t["ed"], "edit-comment": t["cm"]},
    )  # fmt: skip
    assert edited.status_code == 302, edited.content[:2000]
    assert TaskRecord.objects.get(pk=scene.answered).state == "working"

    config = PushConfig.objects.create(
        task=TaskRecord.objects.get(pk=scene.waiting), config_id=t["pc"][:255],
        owner=str(scene.owner_pk), url=t["pu"][:2048], failures=3,
        disabled_at=timezone.now(), disabled_reason=t["pd"],
    )  # fmt: skip
    delivery = PushDelivery.objects.create(
        config=config, seq=2, notification_id=t["pn"][:64], outcome="retry", status_code=500,
        error=t["pe"],
    )  # fmt: skip
    before = set(McpCall.objects.values_list("pk", flat=True))
    audit.store(
        [
            audit.CallRecord(
                at=timezone.now(), caller=str(scene.owner_pk), caller_name=t["mc"][:255],
                tool=t["mt"][:255], arguments_digest=audit.digest({"x": t["mt"]}),
                duration_ms=1.5, outcome="error", reason="unknown-tool",
                request_id=t["mr"][:255],
            )
        ]
    )  # fmt: skip
    [call] = McpCall.objects.exclude(pk__in=before).values_list("pk", flat=True)
    scene.push_config, scene.delivery, scene.mcp_call = config.pk, delivery.pk, call
    return scene


# -- the pages -------------------------------------------------------------------------------


def url(name: str, *args: Any, **params: str) -> str:
    from urllib.parse import urlencode

    found = reverse(f"admin:toolnexus_django_{name}", args=args)
    return f"{found}?{urlencode(params)}" if params else found


def scene_pages(scene: Scene) -> list[str]:
    """Every page the admin shows of the scene's Tasks and rows (GET)."""
    reviews = [url("awaitinghumantask_review", i) for i in [*scene.reviewable, scene.answered]]
    return [
        *reviews,
        *[url("taskrecord_change", i) for i in scene.task_ids()],
        url("awaitinghumantask_change", scene.waiting),
        url("taskrecord_history", scene.answered),
        url("taskrecord_history", scene.waiting),
        url("pushconfig_change", scene.push_config),
        url("pushdelivery_change", scene.delivery),
        url("mcpcall_change", scene.mcp_call),
    ]


def list_pages(scenes: list[Scene]) -> list[str]:
    """The lists across Tasks (each with every scene's rows), filtered and
    searched by hostile values as a link to them would."""
    first = scenes[0]
    return [
        reverse("admin:index"),  # Recent actions
        url("awaitinghumantask_changelist"),
        url("awaitinghumantask_changelist", tool=first.tool, owner=str(first.owner_pk)),
        url("awaitinghumantask_changelist", q=first.texts["pr"][:200]),
        url("taskrecord_changelist"),
        url("taskrecord_changelist", context_id=first.texts["cx"][:255]),
        url("taskdecision_changelist"),
        url("taskdecision_changelist", reviewer=first.reviewer_name),
        url("pushconfig_changelist"),
        url("pushdelivery_changelist", status="all"),
        url("mcpcall_changelist"),
    ]


def bulk_form(scenes: list[Scene]) -> dict[str, Any]:
    """The queue's "Approve selected" for every reviewable Task: its
    confirmation page lists them all."""
    return {
        "action": "approve_selected",
        "_selected_action": [i for s in scenes for i in s.reviewable],
    }


def invalid_reply(scene: Scene) -> dict[str, str]:
    """A reply the waiting Task's form refuses (the pattern, the choice):
    the page comes back with the errors, naming the hostile values."""
    t = scene.texts
    return {
        "_answer": "reply",
        "request_id": pending_id(scene.waiting),
        "reply-why": "not " + t["sp"][:50],
        "reply-pick": "not a choice",
        f"reply-{t['sq']}": t["sq"],
    }
