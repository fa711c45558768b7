"""Shared fixtures: the real datasets of ../shared/data (beside the clone, in CI too; see _find_shared_data), a real MLflow server."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import optuna
import pandas as pd
import pytest
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from automl.data import check_training_data


def _find_shared_data():
    """``$AUTOML_SHARED_DATA``, else ../shared/data beside this checkout, else beside the checkout it was
    cloned from (a local clone in a temporary folder has no ../shared of its own)."""
    if os.environ.get("AUTOML_SHARED_DATA"):
        return Path(os.environ["AUTOML_SHARED_DATA"])
    checkout = Path(__file__).resolve().parents[1]
    candidates = [checkout.parent / "shared" / "data"]
    origin = subprocess.run(["git", "-C", str(checkout), "config", "--get", "remote.origin.url"],
                            capture_output=True, text=True).stdout.strip()
    if origin and Path(origin).is_dir():
        candidates.append(Path(origin).resolve().parent / "shared" / "data")
    return next((path for path in candidates if path.is_dir()), candidates[0])


SHARED_DATA = _find_shared_data()
# Test modules that need the path at collection (for parametrize) read it here; conftest loads first.
os.environ["AUTOML_SHARED_DATA"] = str(SHARED_DATA)


def _load_shared(name, target):
    frame = pd.read_csv(SHARED_DATA / name)
    return frame.drop(columns=[target]), frame[target]


@pytest.fixture(scope="session")
def load_shared():
    """``load_shared(file, target) -> (X, y)``: a dataset of ../shared/data."""
    return _load_shared


@pytest.fixture(scope="session")
def shared_data():
    """Path of the shared real datasets (described in MANIFEST.csv there)."""
    assert SHARED_DATA.is_dir(), f"the shared datasets are expected at {SHARED_DATA}"
    return SHARED_DATA


@pytest.fixture(autouse=True)
def one_thread():
    """Fits run on one thread, and Optuna logs only warnings: the suite stays fast and readable."""
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with threadpool_limits(limits=1):
        yield
    optuna.logging.set_verbosity(verbosity)


@pytest.fixture(scope="module")
def credit():
    """credit-approval (690 rows, missing values, categoricals) validated, with 3 stratified folds.

    Returns (X, y, profile, folds).
    """
    frame = pd.read_csv(SHARED_DATA / "credit-approval.csv")
    X, y, _, profile = check_training_data(frame.drop(columns="class"), frame["class"], n_folds=3)
    folds = list(StratifiedKFold(n_splits=3, shuffle=True, random_state=0).split(X, y))
    return X, y, profile, folds


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def free_port():
    """``free_port() -> int``: a TCP port on 127.0.0.1 that nothing listens on (at the moment)."""
    return _free_port


def _wait_for_health(uri, process, log_path, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"mlflow server exited:\n{log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    log_tail = log_path.read_text()[-3000:]
    pytest.fail(f"mlflow server did not answer /health in {timeout} s:\n{log_tail}")


def _stop_process_group(process):
    # The server runs uvicorn in a child process, in the group started for the server: ask the
    # group to stop, then kill whatever of it is left.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """URI of a real `mlflow server` on 127.0.0.1: SQLite backend, artifacts proxied to tmp_path."""
    root = tmp_path_factory.mktemp("mlflow_server")
    port = _free_port()
    command = [
        sys.executable, "-m", "mlflow", "server",
        "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
        "--artifacts-destination", str(root / "artifacts"),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--workers", "1",
    ]
    # The job runner serves GenAI features these tests do not use, and it starts eight processes.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    log_path = root / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            uri = f"http://127.0.0.1:{port}"
            _wait_for_health(uri, process, log_path)
            yield uri
        finally:
            _stop_process_group(process)
