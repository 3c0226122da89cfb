"""The dashboard in a real headless Chromium: it renders and is bound to loopback."""

from __future__ import annotations

import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from openclaw_dask.runtime import start_cluster

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def browser(tmp_path: Path) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # this machine has no network beyond loopback: keep Chromium from calling home
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-sync",
        "--disable-component-update",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp_path / 'chromium'}",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


# Bokeh 3 draws each panel into <canvas> elements inside shadow roots, out of reach of CSS
# selectors: walk the shadow trees and count canvases that have been given a size.
COUNT_CANVASES = """
const seen = [];
const walk = (root) => {
  for (const el of root.querySelectorAll('*')) {
    if (el.tagName === 'CANVAS' && el.width > 0 && el.height > 0) seen.push(el);
    if (el.shadowRoot) walk(el.shadowRoot);
  }
};
walk(document);
return seen.length;
"""


def slow(x: float) -> float:
    time.sleep(0.05)
    return x


def test_dashboard_renders_task_stream_and_workers(tmp_path: Path, artifacts: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    with start_cluster(overrides=["cluster.dashboard_address=127.0.0.1:0"]) as client:
        link = client.dashboard_link
        assert link.startswith("http://127.0.0.1:"), "dashboard must bind to loopback"
        client.gather(client.map(slow, range(60)))  # something for the task stream
        driver = browser(tmp_path)
        try:
            driver.get(link)
            wait = WebDriverWait(driver, 60)
            wait.until(
                lambda d: d.execute_script("return !!(window.Bokeh && Bokeh.documents.length)")
            )
            # the status page has 6+ panels (memory, task stream, progress, processing...)
            wait.until(lambda d: d.execute_script(COUNT_CANVASES) >= 6)
            time.sleep(2)  # let the first periodic update paint
            canvases = driver.execute_script(COUNT_CANVASES)
            shot = artifacts / "dashboard.png"
            assert driver.save_screenshot(str(shot))
            source = driver.page_source
        finally:
            driver.quit()
    assert shot.stat().st_size > 10_000
    assert canvases >= 6
    assert "Task Stream" in source and "Workers" in source


def test_dashboard_off_serves_no_pages_and_keeps_dask_http_on_loopback() -> None:
    import psutil

    with start_cluster(overrides=["cluster.dashboard_address=null"]) as client:
        port = client.scheduler_info()["services"]["dashboard"]  # Dask's name for its HTTP port
        assert port != 8787
        listening = {
            c.laddr
            for c in psutil.Process().net_connections("inet")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == port
        }
        assert listening and {a.ip for a in listening} == {"127.0.0.1"}
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=10)
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10).status == 200


def test_a_dashboard_bound_to_another_address_of_the_machine_has_a_link_that_answers() -> None:
    """Dask's link takes the scheduler's host: a dashboard bound to 127.0.0.2 (or the
    machine's network address) was printed as http://127.0.0.1:PORT/status, where nothing
    listens, and ``cluster status`` then found no dashboard at all."""
    from openclaw_dask.runtime.cluster import attached_dashboard, dashboard_link

    with start_cluster(overrides=["cluster.dashboard_address=127.0.0.2:0"]) as client:
        link = dashboard_link(client)
        assert link.startswith("http://127.0.0.2:") and link.endswith("/status"), link
        assert urllib.request.urlopen(link, timeout=30).status == 200
        assert attached_dashboard(client) == link  # what a run attached to it says
    # bound to every interface: the scheduler's host, as Dask writes it
    with start_cluster(overrides=["cluster.dashboard_address=:0"]) as client:
        assert dashboard_link(client) == client.dashboard_link
