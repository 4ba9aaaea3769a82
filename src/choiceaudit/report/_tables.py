"""Report tables: one value table written as CSV (full precision), Markdown, LaTeX and HTML."""

from __future__ import annotations

import csv
import html
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DOCS_URL", "Computed", "ReportTable", "format_cell"]

#: Where a report's "defined in" links point: the documentation site ``make docs`` serves; a
#: report built for readers elsewhere names the published site (``report --docs-url``).
DOCS_URL = "http://127.0.0.1:8000/"


@dataclass(frozen=True)
class Computed:
    """What a table's numbers are, as the report states beside it: the ``rule`` that turns a
    stored row into the value (which score, which choice), the ``aggregation`` over rows or
    items (and the interval), the ``n`` each number rests on, and the documentation ``page``
    whose section named after the table defines it and says how to read it (``anchor``, where a
    table's name varies, as one per model does, names that section instead)."""

    rule: str
    aggregation: str
    n: str
    page: str
    anchor: str = ""

    def section(self, table: str) -> str:
        """The anchor of the documentation's section on ``table``."""
        return self.anchor or table

    def href(self, table: str, docs_url: str = DOCS_URL) -> str:
        """The link to the table's section of the documentation site (``page.md#table``)."""
        return f"{docs_url.rstrip('/')}/{self.page.removesuffix('.md')}/#{self.section(table)}"

    def to_html(self, table: str, docs_url: str = DOCS_URL) -> str:
        where = f"docs/{self.page}#{self.section(table)}"
        return (
            '<p class="computed"><b>Computed.</b> '
            f"Rule: {html.escape(self.rule)} Aggregation: {html.escape(self.aggregation)} "
            f"n: {html.escape(self.n)} "
            f'Defined in <a href="{html.escape(self.href(table, docs_url))}">'
            f"{html.escape(where)}</a>.</p>"
        )


def format_cell(value: object, *, digits: int = 3) -> str:
    """Human formatting: floats to ``digits`` decimals, NaN/None as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return f"{value:.{digits}f}"
    return str(value)


_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _latex(text: str) -> str:
    return "".join(_LATEX_ESCAPES.get(ch, ch) for ch in text)


@dataclass(frozen=True)
class ReportTable:
    """A named table of values; ``name`` is the file stem, ``title`` the caption."""

    name: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]
    note: str = ""
    digits: int = 3
    computed: Computed | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "rows", tuple(tuple(r) for r in self.rows))
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(
                    f"table {self.name}: row {i} has {len(row)} cells for {len(self.columns)} columns"
                )

    @classmethod
    def from_records(
        cls,
        name: str,
        title: str,
        records: Sequence[Mapping[str, object]],
        *,
        note: str = "",
        digits: int = 3,
        computed: Computed | None = None,
    ) -> ReportTable:
        columns: list[str] = []
        for record in records:
            for key in record:
                if key not in columns:
                    columns.append(key)
        rows = tuple(tuple(record.get(c) for c in columns) for record in records)
        return cls(name, title, tuple(columns), rows, note=note, digits=digits, computed=computed)

    def records(self) -> list[dict[str, Any]]:
        """The rows back as column → value records, for the figures drawn from a table (their
        drawing code reads each column as the type it wrote)."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def to_csv(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow(
                ["" if v is None else repr(v) if isinstance(v, float) else v for v in row]
            )
        return buffer.getvalue()

    def _cells(self) -> list[list[str]]:
        return [[format_cell(v, digits=self.digits) for v in row] for row in self.rows]

    def to_markdown(self) -> str:
        def esc(text: str) -> str:
            return text.replace("|", r"\|")

        lines = [f"**{esc(self.title)}**", ""]
        lines.append("| " + " | ".join(esc(c) for c in self.columns) + " |")
        lines.append("|" + "|".join("---" for _ in self.columns) + "|")
        lines.extend("| " + " | ".join(esc(c) for c in cells) + " |" for cells in self._cells())
        if self.note:
            lines += ["", esc(self.note)]
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        spec = "l" * len(self.columns)
        body = [" & ".join(_latex(c) for c in self.columns) + r" \\", r"\midrule"]
        body.extend(" & ".join(_latex(c) for c in cells) + r" \\" for cells in self._cells())
        lines = [
            r"\begin{table}[t]",
            r"\centering",
            rf"\caption{{{_latex(self.title)}}}",
            rf"\label{{tab:{_latex(self.name)}}}",
            rf"\begin{{tabular}}{{{spec}}}",
            r"\toprule",
            *body,
            r"\bottomrule",
            r"\end{tabular}",
        ]
        if self.note:
            lines.append(rf"\par\footnotesize {_latex(self.note)}")
        lines.append(r"\end{table}")
        return "\n".join(lines) + "\n"

    def to_html(self, docs_url: str = DOCS_URL) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
            for cells in self._cells()
        )
        note = f'<p class="note">{html.escape(self.note)}</p>' if self.note else ""
        if self.computed is not None:
            note += self.computed.to_html(self.name, docs_url)
        return (
            f'<figure class="table" id="table-{html.escape(self.name)}">'
            f"<figcaption>{html.escape(self.title)}</figcaption>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}</figure>"
        )

    def write(self, directory: Path) -> dict[str, Path]:
        """Write ``<name>.csv``, ``.md`` and ``.tex`` into ``directory``; return their paths."""
        directory.mkdir(parents=True, exist_ok=True)
        paths = {
            "csv": directory / f"{self.name}.csv",
            "md": directory / f"{self.name}.md",
            "tex": directory / f"{self.name}.tex",
        }
        paths["csv"].write_text(self.to_csv(), encoding="utf-8")
        paths["md"].write_text(self.to_markdown(), encoding="utf-8")
        paths["tex"].write_text(self.to_latex(), encoding="utf-8")
        return paths
