"""``--where`` and ``--by``: a filter expression checked by DuckDB's parser, identifiers quoted.

A ``--where`` expression is parsed by DuckDB (``json_serialize_sql`` of
``SELECT * FROM t WHERE <expression>``) and accepted only when the text is exactly one
``SELECT`` whose only addition to the template is the ``WHERE`` clause (no ``;``, no
second statement, no ``GROUP BY``/``UNION``/``LIMIT`` smuggled after it) and the
expression tree holds no subquery, window function or star. The SQL that runs is then
*regenerated from the checked tree* (``json_deserialize_sql``), not pasted from the
user's text, so what was checked is what runs. Column names are bound later, against
the reports' columns: an unknown one is a one-line error.
"""

from __future__ import annotations

import functools

import json

from designer.errors import first_line

#: Expression classes refused inside --where (reading other tables, windows, ``*``).
REFUSED_CLASSES = {"SUBQUERY", "WINDOW", "STAR"}
_TEMPLATE = "SELECT * FROM t WHERE "


def quote_identifier(name: str) -> str:
    """``name`` as a quoted SQL identifier (``"`` doubled), whatever it contains."""
    return '"' + name.replace('"', '""') + '"'


def parse_by(text: str | None) -> tuple[str, ...]:
    """``--by COL[,COL]`` as column names (``ValueError`` for an empty or repeated name)."""
    if not text:
        return ()
    names = tuple(name.strip() for name in text.split(","))
    if any(not name for name in names):
        raise ValueError(f"--by {text}: empty column name (write COL or COL1,COL2)")
    if len(set(names)) != len(names):
        raise ValueError(f"--by {text}: a column is named twice")
    return names


@functools.lru_cache(maxsize=32)  # a pure function of the text, asked by several layers of one run
def check_where(expression: str) -> str:
    """The canonical SQL of a checked ``--where`` expression.

    Raises
    ------
    ValueError
        One line: a semicolon, a syntax error, more than a boolean expression, a subquery,
        a window function or ``*``.
    """
    import duckdb

    if ";" in expression:
        raise ValueError(f"--where {expression}: one expression, no ';'")
    connection = duckdb.connect()
    try:
        tree = json.loads(connection.execute("SELECT json_serialize_sql(?)", [_TEMPLATE + expression]).fetchone()[0])
        if tree["error"]:
            raise ValueError(f"--where {expression}: {first_line(tree['error_message'], 'it does not parse')}")
        template = json.loads(connection.execute("SELECT json_serialize_sql(?)", [_TEMPLATE + "true"]).fetchone()[0])
        statements = tree["statements"]
        if len(statements) != 1 or _without_where(statements[0]) != _without_where(template["statements"][0]):
            raise ValueError(f"--where {expression}: only a boolean expression is allowed "
                             "(no GROUP BY, UNION, LIMIT or other clause)")
        refused = _refused_class(statements[0]["node"]["where_clause"])
        if refused:
            raise ValueError(f"--where {expression}: {refused.lower()} expressions are not allowed")
        template["statements"][0]["node"]["where_clause"] = statements[0]["node"]["where_clause"]
        sql = connection.execute("SELECT json_deserialize_sql(?)", [json.dumps(template)]).fetchone()[0]
    finally:
        connection.close()
    return sql[len(_TEMPLATE):]


def _without_where(statement: dict) -> str:
    """The statement's JSON with the WHERE clause and source positions removed (the template's shape)."""
    node = dict(statement["node"], where_clause=None)
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
