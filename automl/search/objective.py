"""Score one sampled pipeline on the shared folds, with pruning after each rung.

This module alone says what Hyperband's resource is. It depends on how the search validates:

- **k-fold CV** (several folds): the resource is **folds**. After each fold the trial reports the
  running mean of its fold scores at ``step = folds done``; every trial uses the same folds in the
  same order, so two running means at the same step are comparable. Folds interact with no knob, at
  the price of coarse rungs: with 5 folds and a reduction factor of 3, Hyperband has 2 brackets.
- **holdout** (one fold: large tables, see :func:`automl.search.prepare_search`): the resource is
  **training rows**, 1/27, 1/9, 1/3 and all of the fold's training part (Li et al., JMLR 2018, use
  this resource), reported at steps 1, 3, 9 and 27. The rows of a rung are a prefix of one seeded,
  stratified order of the training part (:func:`rung_order`; the setup stores the rows in it, so a
  rung is a slice), the same for every trial, and every rung is scored on the same holdout rows, so
  two trials' scores at a step are comparable. Knobs that count rows (a leaf's minimum size) are
  scaled to the rung's share of the rows (:func:`automl.space.at_rows`), so that a configuration keeps
  its shape from rung to rung and the small rungs do not favour large leaves. A trial keeps its last rung's model: stopped by the time budget after a rung, it is still
  an ensemble candidate, scored on the same holdout.

A trial writes its out-of-fold (OOF) probabilities, or predicted values for regression, on the rows
the folds score (every row for CV, the holdout's for a holdout; :func:`scored_rows`) to
``oof_dir/trial_<number>.npy``, so the process that builds the ensemble sees the trials of every
worker; a holdout trial also writes its fitted model to ``trial_<number>.joblib``.
"""

import hashlib
import logging
import time
import warnings
from functools import cached_property
from pathlib import Path

import joblib
import numpy as np
import optuna

from ..space import at_rows, fit_quietly, set_threads, suggest_pipeline

logger = logging.getLogger(__name__)

# Rows of the training part at Hyperband's steps 1, 3, 9, 27 (27 = all): a reduction factor of 3.
ROW_STEPS = (1, 3, 9, 27)
# A rung smaller than this is skipped: a model on a few hundred rows says little about one on all.
MIN_RUNG_ROWS = 1000
# A rung's time is taken to grow as (rows ratio) ** RUNG_GROWTH: tree fits grow a little faster than n.
RUNG_GROWTH = 1.1


def oof_path(oof_dir, number):
    """Where the OOF probabilities of trial ``number`` are kept."""
    return Path(oof_dir) / f"trial_{number}.npy"


def model_path(oof_dir, number):
    """Where a holdout trial's fitted model is kept (see the module docstring)."""
    return Path(oof_dir) / f"trial_{number}.joblib"


def load_trial_model(oof_dir, number):
    """The fitted model a holdout trial left (its last rung's), read from :func:`model_path`."""
    return joblib.load(model_path(oof_dir, number))


def scored_rows(folds):
    """Row indices the folds score, sorted and distinct: the rows of every OOF array and of the hillclimb set.

    All rows for k-fold CV; the holdout's rows for a single fold (a splitter that scores only some
    rows, such as ``TimeSeriesSplit``, gives those).
    """
    return np.unique(np.concatenate([np.asarray(test) for _, test in folds]))


def is_holdout(folds):
    """Whether the search validates on one holdout (rows are Hyperband's resource) rather than k folds."""
    return len(folds) == 1


def resource_range(folds):
    """Hyperband's ``(min_resource, max_resource)`` for these folds: folds for CV, row steps for a holdout.

    For CV the minimum is ``None`` (the pruner's own setting); for a holdout, the first rung kept by
    :func:`row_steps`.
    """
    if not is_holdout(folds):
        return None, len(folds)
    steps = row_steps(len(folds[0][0]))
    return steps[0], steps[-1]


def row_steps(n_train):
    """The steps of :data:`ROW_STEPS` whose rung holds at least :data:`MIN_RUNG_ROWS` rows (the last always)."""
    kept = [s for s in ROW_STEPS if n_train * s // ROW_STEPS[-1] >= MIN_RUNG_ROWS]
    return kept or [ROW_STEPS[-1]]


def rung_order(train, y, seed, classification=True):
    """The training rows of a holdout in the order its rungs take them: each rung is a prefix of it.

    One seeded order of ``train``. For classification it is stratified (each class spread evenly along
    it) and starts with two rows of each class (one of a class of one), so that every rung holds every
    class (XGBoost refuses a fit that lacks one) and twice where it can: HistGradientBoosting's early
    stopping splits a stratified inner validation set off its rows and fails on a class of one.
    :func:`automl.search.prepare_search` stores the rows in this order, so that a rung is a slice.

    Parameters
    ----------
    train : ndarray of shape (n_train,)
        Row indices of the fold's training part.
    y : ndarray of shape (n_samples,)
    seed : int
    classification : bool, default=True

    Returns
    -------
    order : ndarray of shape (n_train,)
        The indices of ``train``, reordered.
    """
    train = np.asarray(train)
    rng = np.random.default_rng(seed)
    if not classification:
        return train[rng.permutation(len(train))]
    labels = y[train]
    # A row's place along the order: its rank within its class, spread over [0, 1).
    place = np.empty(len(train))
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        place[rng.permutation(members)] = (np.arange(len(members)) + rng.random()) / len(members)
        place[rng.choice(members, min(2, len(members)), replace=False)] = -1.0  # two of each class first
    return train[np.argsort(place, kind="stable")]


def row_rungs(n_train):
    """The rungs of a holdout search on ``n_train`` training rows: ``[(step, n_rows), ...]``, smallest first.

    A rung fits on the first ``n_rows`` rows of the training part, as laid out by :func:`rung_order`.
    """
    return [(s, max(1, n_train * s // ROW_STEPS[-1])) for s in row_steps(n_train)]


def search_key(fingerprint, folds, metric_name, sample_weight=None):
    """Digest of what makes two trials' scores comparable: the data, the folds, the metric and the weights.

    Parameters
    ----------
    fingerprint : str
        :attr:`DatasetProfile.fingerprint` of the training data.
    folds : list of (ndarray, ndarray)
    metric_name : str
    sample_weight : ndarray of float64 of shape (n_samples,) or None, default=None
        The rows' weights: a weighted search's scores are not an unweighted one's. None leaves the key
        of an unweighted search as it was before weights existed.

    Returns
    -------
    key : str
        16 hex characters.
    """
    digest = hashlib.sha256(f"{fingerprint}|{metric_name}".encode())
    for _, test in folds:
        digest.update(np.asarray(test, dtype=np.int64).tobytes())
        digest.update(b"|")
    if sample_weight is not None:
        digest.update(b"weights|" + np.asarray(sample_weight, dtype=np.float64).tobytes())
    return digest.hexdigest()[:16]


def aligned_proba(model, X, n_classes):
    """``model.predict_proba(X)`` as an array of shape (n_samples, n_classes), columns by class code.

    A fold's training part may lack a class; its column is then zero rather than shifted.
    """
    proba = model.predict_proba(X)
    classes = np.asarray(model.classes_, dtype=int)
    if len(classes) == n_classes:
        return proba
    full = np.zeros((proba.shape[0], n_classes))
    full[:, classes] = proba
    return full


def predictions(model, X, profile):
    """What one fitted pipeline contributes to the OOF arrays and the ensemble.

    Returns
    -------
    pred : ndarray of shape (n_samples, n_classes), or (n_samples,) for a regression profile
        Class probabilities by class code (:func:`aligned_proba`), or predicted values.
    """
    if profile.task == "regression":
        return np.asarray(model.predict(X), dtype=np.float64)
    return aligned_proba(model, X, profile.n_classes)


def oof_shape(profile, n_samples):
    """Shape of a trial's OOF array: one column per class, or a vector for regression."""
    return (n_samples,) if profile.task == "regression" else (n_samples, profile.n_classes)


# User attributes of the trials enqueued as known-good starting points (search.prepare_study and
# retraining.warm_start). Such a trial is not pruned (the time budget may still stop it): a pruned one
# leaves no OOF predictions, and one fold's score is too noisy to drop a configuration chosen for being
# strong and unlike the others.
ENQUEUED_ATTRS = ("portfolio", "warm_start")


def is_prunable(user_attrs):
    """Whether Hyperband may prune the trial: not if it was enqueued as a starting point.

    Parameters
    ----------
    user_attrs : dict
        The trial's user attributes.

    Returns
    -------
    prunable : bool
        False when one of :data:`ENQUEUED_ATTRS` is among them.
    """
    return not any(name in user_attrs for name in ENQUEUED_ATTRS)


class CVObjective:
    """The Optuna objective: sample a pipeline, score it rung by rung, keep its OOF predictions.

    Parameters
    ----------
    X : DataFrame of shape (n_samples, n_features)
        Validated training data (see :func:`automl.data.validation.check_training_data`).
    y : ndarray of shape (n_samples,)
        Encoded labels 0..n_classes-1, or the float target for regression.
    folds : list of (ndarray, ndarray)
        ``(train_index, test_index)`` pairs shared by every trial; a single pair is a holdout, whose
        resource is rows (see the module docstring).
    profile : DatasetProfile
    specs : list of ComponentSpec
        The model families on offer.
    metric : Metric
        The search metric, on probabilities (or predicted values for regression).
    oof_dir : str or Path
        Folder for OOF arrays (and a holdout's models), shared by all workers.
    deadline : float or None
        Epoch seconds (``time.time()``) after which no fold or rung is started; a trial whose next
        fold or rung would end past it is stopped and recorded as pruned with user attribute
        ``stopped``.
    random_state : int or None
        Seed of every randomized step of the pipelines (and of a holdout's row order).
    search_key : str or None
        Stored as the trial's user attribute ``search_key`` (see :func:`search_key`), first thing,
        so that a continued study's trials scored on other data or folds can be told apart.
    sample_weight : ndarray of shape (n_samples,) or None, default=None
        Row weights: every model is fitted with those of its training rows (the model step's
        ``sample_weight``, :func:`automl.space.weight_params`) and every score weighs its rows by them.

    Attributes
    ----------
    threads : int
        Threads each model may use (``n_jobs`` of LightGBM, XGBoost, forests; CatBoost's
        ``thread_count``), set by the worker that runs the objective (:func:`automl.search.run_search`).
        1 unless set.

    Notes
    -----
    Follows Optuna's pruning contract (report, ``should_prune``, raise ``TrialPruned``), as in the
    ``OptunaSearchCV`` objective of optuna-integration. Under CV a trial enqueued as a starting point (the
    portfolio, a retraining job's warm start; see :func:`is_prunable`) is never pruned (on a holdout it is,
    like any trial: see ``_score_holdout``), but the pruner is still asked after each of its rungs, so its
    scores enter Hyperband's rungs and set the bar for the sampled trials; the time budget may still stop
    it. Exceptions from a fit are recorded in the user attribute ``error`` and re-raised, so
    ``study.optimize(catch=...)`` marks the trial failed.
    """

    def __init__(self, X, y, folds, profile, specs, metric, oof_dir, deadline=None, random_state=None,
                 search_key=None, sample_weight=None):
        self.X, self.y, self.folds, self.sample_weight = X, y, folds, sample_weight
        self.profile, self.specs, self.metric = profile, specs, metric
        self.oof_dir, self.deadline, self.random_state = oof_dir, deadline, random_state
        self.search_key = search_key
        self.threads = 1

    # Both are made on first use, in the worker: sent to it, their megabytes of indices would be copied
    # to /dev/shm by joblib's executor, and left there when a busy worker is stopped.
    @cached_property
    def scored(self):
        """Every trial's OOF array holds these rows, in this order (:func:`scored_rows`)."""
        return scored_rows(self.folds)

    @cached_property
    def rungs(self):
        """A holdout's :func:`row_rungs`, else None.

        Raises ValueError unless the training part is the first rows (as ``prepare_search`` lays it out):
        a rung is a slice of them, and any other layout would fit on the wrong rows.
        """
        if not is_holdout(self.folds):
            return None
        train = self.folds[0][0]
        if not np.array_equal(train, np.arange(len(train))):
            raise ValueError("A holdout's training rows must be the first rows of X, in rung order: "
                             "make the setup with automl.search.prepare_search.")
        return row_rungs(len(train))

    def __call__(self, trial):
        try:
            return self._score(trial)
        except optuna.TrialPruned:
            raise
        except Exception as exc:
            # The attribute carries the reason to the leaderboard, MLflow and the fit's summary warning;
            # Optuna's own warning with the traceback is silenced (quiet_optuna), so it is kept here.
            trial.set_user_attr("error", f"{type(exc).__name__}: {exc}"[:1000])
            logger.debug("Trial %d failed.", trial.number, exc_info=True)
            raise

    def _score(self, trial):
        if self.search_key is not None:
            trial.set_user_attr("search_key", self.search_key)
        pipeline = set_threads(suggest_pipeline(trial, self.profile, self.specs, self.random_state), self.threads)
        trial.set_user_attr("family", trial.params["model"])
        if self.rungs is not None:
            return self._score_holdout(trial, pipeline)
        prunable = is_prunable(trial.user_attrs)
        oof = np.zeros(oof_shape(self.profile, len(self.y)), dtype=np.float64)
        scores, started = [], time.time()
        for fold, (train, test) in enumerate(self.folds):
            self._stop_if_out_of_time(trial, started, fold)
            _, oof[test] = _fit_predict(pipeline, self.X.iloc[train], self.y[train], self.X.iloc[test], self.profile,
                                        self._weights(train))
            scores.append(self.metric(self.y[test], oof[test], sample_weight=self._weights(test)))
            trial.set_user_attr("fold_scores", scores)
            trial.report(float(np.mean(scores)), step=fold + 1)
            # Asked even for a starting point: Optuna's Hyperband records a trial's rung value when asked.
            if fold + 1 < len(self.folds) and trial.should_prune() and prunable:
                raise optuna.TrialPruned(f"pruned after {fold + 1} folds")
        np.save(oof_path(self.oof_dir, trial.number), oof[self.scored])
        trial.set_user_attr("mean_score", float(np.mean(scores)))
        trial.set_user_attr("std_score", float(np.std(scores)))
        return float(np.mean(scores))

    def _score_holdout(self, trial, pipeline):
        """Fit on each rung's rows, score on the holdout; keep the last rung's model and predictions."""
        test = self.scored  # the holdout's rows, sorted
        # Every trial may be pruned here, a starting point too: a rung's score on thousands of holdout rows
        # is not the noisy single fold that shields starting points under CV, and on large data a starting
        # point run to all rows (a forest, CatBoost) may take the whole budget.
        n_train = len(self.folds[0][0])
        kept, seconds = None, None
        for i, (step, n_rows) in enumerate(self.rungs):
            if self._rung_past_deadline(seconds, n_rows / self.rungs[i - 1][1] if i else 1.0):
                self._keep(trial, kept)
                trial.set_user_attr("stopped", "time budget")
                raise optuna.TrialPruned(f"stopped by the time budget after {i} of {len(self.rungs)} rungs")
            # A checkpoint: a worker killed at the deadline during this rung leaves the last rung's model.
            self._keep(trial, kept)
            started = time.time()
            # The first n_rows, as slices: views of the shared file, where an index array would copy them.
            # They are in a seeded random order, so a model's early stopping may take their last rows.
            model, pred = _fit_predict(at_rows(pipeline, n_rows / n_train), self.X.iloc[:n_rows], self.y[:n_rows],
                                       self.X.iloc[test], self.profile, self._weights(slice(n_rows)),
                                       rows_shuffled=True)
            seconds, kept = time.time() - started, (model, pred, n_rows)
            score = self.metric(self.y[test], pred, sample_weight=self._weights(test))
            trial.set_user_attr("fold_scores", [score])  # one holdout: the leaderboard's mean is this rung's
            trial.set_user_attr("rows", n_rows)
            trial.set_user_attr("rung_seconds", seconds)
            trial.report(score, step=step)
            if i + 1 < len(self.rungs) and trial.should_prune():
                self._discard(trial)
                raise optuna.TrialPruned(f"pruned after {n_rows} rows")
        self._keep(trial, kept)
        trial.set_user_attr("mean_score", score)
        return score

    def _weights(self, rows):
        """The weights of ``rows`` (an index array or a slice), or None for an unweighted search."""
        return None if self.sample_weight is None else self.sample_weight[rows]

    def _keep(self, trial, kept):
        """Write a holdout trial's last model and its predictions (nothing before its first rung, nothing twice)."""
        if kept is None or trial.user_attrs.get("model_rows") == kept[2]:
            return
        model, pred, rows = kept
        joblib.dump(model, model_path(self.oof_dir, trial.number))
        np.save(oof_path(self.oof_dir, trial.number), pred)
        trial.set_user_attr("model_rows", rows)

    def _discard(self, trial):
        """Remove a checkpoint of a trial Hyperband pruned: it is no ensemble candidate."""
        if trial.user_attrs.get("model_rows") is None:
            return
        model_path(self.oof_dir, trial.number).unlink(missing_ok=True)
        oof_path(self.oof_dir, trial.number).unlink(missing_ok=True)
        trial.set_user_attr("model_rows", None)

    def _rung_past_deadline(self, seconds, growth):
        """Whether a rung ``growth`` times the last one's rows, which took ``seconds``, would end too late.

        The first rung (``seconds`` None) is started whenever the deadline has not passed.
        """
        if self.deadline is None:
            return False
        return time.time() + (0.0 if seconds is None else seconds * growth ** RUNG_GROWTH) > self.deadline

    def _stop_if_out_of_time(self, trial, started, fold):
        if self.deadline is None:
            return
        per_fold = (time.time() - started) / fold if fold else 0.0
        if time.time() + per_fold > self.deadline:
            trial.set_user_attr("stopped", "time budget")
            raise optuna.TrialPruned(f"stopped by the time budget after {fold} folds")


def _fit_predict(pipeline, X, y, X_test, profile, sample_weight=None, rows_shuffled=False):
    """A fitted clone of ``pipeline`` (weighted when ``sample_weight`` is given; ``rows_shuffled`` as
    :func:`automl.space.fit_quietly` takes it) and its :func:`predictions` on ``X_test``."""
    model = fit_quietly(pipeline, X, y, sample_weight, rows_shuffled)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model, predictions(model, X_test, profile)
