"""The engine section of docs/benchmarks.md and its rows of the summary, from the JSON ``bench.engine`` writes.

It also holds the number formatting the other report modules share (``fmt``, ``mmm``, ``verdict``).
"""

from __future__ import annotations

import statistics

_RATES = (("new_connection_long_per_s", "one client, a new connection per request", "long"),
          ("new_connection_short_per_s", "one client, a new connection per request", "short"),
          ("pooled_long_per_s", "8 concurrent keep-alive clients", "long"),
          ("pooled_short_per_s", "8 concurrent keep-alive clients", "short"))
_OPS = ("PutItem", "UpdateItem", "SendMessage", "ReceiveMessage (10)", "DeleteMessageBatch (10)")
FLAT_SHARE = 0.01  # "flat over the soak": growth over its second half under 1 % of the peak


# --- formatting shared by the report modules --------------------------------------------------
def fmt(x, nd: int = 0, unit: str = "") -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "n/a"
    return f"{x:,.{nd}f}{unit}"


def mmm(values: list, nd: int = 0) -> str:
    """``median (min – max)`` of the repeats of one figure."""
    v = sorted(x for x in values if x is not None and x == x)
    if not v:
        return "n/a"
    if len(v) == 1:
        return fmt(v[0], nd)
    return f"{fmt(statistics.median(v), nd)} ({fmt(v[0], nd)} – {fmt(v[-1], nd)})"


def pct(share: float | None, nd: int = 1) -> str:
    return "n/a" if share is None else f"{share * 100:.{nd}f} %"


def target(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "**missed**")


def verdict(oks: list[bool]) -> str:
    """met when every repeat meets the target; otherwise missed, with how many repeats missed it."""
    if not oks:
        return "n/a"
    missed = oks.count(False)
    if not missed or missed == len(oks):
        return target(not missed)
    return f"**missed** in {missed} of {len(oks)} repeats"


# --- the summary's rows -----------------------------------------------------------------------
def create_rows(e: dict | None) -> list[str]:
    """The three create targets: one client with new connections, 8 keep-alive clients, a full table."""
    e = e or {}
    runs = e.get("runs") or []
    rows = []
    for kind, label, floor in (("new_connection", "sequential creates, one client, a new connection per request", 150),
                               ("pooled", f"creates with {e.get('clients', 8)} concurrent keep-alive clients", 400)):
        keys = [f"{kind}_{path}_per_s" for path in ("long", "short")]
        if not runs:
            rows.append(f"| {label}: long / short timers | not measured | ≥ {floor} per second | |")
            continue
        oks = [all(r["empty"][k] >= floor for k in keys) for r in runs]
        rows.append(f"| {label} (empty engine): long / short timers | "
                    + " / ".join(mmm([r["empty"][k] for r in runs]) for k in keys)
                    + f" creates/s | ≥ {floor} per second: {verdict(oks)} | |")
    if not runs:
        return rows + [f"| create rate with 10,000 long timers already waiting, as a share of the empty engine's rate | "
                       "not measured | within 20 % (ratio ≥ 0.8) | |"]
    ratios = " / ".join(mmm([r["full_over_empty"].get(k) for r in runs], 2) for k, _, _ in _RATES)
    oks = [all(v >= 0.8 for v in r["full_over_empty"].values()) for r in runs]
    rows.append(f"| create rate with {e.get('waiting', 10_000):,} long timers already waiting (1 s sweeps), as a share of "
                "the empty engine's rate in the same run: new connection long / short, keep-alive long / short | "
                f"{ratios} | within 20 % (ratio ≥ 0.8): {verdict(oks)} | |")
    return rows


def resource_rows(e: dict | None) -> list[str]:
    """Memory over the soak, idle CPU and moto's ceiling."""
    e = e or {}
    rows = []
    s = e.get("soak")
    if s:
        flat = s["growth_second_half_mb"] <= FLAT_SHARE * s["peak_mb"]
        rows.append(f"| the engine's peak memory with {s['waiting']:,} waiting timers (engine process + moto child, "
                    f"resident) | peak {fmt(s['peak_mb'])} MB; growth over the second half of the {fmt(s['seconds'])} s "
                    f"soak {s['growth_second_half_mb']:+.1f} MB | reported; flat (growth under "
                    f"{pct(FLAT_SHARE, 0)} of the peak): {target(flat)} | |")
    else:
        rows.append("| the engine's peak memory with 10,000 waiting timers | not measured | reported, and flat | |")
    i = e.get("idle")
    rows.append("| idle engine CPU, share of one core: engine process / moto child | "
                + (f"{pct(i['engine_core_share'])} / {pct(i['moto_core_share'])} (over {fmt(i['seconds'])} s)" if i
                   else "not measured") + " | reported | |")
    runs = e.get("runs") or []
    if runs:
        calls = ", ".join(f"{op} {mmm([r['ceiling']['calls_per_s'].get(op) for r in runs])}" for op in _OPS)
        rows.append(f"| moto's ceiling, calls/s from {runs[0]['ceiling'].get('threads', 8)} threads | {calls}; they allow "
                    f"{mmm([r['ceiling']['timers_per_s'] for r in runs])} timers/s, "
                    f"{mmm([r['ceiling']['deliveries_per_s'] for r in runs])} deliveries/s | reported | |")
    else:
        rows.append("| moto's ceiling | not measured | reported | |")
    return rows


# --- the section ------------------------------------------------------------------------------
def section(e: dict | None) -> list[str]:
    if not e or not e.get("runs"):
        return []
    runs = e["runs"]
    out = ["## Engine", "",
           "The local engine against its own ceiling (`bench/engine.py`). Each repeat measures moto's ceiling, then "
           "the creates in a fresh engine with an empty table and in another with "
           f"{e['waiting']:,} long timers already waiting; idle CPU and memory are measured once.", ""]
    out += ceiling_lines(runs[0]["ceiling"] if len(runs) == 1 else None, "### moto's ceiling")
    if len(runs) > 1:
        out += ["| repeat | " + " | ".join(_OPS) + " | timers/s | deliveries/s |", "|---" * (len(_OPS) + 3) + "|"]
        for k, r in enumerate(runs):
            c = r["ceiling"]
            out.append(f"| {k + 1} | " + " | ".join(fmt(c["calls_per_s"].get(op)) for op in _OPS)
                       + f" | {fmt(c['timers_per_s'])} | {fmt(c['deliveries_per_s'])} |")
        out.append("")
    loads = [r["full"].get("load_s") for r in runs]
    out += ["### Creates", "",
            f"`POST /schedules` through the engine's HTTP API, sweeps every second: {e['n']} creates from one client "
            "opening a new connection per request (as `curl` or `urllib` make them), one after another, then "
            f"{2 * e['n']} creates from {e['clients']} clients at once, each on its own keep-alive connection. **Long** "
            "timers are due in a day (a timer item, then the record); **short** ones in 10 minutes, within the default "
            "window (a delayer message, then the record). *Full*: the same in an engine holding "
            f"{e['waiting']:,} long timers (written in bulk as the API writes them, in {mmm(loads, 1)} s) and sweeping "
            "every second.", "",
            "| client | timers | empty engine, creates/s | full table, creates/s | full / empty |", "|---|---|---|---|---|"]
    for key, client, path in _RATES:
        out.append(f"| {client} | {path} | {mmm([r['empty'].get(key) for r in runs])} | "
                   f"{mmm([r['full'].get(key) for r in runs])} | {mmm([r['full_over_empty'].get(key) for r in runs], 2)} |")
    out.append("")
    if all(r["empty"].get("core_share") for r in runs):
        out += ["Where the time goes, empty engine: each process's share of one core while the creates ran (1.0 = a "
                "core saturated; the engine process also runs the load generator). Neither near 1.0 means the creates "
                "wait on each other's round trips and on the GIL, not on a saturated core.", "",
                "| client | timers | engine process | moto |", "|---|---|---|---|"]
        for key, client, path in _RATES:
            shares = [r["empty"]["core_share"].get(key.removesuffix("_per_s")) or {} for r in runs]
            out.append(f"| {client} | {path} | {mmm([x.get('engine') for x in shares], 2)} | "
                       f"{mmm([x.get('moto') for x in shares], 2)} |")
        out.append("")
    i = e.get("idle")
    if i:
        out += ["### Idle CPU", "",
                f"Nothing scheduled, the engine's default options, over {fmt(i['seconds'])} s: the engine process (the "
                f"benchmark's own process, asleep meanwhile) used {pct(i['engine_core_share'])} of one core, its moto "
                f"child {pct(i['moto_core_share'])}.", ""]
    out += _soak(e.get("soak"))
    return out


def ceiling_lines(c: dict | None, title: str | None) -> list[str]:
    """What moto answers, one kind of call at a time from 8 threads, and the timers/s it allows (with ``c``, its figures).

    Without a title, only the figures of ``c``, on one line.
    """
    if title is None:
        return [f"moto's ceiling in this run ({c.get('threads', 8)} threads, measured as in the engine section): "
                + ", ".join(f"{op} {fmt(c['calls_per_s'].get(op))}/s" for op in _OPS)
                + f"; {fmt(c['timers_per_s'])} timers/s, {fmt(c['deliveries_per_s'])} deliveries/s.", ""] if c else []
    out = [title, "",
           "Each call a timer needs, one kind at a time, from 8 threads for a few seconds against moto in the engine's "
           "child process: PutItem of a record, a conditional UpdateItem, SendMessage, ReceiveMessage and "
           "DeleteMessageBatch of 10 messages. A timer needs one PutItem, one SendMessage, one UpdateItem and a tenth "
           "of a receive and of a delete: *timers/s* is one over the sum of those calls' times. A delivery alone (the "
           "timer already created) needs the UpdateItem and the tenths: *deliveries/s*. These are calls moto answers "
           "one after another, not a measured pipeline."]
    if c:
        out[-1] += (" Here: " + ", ".join(f"{op} {fmt(c['calls_per_s'].get(op))}/s" for op in _OPS)
                    + f"; {fmt(c['timers_per_s'])} timers/s, {fmt(c['deliveries_per_s'])} deliveries/s.")
    return out + [""]


def _soak(s: dict | None) -> list[str]:
    if not s:
        return []
    samples = s["samples"]
    step = max(1, round(len(samples) / 8))
    shown = samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else [])
    out = ["### Memory over a soak", "",
           f"{s['waiting']:,} long timers waiting, sweeps every second, for {fmt(s['seconds'])} s; the resident set of "
           "the engine process (which also holds the benchmark's code) and of its moto child, sampled "
           f"{len(samples)} times. Total: first {fmt(s['first_mb'])} MB, peak {fmt(s['peak_mb'])} MB, last "
           f"{fmt(s['last_mb'])} MB; growth over the second half {s['growth_second_half_mb']:+.1f} MB.", "",
           "| s | engine MB | moto MB | total MB |", "|---|---|---|---|"]
    for x in shown:
        out.append(f"| {fmt(x['t_s'])} | {fmt(x['engine_mb'])} | {fmt(x['moto_mb'])} | {fmt(x['engine_mb'] + x['moto_mb'])} |")
    return out + [""]
