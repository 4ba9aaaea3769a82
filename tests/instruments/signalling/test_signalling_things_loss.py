"""``load_things`` checks what its sources promise: THINGS has 1,854 concepts,
every other file has one row for each, SPoSE rows are in THINGS order. A loss beyond
``MAX_CONCEPT_LOSS`` is an error without ``allow_loss``; any loss is reported and warned about.

Two kinds of input: a copy of the shared data with one file cut at a row boundary (skips without
``../shared/data``), and small synthetic files in the real formats, written here.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import pytest
from sig_helpers import shared_data

from choiceaudit.instruments.signalling import (
    build_signalling_items,
)
from choiceaudit.instruments.signalling._norms import NormsFormatError
from choiceaudit.instruments.signalling._things import (
    _THINGS_FILES,
    MAX_CONCEPT_LOSS,
    PROPERTY_DIMENSIONS,
    THINGS_CONCEPTS,
    load_things,
)

# -- synthetic files in the real formats ---------------------------------------------------------


def _ids(n: int = THINGS_CONCEPTS) -> list[str]:
    return [f"concept_{i:04d}" for i in range(n)]


def write_things_dir(
    root: Path,
    *,
    things: Sequence[str] | None = None,
    properties: Sequence[str] | None = None,
    size: Sequence[str] | None = None,
    spose: Sequence[str] | None = None,
) -> Path:
    """A directory laid out like ``../shared/data``; each file lists the ids given (default:
    all 1,854 synthetic concepts), in the formats the real files use."""
    all_ids = _ids()
    things, properties = things or all_ids, properties or all_ids
    size, spose = size or all_ids, spose or all_ids
    for sub in ("things", "thingsplus", "spose"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    header = ["Word", "uniqueID", "Concreteness (M)", "SUBTLEX freq", "Dominant Part of Speech"]
    rows = ["\t".join(header)]
    rows += [f"{u.replace('_', ' ')}\t{u}\t4.5\t{10 + i}\tNoun" for i, u in enumerate(things)]
    (root / "things" / "things_concepts.tsv").write_bytes(("\r\n".join(rows) + "\r\n").encode())
    cols = ["uniqueID"] + [f"{d}_{s}" for d in PROPERTY_DIMENSIONS for s in ("mean", "sd")]
    lines = [",".join(f'"{c}"' for c in cols)]
    for i, u in enumerate(properties):
        values = [f"{1 + (i * 7 + j) % 60 / 10:.4f}" for j in range(len(cols) - 1)]
        lines.append(",".join(f'"{v}"' for v in [u, *values]))
    (root / "thingsplus" / "property_ratings_animacy.csv").write_text("\n".join(lines) + "\n")
    lines = ["word;uniqueID;meanSize;stdSize"]
    lines += [f"{u};{u.replace('_', ' ')};{100 + i % 300};{20.5}" for i, u in enumerate(size)]
    (root / "thingsplus" / "size_ratings_size_fixed.csv").write_text("\n".join(lines) + "\n")
    matrix = [f"{0.1 * (i % 9):.6f}\t{0.2 * (i % 5):.6f}" for i in range(len(spose))]
    (root / "spose" / "spose_embedding_66d_sorted.txt").write_text("\n".join(matrix) + "\n")
    (root / "spose" / "unique_id.txt").write_text("\n".join(spose) + "\n")
    (root / "spose" / "labels_66.txt").write_text("first\nsecond\n")
    return root


def _quiet_load(root: Path, **kw: bool) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean load warns about nothing
        return load_things(root, **kw)


def test_complete_synthetic_files_lose_nothing(tmp_path: Path) -> None:
    bundle = _quiet_load(write_things_dir(tmp_path))
    loss = bundle.loss  # type: ignore[attr-defined]
    assert (loss.expected, loss.usable, loss.lost, loss.threshold) == (1854, 1854, 0, 9)
    assert loss.lines() == []


def test_a_loss_within_the_threshold_loads_and_is_reported(tmp_path: Path) -> None:
    ids = _ids()
    root = write_things_dir(tmp_path, size=ids[MAX_CONCEPT_LOSS:])
    with pytest.warns(UserWarning, match=r"9 of the 1,854 concepts are missing from at least one"):
        bundle = load_things(root)
    assert (
        len(bundle) == 1854
    )  # the concepts stay in the bundle; the pool's intersection drops them
    assert bundle.loss is not None and bundle.loss.lost == 9 and bundle.loss.usable == 1845
    assert bundle.loss.reasons["size ratings: THINGS concepts without a row"] == 9
    assert "  size ratings: THINGS concepts without a row: 9 (e.g. concept_0000," in "\n".join(
        bundle.loss.lines()
    )


def test_a_loss_beyond_the_threshold_is_an_error_unless_allowed(tmp_path: Path) -> None:
    ids = _ids()
    unknown = [f"stranger_{i}" for i in range(4)]
    root = write_things_dir(tmp_path, size=ids[6:], properties=ids[:-4] + unknown)
    with pytest.raises(NormsFormatError) as info:
        load_things(root)
    message = str(info.value)
    assert "14 of the 1,854 concepts are missing from at least one file; 1,844 are in every" in (
        message
    )
    assert "property ratings: rows for concepts THINGS does not list: 4 (e.g. stranger_0" in message
    assert (
        "more than the 9 lost concepts a load accepts" in message and "allow_loss=True" in message
    )
    with pytest.warns(UserWarning, match="exceeded by explicit permission"):
        bundle = load_things(root, allow_loss=True)
    assert bundle.loss is not None and bundle.loss.allowed and bundle.loss.lost == 14


def test_a_short_things_table_counts_the_concepts_no_file_lists(tmp_path: Path) -> None:
    ids = _ids(1800)  # every file agrees, but THINGS promises 1,854
    root = write_things_dir(tmp_path, things=ids, properties=ids, size=ids, spose=ids)
    with pytest.raises(NormsFormatError, match="54 of the 1,854 concepts"):
        load_things(root)


def test_spose_rows_out_of_things_order_are_an_error(tmp_path: Path) -> None:
    ids = _ids()
    swapped = [ids[1], ids[0], *ids[2:]]
    root = write_things_dir(tmp_path, spose=swapped)
    with pytest.raises(
        NormsFormatError,
        match=r"not in THINGS order: concept 1 of those both list is "
        r"'concept_0001' here and 'concept_0000' in THINGS",
    ):
        load_things(root, allow_loss=True)  # not a loss: no flag makes misaligned rows usable


def test_a_ratings_row_longer_than_the_header_is_an_error(tmp_path: Path) -> None:
    root = write_things_dir(tmp_path)
    path = root / "thingsplus" / "size_ratings_size_fixed.csv"
    lines = path.read_text().splitlines()
    lines[3] += ";stray"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(NormsFormatError, match=r"row 4: row has more cells than the header's 4"):
        load_things(root)


# -- a truncated copy of the real data ---------------------------------------------------------------


def _real_copy(tmp_path: Path, *, keep_things_rows: int) -> Path:
    """The shared data with ``things_concepts.tsv`` cut at a row boundary (the other files
    linked, not copied)."""
    source = shared_data()
    for key, (sub, name) in _THINGS_FILES.items():
        (tmp_path / sub).mkdir(exist_ok=True)
        if key != "concepts":
            (tmp_path / sub / name).symlink_to(source / sub / name)
    raw = (source / "things" / "things_concepts.tsv").read_bytes()
    lines = raw.split(b"\r\n")
    cut = b"\r\n".join(lines[: 1 + keep_things_rows]) + b"\r\n"
    (tmp_path / "things" / "things_concepts.tsv").write_bytes(cut)
    return tmp_path


def test_real_data_loses_nothing() -> None:
    bundle = _quiet_load(shared_data())
    assert bundle.loss is not None and bundle.loss.lost == 0  # type: ignore[attr-defined]


def test_a_truncated_real_things_table_is_refused_then_built_with_the_loss_recorded(
    tmp_path: Path,
) -> None:
    root = _real_copy(tmp_path, keep_things_rows=1112)
    with pytest.raises(NormsFormatError, match=rf"{root}: THINGS norms: 742 of the 1,854 concepts"):
        build_signalling_items("things", data=root, seed=3, n_candidates=2_000, n_items=8)
    with pytest.warns(UserWarning, match="742 of the 1,854"):
        result = build_signalling_items(
            "things", data=root, seed=3, n_candidates=2_000, n_items=8, allow_loss=True
        )
    loss = result.items.config["pool"]["norms_loss"]
    assert (loss["lost"], loss["usable"], loss["allowed"]) == (742, 1112, True)
    assert loss["reasons"]["THINGS concept table: concepts short of the 1,854"] == 742
    assert loss["reasons"]["SPoSE: rows for concepts THINGS does not list"] == 742
    assert result.pool.steps[0] == ("concepts in the norms", 1112)
    assert result.loss_lines[0].startswith("THINGS norms: 742 of the 1,854 concepts are missing")
