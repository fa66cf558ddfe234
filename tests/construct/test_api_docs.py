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


def test_every_api_choice_param_is_documented_with_a_default():
    import inspect

    from cdk_delayed_scheduler.api import ApiAuthorization, SchedulerApi

    api_docs = _api_docs()
    for factory in (SchedulerApi.http, SchedulerApi.rest, ApiAuthorization.cognito):
        _, params = api_docs._split_doc(factory.__doc__)
        names = [p for p in inspect.signature(factory).parameters if p != "user_pool"]
        assert sorted(params) == sorted(names + (["user_pool"] if factory is ApiAuthorization.cognito else []))
        for name in names:
            assert "Default:" in params[name], (factory.__name__, name)


def test_documented_bounds_and_defaults_are_the_contracts():
    """The docstring states what contract.json holds (the construct reads its values from there)."""
    import json

    from cdk_delayed_scheduler._runtime_asset import runtime_asset_path
    from cdk_delayed_scheduler.scheduler import DelayedScheduler

    c = json.loads((runtime_asset_path() / "scheduler_runtime" / "contract.json").read_text())
    _, params = _api_docs()._split_doc(DelayedScheduler.__doc__)
    shards, window, retention, receives = (c[k] for k in ("shardCount", "delayWindowSeconds",
                                                          "historyRetentionSeconds", "maxReceiveCount"))
    assert f"Allowed: {shards['min']}-{shards['max']}. Default: {shards['default']}." in params["shard_count"]
    assert f"Allowed: {window['min']}-{window['max']} seconds" in params["delay_window"]
    assert f"Default: {window['default']} seconds ({c['sqsMaxDelaySeconds']} less a" in params["delay_window"]
    assert (retention["min"], retention["max"], retention["default"]) == (60, 3650 * 86400, 86400)
    assert "Allowed: 60 seconds to 3650 days. Default: 1 day." in params["history_retention"]
    assert f"Allowed: {receives['min']}-{receives['max']}. Default: {receives['default']}." in params["max_receive_count"]
    assert f'Default: ``LogLevel.{c["defaultLogLevel"]}``' in params["log_level"]
    assert f'``"{c["defaultTargetName"]}"``' in params["target"]


def test_api_md_gives_every_attribute_and_return_value_its_type():
    """Each attribute row has a type, each method and property of the construct a return type."""
    import inspect

    from cdk_delayed_scheduler.scheduler import DelayedScheduler

    text = (REPO / "API.md").read_text()
    section = text.split("## DelayedScheduler", 1)[1].split("\n## ", 1)[0]
    attributes = section.split("### Attributes", 1)[1].split("### Methods", 1)[0]
    rows = [line.split("|")[1:4] for line in attributes.splitlines() if line.startswith("| `")]
    assert len(rows) >= 19
    assert all(kind.strip() not in ("", "``") for _, kind, _ in rows), rows
    assert "| `table` | `dynamodb.Table` |" in attributes and "| `url` | `str` |" in attributes
    assert "| `listing_index_name` | `Optional[str]` |" in attributes
    for name, member in inspect.getmembers(DelayedScheduler, inspect.isfunction):
        if name.startswith(("metric_", "grant_")):
            assert f"`{name}(" in section and inspect.signature(member).return_annotation is not inspect.Signature.empty
            heading = next(line for line in section.splitlines() if line.startswith(f"#### `{name}("))
            assert " -> " in heading, heading


def test_docstrings_show_examples_and_api_md_renders_them_as_python():
    from cdk_delayed_scheduler import LogLevel, targets
    from cdk_delayed_scheduler.scheduler import DelayedScheduler

    for documented in (DelayedScheduler, DelayedScheduler.add_target, targets.LambdaInvoke, targets.SqsSendMessage,
                       LogLevel):
        assert "Example::" in documented.__doc__, documented
    text = (REPO / "API.md").read_text()
    assert [line for line in text.splitlines() if line.rstrip().endswith("::")] == []  # each became a fenced block
    assert text.count("```python") >= 6
