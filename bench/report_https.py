"""The HTTPS target section of docs/benchmarks.md and its row of the summary, from ``bench.https``' JSON."""

from __future__ import annotations

from .report_engine import fmt, target


def summary_rows(h: dict | None) -> list[str]:
    if not h or "handshakes" not in h:
        return ["| HTTPS target: TLS handshakes per 100 deliveries to one host | not measured | ≤ threads at once | |"]
    return [f"| HTTPS target: TLS handshakes per {h['n']} deliveries to one host ({h['threads']} threads); one "
            f"delivery warm / cold, p50 | {h['handshakes']}; {fmt(h['warm_ms']['p50'], 2)} / "
            f"{fmt(h['cold_ms']['p50'], 2)} ms | ≤ {h['threads']}: {target(h['handshakes'] <= h['threads'])} | |"]


def section(h: dict | None) -> list[str]:
    if not h or "handshakes" not in h:
        return []
    rows = [f"| {label} | {fmt(h[key]['p50'], 2)} | {fmt(h[key]['p90'], 2)} | {fmt(h[key]['max'], 2)} |"
            for label, key in (("warm (a kept connection)", "warm_ms"), ("cold (TCP connect + TLS handshake)", "cold_ms"))]
    return ["## HTTPS target", "",
            "`./dev bench --only https` (bench/https.py): the runtime's own deliverer, in one process, to a receiver "
            "on 127.0.0.1 over TLS 1.3 (a self-signed P-256 certificate), the signing secret in in-process moto "
            "and read before anything is timed.", "",
            f"- **Connections kept alive**: {h['n']} deliveries to one host on {h['threads']} threads at once (a "
            f"dispatcher batch's parallelism) made **{h['handshakes']} TLS handshakes** ({h['connections']} TCP "
            f"connections accepted), not {h['n']}: each thread takes an idle connection from the pool or opens one. "
            f"At most {h['threads']}: {target(h['handshakes'] <= h['threads'])}.",
            f"- **One delivery** (sign, POST, read the answer), {h['repeats']} one after another of each kind, ms:", "",
            "| connection | p50 | p90 | max |", "|---|---|---|---|", *rows, "",
            "Loopback only, so these are the client's and the receiver's CPU: on AWS a cold delivery also pays the "
            "network round trips of the TCP and TLS handshakes (one round trip more than the POST under TLS 1.3, two "
            "under TLS 1.2) before the request's own. A receiver that leaves Nagle's algorithm on (no `TCP_NODELAY`) "
            "adds a delayed-ACK stall of about 40 ms to every handshake; a kept connection skips it.", ""]
