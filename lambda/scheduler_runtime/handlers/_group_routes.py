"""``DELETE /groups/{group}``, and the ``group=`` listings of ``GET /schedules`` and ``GET /periodic``.

The router (:mod:`.api`) imports this module on the first call to a route under ``/groups``; the listings
import it on their first ``group=`` query.
"""

from __future__ import annotations

from typing import Any, Callable

from ..aws import groups as group_store
from ..aws.context import Context
from ..aws.listing import batch_get
from ..core import groups
from ..core.listing import PAGE_PARAMETERS, make_token, page_position
from ..core.timeparse import format_rfc3339_ms
from ..core.validation import ApiError
from ..core.window import SETTLE_MS
from ..observability import log_event
from ._router import Answer, Call, Operations

OPERATIONS = Operations()
GROUP_PARAMETERS = (groups.FIELD, *PAGE_PARAMETERS)
"""The query parameters a ``group=`` listing takes."""
COUNT_BUDGET_MS = 8_000
"""How long a cancel counts what it stopped before it answers with the count so far (``countComplete`` false): some
ten pages a second of 10,000 members each on DynamoDB, well inside the api function's timeout. The stop itself is
one write, whatever the group's size."""


def _store(ctx: Context) -> group_store.GroupStore:
    return group_store.GroupStore(ctx.dynamodb, ctx.config.table_name)


@OPERATIONS.answers("cancelGroup")
def cancel_group(call: Call) -> Answer:
    """Stop every schedule and periodic timer of the group created before this call: 200 with what it stopped.

    Answered ``SETTLE_MS`` after its write, so no delivery it stopped starts after the answer. A repeat stops
    the members created since the one before (none, usually: 200 with zero counts).
    """
    group, ctx, clock = call.params[groups.FIELD], call.ctx, call.ctx.clock
    store, began = _store(ctx), clock.now_ms()
    ranges = store.cancel(group, began)
    deadline = began + COUNT_BUDGET_MS
    counted = {name: store.count(group, kind, ranges.counted_from_ms, began, deadline, clock)
               for name, kind in (("schedules", groups.SCHEDULES), ("periodic", groups.PERIODIC))}
    stopped = {name: count for name, (count, _) in counted.items()}
    complete = all(whole for _, whole in counted.values())
    # from where the sweeps already started end: a cancel that died after its write left its members to this one
    group_store.GroupSweeper(ctx).start(group, ranges.swept_from_ms, ranges.before_ms)
    log_event("group_cancelled", group=group, complete=complete, **stopped)
    settle = began + SETTLE_MS - clock.now_ms()
    if settle > 0:
        clock.sleep(settle / 1000)
    return 200, {"group": group, "cancelledBefore": format_rfc3339_ms(began), "stopped": stopped,
                 "countComplete": complete}


def list_members(ctx: Context, params: dict[str, Any], kind: str,
                 describe: Callable[[list[dict[str, Any]], group_store.GroupStore], list[dict[str, Any]]]) -> Answer:
    """A page of a group's pending members of ``kind`` from the group index, in the order they joined (never a
    scan): ``describe`` reads the page's items (index entries) and returns the list items."""
    unknown = sorted(set(params) - set(GROUP_PARAMETERS))
    if unknown:
        raise ApiError(400, f"'{unknown[0]}' cannot be combined with group; a group listing takes "
                            f"{', '.join(GROUP_PARAMETERS)}", unknown[0])
    group = groups.validate_group(params.get(groups.FIELD))
    filters = [groups.FIELD, group, kind]
    limit, cursor = page_position(params, ctx.config.table_name, filters)
    store = _store(ctx)
    entries, more = store.members(group, groups.kind_range(kind, cursor), limit)
    body: dict[str, Any] = {"items": describe(entries, store)}
    if more and entries:
        body["nextToken"] = make_token(entries[-1][groups.SORT_KEY]["S"], filters, ctx.config.table_name)
    return 200, body


def read_items(ctx: Context, entries: list[dict[str, Any]], projection: dict[str, Any]) -> list[dict[str, Any]]:
    """The table items of a page of index entries, in the entries' order (one that is gone since is left out)."""
    found = batch_get(ctx.dynamodb, ctx.config.table_name, [{"pk": e["pk"], "sk": e["sk"]} for e in entries], projection,
                      ctx.clock)
    by_key = {(item["pk"]["S"], item["sk"]["S"]): item for item in found}
    return [by_key[key] for key in ((e["pk"]["S"], e["sk"]["S"]) for e in entries) if key in by_key]


__all__ = ["OPERATIONS", "cancel_group", "list_members", "read_items"]
