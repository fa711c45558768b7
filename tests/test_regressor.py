"""AutoRegressor: scikit-learn's common checks, then the regression path of every stage on real data."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.dummy import DummyRegressor
from sklearn.metrics import mean_absolute_error, r2_score, root_mean_squared_error
from sklearn.model_selection import train_test_split
from sklearn.utils.estimator_checks import parametrize_with_checks

from automl import AutoRegressor, load, nested_cv
from automl.ensemble import WeightedEnsembleRegressor
from automl.exceptions import DataValidationError, LeakageWarning
from automl.search import get_metric
from automl.space import REGRESSION_COMPONENTS, rebuild

TINY = dict(time_budget=None, n_trials=3, include=["ridge"], cv=2, tracking=False, verbose=0, random_state=0)


@parametrize_with_checks([AutoRegressor(**TINY)], expected_failed_checks=lambda estimator: {
    # As for the classifier (test_estimator.py): repeated rows change the CV folds, weights do not.
    "check_sample_weight_equivalence_on_dense_data": "repeated rows change the CV folds; weights do not"})
def test_sklearn_common_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


@pytest.fixture(scope="module")
def abalone(load_shared):
    # 4,177 rows; a categorical column (Sex); ring counts 1-29, skew 1.1 (the log transform is offered).
    X, y = load_shared("abalone.csv", "Class_Rings")
    return train_test_split(X, y, test_size=0.25, random_state=0)


@pytest.fixture(scope="module")
def fitted(abalone):
    X, X_test, y, y_test = abalone
    params = dict(TINY, include=["ridge", "hgb", "rf", "knn"], n_trials=8, cv=3, leak_check="off")
    return AutoRegressor(**params).fit(X.iloc[:1500], y.iloc[:1500])


def test_fit_scores_rmse_and_beats_the_mean_on_held_out_rows(abalone, fitted):
    X, X_test, y, y_test = abalone
    assert fitted.metric_ == "rmse" and fitted.study_.direction.name == "MINIMIZE"
    complete = fitted.leaderboard_[fitted.leaderboard_["state"] == "COMPLETE"]
    assert fitted.best_score_ == pytest.approx(complete["mean"].min())
    # Ensemble selection starts from the best single trial and only adds what lowers the pooled RMSE.
    assert fitted.ensemble_score_ <= fitted.best_single_oof_score_ + 1e-12
    pred = fitted.predict(X_test)
    assert pred.dtype == np.float64 and pred.shape == (len(X_test),)
    mean_rmse = root_mean_squared_error(y_test, DummyRegressor().fit(X, y).predict(X_test))
    rmse = root_mean_squared_error(y_test, pred)
    assert rmse < 0.8 * mean_rmse, (rmse, mean_rmse)  # measured: 2.2 against 3.3
    assert not hasattr(fitted, "classes_") and not hasattr(fitted, "predict_proba")


def test_best_trial_rebuilds_with_its_target_transform(abalone, fitted):
    X, X_test, y, y_test = abalone
    params = {t.number: t.params for t in fitted.study_.trials}
    assert {p["target"] for p in params.values()} <= {"standard", "log"}
    pipeline = rebuild(fitted.best_params_, fitted.profile_, fitted.components_, fitted.random_state_)
    assert type(pipeline).__name__ == "TransformedTargetRegressor"
    assert np.isfinite(pipeline.fit(X.iloc[:500], y.iloc[:500]).predict(X_test.iloc[:5])).all()


def test_log_target_is_offered_only_for_a_non_negative_skewed_target(abalone):
    X, _, y, _ = abalone
    shifted = AutoRegressor(**dict(TINY, n_trials=4)).fit(X.iloc[:400], y.iloc[:400] - 10.0)
    assert [t.params.get("target") for t in shifted.study_.trials] == [None] * 4  # no choice, no parameter
    assert shifted.profile_.target_stats["min"] < 0


def test_a_study_continued_on_a_target_that_lost_its_log_choice_completes_its_trials(abalone, tmp_path):
    # A retraining job's next snapshot: the same study, a target turned negative. Optuna refuses a
    # parameter whose choices change within a study, so the choice must not be a one-choice parameter.
    X, _, y, _ = abalone
    settings = dict(TINY, n_trials=3, storage=f"sqlite:///{tmp_path / 'optuna.db'}", study_name="snapshots")
    first = AutoRegressor(**settings).fit(X.iloc[:400], y.iloc[:400])
    assert {t.params["target"] for t in first.study_.trials} <= {"standard", "log"}
    second = AutoRegressor(**settings).fit(X.iloc[400:800], y.iloc[400:800] - 10.0)
    board = second.leaderboard_
    assert len(board) == 3 and "FAIL" not in set(board["state"]) and "COMPLETE" in set(board["state"]), board
    assert len(second.study_.trials) == 6


def test_same_seed_same_leaderboard(abalone):
    X, _, y, _ = abalone
    params = dict(TINY, include=["ridge", "hgb", "et"], n_trials=5, cv=3, leak_check="off")
    first = AutoRegressor(**params).fit(X.iloc[:800], y.iloc[:800]).leaderboard_
    second = AutoRegressor(**params).fit(X.iloc[:800], y.iloc[:800]).leaderboard_
    pd.testing.assert_frame_equal(first.drop(columns="seconds"), second.drop(columns="seconds"))


@pytest.mark.parametrize("metric, direction", [("mae", "MINIMIZE"), ("r2", "MAXIMIZE")])
def test_metric_sets_the_direction(abalone, metric, direction):
    X, _, y, _ = abalone
    model = AutoRegressor(**dict(TINY, metric=metric)).fit(X.iloc[:300], y.iloc[:300])
    assert model.metric_ == metric and model.study_.direction.name == direction


def test_regression_metrics_match_sklearn():
    rng = np.random.default_rng(0)
    y, pred = rng.normal(size=200), rng.normal(size=200)
    assert get_metric(None, 0).name == "rmse"
    assert get_metric("rmse", 0)(y, pred) == pytest.approx(root_mean_squared_error(y, pred))
    assert get_metric("mae", 0)(y, pred) == pytest.approx(mean_absolute_error(y, pred))
    assert get_metric("r2", 0)(y, pred) == pytest.approx(r2_score(y, pred))
    with pytest.raises(ValueError, match="Unknown regression metric 'roc_auc'. Valid metrics are: mae, r2, rmse"):
        get_metric("roc_auc", 0)


def test_weighted_ensemble_regressor_averages_its_members():
    from sklearn.linear_model import LinearRegression
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    y = X @ [1.0, 2.0, 0.0] + rng.normal(size=100)
    members = [LinearRegression(), DecisionTreeRegressor(max_depth=2, random_state=0)]
    ensemble = WeightedEnsembleRegressor(estimators=members, weights=[3, 1]).fit(X, y)
    expected = 0.75 * members[0].fit(X, y).predict(X) + 0.25 * members[1].fit(X, y).predict(X)
    np.testing.assert_allclose(ensemble.predict(X), expected)
    with pytest.raises(ValueError, match="finite target"):
        WeightedEnsembleRegressor(estimators=members, weights=[1, 1]).fit(X, np.r_[y[:-1], np.inf])


@pytest.mark.parametrize("y, pattern", [
    (["a", "b"] * 50, r"must be numeric; y has 100 value\(s\) that are not numbers \(first 'a' at position 0\)"),
    (["1.5", "2"] * 50, r"y holds numbers stored as text \(dtype <U3, first '1.5'\): convert it with pandas"),
    ([True, False] * 50, r"must be numeric; y has dtype bool"),
    ([1.0, np.nan, np.inf, np.nan] * 25, r"y has 50 missing \(NaN\) value\(s\), first at positions \[1, 3, 5"),
    ([1.0, np.inf] * 50, r"y has 50 infinite value\(s\), first at positions \[1, 3, 5, 7, 9\]"),
    ([3.0] * 100, r"y is constant \(3.0 on every row\)"),
    ([1.0, 2.0] * 40, r"X and y have different lengths: X has 100 rows, y has 80 values"),
])
def test_bad_targets_are_named_errors(y, pattern):
    X = pd.DataFrame({"a": np.arange(100.0)})
    with pytest.raises(DataValidationError, match=pattern):
        AutoRegressor(**TINY).fit(X, y)


def test_leak_check_flags_a_function_of_the_target(abalone):
    X, _, y, _ = abalone
    X = X.iloc[:1000].assign(rings_logged=np.log(y.iloc[:1000].to_numpy()) + 0.001)
    with pytest.warns(LeakageWarning, match="'rings_logged' is a near-exact function of the target"):
        model = AutoRegressor(**dict(TINY, leak_check="warn")).fit(X, y.iloc[:1000])
    (finding,) = [f for f in model.leak_report_.findings if f.kind == "target_leakage"]
    assert finding.column == "rings_logged" and finding.severity == "high"
    assert finding.evidence["spearman_abs"] == 1.0
    with pytest.raises(DataValidationError, match="high-severity"):
        AutoRegressor(**dict(TINY, leak_check="raise")).fit(X, y.iloc[:1000])


def test_save_load_report_and_pyfunc(abalone, fitted, tmp_path):
    import mlflow.pyfunc

    X, X_test, _, _ = abalone
    fitted.save(tmp_path / "model")
    loaded = load(tmp_path / "model")
    np.testing.assert_array_equal(loaded.predict(X_test), fitted.predict(X_test))
    served = mlflow.pyfunc.load_model(str(tmp_path / "model")).predict(X_test.iloc[:5])
    np.testing.assert_allclose(np.asarray(served, dtype=float), fitted.predict(X_test.iloc[:5]))
    page = fitted.report(tmp_path / "report.html").read_text()
    assert re.search(r"task regression; target min [0-9.]+, max [0-9.]+, mean", page) and "rmse" in page


def test_nested_cv_scores_the_regressor_and_its_baselines(abalone):
    X, _, y, _ = abalone
    report = nested_cv(AutoRegressor(**TINY), X.iloc[:600], y.iloc[:600], outer_cv=2, random_state=0)
    assert report.metric == "rmse" and not report.greater_is_better
    assert {"ensemble", "ridge", "hgb", "dummy"} <= set(report.folds.columns)
    assert "logreg" not in report.folds.columns
    # The mean predictor is the floor every model must clear on held-out rows.
    assert (report.folds["ensemble"] < report.folds["dummy"]).all()


@pytest.mark.parametrize("key", [c.key for c in REGRESSION_COMPONENTS if c.default_params])
def test_each_regression_familys_first_trial_fits_and_beats_the_mean(abalone, key):
    X, X_test, y, y_test = abalone
    model = AutoRegressor(**dict(TINY, include=[key], n_trials=1, leak_check="off")).fit(X.iloc[:1500], y.iloc[:1500])
    assert model.leaderboard_["family"].tolist() == [key] and model.leaderboard_["state"].tolist() == ["COMPLETE"]
    rmse = root_mean_squared_error(y_test, model.predict(X_test))
    assert rmse < 0.8 * root_mean_squared_error(y_test, np.full(len(y_test), y.iloc[:1500].mean())), rmse


def test_a_family_too_large_for_the_data_is_named(load_shared):
    X, y = load_shared("kin8nm.csv", "y")  # 8,192 rows; SVR is offered up to 5,000
    with pytest.raises(ValueError, match="Not searched on 8,192 rows: 'svr' up to 5,000 rows"):
        AutoRegressor(**dict(TINY, include=["svr"])).fit(X, y)
    with pytest.warns(UserWarning, match="Not searched on 8,192 rows: 'svr' up to 5,000 rows"):
        model = AutoRegressor(**dict(TINY, include=["svr", "ridge"], n_trials=1, leak_check="off")).fit(X, y)
    assert [spec.key for spec in model.components_] == ["ridge"]


def test_no_target_leak_is_claimed_on_a_handful_of_rows():
    # On 3 rows any monotone column has a rank correlation of 1 with y: that is chance, not a leak.
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.5, 0.1, 0.9]})
    model = AutoRegressor(**dict(TINY, cv=3, leak_check="warn")).fit(X, [1.0, 2.0, 4.0])
    assert [f for f in model.leak_report_.findings if f.kind == "target_leakage"] == []


def test_a_numeric_target_as_labels_is_refused_not_mostly_dropped(abalone):
    from automl import AutoClassifier

    X, _, y, _ = abalone
    # Read as text (as a CSV with one bad cell would be): 300 rows, most values seen once.
    values = (y.iloc[:300] + np.random.default_rng(0).normal(0, 0.01, 300)).round(3).astype(str)
    with pytest.raises(DataValidationError, match=r"of the rows: that is not a set of class labels\. For a numeric"):
        AutoClassifier(**dict(TINY, include=["logreg"])).fit(X.iloc[:300], values)
