"""Reports: tables (CSV, Markdown, LaTeX), figures (PNG, SVG + the CSV of plotted values) and a
self-contained HTML page, laid out from the typed results of the instruments' analyses (``choiceaudit.audit.analyse_runs``);
nothing here computes a statistic."""

from choiceaudit.report._build import build_report
from choiceaudit.report._figures import ReportFigure
from choiceaudit.report._gate import gate_section
from choiceaudit.report._html import Section, write_report
from choiceaudit.report._screenshot import CHROMIUM_FLAGS, screenshot
from choiceaudit.report._tables import DOCS_URL, Computed, ReportTable

__all__ = [
    "CHROMIUM_FLAGS",
    "DOCS_URL",
    "Computed",
    "ReportFigure",
    "ReportTable",
    "Section",
    "build_report",
    "gate_section",
    "screenshot",
    "write_report",
]
