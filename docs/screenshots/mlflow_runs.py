"""Redo the README's screenshot of a fit's runs in the MLflow UI, from a real fit and a real browser.

Fits ``AutoClassifier`` on the bundled credit-g (20 trials, 2 workers, seed 0) into a fresh SQLite
store, serves it with ``mlflow server`` on 127.0.0.1, opens the experiment's training runs in
headless Chromium, unfolds the fit's trials, shows the score and family columns, and writes
``docs/screenshots/mlflow-runs.png``. Nothing leaves the machine: the server listens on loopback and
Chromium starts with its background networking off.

Needs, besides the project's venv: Debian's Chromium (``apt-get install chromium``, at
``/usr/bin/chromium``) and Playwright's Python package in any Python (``pip install playwright``; its
own browser download is not used). Run from the repository root::

    .venv/bin/python docs/screenshots/mlflow_runs.py --playwright-python /path/to/python-with-playwright

The browser part runs in that other Python (``--playwright-python``, default: this one), so that
Playwright need not be installed into the project's environment.
"""

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# The browser's steps, run by the Python that has Playwright. MLflow 3.x's runs table: a fit is a
# parent row whose trials unfold from the button beside its name.
BROWSER = r"""
import json, sys
from playwright.sync_api import sync_playwright

url, out, chromium, flags = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=chromium, args=flags, headless=True)
    page = browser.new_page(viewport={"width": 1500, "height": 960})
    page.goto(url)
    page.wait_for_selector("text=AutoClassifier", timeout=60000)
    page.get_by_role("button", name="Close").click()  # the GenAI assistant's panel
    page.locator("button[data-component-id*='runnamecellrenderer']").first.click()  # unfold the trials
    page.wait_for_selector("text=trial-1", timeout=30000)
    page.locator("[data-testid='column-selection-dropdown']").first.click()
    search = page.get_by_placeholder("Search columns")
    for column in ("Dataset", "Source", "Models", "mean_score", "std_score", "family"):  # off, off, off, on...
        search.fill(column)
        page.wait_for_timeout(300)
        page.get_by_text(column, exact=True).last.click()
    page.keyboard.press("Escape")
    header = page.locator(".ag-header-cell[col-id='attributes.`Run Name`']").first.bounding_box()
    edge, middle = header["x"] + header["width"] - 2, header["y"] + header["height"] / 2  # its resize handle
    page.mouse.move(edge, middle)
    page.mouse.down()
    page.mouse.move(edge + 190, middle, steps=10)
    page.mouse.up()
    page.wait_for_timeout(1500)
    page.screenshot(path=out)
    browser.close()
"""


def fit(store):
    """A tracked fit into ``store``; its experiment id."""
    from mlflow.tracking import MlflowClient

    from automl import AutoClassifier
    from automl.datasets import load_dataset

    X, y = load_dataset("credit-g")
    model = AutoClassifier(time_budget=None, n_trials=20, n_jobs=2, random_state=0, verbose=0,
                           tracking_uri=f"sqlite:///{store}", experiment_name="automl")
    model.fit(X, y)
    return MlflowClient(model.mlflow_tracking_uri_).get_run(model.mlflow_run_id_).info.experiment_id


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(store, port, artifacts):
    """``mlflow server`` on 127.0.0.1:``port``, once it answers its health check."""
    mlflow = Path(sys.executable).with_name("mlflow")
    server = subprocess.Popen([str(mlflow), "server", "--backend-store-uri", f"sqlite:///{store}",
                               "--default-artifact-root", str(artifacts), "--host", "127.0.0.1",
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(120):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            return server
        except OSError:
            time.sleep(0.5)
    server.kill()
    raise RuntimeError(f"mlflow server did not answer on 127.0.0.1:{port} within 60 s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--playwright-python", default=sys.executable)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--out", type=Path, default=HERE / "mlflow-runs.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="automl-shot-") as folder:
        store = Path(folder) / "mlflow.db"
        experiment = fit(store)
        port = free_port()
        server = serve(store, port, Path(folder) / "artifacts")
        try:
            url = f"http://127.0.0.1:{port}/#/experiments/{experiment}/runs"
            subprocess.run([args.playwright_python, "-c", BROWSER, url, str(args.out), args.chromium,
                            json.dumps(CHROMIUM_FLAGS)], check=True)
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
