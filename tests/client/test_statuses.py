"""Statuses are exported ``str`` enums whose values are the server's: a member equals its text, an
unknown status a newer server answers is kept as its text, and ``list(status=...)`` takes either."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any, Callable

import pytest

from cdk_delayed_scheduler.client import Periodic, PeriodicStatus, Removed, Schedule, SchedulerClient, ScheduleStatus
from scheduler_runtime.core import states

from .conftest import ScriptedServer

RUNTIME = Path(__file__).resolve().parents[2] / "lambda" / "scheduler_runtime"
SCHEDULE = {"id": "s", "dueAt": "2030-01-01T00:00:00.000Z", "target": "default"}
PERIODIC = {"id": "p", "every": 60, "target": "default", "nextDueAt": "2030-01-01T00:00:00.000Z"}


def values(kind: type[Enum]) -> list[str]:
    return [member.value for member in kind]


def test_the_statuses_are_the_runtimes_own() -> None:
    assert Path(states.__file__).resolve().is_relative_to(RUNTIME)  # the source tree's, not an installed copy
    assert values(ScheduleStatus) == values(states.Status)
    assert values(PeriodicStatus) == values(states.DefinitionStatus)


@pytest.mark.parametrize("member", [*ScheduleStatus, *PeriodicStatus])
def test_a_status_is_its_text_everywhere(member: ScheduleStatus | PeriodicStatus) -> None:
    text = member.value
    assert member == text and hash(member) == hash(text) and {text: 1}[member] == 1
    assert (str(member), f"{member}", "%s" % member, json.dumps(member)) == (text, text, text, f'"{text}"')


@pytest.mark.parametrize("build, body, kind", [
    (Schedule.from_json, {**SCHEDULE, "status": "FIRED"}, ScheduleStatus),
    (Periodic.from_json, {**PERIODIC, "status": "ENDED"}, PeriodicStatus),
    (Removed.from_json, {"id": "s", "status": "CANCELLED"}, ScheduleStatus),
    (Removed.from_json, {"id": "p", "status": "DELETED"}, PeriodicStatus),
])
def test_an_answered_status_is_a_member_of_its_enum(build: Callable[[dict[str, Any]], Any], body: dict[str, Any],
                                                    kind: type[Enum]) -> None:
    status = build(body).status
    assert status is kind(body["status"]) and status == body["status"]


@pytest.mark.parametrize("build, body", [
    (Schedule.from_json, {**SCHEDULE, "status": "PAUSED"}),
    (Periodic.from_json, {**PERIODIC, "status": "SUSPENDED"}),
    (Removed.from_json, {"id": "s", "status": "ARCHIVED"}),
])
def test_a_status_this_client_does_not_know_is_kept_as_its_text(build: Callable[[dict[str, Any]], Any],
                                                                 body: dict[str, Any]) -> None:
    status = build(body).status
    assert type(status) is str and status == body["status"]


@pytest.mark.parametrize("status", [ScheduleStatus.FAILED, "FAILED"])
def test_list_sends_an_enum_status_as_its_text(scripted: Callable[[list[Any]], ScriptedServer],
                                               status: ScheduleStatus | str) -> None:
    server = scripted([(200, {"items": [{**SCHEDULE, "status": "FAILED", "lastError": "boom"}]})])
    [failed] = SchedulerClient(server.url, region="us-east-1").list(status=status)
    assert server.seen[0].path == "/schedules?status=FAILED"
    assert failed.status is ScheduleStatus.FAILED and failed.last_error == "boom"
