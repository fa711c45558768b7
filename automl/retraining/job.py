"""Scheduled retraining: a challenger fit on the newest snapshot replaces the champion only if it wins.

One job, run by cron, systemd or Airflow through ``automl retrain --config job.toml``:

1. take the job's lock (one job at a time; the OS releases it when the process dies, SIGKILL too);
2. load the snapshot (CSV/Parquet files or a SQL query) and hold out its newest rows;
3. compare the snapshot with the champion's training data (columns, categories, class balance);
4. warm-start the persistent study: the previous search's best configurations are enqueued first,
   and TPE keeps the whole history; a job restarted after a crash continues the same search, and
   the complete trials of the killed attempt are reused, not redone;
5. fit the challenger, register it as a new version of the registered model;
6. score challenger and champion on the same holdout and move the ``champion`` alias only when the
   challenger beats it by the margin; record the decision and why on the version, the MLflow run
   and a JSON summary.

A snapshot is registered at most once: its fingerprint tags the version, and a job that finds one
(a restart after a crash between registration and decision, or a second run on unchanged data)
finishes that version's decision instead of fitting again.

Exit codes (:data:`EXIT_CODES`): 0 promoted, 99 kept (Airflow's BashOperator marks 99 as skipped),
1 failed, 75 busy (another job holds the lock; sysexits' EX_TEMPFAIL).
"""

import fcntl
import json
import logging
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..data import class_counts_of, target_stats
from .config import read_config
from .snapshot import check_columns, load_snapshot, snapshot_fingerprint, split_holdout

__all__ = ["EXIT_CODES", "JobSummary", "read_config", "run_job"]

logger = logging.getLogger(__name__)

CHAMPION = "champion"
SNAPSHOT_TAG = "automl.snapshot"
DECISION_TAG = "automl.decision"
WARM_START_TOP_K = 5
EXIT_CODES = {"promoted": 0, "failed": 1, "busy": 75, "kept": 99}


class JobBusyError(RuntimeError):
    """Another retraining job holds the lock."""


@dataclass
class JobSummary:
    """What a retraining job decided and why; written as JSON and logged to the MLflow run."""

    status: str
    reason: str
    model_name: str = ""
    task: str = ""
    metric: str = ""
    challenger_version: str | None = None
    champion_version: str | None = None
    challenger_score: float | None = None
    champion_score: float | None = None
    margin: float | None = None
    snapshot: str = ""
    rows: dict = field(default_factory=dict)
    holdout: str = ""
    drift: dict = field(default_factory=dict)
    search: dict = field(default_factory=dict)
    mlflow_run_id: str | None = None
    seconds: float = 0.0

    @property
    def exit_code(self):
        return EXIT_CODES[self.status]

    def line(self):
        """The one-line summary printed on stdout."""
        if self.status in ("failed", "busy"):
            return f"{self.status}: {self.reason}"
        return f"{self.status}: {self.model_name} version {self.challenger_version}: {self.reason}"


@contextmanager
def job_lock(path):
    """Hold an exclusive ``flock`` on ``path`` for the block; raise JobBusyError if another holds it.

    The kernel drops the lock when its process ends, however it ends, so a crashed job never
    leaves a stale lock behind. The holder's pid and start time are written into the file for the
    message the next job prints.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise JobBusyError(f"another retraining job holds {path} ({holder}); this one exits.") from None
        handle.truncate(0)
        handle.write(f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}")
        handle.flush()
        yield
    finally:
        handle.close()


def run_job(config):
    """Run one retraining job; never raises for a job-level problem (the summary says ``failed``).

    Parameters
    ----------
    config : JobConfig

    Returns
    -------
    summary : JobSummary
        Also written to ``config.summary``.
    """
    started = time.time()
    # Filled as the job learns it, so that a failure's summary keeps what was known (task, rows, holdout).
    summary = JobSummary("failed", "", model_name=config.model_name, margin=config.margin)
    try:
        with job_lock(config.work_dir / "job.lock"):
            _retrain(config, summary)
    except JobBusyError as exc:
        # The job that holds the lock owns the summary file: leave it alone.
        return JobSummary("busy", str(exc), model_name=config.model_name, seconds=time.time() - started)
    except Exception as exc:  # noqa: BLE001  (any failure is reported, the champion stays)
        summary.status, summary.reason = "failed", f"{type(exc).__name__}: {exc}"
    summary.seconds = time.time() - started
    _write_summary(summary, config.summary)
    return summary


def _retrain(config, summary):
    from mlflow import MlflowClient

    frame = load_snapshot(config)
    summary.snapshot = snapshot = snapshot_fingerprint(frame)
    check_columns(frame, config)
    client = MlflowClient(config.tracking_uri)
    summary.champion_version, champion = load_champion(client, config.model_name)
    summary.task = job_task(config, champion, summary.champion_version, frame[config.target])
    split = split_holdout(frame, config, summary.task)
    summary.holdout = split.description + (f", weighted by {config.weight!r}" if config.weight is not None else "")
    summary.rows = {"train": len(split.X), "holdout": len(split.X_holdout)}
    if champion is not None:  # the whole snapshot: its newest rows are where a change shows first
        summary.drift = compare_with_champion(champion, pd.concat([split.X, split.X_holdout]),
                                              pd.concat([split.y, split.y_holdout]))
    logger.info("Snapshot %s, %d training and %d holdout rows; against champion version %s: %s", snapshot,
                len(split.X), len(split.X_holdout), summary.champion_version,
                json.dumps(summary.drift) if champion is not None else "none")
    version = _version_of_snapshot(client, config.model_name, snapshot)
    if version is not None and DECISION_TAG in version.tags:
        _already_decided(summary, version)
        return
    if version is None:
        model = _fit_challenger(config, split, snapshot, summary)
        version = register(client, config.model_name, model, snapshot)
        challenger = model
    else:  # registered by a job that died before deciding: decide now, do not fit again
        challenger = _load_version(client, config.model_name, version.version)
    summary.challenger_version, summary.mlflow_run_id = version.version, version.run_id
    summary.metric = challenger.metric_
    _decide(summary, challenger, champion, split, config.margin)
    _record(client, config, summary)


def load_champion(client, name):
    """``(version, model)`` of the model the ``champion`` alias points to, or ``(None, None)``."""
    from mlflow.exceptions import MlflowException

    try:
        version = client.get_model_version_by_alias(name, CHAMPION)
    except MlflowException:  # no such registered model, or no alias yet: the first job
        return None, None
    return version.version, _load_version(client, name, version.version)


def job_task(config, champion, champion_version, y):
    """The job's task: ``[search] task``, else the champion's, else the target's (:func:`automl.data.infer_task`).

    The champion's task wins over the target's: a target whose distinct values fall to 20 or fewer in one
    snapshot stays a regression target, and the study keeps one kind of trials.

    Raises
    ------
    ValueError
        If ``[search] task`` differs from the champion's: a registered model keeps one task.
    """
    from sklearn.base import is_regressor

    from ..data import infer_task

    held = None if champion is None else ("regression" if is_regressor(champion) else "classification")
    if config.task == "auto" and held is not None:
        logger.info("Task %s: the champion's (version %s).", held, champion_version)
    task = (held or infer_task(y, config.target)) if config.task == "auto" else config.task
    if held not in (None, task):
        given = (f"[search] metric = {config.metric!r} is a {task} metric" if config.metric
                 else f"[search] task = {task!r}")
        raise ValueError(f"{given}, but the champion (version {champion_version}) of {config.model_name!r} is a "
                         f"{held} model, and a registered model keeps one task: give the new task its own model_name "
                         "(and study_name).")
    _check_include(config, task)
    return task


def _check_include(config, task):
    from ..space import DEFAULT_COMPONENTS, REGRESSION_COMPONENTS

    known = [c.key for c in (REGRESSION_COMPONENTS if task == "regression" else DEFAULT_COMPONENTS)]
    other = [key for key in config.include or () if key not in known]
    if other:
        raise ValueError(f"[search] include names {other}, which are no {task} families, and the job's task is {task}; "
                         f"its families are {known}.")


def _load_version(client, name, version):
    from ..tracking import global_tracking_uri, load_mlflow_model

    # models:/ URIs resolve against MLflow's process-wide URI, not a client's: point it at ours.
    with global_tracking_uri(client.tracking_uri):
        return load_mlflow_model(f"models:/{name}/{version}")


def compare_with_champion(champion, X, y):
    """How the snapshot differs from the champion's training data.

    Returns
    -------
    drift : dict
        ``new_columns`` and ``missing_columns`` (lists), ``new_categories`` (column -> up to 10 new
        levels and their count); for a classifier ``class_share`` (label -> [champion's share, snapshot's
        share]) and ``class_shift``, the largest absolute change of a class's share; for a regressor
        ``target_stats`` (``min``, ``max``, ``mean``, ``std``, ``skew`` -> [champion's, snapshot's]) and
        ``target_shift``, the change of the mean in the champion's standard deviations.
    """
    profile = champion.profile_
    columns = list(map(str, X.columns))
    new_categories = {}
    for column in profile.categorical_columns:
        if column in X.columns:
            new = sorted(set(X[column].dropna().astype(str)) - set(profile.categories[column]))
            if new:
                new_categories[column] = {"count": len(new), "levels": new[:10]}
    return {
        "new_columns": [c for c in columns if c not in profile.input_columns],
        "missing_columns": [c for c in profile.input_columns if c not in columns],
        "new_categories": new_categories,
        **(_target_drift(profile, y) if profile.task == "regression" else _class_drift(champion, y)),
    }


def _class_drift(champion, y):
    counts = class_counts_of(champion)
    before = np.asarray(counts, dtype=float) / sum(counts)
    shares = {str(c): [float(s), 0.0] for c, s in zip(champion.classes_, before)}
    for label, share in y.astype(str).value_counts(normalize=True).items():
        shares.setdefault(label, [0.0, 0.0])[1] = float(share)
    return {"class_share": shares, "class_shift": max(abs(a - b) for a, b in shares.values())}


def _target_drift(profile, y):
    before, now = profile.target_stats, target_stats(y.to_numpy(dtype=float))
    shift = abs(now["mean"] - before["mean"]) / (before["std"] or 1.0)  # a constant target: in its unit
    return {"target_stats": {k: [before[k], now[k]] for k in before}, "target_shift": shift}


def warm_start(storage, study_name, snapshot, marker, top_k=WARM_START_TOP_K):
    """Prepare the persistent study for this snapshot's search; returns the configurations enqueued.

    Trials a killed job left RUNNING are marked failed (the lock says no other job runs). Then, once
    per snapshot, the ``top_k`` best distinct configurations of the study's complete trials are
    enqueued (user attribute ``warm_start``), so the new search scores them on the new data first.
    ``marker`` (a file) records that this snapshot was warm-started: it is written before anything
    is enqueued, so a restarted job never enqueues twice (a kill in between loses the warm start,
    not the study).
    """
    import optuna
    from optuna.trial import TrialState

    from ..search import fail_running, quiet_optuna

    marker = Path(marker)
    try:
        with quiet_optuna():
            study = optuna.load_study(study_name=study_name, storage=storage)
    except KeyError:
        study = None
    if study is not None:
        fail_running(storage, study_name)
    if marker.exists():
        return 0
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(snapshot)
    if study is None:  # the first job: the fit creates the study and its portfolio
        return 0
    complete = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    complete.sort(key=lambda t: t.value, reverse=study.direction.name == "MAXIMIZE")
    chosen, seen = [], set()
    for trial in complete:
        key = json.dumps(trial.params, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            chosen.append(trial.params)
        if len(chosen) == top_k:
            break
    for params in chosen:
        study.enqueue_trial(params, user_attrs={"warm_start": snapshot})
    return len(chosen)


def _fit_challenger(config, split, snapshot, summary):
    from ..estimators import AutoClassifier, AutoRegressor

    enqueued = warm_start(config.storage, config.study_name, snapshot,
                          config.work_dir / "warm_started" / f"{config.study_name}-{snapshot}")
    model = (AutoRegressor if summary.task == "regression" else AutoClassifier)(
        time_budget=config.time_budget, n_trials=config.n_trials, metric=config.metric, n_jobs=config.n_jobs,
        cv=config.cv, random_state=config.random_state, storage=config.storage, study_name=config.study_name,
        include=None if config.include is None else list(config.include),
        oof_dir=str(config.work_dir / "oof"), tracking_uri=config.tracking_uri,
        experiment_name=config.experiment_name, verbose=0,
    ).fit(split.X, split.y, split.groups, sample_weight=split.weight)
    board = model.leaderboard_
    if not model.best_params_:
        states = ", ".join(f"{n} {state.lower()}" for state, n in board["state"].value_counts().items())
        raise RuntimeError(f"No trial of the search completed ({states or 'none started'}; the leaderboard's note "
                           "says why), so the fit is its fallback model, a default no search chose; it is not "
                           "registered. Raise [search] time_budget, or see why the trials failed.")
    summary.search = {
        "warm_start_configs": enqueued, "trials": len(board),
        "trials_complete": int((board["state"] == "COMPLETE").sum()),
        "best_cv_score": model.best_score_, "best_cv_score_std": model.best_score_std_,
        "study_trials": len(model.study_.trials),
    }
    return model


def register(client, name, model, snapshot):
    """Register the model a fit logged to MLflow as a new version of ``name``, tagged with ``snapshot``.

    Raises
    ------
    RuntimeError
        If the fit logged no model (tracking failed or was off).
    """
    from mlflow.exceptions import MlflowException

    run = client.get_run(model.mlflow_run_id_)
    uri = run.data.tags.get("automl.model_uri")
    if uri is None:
        raise RuntimeError(f"The fit's MLflow run {model.mlflow_run_id_} has no logged model to register.")
    try:
        client.create_registered_model(name)
    except MlflowException as exc:
        if "RESOURCE_ALREADY_EXISTS" not in str(exc.error_code):
            raise
    from ..tracking import global_tracking_uri

    # MLflow resolves the models:/ source with a default client inside create_model_version.
    with global_tracking_uri(client.tracking_uri):
        return client.create_model_version(name, source=uri, run_id=model.mlflow_run_id_,
                                           model_id=uri.rsplit("/", 1)[-1], tags={SNAPSHOT_TAG: snapshot})


def _version_of_snapshot(client, name, snapshot):
    from mlflow.exceptions import MlflowException

    try:
        versions = client.search_model_versions(f"name = '{name}'")
    except MlflowException:
        return None
    found = [v for v in versions if v.tags.get(SNAPSHOT_TAG) == snapshot]
    return min(found, key=lambda v: int(v.version)) if found else None


def holdout_score(model, X, y, metric_name, labels, sample_weight=None):
    """``metric_name`` of ``model`` on the holdout, weighted by ``sample_weight`` (shape (n_samples,)) when
    given; a classifier's probabilities aligned to ``labels`` (as str), None for a regressor.

    A class the model never saw gets probability 0, so models trained on different class sets are
    scored on the same footing.
    """
    from ..search import get_metric

    if labels is None:
        return float(get_metric(metric_name, 0)(y.to_numpy(dtype=float), model.predict(X), sample_weight))
    proba = model.predict_proba(X)
    aligned = np.zeros((len(X), len(labels)))
    for column, label in enumerate(map(str, model.classes_)):
        aligned[:, labels.index(label)] = proba[:, column]
    y_encoded = np.array([labels.index(v) for v in y.astype(str)])
    return float(get_metric(metric_name, len(labels))(y_encoded, aligned, sample_weight))


def _decide(summary, challenger, champion, split, margin):
    from ..search import get_metric

    X_hold, y_hold, weights = split.X_holdout, split.y_holdout, split.weight_holdout
    labels = None if summary.task == "regression" else sorted(
        {*map(str, challenger.classes_), *map(str, y_hold.unique()),
         *(map(str, champion.classes_) if champion is not None else ())})
    summary.challenger_score = holdout_score(challenger, X_hold, y_hold, summary.metric, labels, weights)
    better = get_metric(summary.metric, 0 if labels is None else len(labels)).greater_is_better
    where = f"on {summary.holdout}"
    if champion is None:
        summary.status = "promoted"
        summary.reason = f"no champion yet; {summary.metric} {summary.challenger_score:.4f} {where}"
        return
    if summary.champion_version == summary.challenger_version:  # promoted by a job killed before its record
        summary.status, summary.reason = "promoted", "already the champion: an earlier attempt promoted it"
        return
    known = set(map(str, getattr(champion, "classes_", ())))
    new_classes = [] if labels is None else sorted(
        (set(map(str, y_hold.unique())) | set(map(str, challenger.classes_))) - known)
    if new_classes:
        _needs_a_person(summary, f"the snapshot has class(es) the champion never saw: {new_classes}")
        return
    try:
        summary.champion_score = holdout_score(champion, X_hold, y_hold, summary.metric, labels, weights)
    except Exception as exc:  # noqa: BLE001  (the champion no longer runs on this data)
        moved = [c for c in split.roles if c in champion.profile_.input_columns]
        why = f" ({', '.join(map(repr, moved))}: a feature of the champion, now the job's groups or weight)"
        _needs_a_person(summary, f"the champion (version {summary.champion_version}) fails on the new data: "
                                 f"{str(exc).rstrip('.')}{why if moved else ''}")
        return
    gain = (summary.challenger_score - summary.champion_score) * (1 if better else -1)
    versus = (f"{summary.metric} {summary.challenger_score:.4f} vs {summary.champion_score:.4f} of version "
              f"{summary.champion_version} {where}")
    if gain >= margin:
        summary.status, summary.reason = "promoted", f"{versus}: better by {gain:.4f} >= margin {margin:g}"
    else:
        summary.status, summary.reason = "kept", f"{versus}: gain {gain:.4f} < margin {margin:g}; champion kept"


def _needs_a_person(summary, why):
    """A change no score can settle (new classes, a champion that no longer runs): fail, keep the champion."""
    summary.status = "failed"
    summary.reason = (f"{why}. Version {summary.challenger_version} is registered but not promoted: if the "
                      f"change is intended, move the '{CHAMPION}' alias to it by hand.")


def _already_decided(summary, version):
    decided = json.loads(version.tags[DECISION_TAG])
    summary.status = decided["status"]
    summary.metric = decided.get("metric", "")  # a decision of an older job holds status and reason only
    summary.challenger_score, summary.champion_score = decided.get("challenger_score"), decided.get("champion_score")
    summary.challenger_version, summary.mlflow_run_id = version.version, version.run_id
    summary.reason = f"snapshot {summary.snapshot} was already decided: {decided['reason']}"


def _record(client, config, summary):
    """Move the alias if promoted, then tag the version and log the decision to its run."""
    if summary.status == "promoted":
        client.set_registered_model_alias(config.model_name, CHAMPION, summary.challenger_version)
    decision = json.dumps({"status": summary.status, "reason": summary.reason, "metric": summary.metric,
                           "challenger_score": summary.challenger_score, "champion_score": summary.champion_score})
    client.set_model_version_tag(config.model_name, summary.challenger_version, DECISION_TAG, decision)
    run_id = summary.mlflow_run_id
    client.set_tag(run_id, DECISION_TAG, summary.status)
    for name in ("challenger_score", "champion_score"):
        value = getattr(summary, name)
        if value is not None:
            client.log_metric(run_id, f"holdout_{name}", value)
    client.log_dict(run_id, asdict(summary), "retrain_summary.json")


def _write_summary(summary, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(summary) | {"exit_code": summary.exit_code}, indent=2, default=str))
