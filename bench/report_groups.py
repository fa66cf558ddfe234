"""The groups section of docs/benchmarks.md and its rows of the summary, from ``bench.groups``' JSON."""

from __future__ import annotations

from .report_engine import fmt


def summary_rows(g: dict | None) -> list[str]:
    if not g or not g.get("runs"):
        return ["| group cancel on the engine: answer time | not measured | | |"]
    largest = max(g["runs"], key=lambda r: r["members"])
    swept = max((r for r in g["runs"] if r.get("sweep_s") is not None), key=lambda r: r["members"])
    return [f"| group cancel on the engine, {largest['members']:,} members: answer (every member CANCELLED from then) | "
            f"{largest['answer_ms']:,} ms | | |",
            f"| group cancel on the engine, {swept['members']:,} members: sweep done | {fmt(swept['sweep_s'], 1)} s | | |",
            f"| what a group adds to a one-shot timer, on demand, per million | ${g['grouped_cost']['total']:.3f} | "
            "nothing for a timer without one | |"]


def _sweep(r: dict) -> str:
    if r.get("seeded"):
        return "not waited for | |"
    if r.get("sweep_s") is None:
        return f"watched {fmt(r['watched_s'], 0)} s, not done | {fmt(r['swept_per_second'], 1)} |"
    return f"{fmt(r['sweep_s'], 1)} | {fmt(r['swept_per_second'], 1)} |"


def section(g: dict | None) -> list[str]:
    if not g or not g.get("runs"):
        return []
    cost = g["grouped_cost"]
    rows = [f"| {r['members']:,} | {'seeded' if r.get('seeded') else 'API'} {fmt(r['create_s'], 1)} | {r['answer_ms']:,} "
            f"| {'yes' if r['count_complete'] else 'no, ' + format(r['counted'], ',') + ' counted'} "
            f"| {fmt(r['sample_read_cancelled_s'], 1)} | " + _sweep(r) for r in g["runs"]]
    return ["## Groups", "",
            "`./dev bench --only groups` (bench/groups.py): on a fresh engine per run, one group's members (due two "
            "hours out: timer items) created through the HTTP API in batches of ten from eight clients, beside 100 "
            "timers of another group and 100 without one; `DELETE /groups/{group}` is timed, then its sweep is watched "
            "until no member is left in the group index. The run fails unless the answer counts every member, 50 members "
            "sampled evenly through the group read `CANCELLED` right after the answer, and 20 timers of the other group "
            "and 20 without one read `SCHEDULED` once the sweep is done or its watch ends (a seeded group: the 50 "
            "sampled members only). The answer includes the fence (`SETTLE_MS`, 1 s) and the count of the "
            "members through the index; the sweep cancels 100 members a message through the dispatcher.", "",
            "| members | created (API or seeded) s | cancel answer ms | counted all | 50 sampled members read CANCELLED "
            "after s | sweep done s | members swept a second |",
            "|---|---|---|---|---|---|---|", *rows, "",
            "A member reads `CANCELLED` from the answer on, swept or not (GET reads the group's cancel item): the run checks "
            "it on the 50 sampled members, right after the answer. The 10,000-member group's sweep is watched for a minute and its rate taken; the largest "
            "group is seeded straight into the table (a record and a timer item each, built by the runtime's own item "
            "classes, as a create due two hours out writes them), since creating it through the API would take the "
            "engine's ~150 creates a second, and its sweep is not waited for (below).", "",
            "Both the count and the sweep are bounded here by moto, whose index `Query` reads the whole table: a page "
            "of 100 members costs time in proportion to everything the table holds, so the engine's sweep slows as "
            "the group grows, and one count page of 10,000 members reads the whole table under moto's write lock (the "
            "count's 8 s budget is checked between pages, so one slow page passes it: the largest group's answer here "
            "is that page's time, and the API function's 15 s timeout would cut it on moto). On DynamoDB a page is one "
            "partition's keys (1 MB, some 10,000 members a count page), so "
            "the answer stays about the fence's second up to millions of members, and a count that would outlast its "
            "8 s budget answers `countComplete: false` with what it counted; the stop itself is one write.", "",
            f"**Cost of a group**, on demand: a grouped one-shot timer's index entry is written at its create and "
            f"removed at its delivery start (${cost['index_writes']:.3f} per million, two write units), and its "
            f"delivery start reads the group's cancel item (${cost['cancel_read']:.3f} per million, one strongly "
            f"consistent read unit): ${cost['total']:.3f} per million grouped timers. A timer without a group pays "
            "nothing (`tests/handlers/test_groups.py` counts the calls: a grouped delivery makes exactly one read "
            "more). A cancel costs one write, its count's pages and one message per kind; its sweep what a DELETE of "
            "each member costs, plus one index page and one message per 100.", ""]
