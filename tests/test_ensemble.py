"""Tests of automl.ensemble.WeightedEnsembleClassifier on sklearn's iris and breast-cancer data."""

import datetime
import doctest
import os

import numpy as np
import optuna
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from threadpoolctl import threadpool_info

from automl import ensemble as ensemble_module
from automl.ensemble import WeightedEnsembleClassifier, voting
from automl.search import SearchResult, get_metric


def logistic():
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))


def tree():
    return DecisionTreeClassifier(max_depth=3, random_state=0)


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


def three_folds(X, y):
    return list(StratifiedKFold(n_splits=3, shuffle=True, random_state=0).split(X, y))


def test_refit_probabilities_are_the_weighted_average(iris):
    X, y = iris
    ensemble = WeightedEnsembleClassifier(estimators=[logistic(), tree()], weights=[0.7, 0.3])
    assert ensemble.fit(X, y) is ensemble
    proba = ensemble.predict_proba(X)
    assert proba.shape == (150, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(ensemble.weights_, [0.7, 0.3])
    np.testing.assert_array_equal(ensemble.classes_, [0, 1, 2])
    assert ensemble.n_features_in_ == 4
    expected = 0.7 * logistic().fit(X, y).predict_proba(X) + 0.3 * tree().fit(X, y).predict_proba(X)
    np.testing.assert_allclose(proba, expected)
    np.testing.assert_array_equal(ensemble.predict(X), np.argmax(expected, axis=1))
    assert np.mean(ensemble.predict(X) == y) > 0.9


def test_certain_members_never_sum_above_one(iris):
    # Five members that all give probability 1 (unpruned trees on their training rows): with these
    # ensemble-selection counts the float sum of weight x 1 is 1.0000000000000002, which
    # scikit-learn's log_loss and roc_auc_score reject ("y_prob contains values greater than 1";
    # seen on kc1 at a 300 s budget).
    from sklearn.metrics import log_loss
    X, y = iris
    weights = [7, 4, 1, 6, 2]
    members = [DecisionTreeClassifier(random_state=seed) for seed in range(len(weights))]
    ensemble = WeightedEnsembleClassifier(estimators=members, weights=weights).fit(X, y)
    assert sum(ensemble.weights_ * 1.0) > 1.0  # the float overflow this guards against, in the members' order
    proba = ensemble.predict_proba(X)
    assert proba.max() == 1.0
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert log_loss(y, proba) < 1e-9


def test_weights_are_normalized_and_zero_weight_members_dropped(iris):
    X, y = iris
    ensemble = WeightedEnsembleClassifier(estimators=[logistic(), tree()], weights=[2.0, 0.0]).fit(X, y)
    assert len(ensemble.estimators_) == 1
    np.testing.assert_array_equal(ensemble.weights_, [1.0])
    np.testing.assert_array_equal(ensemble.predict_proba(X), logistic().fit(X, y).predict_proba(X))


class _ThreadCountingTree(DecisionTreeClassifier):
    """Records the OpenMP thread count its fit would start (per thread, as OpenMP keeps it)."""

    seen = []

    def fit(self, X, y, sample_weight=None):
        openmp = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "openmp"]
        type(self).seen.append(max(openmp))
        return super().fit(X, y, sample_weight=sample_weight)


def _threads_seen(X, y, n_members, n_jobs):
    # Loads scikit-learn's OpenMP runtime, which HistGradientBoosting members would use.
    import sklearn.ensemble._hist_gradient_boosting._gradient_boosting  # noqa: F401

    _ThreadCountingTree.seen = []
    members = [_ThreadCountingTree(max_depth=d, random_state=0) for d in range(2, 2 + n_members)]
    WeightedEnsembleClassifier(estimators=members, weights=[1] * n_members, n_jobs=n_jobs).fit(X, y)
    return _ThreadCountingTree.seen


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs 2 cores to share out")
def test_parallel_member_fits_share_the_cores_out(iris, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    # Each of the 2 threads may use half the cores; joblib's threads do not inherit the caller's limit.
    assert _threads_seen(*iris, n_members=4, n_jobs=2) == [os.cpu_count() // 2] * 4
    # One member has no other to share with: it gets every core, whatever n_jobs says.
    assert _threads_seen(*iris, n_members=1, n_jobs=2) == [os.cpu_count()]
    # A user's OMP_NUM_THREADS (set when other workers share the machine) is kept.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert _threads_seen(*iris, n_members=1, n_jobs=1) == [1]


def test_bag_fits_one_model_per_fold(iris):
    X, y = iris
    folds = three_folds(X, y)
    ensemble = WeightedEnsembleClassifier(
        estimators=[logistic(), tree()], weights=[1, 1], final_fit="bag", cv=folds
    ).fit(X, y)
    assert [len(models) for models in ensemble.estimators_] == [3, 3]
    coefs = [m[-1].coef_ for m in ensemble.estimators_[0]]
    assert not np.allclose(coefs[0], coefs[1])
    # Each fold model is fit on its fold's training rows only.
    for model, (train, _) in zip(ensemble.estimators_[0], folds):
        expected = logistic().fit(X[train], y[train])
        np.testing.assert_allclose(model[-1].coef_, expected[-1].coef_)
    per_member = [np.mean([m.predict_proba(X) for m in models], axis=0) for models in ensemble.estimators_]
    np.testing.assert_allclose(ensemble.predict_proba(X), 0.5 * per_member[0] + 0.5 * per_member[1])


def test_bag_aligns_classes_missing_from_a_fold(iris):
    X, y = iris
    rows = np.arange(len(y))
    # The first fold never sees class 0, so its model's columns are classes 1 and 2.
    folds = [(rows[y != 0], rows[y == 0]), (rows, rows)]
    ensemble = WeightedEnsembleClassifier(
        estimators=[tree()], weights=[1.0], final_fit="bag", cv=folds
    ).fit(X, y)
    first_fold_model, full_model = ensemble.estimators_[0]
    np.testing.assert_array_equal(first_fold_model.classes_, [1, 2])
    proba = ensemble.predict_proba(X)
    assert proba.shape == (150, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    expected = 0.5 * full_model.predict_proba(X)
    expected[:, 1:] += 0.5 * first_fold_model.predict_proba(X)
    np.testing.assert_allclose(proba, expected)
    # Class 0 gets half the mass the full-data tree gives it: the first fold model gives it none.
    np.testing.assert_allclose(proba[:, 0], 0.5 * full_model.predict_proba(X)[:, 0])


def test_binary_dataframe_input_with_bagging():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    y = y.to_numpy()
    ensemble = WeightedEnsembleClassifier(
        estimators=[logistic(), tree()], weights=[3, 1], final_fit="bag", cv=three_folds(X, y)
    ).fit(X, y)
    assert ensemble.n_features_in_ == 30
    assert list(ensemble.feature_names_in_) == list(X.columns)
    proba = ensemble.predict_proba(X)
    assert proba.shape == (len(y), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.mean(ensemble.predict(X) == y) > 0.95


def test_predict_checks_feature_count(iris):
    X, y = iris
    ensemble = WeightedEnsembleClassifier(estimators=[tree()], weights=[1.0]).fit(X, y)
    with pytest.raises(ValueError, match="4 features"):
        ensemble.predict_proba(X[:, :3])


def test_clone_keeps_params_and_drops_fitted_state(iris):
    X, y = iris
    folds = three_folds(X, y)
    ensemble = WeightedEnsembleClassifier(
        estimators=[logistic(), tree()], weights=[0.4, 0.6], final_fit="bag", cv=folds
    )
    ensemble.fit(X, y)
    copy = clone(ensemble)
    assert not hasattr(copy, "estimators_")
    assert copy.weights == [0.4, 0.6]
    assert copy.final_fit == "bag"
    assert len(copy.cv) == 3
    assert copy.estimators[0] is not ensemble.estimators[0]
    np.testing.assert_allclose(copy.fit(X, y).predict_proba(X), ensemble.predict_proba(X))


@pytest.mark.parametrize(
    "params, message",
    [
        ({"weights": [0.0, 0.0]}, "'weights' parameter.*not all zero"),
        ({"weights": [1.0, -0.5]}, "'weights' parameter.*non-negative"),
        ({"weights": [1.0]}, r"'weights' parameter.*one weight per estimator \(2\)"),
        ({"weights": [1.0, 1.0], "final_fit": "stack"}, "'final_fit' parameter.*Got 'stack'"),
        ({"weights": [1.0, 1.0], "final_fit": "bag"}, "'cv' parameter.*Got None"),
    ],
)
def test_invalid_params_raise_in_fit_not_init(iris, params, message):
    X, y = iris
    ensemble = WeightedEnsembleClassifier(estimators=[logistic(), tree()], **params)
    with pytest.raises(ValueError, match=message):
        ensemble.fit(X, y)


def test_string_labels_are_rejected(iris):
    X, y = iris
    labels = np.array(["a", "b", "c"])[y]
    with pytest.raises(ValueError, match="encoded as integers"):
        WeightedEnsembleClassifier(estimators=[tree()], weights=[1.0]).fit(X, labels)


def test_docstring_examples_run():
    result = doctest.testmod(voting)
    assert result.attempted > 0
    assert result.failed == 0


def test_members_in_time_keeps_what_two_threads_can_fit():
    chosen = {3: 0.5, 7: 0.3, 9: 0.2}
    # Two threads: 4 + 4 + 4 s spread as 8 s and 4 s; Graham's bound says 12/2 + 4/2 = 8 s.
    assert ensemble_module.members_in_time(chosen, {3: 4.0, 7: 4.0, 9: 4.0}, 8.0, n_jobs=2) == chosen
    # One long member runs alone: 10 s and 1 s on two threads take 10 s, not the (10 + 1) / 2 = 5.5
    # a plain sum over threads would predict, so the lighter member is dropped at 8 s.
    kept = ensemble_module.members_in_time({3: 0.6, 7: 0.4}, {3: 10.0, 7: 1.0}, 8.0, n_jobs=2)
    assert kept == {3: 1.0}


def test_members_in_time_drops_the_lightest_and_renormalizes():
    chosen = {1: 0.5, 2: 0.3, 4: 0.2}
    kept = ensemble_module.members_in_time(chosen, {1: 2.0, 2: 5.0, 4: 1.0}, 3.5, n_jobs=1)
    # Member 2 (0.3) would end at 7 s; member 4 (0.2) still fits after member 1.
    assert kept == pytest.approx({1: 0.5 / 0.7, 4: 0.2 / 0.7})
    # The heaviest member is kept even when it alone is over the time left.
    assert ensemble_module.members_in_time(chosen, {1: 9.0, 2: 1.0, 4: 1.0}, 0.5) == {1: 1.0}


def _two_trial_result(y):
    """A finished search of two trials (8 s and 2 s): trial 0 right on every row, trial 1 a coin."""
    study = optuna.create_study(direction="maximize")
    start = datetime.datetime(2026, 1, 1)
    for number, seconds in enumerate((8.0, 2.0)):
        study.add_trial(optuna.trial.FrozenTrial(
            number=number, trial_id=number, state=optuna.trial.TrialState.COMPLETE, value=0.5,
            datetime_start=start, datetime_complete=start + datetime.timedelta(seconds=seconds), params={},
            distributions={}, user_attrs={}, system_attrs={}, intermediate_values={}))
    right = np.column_stack([1.0 - y, y]).astype(float)
    oof = {0: right, 1: np.full((len(y), 2), 0.5)}
    return SearchResult(study=study, oof=oof, seconds=10.0, killed=0, callback_seconds=0.0)


def test_final_fit_seconds_schedules_the_members_selection_would_choose():
    """Selection takes the right trial alone, and its refit costs one fold of its trial."""
    y = np.array([0, 1] * 10)
    result = _two_trial_result(y)
    folds = [(None, test) for test in np.array_split(np.arange(len(y)), 5)]
    common = dict(ensemble_size=10, n_jobs=1, random_state=0)
    estimate = ensemble_module.final_fit_seconds
    assert estimate(result, y, folds, get_metric("roc_auc", 2), final_fit="refit", **common) == pytest.approx(8.0 / 4)
    assert estimate(result, y, folds, get_metric("roc_auc", 2), final_fit="bag", **common) == pytest.approx(8.0)


def test_a_holdout_search_has_nothing_to_refit_and_selects_on_the_holdout_rows():
    """One fold: the members are the trials' own models (no final fit), and selection sees only its test rows."""
    y = np.array([0, 1] * 10)
    result = _two_trial_result(y[:6])  # OOF arrays of the 6 holdout rows
    folds = [(np.arange(6, 20), np.array([0, 1, 2, 3, 4, 5]))]
    seconds = ensemble_module.final_fit_seconds(result, y, folds, get_metric("roc_auc", 2), final_fit="refit",
                                                ensemble_size=10, n_jobs=1, random_state=0)
    assert seconds == 0.0 and result.selection[2] == {0: 1.0}


def test_selection_is_run_once_per_set_of_trials(monkeypatch):
    """The top-up's estimate and the final ensemble share one selection; new trials or a new size redo it."""
    y = np.array([0, 1] * 10)
    result = _two_trial_result(y)
    runs = []
    real_fit = ensemble_module.EnsembleSelection.fit

    def counted(self, *args, **kwargs):
        runs.append(self.ensemble_size)
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(ensemble_module.EnsembleSelection, "fit", counted)
    metric = get_metric("roc_auc", 2)
    first = ensemble_module.select_members(result, y, metric, 10, 0)
    first[1][0] = -1.0  # the caller's copy: changing it must not change the kept answer
    again = ensemble_module.select_members(result, y, metric, 10, 0)
    assert runs == [10]
    assert again[0] is first[0] and again[1] == {0: 1.0}
    ensemble_module.select_members(result, y, metric, 5, 0)
    assert runs == [10, 5]
    result.oof[2] = result.oof[0]
    _, chosen = ensemble_module.select_members(result, y, metric, 5, 0)
    assert runs == [10, 5, 5] and set(chosen) <= {0, 2}
    topped = result.followed_by(result)
    assert topped.selection is None


def test_the_fallback_is_the_class_prior_when_no_time_is_left(credit):
    # Fit after a search in which no trial finished: the linear model when the final stage has time,
    # the class prior at once when it has none.
    from sklearn.dummy import DummyClassifier
    from sklearn.pipeline import Pipeline

    from automl.ensemble import fit_fallback

    X, y, profile, _ = credit
    linear = fit_fallback(X, y, profile, seed=0, seconds_left=30.0)
    assert isinstance(linear.estimators_[0], Pipeline)
    prior = fit_fallback(X, y, profile, seed=0, seconds_left=-0.5)
    assert isinstance(prior.estimators_[0], DummyClassifier)
    np.testing.assert_allclose(prior.predict_proba(X.head(2)), [np.bincount(y) / len(y)] * 2)
