"""Tests of the model-level leak check (automl.checks.dominance) on credit-approval, with a planted leak."""

import time
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import StratifiedKFold

from automl.checks import LeakageReport, LeakFinding, check_in_time, check_model_dominance
from automl.checks.dominance import MIN_PERMUTATION_ROWS, N_REPEATS, PERMUTATION_OVERHEAD
from automl.data import check_training_data
from automl.exceptions import LeakageWarning
from automl.space import portfolio, rebuild, resolve_components


def validated(X, y, n_folds=3):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X_clean, y_enc, _, profile = check_training_data(X, y, n_folds=n_folds)
    folds = list(StratifiedKFold(n_folds, shuffle=True, random_state=0).split(X_clean, y_enc))
    return X_clean, y_enc, profile, folds


def hgb_pipeline(profile):
    specs = resolve_components(include=["hgb"])
    return rebuild(portfolio(specs)[0], profile, specs, random_state=0)


@pytest.fixture(scope="module")
def leaky(credit):
    """credit-approval plus 'approval_score', the label plus noise: a column no model should have."""
    X, y, _, _ = credit
    approval = y + np.random.default_rng(0).normal(0, 0.3, len(y))
    return validated(X.assign(approval_score=approval), y)


def test_dominant_feature_is_flagged_with_its_figures(leaky):
    X, y, profile, folds = leaky
    report = check_model_dominance(hgb_pipeline(profile), X, y, folds, metric="roc_auc", random_state=0)
    (finding,) = report.findings
    assert (finding.column, finding.kind, finding.severity) == ("approval_score", "dominant_feature", "high")
    assert finding.evidence["importance_share"] > 0.8
    assert finding.evidence["n_folds"] == 3 and finding.evidence["metric"] == "roc_auc"
    assert "'approval_score'" in finding.message and "prediction time" in finding.message
    # 230 test rows per fold, all shuffled: fewer than the 2,000-row cap.
    (note,) = report.notes
    assert note.startswith("Model check: permutation importance on 3 held-out fold(s), 230 rows x 3 shuffles")


def test_shared_importance_is_not_dominance():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(600, 3)), columns=["a", "b", "c"])
    y = (X.sum(axis=1) > 0).to_numpy(dtype=int)
    X_clean, y_enc, profile, folds = validated(X, y)
    report = check_model_dominance(hgb_pipeline(profile), X_clean, y_enc, folds, metric="log_loss",
                                   random_state=0)
    assert not report and len(report.notes) == 1


def test_a_passed_deadline_skips_the_check_and_says_so(leaky):
    X, y, profile, folds = leaky
    report = check_model_dominance(hgb_pipeline(profile), X, y, folds, metric="roc_auc", random_state=0,
                                   deadline=time.time() - 1)
    assert report.findings == () and report.notes[0].startswith("Model check skipped")


def test_rows_shuffled_shrink_to_the_time_left(monkeypatch):
    from automl.checks.dominance import _rows_in_time

    monkeypatch.setattr("automl.checks.dominance.time", SimpleNamespace(time=lambda: 0.0))
    # Predicting 20 rows takes 0.012 s and 100 rows 0.02 s: 1e-4 s a row on top of 0.01 s a call.
    probe, whole = (20, 0.012), (100, 0.02)
    assert _rows_in_time(probe, whole, 10, deadline=None) == 2000
    # 10 columns x 3 shuffles x 1.5 (permutation_importance's own work) = 45 predictions to fit in
    # 1.5 s: 0.0333 s each, of which 0.01 s is the fixed part, leaves 0.0233 s = 233 rows.
    assert (N_REPEATS, PERMUTATION_OVERHEAD) == (3, 1.5)
    assert _rows_in_time(probe, whole, 10, deadline=1.5) == 233
    assert _rows_in_time(probe, whole, 10, deadline=0.91) == 102 < MIN_PERMUTATION_ROWS
    # The fixed part alone does not fit: no row.
    assert _rows_in_time(probe, whole, 10, deadline=0.4) == 0
    # A test part of 30 rows: probe and whole too close to split; the slower one (0.02 s) is the
    # cost of a shuffle of any size. 45 x 0.02 s = 0.9 s fits in 1 s, not in 0.8 s.
    assert _rows_in_time((20, 0.015), (30, 0.02), 10, deadline=1.0) == 2000
    assert _rows_in_time((20, 0.015), (30, 0.02), 10, deadline=0.8) == 0


def test_check_in_time_skips_when_two_folds_do_not_fit_and_warns_otherwise(leaky):
    X, y, profile, folds = leaky
    skipped = check_in_time(hgb_pipeline(profile), 5.0, X, y, folds, "roc_auc", 0, time.time() + 9.0)
    assert skipped.findings == () and "5.0 s each" in skipped.notes[0]
    with pytest.warns(LeakageWarning, match="'approval_score' carries"):
        report = check_in_time(hgb_pipeline(profile), 0.1, X, y, folds, "roc_auc", 0, None)
    assert [f.column for f in report.findings] == ["approval_score"]


def test_reports_add_up_high_first_with_their_notes():
    medium = LeakageReport((LeakFinding("a", "identifier", "medium", {}, "m"),), ("data",))
    high = LeakageReport((LeakFinding("b", "dominant_feature", "high", {}, "h"),), ("model",))
    total = medium + high
    assert [f.column for f in total.findings] == ["b", "a"] and total.notes == ("data", "model")


def test_a_fold_is_not_started_when_the_last_ones_pace_would_pass_the_deadline(leaky, monkeypatch):
    from automl.checks import dominance

    X, y, profile, folds = leaky
    clock, real_fit = [100.0], dominance.fit_quietly

    def slow_fit(model, *args):  # every fit takes 40 s of the fake clock
        clock[0] += 40.0
        return real_fit(model, *args)

    monkeypatch.setattr("automl.checks.dominance.time", SimpleNamespace(time=lambda: clock[0]))
    monkeypatch.setattr("automl.checks.dominance.fit_quietly", slow_fit)
    report = check_model_dominance(hgb_pipeline(profile), X, y, folds, metric="roc_auc", random_state=0,
                                   deadline=150.0)
    # The first fold ended at 140 s; a second 40 s fold would end at 180 s, past 150: never begun.
    assert clock[0] == 140.0
    assert report.findings[0].evidence["n_folds"] == 1
