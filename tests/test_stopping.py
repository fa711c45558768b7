"""Early stopping on the last rows of a holdout's rung, read in place (space/stopping.py, space/boosting.py)."""

import tracemalloc

import joblib
import numpy as np
import optuna
import pytest
from lightgbm import LGBMClassifier, early_stopping
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from automl.data import check_training_data
from automl.search import CVObjective, model_path, prepare_search, scored_rows
from automl.space import fit_quietly, rebuild
from automl.space.boosting import STOPPING_ROUNDS, EarlyStoppingLGBMClassifier
from automl.space.stopping import StoppingHGBClassifier, StoppingHGBRegressor, tail_start

HGB = dict(early_stopping=True, max_iter=300, n_iter_no_change=10, random_state=0)


@pytest.fixture(scope="module")
def bank(load_shared):
    """12,000 rows of bank-marketing-additional in a seeded random order, validated."""
    X, y = load_shared("bank-marketing-additional.csv.gz", "y")
    rows = np.random.default_rng(0).choice(len(y), 12_000, replace=False)
    X, y, _, profile = check_training_data(X.iloc[rows], y.iloc[rows], n_folds=5)
    numeric = X[[c for c in X.columns if c not in profile.categorical_columns]].to_numpy(dtype=np.float32)
    return numeric, y


def test_the_tail_is_a_tenth_of_the_rows_and_holds_no_class_the_head_lacks():
    assert tail_start(np.arange(100) % 2, classification=True) == 90
    assert tail_start(np.arange(101) % 2, classification=True) == 90  # ceil(10.1) rows held back
    assert tail_start(np.array([0, 1] * 49 + [0, 2]), classification=True) is None  # class 2 only at the end
    assert tail_start(np.array([0, 2] + [0, 1] * 49), classification=True) == 90
    assert tail_start(np.linspace(0, 1, 100), classification=False) == 90  # a number is no class
    assert tail_start(np.array([1]), classification=True) is None


def test_without_the_flag_the_fit_is_scikit_learns(bank):
    X, y = bank
    ours = StoppingHGBClassifier(**HGB).fit(X, y)
    theirs = HistGradientBoostingClassifier(**HGB).fit(X, y)
    assert ours.n_iter_ == theirs.n_iter_
    np.testing.assert_array_equal(ours.predict_proba(X[:500]), theirs.predict_proba(X[:500]))


def test_shuffled_rows_stop_on_their_last_tenth(bank):
    X, y = bank
    ours = StoppingHGBClassifier(**HGB).fit(X, y, rows_shuffled=True)
    by_hand = HistGradientBoostingClassifier(**HGB).fit(X[:10_800], y[:10_800], X_val=X[10_800:], y_val=y[10_800:])
    assert ours.n_iter_ == by_hand.n_iter_ < HGB["max_iter"]  # it stopped, on those rows
    np.testing.assert_array_equal(ours.predict_proba(X[:500]), by_hand.predict_proba(X[:500]))
    # Weighted: the stopping rows keep their weights.
    weights = np.where(y == 1, 3.0, 1.0)
    weighted = StoppingHGBClassifier(**HGB).fit(X, y, sample_weight=weights, rows_shuffled=True)
    by_hand = HistGradientBoostingClassifier(**HGB).fit(
        X[:10_800], y[:10_800], sample_weight=weights[:10_800],
        X_val=X[10_800:], y_val=y[10_800:], sample_weight_val=weights[10_800:])
    np.testing.assert_array_equal(weighted.predict_proba(X[:500]), by_hand.predict_proba(X[:500]))


def test_the_tail_is_read_in_place_where_the_split_copies(bank):
    # tracemalloc sees numpy's buffers: HGB's float64 copy of the rows, and the split's copies of it.
    X, y = bank

    def peak(**fit):
        tracemalloc.start()
        StoppingHGBClassifier(**{**HGB, "max_iter": 5}).fit(X, y, **fit)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return peak

    float64_copy = X.size * 8
    split, tail = peak(), peak(rows_shuffled=True)
    assert split - tail > 0.8 * float64_copy, (split, tail, float64_copy)


def test_an_early_stopped_lightgbm_stops_on_the_last_tenth_too(bank):
    X, y = bank
    params = dict(n_estimators=2000, learning_rate=0.3, random_state=0, n_jobs=1, verbose=-1)
    ours = EarlyStoppingLGBMClassifier(**params).fit(X, y, rows_shuffled=True)
    by_hand = LGBMClassifier(**params).fit(X[:10_800], y[:10_800], eval_set=[(X[10_800:], y[10_800:])],
                                           callbacks=[early_stopping(STOPPING_ROUNDS, verbose=False)])
    assert ours.best_iteration_ == by_hand.best_iteration_ < 2000
    np.testing.assert_allclose(ours.predict_proba(X[:500]), by_hand.predict_proba(X[:500]))
    # With a class only in the last rows, the seeded split is used instead: the model knows every class.
    y_rare = y.copy()
    y_rare[-1] = 2
    assert list(EarlyStoppingLGBMClassifier(**params).fit(X, y_rare, rows_shuffled=True).classes_) == [0, 1, 2]


def test_fit_quietly_gives_the_flag_only_to_models_that_take_it(bank):
    X, y = bank
    # A model without it fits as ever; one inside a target transform gets it through the regressor.
    logistic = fit_quietly(make_pipeline(StandardScaler(), LogisticRegression()), X, y, rows_shuffled=True)
    assert logistic.score(X, y) > 0.85
    target = X[:, 0] * 2.0 + y
    regressor = TransformedTargetRegressor(regressor=make_pipeline(StoppingHGBRegressor(**HGB)),
                                           transformer=StandardScaler())
    ours = fit_quietly(regressor, X, target, rows_shuffled=True).regressor_[-1]
    by_hand = HistGradientBoostingRegressor(**HGB).fit(
        X[:10_800], StandardScaler().fit(target[:, None]).transform(target[:, None]).ravel()[:10_800],
        X_val=X[10_800:], y_val=StandardScaler().fit(target[:, None]).transform(target[:, None]).ravel()[10_800:])
    assert ours.n_iter_ == by_hand.n_iter_
    np.testing.assert_allclose(ours.predict(X[:200]), by_hand.predict(X[:200]))


def test_a_holdout_rung_stops_on_its_last_rows(load_shared, tmp_path):
    X, y = load_shared("phoneme.csv", "Class")
    setup = prepare_search(X, y, random_state=0, include=["hgb"], validation="holdout")
    objective = CVObjective(setup.X, setup.y, setup.folds, setup.profile, setup.specs, setup.metric, tmp_path,
                            random_state=0)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(objective, n_trials=1)
    trial = study.trials[0]
    rows = trial.user_attrs["model_rows"]
    assert rows == len(setup.folds[0][0])  # the last rung: all training rows, knobs unscaled
    kept = joblib.load(model_path(tmp_path, 0))
    holdout = setup.X.iloc[scored_rows(setup.folds)]
    pipeline = rebuild(trial.params, setup.profile, setup.specs, random_state=0)
    tail = fit_quietly(pipeline, setup.X.iloc[:rows], setup.y[:rows], rows_shuffled=True)
    split = fit_quietly(pipeline, setup.X.iloc[:rows], setup.y[:rows])
    np.testing.assert_array_equal(kept.predict_proba(holdout), tail.predict_proba(holdout))
    assert not np.array_equal(kept.predict_proba(holdout), split.predict_proba(holdout))
