"""Experiment tracking with MLflow: one parent run per fit, one nested run per trial.

Like every module that uses mlflow (the others of :mod:`automl.tracking`, and retraining's job), it imports mlflow only
inside functions: importing it takes about a second, which a fit without tracking should not pay.

- The parent run gets the params and tags given to ``start_fit``, then the fit's metrics, the
  files given (``leaderboard.csv``, ``leak_report.csv``, ``ensemble_weights.json``, ``report/``),
  and the final model as an MLflow model (sklearn flavour, signature, input example; its URI in the
  tag ``automl.model_uri``). :func:`read_run_json` reads a JSON file back.
- Each trial gets a nested run ``trial-<number>``, its name followed by how it ended when it did not
  complete ("pruned", "stopped by the budget", "failed"), which the run's status tells too: FINISHED
  (complete or pruned by Hyperband), KILLED (stopped by the time budget), FAILED. Params; metrics ``fold_score`` and
  ``running_mean`` (step = fold), ``mean_score``, ``std_score``, ``duration_seconds``; tags
  ``state``, ``family``, ``trial_number``, ``error``. Its logger is a picklable Optuna callback.
- The parent run is named by the fit (estimator, target, budget, time) and described in a few lines
  (``mlflow.note.content``: trials, best trial, ensemble, leak findings), given by the caller.
- A value past MLflow's length limits is cut with a marker that gives its length and digest.
- A failed MLflow call never stops a fit: it is counted (``n_failures``) and logged once; MLflow's
  advice to save with skops and its notes on creating a store are silenced (``quiet_mlflow``).

Without ``tracking_uri`` and ``MLFLOW_TRACKING_URI``, runs go to ``./mlflow.db``, artifacts to ``./mlruns``::

    mlflow ui --backend-store-uri sqlite:///mlflow.db
"""

import contextlib
import hashlib
import json
import logging
import os
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from .mlflow_model import _environ_restored, log_model
from .persistence import quiet_mlflow

_logger = logging.getLogger(__name__)

DEFAULT_EXPERIMENT_NAME = "automl"

# Per-request limits of MLflow's runs/log-batch REST API: params, and params + metrics.
_MAX_PARAMS_PER_BATCH, _MAX_ENTITIES_PER_BATCH = 100, 1000
# How a trial's run is named after its number, and ended, by how the trial ended. Optuna records a trial the
# time budget stopped (user attribute "stopped") as PRUNED, as Hyperband's: the runs table tells them apart.
_TRIAL_ENDINGS = {"COMPLETE": ("", "FINISHED"), "PRUNED": (" pruned", "FINISHED"), "FAIL": (" failed", "FAILED"),
                  "stopped": (" stopped by the budget", "KILLED")}


def _default_tracking_uri():
    """``MLFLOW_TRACKING_URI`` when set, else ``sqlite:///<absolute path of ./mlflow.db>``."""
    # MLflow 3's own default (the ./mlruns file store is refused since 3.13). SQLite takes one writer
    # at a time with a 20 s busy timeout, enough for workers' three short writes per trial; creating
    # the tables is not safe concurrently, so start_fit does it first. Absolute, for every worker.
    local = "sqlite:///" + Path("mlflow.db").resolve().as_posix()
    return os.environ.get("MLFLOW_TRACKING_URI") or local


def make_tracker(tracking, tracking_uri=None, experiment_name=DEFAULT_EXPERIMENT_NAME):
    """Return the tracker of a fit: MLflow when ``tracking`` is true, else one that does nothing.

    Parameters
    ----------
    tracking : bool
        Whether to log to MLflow.
    tracking_uri : str or None, default=None
        Where to log; None means ``MLFLOW_TRACKING_URI`` if set, else ``./mlflow.db``.
    experiment_name : str, default="automl"
        MLflow experiment of the runs; created when missing.

    Returns
    -------
    tracker : MLflowTracker or NullTracker
        Both have the same methods and attributes.

    Examples
    --------
    >>> from automl.tracking import make_tracker
    >>> tracker = make_tracker(False, None, "automl")
    >>> tracker.start_fit({"n_rows": 100}, {"task": "binary"}) is None
    True
    """
    if not tracking:
        return NullTracker()
    return MLflowTracker(tracking_uri, experiment_name)


class _MlflowCaller:
    """Base of the MLflow-facing classes: a lazy client, timed calls, failures counted."""

    def __init__(self, tracking_uri):
        self.tracking_uri = tracking_uri
        self.seconds, self.n_failures = 0.0, 0
        self._client, self._warned = None, False

    def __getstate__(self):
        # A client's connections do not cross processes; the counters belong to their process.
        return {**self.__dict__, "seconds": 0.0, "n_failures": 0, "_client": None, "_warned": False}

    def _mlflow(self):
        """The MlflowClient, once an HTTP server has shown it answers at all."""
        _check_reachable(self.tracking_uri)
        if self._client is None:
            from mlflow.tracking import MlflowClient
            self._client = MlflowClient(self.tracking_uri)
        return self._client

    @contextlib.contextmanager
    def _guard(self, action):
        """Time the block; if it raises, count the failure, warn once, and carry on after it."""
        start = time.perf_counter()
        try:
            with quiet_mlflow():
                yield
        except Exception as exc:  # tracking must never stop a fit, whatever MLflow raised
            self.n_failures += 1
            level = logging.DEBUG if self._warned else logging.WARNING
            self._warned = True
            _logger.log(level, "MLflow tracking could not %s at %s (%s: %s). The fit goes on; "
                        "later tracking failures in this process are only counted.",
                        action, self.tracking_uri, type(exc).__name__, exc)
        finally:
            self.seconds += time.perf_counter() - start


def _check_reachable(tracking_uri):
    """Raise ConnectionError at once when an HTTP tracking server does not answer."""
    # MLflow's client retries a refused connection for about four minutes (7 retries, backoff
    # factor 2): every trial would stall while a server is down. One probe fails at once instead.
    if not tracking_uri.startswith(("http://", "https://")):
        return
    url = tracking_uri.rstrip("/") + "/health"
    try:
        urllib.request.urlopen(url, timeout=5).close()
    except urllib.error.HTTPError:
        pass  # it answered; MLflow's own call reports whatever is wrong
    except OSError as exc:
        if not isinstance(getattr(exc, "reason", None), ssl.SSLError):  # TLS: it answered
            raise ConnectionError(f"no answer from {url}: {exc}") from exc


def _ms(moment):
    """Milliseconds since the epoch of a datetime (None stays None), as MLflow stores times."""
    return None if moment is None else int(moment.timestamp() * 1000)


def _cut(value, limit):
    """``str(value)``, or when longer than ``limit`` its start with a marker that names the whole by its digest.

    Two values that differ only past the limit would otherwise log the same text.
    """
    text = str(value)
    if len(text) <= limit:
        return text
    marker = f" ...[cut: {len(text)} characters, sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]}]"
    return text[:limit - len(marker)] + marker


def _params(values):
    """MLflow Params of a dict, values stringified and cut to MLflow's length limit (:func:`_cut`)."""
    from mlflow.entities import Param
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH
    return [Param(key, _cut(value, MAX_PARAM_VAL_LENGTH)) for key, value in values.items()]


def _tags(values):
    """Tags of a dict, values stringified and cut to MLflow's length limit (:func:`_cut`)."""
    from mlflow.utils.validation import MAX_TAG_VAL_LENGTH
    return {key: _cut(value, MAX_TAG_VAL_LENGTH) for key, value in values.items()}


def _metrics(values, timestamp):
    """MLflow Metrics (step 0) of a flat ``{name: number}`` dict."""
    from mlflow.entities import Metric
    return [Metric(key, float(value), timestamp, 0) for key, value in values.items()]


def _batches(metrics=(), params=()):
    """Split metrics and params into ``(metrics, params)`` log_batch requests within the limits."""
    metrics, params = list(metrics), list(params)
    while metrics or params:
        batch_params, params = params[:_MAX_PARAMS_PER_BATCH], params[_MAX_PARAMS_PER_BATCH:]
        room = _MAX_ENTITIES_PER_BATCH - len(batch_params)
        batch_metrics, metrics = metrics[:room], metrics[room:]
        yield batch_metrics, batch_params


def _trial_tags(trial, parent_run_id):
    """Tags of a trial's run: nesting, state, number; family, error, worker and how it was enqueued, when known."""
    attrs = trial.user_attrs
    known = {key: attrs[key] for key in ("family", "error", "worker", "portfolio", "warm_start")
             if attrs.get(key) is not None}
    return _tags({"mlflow.parentRunId": parent_run_id, "state": trial.state.name,
                  "trial_number": trial.number, **known})


def _trial_ending(trial):
    """``(run name, run status)`` of a finished trial."""
    key = "stopped" if trial.state.name == "PRUNED" and trial.user_attrs.get("stopped") else trial.state.name
    suffix, status = _TRIAL_ENDINGS.get(key, ("", "FINISHED"))
    return f"trial-{trial.number}{suffix}", status


def _trial_metrics(trial):
    """Metrics of a trial's run: fold scores and running means (step = fold), summary, duration."""
    from mlflow.entities import Metric
    timestamp = _ms(trial.datetime_complete) or int(time.time() * 1000)
    folds = enumerate(trial.user_attrs.get("fold_scores") or [])
    metrics = [Metric("fold_score", float(score), timestamp, fold) for fold, score in folds]
    metrics += [Metric("running_mean", float(value), timestamp, int(fold))
                for fold, value in sorted(trial.intermediate_values.items())]
    summary = {key: trial.user_attrs[key] for key in ("mean_score", "std_score")
               if trial.user_attrs.get(key) is not None}
    if trial.duration is not None:
        summary["duration_seconds"] = trial.duration.total_seconds()
    return metrics + _metrics(summary, timestamp)


class TrialLogger(_MlflowCaller):
    """Optuna callback that logs each finished trial as a run nested under a fit's parent run.

    It pickles (it keeps URI and ids, and builds its client on first use), so it can go to
    ``study.optimize(callbacks=...)`` in worker processes. Get one from ``MLflowTracker``.

    Parameters
    ----------
    tracking_uri : str
        Tracking URI of the parent run.
    experiment_id : str
        Experiment of the parent run.
    parent_run_id : str
        Run the trial runs are nested under.

    Attributes
    ----------
    seconds : float
        Wall seconds this object spent logging in this process (0 again after unpickling).
    n_failures : int
        Trials it failed to log in this process; the search went on.

    Examples
    --------
    >>> import pickle
    >>> from automl.tracking import TrialLogger
    >>> logger = TrialLogger("sqlite:///mlflow.db", "1", "a1b2c3")
    >>> pickle.loads(pickle.dumps(logger)).parent_run_id
    'a1b2c3'
    """

    def __init__(self, tracking_uri, experiment_id, parent_run_id):
        super().__init__(tracking_uri)
        self.experiment_id, self.parent_run_id = experiment_id, parent_run_id

    def __call__(self, study, trial):
        """Log ``trial``, a finished ``optuna.trial.FrozenTrial`` of ``study``, as one run."""
        with self._guard(f"log trial {trial.number}"):
            self._log_trial(self._mlflow(), trial)

    def _log_trial(self, client, trial):
        # Three requests: the run with its tags, one log_batch (for up to 100 params), the end.
        name, status = _trial_ending(trial)
        run_id = client.create_run(
            self.experiment_id, start_time=_ms(trial.datetime_start),
            tags=_trial_tags(trial, self.parent_run_id), run_name=name,
        ).info.run_id
        for metrics, params in _batches(_trial_metrics(trial), _params(trial.params)):
            client.log_batch(run_id, metrics=metrics, params=params)
        _terminate_quietly(client, run_id, status=status, end_time=_ms(trial.datetime_complete))


def _terminate_quietly(client, run_id, **kwargs):
    # Against a server, ending a run fetches it again to print "View run" links to stdout: one more
    # request per trial, and noise in output pipelines read (automl retrain's one line). MLflow's switch:
    with _environ_restored("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"):
        os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
        client.set_terminated(run_id, **kwargs)


class MLflowTracker(_MlflowCaller):
    """Log one fit to MLflow: a parent run, a nested run per trial, then results and the model.

    Call :meth:`start_fit` (in the main process, before workers start), give :meth:`trial_logger`
    to the study, then call :meth:`log_fit_results` and :meth:`end_fit`.

    Parameters
    ----------
    tracking_uri : str or None, default=None
        Where to log; None means ``MLFLOW_TRACKING_URI`` if set, else ``./mlflow.db``.
    experiment_name : str, default="automl"
        Experiment of the runs; created when missing.

    Attributes
    ----------
    tracking_uri : str
        The resolved tracking URI.
    experiment_id : str or None
        Id of the experiment, known after :meth:`start_fit`.
    parent_run_id : str or None
        Id of the fit's run; None before :meth:`start_fit` or when it failed.
    model_uri : str or None
        URI of the logged final model (``models:/<model_id>``), once logged.
    seconds : float
        Wall seconds of this tracker's own MLflow calls (trial logging: ``TrialLogger.seconds``).
    n_failures : int
        This tracker's MLflow operations that failed; the fit went on.

    Examples
    --------
    >>> from automl.tracking import MLflowTracker
    >>> tracker = MLflowTracker("sqlite:///mlflow.db", "automl")
    >>> tracker.parent_run_id is None and tracker.trial_logger() is None
    True
    """

    def __init__(self, tracking_uri=None, experiment_name=DEFAULT_EXPERIMENT_NAME):
        super().__init__(tracking_uri or _default_tracking_uri())
        self.experiment_name = experiment_name
        self.experiment_id = self.parent_run_id = self.model_uri = None

    def start_fit(self, params, tags):
        """Create the experiment if missing and the fit's parent run; log ``params`` and ``tags``.

        Parameters
        ----------
        params : dict
            Flat dict of run parameters; values are stringified and cut to MLflow's limit.
        tags : dict
            Flat dict of run tags, treated the same way; ``"mlflow.runName"`` names the run.

        Returns
        -------
        run_id : str or None
            The parent run's id; None if MLflow failed (the fit then goes on untracked).
        """
        self.parent_run_id = self.model_uri = None
        with self._guard("start the parent run"):
            client = self._mlflow()
            self.experiment_id = _experiment_id(client, self.experiment_name)
            run_id = self.parent_run_id = client.create_run(
                self.experiment_id, tags=_tags(tags)).info.run_id
            for _, batch in _batches(params=_params(params)):
                client.log_batch(run_id, params=batch)
        return self.parent_run_id

    def trial_logger(self):
        """Return the picklable Optuna callback that nests trial runs under the parent run.

        Returns
        -------
        callback : TrialLogger or None
            None when there is no parent run (``start_fit`` not called, or failed).
        """
        if self.parent_run_id is None:
            return None
        return TrialLogger(self.tracking_uri, self.experiment_id, self.parent_run_id)

    @classmethod
    def for_run(cls, tracking_uri, run_id):
        """A tracker attached to the run ``run_id`` (e.g. ``mlflow_run_id_``), to log more to it later."""
        (tracker := cls(tracking_uri)).parent_run_id = run_id
        return tracker

    def log_fit_results(self, *, artifacts, metrics, model, input_example, tags=None):
        """Log the fit's outcome to the parent run; each part is tried even if another failed.

        Parameters
        ----------
        artifacts : dict of str -> DataFrame, dict or str
            Files by name, see :meth:`log_artifacts`.
        metrics : dict
            ``{name: number}``, logged as metrics of the parent run.
        model : estimator or None
            Fitted estimator whose ``predict`` takes a DataFrame; logged as the MLflow model
            ``model`` (URI in :attr:`model_uri` and the tag ``automl.model_uri``). None skips it.
        input_example : DataFrame of shape (n_examples, n_features) or None
            A few raw training rows (NaN, object columns allowed), stored with the model; the
            signature is inferred from them, integer columns as double (served rows may miss them).
        tags : dict or None, default=None
            Tags set on the parent run, cut as in :meth:`start_fit` (``"mlflow.note.content"`` is the
            run's description in MLflow's UI).
        """
        if self.parent_run_id is None:
            return
        self.log_artifacts(artifacts)
        with self._guard("log the fit's metrics"):
            from mlflow.entities import RunTag
            client = self._mlflow()
            for batch, _ in _batches(metrics=_metrics(metrics, int(time.time() * 1000))):
                client.log_batch(self.parent_run_id, metrics=batch)
            if tags:
                client.log_batch(self.parent_run_id, tags=[RunTag(k, v) for k, v in _tags(tags).items()])
        if model is not None:
            with self._guard("log the final model"):
                self.model_uri = log_model(self._mlflow(), self.tracking_uri, self.experiment_id,
                                           self.parent_run_id, model, input_example)

    def log_artifacts(self, artifacts):
        """Save files in the parent run's artifacts, replacing files of the same name.

        Parameters
        ----------
        artifacts : dict of str -> DataFrame, dict, list or str
            By file name (``"report/report.json"`` makes a folder): a DataFrame is saved as CSV
            without the index, a dict or list as JSON, a str as text.
        """
        if self.parent_run_id is None:
            return
        for name, content in artifacts.items():
            with self._guard(f"log {name}"):
                if not isinstance(content, str):
                    is_json = isinstance(content, (dict, list))
                    content = json.dumps(content, indent=1) if is_json else content.to_csv(index=False)
                self._mlflow().log_text(self.parent_run_id, content, name)

    def end_fit(self, status="FINISHED"):
        """Close the parent run.

        Parameters
        ----------
        status : {"FINISHED", "FAILED", "KILLED"}, default="FINISHED"
            Final status of the run.
        """
        if self.parent_run_id is None:
            return
        with self._guard("end the parent run"):
            _terminate_quietly(self._mlflow(), self.parent_run_id, status=status)


class NullTracker:
    """The tracker of an untracked fit: every method does nothing.

    Attributes
    ----------
    tracking_uri, experiment_id, parent_run_id, model_uri : None
        Nothing is tracked; ``seconds`` is 0.0 and ``n_failures`` 0.

    Examples
    --------
    >>> from automl.tracking import NullTracker
    >>> tracker = NullTracker()
    >>> tracker.start_fit({}, {}) is None and tracker.parent_run_id is None
    True
    """

    tracking_uri = experiment_id = parent_run_id = model_uri = None
    seconds, n_failures = 0.0, 0

    def start_fit(self, params, tags):
        """Do nothing; return None, as there is no run."""
        return None

    def trial_logger(self):
        """Return None: there is no callback to give the study."""
        return None

    def log_fit_results(self, *, artifacts, metrics, model, input_example, tags=None):
        """Do nothing."""

    def log_artifacts(self, artifacts):
        """Do nothing."""

    def end_fit(self, status="FINISHED"):
        """Do nothing."""


def _experiment_id(client, name):
    """Id of the active experiment ``name``, created if missing (even by a concurrent process)."""
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        try:
            return client.create_experiment(name)
        except Exception:
            experiment = client.get_experiment_by_name(name)  # another process made it meanwhile
            if experiment is None:
                raise
    if experiment.lifecycle_stage == "deleted":
        raise ValueError(f"MLflow experiment {name!r} is deleted: restore it or use another name")
    return experiment.experiment_id


def read_run_json(tracking_uri, run_id, name):
    """Read the JSON artifact ``name`` of run ``run_id``.

    Parameters
    ----------
    tracking_uri : str or None
        None means ``MLFLOW_TRACKING_URI`` if set, else ``./mlflow.db``.
    run_id, name : str
        The run, and the artifact's path inside it, e.g. ``"report/report.json"``.

    Returns
    -------
    content : dict or list

    Raises
    ------
    LookupError
        If the store (a SQLite file) or the run does not exist, or the run has no artifact ``name``.
    """
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient
    tracking_uri = tracking_uri or _default_tracking_uri()
    if tracking_uri.startswith("sqlite:///") and not Path(tracking_uri[len("sqlite:///"):]).is_file():
        raise LookupError(f"No MLflow store at {tracking_uri}: the file does not exist (nothing was created).")
    _check_reachable(tracking_uri)
    client = MlflowClient(tracking_uri)
    try:
        client.get_run(run_id)
    except MlflowException as exc:
        raise LookupError(f"No MLflow run {run_id!r} at {tracking_uri}.") from exc
    try:
        with tempfile.TemporaryDirectory() as folder, _environ_restored("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"):
            os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"  # no bar on our stdout
            path = client.download_artifacts(run_id, name, folder)
            return json.loads(Path(path).read_text())
    except (MlflowException, OSError) as exc:
        raise LookupError(f"Run {run_id!r} at {tracking_uri} has no artifact {name!r}: is it the parent "
                          "run of a fit (not a trial or nested-cv run), logged since reports exist?") from exc
