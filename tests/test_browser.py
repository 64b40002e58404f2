"""Real browser tests: JupyterLab on 127.0.0.1 and headless Chromium (Debian's), driven by Playwright
(`executable_path`, no browser download), one server and one browser for both tests. Notebook 06: run the
stepper cell, click Step twice and check what the widget shows, then run the approval cell and click Approve.
Then every lesson diagram, and a failing check() table. Screenshots go to test-artifacts/.
"""
import contextlib
import json
import os
import platform
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from support import free_port

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str:
    """Debian's Chromium; installed with apt-get when it is missing and we may (CI runs as root)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, timeout=600)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], env=env, capture_output=True, timeout=900)
        path = shutil.which("chromium")
    if not path:
        pytest.skip("Chromium is not installed and cannot be installed here (it needs root and apt-get): "
                    "install Debian's `chromium` package to run the browser test")
    return path


THEME = os.environ.get("COURSE_BROWSER_THEME", "light")
SUFFIX = "" if THEME == "light" else f"-{THEME}"


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    """JupyterLab serving a copy of notebook 06 from a temp folder, with its own config and settings, and one
    headless Chromium; both tests use the same two (conftest.SHARED keeps them in one worker)."""
    tmp_path = tmp_path_factory.mktemp("jupyterlab")
    playwright = pytest.importorskip("playwright.sync_api", reason="the test extra installs Playwright (make test)")
    browser_path = chromium()
    work = tmp_path / "course"
    work.mkdir()
    lesson = json.loads((ROOT / "notebooks" / "06_agent_class.ipynb").read_text(encoding="utf-8"))
    # make execute records the kernel's language_info with its Python version; this machine's Python may be
    # another one, and JupyterLab would rightly update that line
    lesson["metadata"]["language_info"]["version"] = platform.python_version()
    (work / "06_agent_class.ipynb").write_text(json.dumps(lesson, indent=1, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
    config, settings = tmp_path / "config", tmp_path / "settings"
    (config / "labconfig").mkdir(parents=True)
    # No "receive news?" pop-up over the page, and every cell rendered (no windowing) so we can find it.
    (config / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"}))
    if THEME == "dark":   # COURSE_BROWSER_THEME=dark: the same run in the dark theme, to look at its screenshots
        (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
        (settings / "@jupyterlab" / "apputils-extension" / "themes.jupyterlab-settings").write_text(
            json.dumps({"theme": "JupyterLab Dark"}))
    port, token = free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if k != "COURSE_APPROVAL"}   # a person is clicking here
    env.update({"JUPYTER_CONFIG_DIR": str(config), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")})
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--ServerApp.port={port}",
         "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
         f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}"]
        + (["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),   # CI runs as root
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("JupyterLab did not start within 90 s")
                time.sleep(0.5)
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=browser_path, args=CHROMIUM_FLAGS)
            try:
                yield {"url": url, "token": token, "work": work, "browser": browser}
            finally:
                browser.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def run_cell(page, text: str):
    """Select the code cell containing `text`, run it with Shift+Enter, and return its locator. A press made while
    a just-opened notebook's kernel is still starting can be dropped (the prompt stays `[ ]`; the status bar may
    show another tab's kernel as Idle), so a cell that shows no sign of running is pressed again, up to 3 times.
    A press that is not dropped marks the cell `[*]` at once, in the page itself: the first two waits are short
    (a dropped press used to cost a whole minute), the last one a hang guard."""
    cell = page.locator(".jp-CodeCell").filter(has=page.locator(".jp-InputArea", has_text=text)).first
    started = cell.locator(".jp-InputPrompt", has_text=re.compile(r"\[[0-9*]+\]"))
    for attempt in range(3):
        cell.scroll_into_view_if_needed()
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        try:
            started.wait_for(timeout=(5_000, 20_000, 180_000)[attempt])
            return cell
        except Exception as e:   # Playwright's TimeoutError: not started, so press again
            if "Timeout" not in type(e).__name__ or attempt == 2:
                raise
    return cell


@contextlib.contextmanager
def lab_page(jupyterlab):
    """A new page in the shared browser; on a failure, a screenshot of what it showed."""
    ARTIFACTS.mkdir(exist_ok=True)
    page = jupyterlab["browser"].new_page(viewport={"width": 1400, "height": 1000})
    try:
        yield page
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "jupyterlab-failure.png"))
        raise
    finally:
        page.close()


def test_stepper_and_approval_in_jupyterlab(jupyterlab):
    with lab_page(jupyterlab) as page:
        page.goto(f"{jupyterlab['url']}/lab/tree/06_agent_class.ipynb?token={jupyterlab['token']}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=180_000)
        # the kernel is up when the status bar says so
        page.locator(".jp-StatusBar-Widget", has_text="Idle").first.wait_for(timeout=180_000)
        # Opening a lesson changes nothing: the kernel's metadata is already in the file, so the tab is not
        # marked unsaved and closing it would ask nothing.
        page.wait_for_timeout(2_000)   # the kernel's info arrives just after "Idle"
        assert page.locator(".lm-TabBar-tab.jp-mod-dirty").count() == 0, "opening the lesson changed it"

        stepper = run_cell(page, "stepper = AgentStepper(")
        step = stepper.locator(".jp-OutputArea button", has_text="Step").first
        step.wait_for(timeout=180_000)
        step.click()
        page.wait_for_function("() => document.querySelector('.stepper-count')"
                               " && document.querySelector('.stepper-count').textContent.includes('step 1 /')",
                               timeout=120_000)
        step.click()
        count = stepper.locator(".stepper-count")
        count.filter(has_text="step 2 / 6").wait_for(timeout=120_000)
        assert count.inner_text() == "step 2 / 6"
        call = stepper.locator(".stepper-call").first
        assert call.inner_text() == 'calculator({"expression": "24*7"})'
        page.screenshot(path=str(ARTIFACTS / f"jupyterlab-stepper{SUFFIX}.png"))

        approval = run_cell(page, "gate = ApprovalGate()")
        approve = approval.locator(".jp-OutputArea button", has_text="Approve")
        approve.wait_for(timeout=180_000)
        # while it waits, the box says the notebook is paused (the cell's prompt shows [*])
        approval.locator(".jp-OutputArea", has_text="Paused — waiting for your decision").wait_for(timeout=120_000)
        approval.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"jupyterlab-approval-waiting{SUFFIX}.png"))
        approve.click()
        approval.locator(".jp-OutputArea", has_text="Wrote").wait_for(timeout=180_000)
        approval.locator(".jp-OutputArea", has_text="✓ You approved this write.").wait_for(timeout=120_000)
        assert approval.locator(".jp-OutputArea button").count() == 0   # the buttons gave way to the outcome
        page.screenshot(path=str(ARTIFACTS / f"jupyterlab-approval{SUFFIX}.png"))
    written = jupyterlab["work"] / "transcripts" / "summary.txt"
    assert written.read_text(encoding="utf-8") == "Seven units cost $168 (7 × $24)."


MERMAID = re.compile(r"```mermaid\n(.*?)```", re.S)


def diagrams(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [m for c in cells if c["cell_type"] == "markdown" for m in MERMAID.findall("".join(c["source"]))]


def test_diagrams_fit_one_screen_with_readable_labels_and_alt_text(jupyterlab):
    """Every lesson diagram renders in JupyterLab as an image whose alt text is its accTitle and whose caption
    (for screen readers) is its accDescr; it fits a 1000-pixel-high window, and it is not shrunk below 80 % of
    its drawn size, so its labels stay readable (the 08 adapter diagram once rendered at about 10-pixel labels).
    A failing check() table is photographed along the way: the count first, failing rows marked."""
    work = jupyterlab["work"]
    lessons = [nb for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")) if diagrams(nb)]
    assert len(lessons) >= 8
    # Every diagram in one notebook of the same width as a lesson (one page and one kernel instead of ten), and
    # after them a check() that fails, as a learner sees it before the answer is right.
    found = [(nb.name, k, source) for nb in lessons for k, source in enumerate(diagrams(nb))]
    lesson = json.loads((ROOT / "notebooks" / "06_agent_class.ipynb").read_text(encoding="utf-8"))
    cells = [{"cell_type": "markdown", "id": f"d{i}", "metadata": {}, "source": f"```mermaid\n{src}```"}
             for i, (_, _, src) in enumerate(found)]
    cells.append({"cell_type": "code", "id": "check", "metadata": {}, "execution_count": None, "outputs": [],
                  "source": 'from course_lib.courseware.checks import check\ncheck("03.4", lambda tools: [])'})
    cells.append({"cell_type": "code", "id": "peek", "metadata": {}, "execution_count": None, "outputs": [],
                  "source": 'from course_lib.courseware.widgets import peek\n'
                            'peek({"messages": [{"role": "user", "content": f"line {i}"} for i in range(9)]})'})
    gallery = {"cells": cells, "metadata": lesson["metadata"], "nbformat": 4, "nbformat_minor": 5}
    (work / "diagrams.ipynb").write_text(json.dumps(gallery, ensure_ascii=False), encoding="utf-8")
    sizes, too_big = [], []
    with lab_page(jupyterlab) as page:
        page.goto(f"{jupyterlab['url']}/lab/tree/diagrams.ipynb?reset&token={jupyterlab['token']}")
        figures = page.locator(".jp-RenderedMermaid figure")
        page.wait_for_function(f"() => document.querySelectorAll('.jp-RenderedMermaid figure img').length"
                               f" >= {len(found)}", timeout=180_000)
        assert figures.count() == len(found), "a diagram did not render"
        for i, (name, k, source) in enumerate(found):
            title = re.search(r"accTitle: (.+)", source)[1].strip()
            description = re.search(r"accDescr: (.+)", source)[1].strip()
            figure = figures.nth(i)
            img = figure.locator("img")
            assert img.get_attribute("alt") == title, f"{name} diagram {k + 1}: alt text"
            assert figure.locator("figcaption").inner_text().strip() == description
            figure.scroll_into_view_if_needed()
            box = img.bounding_box()
            drawn = float(img.get_attribute("width") or box["width"])
            sizes.append(f"{name} {k + 1}: {box['width']:.0f}×{box['height']:.0f} px, "
                         f"{box['width'] / drawn:.0%} of its drawn width")
            if box["height"] > 640 or box["width"] / drawn < 0.8:
                too_big.append(sizes[-1])
            shot = {("08", 0): "08-anthropic", ("08", 1): "08-openai", ("08", 2): "08-ollama",
                    ("00", 0): "00-loop"}.get((name[:2], k))
            if shot:
                figure.screenshot(path=str(ARTIFACTS / f"diagram-{shot}{SUFFIX}.png"))

        page.locator(".jp-StatusBar-Widget", has_text="Idle").first.wait_for(timeout=180_000)
        run_cell(page, 'check("03.4"')
        table = page.locator(".jp-OutputArea table").filter(has_text="vague lookup and search").last
        table.wait_for(timeout=180_000)
        assert "✗" in table.inner_text() and "✓" in table.inner_text()
        table.scroll_into_view_if_needed()
        table.locator("xpath=ancestor::div[contains(@class, 'jp-OutputArea-output')][1]").screenshot(
            path=str(ARTIFACTS / f"check-table-failing{SUFFIX}.png"))
        # A folded peek, opened: its two halves line up as one text, the second right under the "more" line.
        folded = run_cell(page, "peek({").locator(".jp-OutputArea-output details")
        folded.locator("summary").click()
        first, second = (folded.locator("xpath=..").locator("pre").nth(i).bounding_box() for i in (0, 1))
        summary = folded.locator("summary").bounding_box()
        assert abs(first["x"] - second["x"]) < 1 and abs(first["x"] - summary["x"]) < 1, (first, second, summary)
        assert 0 <= second["y"] - (summary["y"] + summary["height"]) < 4, (summary, second)
        folded.screenshot(path=str(ARTIFACTS / f"peek-opened{SUFFIX}.png"))
    (ARTIFACTS / f"diagram-sizes{SUFFIX}.txt").write_text("\n".join(sizes) + "\n", encoding="utf-8")
    assert not too_big, "diagrams taller than 640 px or shrunk below 80 %:\n" + "\n".join(too_big)
