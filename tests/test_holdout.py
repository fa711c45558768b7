"""Tests of the holdout search for large tables: rows as Hyperband's resource (search/objective.py, search/setup.py),
row-counting knobs and threads (space/pipeline.py), trials stopped after a rung as ensemble candidates (search/run.py),
the progress line, and the fit that uses them (estimators/base.py)."""

import io
import time
import warnings

import joblib
import numpy as np
import optuna
import pandas as pd
import pytest
from optuna.trial import TrialState
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import ShuffleSplit, StratifiedKFold

from automl import AutoClassifier, AutoRegressor
from automl.checks import check_before_search
from automl.data import check_training_data
from automl.ensemble import beats_constant
from automl.search import (
    CVObjective, ProgressLine, SharedSearch, fail_running, get_metric, leaderboard, load_oof, make_pruner, model_path,
    oof_path, prepare_search, resource_range, scored_rows,
)
from automl.search import objective as objective_module
from automl.search import setup as search_setup
from automl.search.splits import holdout_split
from automl.report import render_html, report_data
from automl.space import at_rows, portfolio, rebuild, resolve_components, set_threads

FIT = dict(time_budget=None, n_jobs=1, random_state=0, tracking=False, verbose=0)


@pytest.fixture(scope="module")
def phoneme(load_shared):
    return load_shared("phoneme.csv", "Class")  # 5,404 rows, 5 numeric columns, binary


def _wide_rows(n, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    return X, (X["a"] + rng.normal(size=n) > 0).astype(int)


def test_rungs_are_nested_stratified_prefixes_that_hold_every_class():
    y = np.array([0] * 20250 + [1] * 6075 + [2] * 675 + [3] * 2)  # a class of 2 rows, as kddcup99 has
    train = np.arange(len(y))[::-1]  # any training rows, in any order
    order = objective_module.rung_order(train, y, seed=0)
    assert np.array_equal(np.sort(order), np.sort(train))  # every training row, once
    rungs = objective_module.row_rungs(len(train))
    assert rungs == [(s, len(y) * s // 27) for s in (1, 3, 9, 27)]
    for _, n_rows in rungs:  # each rung is the first n_rows of the order, so a prefix of the next
        rows = order[:n_rows]
        share = np.bincount(y[rows], minlength=4) / len(rows)
        assert set(y[rows]) == {0, 1, 2, 3} and (y[rows] == 3).sum() == 2  # the class of 2, twice
        # The 8 rows put first (two of each class) shift the first rung's 1,000 rows by at most 0.8%.
        assert share[:3] == pytest.approx([0.75, 0.225, 0.025], abs=0.005)
    assert np.array_equal(objective_module.rung_order(train, y, seed=0), order)
    assert not np.array_equal(objective_module.rung_order(train, y, seed=1)[:1000], order[:1000])


def test_a_holdout_is_stored_training_rows_first_in_rung_order_and_loses_no_row():
    X, y = _wide_rows(search_setup.HOLDOUT_MIN_ROWS)
    X["id"] = np.arange(len(X))  # where each stored row came from
    setup = prepare_search(X, y, random_state=0, validation="holdout")
    [(train, test)] = setup.folds
    assert np.array_equal(train, np.arange(90_000)) and np.array_equal(test, np.arange(90_000, 100_000))
    came_from = setup.X["id"].to_numpy().astype(int)
    assert np.array_equal(np.sort(came_from), np.arange(len(X)))  # a permutation: no row lost or repeated
    np.testing.assert_array_equal(setup.y, y.to_numpy()[came_from])  # each label moved with its row
    pd.testing.assert_frame_equal(setup.X[["a", "b", "c"]], X.iloc[came_from, :3].reset_index(drop=True),
                                  check_dtype=False)
    # The holdout is the one _holdout draws, and the training part is laid out in its rung order.
    [(plain_train, plain_test)] = holdout_split(setup.X.iloc[np.argsort(came_from)], y.to_numpy(), 0,
                                                "classification", search_setup.HOLDOUT_SHARE)
    assert np.array_equal(np.sort(came_from[test]), plain_test)
    assert np.array_equal(came_from[train], objective_module.rung_order(plain_train, y.to_numpy(), 0))
    # The search key is that of the user's rows and folds, so a worker's copy of the data proves the same.
    assert setup.search_key == prepare_search(X, y, random_state=0, validation="holdout").search_key
    assert setup.search_key != prepare_search(X, y, random_state=1, validation="holdout").search_key
    # A user's splitter of one split may leave rows out of both parts: they are stored last, not dropped.
    split = ShuffleSplit(n_splits=1, train_size=0.5, test_size=0.2, random_state=0)
    partial = prepare_search(X, y, random_state=0, cv=split, validation="cv")
    [(train, test)] = partial.folds
    assert partial.validation == "holdout" and len(partial.y) == len(y)
    assert np.array_equal(train, np.arange(50_000)) and np.array_equal(test, np.arange(50_000, 70_000))
    assert np.array_equal(np.sort(partial.X["id"].to_numpy().astype(int)), np.arange(len(X)))


def test_a_holdout_objective_refuses_training_rows_laid_out_otherwise(phoneme, tmp_path):
    X, y = phoneme
    setup = prepare_search(X, y, random_state=0, validation="holdout", include=["logreg"])
    [(train, test)] = setup.folds
    objective = CVObjective(setup.X, setup.y, [(train[::-1], test)], setup.profile, setup.specs, setup.metric,
                            tmp_path, random_state=0)
    with pytest.raises(ValueError, match="first rows of X, in rung order"):
        objective.rungs


def test_rungs_below_the_minimum_rows_are_skipped():
    assert objective_module.row_steps(27 * 1000) == [1, 3, 9, 27]
    assert objective_module.row_steps(4864) == [9, 27]       # phoneme's training part
    assert objective_module.row_steps(500) == [27]             # one rung: the whole training part
    folds = [(np.arange(4864), np.arange(4864, 5404))]
    assert resource_range(folds) == (9, 27)
    assert resource_range([(None, np.arange(3))] * 5) == (None, 5)
    pruner = make_pruner(True, 27, 9)
    assert (pruner._min_resource, pruner._max_resource) == (9, 27)


def test_at_rows_scales_the_knobs_that_count_rows_and_nothing_else(phoneme):
    X, y = phoneme
    X, y, _, profile = check_training_data(X, y, n_folds=2)
    specs = resolve_components(include=["hgb", "lgbm", "rf"], profile=profile)
    hgb = rebuild({"model": "hgb", "model.hgb.learning_rate": 0.1, "model.hgb.max_leaf_nodes": 31,
                   "model.hgb.min_samples_leaf": 40, "model.hgb.l2_regularization": 1e-8,
                   "model.hgb.max_features": 1.0}, profile, specs, 0)
    third = at_rows(hgb, 1 / 3)
    assert third.get_params()["model__min_samples_leaf"] == 13
    assert third.get_params()["model__learning_rate"] == 0.1
    assert hgb.get_params()["model__min_samples_leaf"] == 40  # the original is left alone
    assert at_rows(hgb, 1 / 100).get_params()["model__min_samples_leaf"] == 1
    assert at_rows(hgb, 1.0) is hgb


def test_set_threads_reaches_the_model_only():
    X, y = _wide_rows(200)
    X["k"] = np.where(y == 1, "u", "v")
    _, _, _, profile = check_training_data(X, y, n_folds=2)
    specs = resolve_components(include=["lgbm", "logreg"], profile=profile)
    lgbm = rebuild({"model": "lgbm", "encoder": "onehot", "encoder.onehot.min_frequency": 0.01,
                    **{f"model.lgbm.{k}": v for k, v in dict(
                        n_estimators=20, learning_rate=0.1, subsample=1.0, colsample_bytree=1.0, reg_lambda=1e-8,
                        num_leaves=8, min_child_samples=5).items()}}, profile, specs, 0)
    params = set_threads(lgbm, 3).get_params()
    assert params["model__n_jobs"] == 3 and params["preprocess__n_jobs"] is None
    logreg = rebuild({"model": "logreg", "encoder": "onehot", "encoder.onehot.min_frequency": 0.01,
                      "scaler": "standard", "imputer.numeric": "median", "model.logreg.C": 1.0}, profile, specs, 0)
    assert set_threads(logreg, 3).get_params()["model__n_jobs"] is None  # no effect since scikit-learn 1.8


def test_auto_validation_holds_out_rows_by_size_and_budget(monkeypatch):
    X, y = _wide_rows(search_setup.HOLDOUT_MIN_ROWS)
    setup = prepare_search(X, y, random_state=0)
    [(train, test)] = setup.folds
    assert setup.validation == "holdout"
    assert len(test) == 10_000 and len(train) == 90_000 and np.all(np.diff(test) > 0)
    assert setup.y[test].mean() == pytest.approx(y.mean(), abs=1e-4)  # stratified
    assert len(prepare_search(X, y, random_state=0, validation="cv").folds) == 5
    small = prepare_search(X.iloc[:5000], y.iloc[:5000], random_state=0)
    assert small.validation == "cv" and len(small.folds) == 5
    # Under a time budget: from HOLDOUT_BUDGET_MIN_ROWS rows once the cells reach the floor and the rate.
    rows = search_setup.HOLDOUT_BUDGET_MIN_ROWS
    X_mid, y_mid = X.iloc[:rows], y.iloc[:rows]
    monkeypatch.setattr(search_setup, "HOLDOUT_BUDGET_MIN_CELLS", rows * 3)  # 3 columns: just enough
    budget = rows * 3 / search_setup.HOLDOUT_CELLS_PER_SECOND  # the longest budget that still holds out
    assert prepare_search(X_mid, y_mid, random_state=0, time_budget=budget).validation == "holdout"
    assert prepare_search(X_mid, y_mid, random_state=0, time_budget=budget + 1).validation == "cv"
    assert prepare_search(X_mid, y_mid, random_state=0).validation == "cv"  # no budget: the size alone
    short = prepare_search(X_mid.iloc[:-1], y_mid.iloc[:-1], random_state=0, time_budget=budget)
    assert short.validation == "cv"  # under HOLDOUT_BUDGET_MIN_ROWS rows the holdout would be too small
    monkeypatch.setattr(search_setup, "HOLDOUT_BUDGET_MIN_CELLS", rows * 3 + 1)
    assert prepare_search(X_mid, y_mid, random_state=0, time_budget=budget).validation == "cv"
    # By cells: as many columns as make rows x columns reach the threshold.
    monkeypatch.setattr(search_setup, "HOLDOUT_MIN_CELLS", 5000 * 3)
    monkeypatch.setattr(search_setup, "HOLDOUT_AUTO_MIN_ROWS", 5000)
    assert prepare_search(X.iloc[:5000], y.iloc[:5000], random_state=0).validation == "holdout"
    # ... but not on fewer rows than make a holdout of HOLDOUT_WARN_ROWS, however wide the table.
    monkeypatch.setattr(search_setup, "HOLDOUT_MIN_CELLS", 4999 * 3)
    assert prepare_search(X.iloc[:4999], y.iloc[:4999], random_state=0).validation == "cv"
    # At most HOLDOUT_MAX_ROWS rows are held out.
    monkeypatch.setattr(search_setup, "HOLDOUT_MAX_ROWS", 2_000)
    assert len(prepare_search(X, y, random_state=0).folds[0][1]) == 2_000


class _Clock:
    """``time.time()`` that moves on 10 s per call: a fit 'takes' 10 s whatever the machine."""

    def __init__(self):
        self.now = 1000.0

    def time(self):
        self.now += 10.0
        return self.now


def test_a_trial_stopped_by_the_budget_after_a_rung_keeps_its_model(phoneme, tmp_path, monkeypatch):
    X, y = phoneme
    setup = prepare_search(X, y, random_state=0, include=["hgb"], validation="holdout")
    objective = CVObjective(setup.X, setup.y, setup.folds, setup.profile, setup.specs, setup.metric, tmp_path,
                            random_state=0, search_key=setup.search_key)
    clock = _Clock()
    monkeypatch.setattr(objective_module, "time", clock)
    # The first rung starts (before the deadline); it 'took' 10 s, so the next, 3x the rows, would end past it.
    objective.deadline = clock.now + 35.0
    study = optuna.create_study(direction="maximize")
    study.optimize(objective, n_trials=1)
    trial = study.trials[0]
    assert trial.state == TrialState.PRUNED and trial.user_attrs["stopped"] == "time budget"
    assert trial.user_attrs["model_rows"] == trial.user_attrs["rows"] == 4864 * 9 // 27
    holdout = scored_rows(setup.folds)
    pred = np.load(oof_path(tmp_path, 0))
    assert pred.shape == (len(holdout), 2)
    model = joblib.load(model_path(tmp_path, 0))
    assert np.allclose(model.predict_proba(setup.X.iloc[holdout]), pred)
    assert setup.metric(setup.y[holdout], pred) == pytest.approx(trial.user_attrs["fold_scores"][0])
    assert list(load_oof(study, tmp_path, setup.search_key)) == [0]
    # A deadline already past: not even the first rung starts, and nothing is left behind.
    objective.deadline = clock.now - 1.0
    study.optimize(objective, n_trials=1)
    assert study.trials[1].state == TrialState.PRUNED and not oof_path(tmp_path, 1).exists()
    assert list(load_oof(study, tmp_path, setup.search_key)) == [0]


class _Killed(BaseException):
    """What the worker's end looks like from inside the trial: nothing after it runs."""


def test_a_trial_whose_worker_is_stopped_during_a_rung_keeps_the_last_rungs_model(phoneme, tmp_path, monkeypatch):
    X, y = phoneme
    setup = prepare_search(X, y, random_state=0, include=["hgb"], validation="holdout")
    objective = CVObjective(setup.X, setup.y, setup.folds, setup.profile, setup.specs, setup.metric, tmp_path,
                            random_state=0, search_key=setup.search_key)
    fit_predict, calls = objective_module._fit_predict, []

    def killed_in_the_second_rung(*args, **kwargs):
        calls.append(len(args[1]))
        if len(calls) == 2:
            raise _Killed
        return fit_predict(*args, **kwargs)

    monkeypatch.setattr(objective_module, "_fit_predict", killed_in_the_second_rung)
    storage = optuna.storages.InMemoryStorage()
    study = optuna.create_study(storage=storage, study_name="s", direction="maximize")
    trial = study.ask()
    with pytest.raises(_Killed):
        objective(trial)
    assert fail_running(storage, "s") == 1  # what the fit does with its stopped worker's trial
    frozen = study.trials[0]
    # phoneme's first rung is a third of its 4,864 training rows (a ninth would be under 1,000 rows).
    assert frozen.state == TrialState.FAIL and frozen.user_attrs["model_rows"] == calls[0] == 4864 // 3
    pred = np.load(oof_path(tmp_path, 0))
    holdout = scored_rows(setup.folds)
    assert setup.metric(setup.y[holdout], pred) == pytest.approx(frozen.user_attrs["fold_scores"][0])
    assert np.allclose(joblib.load(model_path(tmp_path, 0)).predict_proba(setup.X.iloc[holdout]), pred)
    assert list(load_oof(study, tmp_path, setup.search_key)) == [0]
    note = leaderboard(study, {}, setup.search_key)["note"][0]
    assert note == ("stopped at the time budget during a rung; "
                    f"its model after {4864 // 3:,} rows is an ensemble candidate")


class _PruneFromStep(optuna.pruners.BasePruner):
    def __init__(self, step):
        self.step = step

    def prune(self, study, trial):
        return trial.last_step >= self.step


def test_a_trial_hyperband_prunes_leaves_no_model(tmp_path):
    X, y = _wide_rows(12_000)  # 10,800 training rows: rungs of 1,200, 3,600 and 10,800 rows (steps 3, 9, 27)
    setup = prepare_search(X, y, random_state=0, include=["hgb"], validation="holdout")
    objective = CVObjective(setup.X, setup.y, setup.folds, setup.profile, setup.specs, setup.metric, tmp_path,
                            random_state=0, search_key=setup.search_key)
    study = optuna.create_study(direction="maximize", pruner=_PruneFromStep(9))  # after its second rung
    study.optimize(objective, n_trials=1)
    trial = study.trials[0]
    assert trial.state == TrialState.PRUNED and trial.user_attrs["rows"] == 3600
    assert trial.user_attrs["model_rows"] is None  # the first rung's checkpoint was written, then removed
    assert not oof_path(tmp_path, 0).exists() and not model_path(tmp_path, 0).exists()
    assert load_oof(study, tmp_path, setup.search_key) == {}


def test_a_starting_point_is_pruned_on_a_holdout(phoneme, tmp_path):
    X, y = phoneme
    setup = prepare_search(X, y, random_state=0, include=["hgb"], validation="holdout")
    objective = CVObjective(setup.X, setup.y, setup.folds, setup.profile, setup.specs, setup.metric, tmp_path,
                            random_state=0, search_key=setup.search_key)
    # A pruner that prunes every score under 1: under CV a portfolio trial would run on regardless.
    study = optuna.create_study(direction="maximize", pruner=optuna.pruners.ThresholdPruner(lower=1.0))
    study.enqueue_trial(portfolio(setup.specs)[0], user_attrs={"portfolio": 0})
    study.optimize(objective, n_trials=1)
    trial = study.trials[0]
    assert trial.user_attrs["portfolio"] == 0 and trial.state == TrialState.PRUNED
    assert "stopped" not in trial.user_attrs and trial.user_attrs["rows"] == 4864 * 9 // 27  # its first rung


def test_a_holdout_fit_ensembles_the_trials_own_models_and_repeats(phoneme, tmp_path):
    X, y = phoneme
    model = AutoClassifier(**FIT, n_trials=6, include=["hgb", "logreg"], validation="holdout").fit(X, y)
    board = model.leaderboard_
    assert model.validation_ == "holdout"
    assert (board["folds"] <= 1).all() and board["std"].isna().all()
    assert all(isinstance(member, FrozenEstimator) for member in model.ensemble_.estimators_)
    assert np.isclose(model.ensemble_.weights_.sum(), 1.0)
    holdout = 5404 - 4864
    candidates = board[board["trial"].isin(model.ensemble_candidates_)]
    assert model.best_single_oof_score_ == pytest.approx(candidates["mean"].max())
    assert len(model.ensemble_candidates_) >= 2 and model.ensemble_score_ >= model.best_single_oof_score_ - 1e-12
    proba = model.predict_proba(X.iloc[:holdout])
    assert proba.shape == (holdout, 2) and np.allclose(proba.sum(axis=1), 1.0)
    again = AutoClassifier(**FIT, n_trials=6, include=["hgb", "logreg"], validation="holdout").fit(X, y)
    pd.testing.assert_frame_equal(board.drop(columns="seconds"), again.leaderboard_.drop(columns="seconds"))
    # The report says what the scores were measured on: one holdout, so no spread and no folds.
    data = report_data(model)
    assert data["search"]["validation"] == data["pruning"]["validation"] == "holdout"
    early = board[board["state"] == "PRUNED"]
    assert data["pruning"]["n_pruned"] + data["pruning"]["n_stopped"] == len(early)
    page = model.report(tmp_path / "report.html").read_text()
    assert "best trial holdout roc_auc" in page and "ensemble on the holdout predictions" in page
    assert "+/- nan" not in page and "fold CV of every trial" not in page
    # The overview's trial count splits Optuna's PRUNED as the Pruning section does (no budget here: made up).
    data["search"]["states"]["PRUNED"], data["pruning"]["n_stopped"] = 5, 2
    assert "3 pruned, 2 stopped by the time budget" in render_html(data)


def test_a_holdout_regression_fit(load_shared):
    X, y = load_shared("kin8nm.csv", "y")
    model = AutoRegressor(**FIT, n_trials=3, include=["hgb", "ridge"], validation="holdout").fit(X, y)
    assert model.validation_ == "holdout" and np.isfinite(model.best_score_)
    assert model.predict(X.iloc[:5]).shape == (5,)


def test_the_leak_check_scores_columns_on_its_own_folds_under_a_holdout(phoneme):
    X, y = phoneme
    setup = prepare_search(X.assign(copy=(y == y.iloc[0]).astype(float)), y, random_state=0, validation="holdout")
    with pytest.warns(Warning):
        report = check_before_search(setup.X, setup.y, setup.profile, setup.folds, 0, "warn")
    assert [(f.column, f.kind) for f in report.findings if f.severity == "high"] == [("copy", "target_leakage")]


def test_a_worker_rebuilds_the_holdout_of_the_fit(phoneme, tmp_path):
    X, y = phoneme
    setup = prepare_search(X, y, random_state=3, validation="holdout")
    shared = SharedSearch.of(setup, task="classification", settings={"include": None, "sampler": "tpe",
                                                                     "pruning": True},
                             n_startup_trials=10, storage=optuna.storages.InMemoryStorage(), oof_dir=tmp_path,
                             deadline=None, max_trials=None)
    rebuilt = shared.setup(X, y)
    assert rebuilt.validation == "holdout" and rebuilt.search_key == setup.search_key
    assert isinstance(shared.pruner(rebuilt), optuna.pruners.HyperbandPruner)


def test_the_progress_line_counts_trials_stopped_by_the_budget_apart():
    study = optuna.create_study(direction="maximize")
    for state, attrs in [(TrialState.COMPLETE, {}), (TrialState.PRUNED, {}), (TrialState.PRUNED, {"stopped": "t"}),
                         (TrialState.COMPLETE, {"search_key": "other"})]:
        study.add_trial(optuna.trial.create_trial(state=state, value=0.7 if state == TrialState.COMPLETE else None,
                                                  user_attrs={"search_key": "ours", **attrs},
                                                  intermediate_values={1: 0.5}))
    stream = io.StringIO()
    ProgressLine(stream=stream, search_key="ours").show(study, "final stage")
    assert stream.getvalue() == ("[automl] trials 1 done, 1 pruned, 1 stopped by the budget, 0 failed | best 0.7000 | "
                                 "final stage\n")


def test_the_progress_line_ticks_while_the_search_runs(tmp_path):
    storage = optuna.storages.InMemoryStorage()
    optuna.create_study(study_name="s", storage=storage)
    stream = io.StringIO()
    with ProgressLine(stream=stream).every(0.05, storage, "s"):
        waited = time.monotonic()  # as long as a loaded machine needs to run the thread three times
        while len(stream.getvalue().splitlines()) < 3 and time.monotonic() - waited < 60:
            time.sleep(0.05)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[automl] trials 0 done, 0 pruned, 0 failed | best none yet" and len(lines) >= 3


def test_the_holdout_holds_every_class_even_a_rare_one(phoneme):
    X, y = phoneme
    y = y.astype(str).where(np.arange(len(y)) >= 3, "rare")  # a class of 3 rows: a stratified 10% holds none
    setup = prepare_search(X, y, random_state=0, validation="holdout")
    [(train, test)] = setup.folds
    assert set(setup.y[test]) == set(setup.y[train]) == {0, 1, 2}
    assert len(np.intersect1d(train, test)) == 0 and len(train) + len(test) == len(y)


def test_early_stopping_models_fit_every_rung_beside_a_rare_class(phoneme):
    # A class of 3 rows keeps 2 in the training part; HGB and MLP stop early on a stratified inner split,
    # which refuses a class of 1, so a rung must hold both (it held one, and every trial failed at it).
    X, y = phoneme
    y = y.astype(str).where(np.arange(len(y)) >= 3, "rare")
    for family, n_trials in (("hgb", 2), ("mlp", 1)):  # HGB's two starting points; one sampled MLP
        model = AutoClassifier(**FIT, n_trials=n_trials, include=[family], validation="holdout",
                               pruning=False).fit(X, y)
        board = model.leaderboard_
        assert (board["state"] == "COMPLETE").sum() == n_trials, board[["family", "state", "note"]]
        assert model.predict_proba(X.head(5)).shape == (5, 3)
    assert model.ensemble_score_ < 0.5  # a log loss on 3 classes; the constant's is 0.61


def test_an_automatic_holdout_does_not_warn_of_classes_rarer_than_cv_folds():
    X, y = _wide_rows(search_setup.HOLDOUT_MIN_ROWS)
    y = y.copy()
    y.iloc[:3] = 2  # 3 rows: fewer than cv=5 folds, enough for a holdout
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        setup = prepare_search(X, y, random_state=0)
    assert setup.validation == "holdout" and setup.profile.n_classes == 3
    assert not [w for w in caught if "n_folds" in str(w.message)]
    with pytest.warns(UserWarning, match="fewer members than n_folds=5"):
        prepare_search(X, y, random_state=0, validation="cv")


def test_a_small_holdout_is_warned_about(phoneme, monkeypatch):
    X, y = phoneme
    with pytest.warns(UserWarning, match="on 541 held-out rows only"):
        prepare_search(X, y, random_state=0, validation="holdout")
    monkeypatch.setattr(search_setup, "HOLDOUT_WARN_ROWS", 541)  # from as many rows on: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        prepare_search(X, y, random_state=0, validation="holdout")


def test_a_holdout_refuses_a_splitter_it_would_ignore(phoneme):
    X, y = phoneme
    with pytest.raises(ValueError, match="validation='holdout' makes its own split"):
        AutoClassifier(**FIT, n_trials=1, validation="holdout", cv=StratifiedKFold(3)).fit(X, y)


def test_an_ensemble_is_judged_against_the_constant_prediction():
    y = np.array([0, 0, 0, 1] * 50)
    folds = [(np.arange(100), np.arange(100, 200))]
    auc, log_loss = get_metric("roc_auc", 2), get_metric("log_loss", 2)
    assert beats_constant(0.51, y, folds, auc) and not beats_constant(0.5, y, folds, auc)
    prior = log_loss(y[100:], np.tile([0.75, 0.25], (100, 1)))
    assert beats_constant(prior - 0.01, y, folds, log_loss) and not beats_constant(prior + 0.01, y, folds, log_loss)
