"""A table's keys given with Apache Paimon's option names, on every surface.

Paimon defines a table's keys in its DDL or, equally, with the table options
``'primary-key' = 'id,dt'`` and ``'partition' = 'dt'`` (CoreOptions.PRIMARY_KEY /
PARTITION), which it takes out of the options stored with the schema. minipaimon accepts
the same: ``create_table(..., options={"primary-key": "id"})`` is
``create_table(..., primary_key=["id"])``, and the Spark writer takes both names
(``partition-keys``, its earlier spelling, too). Giving a key both ways is refused unless
both say the same, so no definition is silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgumentError
from ..format.options import PARTITION, PRIMARY_KEY


def names_of(value: Any, option: str) -> list[str]:
    """``'id, dt'`` (or a list of names) as ``['id', 'dt']``. Raises InvalidArgumentError
    for an empty list."""
    names = [n.strip() for n in value.split(",")] if isinstance(value, str) else [str(n) for n in value]
    names = [n for n in names if n]
    if not names:
        raise InvalidArgumentError(f"option {option!r} must list column names, got {value!r}")
    return names


def keys_from_options(primary_key: list[str] | None, partition_by: list[str] | None,
                      options: Mapping[str, Any] | None
                      ) -> tuple[list[str] | None, list[str] | None, dict[str, Any]]:
    """(primary key, partition keys, the other options): ``primary-key`` and ``partition``
    taken out of ``options`` (the arguments win where they agree).

    Raises InvalidArgumentError when an argument and its option name different columns.
    """
    rest = dict(options or {})
    out: list[list[str] | None] = []
    for argument, given, option in (("primary_key", primary_key, PRIMARY_KEY),
                                    ("partition_by", partition_by, PARTITION)):
        if option not in rest:
            out.append(given)
            continue
        named = names_of(rest.pop(option), option)
        if given is not None and list(given) != named:
            raise InvalidArgumentError(
                f"{argument}={list(given)} and the option {option!r} = {','.join(named)!r} "
                "disagree: give the keys once")
        out.append(named)
    return out[0], out[1], rest


# A scan's time travel by Paimon's read options, and the keyword argument of Table.scan each is.
TIME_TRAVEL = {"scan.snapshot-id": "snapshot_id", "scan.tag-name": "tag", "scan.timestamp-millis": "timestamp_ms"}


def time_travel_from_options(given: dict[str, Any], options: Mapping[str, Any] | None
                             ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(``Table.scan``'s time-travel arguments, the other scan options): Paimon's
    ``scan.snapshot-id`` / ``scan.tag-name`` / ``scan.timestamp-millis`` in ``options``
    become ``snapshot_id`` / ``tag`` / ``timestamp_ms``.

    Raises InvalidArgumentError when an option and its argument are both given, or an id or
    time is not an integer.
    """
    out = dict(given)
    rest = dict(options or {})
    for option, argument in TIME_TRAVEL.items():
        if option not in rest:
            continue
        raw = rest.pop(option)
        if out.get(argument) is not None:
            raise InvalidArgumentError(f"give {argument}= or the option {option!r}, not both")
        if argument == "tag":
            out[argument] = str(raw)
            continue
        try:
            out[argument] = int(str(raw).strip())
        except ValueError:
            raise InvalidArgumentError(f"option {option!r} must be an integer, got {raw!r}") from None
    return out, rest


__all__ = ["PARTITION", "PRIMARY_KEY", "TIME_TRAVEL", "keys_from_options", "names_of",
           "time_travel_from_options"]
