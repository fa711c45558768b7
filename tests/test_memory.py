"""The validated data held once: read from a memory-mapped file by the fit and its worker processes."""

import numpy as np
import pandas as pd
import pytest

import automl.data.memory as memory
import automl.estimators.base as base
from automl import AutoClassifier
from automl.data import check_training_data, memory_mapped
from automl.datasets import load_dataset


def _memmapped_columns(frame):
    return sorted(c for c in frame.columns if isinstance(np.asarray(frame[c]).base, np.memmap)
                  or isinstance(getattr(np.asarray(frame[c]).base, "base", None), np.memmap))


def test_a_large_frame_is_read_from_a_file_with_its_values_and_dtypes(tmp_path):
    rng = np.random.default_rng(0)
    raw = pd.DataFrame(rng.standard_normal((60_000, 4)).astype("float32"), columns=list("abcd"))
    raw["e"] = rng.standard_normal(60_000)
    raw["kind"] = np.array(["x", "y", "z"], dtype=object)[rng.integers(0, 3, 60_000)]
    raw.loc[::7, "a"] = np.nan
    X, y = check_training_data(raw, rng.integers(0, 2, 60_000), n_folds=2)[:2]
    folds = [(np.arange(0, 60_000, 2), np.arange(1, 60_000, 2))]
    mapped, y_mapped, folds_mapped = memory_mapped(tmp_path, X, y, folds)
    pd.testing.assert_frame_equal(mapped, X)  # values, NaN, dtypes (float32 kept), column order, index
    assert (tmp_path / "data.joblib").exists()
    assert _memmapped_columns(mapped) == list("abcde")  # the text column stays in memory
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(mapped["a"])[0] = 1.0
    # Plain arrays (so that y[rows] is one too) whose memory is the file's.
    assert type(y_mapped) is np.ndarray and isinstance(y_mapped.base, np.memmap)
    np.testing.assert_array_equal(y_mapped, y)
    train, test = folds_mapped[0]
    assert type(train) is np.ndarray and isinstance(test.base, np.memmap)
    np.testing.assert_array_equal(test, folds[0][1])


def test_a_small_frame_stays_in_memory(tmp_path):
    X = check_training_data(pd.DataFrame({"a": np.arange(100.0), "b": np.arange(100.0) % 3}),
                            np.arange(100) % 2, n_folds=2)[0]
    y = np.arange(100) % 2
    held, y_held = memory_mapped(tmp_path, X, y)
    assert held is X and y_held is y
    assert not (tmp_path / "data.joblib").exists()


def test_a_search_on_the_mapped_frame_gives_the_leaderboard_of_one_in_memory(monkeypatch):
    X, y = load_dataset("credit-g")
    # A time budget runs the trials in a worker process, which gets the frame by the file's name.
    params = dict(time_budget=600, n_trials=3, include=["logreg", "hgb"], cv=3, tracking=False, verbose=0,
                  random_state=0, leak_check="off")
    in_memory = AutoClassifier(**params).fit(X, y)
    monkeypatch.setattr(memory, "SHARE_MIN_BYTES", 0)
    seen = []

    def spy(folder, frame, *arrays):
        mapped = memory_mapped(folder, frame, *arrays)
        seen.append(_memmapped_columns(mapped[0]))
        return mapped

    monkeypatch.setattr(base, "memory_mapped", spy)
    mapped = AutoClassifier(**params).fit(X, y)
    assert seen == [sorted(mapped.profile_.numeric_columns)]
    columns = ["trial", "family", "state", "mean"]
    pd.testing.assert_frame_equal(mapped.leaderboard_[columns], in_memory.leaderboard_[columns])
    assert (mapped.leaderboard_["state"] == "COMPLETE").all()
    np.testing.assert_allclose(mapped.predict_proba(X.head(50)), in_memory.predict_proba(X.head(50)))
