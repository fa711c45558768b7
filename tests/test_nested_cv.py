"""Tests of automl.nested_cv on real data: fold rows, baselines, the optimism gap, isolation of the test parts."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import ExtraTreesClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from automl import AutoClassifier
from automl.estimators import QUANTITIES, NestedCVReport, nested_cv
from automl.estimators.nested import _align
from automl.exceptions import DataValidationError
from automl.space import ComponentSpec

TINY = dict(time_budget=None, n_trials=4, include=["logreg", "hgb"], cv=2, tracking=False, verbose=0,
            random_state=0)
SCORES = ["ensemble", "best_single", "inner_best", "inner_ensemble", "optimism_gap", "dummy", "logreg", "hgb"]


@pytest.fixture(scope="module")
def credit_g(load_shared):
    return load_shared("credit-g.csv", "class")


@pytest.fixture(scope="module")
def report(credit_g):
    """One sequential nested CV of a small search on credit-g (1,000 rows, 13 categorical columns)."""
    X, y = credit_g
    with threadpool_limits(limits=1):  # module fixtures start before the autouse one_thread
        return nested_cv(AutoClassifier(**TINY), X, y, outer_cv=3, random_state=0)


def test_one_row_per_outer_fold_and_a_summary_of_each_quantity(report, credit_g):
    X, _ = credit_g
    folds = report.folds
    assert isinstance(report, NestedCVReport) and report.metric == "roc_auc" and report.greater_is_better
    assert folds["fold"].tolist() == [0, 1, 2]
    assert (folds["n_train"] + folds["n_test"] == len(X)).all()
    assert folds["n_test"].sum() == len(X)  # the outer test parts partition the rows
    assert np.isfinite(folds[SCORES].to_numpy(dtype=float)).all()
    assert (folds["n_trials"] == TINY["n_trials"]).all() and (folds["fit_seconds"] > 0).all()
    assert set(folds["best_family"]) <= {"logreg", "hgb"}
    summary = report.summary
    assert summary.index.tolist() == [q for q in QUANTITIES if q != "ridge"]  # ridge: a regressor's baseline
    assert summary.columns.tolist() == ["mean", "std", "sem"]
    np.testing.assert_allclose(summary.loc["ensemble", "mean"], folds["ensemble"].mean())
    np.testing.assert_allclose(summary["sem"], summary["std"] / np.sqrt(3))


def test_baselines_are_scored_on_the_outer_test_parts(report):
    folds = report.folds
    # A prior-only model ranks every row alike: ROC AUC is exactly one half, on every fold.
    assert folds["dummy"].tolist() == [0.5, 0.5, 0.5]
    # credit-g is learnable: a default model well above chance means rows and labels stayed paired.
    assert (folds["hgb"] > 0.7).all() and (folds["logreg"] > 0.7).all()
    assert (folds["ensemble"] > 0.7).all()


def test_optimism_gap_is_inner_best_minus_outer_best_single(report):
    folds = report.folds
    np.testing.assert_allclose(folds["optimism_gap"], folds["inner_best"] - folds["best_single"])


def test_gap_sign_is_flipped_for_a_loss_and_a_splitter_is_accepted(load_shared):
    X, y = load_shared("blood-transfusion.csv", "target")
    model = AutoClassifier(**dict(TINY, include=["logreg"], n_trials=2, metric="log_loss"))
    splitter = StratifiedKFold(n_splits=2, shuffle=True, random_state=3)
    report = nested_cv(model, X, y, outer_cv=splitter)
    folds = report.folds
    assert report.metric == "log_loss" and not report.greater_is_better and len(folds) == 2
    # Positive still means optimistic: for a loss the outer score is the larger one.
    np.testing.assert_allclose(folds["optimism_gap"], folds["best_single"] - folds["inner_best"])
    assert (folds["dummy"] > folds["logreg"]).all()  # the prior's log loss is the worse one


SEEN = []  # (row labels, random_state) of each RecordingClassifier fit


class RecordingClassifier(AutoClassifier):
    """An AutoClassifier that remembers the rows and the seed each fit received (in SEEN)."""

    def fit(self, X, y, groups=None, sample_weight=None):
        SEEN.append((X.index.to_numpy(), self.random_state))
        return super().fit(X, y, groups, sample_weight)


def _no_knobs(trial, profile, prefix):
    return {}


def _small_extra_trees(params, random_state):
    return ExtraTreesClassifier(n_estimators=20, max_features=0.5, random_state=random_state)


# A cheap family whose fit depends on its seed (random split points and features).
SMALL_ET = ComponentSpec("small_et", "Small ExtraTrees", _no_knobs, _small_extra_trees)


def test_outer_test_rows_never_reach_the_inner_fit(credit_g):
    X, y = credit_g
    SEEN.clear()
    # One trial and a one-pick ensemble: the ensemble IS the best trial's pipeline, so equal scores
    # show that the best single was rebuilt with the search's family, seed and training rows.
    model = RecordingClassifier(**dict(TINY, include=["small_et"], components=[SMALL_ET], n_trials=1,
                                       ensemble_size=1, random_state=None))
    report = nested_cv(model, X, y, outer_cv=3, random_state=1)
    expected = StratifiedKFold(n_splits=3, shuffle=True, random_state=1).split(X, y)
    assert len(SEEN) == 3
    for (seen, seed), (train, test), (_, row) in zip(SEEN, expected, report.folds.iterrows()):
        np.testing.assert_array_equal(np.sort(seen), train)
        assert not set(seen) & set(test)
        assert row["n_train"] == len(train) and row["n_test"] == len(test)
        # The estimator's random_state was None: nested_cv fixed one per fold and reports it.
        assert isinstance(seed, int) and row["seed"] == seed
        assert row["best_family"] == "small_et" and row["ensemble"] == row["best_single"]


def test_parallel_outer_folds_give_the_sequential_results(report, credit_g):
    X, y = credit_g
    parallel = nested_cv(AutoClassifier(**TINY), X, y, outer_cv=3, n_jobs=2, random_state=0)
    columns = [c for c in report.folds.columns if c != "fit_seconds"]
    pd.testing.assert_frame_equal(parallel.folds[columns], report.folds[columns])


def test_outer_cv_below_two_is_refused(credit_g):
    X, y = credit_g
    message = r"The 'outer_cv' parameter of nested_cv must be an int in \[2, inf\) or a CV splitter. Got 1"
    with pytest.raises(ValueError, match=message):
        nested_cv(AutoClassifier(**TINY), X, y, outer_cv=1)
    with pytest.raises(ValueError, match=r"'n_jobs' parameter of nested_cv must be an int in \[1, inf\) or an int "
                                         r"in \(-inf, -1\]. Got 0"):
        nested_cv(AutoClassifier(**TINY), X, y, n_jobs=0)


def test_a_class_rarer_than_outer_cv_is_refused(credit_g):
    X, y = credit_g
    y = y.where(y.index > 1, "rare")  # two members: not enough for three outer training parts
    with pytest.raises(DataValidationError, match=r"outer_cv=3.*'rare' has 2 member.*lower outer_cv"):
        nested_cv(AutoClassifier(**TINY), X, y, outer_cv=3)


def test_a_class_seen_once_is_refused_even_with_a_splitter(credit_g):
    # The data check drops such a row; outer folds of the rows left would then index the wrong rows of X.
    X, y = credit_g
    y = y.where(y.index != 500, "once")
    with pytest.raises(DataValidationError, match=r"class 'once' has 1 member"):
        nested_cv(AutoClassifier(**TINY), X, y, outer_cv=StratifiedKFold(2, shuffle=True, random_state=0))


def test_only_an_autoclassifier_without_persistent_storage_is_nested(credit_g):
    X, y = credit_g
    with pytest.raises(TypeError, match="needs an AutoClassifier or AutoRegressor; got LogisticRegression"):
        nested_cv(LogisticRegression(), X, y)
    with pytest.raises(ValueError, match="'storage' parameter of the estimator must be None"):
        nested_cv(AutoClassifier(**dict(TINY, storage="sqlite:///study.db")), X, y)


def test_to_dict_is_strict_json(report):
    payload = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert payload["metric"] == "roc_auc" and payload["greater_is_better"] is True
    assert len(payload["folds"]) == 3 and payload["folds"][0]["dummy"] == 0.5
    assert set(payload["summary"]) == set(QUANTITIES) - {"ridge"}
    assert set(payload["summary"]["hgb"]) == {"mean", "std", "sem"}


def test_probability_columns_follow_the_full_label_set():
    proba = np.array([[0.2, 0.8], [0.6, 0.4]])
    full = _align(proba, np.array(["b", "c"]), np.array(["a", "b", "c"]))
    np.testing.assert_array_equal(full, [[0.0, 0.2, 0.8], [0.0, 0.6, 0.4]])
    with pytest.raises(ValueError, match="not all among the classes"):
        _align(proba, np.array(["b", "z"]), np.array(["a", "b", "c"]))


def test_a_tracked_estimator_logs_the_report_as_a_run(credit_g, tmp_path):
    from automl.tracking import read_run_json

    X, y = credit_g
    uri = "sqlite:///" + str(tmp_path / "mlflow.db")
    estimator = AutoClassifier(**{**TINY, "tracking": True, "n_trials": 2}, tracking_uri=uri)
    report = nested_cv(estimator, X.iloc[:300], y.iloc[:300], outer_cv=2, random_state=0)
    import mlflow

    run = mlflow.MlflowClient(uri).get_run(report.mlflow_run_id)
    assert run.info.run_name == "nested-cv" and run.data.params["outer_cv"] == "2"
    assert run.data.metrics["nested_ensemble_mean"] == pytest.approx(report.summary.loc["ensemble", "mean"])
    logged = read_run_json(uri, report.mlflow_run_id, "nested_cv.json")
    assert [f["fold"] for f in logged["folds"]] == [0, 1]
    # Each outer fit is a tracked fit of its own, named in the fold rows.
    assert report.folds["mlflow_run_id"].notna().all() and report.folds["mlflow_run_id"].nunique() == 2


def test_automl_nested_cv_is_callable_after_the_submodule_is_imported(credit_g):
    # When nested_cv's module was automl.nested_cv, importing it rebound the package attribute to the
    # module, and calling it raised "'module' object is not callable". Its module is now
    # automl.estimators.nested (this file imports it above): the attribute stays the function.
    import automl

    X, y = credit_g[0].iloc[:200], credit_g[1].iloc[:200]
    model = AutoClassifier(time_budget=None, n_trials=1, include=["logreg"], cv=2, tracking=False, verbose=0,
                           random_state=0)
    report = automl.nested_cv(model, X, y, outer_cv=2, random_state=0)
    assert automl.nested_cv(model, X, y, outer_cv=2, random_state=0).folds["ensemble"].tolist() == \
        report.folds["ensemble"].tolist()
