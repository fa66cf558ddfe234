"""The delayer queue, the flow queue beside it, and their dead-letter queue.

A deployment with limited targets has a flow queue: the messages of deliveries to those targets wait there,
so a limited target's backlog (a million due at once, let out at its rate) is never received among every other
timer's messages, which the delayer queue's pollers then reach at once. The dispatcher takes both queues' messages
the same way; a message names its limited target in its ticket (:meth:`~.config.Config.room_ticket`), which is
what sends it to the flow queue.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Collection, Protocol, Sequence

from ..clock import PROCESS, Clock
from ..core.envelope import TimerRef, sqs_safe_json, sqs_safe_text

SQS_BATCH_LIMIT = 10
SEND_ATTEMPTS = 2
"""Sends of a message before a caller falls back (answers an error, or writes the timer back): one resend at once."""
# Reused across invocations of a warm function: a stream batch of 100 is ten sends at once.
_senders = ThreadPoolExecutor(max_workers=10, thread_name_prefix="send")

class Body(Protocol):
    """What a delayer message carries: a reference (:class:`~..core.envelope.TimerRef`), a group's sweep, an outcome."""

    def to_message_body(self) -> str: ...


Message = tuple[str, Body, int]
"""``(entry_id, ref, delay_seconds)``: one entry of a send."""


class DelayerQueue:
    """Sends to the delayer queue, a limited target's messages to the flow queue when there is one (``flow_queue_url``
    with the ``limited`` targets' names), and parks exhausted deliveries in the dead-letter queue."""

    def __init__(self, sqs: Any, queue_url: str, dead_letter_queue_url: str = "", clock: Clock = PROCESS,
                 flow_queue_url: str = "", limited: Collection[str] = ()) -> None:
        self._sqs = sqs
        self._url = queue_url
        self._dlq_url = dead_letter_queue_url
        self._clock = clock
        """Where a resend waits out its backoff."""
        self._flow_url = flow_queue_url
        self._limited = frozenset(limited) if flow_queue_url else frozenset()

    def url_for(self, body: Body) -> str:
        """The queue ``body`` waits in: the flow queue for a timer's message naming a limited target, else the
        delayer queue."""
        if isinstance(body, TimerRef) and body.ticket is not None and body.ticket.target in self._limited:
            return self._flow_url
        return self._url

    def send(self, messages: Sequence[Message], attempts: int = 1, backoff_seconds: float = 0.05) -> set[str]:
        """Send messages in batches of ten, the batches in parallel; resend what fails, up to ``attempts`` in all.

        Returns the entry ids that were never confirmed, whether a batch call failed whole,
        SQS reported them in ``Failed``, or reported them neither way: the caller must write
        those back or answer an error, never drop them. A resend of an entry that was in
        fact accepted is a duplicate message with the same token: the dispatcher's
        conditional write lets only one of them deliver.
        """
        pending = list(messages)
        for attempt in range(attempts):
            if attempt:
                self._clock.sleep(backoff_seconds * 2 ** (attempt - 1))
            chunks = [chunk for queued in self._by_queue(pending)
                      for chunk in (queued[start : start + SQS_BATCH_LIMIT]
                                    for start in range(0, len(queued), SQS_BATCH_LIMIT))]
            unsent = set().union(*_senders.map(self._send_batch, chunks)) if chunks else set()
            pending = [m for m in pending if m[0] in unsent]
            if not pending:
                break
        return {entry_id for entry_id, _, _ in pending}

    def _by_queue(self, messages: Sequence[Message]) -> list[list[Message]]:
        """``messages`` split by the queue each waits in (one list when the deployment has no flow queue)."""
        queued: dict[str, list[Message]] = {}
        for message in messages:
            queued.setdefault(self.url_for(message[1]), []).append(message)
        return list(queued.values())

    def _send_batch(self, chunk: Sequence[Message]) -> set[str]:
        """Send one batch of messages that wait in the same queue."""
        entries = [
            {"Id": entry_id, "MessageBody": ref.to_message_body(), "DelaySeconds": delay}
            for entry_id, ref, delay in chunk
        ]
        try:
            response = self._sqs.send_message_batch(QueueUrl=self.url_for(chunk[0][1]), Entries=entries)
        except Exception:  # noqa: BLE001 - any failure leaves the whole batch unsent
            return {entry_id for entry_id, _, _ in chunk}
        accepted = {entry["Id"] for entry in response.get("Successful", [])}
        # Reported in Failed, or reported neither way: not confirmed, so not sent.
        return {entry_id for entry_id, _, _ in chunk if entry_id not in accepted}

    def send_one(self, ref: Body, delay_seconds: int) -> None:
        """Send one message (a single create, a message put back for the rest of its delay, a group's sweep)."""
        self._sqs.send_message(QueueUrl=self.url_for(ref), MessageBody=ref.to_message_body(), DelaySeconds=delay_seconds)

    def dead_letter(self, envelope: dict[str, Any], reason: str, schedule_id: str | None = None) -> None:
        """Park an exhausted delivery with its full envelope and the reason (an outcome event, its message's body
        with the ``schedule_id`` it is about).

        The body and the reason are written so that SQS accepts them whatever they hold (a
        payload may contain U+FFFE or U+FFFF, a target's error message anything): see
        :func:`~..core.envelope.sqs_safe_json`.
        """
        self._sqs.send_message(
            QueueUrl=self._dlq_url,
            MessageBody=sqs_safe_json(envelope),
            MessageAttributes={
                "reason": {"DataType": "String", "StringValue": sqs_safe_text(reason[:1000]) or "unknown"},
                "scheduleId": {"DataType": "String", "StringValue": schedule_id or envelope["id"]},
            },
        )
