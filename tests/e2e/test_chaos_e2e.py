"""``cdk-delayed-scheduler chaos``, the smaller run that is part of the suite: one-shot, cancelled and
periodic timers under every fault kind at once, run as a user runs it (the console script). The
session starts it early (see ``tests/conftest.py``); run alone, this module starts it itself."""

from __future__ import annotations

import json

import pytest

from cdk_delayed_scheduler.local.faults import FAULT_KINDS

from ..conftest import CHAOS

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def run() -> tuple[int, dict, str]:
    code, text = CHAOS.output(timeout=900)
    lines = text.splitlines()
    start = lines.index("{")
    end = len(lines) - 1 - lines[::-1].index("}")
    return code, json.loads("\n".join(lines[start:end + 1])), text


def test_the_run_passes_and_loses_nothing(run):
    code, report, text = run
    assert report["lost"] == 0 and report["violations"] == [], text
    assert code == 0 and report["ok"] and text.rstrip().endswith("OK: none lost")


def test_every_fault_kind_was_injected(run):
    _, report, _ = run
    assert set(report["faults"]) == set(FAULT_KINDS)
    assert all(count > 0 for count in report["faults"].values()), report["faults"]


def test_faults_reached_every_function_and_the_batch_sends(run):
    _, report, _ = run
    stages = report["fault_stages"]
    for function in ("api", "sweeper", "enqueuer", "dispatcher", "target"):
        assert any(f" @ {function}:" in stage for stage in stages), (function, stages)
    assert any(s.startswith("crash @ dispatcher:") for s in stages)
    for kind in ("batch-fail", "batch-partial"):
        assert any(s.startswith(f"{kind} @ ") and s.endswith("sqs.SendMessageBatch") for s in stages), (kind, stages)
    assert any(s.startswith("ddb-throttle @ sweeper:dynamodb.Query") for s in stages), stages


def test_every_timer_is_accounted_for(run):
    _, report, _ = run
    # Every one-shot timer: delivered, cancelled, dead-lettered with its reason, or a create given up on
    # that left no trace.
    assert (report["delivered"] + report["cancelled"] + report["dead_lettered"] + report["gave_up_no_trace"]
            >= report["timers"])
    assert report["delivered"] > report["timers"] * 0.6 and report["cancelled"] > 0
    assert report["periodic_delivered"] > 10


def test_faults_were_survived_by_retries(run):
    _, report, _ = run
    assert report["retried"] > 0, "a failed delivery attempt is retried"
    # A throttled create (429) is retried by its client with the same id, or left (a client that does not retry).
    assert report["create_retries"] + report["gave_up_creates"] > 0
    assert report["dead_lettered"] > 0, "the timers the target always refuses end FAILED and in the DLQ"


def test_an_engine_with_every_api_invocation_throttled_answers_429_as_api_gateway_does():
    from cdk_delayed_scheduler.local import Engine, EngineOptions
    from cdk_delayed_scheduler.local.api_calls import raw_client

    with Engine(EngineOptions(faults="lambda-throttle=1", seed=1)) as engine:
        api = raw_client(engine.api_url)
        assert api.raw("createSchedule", {"delaySeconds": 1, "payload": {}}) == (429, {"message": "Too Many Requests"})
        assert api.raw("getSchedule", id="any") == (429, {"message": "Too Many Requests"})
        assert engine.faults is not None and engine.faults.by_stage()["lambda-throttle @ api:invocation"] == 2


def test_every_kind_of_target_got_deliveries_read_back_from_where_they_arrived(run):
    from cdk_delayed_scheduler.local.chaos_flow import LIMITED
    from cdk_delayed_scheduler.local.chaos_targets import NAMED_TARGETS

    _, report, _ = run
    # the none-early, none-lost, no-delivery-after-cancel and one-dedupeKey checks above hold for these too
    assert set(report["delivered_by_target"]) == {"default", *NAMED_TARGETS, LIMITED}, report["delivered_by_target"]
    assert all(n > 0 for n in report["delivered_by_target"].values()), report["delivered_by_target"]
    assert report["refused_signatures"] == 0  # every HTTPS request verified with the shipped verify_signature


def test_reschedules_pauses_resumes_a_redrive_and_group_cancels_ran_through_the_faults(run):
    _, report, _ = run
    # their checks (none at an old due time once a PATCH answered 200, none while paused, each redriven
    # timer once more or parked again, none of a group's members after its cancel answered) hold above;
    # here, each operation was done
    done = {name: report[name] for name in ("rescheduled", "paused", "resumed", "delivered_after_resume",
                                            "redriven", "redrive_parked_again", "redrive_skipped", "group_cancels",
                                            "group_members_stopped", "group_members_read_cancelled")}
    assert done["rescheduled"] > 0 and done["paused"] > 0 and done["resumed"] > 0, done
    assert done["delivered_after_resume"] > 0, done
    assert done["redriven"] + done["redrive_parked_again"] > 0 and done["redrive_skipped"] == 0, done
    # what the cancels answered they stopped is 0 when each was answered by a retry (a 5xx or no answer first)
    assert done["group_cancels"] >= 2 and done["group_members_read_cancelled"] > 0, done


def test_every_timer_that_ended_sent_its_outcome_event_of_the_kind_it_ended_with(run):
    _, report, _ = run
    # the outcome check (each ended timer's event arrived or was parked, one kind per occurrence, the kind its GET
    # reads) holds above; here, every kind the run makes came through the faults
    kinds = report["outcomes_by_kind"]
    assert {"DELIVERED", "FAILED", "CANCELLED"} <= set(kinds) and all(n > 0 for n in kinds.values()), kinds
    assert report["outcome_mismatches"] == 0 and report["outcomes_missing"] == 0, report["violations"]


def test_the_limited_targets_burst_went_through_the_faults_within_its_limits(run):
    from cdk_delayed_scheduler.local.chaos_flow import MAX_IN_FLIGHT, RATE

    _, report, _ = run
    # the checks (at most the rate in any window of a period less the allowance, never more than maxInFlight inside
    # at once; each of its timers delivered, cancelled or parked, none early) hold above; here, they were tested
    limited = report["limited"]
    assert limited["burst"] >= 20 and limited["arrivals"] >= limited["burst"] * 0.8, limited
    assert limited["waited_for_room"] > 0, limited  # the limits bound: deliveries waited for room
    assert limited["most_in_a_window"] <= RATE and 1 <= limited["most_in_flight"] <= MAX_IN_FLIGHT, limited
