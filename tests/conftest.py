"""Shared fixtures: the real datasets of ../shared/data (beside the clone, in CI too)."""

from pathlib import Path

import pandas as pd
import pytest

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
