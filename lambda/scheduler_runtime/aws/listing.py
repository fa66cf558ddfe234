"""``GET /schedules``: one page from the sparse listing index, merged across its partitions, never a scan.

Per page: one ``Query`` per wanted index partition (``limit`` keys at most each, keys only), one
``BatchGetItem`` of the page's records without their payloads, and, for waiting timers due
within the window, one ``BatchGetItem`` of their timer keys to tell SCHEDULED from QUEUED as
``GET`` does. The index is eventually consistent, so each record's stored status is checked
again and an item that has just left the listed statuses is left out.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..clock import Clock
from ..core import keys, states
from ..core.contract import LISTING
from ..core.groups import is_stopped
from ..core.listing import ListQuery, make_token, partitions
from ..core.window import is_within_window
from .config import Config
from .groups import GroupStore
from .items import ScheduleRecord

_queries = ThreadPoolExecutor(max_workers=16, thread_name_prefix="list")
# Everything a list item shows, and not the payload: a page stays small whatever the payloads.
_RECORD_FIELDS = "pk, sk, dueMs, #st, target, createdMs, attempts, firedMs, endedMs, lastError, #sh, #tok, #g"
BATCH_GET_LIMIT = 100


def list_page(ddb: Any, config: Config, query: ListQuery, clock: Clock) -> tuple[list[tuple[ScheduleRecord, str]], str | None]:
    """``([(record, status shown), ...] in due order, nextToken or None)``."""
    key_range = query.key_range()
    if key_range is None:
        return [], None
    low, high = key_range

    def one(partition: str) -> tuple[list[str], bool]:
        page = ddb.query(
            TableName=config.table_name, IndexName=LISTING["indexName"], Limit=query.limit,
            KeyConditionExpression="#p = :p AND #s BETWEEN :low AND :high",
            ExpressionAttributeNames={"#p": LISTING["partitionKey"], "#s": LISTING["sortKey"]},
            ExpressionAttributeValues={":p": {"S": partition}, ":low": {"S": low}, ":high": {"S": high}},
        )
        return [item[LISTING["sortKey"]]["S"] for item in page.get("Items", [])], "LastEvaluatedKey" in page

    results = list(_queries.map(one, partitions(query, config.shard_count)))
    candidates = sorted(key for found, _ in results for key in found)
    more = len(candidates) > query.limit or any(truncated for _, truncated in results)
    page_keys = candidates[: query.limit]
    records = read_records(ddb, config.table_name, [keys.parse_timer_sort_key(k)[1] for k in page_keys], clock)
    statuses = shown_statuses(ddb, config, list(records.values()), clock)
    shown: list[tuple[ScheduleRecord, str]] = []
    for sort_key in page_keys:
        record = records.get(keys.parse_timer_sort_key(sort_key)[1])
        if record is None or record.status not in query.stored_statuses:
            continue  # changed since the index was read
        status = statuses[record.schedule_id]
        if query.status is None or status == query.status:
            shown.append((record, status))
    token = make_token(page_keys[-1], query.filters(), config.table_name) if more and page_keys else None
    return shown, token


def shown_statuses(ddb: Any, config: Config, records: list[ScheduleRecord], clock: Clock) -> dict[str, str]:
    """Each record's status as GET shows it: a waiting timer due within the window whose timer the sweeper
    claimed is QUEUED (one ``BatchGetItem`` of their timer keys; one due beyond the window cannot have been
    claimed yet), and a waiting member of a cancelled group CANCELLED (one read per group on the page)."""
    now_ms = clock.now_ms()
    waiting = [r for r in records if r.status == states.SCHEDULED
               and is_within_window(r.due_ms, now_ms, config.delay_window_seconds)]
    claimed = {r.schedule_id for r in waiting} - _pending_timers(ddb, config.table_name, waiting, clock)
    statuses = {r.schedule_id: states.QUEUED if r.schedule_id in claimed else r.status for r in records}
    grouped = {r.group for r in records if r.group is not None and r.status in states.CANCELLABLE_STORED}
    if grouped:
        cutoffs = GroupStore(ddb, config.table_name)
        cancelled = {group: cutoffs.cancelled_before(group) for group in grouped}
        statuses.update({r.schedule_id: states.CANCELLED for r in records if r.group in cancelled
                         and r.status in states.CANCELLABLE_STORED and is_stopped(r.created_ms, cancelled[r.group])})
    return statuses


def read_records(ddb: Any, table: str, ids: list[str], clock: Clock) -> dict[str, ScheduleRecord]:
    """The records of ``ids`` that exist, by id, without their payloads."""
    found: dict[str, ScheduleRecord] = {}
    for item in batch_get(ddb, table, [keys.record_key(i).as_item_key() for i in ids],
                          {"ProjectionExpression": _RECORD_FIELDS,
                           "ExpressionAttributeNames": {"#st": "status", "#tok": "token", "#sh": "shard", "#g": "group"}},
                          clock):
        record = ScheduleRecord.from_item(item)
        found[record.schedule_id] = record
    return found


def _pending_timers(ddb: Any, table: str, records: list[ScheduleRecord], clock: Clock) -> set[str]:
    """The ids, among ``records``, whose timer still waits (not claimed, not cancelled)."""
    timer_keys = [r.timer_key.as_item_key() for r in records if r.timer_key is not None]
    items = batch_get(ddb, table, timer_keys, {"ProjectionExpression": "pk, sk, cancelled"}, clock)
    return {keys.parse_timer_sort_key(i["sk"]["S"])[1] for i in items if not i.get("cancelled", {}).get("BOOL")}


def batch_get(ddb: Any, table: str, item_keys: list[dict[str, Any]], options: dict[str, Any], clock: Clock,
              attempts: int = 5) -> list[dict[str, Any]]:
    """Every item of ``item_keys`` that exists, retrying unprocessed keys with a short backoff (on ``clock``)."""
    items: list[dict[str, Any]] = []
    for start in range(0, len(item_keys), BATCH_GET_LIMIT):
        request = {table: {"Keys": item_keys[start:start + BATCH_GET_LIMIT], **options}}
        for attempt in range(attempts):
            answer = ddb.batch_get_item(RequestItems=request)
            items.extend(answer.get("Responses", {}).get(table, []))
            request = answer.get("UnprocessedKeys") or {}
            if not request:
                break
            clock.sleep(0.05 * 2 ** attempt)
        else:
            raise RuntimeError("the table left keys unprocessed after retries; retry the listing")
    return items
