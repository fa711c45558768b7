"""The regression leak check on the 7 shared regression datasets: silent on honest columns, loud on leaks."""

import csv
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import KFold

from automl.checks import check_regression_leakage
from automl.checks import leakage, leakage_regression
from automl.checks.leakage_regression import NEAR_EXACT_R2, STRONG_R2
from automl.data import check_training_data

SHARED_DATA = Path(os.environ["AUTOML_SHARED_DATA"])  # set by conftest.py
REGRESSION = [row for row in csv.DictReader(open(SHARED_DATA / "MANIFEST.csv")) if row["task"] == "regression"]


def _prepared(file, target, n_rows=3000, extra=None):
    frame = pd.read_csv(SHARED_DATA / file, nrows=n_rows)
    X, y = frame.drop(columns=[target]), frame[target]
    if extra is not None:
        X = X.assign(**extra(y.to_numpy(dtype=float)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # column repairs; not what is tested here
        X, y, _, profile = check_training_data(X, y, n_folds=5, task="regression")
    return X, y, profile, list(KFold(5, shuffle=True, random_state=0).split(X))


@pytest.mark.parametrize("row", REGRESSION, ids=[row["name"] for row in REGRESSION])
def test_no_honest_column_is_flagged(row):
    X, y, profile, folds = _prepared(row["file"], row["target"])
    report = check_regression_leakage(X, y, profile, folds, random_state=0)
    assert [f for f in report.findings if f.kind == "target_leakage"] == []


@pytest.mark.parametrize("name, leak", [
    ("copy", lambda y: {"y_copy": y}),
    ("unit_change", lambda y: {"y_in_cents": 100 * y + 3}),
    ("monotone", lambda y: {"y_logged": np.log1p(y)}),
    # Invertible but not monotone: the rank correlation misses it, a tree on the column does not.
    ("non_monotone", lambda y: {"y_folded": np.where(y < np.median(y), y, 100 + np.median(y) - y)}),
    ("noisy", lambda y: {"y_noisy": y + np.random.default_rng(0).normal(0, 0.05 * y.std(), len(y))}),
])
def test_a_function_of_the_target_is_high(name, leak):
    X, y, profile, folds = _prepared("abalone.csv", "Class_Rings", extra=leak)
    (column,) = leak(y)
    findings = {f.column: f for f in check_regression_leakage(X, y, profile, folds, random_state=0).findings}
    assert findings[column].kind == "target_leakage" and findings[column].severity == "high"
    evidence = findings[column].evidence
    assert evidence["single_column_r2"] >= STRONG_R2 or evidence["spearman_abs"] >= 0.995
    assert set(findings) - {column} <= {None}  # at most the duplicates finding besides it
    if name == "non_monotone":
        assert evidence["spearman_abs"] < 0.9 and evidence["single_column_r2"] >= NEAR_EXACT_R2


def test_an_identifier_that_follows_the_target_is_high():
    X, y, profile, folds = _prepared("kin8nm.csv", "y", extra=lambda y: {"row_id": np.argsort(np.argsort(y)) * 7})
    findings = {f.column: f for f in check_regression_leakage(X, y, profile, folds, random_state=0).findings}
    assert findings["row_id"].kind == "identifier" and findings["row_id"].severity == "high"
    assert "its values predict the target" in findings["row_id"].message


def test_a_wide_table_is_screened_and_finds_the_narrow_tables_leak(monkeypatch):
    """cpu_act's 21 columns and 105 noisier copies (from SCREEN_MIN_COLUMNS on), and a noisy copy of y."""
    def leak(y):
        return {"y_noisy": y + np.random.default_rng(0).normal(0, 0.05 * y.std(), len(y))}

    def copies(y):
        frame = pd.read_csv(SHARED_DATA / "cpu_act.csv", nrows=3000).drop(columns="usr")
        rng = np.random.default_rng(1)
        return {f"{c}_copy{i}": frame[c] + rng.normal(0, frame[c].std() + 1e-9, len(frame))
                for i in range(5) for c in frame.columns}

    narrow = _prepared("cpu_act.csv", "usr", extra=leak)
    wide = _prepared("cpu_act.csv", "usr", extra=lambda y: {**copies(y), **leak(y)})
    assert wide[0].shape[1] >= leakage.SCREEN_MIN_COLUMNS
    trees, real = [], leakage_regression._single_r2
    monkeypatch.setattr(leakage_regression, "_single_r2", lambda v, *a: trees.append(v.name) or real(v, *a))
    found = {name: {f.column: f for f in check_regression_leakage(X, y, profile, folds, random_state=0).findings}
             for name, (X, y, profile, folds) in {"narrow": narrow, "wide": wide}.items()}
    assert found["wide"]["y_noisy"].severity == found["narrow"]["y_noisy"].severity == "high"
    assert found["wide"]["y_noisy"].evidence["single_column_r2"] == found["narrow"]["y_noisy"].evidence["single_column_r2"]
    n_narrow = narrow[0].shape[1]
    assert trees.count("y_noisy") == 2 and len(trees) - n_narrow < 0.2 * wide[0].shape[1]  # most settled by the screen
