"""API.md is generated from the docstrings by scripts/api_docs.py and must be current."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _api_docs():
    spec = importlib.util.spec_from_file_location("api_docs", REPO / "scripts" / "api_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_md_is_current():
    assert (REPO / "API.md").read_text() == _api_docs().render(), "API.md is stale: run ./dev api-docs"


def test_every_prop_is_documented_with_a_default():
    import inspect

    from cdk_delayed_scheduler.scheduler import DelayedScheduler

    api_docs = _api_docs()
    _, params = api_docs._split_doc(DelayedScheduler.__doc__)
    props = [p for p in inspect.signature(DelayedScheduler.__init__).parameters if p not in ("self", "scope", "id")]
    assert sorted(params) == sorted(["scope", "id", *props])
    for name in props:
        if name != "target":  # the one required prop
            assert "Default:" in params[name], name
