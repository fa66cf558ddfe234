"""``cdk-delayed-scheduler redrive``'s arguments: its defaults name the local engine's resources, and a bad
selector is refused naming the option and the rule before anything is called."""

from __future__ import annotations

import pytest

from cdk_delayed_scheduler.local.cli import build_parser


def test_the_redrive_command_defaults_to_the_local_engines_resources():
    args = build_parser().parse_args(["redrive"])
    assert (args.table, args.delayer_queue, args.dead_letter_queue, args.enqueuer_function) == (
        "delayed-scheduler-schedules", "delayed-scheduler-delayer", "delayed-scheduler-dlq", "delayed-scheduler-enqueuer")
    assert args.ids is None and args.limit is None


@pytest.mark.parametrize(("argv", "says"), [
    (["--limit", "0"], "argument --limit: must be >= 1, got 0"),
    (["--older-than", "-1"], "argument --older-than: must be >= 0 seconds, got -1"),
])
def test_the_redrive_command_refuses_a_bad_selector_naming_it(argv, says, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["redrive", *argv])
    assert says in capsys.readouterr().err
