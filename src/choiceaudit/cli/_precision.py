"""``choiceaudit check precision``: a causal LM's noise floor in reduced precision against
float32, and float32's agreement with a float64 reference."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from choiceaudit.audit import REFERENCE_TOLERANCE
from choiceaudit.cli._app import guarded, out, parse_options
from choiceaudit.cli._groups import check_app

__all__ = ["check_precision_command"]


@check_app.command("precision")
@guarded
def check_precision_command(
    model: Annotated[str, typer.Argument(help="Causal LM spec: smollm2, hf:<dir|gguf|hub id>.")],
    dtype: Annotated[
        str, typer.Option(help="The reduced precision to measure: bfloat16 or float16.")
    ] = "bfloat16",
    queries: Annotated[
        Path | None, typer.Option(help="A JSONL query file to sample (its first --n queries).")
    ] = None,
    items: Annotated[
        Path | None, typer.Option(help="A frozen signalling item directory to sample instead.")
    ] = None,
    n: Annotated[int, typer.Option("--n", help="Queries scored in both precisions.")] = 64,
    n_reference: Annotated[
        int, typer.Option(help="Of those, queries checked in float32 against float64.")
    ] = 8,
    option: Annotated[
        list[str] | None,
        typer.Option("--option", "-o", help="Scorer option key=value (device, batching)."),
    ] = None,
    tolerance: Annotated[
        float,
        typer.Option(
            help="Largest float32 |Δ| from float64 counted as rounding (not the paper's: "
            "ours, documented in the precision guide)."
        ),
    ] = REFERENCE_TOLERANCE,
) -> None:
    """Measure a causal LM's noise floor in reduced precision.

    Scores a sample of queries in the reduced precision and in float32, batched as a run
    batches them, and prints per scoring rule the |Δ score| per option (median, 95th
    percentile, largest) and the share of queries whose choice flips: the noise floor. Then
    checks float32 against a float64 reference computed without the engine's batching, padding
    or cache, on a smaller sample: that distance must be rounding; above the stated tolerance it
    is a bug, and the command exits with status 1. Without --queries or --items the sample is a
    small signalling item set built on the Lancaster norms.

    Example:

    \b
      choiceaudit check precision smollm2 --dtype bfloat16 --n 32
      choiceaudit check precision hf:/models/Qwen3-8B -o device=cuda --queries mc.jsonl
    """
    from choiceaudit.audit import check_precision

    report = check_precision(
        model,
        dtype=dtype,
        queries=queries,
        items=items,
        n_queries=n,
        n_reference=n_reference,
        scorer_options=parse_options(option or []),
        tolerance=tolerance,
    )
    for title, shifts, count in (
        (f"{report.dtype} against float32 (the noise floor)", report.floor, report.n_queries),
        ("float32 against the float64 reference", report.reference, report.n_reference),
    ):
        table = Table(title=f"{title}: {report.model}, {count} queries from {report.source}")
        columns = ("rule", "options", "not finite", "median |Δ|", "p95 |Δ|", "max |Δ|", "flips")
        for column in columns:
            table.add_column(column)
        for s in shifts:
            table.add_row(
                s.rule,
                str(s.n_options),
                str(s.n_not_finite),
                f"{s.median_abs:.3g}",
                f"{s.p95_abs:.3g}",
                f"{s.max_abs:.3g}",
                f"{s.flips}/{s.n_queries}",
            )
        out.print(table)
    if report.reference_skipped:
        out.print(f"float32 against float64: not checked ({report.reference_skipped})")
        return
    verdict = "within" if report.reference_ok else "ABOVE"
    out.print(
        f"float32 against float64: largest |Δ| {report.reference_max_abs:.3g}, {verdict} the "
        f"tolerance {report.tolerance:g}"
        + (
            "" if report.reference_ok else ": a bug, not a precision effect; do not read the scores"
        ),
        highlight=False,
    )
    if not report.reference_ok:
        raise typer.Exit(1)
