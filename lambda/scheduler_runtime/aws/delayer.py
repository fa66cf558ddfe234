"""The delayer queue and its dead-letter queue."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from ..core.envelope import TimerRef

SQS_BATCH_LIMIT = 10
# Reused across invocations of a warm function: a stream batch of 100 is ten sends at once.
_senders = ThreadPoolExecutor(max_workers=10, thread_name_prefix="send")


class DelayerQueue:
    def __init__(self, sqs: Any, queue_url: str, dead_letter_queue_url: str = "") -> None:
        self._sqs = sqs
        self._url = queue_url
        self._dlq_url = dead_letter_queue_url

    def send(self, messages: Sequence[tuple[str, TimerRef, int]]) -> set[str]:
        """Send ``(entry_id, ref, delay_seconds)`` messages in batches of ten, the batches in parallel.

        Returns the entry ids that were not accepted, whether a batch call
        failed whole or SQS reported them in ``Failed``: the caller must write
        those back, never drop them.
        """
        chunks = [messages[start : start + SQS_BATCH_LIMIT] for start in range(0, len(messages), SQS_BATCH_LIMIT)]
        return set().union(*_senders.map(self._send_batch, chunks)) if chunks else set()

    def _send_batch(self, chunk: Sequence[tuple[str, TimerRef, int]]) -> set[str]:
        entries = [
            {"Id": entry_id, "MessageBody": ref.to_message_body(), "DelaySeconds": delay}
            for entry_id, ref, delay in chunk
        ]
        try:
            response = self._sqs.send_message_batch(QueueUrl=self._url, Entries=entries)
        except Exception:  # noqa: BLE001 - any failure leaves the whole batch unsent
            return {entry_id for entry_id, _, _ in chunk}
        accepted = {entry["Id"] for entry in response.get("Successful", [])}
        # Reported in Failed, or reported neither way: not confirmed, so not sent.
        return {entry_id for entry_id, _, _ in chunk if entry_id not in accepted}

    def put_back(self, ref: TimerRef, delay_seconds: int) -> None:
        """Re-send a message that surfaced early, for the rest of its delay."""
        self._sqs.send_message(QueueUrl=self._url, MessageBody=ref.to_message_body(), DelaySeconds=delay_seconds)

    def dead_letter(self, envelope: dict, reason: str) -> None:
        """Park an exhausted delivery with its full envelope and the reason."""
        self._sqs.send_message(
            QueueUrl=self._dlq_url,
            MessageBody=json.dumps(envelope, separators=(",", ":"), ensure_ascii=False),
            MessageAttributes={
                "reason": {"DataType": "String", "StringValue": reason[:1000] or "unknown"},
                "scheduleId": {"DataType": "String", "StringValue": envelope["id"]},
            },
        )
