"""``choiceaudit build signalling`` and ``choiceaudit run signalling`` (issue 5 item 10).

``build`` freezes an item set (``freeze_instrument``: items, prompts, tiles, fit family, pool,
rendering and analysis battery, with a content hash). :func:`run_signalling` is the plain
function behind ``run`` (``choiceaudit demo`` reuses it): it takes a frozen item directory or
builds one into ``<out>/.items`` (hidden, so ``<out>/*`` is a list of runs), renders the frozen
queries once and scores them with each model and reference chooser into its own run directory
``<out>/<model or chooser>``. Each run records ``config["items_hash"]`` and keeps a copy of the
item directory in ``<run>/instrument``; the report refuses a run whose hash differs from it.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from choiceaudit.cli import _fail, console, out, parse_options, progress_bar
from choiceaudit.cli._groups import build_app, run_app
from choiceaudit.instruments.signalling import (
    INSTRUMENT_FILE,
    BayesOracleChooser,
    CosineChooser,
    FrozenInstrument,
    InstrumentMismatchError,
    NormsFormatError,
    SalienceChooser,
    UniformChooser,
    amend_instrument,
    analysis_set_label,
    build_signalling_items,
    freeze_instrument,
    load_instrument,
    read_amendments,
)
from choiceaudit.scorers import Scorer, ScorerError, load_scorer
from choiceaudit.store import RunStore, StoreError, run_scoring

__all__ = [
    "CHOOSERS",
    "DEFAULT_SEED",
    "build_instrument",
    "make_chooser",
    "print_signalling_summary",
    "run_signalling",
    "signalling_summary",
]

#: Reference choosers by their command-line name (§I-K).
CHOOSERS: tuple[str, ...] = ("cosine", "uniform", "salience", "bayes")
DEFAULT_SEED = 20260901
ITEMS_DIR = ".items"

ProgressCallback = Callable[[str, int, int], None]


def _n_candidates(n_items: int) -> int:
    # The paper draws 200,000 candidates for 1,000 items; smaller sets keep the same ratio.
    return 200_000 if n_items >= 1000 else max(20_000, 200 * n_items)


def build_instrument(
    norms: str,
    out_dir: Path | str,
    *,
    data: Path | str | None = None,
    seed: int = DEFAULT_SEED,
    n_items: int = 1000,
    n_candidates: int | None = None,
    tiles: str | None = None,
) -> FrozenInstrument:
    """Build the item set from the norms and freeze it into ``out_dir``."""
    if norms not in ("things", "lancaster"):
        raise ValueError(f"unknown norms {norms!r}; use things or lancaster")
    if (Path(out_dir) / INSTRUMENT_FILE).exists():  # refuse before spending the build
        raise FileExistsError(
            f"{out_dir} already holds a frozen instrument; amend it (--amend) or use a new --out"
        )
    result = build_signalling_items(
        norms,  # type: ignore[arg-type]
        seed=seed,
        data=data,
        tiles=tiles,
        n_candidates=n_candidates or _n_candidates(n_items),
        n_items=n_items,
    )
    return freeze_instrument(result.items, out_dir)


def make_chooser(name: str, frozen: FrozenInstrument) -> Scorer:
    """A reference chooser over the frozen items: cosine (MiniLM), uniform, salience, bayes."""
    items = frozen.items
    if name == "uniform":
        return UniformChooser()
    if name == "salience":
        return SalienceChooser(items)
    if name == "bayes":
        return BayesOracleChooser(items)
    if name == "cosine":
        embedder = load_scorer("minilm")
        return CosineChooser(items, embedder.embed, model="minilm")  # type: ignore[attr-defined]
    raise ValueError(f"unknown chooser {name!r}; use one of {', '.join(CHOOSERS)}")


def _dir_name(prefix: str, spec: str) -> str:
    return prefix + re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("_")


def _resolve_items(
    out_root: Path,
    items: Path | str | None,
    *,
    norms: str,
    data: Path | str | None,
    seed: int,
    n_items: int,
    n_candidates: int | None,
) -> FrozenInstrument:
    if items is not None:
        return load_instrument(items)
    item_dir = out_root / ITEMS_DIR
    if not (item_dir / INSTRUMENT_FILE).exists():
        return build_instrument(
            norms, item_dir, data=data, seed=seed, n_items=n_items, n_candidates=n_candidates
        )
    frozen = load_instrument(item_dir)
    want = {"norms": norms, "seed": seed, "n_items": n_items}
    have = {k: frozen.record.get(k) for k in want}
    if have != want:
        raise InstrumentMismatchError(
            f"{item_dir} was frozen with {have}, not {want}; use another --out or --items"
        )
    return frozen


def run_signalling(
    models: Sequence[str | Scorer],
    choosers: Sequence[str],
    out_root: Path | str,
    *,
    norms: str = "lancaster",
    data: Path | str | None = None,
    items: Path | str | None = None,
    n_items: int = 1000,
    n_candidates: int | None = None,
    seed: int = DEFAULT_SEED,
    conditions: Sequence[str] = ("4", "5"),
    formats: Sequence[str] = ("V", "L"),
    label_forms: Sequence[str] = ("bare",),
    chunk_size: int = 32,
    scorer_options: dict[str, Any] | None = None,
    command: Sequence[str] | None = None,
    progress: ProgressCallback | None = None,
) -> list[Path]:
    """Score the frozen renderings with every model (a spec for ``load_scorer``, or a loaded
    scorer) and reference chooser; return the run directories (models first, then choosers, in
    the order given). A second call resumes each run."""
    if not models and not choosers:
        raise ValueError("give at least one --model or --chooser")
    for name in choosers:
        if name not in CHOOSERS:
            raise ValueError(f"unknown chooser {name!r}; use one of {', '.join(CHOOSERS)}")
    root = Path(out_root)
    frozen = _resolve_items(
        root, items, norms=norms, data=data, seed=seed, n_items=n_items, n_candidates=n_candidates
    )
    queries = frozen.render(conditions=conditions, formats=formats, label_forms=label_forms)
    base = {
        "instrument": "signalling",
        "items_hash": frozen.hash,
        "items_dir": str(frozen.path.resolve()),
        "norms": frozen.record.get("norms"),
        "seed": frozen.record.get("seed"),
        "n_items": len(frozen.items),
        "conditions": list(conditions),
        "formats": list(formats),
        "label_forms": list(label_forms),
    }
    jobs: list[tuple[str, dict[str, Any], Callable[[], Scorer]]] = []
    for spec in models:
        if isinstance(spec, str):
            jobs.append(
                (
                    _dir_name("", spec),
                    {**base, "model": spec},
                    lambda spec=spec: load_scorer(spec, **(scorer_options or {})),  # type: ignore[misc]
                )
            )
        else:  # an already-loaded scorer, named by its description
            desc = spec.describe()
            name = str(desc.get("model") or desc.get("name") or type(spec).__name__)
            jobs.append((_dir_name("", name), {**base, "model": name}, lambda s=spec: s))  # type: ignore[misc]
    for name in choosers:
        jobs.append(
            (_dir_name("", name), {**base, "chooser": name}, lambda n=name: make_chooser(n, frozen))  # type: ignore[misc]
        )
    run_dirs = []
    for dirname, config, factory in jobs:
        store = RunStore(root / dirname)
        if store.exists() and store.manifest().get("config", {}).get("items_hash") != frozen.hash:
            raise InstrumentMismatchError(
                f"{store.path} holds a run on other items; choose a new --out"
            )
        scorer = factory()
        frozen.copy_to(store.path / "instrument")
        label = str(config.get("model") or config.get("chooser"))

        def advance(done: int, total: int, label: str = label) -> None:
            if progress is not None:
                progress(label, done, total)

        run_scoring(
            scorer,
            queries,
            store,
            chunk_size=chunk_size,
            command=command,
            config=config,
            on_progress=advance,
        )
        run_dirs.append(store.path)
    return run_dirs


def signalling_summary(run_dirs: Sequence[Path]) -> list[dict[str, Any]]:
    """Table I records (see ``report._signalling.signalling_cells``) for the runs."""
    from choiceaudit.report import load_run
    from choiceaudit.report._signalling import analyse_signalling_run, signalling_cells

    analysed = [analyse_signalling_run(load_run(p)) for p in run_dirs]
    return signalling_cells(analysed)


def print_signalling_summary(run_dirs: Sequence[Path]) -> list[dict[str, Any]]:
    """Analyse the runs (one frozen instrument) and print the coordinate summary; returns the
    Table I records."""
    cells = signalling_summary(run_dirs)
    frozen = load_instrument(Path(run_dirs[0]) / "instrument", verify_files=False)
    _print_summary(cells, analysis_set_label(frozen.analysis["analysis_set"]))
    return cells


def _print_summary(cells: list[dict[str, Any]], set_label: str) -> None:
    table = Table(
        title=f"signalling coordinates on {set_label}",
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
        "o_fit",
        "o_bay",
    ):
        table.add_column(
            col, justify="left" if col in ("chooser", "rule") else "right", no_wrap=True
        )

    def f(x: Any, fmt: str = ".3f") -> str:
        # floating-point noise around zero prints as +0.000, not -0.000
        return "–" if x is None else format(0.0 if abs(x) < 1e-12 else x, fmt)

    for c in cells:
        table.add_row(
            c["chooser"],
            c["rule"],
            str(c["n_items"]),
            f(c["post_norm_mean"]),
            f(c["fit_norm_mean"]),
            f(c["delta_post_vs_random"], "+.3f") + ("†" if c["delta_excludes_zero"] else " "),
            f"[{f(c['delta_low'], '+.2f')}, {f(c['delta_high'], '+.2f')}]",
            f(c["excess"], "+.3f"),
            f(c["agree_o_fit"], ".2f"),
            f(c["agree_o_bayes"], ".2f"),
        )
    out.print(table)
    if cells:
        c = cells[0]
        out.print(
            f"post = mean post_norm (1 = Bayes pole), fit = mean fit_norm (1 = salience pole); "
            f"random reference post_norm {c['random_post_norm']:.3f} (SD "
            f"{c['random_post_norm_sd']:.3f}), salience pole post_norm "
            f"{c['salience_post_norm']:.3f}; † = 95% interval of Δ excludes 0",
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
NCandOpt = Annotated[
    int | None,
    typer.Option(
        "--n-candidates", help="Candidates to generate (default: 200 per item, ≥ 20,000)."
    ),
]


@build_app.command("signalling")
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
) -> None:
    """Build the signalling item set and freeze it (items, prompts, tiles, hash), or append a
    dated amendment to an existing freeze with --amend."""
    if amend is not None:
        try:
            entry = amend_instrument(out_dir, amend, author=author)
        except (ValueError, FileNotFoundError) as exc:
            raise _fail(str(exc)) from None
        out.print(
            f"{out_dir}: amendment of {entry['date']} appended "
            f"({len(read_amendments(out_dir))} in the log); hash unchanged "
            f"{entry['instrument_hash']}",
            highlight=False,
        )
        return
    start = time.perf_counter()
    try:
        frozen = build_instrument(
            norms,
            out_dir,
            data=data,
            seed=seed,
            n_items=n_items,
            n_candidates=n_candidates,
            tiles=tiles,
        )
    except (ValueError, FileNotFoundError, FileExistsError, NormsFormatError) as exc:
        raise _fail(str(exc)) from None
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
    out.print(
        f"{out_dir}: {rec['n_items']} items, {rec['n_prompts']} prompts, pool {rec['pool']['size']}, "
        f"analysis set: {rec['analysis']['analysis_set']['tile'] or 'all-tile'} conflict items; "
        f"hash {frozen.hash}; {time.perf_counter() - start:.1f} s"
    )
    for name, why in missing.items():
        out.print(f"covariate {name} unavailable: {why}")


@run_app.command("signalling")
def run_signalling_command(
    out_dir: Annotated[Path, typer.Option("--out", help="Root for one run directory each.")],
    model: Annotated[
        list[str] | None, typer.Option("--model", "-m", help="Model spec (repeatable): smollm2, …")
    ] = None,
    chooser: Annotated[
        list[str] | None,
        typer.Option(
            "--chooser", help="Reference chooser (repeatable): cosine, uniform, salience, bayes."
        ),
    ] = None,
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
        list[str] | None, typer.Option("--label-form", help="Format-L labels (default bare).")
    ] = None,
    option: Annotated[
        list[str] | None, typer.Option("--option", "-o", help="Scorer option key=value.")
    ] = None,
    chunk_size: Annotated[int, typer.Option(help="Queries per Parquet part.")] = 32,
) -> None:
    """Score the signalling items with models and reference choosers, then summarise."""
    timings: dict[str, list[float]] = {}
    try:
        with progress_bar() as bar:
            tasks: dict[str, Any] = {}

            def advance(label: str, done: int, total: int) -> None:
                if label not in tasks:
                    tasks[label] = bar.add_task(f"signalling: {label}", total=total)
                    timings[label] = [time.perf_counter(), 0.0, 0.0, float(total)]
                bar.update(tasks[label], completed=done, total=total)
                timings[label][1] = time.perf_counter()
                timings[label][2] = float(done)

            run_dirs = run_signalling(
                model or [],
                chooser or [],
                out_dir,
                norms=norms,
                data=data,
                items=items,
                n_items=n_items,
                n_candidates=n_candidates,
                seed=seed,
                conditions=condition or ("4", "5"),
                formats=fmt or ("V", "L"),
                label_forms=label_form or ("bare",),
                chunk_size=chunk_size,
                scorer_options=parse_options(option or []),
                command=["choiceaudit", *sys.argv[1:]],
                progress=advance,
            )
        start = time.perf_counter()
        print_signalling_summary(run_dirs)
        analysis_s = time.perf_counter() - start
    except (ValueError, FileNotFoundError, NormsFormatError, StoreError, ScorerError) as exc:
        raise _fail(str(exc)) from None
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
