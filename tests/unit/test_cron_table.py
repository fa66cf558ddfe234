"""Which cron expressions are valid: the runtime's parser against EventBridge's documented table.

The model below is written from the documentation (EventBridge's "Cron expressions reference" and
"Setting a schedule pattern for scheduled rules", which give the same table; EventBridge Scheduler's
"Schedule types" takes the same six fields), not from the runtime's parser:

    Field         Values            Wildcards
    Minutes       0-59              , - * /
    Hours         0-23              , - * /
    Day-of-month  1-31              , - * ? / L W
    Month         1-12 or JAN-DEC   , - * /
    Day-of-week   1-7 or SUN-SAT    , - * ? L #
    Year          1970-2199         , - * /

with the page's text: ``,`` lists, ``-`` ranges, ``/`` increments (``1/10``), ``?`` in exactly one of
the two day fields, ``L`` the last day of the month or of the week, ``nW`` the weekday nearest day
``n`` (``LW``, the last weekday), ``n#k`` the ``k``-th weekday ``n`` of the month, and a ``#`` field
holds one expression only. Where the page is silent the model writes down the scheduler's choice:

- a range runs forwards (``a`` <= ``b``);
- a step is a whole number from 1 to the field's span (60 for minutes);
- ``#`` counts 1-5 (no month has a sixth of any weekday);
- ``L``, ``LW``, ``nW``, ``nL`` and ``n#k`` stand alone, never in lists, ranges or steps;
- ``nL`` in day-of-week is the month's last weekday ``n`` (``6L``: the last Friday).

Expressions are generated field by field (every string of up to three pieces from an alphabet of
values, names and wildcards, so malformed ones too) and whole (hypothesis): the parser must accept
exactly what the table accepts.
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_runtime.core.cron import CronError, parse

MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
WILDCARDS = ",-*?/LW#"


@dataclass(frozen=True)
class Field:
    """One row of the table."""

    name: str
    low: int
    high: int
    wildcards: str
    names: tuple[str, ...] = ()

    def value(self, text: str) -> int | None:
        if text in self.names:
            return self.names.index(text) + 1
        if re.fullmatch(r"[0-9]+", text) and self.low <= int(text) <= self.high:
            return int(text)
        return None


TABLE = (Field("minutes", 0, 59, ",-*/"), Field("hours", 0, 23, ",-*/"),
         Field("day-of-month", 1, 31, ",-*?/LW"), Field("month", 1, 12, ",-*/", MONTHS),
         Field("day-of-week", 1, 7, ",-*?L#", DAYS), Field("year", 1970, 2199, ",-*/"))
BY_NAME = {field.name: field for field in TABLE}


def item_ok(field: Field, item: str) -> bool:
    """A list item: ``*``, a value or a range ``a-b``, each with an optional increment ``/n``."""
    match = re.fullmatch(r"(?P<base>[^/]+)(?:/(?P<step>[0-9]+))?", item)
    if match is None:
        return False
    if match["step"] is not None and ("/" not in field.wildcards
                                      or not 1 <= int(match["step"]) <= field.high - field.low + 1):
        return False
    base = match["base"]
    if base == "*":
        return "*" in field.wildcards
    ends = [field.value(end) for end in base.split("-")]
    if len(ends) == 2:
        first, last = ends
        return "-" in field.wildcards and first is not None and last is not None and first <= last
    return len(ends) == 1 and ends[0] is not None


def field_ok(field: Field, text: str) -> bool:
    if text == "?":
        return "?" in field.wildcards
    if "L" in field.wildcards and text == "L":
        return True
    if field.name == "day-of-month":
        if text == "LW":
            return True
        if (nearest := re.fullmatch(r"(.+)W", text)) is not None:
            return field.value(nearest[1]) is not None
    if field.name == "day-of-week":
        if (last := re.fullmatch(r"(.+)L", text)) is not None:
            return field.value(last[1]) is not None
        if (nth := re.fullmatch(r"(.+)#([0-9]+)", text)) is not None:
            return field.value(nth[1]) is not None and 1 <= int(nth[2]) <= 5
    items = text.split(",")
    return (len(items) == 1 or "," in field.wildcards) and all(item_ok(field, item) for item in items)


def documented_ok(expression: str) -> bool:
    """Whether EventBridge's table (and the rules above) accept ``expression``."""
    parts = expression.split()
    if len(parts) != len(TABLE):
        return False
    day_of_month, day_of_week = parts[2], parts[4]
    if (day_of_month == "?") == (day_of_week == "?"):
        return False
    return all(field_ok(field, text) for field, text in zip(TABLE, parts))


def parser_ok(expression: str) -> bool:
    try:
        parse(expression)
    except CronError:
        return False
    return True


# --- field by field: every string of up to three pieces --------------------------------------
def pieces(field: Field) -> list[str]:
    """Values at and past both ends, a small number (a step), a name of each kind, every wildcard."""
    numbers = {field.low, field.high, field.low - 1, field.high + 1, 2}
    return sorted(str(n) for n in numbers if n >= 0) + ["JAN", "MON"] + list(WILDCARDS)


CONTEXT = {"minutes": "0", "hours": "0", "day-of-month": "?", "month": "*", "day-of-week": "MON", "year": "*"}
OTHER_DAY = {"day-of-month": "day-of-week", "day-of-week": "day-of-month"}


def in_context(field: Field, text: str) -> str:
    """``text`` in ``field``, the other fields valid; in a day field, the other day field is ``?``."""
    fields = dict(CONTEXT)
    if field.name in OTHER_DAY:
        fields[OTHER_DAY[field.name]] = "?"
    fields[field.name] = text
    return " ".join(fields[f.name] for f in TABLE)


@pytest.mark.parametrize("name", [field.name for field in TABLE])
def test_every_short_field_text_is_accepted_exactly_when_the_table_allows_it(name: str) -> None:
    field = BY_NAME[name]
    disagreements: list[tuple[str, str]] = []
    accepted = 0
    for length in range(1, 4):
        for combination in itertools.product(pieces(field), repeat=length):
            expression = in_context(field, "".join(combination))
            expected = documented_ok(expression)
            accepted += expected
            if parser_ok(expression) != expected:
                disagreements.append((expression, "table accepts" if expected else "table refuses"))
    assert not disagreements, disagreements[:20]
    assert accepted >= 10  # the comparison covers valid texts, not only refusals


# --- whole expressions: valid texts from the table's forms, then one field changed -----------
def valid_text(rng: random.Random, field: Field) -> str:
    """A text the table allows in ``field``: a list of items, or one of the day fields' own forms."""
    def value() -> str:
        if field.names and rng.random() < 0.3:
            return rng.choice(field.names)
        return str(rng.randint(field.low, field.high))

    own = {"day-of-month": ["L", "LW", "{}W"], "day-of-week": ["L", "{}L", "{}#{}"]}.get(field.name, [])
    form = rng.choice(own + ["list"] * 3)
    if form != "list":
        return form.format(value(), rng.randint(1, 5))
    items = []
    for _ in range(rng.randint(1, 3)):
        low, high = sorted(rng.randint(field.low, field.high) for _ in range(2))
        base = rng.choice(["*", f"{low}-{high}", value()])
        step = f"/{rng.randint(1, field.high - field.low + 1)}" if "/" in field.wildcards and rng.random() < 0.4 else ""
        items.append(base + step)
    return ",".join(items)


CHANGES = ["{}/", "{}/0", "{},", ",{}", "{}-", "{}L", "{}W", "{}#2", "{}/2", "{}?", "L{}", "{}-{}", "{}{}"]


def expression(rng: random.Random) -> str:
    """Six valid texts, one day field '?' (now and then both or neither); then, most of the time, one
    field changed: a piece added, or a valid text of another field put in its place."""
    texts = [valid_text(rng, field) for field in TABLE]
    texts[rng.choice([2, 4])] = "?"
    if rng.random() < 0.1:
        texts[rng.choice([2, 4])] = rng.choice(["?", "*", "1"])
    if rng.random() < 0.75:
        place, change = rng.randrange(len(TABLE)), rng.choice(CHANGES + ["other field"])
        texts[place] = (valid_text(rng, rng.choice(TABLE)) if change == "other field"
                        else change.format(texts[place], texts[place]))
    return " ".join(texts)


@settings(max_examples=500, deadline=None)
@given(rng=st.randoms(use_true_random=False))
def test_whole_expressions_are_accepted_exactly_when_the_table_allows_them(rng: random.Random) -> None:
    text = expression(rng)
    assert parser_ok(text) == documented_ok(text), text
