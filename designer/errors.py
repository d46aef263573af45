"""One-line error messages: the first non-blank line of a message, never an empty string.

A lower layer that turns a library's exception into one of its own one-line errors uses
:func:`one_line`; ``str(error).splitlines()[0]`` raises :class:`IndexError` on an empty message
(``ValueError()``, ``OSError()``), which would turn a clean exit-2 error into a traceback. This
module imports nothing of ``designer``, so every layer (and the audit's worker process) may use it.
"""

from __future__ import annotations


def first_line(text: str, empty: str) -> str:
    """The first line of ``text`` that is not blank, without its surrounding white space.

    Parameters
    ----------
    text
        A message, possibly of several lines, possibly empty.
    empty
        What to answer when ``text`` has no non-blank line (it is returned as given).

    Returns
    -------
    str
        The first line (split as :meth:`str.splitlines` does) holding a non-white-space
        character, stripped; ``empty`` if there is none.
    """
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return empty


def one_line(error: BaseException) -> str:
    """The first non-blank line of ``error``'s message, stripped; its class name if it has none.

    ``one_line(ValueError())`` is ``"ValueError"``, ``one_line(OSError("\\n  no such file\\nmore"))``
    is ``"no such file"`` (see :func:`first_line`).
    """
    return first_line(str(error), type(error).__name__)
