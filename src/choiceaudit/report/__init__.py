"""Reports: tables (CSV, Markdown, LaTeX), figures (PNG, SVG + the CSV of plotted values) and a
self-contained HTML page, drawn from what the analyses computed on run directories."""

from choiceaudit.report._build import build_report
from choiceaudit.report._figures import ReportFigure
from choiceaudit.report._html import Section, write_report
from choiceaudit.report._runs import permutation_sweeps
from choiceaudit.report._screenshot import screenshot
from choiceaudit.report._tables import ReportTable

__all__ = [
    "ReportFigure",
    "ReportTable",
    "Section",
    "build_report",
    "permutation_sweeps",
    "screenshot",
    "write_report",
]
