"""Tests of automl.search: run_search on the default journal storage, workers, budget, sampler, leaderboard."""

import io
import os
import time
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest
from optuna.distributions import FloatDistribution
from optuna.storages.journal import JournalStorage
from optuna.trial import TrialState, create_trial

from automl import AutoClassifier
from automl.search import (
    HEARTBEAT_GRACE, HEARTBEAT_INTERVAL, CVObjective, ProgressLine, failed_trials_summary, get_metric, heartbeat_of,
    fail_running, leaderboard, make_pruner, make_sampler, open_storage, prepare_study, run_search,
)
from automl.space import portfolio, resolve_components

N_FOLDS = 3
STARTED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING)






def new_study(tmp_path, specs=(), direction="maximize", name="automl"):
    """A study on the default journal storage in tmp_path, with the portfolio enqueued, as fit does."""
    storage = open_storage(None, tmp_path)
    prepare_study(storage, name, direction, portfolio(specs))
    return storage, optuna.load_study(study_name=name, storage=storage)


def search(credit, tmp_path, include, n_trials, seed=0, sampler="tpe", pruning=True, **kwargs):
    X, y, profile, folds = credit
    specs = resolve_components(include=include)
    storage, _ = new_study(tmp_path, specs)
    metric = get_metric("roc_auc", 2)
    objective = CVObjective(X, y, folds, profile, specs, metric, tmp_path, random_state=seed)
    return run_search(
        objective, storage=storage, study_name="automl",
        sampler=make_sampler(sampler, seed, n_startup_trials=3), pruner=make_pruner(pruning, N_FOLDS),
        n_trials=n_trials, oof_dir=tmp_path, **kwargs,
    )


def started(study):
    return study.get_trials(deepcopy=False, states=STARTED)


# ---- in-process runs ----------------------------------------------------------------------------------
@pytest.mark.parametrize("n_trials", [2, 5])
def test_n_trials_is_exact_with_the_portfolio_enqueued(credit, tmp_path, n_trials):
    # The portfolio of hgb and logreg enqueues 3 configurations (hgb, logreg, hgb).
    result = search(credit, tmp_path, ["hgb", "logreg"], n_trials=n_trials)
    trials = started(result.study)
    assert len(trials) == n_trials
    assert [t.params["model"] for t in trials][:3] == ["hgb", "logreg", "hgb"][:n_trials]
    waiting = result.study.get_trials(states=(TrialState.WAITING,))
    assert len(waiting) == max(0, 3 - n_trials)
    assert (tmp_path / "study.journal").exists()
    assert result.killed == 0


def test_n_trials_counts_this_search_only(credit, tmp_path):
    # A continued study (warm start): the second search runs its own n_trials.
    first = search(credit, tmp_path, ["logreg"], n_trials=2, pruning=False)
    assert len(started(first.study)) == 2
    second = search(credit, tmp_path, ["logreg"], n_trials=3, pruning=False)
    assert len(started(second.study)) == 5
    assert sorted(second.oof) == [t.number for t in second.study.trials if t.state == TrialState.COMPLETE]


def test_oof_is_loaded_for_every_complete_trial(credit, tmp_path):
    _, y, _, folds = credit
    result = search(credit, tmp_path, ["logreg", "knn"], n_trials=6, pruning=False)
    complete = [t for t in result.study.trials if t.state == TrialState.COMPLETE]
    assert len(complete) == 6
    assert sorted(result.oof) == [t.number for t in complete]
    for trial in complete:
        oof = result.oof[trial.number]
        assert oof.shape == (len(y), 2)
        np.testing.assert_allclose(oof.sum(axis=1), 1.0)
        # The array loaded is this trial's: its fold scores are recomputed from it.
        fold_scores = [get_metric("roc_auc", 2)(y[test], oof[test]) for _, test in folds]
        np.testing.assert_allclose(fold_scores, trial.user_attrs["fold_scores"])
    assert result.seconds > 0 and result.callback_seconds == 0.0


def test_reproducible_under_a_seed(credit, tmp_path):
    runs = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        result = search(credit, tmp_path / name, ["logreg", "knn"], n_trials=8, seed=7)
        runs.append(result)
    first, second = (
        [(t.params, t.value, t.state, t.intermediate_values) for t in r.study.trials] for r in runs
    )
    assert len(first) == 8
    assert first == second
    assert sorted(runs[0].oof) == sorted(runs[1].oof)
    for number, oof in runs[0].oof.items():
        np.testing.assert_array_equal(oof, runs[1].oof[number])
    # 5 of the 8 trials were TPE's; the target encoder, whose cross fitting shuffles, was sampled.
    assert {t.params.get("encoder") for t in runs[0].study.trials} >= {"target"}


def test_different_seeds_differ(credit, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = search(credit, tmp_path / "a", ["logreg", "knn"], n_trials=4, seed=1, sampler="random")
    b = search(credit, tmp_path / "b", ["logreg", "knn"], n_trials=4, seed=2, sampler="random")
    assert [t.params for t in a.study.trials][1:] != [t.params for t in b.study.trials][1:]


def quadratic(trial):
    x = trial.suggest_float("x", -2.0, 2.0)
    return (x - 1.0) ** 2


def test_without_oof_dir_and_with_callbacks(tmp_path):
    storage, _ = new_study(tmp_path, direction="minimize", name="plain")
    seen = []
    result = run_search(
        quadratic, storage=storage, study_name="plain", sampler=make_sampler("random", 0),
        pruner=make_pruner(False, 3), n_trials=4, callbacks=[lambda study, trial: seen.append(trial.number)],
    )
    assert seen == [0, 1, 2, 3]
    assert result.oof == {}
    assert len(result.study.trials) == 4


def test_a_continued_study_keeps_its_metric_and_direction(tmp_path):
    storage = open_storage(None, tmp_path)
    prepare_study(storage, "rings", "minimize", [], metric="rmse")
    prepare_study(storage, "rings", "minimize", [], metric="rmse")  # the same metric: continued
    with pytest.raises(ValueError, match="Study 'rings' was made to minimize 'rmse'; this fit would maximize 'r2'"):
        prepare_study(storage, "rings", "maximize", [], metric="r2")
    with pytest.raises(ValueError, match="would minimize 'mae'. A continued study keeps its metric: give this fit"):
        prepare_study(storage, "rings", "minimize", [], metric="mae")
    optuna.create_study(storage=storage, study_name="older", direction="maximize")  # made before the record
    with pytest.raises(ValueError, match="Study 'older' was made to maximize its metric; this fit would minimize"):
        prepare_study(storage, "older", "minimize", [], metric="rmse")
    prepare_study(storage, "older", "maximize", [], metric="r2")
    assert optuna.load_study(study_name="older", storage=storage).user_attrs["metric"] == "r2"


class EndedElsewhere:
    """Trial 1 is failed by "another process" while it runs: with a reason (fail_running), or silently, as
    Optuna's heartbeat check leaves a trial it takes for dead."""

    def __init__(self, storage, with_reason):
        self.storage, self.with_reason = storage, with_reason

    def __call__(self, trial):
        if trial.number == 1:
            if self.with_reason:
                fail_running(self.storage, "ended")
            else:
                self.storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        return quadratic(trial)


@pytest.mark.parametrize("with_reason, said", [
    (True, "trial 1: stopped at the time budget"),
    (False, "trial 1: its heartbeat was older than the storage's grace period"),
])
def test_a_trial_ended_by_another_process_is_said_with_its_reason_and_the_search_goes_on(
        tmp_path, caplog, with_reason, said):
    storage, _ = new_study(tmp_path, direction="minimize", name="ended")
    with caplog.at_level("WARNING", logger="automl.search.run"):
        result = run_search(EndedElsewhere(storage, with_reason), storage=storage, study_name="ended",
                            sampler=make_sampler("random", 0), pruner=make_pruner(False, 3), n_trials=3)
    assert [t.state for t in result.study.trials] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.COMPLETE]
    message, = [r.getMessage() for r in caplog.records if "Another process ended" in r.getMessage()]
    assert said in message and "the result is dropped and the search goes on" in message, message


# ---- worker processes ---------------------------------------------------------------------------------
class RecordingObjective:
    """The CV objective, recording which process ran each trial."""

    def __init__(self, objective):
        self.objective = objective

    def __call__(self, trial):
        trial.set_user_attr("pid", os.getpid())
        return self.objective(trial)


def test_two_workers_share_the_study_until_the_deadline(credit, tmp_path):
    X, y, profile, folds = credit
    specs = resolve_components(include=["logreg", "knn"])
    storage, _ = new_study(tmp_path, specs)
    objective = RecordingObjective(
        CVObjective(X, y, folds, profile, specs, get_metric("roc_auc", 2), tmp_path, random_state=0)
    )
    result = run_search(
        objective, storage=storage, study_name="automl", sampler=make_sampler("tpe", 0, n_startup_trials=3),
        pruner=make_pruner(True, N_FOLDS), deadline=time.time() + 8.0, n_jobs=2, oof_dir=tmp_path, grace=5.0,
    )
    trials = result.study.trials
    pids = {t.user_attrs["pid"] for t in trials if "pid" in t.user_attrs}
    assert len(pids) == 2 and os.getpid() not in pids
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    assert {t.state for t in trials} <= {TrialState.COMPLETE, TrialState.PRUNED, TrialState.WAITING}
    complete = [t.number for t in trials if t.state == TrialState.COMPLETE]
    assert len(complete) >= 2
    assert sorted(result.oof) == complete
    assert all(oof.shape == (len(y), 2) for oof in result.oof.values())
    assert result.killed == 0
    # Trial numbers are unique across the workers: one study, one storage.
    assert sorted(t.number for t in trials) == list(range(len(trials)))


class Runaway:
    """The first trial to claim the marker file hangs for a minute; every other trial is quick.

    The hanging one holds a thread pool, as a model fitting on joblib's threads does: its semaphores
    outlive the killed worker unless the search releases them.
    """

    def __init__(self, marker):
        self.marker = marker

    def __call__(self, trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            time.sleep(0.05)
            return x
        from multiprocessing.pool import ThreadPool

        pool = ThreadPool(2)  # noqa: F841 (held while hanging)
        time.sleep(60)
        return x


@pytest.mark.slow
def test_runaway_trial_is_stopped_at_deadline_plus_grace(tmp_path):
    storage, _ = new_study(tmp_path, name="runaway")
    # Worker processes take a few seconds to start (imports) on a busy machine: budget for it.
    budget, grace = 8.0, 1.0
    result = run_search(
        Runaway(str(tmp_path / "claimed")), storage=storage, study_name="runaway",
        sampler=make_sampler("random", 0), pruner=make_pruner(False, 3),
        deadline=time.time() + budget, n_jobs=2, oof_dir=tmp_path, grace=grace,
    )
    returned = time.time()
    assert result.killed == 1
    failed = [t for t in result.study.trials if t.state == TrialState.FAIL]
    assert len(failed) == 1
    # Stopped before its minute of sleep ended, whichever worker hung: timed from the hung trial's own
    # start, so a slow machine's late start does not count against it.
    assert returned < failed[0].datetime_start.timestamp() + 60
    assert failed[0].user_attrs["error"] == "stopped at the time budget"
    # Its worker's semaphores were released (before, loky's tracker named them at the interpreter's exit).
    pid = failed[0].user_attrs["worker"].rpartition(":")[2]
    if Path("/dev/shm").is_dir():
        assert list(Path("/dev/shm").glob(f"sem.loky-{pid}-*")) == []
    others = [t for t in result.study.trials if t.state != TrialState.FAIL]
    assert others and {t.state for t in others} == {TrialState.COMPLETE}
    table = leaderboard(result.study)
    assert table["state"].iloc[-1] == "FAIL" and table["note"].iloc[-1] == "stopped at the time budget"


def test_one_worker_with_a_deadline_runs_in_a_child_process(credit, tmp_path):
    X, y, profile, folds = credit
    specs = resolve_components(include=["logreg"])
    storage, _ = new_study(tmp_path, specs)
    objective = RecordingObjective(
        CVObjective(X, y, folds, profile, specs, get_metric("roc_auc", 2), tmp_path, random_state=0)
    )
    result = run_search(
        objective, storage=storage, study_name="automl", sampler=make_sampler("random", 0),
        pruner=make_pruner(False, N_FOLDS), n_trials=3, deadline=time.time() + 60.0, n_jobs=1,
        oof_dir=tmp_path,
    )
    trials = result.study.trials
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 3
    assert len({t.user_attrs["pid"] for t in trials}) == 1 and trials[0].user_attrs["pid"] != os.getpid()
    assert sorted(result.oof) == [0, 1, 2] and result.killed == 0


# ---- sampler, pruner, storage -------------------------------------------------------------------------
def test_make_sampler_tpe_options():
    sampler = make_sampler("tpe", seed=3, n_startup_trials=7)
    assert isinstance(sampler, optuna.samplers.TPESampler)
    assert sampler._n_startup_trials == 7
    assert sampler._multivariate and sampler._group and sampler._constant_liar
    assert make_sampler().__class__ is optuna.samplers.TPESampler


def test_tpe_startup_is_paid_once_across_hyperband_brackets(monkeypatch):
    # Hyperband hands the sampler one bracket's view of the study; the estimator's startup count
    # assumes TPE still reads every bracket's trials. Were the history per bracket, each of the two
    # brackets would draw its own 4 random trials.
    sampler = make_sampler("tpe", seed=0, n_startup_trials=4)
    random_trials = set()
    draw = sampler._random_sampler.sample_independent

    def spy(study, trial, name, distribution):
        random_trials.add(trial.number)
        return draw(study, trial, name, distribution)

    monkeypatch.setattr(sampler._random_sampler, "sample_independent", spy)
    study = optuna.create_study(study_name="automl", sampler=sampler, pruner=make_pruner(True, 5))

    def objective(trial):
        x = trial.suggest_float("x", -1, 1)
        for fold in range(5):
            trial.report(-x * x, fold)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return -x * x

    study.optimize(objective, n_trials=20)
    brackets = {study.pruner._get_bracket_id(study, t) for t in study.trials[:4]}
    assert random_trials == {0, 1, 2, 3} and len(brackets) == 2


def test_startup_trials_are_half_a_known_trial_budget():
    assert [AutoClassifier(n_trials=n)._n_startup_trials() for n in (3, 8, 100, None)] == [2, 4, 10, 10]


def test_make_sampler_random_is_seeded():
    sampler = make_sampler("random", seed=3)
    assert isinstance(sampler, optuna.samplers.RandomSampler)
    values = []
    for _ in range(2):
        study = optuna.create_study(sampler=make_sampler("random", seed=3))
        study.optimize(quadratic, n_trials=3)
        values.append([t.params["x"] for t in study.trials])
    assert values[0] == values[1]


def test_make_sampler_tpe_is_seeded():
    values = []
    for _ in range(2):
        study = optuna.create_study(sampler=make_sampler("tpe", seed=5, n_startup_trials=2))
        study.optimize(quadratic, n_trials=6)
        values.append([t.params["x"] for t in study.trials])
    assert values[0] == values[1]


def test_make_pruner():
    assert isinstance(make_pruner(False, 5), optuna.pruners.NopPruner)
    pruner = make_pruner(True, 5)
    assert isinstance(pruner, optuna.pruners.HyperbandPruner)
    assert (pruner._min_resource, pruner._max_resource, pruner._reduction_factor) == (1, 5, 3)


def test_open_storage(tmp_path):
    default = open_storage(None, tmp_path)
    assert isinstance(default, JournalStorage)
    optuna.create_study(storage=default, study_name="s")
    assert (tmp_path / "study.journal").exists()
    assert isinstance(open_storage(str(tmp_path / "other.journal"), tmp_path), JournalStorage)
    assert isinstance(open_storage(tmp_path / "third.log", tmp_path), JournalStorage)
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    rdb = open_storage(url, tmp_path)
    # An RDB URL gets heartbeats, so that the trial of a killed worker is marked failed.
    assert isinstance(rdb, optuna.storages.RDBStorage) and rdb.url == url
    assert heartbeat_of(rdb) == (HEARTBEAT_INTERVAL, HEARTBEAT_GRACE)
    assert heartbeat_of(open_storage(url, tmp_path, heartbeat=(2, 7))) == (2, 7)
    assert heartbeat_of(default) is None
    memory = optuna.storages.InMemoryStorage()
    assert open_storage(memory, tmp_path) is memory


# ---- leaderboard and progress ---------------------------------------------------------------------------
def _trial(state, scores=(), value=None, error=None, family="logreg", x=0.0):
    attrs = {"family": family, "fold_scores": list(scores)}
    if error:
        attrs["error"] = error
    return create_trial(
        state=state, value=value, params={"model": family, "x": x},
        distributions={"model": optuna.distributions.CategoricalDistribution(["logreg", "hgb"]),
                       "x": FloatDistribution(0, 1)},
        user_attrs=attrs,
        intermediate_values={i + 1: float(np.mean(scores[: i + 1])) for i in range(len(scores))},
    )


def toy_study(direction):
    study = optuna.create_study(direction=direction)
    study.add_trial(_trial(TrialState.COMPLETE, [0.8, 0.8], 0.8))                      # 0
    study.add_trial(_trial(TrialState.COMPLETE, [0.9, 0.7, 1.1], 0.9, family="hgb"))  # 1
    study.add_trial(_trial(TrialState.PRUNED, [0.95]))                                 # 2
    study.add_trial(_trial(TrialState.PRUNED, [0.5]))                                  # 3
    study.add_trial(_trial(TrialState.FAIL, [], error="ValueError: boom"))             # 4
    study.add_trial(_trial(TrialState.COMPLETE, [0.85], 0.85, x=0.5))                  # 5
    study.add_trial(_trial(TrialState.FAIL, [0.7], error="stopped at the time budget"))  # 6
    return study


@pytest.mark.parametrize(
    "direction, order",
    [("maximize", [1, 5, 0, 2, 3, 6, 4]), ("minimize", [0, 5, 1, 3, 2, 6, 4])],
)
def test_leaderboard_order(direction, order):
    table = leaderboard(toy_study(direction), weights={5: 0.25, 1: 0.75})
    assert list(table.columns) == ["trial", "family", "state", "mean", "std", "folds", "seconds", "weight",
                                   "params", "note"]
    assert table["trial"].tolist() == order
    states = table["state"].tolist()
    assert states == sorted(states, key=["COMPLETE", "PRUNED", "FAIL"].index)
    row = table.set_index("trial").loc[1]
    assert (row["family"], row["folds"], row["weight"], row["params"]) == ("hgb", 3, 0.75, {"x": 0.0})
    assert row["mean"] == pytest.approx(0.9) and row["std"] == pytest.approx(np.std([0.9, 0.7, 1.1]))
    failed = table.set_index("trial").loc[4]
    assert np.isnan(failed["mean"]) and failed["folds"] == 0 and failed["note"] == "ValueError: boom"
    assert table.set_index("trial").loc[0, "weight"] == 0.0
    assert np.isnan(table.set_index("trial").loc[3, "std"])  # one fold: no spread, not zero
    assert table.index.tolist() == list(range(7))


def test_leaderboard_of_an_empty_study():
    table = leaderboard(optuna.create_study())
    assert table.shape == (0, 10)


def test_progress_line():
    stream = io.StringIO()
    study = toy_study("maximize")
    ProgressLine(stream=stream)(study, study.trials[-1])
    assert stream.getvalue() == "[automl] trials 3 done, 2 pruned, 2 failed | best 0.9000\n"
    stream = io.StringIO()
    ProgressLine(deadline=time.time() + 100, stream=stream)(study, study.trials[-1])
    assert " s left\n" in stream.getvalue()


def test_leaderboard_notes_why_trials_stopped_and_leaves_out_waiting_ones():
    study = toy_study("maximize")
    study.add_trial(_trial(TrialState.PRUNED, [0.6, 0.7]))                              # 7
    study.enqueue_trial({"model": "hgb", "x": 0.1})
    stopped = study.ask()  # trial 8 takes the enqueued parameters and runs out of time
    stopped.set_user_attr("stopped", "time budget")
    study.tell(stopped, state=TrialState.PRUNED)
    study.enqueue_trial({"model": "logreg", "x": 0.2})  # trial 9 never starts
    notes = leaderboard(study).set_index("trial")["note"]
    assert notes[2] == "stopped by Hyperband after 1 fold(s)"
    assert notes[7] == "stopped by Hyperband after 2 fold(s)"
    assert notes[8] == "stopped by the time budget after 0 fold(s)"
    assert 9 not in notes.index and len(notes) == 9


def test_failed_trials_summary_counts_the_pipelines_errors_not_the_budgets():
    board = pd.DataFrame({
        "state": ["COMPLETE", "FAIL", "FAIL", "FAIL", "FAIL", "FAIL", "FAIL"],
        "family": ["hgb", "svc", "svc", None, "rf", "rf", "knn"],
        "note": ["", "ValueError: bad", "ValueError: bad", "KeyError: 'x'", "stopped at the time budget",
                 "interrupted", "failed with no error recorded: its worker was interrupted"],
    })
    assert failed_trials_summary(board) == (
        "3 of 7 trials failed (svc x2: ValueError: bad; ? x1: KeyError: 'x'). Each error is in "
        "leaderboard_['note'] and the trial's MLflow run; the traceback is logged at DEBUG by "
        "automl.search.objective. Leave a family that always fails out with include=.")
    assert failed_trials_summary(board.iloc[[0, 4, 5, 6]]) is None
