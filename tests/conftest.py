"""Shared helpers for the plugin's own tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture
def jp(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester whose inner sessions see only the CPU and a strict ini."""
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n")
    pytester.monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    return pytester


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
