"""Tests of automl.search.objective: CV scoring on shared folds, the pruning contract, OOF files, errors, deadline."""

import time

import numpy as np
import optuna
import pandas as pd
import pytest
from optuna.pruners import BasePruner, HyperbandPruner, NopPruner
from optuna.samplers import RandomSampler
from optuna.trial import TrialState
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from automl.data import check_training_data
from automl.search import CVObjective, aligned_proba, get_metric, oof_path, prepare_study
from automl.space import ComponentSpec, rebuild, resolve_components

N_FOLDS = 3






def make_objective(credit, oof_dir, specs=None, metric="roc_auc", deadline=None):
    X, y, profile, folds = credit
    specs = specs or resolve_components(include=["logreg", "knn"])
    return CVObjective(X, y, folds, profile, specs, get_metric(metric, 2), oof_dir, deadline, random_state=0)


def run(objective, n_trials, pruner=None, direction="maximize", seed=0, enqueue=()):
    study = optuna.create_study(
        direction=direction, sampler=RandomSampler(seed=seed), pruner=pruner or NopPruner()
    )
    for params in enqueue:
        study.enqueue_trial(params)
    study.optimize(objective, n_trials=n_trials, catch=(Exception,))
    return study


# ---- a complete trial ------------------------------------------------------------------------------
@pytest.mark.parametrize("metric", ["roc_auc", "log_loss"])
def test_complete_trial_writes_oof_and_scores(credit, tmp_path, metric):
    X, y, profile, folds = credit
    direction = get_metric(metric, 2).direction
    study = run(make_objective(credit, tmp_path, metric=metric), n_trials=3, direction=direction)
    assert {t.state for t in study.trials} == {TrialState.COMPLETE}
    for trial in study.trials:
        oof = np.load(oof_path(tmp_path, trial.number))
        assert oof.shape == (len(y), profile.n_classes)
        np.testing.assert_allclose(oof.sum(axis=1), 1.0)
        scores = trial.user_attrs["fold_scores"]
        assert len(scores) == N_FOLDS
        # Each fold score is the metric on that fold's rows of the OOF array.
        for (_, test), score in zip(folds, scores):
            assert score == pytest.approx(get_metric(metric, 2)(y[test], oof[test]))
        assert trial.value == pytest.approx(np.mean(scores))
        assert trial.user_attrs["mean_score"] == pytest.approx(np.mean(scores))
        assert trial.user_attrs["std_score"] == pytest.approx(np.std(scores))
        assert trial.user_attrs["family"] == trial.params["model"]
        assert "error" not in trial.user_attrs and "stopped" not in trial.user_attrs


def test_intermediate_values_are_running_means(credit, tmp_path):
    study = run(make_objective(credit, tmp_path), n_trials=2)
    for trial in study.trials:
        scores = trial.user_attrs["fold_scores"]
        expected = {k: np.mean(scores[:k]) for k in range(1, N_FOLDS + 1)}
        assert trial.intermediate_values.keys() == expected.keys()
        for step, value in expected.items():
            assert trial.intermediate_values[step] == pytest.approx(value)


def test_oof_equals_a_manual_cross_validation(credit, tmp_path):
    X, y, profile, folds = credit
    specs = resolve_components(include=["logreg"])
    config = {"model": "logreg", "model.logreg.C": 0.5, "encoder": "onehot",
              "encoder.onehot.min_frequency": 0.01, "scaler": "standard", "imputer.numeric": "median",
              "imputer.numeric.add_indicator": True, "imputer.categorical": "most_frequent"}
    study = run(make_objective(credit, tmp_path, specs), n_trials=1, enqueue=[config])
    oof = np.load(oof_path(tmp_path, 0))
    expected = np.zeros_like(oof)
    for train, test in folds:
        model = rebuild(config, profile, specs, random_state=0).fit(X.iloc[train], y[train])
        expected[test] = model.predict_proba(X.iloc[test])
    np.testing.assert_allclose(oof, expected)
    assert study.trials[0].value == pytest.approx(
        np.mean([get_metric("roc_auc", 2)(y[test], expected[test]) for _, test in folds])
    )
    assert study.trials[0].value > 0.85


# ---- pruning --------------------------------------------------------------------------------------
class AlwaysPrune(BasePruner):
    def __init__(self):
        self.asked = []  # (trial number, step) of every question

    def prune(self, study, trial):
        self.asked.append((trial.number, trial.last_step))
        return True


def test_pruned_after_the_first_fold_without_oof(credit, tmp_path):
    study = run(make_objective(credit, tmp_path), n_trials=2, pruner=AlwaysPrune())
    for trial in study.trials:
        assert trial.state == TrialState.PRUNED
        assert list(trial.intermediate_values) == [1]
        assert len(trial.user_attrs["fold_scores"]) == 1
        assert trial.intermediate_values[1] == pytest.approx(trial.user_attrs["fold_scores"][0])
        assert "mean_score" not in trial.user_attrs
        assert not oof_path(tmp_path, trial.number).exists()


@pytest.mark.parametrize("attr", ["portfolio", "warm_start"])
def test_an_enqueued_starting_point_runs_every_fold(credit, tmp_path, attr):
    # A portfolio or warm-start trial is never pruned, so it keeps its OOF predictions; the pruner is
    # still asked after each fold but the last (Hyperband records rung values when asked). A sampled
    # trial after it is pruned as before.
    X, y, profile, folds = credit
    pruner = AlwaysPrune()
    study = optuna.create_study(direction="maximize", sampler=RandomSampler(seed=0), pruner=pruner)
    study.enqueue_trial({"model": "logreg", "encoder": "onehot"}, user_attrs={attr: True})
    study.optimize(make_objective(credit, tmp_path), n_trials=2)
    started, sampled = study.trials
    assert started.state == TrialState.COMPLETE
    assert list(started.intermediate_values) == list(range(1, N_FOLDS + 1))
    assert np.load(oof_path(tmp_path, started.number)).shape == (len(y), profile.n_classes)
    assert sampled.state == TrialState.PRUNED and list(sampled.intermediate_values) == [1]
    assert pruner.asked == [(0, 1), (0, 2), (1, 1)]


def test_the_portfolio_fills_hyperbands_rungs(credit, tmp_path):
    # 5 folds as in a fit: Hyperband (min 1, max 5, factor 3) has 2 brackets, each with a rung after
    # 3 folds. The enqueued trial's running means are recorded as rung values, the bar the sampled
    # trials are judged against.
    X, y, profile, _ = credit
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    objective = CVObjective(X, y, folds, profile, resolve_components(include=["logreg", "knn"]),
                            get_metric("roc_auc", 2), tmp_path, random_state=0)
    study = optuna.create_study(direction="maximize", sampler=RandomSampler(seed=0),
                                pruner=HyperbandPruner(min_resource=1, max_resource=5, reduction_factor=3))
    study.enqueue_trial({"model": "logreg", "encoder": "onehot"}, user_attrs={"portfolio": True})
    study.optimize(objective, n_trials=1)
    trial = study.trials[0]
    assert trial.state == TrialState.COMPLETE
    rungs = {k: v for k, v in trial.system_attrs.items() if k.startswith("completed_rung_")}
    assert rungs, "no rung value recorded for the portfolio trial"
    for value in rungs.values():
        assert value in set(trial.intermediate_values.values())


def test_prepare_study_marks_the_portfolio(tmp_path):
    storage = f"sqlite:///{tmp_path}/study.db"
    configs = [{"model": "logreg", "model.logreg.C": 1.0}, {"model": "knn", "model.knn.n_neighbors": 15}]
    prepare_study(storage, "s", "maximize", configs)
    prepare_study(storage, "s", "maximize", configs)  # a continued study enqueues nothing twice
    waiting = optuna.load_study(study_name="s", storage=storage).get_trials(states=(TrialState.WAITING,))
    assert len(waiting) == len(configs)
    assert [t.user_attrs for t in waiting] == [{"portfolio": True}] * 2


class PruneFromStep(BasePruner):
    def __init__(self, step):
        self.step = step

    def prune(self, study, trial):
        return trial.last_step is not None and trial.last_step >= self.step


def test_last_fold_is_never_pruned(credit, tmp_path):
    # The pruner is only asked before folds that remain: a trial at its last fold completes.
    study = run(make_objective(credit, tmp_path), n_trials=1, pruner=PruneFromStep(N_FOLDS))
    assert study.trials[0].state == TrialState.COMPLETE
    study = run(make_objective(credit, tmp_path), n_trials=1, pruner=PruneFromStep(N_FOLDS - 1))
    assert study.trials[0].state == TrialState.PRUNED
    assert len(study.trials[0].user_attrs["fold_scores"]) == N_FOLDS - 1


# ---- failures -------------------------------------------------------------------------------------
class Exploding(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        raise ValueError("exploded on purpose")


BOOM = ComponentSpec(
    "boom", "Boom", lambda trial, profile, prefix: {}, lambda params, random_state: Exploding()
)


def test_failing_fit_records_error_and_fails_the_trial(credit, tmp_path):
    objective = make_objective(credit, tmp_path, resolve_components(include=["boom"], extra=[BOOM]))
    study = run(objective, n_trials=2)
    for trial in study.trials:
        assert trial.state == TrialState.FAIL
        assert trial.user_attrs["error"] == "ValueError: exploded on purpose"
        assert trial.user_attrs["family"] == "boom"
        assert trial.intermediate_values == {}
        assert not oof_path(tmp_path, trial.number).exists()


def test_failing_trial_does_not_stop_the_search(credit, tmp_path):
    specs = resolve_components(include=["logreg", "boom"], extra=[BOOM])
    study = run(make_objective(credit, tmp_path, specs), n_trials=6, seed=1)
    states = {t.params["model"]: t.state for t in study.trials}
    assert states == {"logreg": TrialState.COMPLETE, "boom": TrialState.FAIL}
    assert len(study.trials) == 6


def test_error_propagates_without_catch(credit, tmp_path):
    objective = make_objective(credit, tmp_path, resolve_components(include=["boom"], extra=[BOOM]))
    study = optuna.create_study(direction="maximize")
    with pytest.raises(ValueError, match="exploded on purpose"):
        study.optimize(objective, n_trials=1)


# ---- time budget ------------------------------------------------------------------------------------
def test_deadline_in_the_past_stops_before_the_first_fold(credit, tmp_path):
    study = run(make_objective(credit, tmp_path, deadline=time.time() - 1.0), n_trials=2)
    for trial in study.trials:
        assert trial.state == TrialState.PRUNED
        assert trial.user_attrs["stopped"] == "time budget"
        assert trial.intermediate_values == {}
        assert "fold_scores" not in trial.user_attrs
        assert not oof_path(tmp_path, trial.number).exists()


def test_distant_deadline_changes_nothing(credit, tmp_path):
    study = run(make_objective(credit, tmp_path, deadline=time.time() + 3600), n_trials=2)
    assert {t.state for t in study.trials} == {TrialState.COMPLETE}
    assert all("stopped" not in t.user_attrs for t in study.trials)


# ---- aligned_proba ---------------------------------------------------------------------------------
def test_aligned_proba_fills_a_class_missing_from_the_fold():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.repeat([0, 2, 3], 20)  # class 1 of 0..3 is absent from this training part
    X[y == 2] += 2.0
    model = LogisticRegression().fit(X, y)
    proba = aligned_proba(model, X[:7], n_classes=4)
    assert proba.shape == (7, 4)
    np.testing.assert_array_equal(proba[:, 1], 0.0)
    np.testing.assert_allclose(proba[:, [0, 2, 3]], model.predict_proba(X[:7]))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_aligned_proba_is_unchanged_with_every_class():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(30, 2)), np.tile([0, 1, 2], 10)
    model = LogisticRegression().fit(X, y)
    np.testing.assert_array_equal(aligned_proba(model, X, n_classes=3), model.predict_proba(X))


def test_objective_handles_a_fold_missing_a_class(tmp_path):
    # A user splitter whose first training part lacks class 2: the OOF columns stay aligned by class.
    rng = np.random.default_rng(0)
    y_raw = np.repeat(["a", "b", "c"], 30)
    frame = pd.DataFrame({"x": rng.normal(size=90) + (y_raw == "b") * 3, "z": rng.normal(size=90),
                          "colour": rng.choice(["red", "blue"], size=90)})
    X, y, _, profile = check_training_data(frame, y_raw, n_folds=2)
    index = np.arange(90)
    folds = [(index[y != 2][::2], index[1::2]), (index[1::2], index[::2])]
    objective = CVObjective(X, y, folds, profile, resolve_components(include=["logreg"]),
                            get_metric("log_loss", 3), tmp_path, random_state=0)
    trial = run(objective, n_trials=1, direction="minimize").trials[0]
    assert trial.state == TrialState.COMPLETE
    oof = np.load(oof_path(tmp_path, 0))
    assert oof.shape == (90, 3)
    np.testing.assert_array_equal(oof[folds[0][1], 2], 0.0)
    assert (oof[folds[1][1], 2] > 0).all()
    np.testing.assert_allclose(oof.sum(axis=1), 1.0)
    # Class "b" is easy to tell apart: its column carries the weight on its rows.
    b_rows = folds[0][1][y[folds[0][1]] == 1]
    assert oof[b_rows, 1].mean() > 0.6
    assert np.isfinite(trial.value)
