"""The card's skills (toolnexus_django/a2a/card.py): one per SKILL.md, or --
for an agent with none -- one describing the agent, since clients such as
toolnexus's ``agent()`` offer one tool per skill."""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings

from toolnexus_django.a2a.card import build_card

SKILLS_DIR = django_settings.TOOLNEXUS["TOOLKIT"]["skills_dir"]


def card_with(settings: Any, agent: dict[str, Any], toolkit: dict[str, Any]) -> dict[str, Any]:
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "AGENT": agent,
        "TOOLKIT": {**settings.TOOLNEXUS["TOOLKIT"], **toolkit},
    }
    return build_card("http://testserver/agent/")


def test_each_skill_md_is_a_skill(settings: Any) -> None:
    card = card_with(settings, {"name": "filing-desk"}, {"skills_dir": SKILLS_DIR})
    ids = [skill["id"] for skill in card["skills"]]
    assert ids and "agent" not in {t for s in card["skills"] for t in s["tags"]}
    assert len(ids) == len(set(ids))


def test_an_agent_without_skills_publishes_itself_as_its_one_skill(settings: Any) -> None:
    card = card_with(
        settings,
        {"name": "Expense Desk", "description": "Files expense claims."},
        {"skills_dir": None},
    )
    assert card["skills"] == [
        {
            "id": "expense-desk",
            "name": "Expense Desk",
            "description": "Files expense claims.",
            "tags": ["agent"],
        }
    ]


def test_without_a_description_the_one_skill_still_says_what_to_do(settings: Any) -> None:
    card = card_with(settings, {"name": "desk"}, {"skills_dir": None})
    (skill,) = card["skills"]
    assert skill["id"] == "desk" and skill["description"] == "Send desk a task in plain words."


def test_an_empty_skills_filter_means_no_skills(settings: Any) -> None:
    # AGENT["skills"] = [] is a choice, not an omission: nothing is made up.
    card = card_with(settings, {"name": "desk", "skills": []}, {"skills_dir": SKILLS_DIR})
    assert card["skills"] == []
