"""Shared fixtures: the real datasets of ../shared/data (beside the clone, in CI too)."""

from pathlib import Path

import optuna
import pandas as pd
import pytest
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from automl.validation import check_training_data

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


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
