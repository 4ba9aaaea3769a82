"""Whether a report's tables and figures say what they computed: each states its rule,
aggregation and n (a :class:`~choiceaudit.report.Computed`) and links a section of the docs,
named after the table, that exists."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from choiceaudit.report import ReportTable, Section

DOCS = Path(__file__).resolve().parents[1] / "docs"


def slug(heading: str) -> str:
    """A heading's anchor as MkDocs makes it (Python-Markdown's ``toc`` slugify)."""
    text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


@cache
def anchors(page: str) -> frozenset[str]:
    text = (DOCS / page).read_text("utf-8")
    return frozenset(slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE))


def undocumented(sections: Iterable[Section]) -> list[str]:
    """Every table or figure of ``sections`` that does not state what it computed, or whose
    documentation section does not exist, with why."""
    problems = []
    for section in sections:
        tables: list[tuple[str, ReportTable]] = [(f"table {t.name}", t) for t in section.tables]
        tables += [(f"figure {f.name}", f.data) for f in section.figures]
        for what, table in tables:
            c = table.computed
            if c is None:
                problems.append(f"{section.key}: {what} states nothing it computed")
                continue
            if not (c.rule and c.aggregation and c.n):
                problems.append(f"{section.key}: {what} leaves its rule, aggregation or n empty")
            if not (DOCS / c.page).is_file():
                problems.append(f"{section.key}: {what} links docs/{c.page}, which is missing")
            elif c.section(table.name) not in anchors(c.page):
                problems.append(
                    f"{section.key}: {what} links docs/{c.page}#{c.section(table.name)}, "
                    "which has no such section"
                )
    return problems
