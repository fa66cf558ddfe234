"""The load section of docs/benchmarks.md and its rows of the summary, from the JSON ``bench.load`` writes."""

from __future__ import annotations

from .report_engine import fmt, mmm

MODES = (("single", "`POST /schedules`, one schedule a request"),
         ("batch", "`POST /schedule-batches`, 10 schedules a request"))


def _per_mode(d: dict, mode: str, *path: str) -> list:
    """One figure of ``mode`` from every repeat (None where a repeat lacks it)."""
    values = []
    for run in d.get("runs") or []:
        value = run.get(mode)
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        values.append(value)
    return values


def summary_rows(d: dict | None) -> list[str]:
    d = d or {}
    n = d.get("n", 10_000)
    if not d.get("runs"):
        return [f"| load: {n:,} creates from 8 clients, with GETs meanwhile | not measured | reported | |"]
    rates = " / ".join(mmm(_per_mode(d, mode, "creates_per_s")) for mode, _ in MODES)
    peaks = " / ".join(mmm([max(run[mode]["memory_mb"]["after_load"][proc]["peak"] for mode, _ in MODES if run.get(mode))
                            for run in d["runs"]]) for proc in ("engine", "moto"))
    gets = "; ".join(" / ".join(mmm(_per_mode(d, mode, "get_loaded_ms", q), 1) for q in ("p50", "p99", "max"))
                     + f" ms ({label.split(',')[1].strip()})" for mode, label in MODES)
    return [
        f"| load: {n:,} creates through `cdk-delayed-scheduler local`'s API from {d['clients']} keep-alive clients, "
        f"one a request / {d['batch']} a request | {rates} creates/s | reported | |",
        f"| load: peak memory (high-water mark) over those runs, engine process / its moto child | {peaks} MB | reported | |",
        f"| load: `GET /schedules/{{id}}` latency from a 9th client at {fmt(d['get_rate_per_s'])}/s during those creates, "
        f"p50 / p99 / max | {gets} | reported | |",
    ]


def section(d: dict | None) -> list[str]:
    if not d or not d.get("runs"):
        return []
    out = ["## Load", "",
           f"{d['n']:,} schedules created through the HTTP API of `cdk-delayed-scheduler local` (`bench/load.py`), "
           "run as a user runs it: a process of its own with the default options, its moto in a child process; the "
           f"load generator in the benchmark's process. {d['clients']} clients at once, each on its own keep-alive "
           f"connection, in two runs, each in a fresh engine: one schedule a request (`POST /schedules`) and "
           f"{d['batch']} a request (`POST /schedule-batches`). The schedules are due {fmt(d['due_in_s'] / 3600)} hours "
           "ahead (timer items waiting for the sweeper: none is delivered during a run). A 9th client, in a process of "
           f"its own, `GET`s an already created id {fmt(d['get_rate_per_s'])} times a second (when an answer takes "
           "longer than that, the next request follows at once), from a few seconds before the creates start (*idle*) "
           "until they end (*under load*). Memory is each process's resident set before the creates and its "
           "high-water mark (`VmHWM`) after them.", "",
           "| requests | repeat | creates/s | seconds | failed | create request p50 / p99 ms | GET idle p50 / p99 ms | "
           "GET under load p50 / p99 / max ms (count) | engine MB: before, peak | moto MB: before, peak |",
           "|---" * 10 + "|"]
    for mode, label in MODES:
        for k, run in enumerate(d["runs"]):
            x = run.get(mode)
            if not x:
                continue
            req, idle, busy = x["request_latency_ms"], x["get_idle_ms"], x["get_loaded_ms"]
            before, after = x["memory_mb"]["before_load"], x["memory_mb"]["after_load"]
            out.append(
                f"| {label} | {k + 1} | {fmt(x['creates_per_s'])} | {fmt(x['seconds'], 1)} | {x['failed_creates']} | "
                f"{fmt(req.get('p50'), 1)} / {fmt(req.get('p99'), 1)} | {fmt(idle.get('p50'), 1)} / {fmt(idle.get('p99'), 1)} | "
                f"{fmt(busy.get('p50'), 1)} / {fmt(busy.get('p99'), 1)} / {fmt(busy.get('max'), 1)} ({busy.get('n', 0)}) | "
                f"{fmt(before['engine']['rss'])}, {fmt(after['engine']['peak'])} | "
                f"{fmt(before['moto']['rss'])}, {fmt(after['moto']['peak'])} |")
    odd = [f"{mode} #{k + 1}: {run[mode]['get_not_200']} GETs not answered 200, {run[mode]['engine_errors_logged']} "
           "errors logged by the engine" for k, run in enumerate(d["runs"]) for mode, _ in MODES
           if run.get(mode) and (run[mode]["get_not_200"] or run[mode]["engine_errors_logged"])]
    out += ["", ("Anomalies: " + "; ".join(odd) + ".") if odd else
            "Every GET was answered 200, and the engine logged no error.", ""]
    return out
