"""Errors a user acts on. Each is printed as one line by the command line (exit status 2), never as a traceback."""

from __future__ import annotations


class UsageError(Exception):
    """A user mistake (bad path, unknown subset, bad spec): printed as one line, exit status 2."""


class DataError(UsageError):
    """Bad input data: names the file, the record and the field (whichever are known)."""

    def __init__(self, message: str, *, file: str | None = None, record: str | int | None = None,
                 field: str | None = None) -> None:
        self.file, self.record, self.field, self.detail = file, record, field, message
        where = ", ".join(p for p in (file and str(file), record is not None and f"record {record}",
                                      field and f"field {field!r}") if p)
        super().__init__(f"{where}: {message}" if where else message)
