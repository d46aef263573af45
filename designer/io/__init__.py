"""Input and output files: :mod:`designer.io.reading` (one reader layer for every input,
strict, with file/row/column errors, and a fast float path) and :mod:`designer.io.writing`
(atomic, all-or-nothing writers)."""

from designer.io.graph import read_graph
from designer.io.labels import check_same_labels, labelled_writer, labels_line
from designer.io.reading import (
    InputError,
    NumberTable,
    Table,
    read_channel,
    read_matrix,
    read_numbers,
    read_privacy_matrix,
    read_table,
    read_vector,
)
from designer.io.writing import (
    Destination,
    OutputError,
    check_destinations,
    check_outputs_spare_inputs,
    format_number,
    json_writer,
    matrix_csv_writer,
    write_files,
    write_json,
    write_matrix_csv,
)

__all__ = [
    "Destination",
    "check_destinations",
    "check_outputs_spare_inputs",
    "check_same_labels",
    "InputError",
    "OutputError",
    "NumberTable",
    "Table",
    "format_number",
    "json_writer",
    "labelled_writer",
    "labels_line",
    "matrix_csv_writer",
    "read_channel",
    "read_graph",
    "read_matrix",
    "read_numbers",
    "read_privacy_matrix",
    "read_table",
    "read_vector",
    "write_files",
    "write_json",
    "write_matrix_csv",
]
