"""The contract's check of a target's ``flowControl`` (``flow_control_problem``), which the construct applies at synth,
the engine at start and the runtime when a function starts: the target's limits, and ``perGroup``, each group's own
limits, with the same rules, no ``perGroup`` of its own, and within the target's."""

from __future__ import annotations

import pytest

from scheduler_runtime.aws.config import Config, ConfigError
from scheduler_runtime.core import contract

GROUP = contract.PER_GROUP_FIELD
QUEUE = {"type": "sqs", "queueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/mail", "fifo": False}


def test_the_per_group_field_is_the_contracts():
    assert GROUP == contract.FLOW_CONTROL["perGroupField"] == "perGroup"


@pytest.mark.parametrize("limits", [
    {"rate": 100},
    {"maxInFlight": 20},
    {"rate": 100, "periodSeconds": 60, "maxInFlight": 20},
    {"rate": 100, "maxInFlight": 20, GROUP: {"rate": 5, "maxInFlight": 2}},
    {GROUP: {"maxInFlight": 2}},  # only the groups are limited
    {GROUP: {"rate": 1, "periodSeconds": 60}},
    {"maxInFlight": 20, GROUP: {"rate": 500}},  # a group rate under a target without one
    {"rate": 100, GROUP: {"maxInFlight": 1000}},  # a group's places under a target without a limit on them
    {"rate": 100, "maxInFlight": 20, GROUP: {"rate": 100, "maxInFlight": 20}},  # a group may have all of it
    {"rate": 1, "periodSeconds": 2, GROUP: {"rate": 30, "periodSeconds": 60}},  # 0.5 a second each
], ids=lambda limits: str(limits))
def test_limits_within_the_rules_are_accepted(limits):
    assert contract.flow_control_problem(limits) is None


@pytest.mark.parametrize(("limits", "problem"), [
    ({}, "needs rate, maxInFlight or perGroup (one or more)"),
    ({"periodSeconds": 5}, "needs rate, maxInFlight or perGroup (one or more)"),
    ({"rate": 5, "burst": 2}, "takes no burst (only rate, periodSeconds, maxInFlight and perGroup)"),
    ({"rate": 0}, "rate must be a whole number, 1-100000, got 0"),
    ({GROUP: {"maxInFlight": 1}, "periodSeconds": 5}, "periodSeconds needs a rate"),
    ([], "must be a JSON object"),
])
def test_a_targets_own_limits_keep_their_rules(limits, problem):
    assert contract.flow_control_problem(limits) == problem


@pytest.mark.parametrize(("group", "problem"), [
    (None, "perGroup must be a JSON object"),
    (5, "perGroup must be a JSON object"),
    ({}, "perGroup needs rate or maxInFlight (or both)"),
    ({"periodSeconds": 5}, "perGroup needs rate or maxInFlight (or both)"),
    ({"maxInFlight": 2, "periodSeconds": 5}, "perGroup.periodSeconds needs a rate"),
    ({"rate": 5, "burst": 2}, "perGroup takes no burst (only rate, periodSeconds and maxInFlight)"),
    ({"rate": 5, GROUP: {"rate": 1}}, "perGroup takes no perGroup of its own (a group's limits are not divided "
                                      "further)"),
    ({"rate": 0}, "perGroup.rate must be a whole number, 1-100000, got 0"),
    ({"rate": 2.5}, "perGroup.rate must be a whole number, 1-100000, got 2.5"),
    ({"rate": 1, "periodSeconds": 86401}, "perGroup.periodSeconds must be a whole number, 1-86400, got 86401"),
    ({"maxInFlight": True}, "perGroup.maxInFlight must be a whole number, 1-1000, got True"),
    ({"maxInFlight": 1001}, "perGroup.maxInFlight must be a whole number, 1-1000, got 1001"),
])
def test_a_groups_limits_take_the_same_rules_naming_per_group(group, problem):
    assert contract.flow_control_problem({"rate": 100, GROUP: group}) == problem


@pytest.mark.parametrize(("limits", "problem"), [
    ({"rate": 10, GROUP: {"rate": 11}},
     "perGroup.rate must be at most the target's rate per second: a group's 11 per 1 s is more than the target's "
     "10 per 1 s"),
    ({"rate": 10, "periodSeconds": 60, GROUP: {"rate": 1}},
     "perGroup.rate must be at most the target's rate per second: a group's 1 per 1 s is more than the target's "
     "10 per 60 s"),
    ({"rate": 1, "periodSeconds": 2, GROUP: {"rate": 31, "periodSeconds": 60}},
     "perGroup.rate must be at most the target's rate per second: a group's 31 per 60 s is more than the target's "
     "1 per 2 s"),
    ({"maxInFlight": 20, GROUP: {"maxInFlight": 21}},
     "perGroup.maxInFlight must be at most the target's maxInFlight, 20, got 21"),
])
def test_a_group_limit_above_its_targets_is_refused_naming_the_field(limits, problem):
    assert contract.flow_control_problem(limits) == problem


def test_a_target_description_names_the_targets_flow_control_before_the_problem():
    described = {**QUEUE, "flowControl": {"maxInFlight": 2, GROUP: {"maxInFlight": 3}}}
    assert contract.target_description_problem(described) == (
        "the sqs target's flowControl: perGroup.maxInFlight must be at most the target's maxInFlight, 2, got 3")


def test_the_runtime_refuses_a_group_limit_above_its_targets_when_it_starts():
    with pytest.raises(ConfigError, match=r"^TARGETS: target 'mail': the sqs target's flowControl: perGroup.rate must "
                                          r"be at most the target's rate per second"):
        Config.from_env({contract.ENV.table_name: "t", contract.ENV.targets: (
            '{"mail": {"type": "sqs", "queueUrl": "q", "fifo": false, '
            '"flowControl": {"rate": 1, "perGroup": {"rate": 2}}}}')})
