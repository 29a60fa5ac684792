"""The queue's bulk actions (the decisions themselves are
:mod:`toolnexus_django.review.bulk`): "Approve selected" and "Decline
selected", admin actions of the queue's ModelAdmin.

The action first shows the selected Tasks and asks for one comment for all;
confirming answers each Task on its own (:func:`..review.bulk.decide_many`)
and reports the ones left alone — answered meanwhile, held by another
reviewer, asking for data of their own, or sent by this reviewer."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import ModelAdmin, helpers
from django.contrib.admin.utils import quote
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.text import Truncator
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from .. import lifecycle
from ..review.bulk import BulkResult, decidable_in_bulk, decide_many
from ..review.reviewers import is_own_request
from .display import server_side
from .history import decision_message, log_decision

TEMPLATE = "admin/toolnexus_django/bulk_decision.html"


class BulkCommentForm(forms.Form):
    comment = forms.CharField(
        label="Reviewer comment (for every selected task)",
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3, "class": "vLargeTextField"}),
        help_text="Kept with each decision, server-side; the requester never sees it.",
    )


# Permission-checked: answering needs answer_task (the admin's has_answer_permission).
@admin.action(description=_("Approve selected tasks"), permissions=["answer"])
def approve_selected(
    modeladmin: ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Any]
) -> TemplateResponse | None:
    return decide(modeladmin, request, queryset, "approve")


@admin.action(description=_("Decline selected tasks"), permissions=["answer"])
def decline_selected(
    modeladmin: ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Any]
) -> TemplateResponse | None:
    return decide(modeladmin, request, queryset, "decline")


def decide(
    modeladmin: ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Any], decision: str
) -> TemplateResponse | None:
    """The confirmation page of ``decision`` for the selected Tasks; once
    confirmed, each answered on its own and the outcome reported."""
    rows = list(queryset.defer("task"))
    form = BulkCommentForm(request.POST if "_confirm" in request.POST else None)
    if not ("_confirm" in request.POST and form.is_valid()):
        return _confirmation(modeladmin, request, rows, decision, form)
    comment = form.cleaned_data["comment"]
    prompts = {
        str(r.pk): (lifecycle.read(server_side(r)).pending or {}).get("prompt") for r in rows
    }
    result = decide_many(list(prompts), decision, request.user, comment=comment)
    done = result.answered + result.approved_once
    if done:
        said = {
            i: decision_message(
                "first_approval" if i in result.approved_once else decision,
                prompts.get(i),
                comment=comment,
                bulk=True,
            )
            for i in done
        }
        log_decision(request.user, done, said)
    _report(modeladmin, request, decision, result)
    return None  # back to the queue


def _confirmation(
    modeladmin: ModelAdmin[Any],
    request: HttpRequest,
    rows: list[Any],
    decision: str,
    form: BulkCommentForm,
) -> TemplateResponse:
    """The selected Tasks, which of them one decision fits, and the comment."""
    tasks = []
    for row in rows:
        task = server_side(row)
        pending = lifecycle.read(task).pending or {}
        own = is_own_request(request.user, task)  # left alone: another reviewer's to answer
        tasks.append(
            {
                "id": row.pk,
                "prompt": Truncator(str(pending.get("prompt") or "")).chars(120),
                "kind": pending.get("kind"),
                "own": own,
                "fits": decidable_in_bulk(pending) and not own,
            }
        )
    context = {
        **modeladmin.admin_site.each_context(request),
        "opts": modeladmin.opts,
        "title": gettext("Approve the selected tasks?")
        if decision == "approve"
        else gettext("Decline the selected tasks?"),
        "decision": decision,
        "action": f"{decision}_selected",
        "tasks": tasks,
        "form": form,
        "selected": [str(r.pk) for r in rows],
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    request.current_app = modeladmin.admin_site.name
    return TemplateResponse(request, TEMPLATE, context)


def _report(
    modeladmin: ModelAdmin[Any], request: HttpRequest, decision: str, result: BulkResult
) -> None:
    if result.answered:
        said = (
            ngettext("Approved %(n)d task", "Approved %(n)d tasks", len(result.answered))
            if decision == "approve"
            else ngettext("Declined %(n)d task", "Declined %(n)d tasks", len(result.answered))
        )
        modeladmin.message_user(
            request,
            (said % {"n": len(result.answered)})
            + gettext("; their runs resume in the background."),
            messages.SUCCESS,
        )
        modeladmin.message_user(request, follow_links(modeladmin, result.answered), messages.INFO)
    if result.approved_once:
        modeladmin.message_user(
            request,
            ngettext(
                "%(n)d task took your approval and waits for another reviewer's.",
                "%(n)d tasks took your approval and wait for another reviewer's.",
                len(result.approved_once),
            )
            % {"n": len(result.approved_once)},
            messages.INFO,
        )
    for task_id, why in result.skipped:
        modeladmin.message_user(
            request,
            gettext("Left task %(id)s alone: %(why)s.")
            % {"id": Truncator(task_id).chars(13), "why": str(why).rstrip(".")},
            messages.WARNING,
        )


#: The most Tasks one message links to (the rest are counted).
MAX_LINKS = 10


def follow_links(modeladmin: ModelAdmin[Any], task_ids: list[str]) -> SafeString:
    """A link to each answered Task's own page, where its answer appears once
    its run ends (ids escaped; at most :data:`MAX_LINKS`, the rest counted)."""
    site = modeladmin.admin_site.name
    links = format_html_join(
        ", ",
        '<a href="{}" class="tnx-task-link" title="{}">{}</a>',
        (
            (
                reverse(f"{site}:toolnexus_django_taskrecord_change", args=[quote(i)]),
                i,
                Truncator(i).chars(13),
            )
            for i in task_ids[:MAX_LINKS]
        ),
    )
    rest = len(task_ids) - MAX_LINKS
    more = ngettext(" and %(n)d more", " and %(n)d more", rest) % {"n": rest} if rest > 0 else ""
    return format_html(
        "{} {}{}.",
        ngettext("Follow it to its answer:", "Follow them to their answers:", len(task_ids)),
        links,
        more,
    )
