"""Experiment tracking with MLflow: one parent run per fit, one nested run per trial.

This is the only module that imports mlflow, and it imports it lazily, inside the functions that talk
to MLflow: importing mlflow takes about a second, which a fit without tracking should not pay.

What is logged
--------------
- One parent run per ``fit``: the parameters and tags the caller passes to ``start_fit`` (data shape,
  fingerprint, task, metric, budget, seed, library versions); at the end the fit's metrics, the
  artifacts ``leaderboard.csv`` and ``ensemble_weights.json``, and the final model as an MLflow model
  (sklearn flavour, with signature and input example), whose URI is tagged ``automl.model_uri``.
- One nested run per Optuna trial, named ``trial-<number>`` and tagged ``mlflow.parentRunId``: the
  trial's parameters; the metrics ``fold_score`` and ``running_mean`` (step = fold index),
  ``mean_score``, ``std_score`` and ``duration_seconds``; the tags ``state``, ``family``,
  ``trial_number`` and, on failed trials, ``error``. Its status is FINISHED for complete and pruned
  trials and FAILED for failed ones. The logger is an Optuna callback that pickles, so worker
  processes log their own trials.

Tracking never stops a search: a failed MLflow call is counted (``n_failures``), reported once per
process through :mod:`logging`, and the search goes on.

Default store
-------------
Without ``tracking_uri`` and without ``MLFLOW_TRACKING_URI``, runs go to the SQLite file
``mlflow.db`` in the current directory, with artifacts under ``./mlruns``. From that directory, open
them with::

    mlflow ui --backend-store-uri sqlite:///mlflow.db
"""

from __future__ import annotations

import contextlib
import logging
import os
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path

_logger = logging.getLogger(__name__)

DEFAULT_EXPERIMENT_NAME = "automl"

# Per-request limits of MLflow's log-batch API (the REST documentation of runs/log-batch).
_MAX_PARAMS_PER_BATCH = 100
_MAX_TAGS_PER_BATCH = 100
_MAX_ENTITIES_PER_BATCH = 1000

_HEALTH_TIMEOUT_SECONDS = 5.0

# A pruned trial ended as designed (stopped early), so only a failed trial gets a FAILED run.
_TRIAL_RUN_STATUS = {"COMPLETE": "FINISHED", "PRUNED": "FINISHED", "FAIL": "FAILED"}


def default_tracking_uri():
    """Return the tracking URI used when the caller gives none.

    Returns
    -------
    uri : str
        ``MLFLOW_TRACKING_URI`` when set, else ``sqlite:///<absolute path>/mlflow.db`` in the
        current directory.

    Examples
    --------
    >>> import os
    >>> from automl.tracking import default_tracking_uri
    >>> "MLFLOW_TRACKING_URI" in os.environ or default_tracking_uri().endswith("/mlflow.db")
    True
    """
    # MLflow 3 made sqlite:///mlflow.db its own default and, since 3.13, refuses the old ./mlruns
    # file store unless MLFLOW_ALLOW_FILE_STORE is set, so SQLite it is. SQLite lets one writer in at
    # a time, but MLflow gives every session a 20 s busy timeout and a trial run is three short
    # writes, so worker processes logging at once wait for each other rather than fail ("database is
    # locked"); tests/test_tracking.py checks two processes. What SQLite cannot take is two processes
    # creating the tables of a new file at once, hence start_fit creates them before workers start.
    # The path is absolute so that a worker started in another directory writes to the same file.
    from_env = os.environ.get("MLFLOW_TRACKING_URI")
    if from_env:
        return from_env
    return "sqlite:///" + Path("mlflow.db").resolve().as_posix()


def make_tracker(tracking, tracking_uri=None, experiment_name=DEFAULT_EXPERIMENT_NAME):
    """Return the tracker a fit logs to: MLflow when ``tracking`` is true, else one that does nothing.

    Parameters
    ----------
    tracking : bool
        Whether to log to MLflow.
    tracking_uri : str or None, default=None
        Where to log. None means ``MLFLOW_TRACKING_URI`` if set, else ``./mlflow.db`` (see
        :func:`default_tracking_uri`).
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
    >>> tracker.trial_logger() is None
    True
    """
    if not tracking:
        return NullTracker()
    return MLflowTracker(tracking_uri, experiment_name)


class _Connection:
    """A lazily built MlflowClient that times every use and turns failures into one warning."""

    def __init__(self, tracking_uri):
        self.tracking_uri = tracking_uri
        self.seconds = 0.0
        self.n_failures = 0
        self._client = None
        self._warned = False

    def __getstate__(self):
        # A client holds connections that do not cross processes, and the counters describe the
        # process they were counted in.
        return {"tracking_uri": self.tracking_uri}

    def __setstate__(self, state):
        self.__init__(state["tracking_uri"])

    def client(self):
        """Return the MlflowClient, after checking that an HTTP server answers at all."""
        _check_reachable(self.tracking_uri)
        if self._client is None:
            from mlflow.tracking import MlflowClient

            self._client = MlflowClient(self.tracking_uri)
        return self._client

    @contextlib.contextmanager
    def guard(self, action):
        """Time the block; if it raises, count the failure, warn once, and carry on after it."""
        start = time.perf_counter()
        try:
            yield
        except Exception as exc:  # tracking must never stop a search, whatever MLflow raised
            self.n_failures += 1
            level = logging.DEBUG if self._warned else logging.WARNING
            self._warned = True
            _logger.log(
                level,
                "MLflow tracking could not %s at %s (%s: %s). The fit goes on; further tracking "
                "failures in this process are only counted.",
                action, self.tracking_uri, type(exc).__name__, exc,
            )
        finally:
            self.seconds += time.perf_counter() - start


def _check_reachable(tracking_uri):
    """Raise ConnectionError at once when an HTTP tracking server does not answer.

    MLflow's client retries a refused connection for about four minutes (7 retries, backoff factor 2)
    before it gives up, which would stall every trial of a search whose server is down. One short
    probe of ``/health`` turns that into an immediate, counted failure.
    """
    if not tracking_uri.startswith(("http://", "https://")):
        return
    url = tracking_uri.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=_HEALTH_TIMEOUT_SECONDS):
            pass
    except urllib.error.HTTPError:
        return  # the server answered; MLflow's own call reports whatever is wrong
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, ssl.SSLError):
            return  # a TLS setup urllib does not share with MLflow (e.g. a private CA): it answered
        raise ConnectionError(f"no answer from {url}: {exc.reason}") from exc
    except OSError as exc:
        raise ConnectionError(f"no answer from {url}: {exc}") from exc


def _ms(moment):
    """Milliseconds since the epoch of a datetime (None when unknown), as MLflow stores times."""
    return None if moment is None else int(moment.timestamp() * 1000)


def _flatten(values, prefix=""):
    """Flatten nested dicts into one level with dotted keys, stringifying leaves."""
    flat = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, prefix=f"{name}."))
        else:
            flat[name] = str(value)
    return flat


def _params(values):
    """MLflow Params of a (possibly nested) dict, values cut to MLflow's length limit."""
    from mlflow.entities import Param
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

    return [Param(key, value[:MAX_PARAM_VAL_LENGTH]) for key, value in _flatten(values).items()]


def _tags(values):
    """String tag dict of ``values``, values cut to MLflow's length limit."""
    from mlflow.utils.validation import MAX_TAG_VAL_LENGTH

    return {key: value[:MAX_TAG_VAL_LENGTH] for key, value in _flatten(values).items()}


def _metrics(values, timestamp, step=0):
    """MLflow Metrics of a flat ``{name: number}`` dict."""
    from mlflow.entities import Metric

    return [Metric(key, float(value), timestamp, step) for key, value in values.items()]


def _batches(metrics=(), params=()):
    """Split metrics and params into log_batch requests within MLflow's per-request limits."""
    metrics, params = list(metrics), list(params)
    while metrics or params:
        batch_params, params = params[:_MAX_PARAMS_PER_BATCH], params[_MAX_PARAMS_PER_BATCH:]
        room = _MAX_ENTITIES_PER_BATCH - len(batch_params)
        batch_metrics, metrics = metrics[:room], metrics[room:]
        yield batch_metrics, batch_params


def _trial_tags(trial, parent_run_id):
    """Tags of a trial's run: nesting, state, family, number and, on failure, the error."""
    tags = {
        "mlflow.parentRunId": parent_run_id,
        "state": trial.state.name,
        "trial_number": trial.number,
    }
    for key in ("family", "error"):
        if trial.user_attrs.get(key) is not None:
            tags[key] = trial.user_attrs[key]
    return _tags(tags)


def _trial_metrics(trial):
    """Metrics of a trial's run: per-fold scores and running means (step = fold), summary, time."""
    from mlflow.entities import Metric

    timestamp = _ms(trial.datetime_complete) or int(time.time() * 1000)
    attrs = trial.user_attrs
    metrics = [
        Metric("fold_score", float(score), timestamp, fold)
        for fold, score in enumerate(attrs.get("fold_scores") or [])
    ]
    metrics += [
        Metric("running_mean", float(value), timestamp, int(fold))
        for fold, value in sorted(trial.intermediate_values.items())
    ]
    summary = {key: attrs[key] for key in ("mean_score", "std_score") if attrs.get(key) is not None}
    if trial.duration is not None:
        summary["duration_seconds"] = trial.duration.total_seconds()
    return metrics + _metrics(summary, timestamp)


class TrialLogger:
    """Optuna callback that logs each finished trial as a nested MLflow run under a fit's parent run.

    It pickles (it keeps only the URI and the ids, and builds its MLflow client on first use), so it
    can be passed to ``study.optimize(callbacks=...)`` in worker processes. Get one from
    :meth:`MLflowTracker.trial_logger`.

    Parameters
    ----------
    tracking_uri : str
        MLflow tracking URI of the parent run.
    experiment_id : str
        Experiment of the parent run.
    parent_run_id : str
        Run the trial runs are nested under.

    Attributes
    ----------
    seconds : float
        Wall seconds this object spent logging in this process (0 again after unpickling).
    n_failures : int
        Trials whose logging failed in this process; the search went on.

    Examples
    --------
    >>> import pickle
    >>> from automl.tracking import TrialLogger
    >>> logger = TrialLogger("sqlite:///mlflow.db", "1", "a1b2c3")
    >>> pickle.loads(pickle.dumps(logger)).parent_run_id
    'a1b2c3'
    """

    def __init__(self, tracking_uri, experiment_id, parent_run_id):
        self.tracking_uri = tracking_uri
        self.experiment_id = experiment_id
        self.parent_run_id = parent_run_id
        self._connection = _Connection(tracking_uri)

    @property
    def seconds(self):
        return self._connection.seconds

    @property
    def n_failures(self):
        return self._connection.n_failures

    def __call__(self, study, trial):
        """Log ``trial`` (an ``optuna.trial.FrozenTrial`` of ``study``) as one nested run."""
        with self._connection.guard(f"log trial {trial.number}"):
            self._log_trial(self._connection.client(), trial)

    def _log_trial(self, client, trial):
        # Three requests per trial: the run with its tags, one log_batch, the end status.
        run = client.create_run(
            self.experiment_id,
            start_time=_ms(trial.datetime_start),
            tags=_trial_tags(trial, self.parent_run_id),
            run_name=f"trial-{trial.number}",
        )
        run_id = run.info.run_id
        for metrics, params in _batches(_trial_metrics(trial), _params(trial.params)):
            client.log_batch(run_id, metrics=metrics, params=params)
        status = _TRIAL_RUN_STATUS.get(trial.state.name, "FINISHED")
        with _no_run_links_printed():
            client.set_terminated(run_id, status=status, end_time=_ms(trial.datetime_complete))


class MLflowTracker:
    """Logs one fit to MLflow: a parent run, a nested run per trial, then results and the model.

    Call :meth:`start_fit` first (in the main process, before any worker starts), pass
    :meth:`trial_logger` to the study, then :meth:`log_fit_results` and :meth:`end_fit`.

    Parameters
    ----------
    tracking_uri : str or None, default=None
        Where to log; None means :func:`default_tracking_uri`.
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
        MLflow URI of the logged final model (``models:/<model_id>``), once logged.
    seconds : float
        Wall seconds spent in this tracker's own MLflow calls in this process. Trial logging is
        counted apart, in each :class:`TrialLogger`'s ``seconds`` (in the process that ran it).
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
        self.tracking_uri = tracking_uri or default_tracking_uri()
        self.experiment_name = experiment_name
        self.experiment_id = None
        self.parent_run_id = None
        self.model_uri = None
        self._connection = _Connection(self.tracking_uri)

    @property
    def seconds(self):
        return self._connection.seconds

    @property
    def n_failures(self):
        return self._connection.n_failures

    def start_fit(self, params, tags):
        """Create the experiment if missing and the fit's parent run; log ``params`` and ``tags``.

        Parameters
        ----------
        params : dict
            Logged as run parameters; nested dicts are flattened to dotted names, values
            stringified and cut to MLflow's length limit.
        tags : dict
            Logged as run tags the same way (``"mlflow.runName"`` names the run).

        Returns
        -------
        run_id : str or None
            The parent run's id, None if MLflow could not be reached (the fit then goes on untracked).
        """
        self.parent_run_id = self.model_uri = None
        with self._connection.guard("start the parent run"):
            client = self._connection.client()
            self.experiment_id = _experiment_id(client, self.experiment_name)
            run = client.create_run(self.experiment_id, tags=_tags(tags))
            self.parent_run_id = run.info.run_id
            for _, batch in _batches(params=_params(params)):
                client.log_batch(self.parent_run_id, params=batch)
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

    def log_fit_results(self, *, leaderboard, ensemble_weights, metrics, model, input_example):
        """Log the fit's outcome to the parent run; each part is attempted even if another fails.

        Parameters
        ----------
        leaderboard : DataFrame
            One row per trial; saved as ``leaderboard.csv`` (without the index).
        ensemble_weights : dict
            ``{member: weight}``; saved as ``ensemble_weights.json`` (keys as strings).
        metrics : dict
            ``{name: number}`` logged as metrics of the parent run.
        model : estimator or None
            Fitted estimator whose ``predict`` takes a DataFrame; logged as an MLflow model named
            ``model`` (URI in :attr:`model_uri` and in the tag ``automl.model_uri``). None skips it.
        input_example : DataFrame of shape (n_examples, n_features)
            A few rows of training input (NaN and object columns allowed); stored with the model, and
            its signature is inferred from it with integer columns widened to double, so served rows
            may hold missing values there.
        """
        run_id = self.parent_run_id
        if run_id is None:
            return
        with self._connection.guard("log leaderboard.csv"):
            text = leaderboard.to_csv(index=False)
            self._connection.client().log_text(run_id, text, "leaderboard.csv")
        with self._connection.guard("log ensemble_weights.json"):
            weights = {str(key): float(value) for key, value in ensemble_weights.items()}
            self._connection.client().log_dict(run_id, weights, "ensemble_weights.json")
        with self._connection.guard("log the fit metrics"):
            client = self._connection.client()
            for batch, _ in _batches(metrics=_metrics(metrics, int(time.time() * 1000))):
                client.log_batch(run_id, metrics=batch)
        if model is not None:
            with self._connection.guard("log the final model"):
                self.model_uri = self._log_model(model, input_example)

    def _log_model(self, model, input_example):
        import mlflow.sklearn
        from mlflow.models import infer_signature

        client = self._connection.client()
        signature = infer_signature(_schema_example(input_example), model.predict(input_example))
        trusted_types = _skops_trusted_types(model)
        # Creating the LoggedModel here, in our experiment and linked to our run, spares log_model
        # from guessing both through MLflow's global active-run state, which workers do not share.
        logged = client.create_logged_model(
            self.experiment_id, name="model", source_run_id=self.parent_run_id
        )
        with _global_tracking_uri(self.tracking_uri):
            info = mlflow.sklearn.log_model(
                model,
                name="model",
                model_id=logged.model_id,
                run_id=self.parent_run_id,
                signature=signature,
                input_example=input_example,
                serialization_format="skops" if trusted_types is not None else "cloudpickle",
                skops_trusted_types=trusted_types,
                code_paths=_code_paths(model, trusted_types),
            )
        client.set_tag(self.parent_run_id, "automl.model_uri", info.model_uri)
        return info.model_uri

    def end_fit(self, status="FINISHED"):
        """Close the parent run.

        Parameters
        ----------
        status : {"FINISHED", "FAILED", "KILLED"}, default="FINISHED"
            Final status of the run.
        """
        if self.parent_run_id is None:
            return
        with self._connection.guard("end the parent run"):
            self._connection.client().set_terminated(self.parent_run_id, status=status)


class NullTracker:
    """The tracker of an untracked fit: every method does nothing.

    Attributes
    ----------
    tracking_uri, experiment_id, parent_run_id, model_uri : None
        Nothing is tracked.
    seconds : float
        Always 0.0.
    n_failures : int
        Always 0.

    Examples
    --------
    >>> from automl.tracking import NullTracker
    >>> tracker = NullTracker()
    >>> tracker.start_fit({}, {}) is None and tracker.parent_run_id is None
    True
    """

    def __init__(self):
        self.tracking_uri = None
        self.experiment_id = None
        self.parent_run_id = None
        self.model_uri = None
        self.seconds = 0.0
        self.n_failures = 0

    def start_fit(self, params, tags):
        """Do nothing; return None (there is no run)."""
        return None

    def trial_logger(self):
        """Return None: there is no callback to add to the study."""
        return None

    def log_fit_results(self, *, leaderboard, ensemble_weights, metrics, model, input_example):
        """Do nothing."""

    def end_fit(self, status="FINISHED"):
        """Do nothing."""


def _experiment_id(client, name):
    """Id of the experiment ``name``, created if missing (tolerating a concurrent creator)."""
    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        return experiment.experiment_id
    try:
        return client.create_experiment(name)
    except Exception:
        # Another process may have created it between the lookup and the creation.
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            raise
        return experiment.experiment_id


def _schema_example(input_example):
    """``input_example`` with integer columns as float64, for inferring the model signature.

    A signature column typed long rejects any row with a missing value there, while the pipeline
    imputes them; double accepts both (MLflow's own advice for integer columns with missing values).
    """
    from pandas.api.types import is_integer_dtype

    integer_columns = [col for col, dtype in input_example.dtypes.items() if is_integer_dtype(dtype)]
    return input_example.astype({col: "float64" for col in integer_columns})


def _skops_trusted_types(model):
    """Types skops must be told to trust to load ``model``, or None if skops cannot save it.

    skops refuses at load time any type outside its defaults and an allow-list. The model was built
    by this process, so the types it holds are the ones to allow; the list is stored in the MLmodel
    file, and a file altered later to hold other types is still refused.
    """
    try:
        import skops.io

        return skops.io.get_untrusted_types(data=skops.io.dumps(model))
    except Exception as exc:  # skops cannot save every object; MLflow's cloudpickle format can
        _logger.info("Saving the model with cloudpickle: skops cannot (%s: %s)", type(exc).__name__, exc)
        return None


def _code_paths(model, trusted_types):
    """The automl package directory when the model holds automl classes, else None.

    Shipped with the model, it lets ``mlflow models predict`` load the model where automl is not
    installed.
    """
    package = __name__.split(".")[0]
    names = [*(trusted_types or []), type(model).__module__]
    if any(name.split(".")[0] == package for name in names):
        return [str(Path(__file__).resolve().parent)]
    return None


@contextlib.contextmanager
def _no_run_links_printed():
    """Stop MLflow printing "View run ... at" links to stdout when it ends a run, for the block.

    Against a server, ``set_terminated`` fetches the run again to print two links: once per trial,
    that is noise on the workers' stdout and one more request. The switch is MLflow's documented
    environment variable, so it is set for the block and restored after.
    """
    name = "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"
    previous = os.environ.get(name)
    os.environ[name] = "true"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


@contextlib.contextmanager
def _global_tracking_uri(tracking_uri):
    """Point MLflow's process-wide tracking URI at ``tracking_uri`` for the block, then restore it.

    ``mlflow.sklearn.log_model`` takes no client and resolves its store from that global.
    ``mlflow.set_tracking_uri`` also sets (or, given None, unsets) the ``MLFLOW_TRACKING_URI``
    environment variable, so that is restored separately.
    """
    import mlflow

    previous_env = os.environ.get("MLFLOW_TRACKING_URI")
    previous = mlflow.get_tracking_uri() if mlflow.is_tracking_uri_set() else None
    mlflow.set_tracking_uri(tracking_uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(previous)
        if previous_env is None:
            os.environ.pop("MLFLOW_TRACKING_URI", None)
        else:
            os.environ["MLFLOW_TRACKING_URI"] = previous_env
