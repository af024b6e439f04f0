"""Reading a user's text file (data, predictions, submissions, ratings) the same way in every task.

What a user rightly expects to work, works: a UTF-8 byte-order mark (Windows editors write one) is skipped and CRLF
line endings read as LF. What cannot be read is a `DataError` naming the file (and, for bytes that are not UTF-8,
the line and column of the first one), never a traceback: a missing file, a folder where a file is expected, an
unreadable file. `shown` keeps a value quoted in an error line short, however large the record it came from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from emocaustics.core.errors import DataError

BOM = "\ufeff"
SHOWN = 80  # characters of a bad value quoted in an error message


def decode(data: bytes, file: str) -> str:
    """UTF-8 bytes -> text with LF line endings, a leading BOM dropped; other bytes -> DataError with line/column."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start].decode("utf-8", "replace")
        line = before.count("\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DataError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line} column {column} "
                        "(save the file as UTF-8)", file=file, record=f"line {line}") from None
    text = text.removeprefix(BOM)
    return text.replace("\r\n", "\n") if "\r" in text else text


def read_text(path: Path | str, *, what: str = "file") -> str:
    """The text of `path` (see the module docstring); `what` names the expected file in errors ("submission file")."""
    p = Path(path)
    if p.is_dir():
        raise DataError(f"is a folder; expected a {what}", file=str(p))
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise DataError(f"no such {what}", file=str(p)) from None
    except OSError as exc:  # permissions, a device, ...
        raise DataError(f"cannot read the {what} ({exc.strerror or exc})", file=str(p)) from None
    return decode(data, str(p))


def read_json(path: Path | str, *, what: str = "JSON file") -> Any:
    """The JSON value of `path` (`read_text`'s text, `parse_json`'s value): every problem a DataError naming the file."""
    return parse_json(read_text(path, what=what), str(path))


def parse_json(text: str, file: str) -> Any:
    """The JSON value of `text`; a DataError naming `file` and the line and column where it stops being JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})", file=file,
                        record=f"line {exc.lineno}") from None


def shown(value: Any, limit: int = SHOWN) -> str:
    """repr(value), cut to `limit` characters with the full length said: error lines stay one short line."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def json_lines(text: str) -> list[tuple[int, Any, str | None]]:
    """(line number, parsed JSON or None, problem) for each non-blank line of a JSON-lines text."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((n, json.loads(line), None))
        except json.JSONDecodeError as exc:
            out.append((n, None, f"not JSON ({exc.msg} at column {exc.colno})"))
    return out
