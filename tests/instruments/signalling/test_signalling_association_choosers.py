"""Association baselines: ConceptNet path scoring (condition 3) and the SWOW walk (condition 2)."""

from __future__ import annotations

import numpy as np
import pytest

from choiceaudit.instruments.signalling._analysis import (
    cell_summary,
    coordinate_table,
)
from choiceaudit.instruments.signalling._association_choosers import (
    ConceptNetPathChooser,
    SwowWalkChooser,
    option_content_words,
)
from choiceaudit.instruments.signalling._associations import (
    AssociationStrengths,
    ConceptNetEdges,
)
from choiceaudit.instruments.signalling._render import (
    render_queries,
)
from choiceaudit.instruments.signalling._rsa import (
    IneligibleBaseError,
    rsa_speaker,
)
from choiceaudit.instruments.signalling._rsa_chooser import (
    RSAChooser,
)
from choiceaudit.instruments.signalling.choosers import CosineChooser, UniformChooser
from choiceaudit.types import Item

OPTIONS = ("stays still", "moves a little", "moves")


def _item(target_words: tuple[str, str] = ("kettle", "lemon")) -> Item:
    return Item(
        id="sig-moves-000001",
        options=OPTIONS,
        meta={
            "tile": "moves",
            "question": "Do the two objects move by themselves?",
            "means": ["kettle", "rope"],
            "clues": ["lemon", "cloud"],
            "target_words": list(target_words),
            "perms": ["201", "120"],
            "fit": [1.0, 0.5, 0.2],
            "posterior": [0.02, 0.03, 0.01],
            "o_bayes": 1,
            "conflict": True,
        },
    )


def _edges(pairs: list[tuple[str, str]]) -> ConceptNetEdges:
    return ConceptNetEdges(
        start=[a for a, _ in pairs],
        end=[b for _, b in pairs],
        relation=["/r/RelatedTo"] * len(pairs),
        weight=[1.0] * len(pairs),
    )


GRAPH = _edges(
    [
        ("kettle", "still"),
        ("lemon", "tree"),
        ("tree", "still"),
        ("kettle", "water"),
        ("water", "river"),
        ("river", "moves"),
        ("lemon", "moves"),
    ]
)


def test_content_words_drop_stopwords_and_the_tile_frame() -> None:
    assert option_content_words(OPTIONS) == [("stays", "still"), ("moves", "little"), ("moves",)]
    frame = option_content_words(["about the size of a pea", "about the size of a bus"])
    assert frame == [("pea",), ("bus",)]


def test_conceptnet_pair_hops_and_inert_decay() -> None:
    item = _item()
    queries = render_queries([item])
    chooser = ConceptNetPathChooser([item], GRAPH, decay=0.5)
    q = queries[0]  # display order: moves, stays still, moves a little
    # stays still: kettle 1 hop, lemon 2 → 2; moves (a little): kettle 3, lemon 1 → 3
    assert chooser.pair_hops(q) == [3.0, 2.0, 3.0]
    d = chooser.score([q])[0]
    np.testing.assert_allclose(d.scores["path"], [0.125, 0.25, 0.125])
    assert q.canonical(d.choice()[0]) == 0
    for decay in (0.1, 0.9):
        other = ConceptNetPathChooser([item], GRAPH, decay=decay).score(queries)
        assert [x.choice() for x in other] == [x.choice() for x in chooser.score(queries)]
    with pytest.raises(ValueError, match="decay"):
        ConceptNetPathChooser([item], GRAPH, decay=1.0)


def test_conceptnet_uncovered_items_are_flagged_and_excluded() -> None:
    covered = _item()
    uncovered = Item(
        id="sig-moves-000002",
        options=OPTIONS,
        meta={**covered.meta, "target_words": ["kettle", "unknownword"]},
    )
    chooser = ConceptNetPathChooser([covered, uncovered], GRAPH)
    queries = render_queries([covered, uncovered])
    ds = chooser.score(queries)
    assert [d.aux["covered"] for d in ds] == [True, True, False, False]
    np.testing.assert_allclose(ds[2].probs, 1 / 3)
    rows = coordinate_table([covered, uncovered], queries, ds, rules=["probs"])
    s = cell_summary(rows, seed=0, n_resamples=50)
    assert s.n_uncovered_rows == 2 and s.n_items == 1 and s.n_renderings == 2
    with pytest.raises(ValueError, match="no rows"):
        cell_summary([r for r in rows if r.item_id == uncovered.id], seed=0, n_resamples=50)


def _swow() -> AssociationStrengths:
    return AssociationStrengths(
        {
            "kettle": {"water": 0.5, "still": 0.3, "tea": 0.2},
            "lemon": {"fruit": 0.6, "moves": 0.4},
            "still": {"quiet": 0.7, "water": 0.3},
            "moves": {"dance": 1.0},
            "water": {"river": 1.0},
            "fruit": {"apple": 1.0},
            "quiet": {"still": 1.0},
            "dance": {"moves": 1.0},
            "river": {"water": 1.0},
            "apple": {"fruit": 1.0},
        },
        "R123",
    )


def test_swow_profiles_match_a_dense_power_series() -> None:
    chooser = SwowWalkChooser([_item()], _swow(), alpha=0.75, steps=30)
    p = chooser.transition.toarray()
    np.testing.assert_allclose(p.sum(axis=1), 1.0)  # every cue here has a cue response
    e = np.zeros(p.shape[0])
    e[chooser.index["kettle"]] = 1.0
    dense = sum(0.75**r * (e @ np.linalg.matrix_power(p, r)) for r in range(1, 31))
    profile = chooser.profile("kettle")
    assert profile is not None
    np.testing.assert_allclose(profile, dense / np.linalg.norm(dense))
    assert chooser.profile("nonsense") is None


def test_swow_chooser_takes_pair_minimum_of_best_word_cosine() -> None:
    item = _item()
    chooser = SwowWalkChooser([item], _swow())
    q = render_queries([item])[0]
    sims = chooser.pair_similarity(q)
    prof = chooser.profile
    expected = []
    for words in option_content_words(q.options):
        vecs = [prof(w) for w in words if prof(w) is not None]
        expected.append(min(max(float(v @ prof(t)) for v in vecs) for t in ("kettle", "lemon")))  # type: ignore[operator]
    np.testing.assert_allclose(sims, expected)
    d = chooser.score([q])[0]
    assert d.aux["covered"] is True and d.choice() == tuple(
        np.flatnonzero(np.isclose(sims, max(sims)))
    )


def test_swow_option_without_a_cue_word_leaves_the_query_uncovered() -> None:
    strengths = _swow()
    del strengths.strength["still"]  # "stays still" now has no cue word
    for cue in strengths.strength.values():
        cue.pop("still", None)
    item = _item()
    d = SwowWalkChooser([item], strengths).score(render_queries([item]))[0]
    assert d.aux["covered"] is False


RSA_GRAPH = _edges(
    [
        ("kettle", "still"),
        ("rope", "still"),
        ("rope", "moves"),
        ("lemon", "tree"),
        ("tree", "still"),
        ("lemon", "moves"),
        ("cloud", "moves"),
    ]
)


def _rsa_item(target: tuple[int, int] = (0, 0)) -> Item:
    item = _item()
    return Item(id=item.id, options=item.options, meta={**item.meta, "target": list(target)})


def test_rsa_over_conceptnet_matches_rsa_speaker_on_the_hypothesis_matrix() -> None:
    item = _rsa_item()
    base = ConceptNetPathChooser([item], RSA_GRAPH, decay=0.5)
    q = render_queries([item])[0]
    mat = base.hypothesis_matrix(q)
    assert mat is not None and mat.shape == (3, 4)  # 3 options × (2 Means × 2 Clues)
    # displayed "stays still": kettle 1, rope 1, lemon 2, cloud 3 hops → pair minimum of d^K
    np.testing.assert_allclose(mat[1], [0.25, 0.125, 0.25, 0.125])
    chooser = RSAChooser(base)
    d = chooser.score([q])[0]
    np.testing.assert_allclose(d.scores["s1"], rsa_speaker(mat, 0))
    assert d.aux["covered"] is True
    assert chooser.describe()["name"] == "rsa(conceptnet-path)"
    for alpha in (0.5, 4.0):  # inert for the argmax (§IV-H5)
        assert RSAChooser(base, alpha=alpha).score([q])[0].choice() == d.choice()


def test_rsa_over_swow_is_eligible_and_covers_only_full_items() -> None:
    item = _rsa_item((1, 0))  # (rope, lemon): both reach "moves" on the walk
    strengths = _swow()
    strengths.strength.update(
        {"rope": {"still": 0.5, "moves": 0.5}, "cloud": {"water": 0.5, "dance": 0.5}}
    )
    chooser = RSAChooser(SwowWalkChooser([item], strengths))
    d = chooser.score(render_queries([item]))
    assert all(x.aux["covered"] for x in d)
    partial = RSAChooser(SwowWalkChooser([item], _swow()))  # rope and cloud are not cues
    assert all(x.aux["covered"] is False for x in partial.score(render_queries([item])))
    # an option compatible with no hypothesis leaves L0 undefined: uncovered, not patched
    isolated = _swow()
    isolated.strength.update({"rope": {"still": 1.0}, "cloud": {"water": 1.0}})
    undefined = RSAChooser(SwowWalkChooser([item], isolated)).score(render_queries([item]))
    assert all(x.aux["covered"] is False for x in undefined)


def test_rsa_refuses_cosine_and_bases_without_literal_semantics() -> None:
    item = _rsa_item()
    cosine = CosineChooser([item], lambda texts: np.ones((len(texts), 2)))
    with pytest.raises(IneligibleBaseError, match="signed, unbounded below"):
        RSAChooser(cosine)
    with pytest.raises(IneligibleBaseError, match="no literal semantics"):
        RSAChooser(UniformChooser())
    with pytest.raises(IneligibleBaseError, match="target is compatible with no option"):
        rsa_speaker(np.array([[0.0, 1.0], [0.0, 2.0]]), 0)
