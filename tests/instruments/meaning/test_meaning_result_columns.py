"""How the report flattens meaning's intervals and contrasts: one ``to_columns`` per type, and a
contrast offers its reverse orientation itself instead of the report flipping signs."""

from __future__ import annotations

from choiceaudit.instruments.meaning._results import PairedContrast
from choiceaudit.stats import Interval


def _contrast() -> PairedContrast:
    return PairedContrast(
        n_items=20,
        a=0.6,
        b=0.35,
        difference=0.25,
        low=0.05,
        high=0.4,
        mcnemar_b=7,
        mcnemar_c=2,
        mcnemar_p=0.18,
        n_tied_excluded=1,
    )


def test_interval_columns_name_the_estimate_and_its_bounds() -> None:
    cell = Interval(estimate=0.5, low=0.25, high=0.75, n_rows=40, n_items=20)
    assert cell.to_columns("lar") == {"lar": 0.5, "lar_low": 0.25, "lar_high": 0.75}
    assert list(cell.to_columns("accuracy", bounds="ci")) == ["accuracy", "ci_low", "ci_high"]


def test_reversed_contrast_reads_b_minus_a() -> None:
    c = _contrast().adjusted(3)
    r = c.reversed()
    assert (r.a, r.b, r.difference) == (0.35, 0.6, -0.25)
    assert (r.low, r.high) == (-0.4, -0.05)
    assert (r.mcnemar_b, r.mcnemar_c) == (2, 7)
    assert (r.mcnemar_p, r.mcnemar_p_bonferroni, r.n_tests) == (0.18, c.mcnemar_p_bonferroni, 3)
    assert (r.n_items, r.n_tied_excluded) == (20, 1)
    assert r.reversed() == c


def test_contrast_columns_carry_the_difference_in_the_orientation_asked() -> None:
    c = _contrast()
    assert c.to_columns("minus_intact") == {
        "minus_intact": 0.25,
        "minus_intact_low": 0.05,
        "minus_intact_high": 0.4,
    }
    assert c.reversed().to_columns("gap", bounds="ci") == {
        "gap": -0.25,
        "ci_low": -0.4,
        "ci_high": -0.05,
    }
