"""What outcome events cost on top of the timer's own: measured in the engine, then priced per kind of outcomes target.

The short path at the sparse and heavy traffic levels (``bench.cost.scenario``) runs twice in turn, each in a fresh
engine: without outcomes, and with an SQS outcomes target and the default kinds (every timer is delivered, so each
sends one ``DELIVERED`` event). Every AWS call is counted per caller in both; their difference per outcome event is
what outcomes add:

- **the dispatcher's send** of the events it gathered to the delayer queue (``SendMessageBatch``, after its
  deliveries) and the time that call takes in the invocation that makes it;
- **the SQS mapping's receive and delete** of those messages, and **the dispatcher's invocations** that carry them.
  Outcome messages that ride along with deliveries add no invocation; the invocations that carried only outcome
  messages (``common.HandlerTimes`` tells them apart) are the extra ones, and their billed time is the extra time;
- **the outcomes target's own request**: here the dispatcher's ``SendMessage`` to the outcomes queue, left out of
  the runtime's share and priced per kind of target instead (``bench.target_costs``: the service's charge and the
  dispatcher's time in the call, a stated in-region figure).

The lean-path bar (:func:`lean_path`) checks the other side: without outcomes, a short timer still makes 2 DynamoDB
writes and a long one 4, and outcomes add none.
"""

from __future__ import annotations

import collections
import json
import math
import threading
import time
from typing import Any, Callable

from . import costmodel
from .common import log
from .pricing import bill
from .target_costs import dispatcher_usd_per_million_per_ms, per_kind

PATH = "short"
LEVELS = ("sparse", "heavy")
TARGET_CALL = ("dispatcher", "sqs", "SendMessage")
"""The outcomes target's own request in the scenario (an SQS target): priced per kind, not as the runtime's."""
FLUSH_CALL = ("dispatcher", "sqs", "SendMessageBatch")
"""The dispatcher's send of its gathered outcome events to the delayer queue."""
_RUNTIME_CALLERS = ("api", "sweeper", "enqueuer", "dispatcher", "esm:sqs:dispatcher")
"""The callers whose calls are billed per timer (the stream trigger's reads are free)."""


class OutcomeQueue:
    """The engine's SQS outcomes target, read from outside (the bench's own calls, never the runtime's): how many
    outcome events arrived, and what they were."""

    def __init__(self, engine: Any) -> None:
        self._sqs, self._url = engine.client("sqs"), engine.outcomes_queue_url

    def count(self) -> int:
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=self._url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
        return sum(int(v) for v in attributes["Attributes"].values())

    def wait_for(self, n: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.count() < n:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    def received(self, ids: set[str]) -> dict:
        """The events of ``ids`` that arrived: how many, how many distinct ``(dedupeKey, outcome)``, of which kinds,
        and their mean size as delivered."""
        events: list[tuple[int, dict]] = []
        while got := self._sqs.receive_message(QueueUrl=self._url, MaxNumberOfMessages=10, VisibilityTimeout=600,
                                               WaitTimeSeconds=0).get("Messages", []):
            events += [(len(m["Body"].encode("utf-8")), json.loads(m["Body"])) for m in got]
        ours = [(size, e) for size, e in events if e.get("id") in ids]
        return {"events": len(ours), "distinct": len({(e["dedupeKey"], e["outcome"]) for _, e in ours}),
                "kinds": dict(collections.Counter(e["outcome"] for _, e in ours)),
                "bytes_mean": sum(size for size, _ in ours) / len(ours) if ours else 0.0}


class CallTimes:
    """Wall ms of the counted calls, summed per (caller, service, operation): an observer of ``meter.RequestCounter``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ms: dict[tuple[str, str, str], float] = collections.defaultdict(float)

    def track(self, service: str, operation: str, params: dict, result: Any) -> None:
        """Calls made while not counting: not timed."""

    def before(self, raw: Callable, service: str, operation: str, params: dict) -> float:
        return time.perf_counter()

    def after(self, raw: Callable, caller: str, service: str, operation: str, params: dict, started: float,
              result: Any, error: BaseException | None) -> None:
        with self.lock:
            self.ms[(caller, service, operation)] += (time.perf_counter() - started) * 1000

    def reset(self) -> None:
        with self.lock:
            self.ms.clear()

    def snapshot(self) -> dict:
        with self.lock:
            return {"|".join(key): ms for key, ms in self.ms.items()}


def run(scenario: Callable[..., dict], counter: Any, n: int, payload: str, levels: tuple = LEVELS) -> dict:
    """Each level without outcomes, then with them; ``scenario(path, level, n, payload, outcomes=...)`` runs one in a
    fresh engine (``bench.cost.scenario`` with its meters)."""
    timer = CallTimes()
    counter.observers.append(timer)
    pairs: dict = {}
    try:
        for level in levels:
            runs = {}
            for on in (False, True):
                log(f"cost: outcomes {'on (an SQS outcomes target, the default kinds)' if on else 'off'}, {PATH} "
                    f"timers, {level} traffic, {n} timers, {payload} payload")
                s = scenario(PATH, level, n, payload, outcomes=on)
                s["call_ms"] = timer.snapshot()
                s["summary"] = costmodel.summarise(s)
                runs["on" if on else "off"] = s
            pairs[level] = compare(runs["off"], runs["on"])
    finally:
        counter.observers.remove(timer)
    return {"path": PATH, "payload": payload, "n": n, "levels": pairs, "kinds": priced_per_kind(pairs)}


def _calls(s: dict) -> dict[tuple[str, str, str], float]:
    """Billed calls per timer by (caller, service, operation): a receive's empty polls (a fixed cost) left out."""
    out: dict[tuple[str, str, str], float] = collections.defaultdict(float)
    for c in s["summary"]["calls_per_timer"]:
        if c["caller"] in _RUNTIME_CALLERS and c["tag"] != "empty":
            out[(c["caller"], c["service"], c["operation"])] += c["per_timer"]
    return out


def _per_timer(s: dict, service: str, field: str) -> dict[tuple[str, str], float]:
    """A billable quantity per timer (SQS ``chunks``, DynamoDB ``wru`` / ``rru``) by (caller, operation)."""
    sm, out = s["summary"], collections.defaultdict(float)
    for r in sm["billable"]:
        if r["service"] == service:
            out[(r["caller"], r["operation"])] += r[f"{field}_per_unit"] * sm["units"][r["unit"]] / sm["n"]
    return out


def _dispatcher(s: dict) -> dict:
    """The dispatcher's invocations in a scenario: all of them, and those that carried only outcome messages."""
    f = s["functions"]["dispatcher"]
    only = [(records, ms) for records, outcomes, ms in zip(f["records"], f["outcome_records"], f["ms"])
            if records and outcomes == records]
    mixed = sum(1 for records, outcomes in zip(f["records"], f["outcome_records"]) if 0 < outcomes < records)
    return {"invocations": len(f["ms"]), "outcome_only": len(only), "outcome_only_messages": sum(r for r, _ in only),
            "outcome_only_billed_ms": sum(math.ceil(ms) for _, ms in only), "mixed": mixed}


def compare(off: dict, on: dict) -> dict:
    """What outcomes added in one level, per outcome event, from its two scenarios.

    ``calls``: every billed call per timer without and with outcomes, and the difference per event, as counted.
    The bill prices what the outcome messages themselves caused, which the difference also holds but mixed with
    how the deliveries happened to batch in each run: the dispatcher's invocations that carried only outcome
    messages, each with the mapping's one receive and one delete, their billed time and the time of the flush
    (the dispatcher's ``SendMessageBatch``, in the invocation that delivered); every other SQS, DynamoDB and log
    difference as counted. Those invocations write no EMF line (the dispatcher writes one for a batch with a
    delivery or a failure), so the EMF lines are not in it.
    """
    got = on["outcomes"]
    timers, events = max(1, on["summary"]["n"]), max(1, got["events"])
    per_event = timers / events  # per timer -> per event
    calls_off, calls_on = _calls(off), _calls(on)
    calls = [{"caller": k[0], "service": k[1], "operation": k[2], "off": calls_off.get(k, 0.0),
              "on": calls_on.get(k, 0.0), "added": (calls_on.get(k, 0.0) - calls_off.get(k, 0.0)) * per_event}
             for k in sorted(set(calls_off) | set(calls_on))]
    d_off, d_on = _dispatcher(off), _dispatcher(on)
    flush_ms, target_ms = (on["call_ms"].get("|".join(key), 0.0) for key in (FLUSH_CALL, TARGET_CALL))
    invocations = d_on["outcome_only"] / events
    usage: dict = {"create_requests": 0.0, "create_request_bytes": 0, "access_log_bytes": {}, "sqs": {}, "wru": {},
                   "rru": {}, "log_bytes": {},
                   "lambda": {"dispatcher": {"invocations": invocations,
                                             "billed_ms": (d_on["outcome_only_billed_ms"] + flush_ms) / events}}}
    mapping = {("esm:sqs:dispatcher", "ReceiveMessage"), ("esm:sqs:dispatcher", "DeleteMessageBatch")}
    for service, field, into in (("sqs", "chunks", "sqs"), ("dynamodb", "wru", "wru"), ("dynamodb", "rru", "rru")):
        before, after = _per_timer(off, service, field), _per_timer(on, service, field)
        for key in sorted(set(before) | set(after)):
            if (key[0], service, key[1]) == TARGET_CALL:
                continue
            added = invocations if key in mapping else (after.get(key, 0.0) - before.get(key, 0.0)) * per_event
            if added:
                usage[into][f"{key[1]} ({key[0]})"] = added
    logs_off, logs_on = off["summary"]["log_bytes_per_timer"], on["summary"]["log_bytes_per_timer"]
    for key in sorted(k for k in set(logs_off) | set(logs_on) if k.endswith("|default")):
        if added := (logs_on.get(key, 0.0) - logs_off.get(key, 0.0)) * per_event:
            usage["log_bytes"][f"runtime log lines ({key.split('|')[0]}, WARNING+)"] = added
    priced = bill(usage, "direct")
    return {"timers": timers, "events": got["events"], "distinct": got["distinct"], "kinds": got["kinds"],
            "event_bytes": got["bytes_mean"], "delivered": {"off": off["delivered"], "on": on["delivered"]},
            "writes": {"off": off["summary"]["ddb_write_requests"], "on": on["summary"]["ddb_write_requests"]},
            "metric_lines": {"off": len(off["metric_lines"]), "on": len(on["metric_lines"])},
            "calls": calls, "dispatcher": {"off": d_off, "on": d_on, "flush_ms_per_event": flush_ms / events,
                                           "target_call_ms_per_event": target_ms / events,
                                           "invocations_per_event": invocations},
            "rows": [{k: r[k] for k in ("group", "item", "quantity", "unit", "usd_od")} for r in priced["rows"]],
            "total_on_demand": priced["total_on_demand"]}


def priced_per_kind(pairs: dict) -> dict:
    """Per million outcome events, per kind of outcomes target and level: the runtime's share measured at the level,
    plus the target's own request (``target_costs.per_kind`` for an event of the measured size: the service's charge
    and the dispatcher's time in the call, stated). ``overlap``: per level, the most the engine's own send to its
    outcomes queue adds to the measured time (its calls, or the invocations they ran in, whichever is less), which
    the stated call time counts again."""
    size = round(max((p["event_bytes"] for p in pairs.values()), default=0)) or None
    table = per_kind(message_bytes=size)
    per_ms = dispatcher_usd_per_million_per_ms()
    overlap = {level: min(p["dispatcher"]["target_call_ms_per_event"],
                          p["dispatcher"]["on"]["outcome_only_billed_ms"] / max(1, p["events"])) * per_ms
               for level, p in pairs.items()}
    return {"event_bytes": table["envelope_bytes"], "function_ms": table["function_ms"],
            "standard_transitions": table["standard_transitions"], "express_ms": table["express_ms"],
            "overlap": overlap,
            "rows": {kind: {"service": k["service"], "call_ms": k["call_ms"], "dispatcher": k["dispatcher"],
                            **{level: p["total_on_demand"] + k["total"] for level, p in pairs.items()}}
                     for kind, k in table["kinds"].items()}}


def lean_path(targets: list[dict], pairs: dict) -> dict:
    """The lean-path bar: DynamoDB writes per timer without outcomes at most what each path's target says (2 short,
    4 long, from the headline scenarios), and outcomes add none (the paired scenarios)."""
    rows = [{"what": f"{t['path']} timers, without outcomes (the headline scenario)", "writes": t["writes"],
             "target": t["writes_target"]} for t in targets]
    bar = next((t["writes_target"] for t in targets if t["path"] == PATH), None)
    for level, p in pairs.items():
        rows += [{"what": f"{PATH} timers, {level} traffic, outcomes {side}", "writes": p["writes"][side], "target": bar}
                 for side in ("off", "on")]
    return {"rows": rows, "met": all(r["target"] is not None and r["writes"] <= r["target"] + 1e-9 for r in rows)}
