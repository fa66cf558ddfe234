"""The local engine's ``max_lateness`` option and the CLI's ``--max-lateness``: the construct's ``max_lateness``,
checked against the contract's range, and set on the functions as ``MAX_LATENESS_SECONDS`` only when given."""

from __future__ import annotations

import os

import pytest

from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.cli import build_parser

VARIABLE = contract.ENV.max_lateness_seconds


def test_the_flag_sets_the_option_and_its_absence_leaves_no_bound():
    args = build_parser().parse_args(["local", "--max-lateness", "300"])
    assert args.max_lateness == 300 and EngineOptions(max_lateness=args.max_lateness).max_lateness == 300
    assert build_parser().parse_args(["local"]).max_lateness is None
    assert EngineOptions().max_lateness is None


@pytest.mark.parametrize("text", ["0", str(contract.MAX_LATENESS_SECONDS.max + 1)])
def test_a_flag_outside_the_contracts_range_exits_2_saying_the_range(text, capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["local", "--max-lateness", text])
    assert exited.value.code == 2
    assert f"--max-lateness: must be 1-31536000 seconds, got {text}" in capsys.readouterr().err


@pytest.mark.parametrize("value", [0, 31_536_001, 1.5, True, "60"])
def test_the_option_refuses_what_the_construct_refuses(value):
    with pytest.raises(ValueError, match=r"^max_lateness must be whole seconds, 1-31536000, got "):
        EngineOptions(max_lateness=value)


@pytest.mark.e2e
def test_the_functions_see_max_lateness_only_when_it_is_given(monkeypatch):
    """As deployed: the prop given, every function reads it; not given, no variable, even where this process's
    environment holds one (it is put back when the engine stops)."""
    monkeypatch.setenv(VARIABLE, "77")
    with Engine(EngineOptions(shard_count=1, max_lateness=300)):
        assert os.environ[VARIABLE] == "300"
    assert os.environ[VARIABLE] == "77"
    with Engine(EngineOptions(shard_count=1)):
        assert VARIABLE not in os.environ
    assert os.environ[VARIABLE] == "77"
