from __future__ import annotations

import csv
import itertools
import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pytest

from choiceaudit import Query
from choiceaudit.audit import analyse_runs, run_scoring
from choiceaudit.report import ReportTable, build_report
from choiceaudit.scorers import FakeScorer
from choiceaudit.store import RunStore

GOLD_BONUS = 3.0


def sweep_queries(n_items: int = 6) -> list[Query]:
    queries = []
    for item in range(n_items):
        canon = [f"option {item}.{j}" for j in range(4)]
        for perm in itertools.permutations(range(4)):
            queries.append(
                Query(
                    state=f"item {item}",
                    options=tuple(canon[i] for i in perm),
                    perm=perm,
                    meta={"item_id": f"i{item}", "gold": 0},
                )
            )
    return queries


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report")
    queries = sweep_queries()
    gold = {f"option {i}.0": GOLD_BONUS for i in range(6)}
    # "slotty" always picks slot 0: no content at all, a large first-slot bias.
    run_scoring(
        FakeScorer(content={}, position_bias=[9.0], name="slotty"), queries, RunStore(root / "a")
    )
    run_scoring(FakeScorer(content=gold, name="reader"), queries, RunStore(root / "b"))
    build_report(analyse_runs([root / "a", root / "b"]), out=root / "out")
    return root / "out"


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def test_report_files_and_values(report_dir: Path) -> None:
    for stem in ("runs", "accuracy", "slot_shares", "order_audit"):
        for ext in ("csv", "md", "tex"):
            assert (report_dir / "tables" / f"{stem}.{ext}").stat().st_size > 0
    for ext in ("png", "svg", "csv"):
        assert (report_dir / "figures" / f"slot_shares.{ext}").stat().st_size > 0
    acc = {r["model"]: r for r in read_csv(report_dir / "tables" / "accuracy.csv")}
    # slotty picks slot 0, which shows the gold option in 6 of 24 orderings.
    assert float(acc["slotty"]["accuracy"]) == pytest.approx(0.25)
    assert float(acc["reader"]["accuracy"]) == pytest.approx(1.0)
    shares = [
        r for r in read_csv(report_dir / "figures" / "slot_shares.csv") if r["model"] == "slotty"
    ]
    assert [float(r["share"]) for r in shares] == [1.0, 0.0, 0.0, 0.0]
    order = {r["model"]: r for r in read_csv(report_dir / "tables" / "order_audit.csv")}
    # Slot 0 shows each canonical option in 6 of 24 orderings: the answer moves with the order.
    assert float(order["slotty"]["mean_distinct_choices"]) == pytest.approx(4.0)
    assert float(order["reader"]["answer_instability"]) == pytest.approx(0.0)
    assert float(order["reader"]["share_travel_le_1e-4"]) == pytest.approx(1.0)
    html = (report_dir / "index.html").read_text()
    assert "data:image/png;base64," in html and "Runs and provenance" in html


def test_table_formats_escape_and_round() -> None:
    table = ReportTable("t", "A & B", ("name", "value"), (("x_1", 0.123456), ("y|z", None)))
    assert "x\\_1 & 0.123" in table.to_latex() and r"A \& B" in table.to_latex()
    assert "| y\\|z | – |" in table.to_markdown()
    assert table.to_csv().splitlines() == ["name,value", "x_1,0.123456", "y|z,"]
    with pytest.raises(ValueError, match="row 0"):
        ReportTable("t", "t", ("a",), ((1, 2),))


def _chromium_or_skip() -> None:
    if shutil.which("chromium") and shutil.which("chromedriver"):
        return
    if os.environ.get("CI"):
        pytest.fail("CI must install chromium and chromium-driver (make test does)")
    pytest.skip("chromium / chromedriver not installed")


def test_report_renders_in_headless_chromium(report_dir: Path) -> None:
    _chromium_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    from choiceaudit.report import CHROMIUM_FLAGS, DOCS_URL

    options = Options()
    options.binary_location = shutil.which("chromium")  # type: ignore[assignment]
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag.replace("--headless", "--headless=new"))
    options.add_argument(f"--user-data-dir={report_dir.parent / 'chromium-profile'}")
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    try:
        driver.get((report_dir / "index.html").as_uri())
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.alt]);"
        )
        links = driver.execute_script("return Array.from(document.links).map(a => a.href);")
        driver.save_screenshot(str(report_dir.parent / "shot.png"))
    finally:
        driver.quit()
    assert images, "the report has no figures"
    assert all(done and width > 0 for done, width, _ in images), images
    assert links
    for href in links:
        url = urlparse(href)
        if url.scheme == "file":
            assert Path(unquote(url.path)).is_file(), f"broken link {href}"
        elif href.startswith(DOCS_URL):
            assert url.fragment, f"a definition link without its section: {href}"
        else:
            assert url.scheme == "" and url.fragment, f"unexpected link {href}"
    png = (report_dir.parent / "shot.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_screenshot(report_dir: Path, tmp_path: Path) -> None:
    _chromium_or_skip()
    from choiceaudit.report import screenshot

    shot = screenshot(report_dir / "index.html", tmp_path / "page.png", height=800)
    assert shot.read_bytes()[:4] == b"\x89PNG"
    assert np.frombuffer(shot.read_bytes()[16:24], dtype=">u4").tolist() == [1200, 800]
