"""What the command-line fuzz tests share: the bounded, derandomized Hypothesis settings, the
arbitrary JSON values they put into files, and the rule every command is held to — exit 0 with
no ``error:`` line, or exit 1 with exactly one, never a traceback. (The ``scratch`` directory
fixture is in this folder's conftest.)"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from choiceaudit.cli import app

__all__ = ["FEW", "MANY", "fresh", "fuzz", "holds_the_rule", "json_values", "runner"]

runner = CliRunner()

#: Examples per test in the default suite, and in the slow-marked runs of the same properties.
FEW, MANY = 10, 150

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
#: any JSON value: scalars, and lists and objects of them, a few levels deep
json_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def fuzz(examples: int) -> settings:
    """Hypothesis settings for ``examples`` derandomized examples with no deadline (a CLI call
    takes as long as the machine's load makes it) and no example database."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def holds_the_rule(args: list[str], *, usage_errors: bool = False) -> Result:
    """Run the command: exit 0 with no ``error:`` line, or exit 1 with exactly one; never a
    traceback. ``usage_errors``: also accept the command line's own parse error (exit 2, the
    framework's usage message, for a value that is not a number where one is needed)."""
    result = runner.invoke(app, args)
    text = result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        repr(result.exception),
    )
    assert "Traceback" not in text, text
    errors = sum(line.startswith("error:") for line in text.splitlines())
    if result.exit_code == 0:
        assert errors == 0, text
    elif usage_errors and result.exit_code == 2:
        assert "Usage:" in text and (
            "Invalid value" in text or "requires an argument" in text or "No such option" in text
        ), text
    else:
        assert (result.exit_code, errors) == (1, 1), (result.exit_code, text)
    return result


def fresh(scratch: Path) -> Path:
    """A new directory inside ``scratch`` (each example makes its own)."""
    return Path(tempfile.mkdtemp(dir=scratch))
