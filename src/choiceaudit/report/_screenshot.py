"""Screenshot a report page with headless Chromium (Debian packages ``chromium``)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from choiceaudit.errors import ChoiceAuditError

__all__ = ["CHROMIUM_FLAGS", "find_chromium", "screenshot"]

#: Flags for a closed network: without the background-networking ones Chromium keeps trying to
#: reach Google's hosts.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(
    page: Path, png: Path, *, width: int = 1200, height: int = 2400, timeout: float = 120
) -> Path:
    """Render ``page`` (a local HTML file) to ``png``; raises if Chromium is missing or fails."""
    browser = find_chromium()
    if browser is None:
        raise ChoiceAuditError("chromium is not installed (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="choiceaudit-chromium-") as profile:
        result = subprocess.run(
            [
                browser,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                f"--screenshot={png.resolve()}",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    if result.returncode != 0 or not png.exists():
        raise ChoiceAuditError(f"chromium failed ({result.returncode}): {result.stderr[-2000:]}")
    return png
