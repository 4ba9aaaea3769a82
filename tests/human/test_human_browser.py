"""A real browser completes a participant session end to end, with a reload mid-study:
headless Chromium (Debian's ``chromium`` + ``chromedriver``, installed by
``make browser``) driven by Selenium against the server on loopback. The screenshots of each
page are written to ``docs/human/`` (embedded in the human study guide) when ``CHOICEAUDIT_WRITE_DOCS=1``,
and otherwise beside the test's other files, so a test run leaves the repository as it was."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from choiceaudit.human import DB_FILE
from human.human_helpers import Server, frozen_items, study_file

REPO_DOCS = Path(__file__).resolve().parents[2] / "docs" / "human"


def _chromium_or_skip() -> None:
    if shutil.which("chromium") and shutil.which("chromedriver"):
        return
    if os.environ.get("CI"):
        pytest.fail("CI must install chromium and chromium-driver (make test does)")
    pytest.skip("chromium / chromedriver not installed")


def test_a_browser_completes_a_session_with_a_reload_mid_study(tmp_path: Path) -> None:
    _chromium_or_skip()
    shots = REPO_DOCS if os.environ.get("CHOICEAUDIT_WRITE_DOCS") == "1" else tmp_path / "shots"
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def submit(element_id: str) -> None:
        # Click, then wait until a new document has loaded. The old page is
        # marked with a window property that only a new document lacks; while
        # the navigation is under way the driver may answer any query with an
        # error (Chrome's "Node with given id does not belong to the document"
        # for an element of the page being torn down), so errors only mean
        # "not yet": the wait still fails after 30 s if no new page comes.
        driver.execute_script("window.__choiceauditOldPage = true;")
        driver.find_element(By.ID, element_id).click()
        WebDriverWait(driver, 30, ignored_exceptions=(WebDriverException,)).until(
            lambda d: d.execute_script(
                "return window.__choiceauditOldPage === undefined"
                " && document.readyState === 'complete';"
            )
        )

    from choiceaudit.report import CHROMIUM_FLAGS

    items, toml = frozen_items(tmp_path), study_file(tmp_path)
    study = tmp_path / "study"
    server = Server(items, study, toml)
    options = Options()
    options.binary_location = shutil.which("chromium")  # type: ignore[assignment]
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag.replace("--headless", "--headless=new"))
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    options.add_argument("--window-size=900,1150")
    shots.mkdir(parents=True, exist_ok=True)
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    pages: list[str] = []
    try:
        driver.get(f"{server.url}/?PROLIFIC_PID=BROWSER01")
        assert "information and consent" in driver.page_source
        driver.save_screenshot(str(shots / "1-consent.png"))
        submit("consent-yes")
        assert "Instructions" in driver.find_element(By.TAG_NAME, "h1").text
        driver.save_screenshot(str(shots / "2-instructions.png"))
        submit("start")
        shot_item = shot_check = False
        answered = 0
        while driver.find_elements(By.NAME, "choice"):
            header = driver.find_element(By.CLASS_NAME, "note").text
            pages.append(header)
            is_check = bool(driver.find_elements(By.XPATH, "//h1[text()='Attention check']"))
            if is_check:
                target = driver.find_element(By.CSS_SELECTOR, "p b").text
                label = driver.find_element(
                    By.XPATH, f"//label[normalize-space()={_xpath_literal(target)}]"
                )
                if not shot_check:
                    driver.save_screenshot(str(shots / "4-attention-check.png"))
                    shot_check = True
                label.click()
            else:
                if not shot_item:
                    driver.save_screenshot(str(shots / "3-item.png"))
                    shot_item = True
                driver.find_elements(By.NAME, "choice")[answered % 4].click()
            if answered == 3:  # a reload mid-study shows the same page again
                driver.refresh()
                assert driver.find_element(By.CLASS_NAME, "note").text == header
                if is_check:
                    target = driver.find_element(By.CSS_SELECTOR, "p b").text
                    driver.find_element(
                        By.XPATH, f"//label[normalize-space()={_xpath_literal(target)}]"
                    ).click()
                else:
                    driver.find_elements(By.NAME, "choice")[answered % 4].click()
            submit("send")
            answered += 1
        assert driver.find_element(By.ID, "code").text == "C8TEST"
        driver.save_screenshot(str(shots / "5-completion.png"))
        # the back button cannot submit again: the old page is refused, nothing changes
        driver.back()
        driver.get(f"{server.url}/?PROLIFIC_PID=BROWSER01")
        assert driver.find_element(By.ID, "code").text == "C8TEST"
    finally:
        driver.quit()
        server.kill()
    assert pages == [f"Page {n} of 11" for n in range(1, 12)]
    con = sqlite3.connect(study / DB_FILE)
    rows = con.execute(
        "SELECT position, rt_ms, server_rt_ms FROM responses ORDER BY position"
    ).fetchall()
    assert [r[0] for r in rows] == list(range(11))
    # the page's script ran under the nonce CSP: the browser measured every response time
    assert all(r[1] is not None and r[1] >= 0 for r in rows)
    for name in ("1-consent", "2-instructions", "3-item", "4-attention-check", "5-completion"):
        assert (shots / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _xpath_literal(text: str) -> str:
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    return "concat('" + text.replace("'", "', \"'\", '") + "')"
