"""Roll-ups: saved counts regrouped to coarser groups and filtered on their group columns.

Counts saved ``--by day`` hold one count per (day, report value); since counts add, any
coarser grouping and any filter on the group columns is a sum over those rows, exact:

* no ``--by``: one estimate over all days;
* ``--by "date_trunc('day', hour) AS day"`` over counts saved ``--by "date_trunc('hour', ts) AS hour"``;
* ``--where "day >= '2026-11-05'"``: a window of days.

The saved rows are handed to DuckDB as a table (the group columns under their names, with the
types they were counted with: a timestamp stays a timestamp) and summed by
``SELECT <by>, value, sum(count) FROM saved WHERE <filter> GROUP BY ALL``; ``--by`` and ``--where``
are checked by DuckDB's parser as for reports (:mod:`designer.aggregate.filters`), and bound
against the saved group columns only (a column of the reports themselves needs a recount).

Counts saved with a filter ``W`` hold only the reports where ``W`` holds. A run without
``--where`` uses them as they are; a run with ``--where`` must keep ``W``: its expression is
``W`` itself, or ``W AND ...`` (the parts compared as DuckDB's parse trees), and the other parts
filter the groups.
"""

from __future__ import annotations

from dataclasses import replace

from designer.aggregate.filters import GroupColumn, quote_identifier, where_conjuncts
from designer.errors import one_line

#: Column names of the report value and the count in the table DuckDB rolls up.
_VALUE, _COUNT = "ldp_designer_value", "ldp_designer_count"


def extra_filter(saved: str | None, asked: str | None) -> str | None:
    """The filter to apply to counts saved with ``saved`` so that they count the reports ``asked`` selects.

    Raises
    ------
    ValueError
        One line: ``asked`` does not keep the saved filter.
    """
    if asked is None or asked == saved:
        return None
    if saved is None:
        return asked
    kept = dict(where_conjuncts(saved))
    parts = where_conjuncts(asked)
    if not set(kept) <= {key for key, _ in parts}:
        raise ValueError(f"--where {asked}: the saved counts hold only the reports where {saved}; write a filter "
                         f"that keeps it (--where \"{saved} AND ...\") or recount the reports")
    rest = [sql for key, sql in parts if key not in kept]
    return " AND ".join(rest) if rest else None


def roll_up(counted, saved_by: tuple[GroupColumn, ...], by: tuple[GroupColumn, ...], where: str | None):
    """``counted`` (grouped by ``saved_by``) regrouped by ``by`` and filtered by ``where`` (checked SQL).

    Returns a :class:`~designer.aggregate.counting.ReportCounts` (``counted`` itself when the groups
    are the same and there is no filter).

    Raises
    ------
    ValueError
        One line naming ``--by`` or ``--where`` and the saved group columns, when they do not bind.
    """
    import duckdb
    import pyarrow as pa

    from designer.aggregate.counting import unpack
    from designer.aggregate.counts_file import arrow_column

    if where is None and [(group.name, group.sql) for group in by] == [(group.name, group.sql) for group in saved_by]:
        return counted
    names = [group.name for group in saved_by]
    clash = {_VALUE, _COUNT} & set(names)
    if clash:
        raise ValueError(f"--counts: a saved group is named {clash.pop()}, a name the roll-up uses itself")
    columns = {name: arrow_column([key[i] for key in counted.keys]) for i, name in enumerate(names)}
    columns[_VALUE] = pa.array(counted.values, type=pa.string())
    columns[_COUNT] = pa.array(counted.counts, type=pa.int64())
    selected = ", ".join([*(group.select() for group in by), quote_identifier(_VALUE),
                          f"sum({quote_identifier(_COUNT)})::BIGINT"])
    condition = f" WHERE {where}" if where else ""
    connection = duckdb.connect()
    try:
        connection.register("saved", pa.table(columns))
        try:
            rows = connection.execute(f"SELECT {selected} FROM saved{condition} GROUP BY ALL").fetchall()
        except duckdb.Error as error:
            raise ValueError(_explain(connection, one_line(error), names, by, where)) from None
    finally:
        connection.close()
    merged = {(tuple(key), value): int(count) for *key, value, count in rows}
    keys, values, counts = unpack(merged)
    return replace(counted, by=tuple(group.name for group in by), keys=keys, values=values, counts=counts)


def _explain(connection, message: str, names: list[str], by: tuple[GroupColumn, ...], where: str | None) -> str:
    """Which option does not bind over the saved groups (each ``--by`` group tried alone)."""
    import duckdb

    held = f"the saved counts have the group columns {', '.join(names) or '(none)'}"
    for group in by:
        try:
            connection.execute(f"DESCRIBE SELECT {group.select()} FROM saved")
        except duckdb.Error as error:
            return f"--by {group.sql}: {one_line(error)}; {held} (a group of the reports themselves needs a recount)"
    return f"--where {where}: {message}; {held} (a filter on the reports themselves needs a recount)"
