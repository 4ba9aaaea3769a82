"""The public surface of choiceaudit.stats: complete, sorted, contract names present, and the
package imports nothing but numpy, scipy and the standard library."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import choiceaudit.stats as stats

STATS_DIR = Path(stats.__file__).resolve().parent

#: Names DESIGN.md ("Statistics") promises; reports, docs and external checks call them.
CONTRACT = [
    "bootstrap_ci",
    "mcnemar_exact",
    "bonferroni",
    "ece",
    "brier",
    "aurc",
    "augrc",
    "selective_accuracy",
    "normalized_entropy",
    "js_divergence",
    "excess_consistency",
]


def test_all_is_sorted_unique_and_resolvable() -> None:
    assert stats.__all__ == sorted(stats.__all__)
    assert len(set(stats.__all__)) == len(stats.__all__)
    for name in stats.__all__:
        assert hasattr(stats, name), name


def test_all_lists_every_public_name() -> None:
    public = {
        name
        for name, obj in vars(stats).items()
        if not name.startswith("_") and not inspect.ismodule(obj)
    }
    assert public == set(stats.__all__)


def test_contract_names_and_signatures() -> None:
    for name in CONTRACT:
        assert name in stats.__all__, name
    sig = inspect.signature(stats.bootstrap_ci)
    for kw in ("statistic", "n_resamples", "level", "clusters", "seed"):
        assert sig.parameters[kw].kind is inspect.Parameter.KEYWORD_ONLY, kw
    assert sig.parameters["clusters"].default is None
    assert inspect.signature(stats.ece).parameters["n_bins"].default == 15
    assert inspect.signature(stats.ece).parameters["strategy"].default == "width"


def test_modules_are_private_and_import_only_numpy_scipy_stdlib() -> None:
    allowed_roots = {"numpy", "scipy", "choiceaudit", "__future__"} | set(sys.stdlib_module_names)
    for path in sorted(STATS_DIR.glob("*.py")):
        if path.name != "__init__.py":
            assert path.name.startswith("_"), f"{path.name} should be a private module"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed_roots, f"{path.name} imports {name}"
                if name.startswith("choiceaudit"):
                    # the shared array aliases are the one thing stats takes from the toolkit
                    assert name.startswith(("choiceaudit.stats", "choiceaudit.types")), (
                        f"{path.name} imports {name}"
                    )


def test_importing_stats_pulls_in_no_reference_library() -> None:
    code = (
        "import sys, choiceaudit.stats\n"
        "bad = [m for m in ('sklearn', 'statsmodels', 'pandas', 'torch', 'transformers') "
        "if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_modules_stay_small() -> None:
    for path in STATS_DIR.glob("*.py"):
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 400, path.name
