"""Tests of automl.tracking against a real MLflow server and a real SQLite store (no mocks)."""

import hashlib
import json
import logging
import os
import pickle
import re
import subprocess
import sys
import time
from pathlib import Path

import mlflow  # noqa: E402
import numpy as np
import optuna
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient  # noqa: E402
from sklearn.compose import make_column_transformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from automl.tracking import MLflowTracker, NullTracker, TrialLogger, make_tracker, read_run_json
from automl.tracking.persistence import _code_paths
from automl.tracking.runs import _batches

REPO_ROOT = Path(__file__).resolve().parents[1]
N_FOLDS = 3
N_TRIALS = 6
PRUNED_TRIAL = 2
FAILED_TRIAL = 3
STOPPED_TRIAL = 5  # by the time budget: Optuna's PRUNED, with the user attribute "stopped"
PARENT_PARAMS = {"n_rows": 40, "seed": None, "note": "x" * 7000}  # MLflow keeps 6000 characters
PARENT_TAGS = {"task": "binary", "mlflow.runName": "fit-under-test"}

# Run in a fresh interpreter: unpickle a TrialLogger, wait until every sibling process is ready (so
# they really write at the same time), log `count` trials numbered from `first`, report as JSON.
CHILD_SCRIPT = r"""
import json, pickle, sys, time
from pathlib import Path
import optuna
import mlflow.tracking  # imported before the barrier so that the writes, not the imports, overlap

logger_path, first, count, barrier, n_processes = sys.argv[1:6]
logger = pickle.loads(Path(logger_path).read_bytes())
Path(barrier, first).touch()
deadline = time.monotonic() + 60
while len(list(Path(barrier).iterdir())) < int(n_processes) and time.monotonic() < deadline:
    time.sleep(0.01)
for number in range(int(first), int(first) + int(count)):
    trial = optuna.trial.create_trial(
        value=0.5,
        params={"model": "hgb"},
        distributions={"model": optuna.distributions.CategoricalDistribution(["hgb"])},
        user_attrs={"family": "hgb", "fold_scores": [0.4, 0.6], "mean_score": 0.5,
                    "std_score": 0.1},
        intermediate_values={0: 0.4, 1: 0.5},
    )
    trial.number = number
    logger(None, trial)
print(json.dumps({"n_failures": logger.n_failures, "seconds": logger.seconds}))
"""


def _objective(trial):
    """Follow the trial contract of automl.search.objective on made-up fold scores."""
    family = trial.suggest_categorical("model", ["hgb", "logreg"])
    trial.suggest_categorical("imputer.numeric", ["mean", "median", None])
    trial.suggest_float(f"model.{family}.learning_rate", 0.01, 0.3, log=True)
    trial.set_user_attr("family", family)
    scores = []
    for fold in range(N_FOLDS):
        if trial.number == FAILED_TRIAL and fold == 1:
            trial.set_user_attr("error", "ValueError: fold 1 could not be fit")
            raise ValueError("fold 1 could not be fit")
        scores.append(0.5 + 0.1 * fold + 0.01 * trial.number)
        trial.set_user_attr("fold_scores", list(scores))
        trial.report(float(np.mean(scores)), fold)
        if trial.number == PRUNED_TRIAL and fold == 1:
            raise optuna.TrialPruned()
        if trial.number == STOPPED_TRIAL and fold == 1:
            trial.set_user_attr("stopped", "time budget")
            raise optuna.TrialPruned()
    trial.set_user_attr("mean_score", float(np.mean(scores)))
    trial.set_user_attr("std_score", float(np.std(scores)))
    return float(np.mean(scores))


@pytest.fixture(scope="module")
def tracked_study(mlflow_server):
    """A fit's parent run and a 6-trial study (3 complete, 1 pruned, 1 failed, 1 stopped) logged under it."""
    tracker = MLflowTracker(mlflow_server, "automl-test")
    assert tracker.start_fit(PARENT_PARAMS, PARENT_TAGS) is not None
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(
        _objective, n_trials=N_TRIALS, callbacks=[tracker.trial_logger()], catch=(ValueError,)
    )
    return tracker, study


@pytest.fixture(scope="module")
def client(mlflow_server):
    return MlflowClient(mlflow_server)


def _trial_runs(client, tracker):
    runs = client.search_runs(
        [tracker.experiment_id],
        filter_string=f"tags.`mlflow.parentRunId` = '{tracker.parent_run_id}'",
        max_results=1000,
    )
    return {int(run.data.tags["trial_number"]): run for run in runs}


def _child(logger_path, first, count, barrier, n_processes):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    args = [str(logger_path), str(first), str(count), str(barrier), str(n_processes)]
    return subprocess.Popen(
        [sys.executable, "-c", CHILD_SCRIPT, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )


def _finish(child):
    stdout, stderr = child.communicate(timeout=120)
    assert child.returncode == 0, stderr[-3000:]
    return json.loads(stdout.strip().splitlines()[-1])


def test_start_fit_logs_the_parent_run(tracked_study, client):
    tracker, _ = tracked_study
    run = client.get_run(tracker.parent_run_id)
    assert client.get_experiment(run.info.experiment_id).name == "automl-test"
    assert run.info.run_name == "fit-under-test"
    note = run.data.params.pop("note")
    assert run.data.params == {"n_rows": "40", "seed": "None"}
    # Cut to MLflow's 6,000 characters with a marker that tells values apart by their digest.
    digest = hashlib.sha256(PARENT_PARAMS["note"].encode()).hexdigest()[:16]
    assert len(note) == 6000 and note.endswith(f" ...[cut: 7000 characters, sha256 {digest}]")
    assert note.startswith("x" * 5900)
    assert run.data.tags["task"] == "binary"
    assert run.info.status == "RUNNING"
    assert tracker.n_failures == 0
    assert tracker.seconds > 0


def test_each_trial_is_a_nested_run_with_its_contract(tracked_study, client):
    tracker, study = tracked_study
    runs = _trial_runs(client, tracker)
    assert sorted(runs) == list(range(N_TRIALS))
    for trial in study.trials:
        run = runs[trial.number]
        assert run.data.tags["state"] == trial.state.name
        assert run.data.tags["family"] == trial.user_attrs["family"]
        assert run.data.params == {key: str(value) for key, value in trial.params.items()}
        history = client.get_metric_history(run.info.run_id, "fold_score")
        assert sorted((m.step, m.value) for m in history) == list(
            enumerate(trial.user_attrs["fold_scores"])
        )
        history = client.get_metric_history(run.info.run_id, "running_mean")
        assert sorted((m.step, m.value) for m in history) == sorted(
            trial.intermediate_values.items()
        )
        assert run.data.metrics["duration_seconds"] == pytest.approx(
            trial.duration.total_seconds()
        )
        assert run.info.end_time is not None


def test_trial_runs_carry_state_status_and_error(tracked_study, client):
    tracker, study = tracked_study
    runs = _trial_runs(client, tracker)
    states = {trial.number: trial.state for trial in study.trials}
    assert states[PRUNED_TRIAL] == optuna.trial.TrialState.PRUNED
    assert states[FAILED_TRIAL] == optuna.trial.TrialState.FAIL
    assert states[STOPPED_TRIAL] == optuna.trial.TrialState.PRUNED
    endings = {PRUNED_TRIAL: (" pruned", "FINISHED"), FAILED_TRIAL: (" failed", "FAILED"),
               STOPPED_TRIAL: (" stopped by the budget", "KILLED")}
    for number, run in runs.items():
        complete = states[number] == optuna.trial.TrialState.COMPLETE
        suffix, status = endings.get(number, ("", "FINISHED"))
        assert (run.info.run_name, run.info.status) == (f"trial-{number}{suffix}", status)
        assert ("mean_score" in run.data.metrics) == complete
        assert ("std_score" in run.data.metrics) == complete
        assert ("error" in run.data.tags) == (number == FAILED_TRIAL)
    assert runs[FAILED_TRIAL].data.tags["error"] == "ValueError: fold 1 could not be fit"


def test_trial_logger_pickles_and_logs_from_another_process(tracked_study, client, tmp_path):
    tracker, _ = tracked_study
    logger = tracker.trial_logger()
    copy = pickle.loads(pickle.dumps(logger))
    assert (copy.tracking_uri, copy.experiment_id, copy.parent_run_id) == (
        logger.tracking_uri, logger.experiment_id, logger.parent_run_id
    )
    logger_path = tmp_path / "logger.pkl"
    logger_path.write_bytes(pickle.dumps(logger))
    (tmp_path / "barrier").mkdir()
    report = _finish(_child(logger_path, 100, 1, tmp_path / "barrier", 1))
    assert report["n_failures"] == 0
    assert report["seconds"] > 0
    run = _trial_runs(client, tracker)[100]
    assert run.info.run_name == "trial-100"
    assert run.data.params == {"model": "hgb"}
    assert run.data.tags["state"] == "COMPLETE"


def _tiny_fitted_pipeline():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({
        "num": rng.normal(size=40),
        "count": rng.integers(0, 5, size=40),
        "color": rng.choice(["red", "blue", None], size=40),
    })
    X.loc[[1, 7], "num"] = np.nan
    y = np.where(X["num"].fillna(0) > 0, "yes", "no")
    pipeline = make_pipeline(
        make_column_transformer(
            (SimpleImputer(), ["num", "count"]),
            (make_pipeline(
                SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")
            ), ["color"]),
        ),
        LogisticRegression(),
    )
    return pipeline.fit(X, y), X, y


@pytest.fixture(scope="module")
def logged_fit(tracked_study):
    """The study's fit closed with log_fit_results (a tiny fitted pipeline) and end_fit."""
    tracker, study = tracked_study
    model, X, y = _tiny_fitted_pipeline()
    leaderboard = pd.DataFrame(
        {"trial": [t.number for t in study.trials], "state": [t.state.name for t in study.trials]}
    )
    global_state = (mlflow.is_tracking_uri_set(), os.environ.get("MLFLOW_TRACKING_URI"))
    tracker.log_fit_results(
        artifacts={"leaderboard.csv": leaderboard,
                   "ensemble_weights.json": {"0": 0.75, "4": float(np.float64(0.25))},
                   "report/notes.txt": "plain text"},
        metrics={"best_mean_score": 0.64, "holdout_accuracy": 0.9},
        model=model,
        input_example=X.head(5),
    )
    tracker.end_fit()
    assert (mlflow.is_tracking_uri_set(), os.environ.get("MLFLOW_TRACKING_URI")) == global_state
    return tracker, leaderboard, X, y


def test_log_fit_results_logs_artifacts_and_metrics(logged_fit, client, tmp_path):
    tracker, leaderboard, _, _ = logged_fit
    assert tracker.n_failures == 0
    run_id = tracker.parent_run_id
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.metrics == {"best_mean_score": 0.64, "holdout_accuracy": 0.9}
    assert run.data.tags["automl.model_uri"] == tracker.model_uri
    csv = client.download_artifacts(run_id, "leaderboard.csv", str(tmp_path))
    pd.testing.assert_frame_equal(pd.read_csv(csv), leaderboard)
    weights = client.download_artifacts(run_id, "ensemble_weights.json", str(tmp_path))
    assert json.loads(Path(weights).read_text()) == {"0": 0.75, "4": 0.25}
    notes = client.download_artifacts(run_id, "report/notes.txt", str(tmp_path))
    assert Path(notes).read_text() == "plain text"


def test_read_run_json_reads_back_and_names_what_is_missing(logged_fit, mlflow_server):
    tracker = logged_fit[0]
    weights = read_run_json(mlflow_server, tracker.parent_run_id, "ensemble_weights.json")
    assert weights == {"0": 0.75, "4": 0.25}
    with pytest.raises(LookupError, match="has no artifact 'report/report.json'"):
        read_run_json(mlflow_server, tracker.parent_run_id, "report/report.json")
    with pytest.raises(LookupError, match="No MLflow run 'f00'"):
        read_run_json(mlflow_server, "f00", "report/report.json")


def test_for_run_logs_to_a_finished_run(logged_fit, client, mlflow_server, tmp_path):
    run_id = logged_fit[0].parent_run_id
    tracker = MLflowTracker.for_run(mlflow_server, run_id)
    tracker.log_artifacts({"later.json": {"a": 1}})
    assert tracker.n_failures == 0
    assert read_run_json(mlflow_server, run_id, "later.json") == {"a": 1}


def test_logged_model_loads_and_predicts(logged_fit, mlflow_server, monkeypatch):
    tracker, _, X, y = logged_fit
    # As a user would: the server in MLFLOW_TRACKING_URI, the model by its models:/ URI.
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    loaded = mlflow.pyfunc.load_model(tracker.model_uri)
    assert loaded.metadata.signature is not None
    served = X.astype({"count": "float64"})
    served.loc[0, "count"] = np.nan  # integer in the example, missing when served
    predictions = loaded.predict(served)
    assert len(predictions) == len(X)
    assert set(predictions) <= set(y)


def test_mlflow_models_predict_serves_the_logged_model(
    logged_fit, mlflow_server, tmp_path, monkeypatch
):
    tracker, _, _, y = logged_fit
    # models:/ URIs resolve through MLflow's global tracking URI, whatever the call's arguments.
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    local = mlflow.artifacts.download_artifacts(tracker.model_uri, dst_path=str(tmp_path))
    command = [
        sys.executable, "-m", "mlflow", "models", "predict", "-m", tracker.model_uri,
        "-i", str(Path(local) / "serving_input_example.json"), "-t", "json",
        "--env-manager", "local",
    ]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(answer["predictions"]) == 5
    assert set(answer["predictions"]) <= set(y)


def test_default_store_takes_two_processes_logging_at_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    tracker = make_tracker(True, None, "automl")
    assert tracker.tracking_uri == "sqlite:///" + (tmp_path / "mlflow.db").resolve().as_posix()
    assert tracker.start_fit({"n_rows": 1}, {}) is not None
    logger_path = tmp_path / "logger.pkl"
    logger_path.write_bytes(pickle.dumps(tracker.trial_logger()))
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    children = [_child(logger_path, first, 10, barrier, 2) for first in (0, 10)]
    reports = [_finish(child) for child in children]
    assert [report["n_failures"] for report in reports] == [0, 0]

    client = MlflowClient(tracker.tracking_uri)
    runs = _trial_runs(client, tracker)
    assert sorted(runs) == list(range(20))
    assert {run.info.status for run in runs.values()} == {"FINISHED"}
    tracker.end_fit()
    assert client.get_run(tracker.parent_run_id).info.status == "FINISHED"


def test_unreachable_server_is_counted_and_warned_once_not_raised(caplog, free_port):
    uri = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    trial = optuna.trial.create_trial(value=0.5, user_attrs={"fold_scores": [0.5]})
    start = time.perf_counter()
    with caplog.at_level(logging.WARNING, logger="automl.tracking"):
        tracker = MLflowTracker(uri)
        assert tracker.start_fit({"n_rows": 1}, {}) is None
        assert tracker.trial_logger() is None
        tracker.log_fit_results(
            artifacts={"leaderboard.csv": pd.DataFrame()}, metrics={}, model=None,
            input_example=None,
        )
        tracker.end_fit()
        logger = TrialLogger(uri, "1", "0123456789abcdef")
        logger(None, trial)
        logger(None, trial)
    assert time.perf_counter() - start < 30  # not MLflow's minutes of retries
    assert tracker.n_failures == 1
    assert logger.n_failures == 2
    warnings = [r for r in caplog.records if r.name.startswith("automl.tracking") and r.levelno >= 30]
    assert len(warnings) == 2  # once per object, not once per failure


def test_null_tracker_does_nothing():
    tracker = make_tracker(False, None, "automl")
    assert isinstance(tracker, NullTracker)
    assert tracker.start_fit({"n_rows": 1}, {"task": "binary"}) is None
    assert tracker.trial_logger() is None
    tracker.log_fit_results(
        artifacts={"leaderboard.csv": pd.DataFrame()}, metrics={}, model=None, input_example=None
    )
    tracker.end_fit()
    assert (tracker.parent_run_id, tracker.seconds, tracker.n_failures) == (None, 0.0, 0)


def test_batches_respect_mlflow_request_limits():
    metrics, params = list(range(1500)), list(range(250))
    batches = list(_batches(metrics, params))
    assert all(len(p) <= 100 and len(m) + len(p) <= 1000 for m, p in batches)
    assert [x for m, _ in batches for x in m] == metrics
    assert [x for _, p in batches for x in p] == params
    assert len(list(_batches(metrics[:10], params[:20]))) == 1


def test_an_automl_model_ships_the_package():
    # So that `mlflow models predict` loads it where automl is not installed.
    from automl.ensemble import WeightedEnsembleClassifier

    assert _code_paths(LogisticRegression()) is None
    shipped = _code_paths(WeightedEnsembleClassifier(estimators=[], weights=[]))
    assert shipped == [str(REPO_ROOT / "automl")]


def test_importing_tracking_does_not_import_mlflow():
    code = (
        "import sys\n"
        "import automl.tracking as tracking\n"
        "assert 'mlflow' not in sys.modules, 'import automl.tracking imported mlflow'\n"
        "tracking.make_tracker(False, None, 'automl').start_fit({}, {})\n"
        "tracking.make_tracker(True, 'sqlite:///unused.db', 'automl')\n"
        "assert 'mlflow' not in sys.modules, 'making a tracker imported mlflow'\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_autoclassifier_fit_logs_parent_and_every_trial_to_a_server(mlflow_server, client):
    """A real fit with two worker processes: every trial of the study is a nested run."""
    from automl import AutoClassifier
    from automl.datasets import load_dataset

    X, y = load_dataset("credit-g")
    model = AutoClassifier(
        time_budget=None, n_trials=6, include=["logreg", "hgb"], cv=3, n_jobs=2, random_state=0,
        tracking_uri=mlflow_server, experiment_name="automl-fit", verbose=0,
    ).fit(X.iloc[:400], y.iloc[:400])
    parent = client.get_run(model.mlflow_run_id_)
    assert parent.info.status == "FINISHED"
    # Named and described from the fit, so that the runs table says which fit is which and what it did.
    assert re.fullmatch(r"AutoClassifier · class · 6 trials · \d{4}-\d\d-\d\d \d\d:\d\d", parent.info.run_name)
    note = parent.data.tags["mlflow.note.content"]
    best = model.leaderboard_.iloc[0]
    assert note.startswith("AutoClassifier on 400 rows x 20 columns (binary), roc_auc on CV")
    assert f"Trials: 6 ({model.leaderboard_['state'].value_counts().get('COMPLETE')} complete" in note
    assert f"Best trial {best['trial']} ({best['family']}): {best['mean']:.4f} +/- {best['std']:.4f}" in note
    assert f"Ensemble of {(model.leaderboard_['weight'] > 0).sum()} (" in note
    assert parent.data.params["n_samples"] == "400" and parent.data.params["metric"] == "roc_auc"
    assert parent.data.metrics["best_score"] == pytest.approx(model.best_score_)
    artifacts = {a.path for a in client.list_artifacts(model.mlflow_run_id_)}
    assert {"leaderboard.csv", "leak_report.csv", "ensemble_weights.json"} <= artifacts
    runs = client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.`mlflow.parentRunId` = '{model.mlflow_run_id_}'", max_results=100,
    )
    by_number = {int(r.data.tags["trial_number"]): r for r in runs}
    assert sorted(by_number) == sorted(model.leaderboard_["trial"])
    for row in model.leaderboard_.itertuples():
        run = by_number[row.trial]
        assert run.data.tags["state"] == row.state
        assert run.data.params["model"] == row.family
        history = client.get_metric_history(run.info.run_id, "fold_score")
        assert len(history) == row.folds
        if row.state == "COMPLETE":
            assert run.data.metrics["mean_score"] == pytest.approx(row.mean)
    assert parent.data.tags["automl.model_uri"].startswith("models:/")


def test_a_fit_on_an_arrow_table_logs_a_model_with_its_column_names(tmp_path, monkeypatch):
    """The input example and signature name the table's columns, so the logged model serves by name."""
    import mlflow.pyfunc
    import pyarrow as pa

    from automl import AutoClassifier
    from automl.datasets import load_dataset

    X, y = load_dataset("credit-g")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    model = AutoClassifier(time_budget=None, n_trials=2, include=["logreg"], cv=2, random_state=0, verbose=0,
                           tracking_uri=uri, leak_check="off").fit(pa.Table.from_pandas(X.iloc[:300]), y.iloc[:300])
    run = MlflowClient(uri).get_run(model.mlflow_run_id_)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    served = mlflow.pyfunc.load_model(run.data.tags["automl.model_uri"])
    assert served.metadata.get_input_schema().input_names() == list(X.columns)
    np.testing.assert_array_equal(served.predict(X.iloc[300:310]), model.predict(X.iloc[300:310]))


def test_autoregressor_fit_logs_parent_trials_and_a_servable_model(mlflow_server, client, load_shared, monkeypatch):
    """The regression path through MLflow: parent run, a nested run per trial, the model served by pyfunc."""
    import mlflow.pyfunc

    from automl import AutoRegressor

    X, y = load_shared("abalone.csv", "Class_Rings")
    model = AutoRegressor(
        time_budget=None, n_trials=5, include=["ridge", "hgb"], cv=3, n_jobs=2, random_state=0,
        tracking_uri=mlflow_server, experiment_name="automl-regression", verbose=0, leak_check="off",
    ).fit(X.iloc[:400], y.iloc[:400])
    parent = client.get_run(model.mlflow_run_id_)
    assert parent.info.status == "FINISHED" and parent.data.params["metric"] == "rmse"
    assert parent.data.params["task"] == "regression" and parent.data.params["n_classes"] == "0"
    assert parent.data.metrics["best_score"] == pytest.approx(model.best_score_)
    runs = client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.`mlflow.parentRunId` = '{model.mlflow_run_id_}'", max_results=100,
    )
    assert sorted(int(r.data.tags["trial_number"]) for r in runs) == sorted(model.leaderboard_["trial"])
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    served = mlflow.pyfunc.load_model(parent.data.tags["automl.model_uri"]).predict(X.iloc[400:405])
    np.testing.assert_allclose(np.asarray(served, dtype=float), model.predict(X.iloc[400:405]))
