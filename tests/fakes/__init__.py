"""Test doubles for toolnexus_django's tests."""

from tests.fakes.llm import (
    DEFAULT_USAGE,
    Fail,
    FakeLLM,
    Hang,
    Raw,
    RecordedRequest,
    Reply,
    Style,
    Text,
    ToolCall,
    Trickle,
    first_user_text,
)

__all__ = [
    "DEFAULT_USAGE",
    "Fail",
    "FakeLLM",
    "Hang",
    "Raw",
    "RecordedRequest",
    "Reply",
    "Style",
    "Text",
    "ToolCall",
    "Trickle",
    "first_user_text",
]
