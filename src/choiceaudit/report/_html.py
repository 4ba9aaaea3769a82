"""The self-contained HTML report: figures embedded as data URIs, tables inline, each run's
manifest and provenance, a method note per section and what was skipped and why."""

from __future__ import annotations

import base64
import datetime as dt
import html
import json
from dataclasses import dataclass, field
from pathlib import Path

from choiceaudit.files import make_dir
from choiceaudit.report._figures import ReportFigure
from choiceaudit.report._tables import DOCS_URL, ReportTable
from choiceaudit.types import Manifest

__all__ = ["Section", "write_report"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:right}th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}
figure{margin:1.2em 0}figcaption{font-weight:600;margin-bottom:.3em}
img{max-width:100%;height:auto;border:1px solid #eee}
.note,.method{color:#444;font-size:.9em}.method{background:#f8f8f8;padding:.6em .8em;border-left:3px solid #888}
.files a{margin-right:.8em;font-size:.85em}.skipped{color:#8a4b00}
pre{background:#f6f6f6;padding:.6em;overflow:auto;font-size:.8em;max-height:28em}
nav a{margin-right:1em}
"""


@dataclass
class Section:
    """One part of the report (an instrument on one or more runs)."""

    key: str
    title: str
    method: str
    figures: list[ReportFigure] = field(default_factory=list)
    tables: list[ReportTable] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    runs: list[tuple[str, Manifest]] = field(default_factory=list)  # (run dir, manifest)
    #: per-item tables, written as CSV only (``items/<name>.csv``) and linked, not shown: one
    #: row per item is for comparing item by item, not for reading in a page
    item_tables: list[ReportTable] = field(default_factory=list)


def _files(links: dict[str, Path], root: Path) -> str:
    parts = [
        f'<a href="{html.escape(p.relative_to(root).as_posix())}">{kind.upper()}</a>'
        for kind, p in links.items()
    ]
    return f'<div class="files">{"".join(parts)}</div>'


def _figure_html(fig: ReportFigure, paths: dict[str, Path], root: Path, docs_url: str) -> str:
    data = base64.b64encode(paths["png"].read_bytes()).decode("ascii")
    caption = f'<p class="note">{html.escape(fig.caption)}</p>' if fig.caption else ""
    if fig.data.computed is not None:
        caption += fig.data.computed.to_html(fig.data.name, docs_url)
    return (
        f'<figure id="figure-{html.escape(fig.name)}"><figcaption>{html.escape(fig.title)}</figcaption>'
        f'<img alt="{html.escape(fig.title)}" src="data:image/png;base64,{data}">'
        f"{caption}{_files(paths, root)}</figure>"
    )


def _provenance(runs: list[tuple[str, Manifest]]) -> str:
    blocks = []
    for run_dir, manifest in runs:
        model = (manifest.scorer or {}).get("model", "?")
        rows = "?" if manifest.rows is None else manifest.rows
        status = "?" if manifest.status is None else manifest.status
        summary = (
            f"{html.escape(run_dir)} — model {html.escape(str(model))}, "
            f"{rows} rows, status {html.escape(str(status))}, "
            f"commit {html.escape(str(manifest.git_commit or 'unknown'))}"
        )
        if manifest.truncated_rows:
            summary += (
                f" — <strong>{int(manifest.truncated_rows)} row(s) scored on a truncated "
                "input</strong> (the model read only part of the text; see each row's aux)"
            )
        text = json.dumps(
            manifest.to_json(), indent=2, sort_keys=True, ensure_ascii=False, default=str
        )
        blocks.append(
            f"<details><summary>{summary}</summary><pre>{html.escape(text)}</pre></details>"
        )
    return "".join(blocks)


def write_report(
    sections: list[Section],
    out_dir: Path,
    *,
    title: str = "choiceaudit report",
    docs_url: str = DOCS_URL,
) -> Path:
    """Write every figure and table file and ``index.html``; return the HTML path. Each table
    and figure states what it computed and links its definition under ``docs_url``."""
    make_dir(out_dir)
    body: list[str] = []
    nav = " ".join(f'<a href="#{html.escape(s.key)}">{html.escape(s.title)}</a>' for s in sections)
    for section in sections:
        parts = [f'<section id="{html.escape(section.key)}"><h2>{html.escape(section.title)}</h2>']
        parts.append(f'<div class="method">{section.method}</div>')
        for fig in section.figures:
            paths = fig.write(out_dir / "figures")
            parts.append(_figure_html(fig, paths, out_dir, docs_url))
        for table in section.tables:
            paths = table.write(out_dir / "tables")
            parts.append(table.to_html(docs_url) + _files(paths, out_dir))
        if section.item_tables:
            links = []
            for table in section.item_tables:
                path = out_dir / "items" / f"{table.name}.csv"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(table.to_csv(), encoding="utf-8")
                href = html.escape(path.relative_to(out_dir).as_posix())
                links.append(
                    f'<li><a href="{href}">{html.escape(table.name)}.csv</a> — '
                    f"{html.escape(table.title)} ({len(table.rows)} rows)</li>"
                )
            parts.append(f"<h3>Per-item values</h3><ul>{''.join(links)}</ul>")
        if section.skipped:
            items = "".join(f"<li>{html.escape(s)}</li>" for s in section.skipped)
            parts.append(f'<h3>Skipped</h3><ul class="skipped">{items}</ul>')
        if section.runs:
            parts.append("<h3>Runs and provenance</h3>" + _provenance(section.runs))
        parts.append("</section>")
        body.append("".join(parts))
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    page = (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"
        f'<p class="note">Generated {stamp} by choiceaudit. Every number below is computed from the '
        f"run directories listed under each section; figures have a CSV of their plotted values.</p>"
        f"<nav>{nav}</nav>{''.join(body)}</body></html>"
    )
    index = out_dir / "index.html"
    index.write_text(page, encoding="utf-8")
    return index
