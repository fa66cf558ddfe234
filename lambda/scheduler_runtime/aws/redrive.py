"""Redrive from the dead-letter queue: send parked schedules back for delivery, recover stream ranges.

For each message a run takes (:class:`~..core.redrive.Selection`), in this order, so that a run cut
short anywhere and run again delivers each schedule at most once more:

1. a one-shot schedule's message (a parked delivery, or a bare delayer message): one consistent
   read of its record, then the conditional re-arm write (:func:`~..core.redrive.decide` and
   :func:`~..core.redrive.rearm_condition`): ``QUEUED``, a new token, the attempt count kept,
   ``redriveMsg`` = this message's tag. The new token turns every older message for the schedule
   into a stray (the dispatcher delivers one message per token);
2. a send to the delayer queue of a reference with the new token and the schedule's own due time (so
   the same ``dedupeKey``), naming its target and group (:func:`_named_target`), ``DelaySeconds`` 0: due at once;
3. the delete from the dead-letter queue, only once the send is confirmed.

A received batch (ten messages at most) is read and re-armed side by side, then sent and deleted with
one ``SendMessageBatch`` and one ``DeleteMessageBatch``.

Cut short after 1 or 2, the message comes back: its record is QUEUED with this message's tag, so
the next run re-arms it again with another token (the message of step 2, if sent, is now a stray);
once its new delivery has started, the next run only deletes the message.

A run sends each schedule back at most once (:class:`~..core.redrive.SentBack`): a delivery it sent back
that fails again at once is parked again while the run goes on, and that message (like any other of a
schedule the run re-armed, or a message it sent) is not taken, only reported in ``parked_again`` and
left in the queue; the run ends once only such messages come. A dry run receives and reads the same way
and reports what it would move and skip, but writes, sends, invokes and deletes nothing.

A stream range goes to ``recover_stream`` (the enqueuer's ``{"recover": ...}``) and is deleted once
that answered. A periodic occurrence is not redriven (see :data:`PERIODIC_REASON`). Anything else
is left where it is, with the reason in the report.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from botocore.exceptions import ClientError

from ..clock import PROCESS, Clock
from ..core import keys
from ..core.contract import DEFAULT_TARGET_NAME, LISTING
from ..core.groups import PARTITION_KEY as GROUP
from ..core.envelope import TimerRef, message_tag
from ..core.flow import Ticket
from ..core.redrive import DeadLetter, Done, Kind, Rearm, Report, Selection, SentBack, decide, read_message, \
    rearm_condition, requeued_listing_key
from .delayer import DelayerQueue
from .items import is_condition_failure, s_attr
from .store import _attribute  # noqa: PLC2701 - the store's attribute-value form, one definition

RECEIVE_WAIT_SECONDS = 1
"""A receive's long poll: it asks every SQS server, so an empty answer means an empty queue."""
STALE_RECEIVES = 3
"""Receives in a row that bring only messages the run has seen before it stops."""
PERIODIC_REASON = ("a periodic timer's occurrence is not redriven: its timer has armed the next occurrence, "
                   "and a past occurrence sent again would bypass the definition's token (a DELETE could not "
                   "stop it); read it with GET /periodic/{id}")

_workers = ThreadPoolExecutor(max_workers=10, thread_name_prefix="redrive")
"""A received batch's schedules are read and re-armed side by side (ten at most)."""
RecoverStream = Callable[[str], Any]
"""Re-enqueue the stream range an on-failure message (its body) names; raises when it could not."""


def _named_target(record: dict[str, Any]) -> Ticket:
    """What a redriven message carries so that a limited target's delivery takes its slot at once, instead of first
    making the start write that refuses to learn the target: a ticket without a slot, naming the record's target and
    group. A run does not know the deployment's limits, so every redriven message names them; for a target without
    limits (or a group without limits of its own) the dispatcher reads nothing more from it."""
    return Ticket(s_attr(record, "target", DEFAULT_TARGET_NAME), None, group=s_attr(record, GROUP, None))


class Redrive:
    """One run over the dead-letter queue, with botocore clients of DynamoDB and SQS."""

    def __init__(self, dynamodb: Any, sqs: Any, table_name: str, delayer_queue_url: str,
                 dead_letter_queue_url: str, recover_stream: RecoverStream | None = None,
                 visibility_timeout_seconds: int = 120, clock: Clock = PROCESS) -> None:
        self._ddb, self._sqs, self._table = dynamodb, sqs, table_name
        self._clock = clock
        self._delayer_url, self._dlq_url = delayer_queue_url, dead_letter_queue_url
        self._recover_stream = recover_stream
        self._delayer = DelayerQueue(sqs, delayer_queue_url, clock=clock)
        self._visibility = visibility_timeout_seconds
        self._selection = Selection()
        self._dry_run = False
        self._sent_back = SentBack()

    def run(self, selection: Selection = Selection(), dry_run: bool = False) -> Report:
        """Take every selected message once; the others are made visible again at the end. ``dry_run``: only
        report what would be moved and skipped (every message received is made visible again).

        A message taken before comes back when the run outlasts its visibility timeout: it is not taken
        again (its newest receipt is kept for the release), nor is a message of what the run sent back
        (:class:`~..core.redrive.SentBack`), and the run ends after :data:`STALE_RECEIVES` receives in a row
        that brought nothing new, or one that brought nothing.
        """
        report, seen, kept = Report(dry_run=dry_run), set[str](), dict[str, DeadLetter]()
        taken = stale = 0
        self._selection, self._dry_run, self._sent_back = selection, dry_run, SentBack()
        while stale < STALE_RECEIVES:
            letters = [read_message(m) for m in self._sqs.receive_message(
                QueueUrl=self._dlq_url, MaxNumberOfMessages=10, WaitTimeSeconds=RECEIVE_WAIT_SECONDS,
                VisibilityTimeout=self._visibility, AttributeNames=["SentTimestamp"],
                MessageAttributeNames=["All"]).get("Messages", [])]
            if not letters:
                break
            kept.update((letter.message_id, letter) for letter in letters if letter.message_id in kept)
            fresh = [letter for letter in letters if letter.message_id not in seen]
            seen.update(letter.message_id for letter in fresh)
            for letter in fresh:
                if self._sent_back.holds(letter):
                    report.again(letter)
                    kept[letter.message_id] = letter
            fresh = [letter for letter in fresh if not self._sent_back.holds(letter)]
            stale = 0 if fresh else stale + 1
            batch = []
            for letter in fresh:
                if ((selection.limit is not None and taken >= selection.limit)
                        or not selection.takes(letter, self._clock.now_ms())):
                    report.left += 1
                    kept[letter.message_id] = letter
                else:
                    taken += 1
                    batch.append(letter)
            left_before = report.left
            moved = {entry["messageId"] for entry in self._take(batch, report).moved}
            taken -= report.left - left_before  # outside the group, told by the record: not taken after all
            kept.update((letter.message_id, letter) for letter in batch
                        if dry_run or letter.message_id not in moved)
        self._release(list(kept.values()))
        return report

    def _take(self, letters: list[DeadLetter], report: Report) -> Report:
        """Take one received batch: its schedules side by side, their sends and deletes in batches."""
        schedules = []
        for letter in letters:
            if letter.kind is Kind.STREAM_RANGE:
                self._recover(letter, report)
            elif letter.kind in (Kind.GROUP_SWEEP, Kind.OUTCOME):
                self._send_again(letter, report)
            elif letter.kind is Kind.UNKNOWN:
                report.skip(letter, "not a message of this scheduler (no envelope, token or DDBStreamBatchInfo)")
            elif letter.periodic:
                report.skip(letter, PERIODIC_REASON)
            else:
                schedules.append(letter)
        prepared = list(_workers.map(self._prepare, schedules))
        report.left += sum(1 for step in prepared if step.outside)
        prepared = [step for step in prepared if not step.outside]
        for step in prepared:
            if step.skip is not None:
                report.skip(step.letter, step.skip)
            elif self._dry_run and step.rearmed and self._sent_back.holds(step.letter):
                report.again(step.letter)  # a run re-arms one of them; its condition refuses the other
            elif self._dry_run:
                report.move(step.letter, step.note)
            if step.rearmed:
                self._sent_back.add(step.letter)
        if self._dry_run:
            return report
        armed = [step for step in prepared if step.ref is not None]
        unsent = self._delayer.send([(str(n), step.ref, 0) for n, step in enumerate(armed) if step.ref], attempts=2)
        for n, step in enumerate(armed):
            if str(n) in unsent:
                report.skip(step.letter, "re-armed but not sent; run again")
        ready = [step for n, step in enumerate(armed) if str(n) not in unsent]
        ready += [step for step in prepared if step.skip is None and step.ref is None]
        undeleted = self._delete([step.letter for step in ready])
        for step in ready:
            if step.letter.message_id in undeleted:
                report.skip(step.letter, "re-armed and sent, not deleted; run again (it is delivered at most once)")
            else:
                report.move(step.letter, step.note)
        return report

    def _prepare(self, letter: DeadLetter) -> "_Step":
        """Read the schedule's record, decide, and re-arm it: the reference to send, if any."""
        assert letter.schedule_id is not None and letter.due_ms is not None
        key = keys.record_key(letter.schedule_id).as_item_key()
        record = self._ddb.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item")
        if record is None and letter.kind is Kind.PARKED and self._is_periodic(letter.schedule_id):
            return _Step(letter, skip=PERIODIC_REASON)
        if not self._selection.in_group((record or {}).get(GROUP, {}).get("S")):
            return _Step(letter, outside=True)
        tag = message_tag(letter.message_id)
        decision = decide(letter, record, tag)
        if isinstance(decision, Done):
            done = f"re-armed by an earlier run from this message; the record is {decision.status} now"
            return _Step(letter, note=f"to be deleted: {done}" if self._dry_run else done)
        if not isinstance(decision, Rearm):
            return _Step(letter, skip=decision.reason)
        attempts = (record or {}).get("attempts", {}).get("N", "0")
        state = "re-armed again" if decision.again else "QUEUED"
        if self._dry_run:
            return _Step(letter, rearmed=True, note=f"to be {state} and sent for delivery after {attempts} attempts")
        token = keys.new_token()
        if not self._rearm(letter, record or {}, token, tag):
            return _Step(letter, skip="the record changed while redriving; run again")
        return _Step(letter, ref=TimerRef(letter.schedule_id, letter.due_ms, token, self._clock.now_ms(),
                                          ticket=_named_target(record or {})),
                     rearmed=True, note=f"{state}, sent for delivery after {attempts} attempts")

    def _rearm(self, letter: DeadLetter, record: dict[str, Any], token: str, tag: bytes) -> bool:
        condition, values = rearm_condition(letter)
        values.update({":new": token, ":tag": tag, ":now": self._clock.now_ms()})
        update = "SET #st = :queued, #tok = :new, redriveMsg = :tag, redrivenMs = :now"
        listed = requeued_listing_key(record.get(LISTING["partitionKey"], {}).get("S"))
        if listed is not None:
            update += f", {LISTING['partitionKey']} = :lpk"
            values[":lpk"] = listed
        try:
            self._ddb.update_item(
                TableName=self._table, Key=keys.record_key(letter.schedule_id or "").as_item_key(),
                # A QUEUED record keeps no TTL (one that never started has none) and no trace of the last start.
                UpdateExpression=update + " REMOVE expiresAt, msgId, firedMs, endedMs",
                ConditionExpression=condition, ExpressionAttributeNames={"#st": "status", "#tok": "token"},
                ExpressionAttributeValues={name: _attribute(value) for name, value in values.items()})
        except ClientError as exc:
            if is_condition_failure(exc):
                return False
            raise
        return True

    def _is_periodic(self, periodic_id: str) -> bool:
        return "Item" in self._ddb.get_item(TableName=self._table, Key=keys.definition_key(periodic_id).as_item_key(),
                                            ProjectionExpression="pk")

    def _recover(self, letter: DeadLetter, report: Report) -> None:
        if self._recover_stream is None:
            report.skip(letter, "stream range: no enqueuer function to recover it with")
            return
        if self._dry_run:
            report.move(letter, "stream range to be recovered through the enqueuer")
            return
        try:
            answer = self._recover_stream(letter.body)
        except Exception as exc:  # noqa: BLE001 - reported; the message stays for another run
            report.skip(letter, f"stream recovery failed: {exc}")
            return
        if self._delete([letter]):
            report.skip(letter, f"stream range recovered ({answer}), not deleted; run again (harmless)")
        else:
            report.move(letter, f"stream range recovered: {answer}")

    def _send_again(self, letter: DeadLetter, report: Report) -> None:
        """A cancelled group's clean-up, or an outcome event, sent back to the delayer queue as it was. A sweep goes
        on from where it stopped (its cancel item says where; a copy of a sweep that went on meanwhile stops at
        once); an outcome is delivered to the outcomes target again (a consumer drops repeats)."""
        what = (f"group sweep of '{letter.group}'" if letter.kind is Kind.GROUP_SWEEP
                else f"outcome event of '{letter.schedule_id}'")
        if self._dry_run:
            report.move(letter, f"{what} to be sent again")
            return
        sent = self._sqs.send_message(QueueUrl=self._delayer_url, MessageBody=letter.body)
        self._sent_back.message_ids.add(sent["MessageId"])
        if letter.kind is Kind.OUTCOME:
            self._sent_back.outcomes.add((letter.schedule_id or "", letter.due_ms or 0))
        if self._delete([letter]):
            report.skip(letter, f"{what} sent again, not deleted; run again (harmless)")
        else:
            report.move(letter, f"{what} sent again")

    def _delete(self, letters: list[DeadLetter]) -> set[str]:
        """Delete ``letters`` from the dead-letter queue; the message ids not deleted."""
        failed = set()
        for start in range(0, len(letters), 10):
            chunk = {str(n): letter for n, letter in enumerate(letters[start:start + 10])}
            try:
                answer = self._sqs.delete_message_batch(QueueUrl=self._dlq_url, Entries=[
                    {"Id": n, "ReceiptHandle": letter.receipt_handle} for n, letter in chunk.items()])
            except ClientError:
                answer = {"Successful": []}
            done = {entry["Id"] for entry in answer.get("Successful", [])}
            failed |= {letter.message_id for n, letter in chunk.items() if n not in done}
        return failed

    def _release(self, letters: list[DeadLetter]) -> None:
        """Make the messages this run received but did not delete visible again at once."""
        for start in range(0, len(letters), 10):
            chunk = letters[start:start + 10]
            self._sqs.change_message_visibility_batch(QueueUrl=self._dlq_url, Entries=[
                {"Id": str(i), "ReceiptHandle": letter.receipt_handle, "VisibilityTimeout": 0}
                for i, letter in enumerate(chunk)])


@dataclass(frozen=True)
class _Step:
    """One schedule's message after its read and re-arm: the reference to send, or why it is skipped."""

    letter: DeadLetter
    ref: TimerRef | None = None
    rearmed: bool = False
    """Re-armed by this run (a dry run: it would be); ``ref`` is the message to send."""
    note: str = ""
    skip: str | None = None
    outside: bool = False
    """Not in the selected group (its record says): left in the queue, as an unselected message is."""
