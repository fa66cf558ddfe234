"""``cdk-delayed-scheduler redrive``'s arguments: its defaults name the local engine's resources, and a bad
selector is refused naming the option and the rule before anything is called; the report it prints."""

from __future__ import annotations

import pytest

from cdk_delayed_scheduler.local.cli import build_parser
from cdk_delayed_scheduler.operator import RedriveReport


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


def test_the_report_counts_and_lists_what_was_parked_again_after_the_moved_and_skipped():
    entry = {"kind": "parked delivery", "id": "billing-1", "messageId": "m"}
    report = RedriveReport([{**entry, "note": "QUEUED, sent for delivery after 1 attempts"}], [], 0,
                           parked_again=[{**entry, "messageId": "m2", "reason": "this run sent it back already"}])
    assert report.lines() == ["moved 1, skipped 0, left 0, parked again 1",
                              "  moved   parked delivery billing-1: QUEUED, sent for delivery after 1 attempts",
                              "  parked again parked delivery billing-1: this run sent it back already"]
    assert report.to_json()["parkedAgain"][0]["messageId"] == "m2" and report.to_json()["dryRun"] is False
