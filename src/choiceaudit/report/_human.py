"""The human condition's report section: people beside the models.

The people's row in Table I (the signalling section) is the crowd read as one chooser; this
section lays out the people's own analyses from
:class:`~choiceaudit.instruments.signalling.HumanAnalysis`: the population curve from the
population block, and each participant's strategy classification on the classification block
with its intervals. Every number comes from ``analyse_human_runs``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from choiceaudit.instruments.signalling import HumanAnalysis
from choiceaudit.report._html import Section
from choiceaudit.report._tables import Computed, ReportTable

__all__ = ["human_sections"]

PAGE = "instruments/signalling.md"
COUNTS = Computed(
    rule="each participant's strategy from their classification-block choices (salience, "
    "Bayes, random-like or unclassified, by where the exact intervals of their o_fit and o_bayes "
    "rates lie).",
    aggregation="participants per strategy.",
    n="column participants; the sum is the participants analysed.",
    page=PAGE,
    anchor="human_strategy_counts",
)
POPULATION = Computed(
    rule="each response's achieved post_norm and fit_norm on the population block's analysis set.",
    aggregation="mean within item, then over items; delta is the paired per-item difference from "
    "the random reference, with its item-bootstrap interval.",
    n="the items of the analysis set the people answered (column n_items).",
    page=PAGE,
    anchor="human_population",
)
POPULATION_BINS = Computed(
    rule="each response's achieved fit_norm on the population block.",
    aggregation="mean per fit_cost bin (§IV-D), within item, then over the bin's items.",
    n="the bin's items.",
    page=PAGE,
    anchor="human_population_fit_cost",
)
PARTICIPANTS = Computed(
    rule="a participant's choices on the classification block: o_fit and o_bayes rates.",
    aggregation="per participant: rates with exact (Clopper–Pearson) intervals beside the rate "
    "random selection gives; coordinate means with item-bootstrap intervals.",
    n="the participant's answered classification items.",
    page=PAGE,
    anchor="human_participants",
)


_METHOD = """<p>The human condition (condition 8, §V): people saw the frozen renderings exactly as a
chooser receives them (the two candidate lists with the target pair marked, then the tile's
options and the forced-choice question; Appendix C) and their responses were imported as one
run. In the signalling section that run is the row <code>{chooser}</code>: per rendering, the
people's choice distribution read as one chooser (its modal option; an exact tie scores the
mean over the tied options). Here each response counts. <b>Population curve</b>: the population
block's responses on the analysis set ({set_label}), averaged within item, then over items, with
the paired item bootstrap against the random reference. <b>Strategy classification</b>: per
participant on the classification block (the same conflict items for everyone), the share of
choices on <code>o_fit</code> and on <code>o_bayes</code> with exact {level:.0%} intervals beside
the rate random selection gives; salience when the <code>o_fit</code> interval lies above its
random rate and above the <code>o_bayes</code> interval, Bayes symmetrically, random-like when
both intervals contain their random rates, otherwise unclassified. Participants analysed:
{n}; left out at import: {excluded}. Instrument hash <code>{hash}</code>.</p>"""


def _section(a: HumanAnalysis, key: str) -> Section:
    tables = []
    counts = [{"strategy": s, "participants": n} for s, n in a.counts.items()]
    tables.append(
        ReportTable.from_records(
            f"human_strategy_counts{key}",
            "People: strategies on the classification block",
            counts,
            computed=COUNTS,
        )
    )
    if a.population is not None:
        p = asdict(a.population)
        bins = p.pop("bins")
        tables.append(
            ReportTable.from_records(
                f"human_population{key}",
                f"People: population curve ({a.set_label})",
                [p],
                note="delta = paired per-item difference from the random reference, [low, high] its interval.",
                computed=POPULATION,
            )
        )
        if bins:
            tables.append(
                ReportTable.from_records(
                    f"human_population_fit_cost{key}",
                    "People: achieved fit_norm by fit_cost bin (population block, §IV-D)",
                    bins,
                    computed=POPULATION_BINS,
                )
            )
    if a.participants:
        tables.append(
            ReportTable.from_records(
                f"human_participants{key}",
                "People: per-participant strategy classification",
                [asdict(x) for x in a.participants],
                note="rates with exact (Clopper–Pearson) intervals; coordinate means with item-bootstrap intervals.",
                computed=PARTICIPANTS,
            )
        )
    excluded = ", ".join(f"{n} {why}" for why, n in a.excluded.items() if n) or "none"
    return Section(
        key=f"human{key}",
        title="The human condition: people beside the models" + (f" ({key[1:]})" if key else ""),
        method=_METHOD.format(
            chooser=a.chooser,
            set_label=a.set_label,
            level=a.level,
            n=a.n_participants,
            excluded=excluded,
            hash=a.instrument_hash[:16],
        ),
        tables=tables,
        skipped=[str(s) for s in a.skipped],
    )


def human_sections(analyses: Sequence[HumanAnalysis]) -> list[Section]:
    """One section per imported human run."""
    keyed = len(analyses) > 1
    return [_section(a, f"-{n}" if keyed else "") for n, a in enumerate(analyses, start=1)]
