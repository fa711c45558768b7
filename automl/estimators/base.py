"""The fit AutoClassifier and AutoRegressor share: validate -> leak check -> search -> select -> fit the ensemble.

``fit`` is a short sequence of stage calls, each in its own subpackage, read top to bottom:
:mod:`automl.search` prepares the search (:mod:`automl.data`: X, y -> clean frame, encoded target,
profile; :mod:`automl.space`: the CASH tree) and runs its trials (CV with pruning, OOF predictions,
worker processes); :mod:`automl.checks` looks for leaks before it and on the model after it;
:mod:`automl.ensemble` selects (Caruana et al., 2004) and fits the ensemble; :mod:`automl.tracking`
logs every step to MLflow, and :mod:`automl.report` draws the report.
"""

import logging
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import nullcontext
from functools import partial

import numpy as np
import optuna
from sklearn.base import BaseEstimator
from sklearn.frozen import FrozenEstimator
from sklearn.utils.validation import check_is_fitted

from ..checks import LeakageReport, check_before_search, check_in_time
from ..data import check_prediction_data, memory_mapped
from ..ensemble import beats_constant, build_ensemble, final_fit_seconds, fit_fallback, use_fallback
from ..exceptions import warn_user
from ..report import report_artifacts, report_data, run_description, write_model_report
from ..search import (
    ProgressLine, SharedSearch, check_storage_spelling, count_started, failed_trials_summary, in_memory_copy,
    leaderboard, load_trial_model, open_storage, prepare_search, prepare_study, resolve_n_jobs, run_search,
    threads_per_job,
)
from ..space import portfolio, rebuild
from ..tracking import input_example, make_tracker, package_versions
from ..tracking import save as save_model
from . import _params as P

logger = logging.getLogger(__name__)


# Share of the time budget kept back for ensemble selection and the final fit of the members.
FINAL_STAGE_SHARE = 0.15
# The search goes on after its deadline when the final stage's estimate leaves this share of the budget
# spare (see _AutoMLBase._top_up_deadline), and keeps this many times the estimate for the final fit,
# and this many times its longest trial (at most the grace) for a trial still busy at its end.
MIN_TOP_UP_SHARE = 0.02
TOP_UP_SAFETY = 2.0
TOP_UP_BUSY = 1.5
# pruning="auto" prunes under no time budget or one of at least this many seconds. Measured (issue 4,
# docs/benchmarks.md "Does pruning pay?"): at 60 s no pruning ranked as well or better (tuning split 1.85 against 2.00,
# held-out 2.96 against 3.17), at 300 s pruning ranked better (held-out 2.45 against 3.18). Budgets in
# between were not measured: 120 s is near their geometric mean.
PRUNING_MIN_BUDGET = 120.0
# Share kept for the model-level leak check after the final fit (skipped when too short).
MODEL_CHECK_SHARE = 0.05
# Rows the fallback model is fitted on, at most (a seeded sample of larger data).
FALLBACK_ROWS = 20_000
# Seconds between progress lines while the search runs (a line also at its start and at the final stage).
PROGRESS_EVERY = 10.0
# Seconds kept for logging the final model to MLflow (measured: 2-5 s for a 13 MB model on SQLite).
TRACKING_ALLOWANCE = 4.0


def _longest_trial(result):
    """Seconds of the search's longest trial that left OOF predictions (inf when none says)."""
    seconds = [t.duration.total_seconds() for t in result.study.get_trials(deepcopy=False)
               if t.number in result.oof and t.duration is not None]
    return max(seconds, default=np.inf)


class _AutoMLBase(BaseEstimator):
    """The fit both estimators share: validate -> leak check -> search -> ensemble -> model check -> log.

    Subclasses set ``_task`` and ``_set_target`` (the classifier's ``classes_``); the task reaches the
    stages through the profile (``profile_.task``) and the metric (``Metric.task``).
    """

    _task = "classification"

    _parameter_constraints = {
        "time_budget": [P.interval(float, 0, None, closed="neither"), P.is_none()],
        "n_trials": [P.interval(int, 1, None), P.is_none()],
        "metric": [P.instance_of(str, "a str"), P.is_none()],
        "cv": [P.interval(int, 2, None), P.options("time"), P.has_method("split", "a CV splitter")],
        "time_column": [P.instance_of(str, "a str"), P.is_none()],
        "validation": [P.options("auto", "cv", "holdout")],
        "n_jobs": [P.interval(int, 1, None), P.interval(int, None, -1)],
        "random_state": [P.interval(int, 0, 2**32 - 1), P.is_none()],
        "include": [P.instance_of(Sequence, "a list of str", exclude=str), P.is_none()],
        "components": [P.instance_of(Sequence, "a sequence of ComponentSpec")],
        "sampler": [P.options("tpe", "random")],
        "pruning": [P.instance_of(bool, "a bool"), P.options("auto")],
        "ensemble_size": [P.interval(int, 1, None)],
        "final_fit": [P.options("refit", "bag")],
        "study_name": [P.instance_of(str, "a str"), P.is_none()],
        "oof_dir": [P.instance_of((str, os.PathLike), "a folder path"), P.is_none()],
        "tracking": [P.instance_of(bool, "a bool")],
        "experiment_name": [P.instance_of(str, "a str")],
        "verbose": [P.interval(int, 0, None)],
        "leak_check": [P.options("warn", "raise", "off")],
    }

    def __init__(self, *, time_budget=60, n_trials=None, metric=None, cv=5, validation="auto", time_column=None,
                 n_jobs=1, random_state=None, include=None, components=(), sampler="tpe", pruning="auto",
                 ensemble_size=50, final_fit="refit", storage=None, study_name=None, oof_dir=None, tracking=True,
                 tracking_uri=None, experiment_name="automl", verbose=1, leak_check="warn"):
        self.time_budget = time_budget
        self.n_trials = n_trials
        self.metric = metric
        self.cv = cv
        self.validation = validation
        self.time_column = time_column
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.include = include
        self.components = components
        self.sampler = sampler
        self.pruning = pruning
        self.ensemble_size = ensemble_size
        self.final_fit = final_fit
        self.storage = storage
        self.study_name = study_name
        self.oof_dir = oof_dir
        self.tracking = tracking
        self.tracking_uri = tracking_uri
        self.experiment_name = experiment_name
        self.verbose = verbose
        self.leak_check = leak_check

    def fit(self, X, y, groups=None, sample_weight=None):
        """Search pipelines on ``X, y``, select an ensemble from their OOF predictions, fit it.

        Parameters
        ----------
        X : {DataFrame, polars DataFrame, pyarrow Table, array-like} of shape (n_samples, n_features)
            Numeric, string, categorical, boolean and datetime columns; missing values allowed.
        y : array-like of shape (n_samples,)
            Classifier: class labels of any type (str, int, bool, pandas category). Regressor:
            numbers, none missing or infinite.
        groups : array-like of shape (n_samples,) or None, default=None
            A group label per row (a patient, a customer, a machine: rows that are not independent).
            Every fold, the holdout and the leak check's folds then keep each group on one side, as
            scikit-learn's ``GroupKFold`` does: an int ``cv`` becomes ``StratifiedGroupKFold``
            (``GroupKFold`` for regression), shuffled with the seed; a splitter given as ``cv`` is
            called as ``split(X, y, groups)``. The leak report says whether any group crosses a fold.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            How much each row counts (a survey weight, an exposure, a cost), as scikit-learn's
            ``sample_weight``: rescaled to a mean of 1, it weighs every model's fit (the pipeline's model
            step; preprocessing is unweighted), every fold's score, ensemble selection's metric, the
            final fit and the fallback. Families whose model takes no weights (k-nearest neighbours)
            are left out, and refused when named in ``include``. The leak check and the model check
            stay unweighted.

        Returns
        -------
        self : estimator

        Raises
        ------
        ValueError
            For an invalid parameter (the message names it) or unusable data
            (:class:`~automl.exceptions.DataValidationError`, naming the column or problem): among
            them ``groups`` of another length than ``y``, with a missing label, or with fewer groups
            than an int ``cv`` has folds, a ``cv`` splitter that needs groups when none are given, and
            ``sample_weight`` of another length, with a missing, infinite, negative or non-numeric value,
            all 0, or all 0 on a fold's training or validation rows; ``include`` naming a family that
            takes no weights in a weighted fit.
        NoSuccessfulTrialsError
            If every trial failed and the fallback model could not be fit either.
        """
        started = time.time()
        # Everything the fit leaves in the folder (the frame the workers map, the journal, OOF files, a
        # holdout search's models) is read before it goes.
        with tempfile.TemporaryDirectory(prefix="automl-") as workdir:
            setup = self._prepare(X, y, workdir, groups, sample_weight)
            self._fit_prepared(setup, X, y, workdir, started)
        return self

    def _fit_prepared(self, setup, X, y, workdir, started):
        """The fit after :meth:`_prepare`: leak check, search, ensemble, model check, tracking."""
        X_clean, y_enc, folds, metric, seed = setup.X, setup.y, setup.folds, setup.metric, setup.seed
        deadline, final = self._deadlines(started)
        self.leak_report_ = check_before_search(X_clean, y_enc, self.profile_, folds, seed, self.leak_check,
                                                setup.groups, setup.time_column)
        tracker = make_tracker(self.tracking, self.tracking_uri, self.experiment_name)
        versions = {f"{name}_version": v for name, v in package_versions().items()}
        versions["mlflow.runName"] = self._run_name(y)
        self.mlflow_tracking_uri_ = tracker.tracking_uri
        self.mlflow_run_id_ = tracker.start_fit(self._run_params(metric, seed, len(folds)), versions)
        try:
            result = self._search(setup, final, tracker, workdir, target_name=getattr(y, "name", None))
            ensemble_started = time.time()
            self.ensemble_, weights, hillclimb = self._fit_ensemble(result, setup, final)
            self._set_results(result, weights, hillclimb, metric, ensemble_started)
            self.leak_report_ += self._check_model(X_clean, y_enc, folds, metric, seed, deadline)
            self.timings_["total"] = time.time() - started  # so far, for the report logged next
            report = report_data(self) if tracker.parent_run_id else None
            tracker.log_fit_results(
                artifacts={"leaderboard.csv": self.leaderboard_, "leak_report.csv": self.leak_report_.to_frame(),
                           "ensemble_weights.json": {str(n): w for n, w in weights.items()},
                           **(report_artifacts(report) if report else {})},
                model=self, metrics=self._run_metrics(), input_example=input_example(X),
                tags={"mlflow.note.content": run_description(report)} if report else None,
            )
        except BaseException:
            tracker.end_fit("FAILED")
            raise
        tracker.end_fit()
        self.timings_["tracking"] = tracker.seconds + result.callback_seconds
        self.timings_["total"] = time.time() - started
        if self.verbose:  # the result, in the words of the MLflow run's description
            for line in run_description(report or report_data(self)).split("\n\n"):
                print(f"[automl] {line}", file=sys.stderr)

    def _prepare(self, X, y, workdir, groups=None, sample_weight=None):
        """Check the parameters, prepare the search (:func:`automl.search.prepare_search`), set what it learnt.

        Sets ``profile_``, the target attributes, ``random_state_``, ``n_jobs_``, ``components_``, ``search_key_``,
        ``n_groups_`` (None without groups), ``weighted_``.
        The validated frame, the target and the folds are then read from a file in ``workdir`` that the
        search's workers map too (:func:`automl.data.memory_mapped`): one copy for all of them.

        Returns
        -------
        setup : SearchSetup
        """
        self._check_params()
        self.n_jobs_ = resolve_n_jobs(self.n_jobs)
        setup = prepare_search(X, y, task=self._task, metric=self.metric, cv=self.cv, random_state=self.random_state,
                               include=self.include, components=self.components, validation=self.validation,
                               time_budget=self.time_budget, groups=groups, time_column=self.time_column,
                               sample_weight=sample_weight)
        self.profile_, self.components_, self.random_state_ = setup.profile, setup.specs, setup.seed
        self.n_groups_ = None if setup.groups is None else int(setup.groups.max()) + 1
        self.time_ordered_, self.weighted_ = setup.time_ordered, setup.sample_weight is not None
        self.search_key_, self.validation_ = setup.search_key, setup.validation
        self._set_target(y)
        self._set_input_features(X)
        X_held, y_held, folds, weights = memory_mapped(workdir, setup.X, setup.y, setup.folds, setup.sample_weight)
        return setup._replace(X=X_held, y=y_held, folds=folds, sample_weight=weights)

    def _check_model(self, X, y, folds, metric, seed, deadline):
        """Model-level leak check on the best single pipeline (one refit per fold, not per member)."""
        if self.leak_check == "off" or not self.best_params_:
            return LeakageReport((), () if self.leak_check == "off" else ("Model check not run: no trial finished.",))
        if self.validation_ == "holdout":
            # Its trials' times are those of rungs on a share of the rows: a refit on all of them cannot be
            # timed from them (a fresh-eyes run overran its share 5x, another failed at full size).
            return LeakageReport((), ("Model check not run: a holdout search does not check its models yet.",))
        end = None if deadline is None else deadline - (TRACKING_ALLOWANCE if self.tracking else 0.0)
        best, started = self.leaderboard_.iloc[0], time.time()
        pipeline = rebuild(self.best_params_, self.profile_, self.components_, seed)
        try:
            report = check_in_time(pipeline, best["seconds"] / best["folds"], X, y, folds, metric, seed, end)
        except Exception as exc:  # a check that fails must not lose the fitted model
            report = LeakageReport((), (f"Model check failed: {type(exc).__name__}: {exc}"[:500],))
        self.timings_["model_check"] = time.time() - started
        return report

    def report(self, path, nested_cv=None):
        """Write the fit report: an HTML page with plots and, beside it, the same data as JSON.

        Data summary, leaderboard (top 20), best score so far, scores by family, pruning, ensemble
        vs best single trial, leak findings, nested CV when given, and what repeats the fit (seed,
        budget, folds, families, versions); no network needed. A tracked fit's MLflow parent run
        gets both files too (:mod:`automl.report`).

        Parameters
        ----------
        path : str or Path
            The HTML file (a folder gets ``report.html``; another suffix becomes ``.html``); the JSON
            goes beside it with the suffix ``.json``.
        nested_cv : NestedCVReport or None, default=None
            From :func:`automl.nested_cv` on the same configuration and data: the honest estimate
            shown beside the search's optimistic best score.

        Returns
        -------
        path : Path
            The HTML file written.

        Raises
        ------
        NotFittedError
            If called before ``fit``.
        """
        check_is_fitted(self, "ensemble_")
        return write_model_report(self, path, nested_cv)

    def save(self, path, *, overwrite=False):
        """Write the fitted model to the folder ``path`` as an MLflow model (:func:`automl.tracking.persistence.save`).

        ``automl.load(path)`` reads it back. Loading runs code from the folder: load only models you trust.

        Parameters
        ----------
        path : str or Path
            The model folder.
        overwrite : bool, default=False
            Replace a model already there.

        Returns
        -------
        path : Path

        Raises
        ------
        NotFittedError
            If called before ``fit``.
        FileExistsError
            If ``path`` is a non-empty folder and ``overwrite`` is False.
        """
        check_is_fitted(self, "ensemble_")
        return save_model(self, path, overwrite=overwrite)

    def _check_params(self):
        P.validate_params(self, self._parameter_constraints)
        check_storage_spelling(self.storage)
        if self.validation == "holdout" and not (isinstance(self.cv, int) or self.cv == "time"):
            raise ValueError(f"validation='holdout' makes its own split, so cv={self.cv!r} would be ignored: give "
                             "validation='cv' to score on that splitter, or leave cv an int.")
        if self.time_budget is None and self.n_trials is None:
            raise ValueError(f"{type(self).__name__} needs a time_budget or n_trials; both are None.")

    def _deadlines(self, started):
        """Wall-clock ends of the fit and of its final fit (the model leak check comes after)."""
        if self.time_budget is None:
            return None, None
        check = MODEL_CHECK_SHARE * self.time_budget if self.leak_check != "off" else 0.0
        return started + self.time_budget, started + self.time_budget - check

    def _set_input_features(self, X):
        self.n_features_in_ = len(self.profile_.input_columns)
        columns = getattr(X, "columns", None)
        if columns is not None and all(isinstance(c, str) for c in columns):
            self.feature_names_in_ = np.asarray(columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):  # a refit on unnamed columns: scikit-learn's estimators do the same
            del self.feature_names_in_

    def _search(self, setup, deadline, tracker, workdir, target_name=None):
        storage = open_storage(self.storage, workdir)
        study_name = self.study_name or "automl"
        prepare_study(storage, study_name, setup.metric.direction, portfolio(setup.specs),
                      families=[spec.key for spec in setup.specs], metric=setup.metric.name)
        self._warn_unseeded_continuation(storage, study_name)
        oof_dir = workdir if self.oof_dir is None else os.path.join(self.oof_dir, study_name)
        os.makedirs(oof_dir, exist_ok=True)
        search_deadline = None if deadline is None else deadline - FINAL_STAGE_SHARE * self.time_budget
        max_trials = None if self.n_trials is None else count_started(storage, study_name) + self.n_trials
        # A fold still running at the search deadline may finish within 5% of the budget.
        grace = 5.0 if self.time_budget is None else min(5.0, 0.05 * self.time_budget)
        shared = self._shared_search(setup, storage, oof_dir, search_deadline, max_trials, tracker, target_name,
                                     grace)
        shared.publish(storage, study_name)  # from here on, `automl worker` processes may join
        run = partial(self._run_search, shared, setup, storage, study_name, oof_dir, max_trials, tracker, grace)
        progress = ProgressLine(search_deadline, search_key=self.search_key_)
        try:
            with shared.keep_alive(storage, study_name), self._progress(progress, storage, study_name):
                result = run(search_deadline)
                top_up = self._top_up_deadline(result, setup, deadline, grace, storage, study_name, max_trials)
                if top_up is not None:
                    shared.extend(storage, study_name, top_up)
                    progress.deadline = top_up
                    result = result.followed_by(run(top_up, stream=1))
        finally:
            SharedSearch.close(storage, study_name)
        if self.storage is None:  # the default journal is in the temporary workdir, gone after fit
            result.study = in_memory_copy(storage, study_name)
        if self.verbose:
            progress.show(result.study, "final stage: ensemble selection and the final fit")
        return result

    def _progress(self, progress, storage, study_name):
        """The progress line every PROGRESS_EVERY seconds (2 on a terminal, which redraws it), or nothing."""
        if not self.verbose:
            return nullcontext()
        return progress.every(2.0 if sys.stderr.isatty() else PROGRESS_EVERY, storage, study_name)

    def _shared_search(self, setup, storage, oof_dir, deadline, max_trials, tracker, target_name, grace):
        """The search as workers need it to join (:class:`automl.search.SharedSearch`)."""
        custom = [why for why, bad in (("a custom CV splitter", not (isinstance(self.cv, int) or self.cv == "time")),
                                       ("custom components", bool(self.components))) if bad]
        settings = {"include": None if self.include is None else list(self.include), "sampler": self.sampler,
                    "pruning": self._pruning()}
        return SharedSearch.of(
            setup, task=self._task, settings=settings, n_startup_trials=self._n_startup_trials(), storage=storage,
            oof_dir=oof_dir, deadline=deadline, max_trials=max_trials, grace=grace, tracker=tracker,
            target_name=target_name, oof_root=self.oof_dir, not_joinable=" and ".join(custom) or None)

    def _run_search(self, shared, setup, storage, study_name, oof_dir, max_trials, tracker, grace, deadline,
                    stream=0):
        callbacks = [tracker.trial_logger()]
        processes, threads = self._workers(setup)
        return run_search(
            shared.objective(setup, oof_dir, deadline), storage=storage, study_name=study_name,
            sampler=shared.sampler(stream), pruner=shared.pruner(setup), max_trials=max_trials, deadline=deadline,
            n_jobs=processes, threads=threads, callbacks=[c for c in callbacks if c is not None], oof_dir=oof_dir,
            search_key=self.search_key_, grace=grace,
        )

    def _workers(self, setup):
        """Worker processes and threads per trial: processes for many short trials, threads for few long ones.

        A holdout search is chosen for large data (:func:`automl.search.prepare_search`), where a trial
        takes long: one process whose models use all ``n_jobs`` workers' threads gives a model sooner and
        holds one copy of the data instead of ``n_jobs``. Otherwise ``n_jobs`` processes.
        """
        if setup.validation != "holdout" or self.n_jobs_ == 1:
            return self.n_jobs_, None
        threads = self.n_jobs_ * threads_per_job(self.n_jobs_)
        logger.info("%d rows x %d columns: trials run one at a time, each model on %d threads (a holdout search: "
                    "few long trials).", setup.profile.n_samples, setup.profile.n_features, threads)
        return 1, threads

    def _top_up_deadline(self, result, setup, final, grace, storage, study_name, max_trials):
        """A later end for the search when the final stage will need less than its share, else None.

        The search stops ``FINAL_STAGE_SHARE`` of the budget before ``final`` so that a slow final fit
        still ends in time, but many final fits take far less (credit-g at 60 s: 1.35 s of 9 s).
        Once the search is done its final fit can be estimated (ensemble selection on the OOF
        predictions, then each member's cost from its trial, :func:`automl.ensemble.final_fit_seconds`);
        the search then goes on until ``final`` less twice that estimate, time for a busy trial to end
        (1.5 times the longest trial so far, at most the grace) and MLflow's allowance, when that gains at
        least ``MIN_TOP_UP_SHARE`` of the budget. (Keeping the whole grace, and 5% as the floor, the
        top-up ran on 1 of 10 tuning datasets at 60 s, and fits ended 5-8 s early.) When the search
        stopped busy workers their pool is gone, and the gain must also pay for starting it again (as
        long as the search waited for its first trial, ``result.start_seconds``).
        """
        if final is None or not result.oof or (max_trials is not None
                                                and count_started(storage, study_name) >= max_trials):
            return None
        started = time.time()
        need = final_fit_seconds(result, setup.y, setup.folds, setup.metric, ensemble_size=self.ensemble_size,
                                 final_fit=self.final_fit, n_jobs=self.n_jobs_, random_state=setup.seed,
                                 sample_weight=setup.sample_weight)
        # Selecting again after the top-up, on more trials, takes about as long again.
        need = TOP_UP_SAFETY * need + 2 * (time.time() - started)
        busy = min(grace, TOP_UP_BUSY * _longest_trial(result))
        end = final - need - busy - (TRACKING_ALLOWANCE if self.tracking else 0.0)
        restart = np.nan_to_num(result.start_seconds) if result.stopped else 0.0
        return end if end - time.time() - restart >= MIN_TOP_UP_SHARE * self.time_budget else None

    def _warn_unseeded_continuation(self, storage, study_name):
        """Without random_state a continued study's folds differ: its trials are not this search's peers."""
        if self.random_state is not None:
            return
        others = [t for t in optuna.load_study(study_name=study_name, storage=storage).get_trials(deepcopy=False)
                  if t.user_attrs.get("search_key") not in (None, self.search_key_)]
        if others:
            warn_user(
                f"Study {study_name!r} holds {len(others)} trials scored on other folds (random_state=None draws new "
                "ones each fit): Hyperband prunes this fit's trials against them and they cannot join its ensemble. "
                "Give random_state to continue a study, or use a new study_name.", UserWarning)

    def _pruning(self):
        """Whether the search prunes: ``pruning``, with "auto" resolved by the validation and the time budget.

        A holdout search prunes at any budget: its rungs of 1/27 and 1/9 of the rows are the cheap
        fidelity large data offers (not yet measured against no pruning).
        """
        if self.pruning != "auto":
            return self.pruning
        if getattr(self, "validation_", "cv") == "holdout":
            return True
        return self.time_budget is None or self.time_budget >= PRUNING_MIN_BUDGET

    def _n_startup_trials(self):
        # Half of a known trial budget (at least 2) before TPE takes over. Hyperband's brackets do not
        # split TPE's history (Optuna 4.2-5.0 hand TPE every bracket's trials), so this is paid once.
        if self.n_trials is None:
            return 10
        return int(np.clip(self.n_trials // 2, 2, 10))

    def _fit_ensemble(self, result, setup, deadline):
        left = None if deadline is None else deadline - time.time() - (TRACKING_ALLOWANCE if self.tracking else 0.0)
        if not result.oof:
            return use_fallback(result, self._fallback(setup, left)), {}, (np.nan, np.nan)
        final_fit, build = self.final_fit, partial(_refit_member, profile=self.profile_, specs=setup.specs,
                                                    random_state=setup.seed)
        if setup.validation == "holdout":  # the trials' own models, fitted on the training part: no refit
            final_fit, build = "refit", partial(_trial_member, result.oof_dir)
        fitted = build_ensemble(result, setup.X, setup.y, setup.folds, setup.metric, build, seconds_left=left,
                                random_state=setup.seed, ensemble_size=self.ensemble_size, final_fit=final_fit,
                                n_jobs=self.n_jobs_, sample_weight=setup.sample_weight)
        if setup.validation == "holdout" and not beats_constant(fitted[2][0], setup.y, setup.folds, setup.metric,
                                                                setup.sample_weight):
            # Its candidates may be models stopped on a few thousand rows; one that diverged (kddcup99's rare
            # classes) scored worse than the class prior on the holdout, and was kept with no word.
            warn_user("The best ensemble of this holdout search scores worse than a constant prediction on the "
                      "holdout: the fallback model is used instead.", UserWarning)
            fallback = self._fallback(setup, left)
            if fallback is not None:
                return fallback, {}, (np.nan, np.nan)
        return fitted

    def _fallback(self, setup, left):
        """The fallback model, fitted only now, in the final stage's share of the budget, on at most
        FALLBACK_ROWS rows: unbounded, a logistic regression on 150,000 rows took 156 s of a 30 s fit.
        The sample holds a row of every class, so that its probabilities have a column for each
        (kddcup99 has a class of 2 rows in 395,000; without it predict_proba failed)."""
        rows = np.arange(len(setup.y))
        if len(rows) > FALLBACK_ROWS:
            rows = np.random.default_rng(setup.seed).choice(rows, FALLBACK_ROWS, replace=False)
            if self.profile_.task != "regression":
                rows = np.union1d(rows, np.unique(setup.y, return_index=True)[1])
            rows = np.sort(rows)
        weights = None if setup.sample_weight is None else setup.sample_weight[rows]
        return fit_fallback(setup.X.iloc[rows], setup.y[rows], self.profile_, setup.seed, left, weights)

    def _set_results(self, result, weights, hillclimb, metric, ensemble_started):
        self.study_ = result.study
        self.ensemble_candidates_ = np.array(sorted(result.oof), dtype=int)
        self.ensemble_score_, self.best_single_oof_score_ = hillclimb
        self.leaderboard_ = leaderboard(result.study, weights, self.search_key_)
        complete = self.leaderboard_[self.leaderboard_["state"] == "COMPLETE"]
        failed = failed_trials_summary(self.leaderboard_)
        if failed and not complete.empty:  # with none complete, the fallback's warning quotes the errors
            warn_user(failed, UserWarning)
        if complete.empty:  # a holdout trial stopped by the budget after a rung is a candidate too
            complete = self.leaderboard_[self.leaderboard_["trial"].isin(list(result.oof))]
        self.best_params_, self.best_score_, self.best_score_std_ = {}, np.nan, np.nan
        if len(complete):
            best = complete.iloc[0]
            self.best_params_ = {"model": best["family"], **best["params"]}
            self.best_score_, self.best_score_std_ = float(best["mean"]), float(best["std"])
        self.metric_ = metric.name
        self.n_trials_killed_ = result.killed
        self.timings_ = {"search": result.seconds, "top_up": result.top_up_seconds,
                         "ensemble": time.time() - ensemble_started}

    def _run_name(self, y):
        """The parent run's name: the estimator, the target's name, the budget and the time (MLflow's are random)."""
        target = getattr(y, "name", None)
        budget = (f"{self.time_budget:g} s" if self.time_budget is not None
                  else f"{self.n_trials} trials" if self.n_trials else None)
        parts = (type(self).__name__, None if target is None else str(target), budget, time.strftime("%Y-%m-%d %H:%M"))
        return " · ".join(part for part in parts if part)

    def _run_params(self, metric, seed, n_folds):
        p = self.profile_
        return {
            "n_samples": p.n_samples, "n_features": p.n_features, "n_classes": p.n_classes,
            "task": p.task, "fingerprint": p.fingerprint, "metric": metric.name,
            "time_budget": self.time_budget, "n_trials": self.n_trials, "cv_folds": n_folds,
            "validation": self.validation_, "random_state": seed, "n_jobs": self.n_jobs_, "sampler": self.sampler,
            "pruning": self._pruning(), "ensemble_size": self.ensemble_size, "final_fit": self.final_fit,
            "n_groups": self.n_groups_, "time_ordered": self.time_ordered_, "time_column": self.time_column,
            "weighted": self.weighted_,
        }

    def _run_metrics(self):
        states = self.leaderboard_["state"].value_counts()
        metrics = {
            "best_score": self.best_score_, "best_score_std": self.best_score_std_,
            "ensemble_hillclimb_score": self.ensemble_score_, "n_leak_findings": len(self.leak_report_.findings),
            "search_seconds": self.timings_["search"], "ensemble_seconds": self.timings_["ensemble"],
            **{f"n_trials_{state.lower()}": int(states.get(state, 0)) for state in ("COMPLETE", "PRUNED", "FAIL")},
        }
        return {k: float(v) for k, v in metrics.items() if v is not None and np.isfinite(v)}

    def _predict_data(self, X):
        check_is_fitted(self, "ensemble_")
        return check_prediction_data(X, self.profile_)


def _refit_member(trial, profile, specs, random_state):
    """An ensemble member to refit: the trial's pipeline, unfitted."""
    return rebuild(trial.params, profile, specs, random_state)


def _trial_member(oof_dir, trial):
    """An ensemble member of a holdout search: the model its trial fitted, frozen (its fit does nothing)."""
    return FrozenEstimator(load_trial_model(oof_dir, trial.number))


def tabular_tags(tags, random_state):
    """scikit-learn tags of our estimators: NaN, strings and categories welcome; seeded means deterministic."""
    tags.input_tags.allow_nan = True
    tags.input_tags.string = True
    tags.input_tags.categorical = True
    tags.non_deterministic = random_state is None
    return tags
