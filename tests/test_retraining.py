"""The retraining job against a real MLflow server (SQL backend) and real subprocesses.

Snapshots are credit-g (shipped with the package) cut in row order, as rows arrive. kc1, the other
shipped dataset, is stored sorted by class: its newest rows hold one class only, and a holdout of
them has no ROC AUC.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score, root_mean_squared_error

from automl.cli import main
from automl.datasets import load_dataset
from automl.exceptions import ConfigError, DataValidationError
from automl.retraining import EXIT_CODES, JobBusyError, job_lock, load_snapshot, read_config, run_job, split_holdout
from automl.tracking import global_tracking_uri

REPO_ROOT = Path(__file__).resolve().parents[1]
SEARCH = {"n_trials": 5, "include": ["logreg", "hgb"], "random_state": 0}


def toml(sections):
    def value(v):  # JSON is TOML for these values, but for TOML's spelling of nan and inf
        return str(v) if isinstance(v, float) and not np.isfinite(v) else json.dumps(v)

    lines = []
    for section, values in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{key} = {value(v)}" for key, v in values.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def credit_g():
    X, y = load_dataset("credit-g")
    return pd.concat([X, y.rename("class")], axis=1)


def job(tmp, name, data_file, server, search=SEARCH, promotion=None, data=None):
    """Write a job config in ``tmp`` for the registered model ``name``; return its path."""
    config = {
        "data": {"path": str(data_file), "target": "class", **(data or {})},
        "search": {**search, "storage": f"sqlite:///{tmp / 'optuna.db'}"},
        "mlflow": {"tracking_uri": server, "model_name": name, "experiment_name": f"retrain-{name}"},
        "promotion": {"holdout_size": 0.25, **(promotion or {})},
        "job": {"work_dir": str(tmp / "work")},
    }
    path = tmp / f"{name}.toml"
    path.write_text(toml(config))
    return path


def snapshot(tmp, frame, stop, name):
    path = tmp / f"{name}.csv"
    frame.iloc[:stop].to_csv(path, index=False)
    return path


def aliases(server, name):
    from mlflow import MlflowClient

    client = MlflowClient(server)
    versions = client.search_model_versions(f"name = '{name}'")
    return client.get_model_version_by_alias(name, "champion").version, sorted(int(v.version) for v in versions)


@pytest.fixture(scope="module")
def first_job(tmp_path_factory, credit_g, mlflow_server):
    """One job on the first 600 rows: version 1 becomes the champion."""
    tmp = tmp_path_factory.mktemp("retrain")
    config = job(tmp, "credit", snapshot(tmp, credit_g, 600, "snap1"), mlflow_server)
    return tmp, config, run_job(read_config(config))


def test_first_job_promotes_version_1(first_job, mlflow_server):
    tmp, config, summary = first_job
    assert summary.status == "promoted" and summary.exit_code == 0, summary.reason
    assert summary.challenger_version == "1" and summary.champion_version is None
    assert "no champion yet" in summary.reason
    assert summary.rows == {"train": 450, "holdout": 150}
    assert summary.holdout == "the 150 newest rows by file order"
    assert aliases(mlflow_server, "credit") == ("1", [1])
    written = json.loads((tmp / "work" / "summary.json").read_text())
    assert written["status"] == "promoted" and written["exit_code"] == 0
    assert written["search"]["trials_complete"] >= 1


def test_second_snapshot_registers_version_2_and_follows_the_margin(first_job, credit_g, mlflow_server, capsys):
    import mlflow.sklearn

    tmp, _, _ = first_job
    data = snapshot(tmp, credit_g, 1000, "snap2")
    # A margin of 1.0 ROC AUC cannot be met: the champion stays, whatever the scores.
    config = job(tmp, "credit", data, mlflow_server, promotion={"margin": 1.0})
    assert main(["retrain", "--config", str(config)]) == EXIT_CODES["kept"] == 99
    assert capsys.readouterr().out.startswith("kept: credit version 2:")
    summary = json.loads((tmp / "work" / "summary.json").read_text())
    assert summary["status"] == "kept" and "champion kept" in summary["reason"]
    assert aliases(mlflow_server, "credit") == ("1", [1, 2])
    # Both scores are on the same 250 newest rows; recompute them from the registered versions.
    holdout = credit_g.iloc[750:1000]
    for version, key in (("2", "challenger_score"), ("1", "champion_score")):
        with global_tracking_uri(mlflow_server):
            model = mlflow.sklearn.load_model(f"models:/credit/{version}")
        positive = list(model.classes_).index("good")
        auc = roc_auc_score(holdout["class"] == "good", model.predict_proba(holdout.drop(columns="class"))[:, positive])
        assert summary[key] == pytest.approx(auc, abs=1e-9), key
    assert summary["drift"]["missing_columns"] == [] and summary["drift"]["new_columns"] == []
    assert 0 <= summary["drift"]["class_shift"] < 0.05  # rows 0-749 vs 0-449: credit-g is not sorted by class

    # The same snapshot again: already decided, no third version, same exit code.
    assert main(["retrain", "--config", str(config)]) == 99
    assert "already decided" in capsys.readouterr().out
    assert aliases(mlflow_server, "credit") == ("1", [1, 2])


def test_a_champion_that_cannot_score_the_new_data_needs_a_person(first_job, credit_g, mlflow_server):
    tmp, _, _ = first_job
    changed = credit_g.drop(columns=["age"]).assign(age_band=(credit_g["age"] // 10).astype(str))
    config = job(tmp, "credit", snapshot(tmp, changed, 1000, "snap3"), mlflow_server)
    summary = run_job(read_config(config))
    assert summary.status == "failed" and summary.exit_code == 1
    assert "fails on the new data" in summary.reason and "'age'" in summary.reason
    assert "Version 3 is registered but not promoted" in summary.reason
    assert summary.drift["missing_columns"] == ["age"] and summary.drift["new_columns"] == ["age_band"]
    assert aliases(mlflow_server, "credit") == ("1", [1, 2, 3])


def test_a_champion_feature_that_became_the_weight_column_is_named(first_job, credit_g, mlflow_server):
    tmp, _, _ = first_job
    before = aliases(mlflow_server, "credit")[0]
    config = job(tmp, "credit", snapshot(tmp, credit_g, 900, "snap-weighted"), mlflow_server,
                 data={"weight": "credit_amount"})
    summary = run_job(read_config(config))
    assert summary.status == "failed"
    assert "'credit_amount'. Pass every training column; extra columns are ignored ('credit_amount': a feature of " \
           "the champion, now the job's groups or weight). Version" in summary.reason, summary.reason
    assert aliases(mlflow_server, "credit")[0] == before


@pytest.mark.parametrize("case, expected", [
    ("missing target", "target column 'class' is not in the snapshot"),
    ("one-class holdout", "The holdout (250 newest rows by file order) holds one class only ('good')"),
    ("files differ", "has other columns than"),
    ("unlabelled rows", "3 row(s) of the snapshot have no value in the target column 'class'"),
    ("unreadable", "Cannot read"),
    ("no file", "No file matches"),
])
def test_bad_data_fails_and_leaves_the_champion(first_job, credit_g, mlflow_server, case, expected):
    tmp, _, _ = first_job
    champion_before = aliases(mlflow_server, "credit")
    if case == "missing target":
        data = snapshot(tmp, credit_g.drop(columns="class"), 1000, "no_target")
    elif case == "one-class holdout":
        data = snapshot(tmp, credit_g.assign(**{"class": credit_g["class"].where(credit_g.index < 750, "good")}),
                        1000, "one_class")
    elif case == "files differ":
        snapshot(tmp, credit_g.iloc[:500], 500, "part-1")
        snapshot(tmp, credit_g.iloc[500:].drop(columns="age"), 500, "part-2")
        data = tmp / "part-*.csv"
    elif case == "unlabelled rows":
        data = snapshot(tmp, credit_g.assign(**{"class": credit_g["class"].mask(credit_g.index.isin([5, 50, 900]))}),
                        1000, "unlabelled")
    elif case == "unreadable":
        data = tmp / "broken.parquet"
        data.write_bytes(b"not a parquet file")
    else:
        data = tmp / "nothing-*.csv"
    config = job(tmp, "credit", data, mlflow_server)
    assert main(["retrain", "--config", str(config)]) == EXIT_CODES["failed"] == 1
    summary = json.loads((tmp / "work" / "summary.json").read_text())
    assert summary["status"] == "failed" and expected in summary["reason"]
    assert aliases(mlflow_server, "credit") == champion_before


def _run_cli(config):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen([sys.executable, "-m", "automl.cli", "retrain", "--config", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _complete_trials(storage, study_name):
    try:
        study = optuna.load_study(study_name=study_name, storage=storage)
    except KeyError:
        return []
    return [t for t in study.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]


def _wait(predicate, timeout, what, process=None):
    """Wait for ``predicate``; fail at once, with its output, if ``process`` exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if process is not None and process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"the job exited ({process.returncode}) before {what}: {out[-1000:]} {err[-2000:]}")
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture(params=["classification", "regression"])
def table(request, credit_g, load_shared):
    """``(task, frame, data, families)``: credit-g's class, or abalone's ring count (issue 28: the
    regression job keeps the classifier's crash and lock guarantees, tested the same way)."""
    if request.param == "classification":
        return "classification", credit_g, None, ["logreg", "hgb", "rf"]
    X, y = load_shared("abalone.csv", "Class_Rings")
    return "regression", X.assign(rings=y), {"target": "rings"}, ["ridge", "hgb", "rf"]


def test_sigkill_mid_search_then_restart_reuses_trials(tmp_path, table, mlflow_server):
    task, frame, data, families = table
    name = f"killed-{task}"  # one MLflow server serves both: the other task's champion would refuse this job
    search = {"n_trials": 40, "include": families, "random_state": 0}
    config = job(tmp_path, name, snapshot(tmp_path, frame, 800, "snap"), mlflow_server, search=search,
                 data=data)
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    first = _run_cli(config)
    _wait(lambda: len(_complete_trials(storage, name)) >= 3, 120, "3 complete trials", first)
    first.send_signal(signal.SIGKILL)
    first.wait()
    done_before = {t.number for t in _complete_trials(storage, name)}

    restarted = _run_cli(job(tmp_path, name, tmp_path / "snap.csv", mlflow_server,
                             search={**search, "n_trials": 4}, data=data))
    out, err = restarted.communicate(timeout=300)
    assert restarted.returncode == 0, err[-2000:]
    assert out.startswith(f"promoted: {name} version 1:")
    assert ("rmse " if task == "regression" else "roc_auc ") in out
    study = optuna.load_study(study_name=name, storage=storage)
    states = [t.state for t in study.trials]
    assert optuna.trial.TrialState.RUNNING not in states  # the killed trial was marked failed
    # The trials finished before the kill count in the restarted search's leaderboard, not redone.
    from mlflow import MlflowClient

    client = MlflowClient(mlflow_server)
    run_id = client.get_model_version(name, "1").run_id
    board = pd.read_csv(client.download_artifacts(run_id, "leaderboard.csv", str(tmp_path)))
    assert done_before <= set(board.loc[board["state"] == "COMPLETE", "trial"])
    # No configuration ran twice: the restart found the portfolio already tried and did not enqueue it again.
    configs = [json.dumps(t.params, sort_keys=True) for t in study.trials]
    assert len(configs) == len(set(configs))
    assert [v.version for v in client.search_model_versions(f"name = '{name}'")] == ["1"]


def test_second_job_exits_at_once_while_one_runs(tmp_path, table, mlflow_server):
    task, frame, data, _ = table
    search = {"n_trials": 200, "include": ["rf"], "random_state": 0}
    config = job(tmp_path, f"busy-{task}", snapshot(tmp_path, frame, 800, "snap"), mlflow_server, search=search,
                 data=data)
    lock = tmp_path / "work" / "job.lock"
    first = _run_cli(config)
    try:
        _wait(lambda: lock.exists() and "pid" in lock.read_text(), 60, "the first job's lock", first)
        started = time.monotonic()
        second = _run_cli(config)
        out, _ = second.communicate(timeout=60)
        assert second.returncode == EXIT_CODES["busy"] == 75
        assert out.startswith("busy: another retraining job holds") and f"pid {first.pid}" in out
        assert time.monotonic() - started < 30  # no search, no fit: just the imports
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    with job_lock(lock):  # released by the kernel when the holder died
        pass


def test_job_lock_is_exclusive(tmp_path):
    with job_lock(tmp_path / "job.lock"):
        with pytest.raises(JobBusyError, match=f"pid {os.getpid()}"):
            with job_lock(tmp_path / "job.lock"):
                pass


# ---- configuration --------------------------------------------------------------------------------
GOOD = {"data": {"path": "d.csv", "target": "y"}, "mlflow": {"model_name": "m"}}


@pytest.mark.parametrize("change, message", [
    ({"data": {"path": "d.csv"}}, r"\[data\] target is required"),
    ({"extra": {"a": 1}}, r"unknown section\(s\) \['extra'\]"),
    ({"search": {"time_budjet": 60}}, r"unknown key\(s\) \['time_budjet'\] in \[search\]"),
    ({"search": {"time_budget": "60"}}, r"\[search\] time_budget must be a number, got '60'"),
    ({"search": {"time_budget": -1}}, r"time_budget must be > 0, got -1"),
    ({"search": {"include": ["hgb", 3]}}, r"include must be a list of strings"),
    ({"promotion": {"holdout_size": 1.5}}, r"holdout_size must be > 0 and < 1, got 1.5"),
    ({"promotion": {"margin": float("nan")}}, r"margin must be a finite number, got nan"),
    ({"search": {"time_budget": float("inf")}}, r"time_budget must be a finite number, got inf"),
    ({"search": {"metric": "auc"}}, r"metric 'auc' is unknown for task 'auto'; the metrics are \{'classification': "
                                    r"\['accuracy'.*'regression': \['mae', 'r2', 'rmse'\]\}"),
    ({"search": {"metric": "rmse", "task": "classification"}},
     r"metric 'rmse' is unknown for task 'classification'; the metrics are \['accuracy'"),
    ({"search": {"task": "ranking"}}, r'task must be "auto", "classification" or "regression", got \'ranking\''),
    ({"search": {"include": ["hgb", "lightgbm"]}}, r"unknown model families \['lightgbm'\]"),
    ({"search": {"include": ["ridge"], "task": "classification"}}, r"unknown model families \['ridge'\]"),
    ({"search": {"include": ["logreg"], "metric": "mae"}}, r"unknown model families \['logreg'\]"),
    ({"data": {"target": "y", "path": "d.csv", "sql_query": "select 1", "sql_url": "sqlite://"}},
     "exactly one source"),
    ({"data": {"target": "y", "sql_query": "select 1"}}, "sql_query and sql_url go together"),
    ({"search": {"cv": "timely"}}, r'\[search\] cv must be an integer >= 2 or "time", got \'timely\''),
    ({"search": {"cv": 1}}, r'cv must be an integer >= 2 or "time", got 1'),
    ({"search": {"cv": 2.5}}, r'\[search\] cv must be an integer or "time", got 2.5'),
    ({"data": {"path": "d.csv", "target": "y", "groups": "g", "time_column": "t"}, "search": {"cv": "time"}},
     r'cv = "time" and \[data\] groups together are not supported'),
    ({"data": {"path": "d.csv", "target": "y", "weight": "y"}}, r"target and weight name the same column 'y'"),
])
def test_bad_config_names_the_key(tmp_path, change, message):
    path = tmp_path / "job.toml"
    path.write_text(toml({**GOOD, **change}))
    with pytest.raises(ConfigError, match=message):
        read_config(path)


def test_config_defaults_and_relative_paths(tmp_path):
    (tmp_path / "jobs").mkdir()
    path = tmp_path / "jobs" / "job.toml"
    path.write_text(toml(GOOD) + "[job]\nwork_dir = \"w\"\n")
    config = read_config(path)
    assert config.path == tmp_path / "jobs" / "d.csv"
    assert config.work_dir == tmp_path / "jobs" / "w"
    assert config.summary == tmp_path / "jobs" / "w" / "summary.json"
    assert config.storage == f"sqlite:///{tmp_path / 'jobs' / 'w' / 'optuna.db'}"
    assert (config.study_name, config.time_budget, config.margin, config.holdout_size) == ("m", 300.0, 0.0, 0.2)
    assert config.cv == 5  # shuffled folds without a time column; in time order with one
    path.write_text(toml({"data": {**GOOD["data"], "time_column": "t"}, "mlflow": GOOD["mlflow"]}))
    assert read_config(path).cv == "time"
    path.write_text(toml({"data": {**GOOD["data"], "time_column": "t", "groups": "g"}, "mlflow": GOOD["mlflow"]}))
    assert read_config(path).cv == 5  # grouped folds: time order and groups do not go together
    path.write_text(toml(GOOD) + "[search]\ncv = 3\n")
    assert read_config(path).cv == 3 and read_config(path).task == "auto"
    path.write_text(toml(GOOD) + "[search]\nmetric = \"mae\"\n")
    assert read_config(path).task == "regression"  # a metric of one task settles it
    with pytest.raises(ConfigError, match="not valid TOML"):
        path.write_text("[data\n")
        read_config(path)
    with pytest.raises(ConfigError, match="No config file"):
        read_config(tmp_path / "absent.toml")


def test_holdout_is_the_newest_rows_by_time_column(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=100), "y": rng.integers(0, 2, 100),
                          "when": pd.date_range("2026-01-01", periods=100).astype(str)})
    shuffled = frame.sample(frac=1.0, random_state=0)
    path = tmp_path / "job.toml"
    path.write_text(toml({"data": {"path": "d.csv", "target": "y", "time_column": "when"},
                          "mlflow": {"model_name": "m"}}))
    split = split_holdout(shuffled, read_config(path))
    assert split.description == "the 20 newest rows by when"
    assert "when" not in split.X.columns and "when" not in split.X_holdout.columns
    np.testing.assert_array_equal(split.X_holdout["x"].to_numpy(), frame["x"].iloc[80:].to_numpy())
    assert split.groups is None and split.weight is None and split.weight_holdout is None
    broken = shuffled.assign(when=shuffled["when"].where(shuffled.index != 5, "soon"))
    with pytest.raises(Exception, match="1 value\\(s\\) of the time column 'when'"):
        split_holdout(broken, read_config(path))


def _config(tmp_path, **data):
    path = tmp_path / "job.toml"
    path.write_text(toml({"data": {"path": "d.csv", "target": "class", **data}, "mlflow": {"model_name": "m"},
                          "promotion": {"holdout_size": 0.25}}))
    return read_config(path)


def test_with_groups_the_holdout_is_still_the_newest_rows_and_groups_leave_the_features(tmp_path, credit_g):
    # Whole groups held out would bring their older rows, which the champion trained on, into the holdout.
    frame = credit_g.head(200).assign(batch=np.arange(200) // 7)  # applications arriving in batches of 7
    split = split_holdout(frame, _config(tmp_path, groups="batch"))
    assert split.description == "the 50 newest rows by file order"
    assert "batch" not in split.X.columns and "batch" not in split.X_holdout.columns
    np.testing.assert_array_equal(split.groups.to_numpy(), np.arange(150) // 7)
    with pytest.raises(Exception, match=r"2 row\(s\) of the snapshot have no value in the groups column 'batch'"):
        split_holdout(frame.assign(batch=frame["batch"].where(~frame.index.isin([1, 91]))),
                      _config(tmp_path, groups="batch"))


@pytest.mark.parametrize("batch, bad, message", [
    (np.arange(200) // 50, None, r"\[data\] groups = 'batch' \(training rows\) has 3 group\(s\), fewer than the "
                                 r"\[search\] cv=5 folds: give \[search\] cv=3 or fewer, or more groups\."),
    (np.zeros(200, int), None, r"has 1 group\(s\), .* grouped folds need at least 2; give more groups\."),
    (np.arange(200) // 7, [0, 25], r"Class 'bad' lies in 1 group\(s\) only \(\[data\] groups = 'batch' "
                                   r"\(training rows\)\): with \[search\] cv=5 .* Grouped folds need at least 2; give"),
])
def test_grouped_folds_that_cannot_be_made_are_refused_before_the_fit_naming_the_settings(
        tmp_path, credit_g, batch, bad, message):
    frame = credit_g.head(200).assign(batch=batch)
    if bad is not None:  # 'bad' only in the given batches: one of them is in the training rows
        frame["class"] = np.where(np.isin(batch, bad), "bad", "good")
    with pytest.raises(DataValidationError, match=message):
        split_holdout(frame, _config(tmp_path, groups="batch"))


def test_weight_column_is_checked_in_snapshot_rows_and_weighs_the_holdout(tmp_path, credit_g):
    frame = credit_g.head(200).assign(cost=np.where(credit_g["class"].head(200) == "bad", 5.0, 1.0))
    split = split_holdout(frame, _config(tmp_path, weight="cost"))
    assert "cost" not in split.X.columns and "cost" not in split.X_holdout.columns
    np.testing.assert_array_equal(split.weight.to_numpy(), frame["cost"].iloc[:150].to_numpy())
    holdout_costs = frame["cost"].iloc[150:].to_numpy()
    np.testing.assert_allclose(split.weight_holdout, holdout_costs / holdout_costs.mean())
    broken = frame.assign(cost=frame["cost"].where(frame.index != 17, -1.0))
    with pytest.raises(Exception, match=r"The weight column 'cost' of the snapshot: sample_weight has 1 negative "
                                        r"value\(s\) \(row 17: -1.0\)"):
        split_holdout(broken, _config(tmp_path, weight="cost"))
    tiny = split_holdout(frame.assign(cost=frame["cost"] * 1e-300), _config(tmp_path, weight="cost"))
    assert tiny.weight_holdout.mean() == pytest.approx(1.0)  # rescaled: a ROC AUC multiplies two weights
    np.testing.assert_allclose(tiny.weight_holdout, split.weight_holdout / split.weight_holdout.mean())
    good_only = frame.assign(cost=np.where((np.arange(200) >= 150) & (frame["class"] == "bad"), 0.0, 1.0))
    with pytest.raises(Exception, match=r"holds one class only of positive weight \('good'\)"):
        split_holdout(good_only, _config(tmp_path, weight="cost"))
    with pytest.raises(Exception, match=r"Every training row \(before the holdout\) weighs 0 in 'cost'"):
        split_holdout(frame.assign(cost=np.where(np.arange(200) < 150, 0.0, 1.0)), _config(tmp_path, weight="cost"))
    unweighed = frame.assign(cost=np.where(np.arange(200) < 150, 1.0, 0.0))
    with pytest.raises(Exception, match=r"Every row of the holdout \(50 newest rows by file order\) weighs 0 in"):
        split_holdout(unweighed, _config(tmp_path, weight="cost"))


def test_job_with_groups_and_weights_fits_grouped_and_scores_weighted(tmp_path, credit_g, mlflow_server):
    # The money at stake weighs each application (a weight by class alone would leave ROC AUC as it is).
    frame = credit_g.head(400).assign(batch=np.arange(400) // 4, cost=credit_g["credit_amount"].head(400))
    path = tmp_path / "snap.csv"
    frame.to_csv(path, index=False)
    config = job(tmp_path, "credit-grouped", path, mlflow_server, data={"groups": "batch", "weight": "cost"})
    summary = run_job(read_config(config))
    assert summary.status == "promoted", summary.reason
    assert summary.holdout == "the 100 newest rows by file order, weighted by 'cost'"
    with global_tracking_uri(mlflow_server):
        from automl.tracking import load_mlflow_model

        model = load_mlflow_model("models:/credit-grouped/1")
    assert model.weighted_ and model.n_groups_ == 75
    hold = frame.iloc[300:]
    proba = model.predict_proba(hold.drop(columns=["class", "batch", "cost"]))[:, list(model.classes_).index("good")]
    expected = roc_auc_score(hold["class"] == "good", proba, sample_weight=hold["cost"])
    assert summary.challenger_score == pytest.approx(expected, abs=1e-12)
    assert abs(expected - roc_auc_score(hold["class"] == "good", proba)) > 1e-6  # the weights changed the score


@pytest.mark.parametrize("change, metric, message", [
    ({4150: "?", 4160: "inf"}, None, r"The regression target column 'rings' has 2 value\(s\) that are not finite "
                                     r"numbers: '\?' \(row 4150\), 'inf' \(row 4160\); fix or drop those rows"),
    ("constant", None, r"The target column 'rings' holds one value on every row of the snapshot \(7\.0\)"),
    ("constant holdout", "r2", r"holds one target value only \(R\^2 is undefined there\) \(7\.0\)"),
])
def test_a_regression_snapshot_that_cannot_be_scored_is_refused_before_the_fit(
        tmp_path, load_shared, change, metric, message):
    X, y = load_shared("abalone.csv", "Class_Rings")
    frame = X.assign(rings=y.astype(object))
    if change == "constant":
        frame["rings"] = 7
    elif change == "constant holdout":
        frame.loc[frame.index[-100:], "rings"] = 7
    else:
        for row, value in change.items():
            frame.loc[row, "rings"] = value
    path = tmp_path / "job.toml"
    path.write_text(toml({"data": {"path": "d.csv", "target": "rings"}, "mlflow": {"model_name": "m"},
                          "search": {"task": "regression", **({"metric": metric} if metric else {})},
                          "promotion": {"holdout_size": 0.02}}))
    with pytest.raises(DataValidationError, match=message):
        split_holdout(frame, read_config(path), "regression")


def test_a_numeric_target_is_retrained_as_a_regressor_scored_by_rmse_and_keeps_its_task(
        tmp_path, load_shared, mlflow_server, monkeypatch):
    # abalone's ring counts (28 values) were fit as a 28-class classifier, silently (issue 28).
    X, y = load_shared("abalone.csv", "Class_Rings")
    frame = X.assign(rings=y)
    search = {"n_trials": 3, "include": ["ridge", "hgb"], "random_state": 0}
    config = job(tmp_path, "rings", snapshot(tmp_path, frame, 800, "snap1"), mlflow_server, search=search,
                 data={"target": "rings"})
    first = run_job(read_config(config))
    assert (first.status, first.task, first.metric) == ("promoted", "regression", "rmse"), first.reason
    with global_tracking_uri(mlflow_server):
        from automl.tracking import load_mlflow_model

        champion = load_mlflow_model("models:/rings/1")
    hold = frame.iloc[600:800]
    expected = root_mean_squared_error(hold["rings"], champion.predict(hold.drop(columns="rings")))
    assert first.challenger_score == pytest.approx(expected, abs=1e-9)
    assert f"rmse {expected:.4f} on the 200 newest rows" in first.reason

    # Rings capped at 12: 12 values, which alone would be read as classes; the champion keeps the task.
    capped = frame.assign(rings=frame["rings"].clip(upper=12))
    config = job(tmp_path, "rings", snapshot(tmp_path, capped, 1000, "snap2"), mlflow_server, search=search,
                 data={"target": "rings"}, promotion={"margin": 100.0})
    second = run_job(read_config(config))
    assert (second.status, second.task) == ("kept", "regression"), second.reason
    stats = second.drift["target_stats"]  # of the whole snapshot, its holdout too
    assert stats["max"] == [float(frame["rings"].iloc[:600].max()), 12.0]  # the champion trained on rows 0-599
    assert stats["mean"][1] == pytest.approx(capped["rings"].iloc[:1000].mean())
    assert second.drift["target_shift"] == pytest.approx(abs(stats["mean"][1] - stats["mean"][0]) / stats["std"][0])
    assert "class_share" not in second.drift

    # A job that names another task for this model, or a metric of another task, is refused before any fit;
    # so are families of another task. The failure's summary keeps what the job knew.
    for change, said in (({"task": "classification", "include": ["logreg"]}, "[search] task = 'classification', but"),
                         ({"metric": "log_loss", "include": ["logreg"]}, "[search] metric = 'log_loss' is a "
                                                                        "classification metric, but"),
                         ({"include": ["logreg", "ridge"]}, "[search] include names ['logreg'], which are no "
                                                            "regression families")):
        config = job(tmp_path, "rings", snapshot(tmp_path, capped, 1100, "snap3"), mlflow_server,
                     search={**search, **change}, data={"target": "rings"})
        third = run_job(read_config(config))
        assert third.status == "failed" and said in third.reason, third.reason
        assert third.snapshot and third.champion_version == "1"
    assert aliases(mlflow_server, "rings") == ("1", [1, 2])

    # A search in which no trial completes leaves its fallback unregistered. Which fit that is cannot be
    # set by a clock at any machine speed, so the fit is made to end as a fallback does: no best params.
    from automl.estimators import AutoRegressor

    real_fit = AutoRegressor.fit

    def fallback_fit(self, *args, **kwargs):
        fitted = real_fit(self, *args, **kwargs)
        fitted.best_params_ = {}
        return fitted

    monkeypatch.setattr(AutoRegressor, "fit", fallback_fit)
    config = job(tmp_path, "rings-short", snapshot(tmp_path, frame, 1500, "snap4"), mlflow_server,
                 search=search, data={"target": "rings"})
    short = run_job(read_config(config))
    assert short.status == "failed" and "No trial of the search completed" in short.reason, short.reason
    assert "it is not registered" in short.reason and short.challenger_version is None


def test_margin_zero_moves_the_alias_exactly_when_the_challenger_is_better(first_job, credit_g, mlflow_server):
    tmp, _, _ = first_job
    before, versions = aliases(mlflow_server, "credit")
    reversed_rows = credit_g.iloc[::-1].reset_index(drop=True)  # another snapshot, another holdout
    config = job(tmp, "credit", snapshot(tmp, reversed_rows, 1000, "snap4"), mlflow_server)
    summary = run_job(read_config(config))
    new = str(max(versions) + 1)
    assert summary.challenger_version == new and summary.champion_version == before
    gain = summary.challenger_score - summary.champion_score  # ROC AUC: greater is better
    assert summary.status == ("promoted" if gain >= 0 else "kept"), summary.reason
    assert aliases(mlflow_server, "credit")[0] == (new if gain >= 0 else before)
    assert f"{summary.challenger_score:.4f} vs {summary.champion_score:.4f} of version {before}" in summary.reason


POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def test_snapshot_from_a_sql_query_on_postgresql(tmp_path, credit_g):
    # The PostgreSQL this machine starts on 127.0.0.1 (trust auth, database test).
    import sqlalchemy

    table = f"retrain_snapshot_{os.getpid()}"
    engine = sqlalchemy.create_engine(POSTGRES_URL)
    try:
        credit_g.head(300).to_sql(table, engine, index=False)
        path = tmp_path / "job.toml"
        path.write_text(toml({"data": {"sql_url": POSTGRES_URL, "sql_query": f"SELECT * FROM {table} WHERE age >= 30",
                                       "target": "class"}, "mlflow": {"model_name": "m"}}))
        frame = load_snapshot(read_config(path))
    finally:
        with engine.begin() as connection:
            connection.execute(sqlalchemy.text(f"DROP TABLE IF EXISTS {table}"))
        engine.dispose()
    expected = credit_g.head(300)
    expected = expected[expected["age"] >= 30].reset_index(drop=True)
    pd.testing.assert_frame_equal(frame, expected, check_dtype=False)
