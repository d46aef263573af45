"""Input and output files: :mod:`designer.io.reading` (strict parsers with file/row/column
errors) and :mod:`designer.io.writing` (atomic, all-or-nothing writers)."""

from designer.io.reading import (
    InputError,
    Table,
    read_channel,
    read_matrix,
    read_privacy_matrix,
    read_table,
    read_vector,
)
from designer.io.writing import (
    format_number,
    json_writer,
    matrix_csv_writer,
    write_files,
    write_json,
    write_matrix_csv,
)

__all__ = [
    "InputError",
    "Table",
    "format_number",
    "json_writer",
    "matrix_csv_writer",
    "read_channel",
    "read_matrix",
    "read_privacy_matrix",
    "read_table",
    "read_vector",
    "write_files",
    "write_json",
    "write_matrix_csv",
]
