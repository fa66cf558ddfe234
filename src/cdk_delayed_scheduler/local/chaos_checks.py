"""The checks and the report of ``cdk-delayed-scheduler chaos`` (see :mod:`.chaos`), and the records
they read: the planned timers and the answers the clients got."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .api_calls import parse_due_ms
from .chaos_flow import FlowFigures
from .deliveries import Recorder

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Engine


@dataclass(frozen=True)
class Planned:
    schedule_id: str
    kind: str  # short | long | overdue | cancel | poison (its target always refuses it) | limited (see chaos_flow)
    offset_seconds: float
    batched: bool
    patient: bool = True  # its client retries a create that got a 429, a 5xx or no answer
    target: str | None = None  # a named target (see chaos_targets), else the default one


@dataclass(frozen=True)
class PlannedPeriodic:
    periodic_id: str
    every: int
    kept: bool  # kept to the end (watched for retries), else deleted mid-run


@dataclass
class ClientCalls:
    """Every answer each id's creates and cancels got, in order (None: no answer)."""

    creates: dict[str, list[int | None]] = field(default_factory=dict)
    cancels: dict[str, list[int | None]] = field(default_factory=dict)
    due_ms: dict[str, int] = field(default_factory=dict)
    retried: int = 0


@dataclass
class ChaosReport:
    """What a chaos run saw. ``ok`` when every check held (``violations`` empty, ``lost`` 0)."""

    timers: int
    periodic: int
    seconds: float
    faults: dict[str, Any]
    fault_stages: dict[str, Any]
    create_retries: int = 0
    delivered: int = 0
    duplicates: int = 0
    dead_lettered: int = 0
    retried: int = 0
    cancelled: int = 0
    gave_up_creates: int = 0
    gave_up_no_trace: int = 0
    gave_up_honoured: int = 0
    periodic_delivered: int = 0
    periodic_stopped_by_delete: int = 0
    periodic_skipped: int = 0
    stream_recoveries: int = 0
    delivered_by_target: dict[str, int] = field(default_factory=dict)
    """One-shot timers delivered, by the target they name (``default`` for the default one)."""
    refused_signatures: int = 0
    rescheduled: int = 0
    reschedule_refused: int = 0
    """Reschedules answered 409: delivery had started (the timer is delivered at its old due time)."""
    paused: int = 0
    resumed: int = 0
    delivered_after_resume: int = 0
    redriven: int = 0
    redrive_parked_again: int = 0
    redrive_skipped: int = 0
    group_cancels: int = 0
    group_members_stopped: int = 0
    """What the groups' cancels answered they stopped (their ``stopped`` counts, summed). A cancel retried after a
    5xx or no answer counts only what joined since the one that ran, so this can be 0 in a run with faults."""
    group_members_read_cancelled: int = 0
    """One-shot members created before their group's cancel that read ``CANCELLED`` afterwards."""
    outcomes_received: int = 0
    """Outcome events the outcomes target received, repeats included (:mod:`.chaos_outcomes` checks them)."""
    outcomes_by_kind: dict[str, int] = field(default_factory=dict)
    outcome_repeats: int = 0
    outcomes_parked: int = 0
    outcomes_awaiting_redrive: int = 0
    """Timers whose delivery message SQS's redrive parked: no outcome until they are redriven."""
    outcome_mismatches: int = 0
    outcomes_missing: int = 0
    limited: FlowFigures | None = None
    """What the limited target's receiver saw (:mod:`.chaos_flow`)."""
    lost: int = 0
    violations: list[str] = field(default_factory=list)
    trails: dict[str, str] = field(default_factory=dict)
    """For each timer a violation names: the runtime's events about it, in order (what the engine logged)."""

    @property
    def ok(self) -> bool:
        return not self.violations and self.lost == 0

    def lines(self) -> list[str]:
        faults = ", ".join(f"{kind} {n}" for kind, n in self.faults.items()) or "none"
        return [
            f"timers {self.timers} one-shot + {self.periodic} periodic, in {self.seconds:.0f}s",
            f"faults injected: {sum(self.faults.values())} ({faults})",
            f"delivered {self.delivered} one-shot, {self.periodic_delivered} periodic occurrences; "
            f"duplicates {self.duplicates}; retried deliveries {self.retried}; dead-lettered {self.dead_lettered}",
            f"cancelled {self.cancelled}; periodic occurrences passed over after an outage (counted in "
            f"skippedCount) {self.periodic_skipped}, stopped by DELETE {self.periodic_stopped_by_delete}",
            f"creates retried by the client {self.create_retries}; creates left with a 429, a 5xx or no answer "
            f"{self.gave_up_creates} (no trace {self.gave_up_no_trace}, honoured {self.gave_up_honoured})",
            f"stream ranges recovered {self.stream_recoveries}",
            f"rescheduled {self.rescheduled} (409, delivery started: {self.reschedule_refused}); paused "
            f"{self.paused}, resumed {self.resumed} ({self.delivered_after_resume} delivered after); redriven "
            f"{self.redriven} (parked again {self.redrive_parked_again}, skipped {self.redrive_skipped}); groups "
            f"cancelled {self.group_cancels} ({self.group_members_stopped} members stopped, "
            f"{self.group_members_read_cancelled} read CANCELLED after)",
            "delivered by target: " + ", ".join(f"{name} {n}" for name, n in sorted(self.delivered_by_target.items())),
            f"outcome events {self.outcomes_received} ("
            + (", ".join(f"{kind} {n}" for kind, n in sorted(self.outcomes_by_kind.items())) or "none")
            + f"; repeats {self.outcome_repeats}); parked {self.outcomes_parked}; awaiting redrive "
            f"{self.outcomes_awaiting_redrive}; mismatches {self.outcome_mismatches}; missing {self.outcomes_missing}",
            *([self.limited.line()] if self.limited else []),
            f"lost {self.lost}; violations {len(self.violations)}",
            *(f"  VIOLATION {v}" for v in self.violations[:20]),
            *(f"  TRAIL {key}: {events}" for key, events in list(self.trails.items())[:20]),
        ]


def dead_lettered(engine: "Engine") -> dict[str, list[dict[str, Any]]]:
    """The dead-letter queue's messages, by schedule id: ``{"reason", "body"}`` each."""
    import boto3  # noqa: PLC0415

    sqs = boto3.client("sqs", endpoint_url=engine.endpoint_url)
    parked: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    while True:
        messages = sqs.receive_message(QueueUrl=engine.dead_letter_queue_url, MaxNumberOfMessages=10,
                                       MessageAttributeNames=["All"], VisibilityTimeout=60).get("Messages", [])
        fresh = [m for m in messages if m["MessageId"] not in seen]
        if not fresh:
            return parked
        for message in fresh:
            seen.add(message["MessageId"])
            attributes = message.get("MessageAttributes", {})
            body = json.loads(message["Body"])
            schedule_id = attributes.get("scheduleId", {}).get("StringValue") or body.get("id") or "?"
            parked.setdefault(schedule_id, []).append(
                {"reason": attributes.get("reason", {}).get("StringValue"), "body": body})


def check_one_shots(report: ChaosReport, timers: list[Planned], calls: ClientCalls, recorder: Recorder,
                    read: Callable[[str], tuple[int | None, dict[str, Any]]], parked: dict[str, Any]) -> None:
    """``read(id)``: ``GET /schedules/{id}``'s status and body, as a client that retries a 429 or a 5xx sees it."""
    by_id = recorder.by_id()
    for timer in timers:
        deliveries = by_id.get(timer.schedule_id, [])
        due_ms = calls.due_ms[timer.schedule_id]
        creates = calls.creates.get(timer.schedule_id, [None])
        answered = next((s for s in creates if s in (200, 201)), None)
        if deliveries:
            report.delivered += 1
            target = timer.target or "default"
            report.delivered_by_target[target] = report.delivered_by_target.get(target, 0) + 1
            if any(d.envelope["target"] != target for d in deliveries):
                report.violations.append(f"{timer.schedule_id}: delivered to another target than {target}")
            report.duplicates += len(deliveries) - 1
            report.retried += sum(1 for d in deliveries if d.envelope["attempt"] > 1)
            if len({d.envelope["dedupeKey"] for d in deliveries}) != 1:
                report.violations.append(f"{timer.schedule_id}: duplicates under several dedupeKeys")
            if min(d.received_ms for d in deliveries) < due_ms:
                report.violations.append(f"{timer.schedule_id}: delivered early")
        cancels = calls.cancels.get(timer.schedule_id, [])
        if answered is None:
            _check_given_up(report, timer.schedule_id, creates, bool(cancels), deliveries, read, parked)
            continue
        if 200 in cancels:
            report.cancelled += 1
            if deliveries:
                report.violations.append(f"{timer.schedule_id}: delivered although its cancel was answered 200")
            continue
        if deliveries:
            continue
        status, record = read(timer.schedule_id)
        if status == 200 and record.get("status") == "CANCELLED" and cancels:
            report.cancelled += 1  # a cancel whose 200 was lost, then retried
        elif _parked_with_reason(timer.schedule_id, status, record, parked):
            report.dead_lettered += 1
        else:
            report.lost += 1
            report.violations.append(f"{timer.schedule_id}: lost (create answered {creates}, cancels {cancels}, "
                                     f"GET {status} {record.get('status')})")


def _parked_with_reason(schedule_id: str, status: int | None, record: dict[str, Any], parked: dict[str, Any]) -> bool:
    """Whether a timer ended in the dead-letter queue as promised: FAILED (the dispatcher parked it on its last
    receive), or FIRED with a reason (its last receive ended without the dispatcher, a crash or a throttled
    invocation, and SQS's redrive parked the bare message); either way the record keeps the payload and the reason."""
    return (status == 200 and record.get("status") in ("FAILED", "FIRED") and bool(record.get("lastError"))
            and "payload" in record and schedule_id in parked)


def _check_given_up(report: ChaosReport, schedule_id: str, creates: list[Any], cancelled: bool, deliveries: list[Any],
                    read: Callable[[str], tuple[int | None, dict[str, Any]]], parked: dict[str, Any]) -> None:
    """A create whose last answer was a 429, a 5xx or none: no trace, or honoured (delivered; dead-lettered with
    its reason when its target refused it; or ``CANCELLED`` when its client sent a cancel)."""
    report.gave_up_creates += 1
    status, record = read(schedule_id)
    if deliveries:
        report.gave_up_honoured += 1
    elif status == 404:
        report.gave_up_no_trace += 1
    elif _parked_with_reason(schedule_id, status, record, parked):
        report.gave_up_honoured += 1
        report.dead_lettered += 1
    elif cancelled and status == 200 and record.get("status") == "CANCELLED":
        report.gave_up_honoured += 1
        report.cancelled += 1
    else:
        report.lost += 1
        report.violations.append(f"{schedule_id}: create answered {creates}, then neither gone nor delivered "
                                 f"(GET {status} {record.get('status')})")


def check_periodic(report: ChaosReport, periodic: list[PlannedPeriodic], first_due: dict[str, Any], deleted_ms: dict[str, Any],
                   watched_until_ms: int, skipped: dict[str, Any], recorder: Recorder, parked: dict[str, Any]) -> None:
    by_id = recorder.by_id()
    for planned in periodic:
        pid, every_ms = planned.periodic_id, planned.every * 1000
        deliveries = by_id.get(pid, [])
        dues = {parse_due_ms(d.envelope["dueAt"]) for d in deliveries}
        report.periodic_delivered += len(dues)
        report.duplicates += len(deliveries) - len(dues)
        for d in deliveries:
            due = parse_due_ms(d.envelope["dueAt"])
            if (due - first_due[pid]) % every_ms:
                report.violations.append(f"{pid}: occurrence {d.envelope['dueAt']} off its grid")
            if d.received_ms < due:
                report.violations.append(f"{pid}: occurrence {d.envelope['dueAt']} delivered early")
            if d.received_ms > deleted_ms[pid]:
                report.violations.append(f"{pid}: occurrence {d.envelope['dueAt']} delivered after its DELETE")
        keys: dict[int, set[Any]] = {}
        for d in deliveries:
            keys.setdefault(parse_due_ms(d.envelope["dueAt"]), set()).add(d.envelope["dedupeKey"])
        report.violations += [f"{pid}: occurrence {due} under several dedupeKeys" for due, k in keys.items() if len(k) > 1]
        # Every occurrence due while the definition lived was delivered, unless it is parked: for one kept
        # to the end, up to the instant its retries were waited for; for one deleted mid-run, up to 3 s
        # before its DELETE, and there a failed occurrence's retry may have been stopped by the DELETE.
        end_ms = watched_until_ms if planned.kept else deleted_ms[pid] - 3000
        expected = range(first_due[pid], end_ms, every_ms)
        missing = [due for due in expected if due not in dues]
        # An envelope the dispatcher parked has dueAt; a bare message SQS's redrive parked has dueMs.
        parked_dues = {parse_due_ms(m["body"]["dueAt"]) if "dueAt" in m["body"] else m["body"].get("dueMs")
                       for m in parked.get(pid, [])}
        passed_over = skipped.get(pid, 0)  # the runtime's own count of occurrences it passed over, late
        for due in missing:
            if due in parked_dues:
                report.dead_lettered += 1
            elif passed_over:
                passed_over -= 1
                report.periodic_skipped += 1
            elif not planned.kept:
                report.periodic_stopped_by_delete += 1
            else:
                report.lost += 1
                report.violations.append(f"{pid}: occurrence {due} never delivered")


@dataclass
class Moved:
    """A one-shot timer rescheduled: its due times, and its ``PATCH``'s last answer (None: none)."""

    schedule_id: str
    old_due_ms: int
    new_due_ms: int
    status: int | None = None
    answered_ms: int = 0  # when that answer came


@dataclass
class Paused:
    """A periodic timer paused (and perhaps resumed): when the pause answered 200, when the resume was
    sent (None: left paused), when its DELETE answered."""

    periodic_id: str
    paused_ms: int
    resumed_ms: int | None
    deleted_ms: int


@dataclass
class Redriven:
    """Timers parked by a refusing target, redriven once while it still refused, then again once it was mended:
    what the first redrive moved and which of those read FAILED again before the mend; what the second moved and
    skipped (id -> its reason); and each refusal of the target (id, when, the envelope's attempt)."""

    ids: list[str]
    refused_redrive_ms: int = 0
    """When the redrive while the target still refused began."""
    refused_redrive_returned: bool = False
    refused_redrive_moved: set[str] = field(default_factory=set)
    failed_again: set[str] = field(default_factory=set)
    refused: list[tuple[str, int, int]] = field(default_factory=list)
    mended_ms: int = 0
    moved: set[str] = field(default_factory=set)
    skipped: dict[str, str] = field(default_factory=dict)


def _keys_and_early(report: ChaosReport, key: str, deliveries: list[Any]) -> None:
    """Duplicates of one due time (one occurrence) only under one ``dedupeKey``; none early."""
    keys: dict[str, set[str]] = {}
    for d in deliveries:
        keys.setdefault(d.envelope["dueAt"], set()).add(d.envelope["dedupeKey"])
    report.duplicates += len(deliveries) - len(keys)
    report.violations += [f"{key}: {due} delivered under several dedupeKeys" for due, k in keys.items() if len(k) > 1]
    report.violations += [f"{key}: {d.envelope['dueAt']} delivered early" for d in deliveries
                          if d.received_ms < parse_due_ms(d.envelope["dueAt"])]


def check_reschedules(report: ChaosReport, moved: list[Moved], recorder: Recorder) -> None:
    """Once a ``PATCH`` answered 200, delivered at the new due time only; once it answered 409
    (delivery started), at the old one only; either way, not lost."""
    by_id = recorder.by_id()
    for m in moved:
        deliveries = by_id.get(m.schedule_id, [])
        _keys_and_early(report, m.schedule_id, deliveries)
        dues = {parse_due_ms(d.envelope["dueAt"]) for d in deliveries}
        if m.status == 200:
            report.rescheduled += 1
            if m.old_due_ms in dues:
                report.violations.append(f"{m.schedule_id}: delivered at its old due time although its reschedule "
                                         f"was answered 200")
        elif m.status == 409:
            report.reschedule_refused += 1
            if m.new_due_ms in dues:
                report.violations.append(f"{m.schedule_id}: delivered at the due time of a reschedule answered 409")
        if dues - {m.old_due_ms, m.new_due_ms}:
            report.violations.append(f"{m.schedule_id}: delivered at neither its old nor its new due time")
        if not deliveries:
            report.lost += 1
            report.violations.append(f"{m.schedule_id}: rescheduled (answered {m.status}), then never delivered")


def check_pauses(report: ChaosReport, paused: list[Paused], recorder: Recorder) -> None:
    """Nothing of a paused timer delivered from its pause's answer to its resume; nothing after its DELETE;
    something after a resume watched for 4 s or more."""
    by_id = recorder.by_id()
    for p in paused:
        deliveries = by_id.get(p.periodic_id, [])
        _keys_and_early(report, p.periodic_id, deliveries)
        report.paused += 1
        report.resumed += p.resumed_ms is not None
        resumed_ms = p.resumed_ms if p.resumed_ms is not None else p.deleted_ms
        for d in deliveries:
            if p.paused_ms < d.received_ms < resumed_ms:
                report.violations.append(f"{p.periodic_id}: occurrence {d.envelope['dueAt']} delivered while paused")
            elif d.received_ms > p.deleted_ms:
                report.violations.append(f"{p.periodic_id}: occurrence {d.envelope['dueAt']} delivered after its DELETE")
        after = [d for d in deliveries if d.received_ms > resumed_ms]
        report.delivered_after_resume += len(after)
        if p.resumed_ms is not None and p.deleted_ms - p.resumed_ms > 4000 and not after:
            report.violations.append(f"{p.periodic_id}: nothing delivered after its resume")


@dataclass
class Grouped:
    """A group cancelled mid-run: its members created before the cancel, when the cancel answered 200 (None: it
    kept failing), what it said it stopped, and a member created after it (which must be delivered)."""

    group: str
    members: list[str]
    periodic: str | None = None
    """The member of ``members`` that is a periodic timer."""
    cancelled_ms: int | None = None
    stopped: int = 0
    joined_after: str | None = None
    read_cancelled: int = 0
    """Its one-shot members that read ``CANCELLED`` once the cancel had answered."""


def check_groups(report: ChaosReport, grouped: list[Grouped], recorder: Recorder,
                 read: Callable[[str], tuple[int | None, dict[str, Any]]], parked: dict[str, Any]) -> None:
    """No member created before its group's cancel started a delivery (its first attempt) after the cancel's answer;
    the member created after it delivered (or parked with its reason, as any timer whose deliveries kept failing)."""
    by_id = recorder.by_id()
    for g in grouped:
        if g.cancelled_ms is None:
            continue  # reported as an operation that kept failing
        report.group_cancels += 1
        report.group_members_stopped += g.stopped
        report.group_members_read_cancelled += g.read_cancelled
        for member in g.members:
            deliveries = by_id.get(member, [])
            _keys_and_early(report, member, deliveries)
            # a first start after the answer: a retry of a delivery started before it goes on, as after a DELETE
            late = [d for d in deliveries if d.received_ms > g.cancelled_ms and d.envelope["attempt"] == 1]
            if late:
                report.violations.append(f"{member}: delivered {late[0].received_ms - g.cancelled_ms} ms after its "
                                         f"group {g.group} was cancelled")
        if g.joined_after is None or by_id.get(g.joined_after):
            continue
        status, record = read(g.joined_after)
        if _parked_with_reason(g.joined_after, status, record, parked):
            report.dead_lettered += 1
        else:
            report.lost += 1
            report.violations.append(f"{g.joined_after}: created in group {g.group} after its cancel, never delivered "
                                     f"(GET {status} {record.get('status')})")


def check_redrive(report: ChaosReport, redriven: Redriven, recorder: Recorder, parked: dict[str, Any]) -> None:
    """The redrive while the target still refused returned, moved some, and each it moved was tried at most once
    more (one attempt: an SDK's retry of the same invocation repeats it) and parked again (counted in
    ``redrive_parked_again``). After the mend, each schedule the redrive moved arrives once more (more only under
    its one ``dedupeKey``), or is parked again (its redriven attempt failed too); each it skipped stays parked;
    none is lost."""
    by_id = recorder.by_id()
    if not redriven.refused_redrive_returned:
        report.violations.append("the redrive while the target still refused did not return")
    elif not redriven.refused_redrive_moved:
        report.violations.append("the redrive while the target still refused moved none of the parked timers")
    for schedule_id in redriven.ids:
        deliveries = by_id.get(schedule_id, [])
        _keys_and_early(report, schedule_id, deliveries)
        report.violations += [f"{schedule_id}: delivered before its target was mended" for d in deliveries
                              if d.received_ms < redriven.mended_ms]
        if schedule_id in redriven.refused_redrive_moved:
            attempts = sorted({attempt for refused_id, at_ms, attempt in redriven.refused
                               if refused_id == schedule_id and at_ms >= redriven.refused_redrive_ms})
            if len(attempts) > 1:
                report.violations.append(f"{schedule_id}: redriven once while its target refused, then tried in "
                                         f"{len(attempts)} attempts (attempt {', '.join(map(str, attempts[:5]))}...)")
            if schedule_id in redriven.failed_again:
                report.redrive_parked_again += 1
            else:
                report.violations.append(f"{schedule_id}: redriven while its target refused, then not parked again")
        if schedule_id in redriven.moved:
            if deliveries:
                report.redriven += 1
            elif schedule_id in parked:
                report.redrive_parked_again += 1
            else:
                report.lost += 1
                report.violations.append(f"{schedule_id}: redriven, then neither delivered nor parked again")
        elif schedule_id in parked and not deliveries:
            report.redrive_skipped += 1
        else:
            report.lost += 1
            report.violations.append(f"{schedule_id}: not redriven ({redriven.skipped.get(schedule_id, 'never found')}) "
                                     f"and not left in the dead-letter queue")


def as_json(report: ChaosReport) -> str:
    """The report as JSON (for ``--json``)."""
    data: dict[str, Any] = asdict(report)
    data["ok"] = report.ok
    return json.dumps(data, indent=2, sort_keys=True)
