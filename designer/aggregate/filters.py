"""``--where`` and ``--by``: expressions checked by DuckDB's parser, identifiers quoted.

A ``--where`` expression is parsed by DuckDB (``json_serialize_sql`` of
``SELECT * FROM t WHERE <expression>``) and accepted only when the text is exactly one
``SELECT`` whose only addition to the template is the ``WHERE`` clause (no ``;``, no
second statement, no ``GROUP BY``/``UNION``/``LIMIT`` smuggled after it) and the
expression tree holds no subquery, window function or star. The SQL that runs is then
*regenerated from the checked tree* (``json_deserialize_sql``), not pasted from the
user's text, so what was checked is what runs. Column names are bound later, against
the reports' columns: an unknown one is a one-line error.

``--by`` is checked the same way as the select list of ``SELECT <by> FROM t``: a comma-separated
list of expressions (``day``, ``date_trunc('hour', ts) AS hour``, ``"app version"``), each with an
optional alias and without subquery, window function or star; each becomes a
:class:`GroupColumn` regenerated from its tree. As in SQL, a name that is not a plain identifier
is written in double quotes (``my col`` would read as the column ``my`` named ``col``).
"""

from __future__ import annotations

import functools
import json
from contextlib import contextmanager
from dataclasses import dataclass

from designer.errors import first_line

#: Expression classes refused inside --where (reading other tables, windows, ``*``).
REFUSED_CLASSES = {"SUBQUERY", "WINDOW", "STAR"}
_TEMPLATE = "SELECT * FROM t WHERE "


def quote_identifier(name: str) -> str:
    """``name`` as a quoted SQL identifier (``"`` doubled), whatever it contains."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class GroupColumn:
    """One ``--by`` group: its name, its checked SQL expression, and the column it is when a bare reference.

    The name is the alias (``... AS hour``), else the column's name, else the expression's SQL text.
    """

    name: str
    sql: str
    column: str | None = None

    def select(self) -> str:
        """The select-list item: the expression, named."""
        return self.sql if self.column == self.name else f"{self.sql} AS {quote_identifier(self.name)}"


def column_group(name: str) -> GroupColumn:
    """The group of a column called ``name`` (any text: it is quoted)."""
    return GroupColumn(name, quote_identifier(name), name)


def parse_by(text: str | None) -> tuple[GroupColumn, ...]:
    """``--by EXPR[,EXPR]`` as checked groups (see the module docstring).

    Raises
    ------
    ValueError
        One line: a semicolon, a syntax error, more than a list of expressions, a subquery, a
        window function, ``*``, or two groups of one name.
    """
    if not text:
        return ()
    if ";" in text:
        raise ValueError(f"--by {text}: expressions separated by commas, no ';'")
    with _parser() as connection:
        tree = _serialize(connection, f"SELECT {text} FROM t")
        if tree["error"]:
            raise ValueError(f"--by {text}: {first_line(tree['error_message'], 'it does not parse')}")
        template = _serialize(connection, "SELECT 1 FROM t")
        statements = tree["statements"]
        if len(statements) != 1 or _without(statements[0], "select_list") != _without(template["statements"][0],
                                                                                      "select_list"):
            raise ValueError(f"--by {text}: only expressions separated by commas are allowed (no FROM, WHERE or "
                             "other clause)")
        groups = []
        for item in statements[0]["node"]["select_list"]:
            refused = _refused_class(item)
            if refused:
                raise ValueError(f"--by {text}: {refused.lower()} expressions are not allowed")
            template["statements"][0]["node"]["select_list"] = [dict(item, alias="")]
            sql = connection.execute("SELECT json_deserialize_sql(?)", [json.dumps(template)]).fetchone()[0]
            sql = sql[len("SELECT "):-len(" FROM t")]
            names = item.get("column_names") or []
            column = names[0] if item["class"] == "COLUMN_REF" and len(names) == 1 else None
            groups.append(GroupColumn(item["alias"] or column or sql, sql, column))
    names = [group.name for group in groups]
    repeated = next((name for name in names if names.count(name) > 1), None)
    if repeated is not None:
        raise ValueError(f"--by {text}: two groups are named {repeated} (name one with AS)")
    return tuple(groups)


def where_conjuncts(sql: str) -> list[tuple[str, str]]:
    """The ``AND``-ed parts of a checked ``--where`` SQL: ``(canonical tree, SQL)`` each.

    Two expressions whose trees are equal (source positions aside) are the same filter; a
    roll-up of saved counts compares the parts of the saved filter with those asked for.
    """
    with _parser() as connection:
        tree = _serialize(connection, _TEMPLATE + sql)["statements"][0]["node"]["where_clause"]
        parts = tree["children"] if tree["class"] == "CONJUNCTION" and tree["type"] == "CONJUNCTION_AND" else [tree]
        template = _serialize(connection, _TEMPLATE + "true")
        found = []
        for part in parts:
            template["statements"][0]["node"]["where_clause"] = part
            text = connection.execute("SELECT json_deserialize_sql(?)", [json.dumps(template)]).fetchone()[0]
            found.append((json.dumps(_strip_locations(part), sort_keys=True), text[len(_TEMPLATE):]))
    return found


@contextmanager
def _parser():
    """A throw-away in-memory DuckDB connection (for its parser), closed on exit."""
    import duckdb

    connection = duckdb.connect()
    try:
        yield connection
    finally:
        connection.close()


def _serialize(connection, sql: str) -> dict:
    return json.loads(connection.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])


@functools.lru_cache(maxsize=32)  # a pure function of the text, asked by several layers of one run
def check_where(expression: str) -> str:
    """The canonical SQL of a checked ``--where`` expression.

    Raises
    ------
    ValueError
        One line: a semicolon, a syntax error, more than a boolean expression, a subquery,
        a window function or ``*``.
    """
    if ";" in expression:
        raise ValueError(f"--where {expression}: one expression, no ';'")
    with _parser() as connection:
        tree = _serialize(connection, _TEMPLATE + expression)
        if tree["error"]:
            raise ValueError(f"--where {expression}: {first_line(tree['error_message'], 'it does not parse')}")
        template = _serialize(connection, _TEMPLATE + "true")
        statements = tree["statements"]
        if len(statements) != 1 or _without(statements[0], "where_clause") != _without(template["statements"][0],
                                                                                        "where_clause"):
            raise ValueError(f"--where {expression}: only a boolean expression is allowed "
                             "(no GROUP BY, UNION, LIMIT or other clause)")
        refused = _refused_class(statements[0]["node"]["where_clause"])
        if refused:
            raise ValueError(f"--where {expression}: {refused.lower()} expressions are not allowed")
        template["statements"][0]["node"]["where_clause"] = statements[0]["node"]["where_clause"]
        sql = connection.execute("SELECT json_deserialize_sql(?)", [json.dumps(template)]).fetchone()[0]
    return sql[len(_TEMPLATE):]


def _without(statement: dict, clause: str) -> str:
    """The statement's JSON with ``clause`` and source positions removed (the template's shape)."""
    node = dict(statement["node"], **{clause: None})
    return json.dumps(_strip_locations(node), sort_keys=True)


def _strip_locations(tree):
    if isinstance(tree, dict):
        return {key: _strip_locations(value) for key, value in tree.items() if not key.startswith("query_location")}
    if isinstance(tree, list):
        return [_strip_locations(value) for value in tree]
    return tree


def _refused_class(tree) -> str | None:
    """The first refused expression class in the tree, if any."""
    if isinstance(tree, dict):
        if tree.get("class") in REFUSED_CLASSES:
            return tree["class"]
        children = tree.values()
    elif isinstance(tree, list):
        children = tree
    else:
        return None
    for child in children:
        found = _refused_class(child)
        if found:
            return found
    return None
