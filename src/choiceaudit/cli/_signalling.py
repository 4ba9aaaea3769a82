"""``choiceaudit build signalling``, ``choiceaudit run signalling`` and ``choiceaudit check
signalling``: parse options, call :func:`choiceaudit.audit.build_instrument` /
:func:`choiceaudit.audit.run_signalling` / :func:`choiceaudit.audit.check_signalling`, print."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from choiceaudit.audit import (
    DEFAULT_SEED,
    MAX_FLIP_RATE,
    analyse_runs,
    build_instrument,
    check_signalling,
    run_signalling,
)
from choiceaudit.cli._app import (
    AcceptFlipsOpt,
    MaxFlipRateOpt,
    PrecisionGateOpt,
    RayGpusOpt,
    RayOpt,
    RayWorkersOpt,
    WorkersOpt,
    console,
    guarded,
    labelled_progress,
    out,
    parse_options,
    precision_settings,
    print_precision,
    progress_bar,
    ray_settings,
)
from choiceaudit.cli._conformance import print_conformance
from choiceaudit.cli._groups import build_app, check_app, run_app
from choiceaudit.instruments.signalling import (
    RobustnessConfig,
    SignallingAnalysis,
    load_instrument,
)
from choiceaudit.instruments.signalling.frozen import amend_instrument, read_amendments

__all__ = ["print_signalling_summary", "signalling_summary"]


def signalling_summary(run_dirs: Sequence[Path]) -> tuple[SignallingAnalysis, ...]:
    """The signalling analyses of the runs (``audit.analyse_runs``: one per frozen item set)."""
    return tuple(r for r in analyse_runs(run_dirs) if isinstance(r, SignallingAnalysis))


def print_signalling_summary(analyses: Sequence[SignallingAnalysis]) -> None:
    """Print the coordinate summary of each analysis (one per frozen item set)."""
    for analysis in analyses:
        _print_summary(analysis)


def _print_summary(analysis: SignallingAnalysis) -> None:
    """Table I of one analysis as a terminal table (formatting only)."""
    cells = analysis.cells
    table = Table(
        title=f"signalling coordinates on {analysis.set_label}",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        show_edge=False,
    )
    for col in (
        "chooser",
        "rule",
        "n",
        "post",
        "fit",
        "Δ rand",
        "95% CI",
        "excess",
        "ex_n",
        "o_fit",
        "o_bay",
    ):
        table.add_column(
            col, justify="left" if col in ("chooser", "rule") else "right", no_wrap=True
        )

    def f(x: float | None, fmt: str = ".3f") -> str:
        # floating-point noise around zero prints as +0.000, not -0.000; undefined as –
        if x is None or x != x:
            return "–"
        return format(0.0 if abs(x) < 1e-12 else x, fmt)

    for c in cells:
        table.add_row(
            c.chooser,
            c.rule,
            str(c.n_items) + (f"/{c.n_analysis_items}*" if c.n_items != c.n_analysis_items else ""),
            f(c.post_norm_mean),
            f(c.fit_norm_mean),
            f(c.delta_post_vs_random, "+.3f") + ("†" if c.delta_excludes_zero else " "),
            f"[{f(c.delta_low, '+.2f')}, {f(c.delta_high, '+.2f')}]",
            f(c.excess, "+.3f"),
            str(c.excess_n_items),
            f(c.agree_o_fit, ".2f"),
            f(c.agree_o_bayes, ".2f"),
        )
    out.print(table)
    if cells:
        c = cells[0]
        out.print(
            f"post = mean post_norm (1 = Bayes pole), fit = mean fit_norm (1 = salience pole); "
            f"random reference post_norm {f(c.random_post_norm)} (SD "
            f"{f(c.random_post_norm_sd)}), salience pole post_norm "
            f"{f(c.salience_post_norm)}; † = 95% interval of Δ excludes 0; excess over the "
            "ex_n items holding both permutations, ties by split credit",
            highlight=False,
        )
    with_cells = {c.chooser for c in cells}
    for a in analysis.arms:
        if a.batch_of is None and a.chooser not in with_cells:
            out.print(
                f"* {a.chooser}: scored {a.n_covered_items} of the {a.n_analysis_items} "
                f"analysis-set items, so it has no row above (run {a.run}, status {a.status})",
                highlight=False,
            )
    for c in cells:
        if c.n_items != c.n_analysis_items:
            why = "allowed by --allow-partial-coverage" if c.partial_coverage else "uncovered"
            out.print(
                f"* {c.chooser}/{c.rule}: scored {c.n_items} of the {c.n_analysis_items} items "
                f"({why}; its figures are on those items only, §I-B)",
                highlight=False,
            )


NormsOpt = Annotated[
    str, typer.Option("--norms", help="Norms bundle: lancaster (offline) or things.")
]
DataOpt = Annotated[
    Path | None,
    typer.Option("--data", help="Directory with the THINGS files (for --norms things)."),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Experiment seed (items, permutations).")]
NItemsOpt = Annotated[int, typer.Option("--n-items", help="Items to select (paper: 1000).")]
AllowLossOpt = Annotated[
    bool,
    typer.Option(
        "--allow-loss",
        help="Build even if the THINGS files lose more concepts than the loader's threshold "
        "(the loss is printed and recorded in the frozen item set).",
    ),
]
OptionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-o",
        help="Scorer option key=value (repeatable); each backend accepts only its own, e.g. -o dtype=bfloat16 -o max_batch_rows=16 (hf), -o truncate=true (sparrow, minilm), -o base_url=… (systemone). An unknown option is an error that lists the accepted ones.",
    ),
]
SwowOpt = Annotated[
    Path | None,
    typer.Option(
        "--swow",
        help="SWOW-EN strength file (strength.SWOW-EN.R123.csv): enters the pool intersection "
        "before any filtering (§I-B) and feeds conditions 2 and 6.",
    ),
]
ConceptNetOpt = Annotated[
    Path | None,
    typer.Option(
        "--conceptnet",
        help="ConceptNet assertions dump (conceptnet-assertions-5.x.csv[.gz]) for conditions 3 "
        "and 6.",
    ),
]
NCandOpt = Annotated[
    int | None,
    typer.Option(
        "--n-candidates", help="Candidates to generate (default: 200 per item, ≥ 20,000)."
    ),
]


@build_app.command("signalling")
@guarded
def build_signalling(
    out_dir: Annotated[Path, typer.Option("--out", help="Item directory to freeze into.")],
    norms: NormsOpt = "lancaster",
    data: DataOpt = None,
    seed: SeedOpt = DEFAULT_SEED,
    n_items: NItemsOpt = 1000,
    n_candidates: NCandOpt = None,
    tiles: Annotated[
        str | None, typer.Option("--tiles", help="Tile file (TOML path or shipped name).")
    ] = None,
    amend: Annotated[
        str | None,
        typer.Option(
            "--amend",
            help="Append this dated amendment to the frozen item directory --out (no rebuild).",
        ),
    ] = None,
    author: Annotated[str | None, typer.Option(help="Author recorded with --amend.")] = None,
    allow_loss: AllowLossOpt = False,
    swow: SwowOpt = None,
    override_tile_screen: Annotated[
        bool,
        typer.Option(
            "--override-tile-screen",
            help="Build from the tile file although the §I-C screen selects other dimensions "
            "(recorded in the frozen item set).",
        ),
    ] = False,
    min_fit_cost: Annotated[
        float | None,
        typer.Option(help="Optional filter: conflict items give up at least this fit (recorded)."),
    ] = None,
    min_bayes_margin: Annotated[
        float | None,
        typer.Option(help="Optional filter: relative lead of o_bayes over the next option."),
    ] = None,
    require_decay_agreement: Annotated[
        bool,
        typer.Option(help="Optional filter: conflict status equal under both decay families."),
    ] = False,
) -> None:
    """Build and freeze the signalling item set.

    Writes the items, prompts, tiles and their hash into --out, or appends a dated amendment
    to an existing freeze with --amend.

    Example:

    \b
      choiceaudit build signalling --norms lancaster --n-items 200 --out items
    """
    if amend is not None:
        entry = amend_instrument(out_dir, amend, author=author)
        out.print(
            f"{out_dir}: amendment of {entry['date']} appended "
            f"({len(read_amendments(out_dir))} in the log); hash unchanged "
            f"{entry['instrument_hash']}",
            highlight=False,
        )
        return
    start = time.perf_counter()
    frozen = build_instrument(
        norms,
        out=out_dir,
        data=data,
        seed=seed,
        n_items=n_items,
        n_candidates=n_candidates,
        tiles=tiles,
        allow_loss=allow_loss,
        swow=swow,
        override_tile_screen=override_tile_screen,
        filters=RobustnessConfig(
            min_fit_cost=min_fit_cost,
            min_bayes_margin=min_bayes_margin,
            require_decay_agreement=require_decay_agreement,
        ),
    )
    rec = frozen.record
    tiles_count: dict[str, list[int]] = {}
    for item in frozen.items:
        tiles_count.setdefault(str(item.meta["tile"]), [0, 0])[bool(item.meta["conflict"])] += 1
    table = Table(title=f"frozen signalling items ({rec['norms']}, seed {rec['seed']})")
    for col in ("tile", "conflict", "control"):
        table.add_column(col, justify="left" if col == "tile" else "right")
    for tile, (control, conflict) in tiles_count.items():
        table.add_row(tile, str(conflict), str(control))
    out.print(table)
    missing = rec["covariates"]["unavailable"]
    pool_size = rec["pool"]["size"] if rec["pool"] is not None else "?"
    unselected = rec["candidates"]["unselected"] if rec["candidates"] is not None else 0
    out.print(
        f"{out_dir}: {rec['n_items']} items, {rec['n_prompts']} prompts, pool {pool_size}, "
        f"analysis set: {rec['analysis']['analysis_set']['tile'] or 'all-tile'} conflict items; "
        f"hash {frozen.hash}; {time.perf_counter() - start:.1f} s"
    )
    for name, why in missing.items():
        out.print(f"covariate {name} unavailable: {why}")
    config = frozen.items.config
    filters = config.get("selection_filters") or {}
    out.print(
        "selection filters: "
        + (", ".join(f"{k}={v}" for k, v in filters.items()) if filters else "none (the paper's)")
        + f"; tiles decided by {config['tile_screen']['decision']['decided_by']}; "
        f"{unselected:,} unselected candidates in candidates.parquet",
        highlight=False,
    )


ChooserOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--chooser",
        help="Chooser (repeatable), by condition: cosine (1), swow (2), conceptnet (3), "
        "rsa:swow / rsa:conceptnet (6; rsa:cosine and rsa:<model> are refused with the "
        "reason), bayes (7), and the uniform and salience references. Conditions 4 and 5 "
        "are --model runs.",
    ),
]

PartialCoverageOpt = Annotated[
    bool,
    typer.Option(
        "--allow-partial-coverage",
        help="Score an association chooser (swow, conceptnet, rsa:*) on the items its "
        "source covers although it cannot score every frozen item (§I-B refuses that by "
        "default); recorded in the run and shown beside its figures.",
    ),
]

BatchOneOpt = Annotated[
    bool,
    typer.Option(
        "--batch-one",
        help="Also score every model one query per forward pass (<model>-batch1); the "
        "report gives the batch-1 flip rate per tile (§I-K scores the size tile so).",
    ),
]


@run_app.command("signalling")
@guarded
def run_signalling_command(
    out_dir: Annotated[Path, typer.Option("--out", help="Root for one run directory each.")],
    model: Annotated[
        list[str] | None, typer.Option("--model", "-m", help="Model spec (repeatable): smollm2, …")
    ] = None,
    chooser: ChooserOpt = None,
    items: Annotated[
        Path | None, typer.Option("--items", help="A frozen item directory (else one is built).")
    ] = None,
    norms: NormsOpt = "lancaster",
    data: DataOpt = None,
    seed: SeedOpt = DEFAULT_SEED,
    n_items: NItemsOpt = 1000,
    n_candidates: NCandOpt = None,
    condition: Annotated[
        list[str] | None, typer.Option("--condition", help="Conditions (default 4 and 5).")
    ] = None,
    fmt: Annotated[
        list[str] | None, typer.Option("--format", help="Formats (default V and L).")
    ] = None,
    label_form: Annotated[
        list[str] | None,
        typer.Option(
            "--label-form",
            help="Format-L label forms (default both: bare A and (A), §IV-H4).",
        ),
    ] = None,
    option: OptionOpt = None,
    allow_loss: AllowLossOpt = False,
    swow: SwowOpt = None,
    conceptnet: ConceptNetOpt = None,
    chunk_size: Annotated[int, typer.Option(help="Queries per Parquet part.")] = 32,
    allow_partial_coverage: PartialCoverageOpt = False,
    batch_one: BatchOneOpt = False,
    ray: RayOpt = None,
    ray_workers: RayWorkersOpt = None,
    ray_gpus_per_worker: RayGpusOpt = 0.0,
    workers: WorkersOpt = 1,
    precision_gate: PrecisionGateOpt = True,
    max_flip_rate: MaxFlipRateOpt = MAX_FLIP_RATE,
    accept_flips: AcceptFlipsOpt = False,
) -> None:
    """Run the signalling instrument on models and references.

    Scores the signalling items with each model and reference chooser (resumable), then
    prints the summary table; `choiceaudit report` lays out the runs.

    Example:

    \b
      choiceaudit run signalling -m smollm2 --chooser salience --out runs/sig
    """
    timings: dict[str, list[float]] = {}
    with progress_bar() as bar:
        draw = labelled_progress(bar, "signalling")

        def advance(label: str, done: int, total: int) -> None:
            draw(label, done, total)
            # first and last report of each arm, for the rates printed after the summary
            timings.setdefault(label, [time.perf_counter(), 0.0, 0.0, float(total)])
            timings[label][1:4] = [time.perf_counter(), float(done), float(total)]

        run_dirs = run_signalling(
            model or [],
            chooser or [],
            out=out_dir,
            norms=norms,
            data=data,
            items=items,
            n_items=n_items,
            n_candidates=n_candidates,
            seed=seed,
            conditions=condition or ("4", "5"),
            formats=fmt or ("V", "L"),
            label_forms=label_form or ("bare", "paren"),
            chunk_size=chunk_size,
            scorer_options=parse_options(option or []),
            command=["choiceaudit", *sys.argv[1:]],
            ray=ray_settings(ray, ray_workers, ray_gpus_per_worker),
            workers=workers,
            precision_gate=precision_settings(precision_gate, max_flip_rate, accept_flips),
            batch_one=batch_one,
            allow_partial_coverage=allow_partial_coverage,
            progress=advance,
            allow_loss=allow_loss,
            swow=swow,
            conceptnet=conceptnet,
        )
    start = time.perf_counter()
    print_signalling_summary(signalling_summary(run_dirs))
    analysis_s = time.perf_counter() - start
    print_precision(run_dirs)
    n_items_run = len(load_instrument(run_dirs[0] / "instrument", verify_files=False).items)
    for label, (t0, t1, _done, total) in timings.items():
        out.print(
            f"{label}: {total:.0f} queries, {t1 - t0:.1f} s scoring "
            f"({(t1 - t0) / max(n_items_run, 1):.2f} s per item, "
            f"{(t1 - t0) / max(total, 1):.3f} s per query)",
            highlight=False,
        )
    out.print(f"analysis {analysis_s:.1f} s; runs: {' '.join(str(p) for p in run_dirs)}")
    console.print(f"report: choiceaudit report {out_dir}/* --out REPORT_DIR", highlight=False)


@check_app.command("signalling")
@guarded
def check_signalling_command(
    norms: NormsOpt = "things",
    data: DataOpt = None,
    seed: SeedOpt = DEFAULT_SEED,
    n_candidates: Annotated[
        int, typer.Option("--n-candidates", help="Candidates (paper: 200,000).")
    ] = 200_000,
    n_items: NItemsOpt = 1000,
    swow: SwowOpt = None,
    allow_loss: AllowLossOpt = False,
    seeds: Annotated[
        int,
        typer.Option(
            "--seeds",
            help="Item-set draws (seeds --seed, --seed+1, …), at least 10; every number is "
            "reported over them.",
        ),
    ] = 20,
    strict: Annotated[
        bool,
        typer.Option(help="Exit with status 1 when any independent row is outside its tolerance."),
    ] = False,
) -> None:
    """Check the signalling instrument against its paper.

    Prints the paper's value beside the measured one, with its tolerance, for every number the
    paper reports that needs no model (pool, tile screen, conflict and tie rates, references,
    deciles, slopes), over several item-set seeds.

    Example:

    \b
      choiceaudit check signalling --norms lancaster --n-candidates 20000 --n-items 100
    """
    report = check_signalling(
        norms,
        data=data,
        seed=seed,
        n_candidates=n_candidates,
        n_items=n_items,
        swow=swow,
        allow_loss=allow_loss,
        seeds=seeds,
    )
    print_conformance(report)
    if strict and report.outside:
        raise typer.Exit(1)
