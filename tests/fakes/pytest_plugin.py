"""Pytest fixtures for :class:`tests.fakes.FakeLLM`.

Load with ``pytest_plugins = ["tests.fakes.pytest_plugin"]`` (root conftest or a test
module) or ``-p tests.fakes.pytest_plugin``. Each fixture yields a started fake and stops
it after the test (releasing any request still held by a ``Hang``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.llm import FakeLLM


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A running openai-style :class:`FakeLLM` (``base_url=fake_llm.url``, ``style="openai"``)."""
    with FakeLLM(style="openai") as fake:
        yield fake


@pytest.fixture
def fake_anthropic() -> Iterator[FakeLLM]:
    """A running anthropic-style :class:`FakeLLM` (``style="anthropic"``)."""
    with FakeLLM(style="anthropic") as fake:
        yield fake
