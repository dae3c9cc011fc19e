"""Jupyter notebooks as virtual Python modules: one per code cell, and changed cells written back.

Pure: bytes in, values or bytes out; no filesystem access.

**Which cells.** Code cells only, and only in notebooks whose language is Python (or unspecified).
Markdown and raw cells, outputs, execution counts and metadata are never touched. A cell whose
first line is a cell magic that makes the body something other than Python (``%%bash``,
``%%html``, ... anything not in :data:`PYTHON_CELL_MAGICS`) is skipped entirely; a cell that writes
a Python file (``%%writefile train.py``) is that file, a module of its own (:attr:`Cell.script`).

**Masking IPython syntax.** Cells may hold IPython syntax that is not Python: line magics
(``%matplotlib inline``), shell escapes (``!pip install x``), captured output (``x = !ls``,
``t = %timeit -o f()``), help (``model?``, ``?model``, ``torch.nn??``), the autocall escapes
(``,f a``, ``;f a``, ``/f a``) and, on the first line, Python-body cell magics (``%%time``). Such a
logical line can never be valid Python, so it is replaced, one physical line at a time, by a bare
name at the same indentation::

    %matplotlib inline        ->  __neuronize_magic_1__
    for f in files:                for f in files:
        !gzip {f}             ->       __neuronize_magic_2__

The cell then parses, has the same number of lines (finding line N is cell line N), and a rule
sees nothing it could match. Placeholders are unique per line, so :func:`write_cells` restores
each one exactly wherever it ends up, even if rules changed, added or deleted the code around it.
Their prefix is chosen so that it does not occur in the cell (``__neuronize_magic_`` unless the
cell already contains that text, then ``__neuronize_magic1_`` and so on); it is recomputed from
the original cell on write, so nothing but the notebook bytes needs to be kept between the calls.
A placeholder that a rule removed or duplicated makes the write fail rather than lose a magic.

**Writing back.** Only the JSON value of each changed cell's ``"source"`` is replaced, in place,
in its original form (a list of lines split like Jupyter, or one string), with the list layout,
indentation and ``ensure_ascii`` style of the file. Every other byte (key order, indentation,
trailing newline, escapes, number spellings) is left exactly as it was, and the result is parsed
again and compared with the intended notebook before it is returned.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Cell", "NotebookError", "PYTHON_CELL_MAGICS", "read_cells", "write_cells"]

#: Cell magics whose body is Python; the magic line is masked and the body migrated. Any other
#: cell magic (``%%bash``, ``%%html``, ``%%sql``, ``%%cython``...) skips the cell, but for
#: ``%%writefile`` of a ``.py`` file.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python", "python3"})

_ESCAPES = frozenset("%!?,;/")  # a logical line starting with one of these is IPython, not Python
#: the start of the name that stands in a cell's code for a masked IPython line (``%%time``)
MAGIC_PLACEHOLDER = "__neuronize_magic"
_BOM = "\ufeff"
_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, pos: int) -> int:
    """The position of the first non-whitespace character at or after ``pos``."""
    return _WS.match(text, pos).end()  # type: ignore[union-attr]  # `*` always matches
_PYTHON_LANGUAGE = re.compile(r"i?python\d*", re.IGNORECASE)
_CELL_MAGIC = re.compile(r"%%([\w.-]*)")
_NON_ASCII_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u(?!00[0-7])[0-9a-fA-F]{4}")
_DECODER = json.JSONDecoder()


class NotebookError(ValueError):
    """Invalid notebook: `message` is one line; `line` (1-based line in the JSON file) where known."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(frozen=True)
class Cell:
    index: int  # 1-based position among ALL cells of the notebook (what users count)
    source: bytes  # the cell's Python code, UTF-8, IPython magics masked, ends with "\n" if non-empty
    #: (line, text) of each masked IPython line (``!nvidia-smi``, ``%env X=1``), text unindented
    magics: tuple[tuple[int, str], ...] = ()
    #: the kernel restarts before this cell: a text cell since the code cell before it tells the
    #: reader to restart it, or that code cell shuts it down; nothing defined above is left
    restarts: bool = False
    #: the cell writes a Python file (``%%writefile train.py``, the magic masked): a module of its
    #: own, run apart from the notebook's namespace, which sees nothing the cells above bound and
    #: binds nothing for the cells below
    script: bool = False


# --- reading -------------------------------------------------------------------------------------


def read_cells(data: bytes) -> list[Cell]:
    """Code cells of a notebook whose language is Python (or unspecified). Raises NotebookError."""
    text, nb = _load(data)
    cells: list[Cell] = []
    restarts = False
    for index, cell in enumerate(nb["cells"], start=1):
        source = _editable_source(text, nb, index)
        if source is None:
            restarts = restarts or _asks_for_restart(cell)
            continue
        masked, table, _ = _mask(_with_final_newline(source))
        magics = tuple((number, table[body.strip()][0].strip())
                       for number, body in enumerate(masked.splitlines(), start=1) if body.strip() in table)
        script = any(map(_writes_script, _leading_magics(source)))
        cells.append(Cell(index, _encode(masked, text, index), magics, restarts, script))
        restarts = _SHUTS_DOWN.search(source) is not None if not script else restarts
    return cells


#: prose that tells the reader to restart the kernel ("Restart the kernel", "restart your runtime",
#: "Kernel > Restart")
_RESTART = re.compile(r"\brestart(?:ing)?\s+(?:the\s+|your\s+|this\s+)?(?:kernel|runtime|session|notebook)\b"
                      r"|\b(?:kernel|runtime)\s*(?:>|->|→)\s*restart", re.IGNORECASE)
#: code that ends the kernel: ``os._exit(0)``, ``app.kernel.do_shutdown(True)``
_SHUTS_DOWN = re.compile(r"^\s*(?:os\._exit\(|[\w.()]*kernel\.do_shutdown\()", re.MULTILINE)


def _asks_for_restart(cell: object) -> bool:
    """A text cell that tells the reader to restart the kernel."""
    if not isinstance(cell, dict) or cell.get("cell_type") != "markdown":
        return False
    source = cell.get("source")
    text = "".join(part for part in source if isinstance(part, str)) if isinstance(source, list) else source
    return isinstance(text, str) and _RESTART.search(text) is not None


def _load(data: bytes) -> tuple[str, dict[str, Any]]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise NotebookError(f"not a notebook: invalid UTF-8 at byte {exc.start}", line) from None
    body = text[1:] if text.startswith(_BOM) else text
    try:
        nb = json.loads(body)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise NotebookError("invalid notebook: JSON nested too deeply") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError('not a Jupyter notebook: no "cells" list')
    version = nb.get("nbformat", 4)
    if not isinstance(version, int) or isinstance(version, bool):
        raise NotebookError(f"not a Jupyter notebook: nbformat is {json.dumps(version)}")
    if version < 4:
        raise NotebookError(f"nbformat {version} notebooks are not supported (resave with Jupyter for nbformat 4)")
    return text, nb


def _notebook_is_python(nb: dict[str, Any]) -> bool:
    metadata = nb.get("metadata")
    if not isinstance(metadata, dict):
        return True
    for section, key in (("kernelspec", "language"), ("language_info", "name")):
        value = metadata.get(section)
        language = value.get(key) if isinstance(value, dict) else None
        if isinstance(language, str) and not _PYTHON_LANGUAGE.fullmatch(language.strip()):
            return False
    return True


def _editable_source(text: str, nb: dict[str, Any], index: int) -> str | None:
    """The raw source of cell ``index`` if it is a Python code cell neuronize may edit, else None."""
    if not _notebook_is_python(nb):
        return None
    cell = nb["cells"][index - 1]
    if not isinstance(cell, dict):
        raise NotebookError(f"invalid notebook: cell {index} is not a JSON object", _cell_line(text, index))
    if cell.get("cell_type") != "code":
        return None
    metadata = cell.get("metadata")
    vscode = metadata.get("vscode") if isinstance(metadata, dict) else None
    language = vscode.get("languageId") if isinstance(vscode, dict) else None
    if isinstance(language, str) and not _PYTHON_LANGUAGE.fullmatch(language):
        return None
    source = cell.get("source")
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        source = "".join(source)
    if not isinstance(source, str):
        what = "has no" if source is None else "has an invalid"
        raise NotebookError(f'invalid notebook: code cell {index} {what} "source"', _cell_line(text, index))
    # A Python-body cell magic's body may start with another cell magic: `%%capture` + `%%bash`.
    for line in _leading_magics(source):
        magic = _CELL_MAGIC.match(line)
        if magic is None or magic.group(1) not in PYTHON_CELL_MAGICS:
            return source if _writes_script(line) else None
    return source


def _writes_script(line: str) -> bool:
    """``line`` is ``%%writefile train.py`` (or its alias ``%%file``): the cell's body is a whole
    Python file (not with ``-a``, which appends a part of one)."""
    words = line.split()
    return len(words) == 2 and words[0] in ("%%writefile", "%%file") and words[1].strip("\"'").endswith(".py")


def _leading_magics(source: str) -> list[str]:
    """The cell magic lines a cell starts with (``%%capture out``, then ``%%writefile x.py``)."""
    lines = (line.strip() for line in source.splitlines() if line.strip())
    return list(itertools.takewhile(lambda line: line.startswith("%%"), lines))


def _with_final_newline(source: str) -> str:
    return source if not source or source.endswith("\n") else source + "\n"


def _encode(source: str, text: str, index: int) -> bytes:
    try:
        return source.encode("utf-8")
    except UnicodeEncodeError:
        message = f"invalid notebook: cell {index} contains an unpaired surrogate"
        raise NotebookError(message, _cell_line(text, index)) from None


# --- masking -------------------------------------------------------------------------------------


def _split_lines(text: str) -> list[tuple[str, str]]:
    """(body, end) per physical line; ``end`` is "\\n", "\\r\\n" or "" (a last line without newline)."""
    parts = text.split("\n")
    lines = [(chunk[:-1], "\r\n") if chunk.endswith("\r") else (chunk, "\n") for chunk in parts[:-1]]
    if parts[-1]:
        lines.append((parts[-1], ""))
    return lines


def _indent_of(body: str) -> str:
    return body[: len(body) - len(body.lstrip(" \t"))]


def _placeholder_prefix(text: str) -> str:
    n = 0
    while f"{MAGIC_PLACEHOLDER}{n or ''}_" in text:
        n += 1
    return f"{MAGIC_PLACEHOLDER}{n or ''}_"


class _Scanner:
    """Just enough of Python's tokenizer to know where logical lines start and end."""

    def __init__(self) -> None:
        self.quote: str | None = None  # the open string's delimiter
        self.depth = 0  # open brackets
        self.continued = False  # the previous line ended with a backslash
        self.last = ""  # last character of the logical line outside strings and comments

    @property
    def at_logical_start(self) -> bool:
        return self.quote is None and self.depth == 0 and not self.continued

    def feed(self, body: str) -> None:
        self.continued = False
        i, n = 0, len(body)
        while i < n:
            c = body[i]
            if self.quote is not None:
                if c == "\\":
                    if i == n - 1 and len(self.quote) == 1:
                        return  # backslash-newline inside a one-line string: it goes on
                    i += 2
                    continue
                if body.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                    self.last = '"'
                    continue
                i += 1
                continue
            if c == "#":
                break
            if c in "'\"":
                self.quote = c * 3 if body.startswith(c * 3, i) else c
                i += len(self.quote)
                continue
            if c == "\\" and i == n - 1:
                self.continued = True
                return
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(0, self.depth - 1)
            if not c.isspace():
                self.last = c
            i += 1
        if self.quote is not None and len(self.quote) == 1:
            self.quote = None  # unterminated one-line string: a syntax error; resynchronise


def _assigns_magic(stripped: str) -> bool:
    """``x = !cmd`` / ``x = %magic``: the first top-level ``=`` is followed by ``!`` or ``%``."""
    depth, quote, i, n = 0, None, 0, len(stripped)
    while i < n:
        c = stripped[i]
        if quote is not None:
            if c == "\\":
                i += 1
            elif stripped.startswith(quote, i):
                i += len(quote) - 1
                quote = None
        elif c == "#":
            return False
        elif c in "'\"":
            quote = c * 3 if stripped.startswith(c * 3, i) else c
            i += len(quote) - 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "=" and depth == 0:
            if stripped[i + 1 : i + 2] == "=" or (i and stripped[i - 1] in "=!<>:+-*/%&|^@"):
                i += 2 if stripped[i + 1 : i + 2] == "=" else 1
                continue
            return stripped[i + 1 :].lstrip()[:1] in ("!", "%")
        i += 1
    return False


def _mask(source: str) -> tuple[str, dict[str, tuple[str, str]], str]:
    """The source with IPython-only lines replaced by placeholders; placeholder -> (line, indent); prefix."""
    lines = _split_lines(source)
    prefix = _placeholder_prefix(source)
    table: dict[str, tuple[str, str]] = {}
    out = [body for body, _ in lines]

    def mask(number: int, indent: str) -> None:
        name = f"{prefix}{len(table) + 1}__"
        table[name] = (lines[number][0], indent)
        out[number] = indent + name

    scanner = _Scanner()
    logical_start, logical_indent = 0, ""
    k = 0
    while k < len(lines):
        body = lines[k][0]
        if scanner.at_logical_start:
            stripped = body.lstrip(" \t")
            indent = body[: len(body) - len(stripped)]
            if stripped[:1] in _ESCAPES or _assigns_magic(stripped):
                # IPython takes the command up to the end of its backslash-continued lines.
                mask(k, indent)
                while lines[k][0].endswith("\\") and k + 1 < len(lines):
                    k += 1
                    mask(k, indent)
                k += 1
                continue
            logical_start, logical_indent = k, indent
            scanner.last = ""
        scanner.feed(body)
        if scanner.at_logical_start and scanner.last == "?":  # trailing help: `obj?`, `obj??`
            for number in range(logical_start, k + 1):
                mask(number, logical_indent)
        k += 1
    masked = "".join(body + end for body, (_, end) in zip(out, lines, strict=False))
    return masked, table, prefix


def _unmask(source: str, table: dict[str, tuple[str, str]], prefix: str, index: int) -> str:
    """Put back the magics of ``table`` into a (possibly changed) masked source."""
    if not table:
        return source
    seen: set[str] = set()
    out = []
    for body, end in _split_lines(source):
        name = body.strip(" \t")
        if name in table:
            if name in seen:
                raise NotebookError(f"cell {index}: an IPython magic line was duplicated by the rewrite; not written")
            seen.add(name)
            original, indent = table[name]
            new_indent = _indent_of(body)
            if new_indent != indent and original.startswith(indent):
                original = new_indent + original[len(indent) :]
            body = original
        elif prefix in body:
            raise NotebookError(f"cell {index}: an IPython magic placeholder was moved into code; not written")
        out.append(body + end)
    missing = [table[name][0].strip() for name in table if name not in seen]
    if missing:
        raise NotebookError(f"cell {index}: the rewrite would drop the IPython line {missing[0]!r}; not written")
    return "".join(out)


# --- writing -------------------------------------------------------------------------------------


def write_cells(data: bytes, changed: dict[int, bytes]) -> bytes:
    """The notebook bytes with the code cells whose index is in `changed` replaced by the given
    (masked) sources, magics restored exactly. Everything else byte-identical where possible."""
    text, nb = _load(data)
    replacements: dict[int, str] = {}
    for index in sorted(changed):
        if not isinstance(index, int) or not 1 <= index <= len(nb["cells"]):
            raise NotebookError(f"cell {index} does not exist (the notebook has {len(nb['cells'])} cells)")
        original = _editable_source(text, nb, index)
        if original is None:
            raise NotebookError(f"cell {index} is not a Python code cell neuronize can edit")
        masked, table, prefix = _mask(_with_final_newline(original))
        try:
            new = changed[index].decode("utf-8")
        except UnicodeDecodeError:
            raise NotebookError(f"cell {index}: the new source is not valid UTF-8") from None
        if new == masked:
            continue
        new = _unmask(new, table, prefix, index)
        if not original.endswith("\n") and new.endswith("\n"):
            new = new[:-1]  # Jupyter keeps no newline after a cell's last line
        if new != original:
            replacements[index] = new
    if not replacements:
        return data

    layout = _Layout(text)
    ensure_ascii = _ensure_ascii(text)
    pieces, cursor = [], 0
    for index in sorted(replacements):
        start, end = layout.source_span(index)
        old_raw = text[start:end]
        pieces += [text[cursor:start], _render(replacements[index], old_raw, layout, start, ensure_ascii)]
        cursor = end
    pieces.append(text[cursor:])
    result = "".join(pieces)
    _verify(nb, result, replacements)
    return result.encode("utf-8")


def _ensure_ascii(text: str) -> bool:
    """Whether the file escapes non-ASCII characters (``json.dumps`` default) or keeps them (Jupyter)."""
    if not (text[1:] if text.startswith(_BOM) else text).isascii():
        return False
    return _NON_ASCII_ESCAPE.search(text) is not None


class _Layout:
    """Where each cell's ``"source"`` value lies in the file, and how the file is laid out."""

    def __init__(self, text: str):
        self.text = text
        start = _skip_ws(text, 1 if text.startswith(_BOM) else 0)
        members = self.members(start)
        self.separator = ", "  # after a comma between members: "\n " in Jupyter's files
        if len(members) > 1:
            between = text[members[0][2] : members[1][0]]
            self.separator = "," + between.split(",", 1)[1]
        cells = [m for m in members if m[3] == "cells"][-1]  # json.loads keeps the last duplicate
        self.cell_starts = [element_start for element_start, _ in self.elements(cells[1])]

    @property
    def inline_separator(self) -> str:
        return ", " if "\n" in self.separator else self.separator

    def source_span(self, index: int) -> tuple[int, int]:
        """(start, end) of cell ``index``'s ``"source"`` value (the cell is known to have one)."""
        found = [m for m in self.members(self.cell_starts[index - 1]) if m[3] == "source"]
        return found[-1][1], found[-1][2]

    def members(self, i: int) -> list[tuple[int, int, int, str]]:
        """(key start, value start, value end, key) for the members of the object at ``i``."""
        text, out = self.text, []
        i = _skip_ws(text, i + 1)
        while text[i] != "}":
            key_start = i
            key, i = _DECODER.raw_decode(text, i)
            i = _skip_ws(text, _skip_ws(text, i) + 1)  # past ':'
            _, end = _DECODER.raw_decode(text, i)
            out.append((key_start, i, end, key))
            i = _skip_ws(text, end)
            if text[i] == ",":
                i = _skip_ws(text, i + 1)
        return out

    def elements(self, i: int) -> list[tuple[int, int]]:
        """(start, end) of the elements of the array at ``i``."""
        text, out = self.text, []
        i = _skip_ws(text, i + 1)
        while text[i] != "]":
            _, end = _DECODER.raw_decode(text, i)
            out.append((i, end))
            i = _skip_ws(text, end)
            if text[i] == ",":
                i = _skip_ws(text, i + 1)
        return out

    def list_format(self, raw: str, start: int) -> tuple[str, str, str]:
        """(after "[", between items, before "]") for a list value ``raw`` found at ``start``."""
        elements = self.elements(start) if raw.startswith("[") else []
        if elements:
            opening = self.text[start + 1 : elements[0][0]]
            closing = self.text[elements[-1][1] : start + len(raw) - 1]
            if len(elements) > 1:
                between = self.text[elements[0][1] : elements[1][0]]
            else:
                between = "," + opening if "\n" in opening else self.inline_separator
            return opening, between, closing
        if "\n" not in self.separator:
            return "", self.inline_separator, ""
        newline = "\r\n" if "\r\n" in self.separator else "\n"
        unit = self.separator.split("\n", 1)[1]  # the top level's indentation is one unit
        line_start = self.text.rfind("\n", 0, start) + 1
        key_indent = _indent_of(self.text[line_start:start])
        return newline + key_indent + unit, "," + newline + key_indent + unit, newline + key_indent


def _render(source: str, old_raw: str, layout: _Layout, start: int, ensure_ascii: bool) -> str:
    """The JSON text of ``source`` in the form (list or string) and layout of ``old_raw``."""
    if old_raw.startswith('"'):
        return json.dumps(source, ensure_ascii=ensure_ascii)
    opening, between, closing = layout.list_format(old_raw, start)
    # Reuse the original spelling of unchanged lines, whatever escapes the writer used.
    spelled: dict[str, str] = {}
    for item_start, item_end in layout.elements(start):
        raw = layout.text[item_start:item_end]
        spelled.setdefault(json.loads(raw), raw)
    lines = source.splitlines(keepends=True)  # exactly how nbformat splits a source into lines
    if not lines:
        return "[]"
    items = [spelled.get(line) or json.dumps(line, ensure_ascii=ensure_ascii) for line in lines]
    return "[" + opening + between.join(items) + closing + "]"


def _verify(nb: dict[str, Any], result: str, replacements: dict[int, str]) -> None:
    """The new text must parse to the old notebook with exactly the intended sources changed."""
    def load(text: str) -> Any:
        return json.loads(text.lstrip(_BOM), parse_constant=lambda name: ("<constant>", name))

    expected = load(json.dumps(nb, allow_nan=True))
    for index, source in replacements.items():
        cell = expected["cells"][index - 1]
        cell["source"] = source.splitlines(keepends=True) if isinstance(cell["source"], list) else source
    try:
        actual = load(result)
    except ValueError:
        actual = None
    if actual != expected:
        raise NotebookError("internal error: the rewritten notebook did not check out; not written")


def _cell_line(text: str, index: int) -> int | None:
    """1-based line of the JSON file where cell ``index`` starts (None if it cannot be found)."""
    try:
        offset = _Layout(text).cell_starts[index - 1]
    except (ValueError, IndexError, KeyError):
        return None
    return text.count("\n", 0, offset) + 1


def file_line(data: bytes, cell: int, line: int) -> int | None:
    """1-based line of the notebook file holding line ``line`` of cell ``cell``'s source (the
    ``"source"`` list's element on that line, as Jupyter lays it out; else where the source
    starts). None if the notebook cannot be read."""
    try:
        text, _ = _load(data)
        layout = _Layout(text)
        start, _ = layout.source_span(cell)
        elements = layout.elements(start) if text[start] == "[" else []
    except (NotebookError, ValueError, IndexError, KeyError):
        return None
    offset = elements[line - 1][0] if 0 < line <= len(elements) else start
    return text.count("\n", 0, offset) + 1
