"""The flow section of docs/benchmarks.md, from small fixtures: the engine's rows and verdicts, the simulated burst
(the model itself, at a few hundred timers) and what a limited delivery costs."""

from __future__ import annotations

import pytest

from bench import flow, flow_cost
from bench.pricing import PRICES
from bench.render import section_text, summary_text
from bench.scale import flow as simulated
from bench.scale import params

from scheduler_runtime.core.contract import DEFAULT_MAX_RECEIVE_COUNT
from scheduler_runtime.core.flow import FlowLimits

LIMITS = {"rate": 20, "maxInFlight": 4}
N = 100


def _lateness(p50: float, p99: float) -> dict:
    return {"n": 10, "min": 5.0, "p50": p50, "p90": p99, "p99": p99, "max": p99, "mean": p50}


def _free(p50: float, p99: float) -> dict:
    return {"sent": 13, "delivered": 13, "lost": 0, "repeats": 0, "early": 0, "lateness_ms": _lateness(p50, p99)}


def _beside(spacing_ms: int, most_in_flight: int) -> dict:
    """A limited run whose starts and arrivals are ``spacing_ms`` apart."""
    busiest = flow.busiest_ms([k * spacing_ms for k in range(N)])
    return {"complete": True, "created_before_due": True, "free": _free(12.0, 60.0), "put_back": N, "crowded": 0,
            "moto": {"writes_per_s": 90.0, "refused_per_s": 20.0, "seconds": 6.0},
            "limited": {"sent": N, "delivered": N, "lost": 0, "repeats": 0, "early": 0, "lateness_ms": _lateness(2000, 5000),
                        "first_arrival_ms": 0, "last_arrival_ms": (N - 1) * spacing_ms, "busiest_arrivals": busiest,
                        "busiest_starts": busiest, "most_in_flight": most_in_flight}}


def _engine(spacing_ms: int = 53, most_in_flight: int = 2) -> dict:
    runs = [{"order": order, "beside": _beside(spacing_ms, most_in_flight),
             "alone": {"complete": True, "created_before_due": True, "free": _free(10.0, 50.0), "put_back": 0,
                       "crowded": 0, "moto": {"writes_per_s": 5.0, "refused_per_s": 0.0, "seconds": 6.0}}}
            for order in ("beside, alone", "alone, beside")]
    return {"hold_ms": 20.0, "free_every_s": 0.4,
            "workloads": [{"limited": N, "limits": LIMITS, "interval_ms": 52.5, "free": 13, "cap_s": 40.0, "runs": runs}]}


def _usage(flow_writes: float, billed_ms: float) -> dict:
    record = "UpdateItem the schedule's record (dispatcher)"
    item = "UpdateItem the target's FLOW item (dispatcher)"
    wru = {record: 1.0, **({item: flow_writes} if flow_writes else {})}
    return {"calls": dict(wru), "sqs": {"ReceiveMessage (esm:sqs:dispatcher)": 0.1}, "wru": wru, "rru": {},
            "log_bytes": {"EMF metric lines (dispatcher)": 30.0},
            "lambda": {"dispatcher": {"invocations": 0.1, "billed_ms": billed_ms}}}


def _cost() -> dict:
    add = flow_cost.added(_usage(3.0, 60.0), _usage(0.0, 60.0))
    bill = flow_cost.priced(add)
    row = {"name": "rate + maxInFlight, backlog", "limits": LIMITS, "kind": "backlog", "n": 40, "delivered": 40,
           "put_back": 20, "added": add, "rows": bill["rows"], "total_on_demand": bill["total_on_demand"]}
    return {"idle_every_s": 0.2, "rate": 20, "max_in_flight": 4, "groups": 4, "per_group_built": False, "rows": [row]}


@pytest.fixture(scope="module")
def simulation() -> dict:
    profile = params.flow(params.aws())
    return {"parameters": [dict(p.__dict__) for p in params.FLOW_PARAMETERS], "table_wru": 5000.0, "profile": profile,
            "burst": simulated.burst(profile, 300, 100, 5000.0),
            "grouped": simulated.grouped(profile, 300, 200, 4, 100, 20, 5000.0, horizon_s=60.0),
            "beside": {name: simulated.beside(profile, limited, 100, 5000.0, 0.4, 10.0, flow_queue)
                       for name, limited, flow_queue in (("alone", 0, True), ("shared", 2000, False),
                                                         ("flow_queue", 2000, True))}}


def test_the_simulated_burst_keeps_the_rate_and_starts_none_early(simulation) -> None:
    burst = simulation["burst"]
    assert burst["delivered"] == 300 and burst["early"] == 0 and burst["dead_lettered"] == 0
    assert burst["busiest"] <= 100
    assert burst["last_start_s"] >= 299 * FlowLimits(rate=100).interval_us / 1e6  # slots spaced one interval


def test_the_simulated_groups_each_keep_their_own_rate_and_the_targets(simulation) -> None:
    grouped = simulation["grouped"]
    assert grouped["big"]["busiest"] <= 20 and grouped["small"]["busiest"] <= 20 and grouped["busiest"] <= 100
    assert grouped["small"]["delivered"] == grouped["small"]["timers"] == 100


def test_a_simulated_grouped_delivery_keeps_its_group_slot_unless_its_pace_is_refused_twice(simulation) -> None:
    grouped = simulation["grouped"]
    assert grouped["paced"]  # some deliveries were refused by their group's pace
    assert 0 < grouped["paced_kept"] < grouped["paced"]  # the first refusal keeps the group slot, a second does not
    assert grouped["group_slots"] == grouped["timers"] + grouped["paced"] - grouped["paced_kept"]
    assert grouped["timers"] == 300


def test_a_simulated_batchs_first_asks_of_one_group_take_their_group_slots_in_one_write(simulation) -> None:
    grouped = simulation["grouped"]
    together, writes = grouped["group_slots_together"], grouped["group_slot_writes_together"]
    assert 0 < writes and 2 * writes <= together <= grouped["group_slots"]  # two or more slots a write


def test_a_limited_delivery_added_cost_is_the_flow_items_writes_priced_on_demand() -> None:
    row = _cost()["rows"][0]
    assert row["added"]["wru"] == {"UpdateItem the target's FLOW item (dispatcher)": 3.0}
    assert row["total_on_demand"] == pytest.approx(3 * PRICES["ddb_od_per_million_wru"])


def test_a_flow_items_calls_are_told_apart_from_the_records_and_a_refusal_is_named() -> None:
    class Refused(Exception):
        response = {"Error": {"Code": "ConditionalCheckFailedException"}}

    def key(pk: str) -> dict:
        return {"Key": {"pk": {"S": pk}, "sk": {"S": "x"}}}

    assert flow_cost.item_label("dynamodb", "UpdateItem", key("FLOW#default"), None) == "the target's FLOW item"
    assert flow_cost.item_label("dynamodb", "UpdateItem", key("FLOW#default#g1"), Refused()) == "a group's FLOW item, refused"
    assert flow_cost.item_label("dynamodb", "UpdateItem", key("SCHEDULE#a"), None) == "the schedule's record"
    assert flow_cost.item_label("sqs", "SendMessage", {}, None) == ""


def test_the_flow_section_renders_each_part_with_its_command(simulation) -> None:
    text = section_text("flow", {"flow": {"engine": _engine(), "simulation": simulation, "cost": _cost()}})
    assert text.startswith("## Flow control") and text.count("./dev bench --only flow") >= 4
    assert f"| {N} due in one second; `rate` 20, `maxInFlight` 4 | {N} ({N} – {N}) / 0 / 0 / 0 |" in text
    assert "limits held, every timer delivered, none early:** met" in text
    assert "| beside 100 limited | 12 (12 – 12) | 60 (60 – 60) | 60 (60 – 60) | 0 / 0 | 1.20 / 1.20 / 1.20 |" in text
    assert "### Simulated on AWS: 300 timers due in one second to a target limited to 100 a second" in text
    assert "| `sdk_retry_quota` | 500 | tokens |" in text
    assert "rate + maxInFlight, backlog:" in text and "**$1.88**" in text
    assert "no grouped workload" in text


def test_a_simulated_target_without_limits_keeps_its_lateness_beside_a_burst_only_when_the_burst_waits_apart(
        simulation) -> None:
    alone, shared, apart = (simulation["beside"][name] for name in ("alone", "shared", "flow_queue"))
    assert alone["free_started"] == shared["free_started"] == apart["free_started"] == alone["free"] == 25
    assert shared["free_p99_ms"] > 2000 > 100 > apart["free_max_ms"]  # received at random among 2,000 first receives
    assert apart["free_p50_ms"] < alone["free_p99_ms"]
    text = section_text("flow", {"flow": {"simulation": simulation}})
    assert "**A target without limits keeps its lateness beside a limited burst (p50 and p99 at most 1.25 times " \
           "alone's):** " in text


def test_a_target_without_limits_slowed_beside_the_backlog_is_missed_with_its_cause(simulation) -> None:
    engine = _engine()
    for run in engine["workloads"][0]["runs"]:
        run["beside"]["free"] = _free(30.0, 500.0)
    data = {"flow": {"engine": engine}, "burst": {"ceiling": {"calls_per_s": {"UpdateItem": 131.0}}}}
    text = section_text("flow", data)
    assert "none lost, none early:** **missed** (p50 ×3.00, p99 ×10.00)" in text
    assert "(the burst section measured 131 conditional writes a second)" in text
    rows = summary_text("flow", data).splitlines()
    assert rows[1] == f"| a target without limits beside {N} limited (`rate` 20, `maxInFlight` 4), lateness p50 / p99 " \
                      "÷ alone | ×3.00 / ×10.00 | ≤ 1.25: **missed** | |"


def test_more_starts_in_a_second_than_the_rate_is_limits_not_held() -> None:
    text = section_text("flow", {"flow": {"engine": _engine(spacing_ms=30, most_in_flight=5)}})
    assert "limits held, every timer delivered, none early:** **missed**" in text
    assert "| 34 (34 – 34) / 34 (34 – 34) (20) |" in text and "| 5 (5 – 5) (4) |" in text


def test_a_simulation_stopped_by_its_event_budget_is_judged_on_its_projection(simulation) -> None:
    stopped = dict(simulation, burst=simulated.burst(simulation["profile"], 3000, 100, 5000.0, events=20_000))
    burst = stopped["burst"]
    assert not burst["complete"] and burst["delivered"] < 3000 and burst["projected_last_s"] > burst["stopped_s"]
    text = section_text("flow", {"flow": {"simulation": stopped}})
    assert f"{burst['delivered']:,} by {burst['stopped_s']:,.0f}; at its last minute's pace, all by" in text
    assert "its budget of simulated events spent" in text


def test_a_simulated_target_faster_than_one_item_spreads_its_slots_over_its_items_and_keeps_its_rate() -> None:
    burst = simulated.burst(params.flow(params.aws()), 3000, 1000, 5000.0)
    assert burst["target_items"] == FlowLimits(rate=1000).items == 4
    assert burst["delivered"] == 3000 and burst["early"] == 0 and burst["busiest"] <= 1000


def test_a_simulated_message_whose_writes_the_table_refuses_comes_back_until_it_is_dead_lettered() -> None:
    burst = simulated.burst(params.flow(params.aws()), 20, 100, 1e-9)
    assert (burst["delivered"], burst["dead_lettered"]) == (0, 20)
    assert burst["failed"] == 20 * DEFAULT_MAX_RECEIVE_COUNT  # each receive's start write refused, then parked


def test_a_simulated_batchs_first_asks_due_to_the_target_take_their_slots_in_one_write(simulation) -> None:
    burst = simulation["burst"]
    together, writes = burst["target_slots_together"], burst["target_slot_writes_together"]
    assert 0 < writes and 2 * writes <= together <= burst["delivered"]  # two or more slots a write
    assert burst["item_writes"] < burst["delivered"]  # fewer slot writes than starts
