"""Score one sampled pipeline by k-fold CV on the shared folds, with pruning after each fold.

This module alone says what Hyperband's resource is: **folds**. After each fold the trial reports
the running mean of its fold scores at ``step = folds done``; every trial uses the same folds in the
same order, so two running means at the same step are comparable. Folds are a resource that does not
interact with any knob (unlike trees or rows, which bias early rungs against slow learners), at the
price of coarse rungs: with 5 folds and a reduction factor of 3, Hyperband has 2 brackets.

A finished trial writes its out-of-fold (OOF) probabilities, or predicted values for regression, to
``oof_dir/trial_<number>.npy`` so the process that builds the ensemble sees the trials of every worker.
"""

import hashlib
import time
import warnings
from pathlib import Path

import numpy as np
import optuna
from sklearn.base import clone

from ..space import suggest_pipeline


def oof_path(oof_dir, number):
    """Where the OOF probabilities of trial ``number`` are kept."""
    return Path(oof_dir) / f"trial_{number}.npy"


def search_key(fingerprint, folds, metric_name):
    """Digest of what makes two trials' scores comparable: the data, the folds and the metric.

    Parameters
    ----------
    fingerprint : str
        :attr:`DatasetProfile.fingerprint` of the training data.
    folds : list of (ndarray, ndarray)
    metric_name : str

    Returns
    -------
    key : str
        16 hex characters.
    """
    digest = hashlib.sha256(f"{fingerprint}|{metric_name}".encode())
    for _, test in folds:
        digest.update(np.asarray(test, dtype=np.int64).tobytes())
        digest.update(b"|")
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
    """The Optuna objective: sample a pipeline, score it fold by fold, keep its OOF predictions.

    Parameters
    ----------
    X : DataFrame of shape (n_samples, n_features)
        Validated training data (see :func:`automl.data.validation.check_training_data`).
    y : ndarray of shape (n_samples,)
        Encoded labels 0..n_classes-1, or the float target for regression.
    folds : list of (ndarray, ndarray)
        ``(train_index, test_index)`` pairs shared by every trial.
    profile : DatasetProfile
    specs : list of ComponentSpec
        The model families on offer.
    metric : Metric
        The search metric, on probabilities (or predicted values for regression).
    oof_dir : str or Path
        Folder for OOF arrays, shared by all workers.
    deadline : float or None
        Epoch seconds (``time.time()``) after which no fold is started; a trial whose next fold
        would end past it is stopped and recorded as pruned with user attribute ``stopped``.
    random_state : int or None
        Seed of every randomized step of the pipelines.
    search_key : str or None
        Stored as the trial's user attribute ``search_key`` (see :func:`search_key`), first thing,
        so that a continued study's trials scored on other data or folds can be told apart.

    Notes
    -----
    Follows Optuna's pruning contract (report, ``should_prune``, raise ``TrialPruned``), as in the
    ``OptunaSearchCV`` objective of optuna-integration. A trial enqueued as a starting point (the
    portfolio, a retraining job's warm start; see :func:`is_prunable`) is never pruned, but the
    pruner is still asked after each of its folds, so its scores enter Hyperband's rungs and set the
    bar for the sampled trials; the time budget may still stop it. Exceptions from a fit are recorded
    in the user attribute ``error`` and re-raised, so ``study.optimize(catch=...)`` marks the trial
    failed.
    """

    def __init__(self, X, y, folds, profile, specs, metric, oof_dir, deadline=None, random_state=None,
                 search_key=None):
        self.X, self.y, self.folds = X, y, folds
        self.profile, self.specs, self.metric = profile, specs, metric
        self.oof_dir, self.deadline, self.random_state = oof_dir, deadline, random_state
        self.search_key = search_key

    def __call__(self, trial):
        try:
            return self._score(trial)
        except optuna.TrialPruned:
            raise
        except Exception as exc:
            # Optuna logs the traceback; the attribute carries the reason to the leaderboard and MLflow.
            trial.set_user_attr("error", f"{type(exc).__name__}: {exc}"[:1000])
            raise

    def _score(self, trial):
        if self.search_key is not None:
            trial.set_user_attr("search_key", self.search_key)
        pipeline = suggest_pipeline(trial, self.profile, self.specs, self.random_state)
        trial.set_user_attr("family", trial.params["model"])
        prunable = is_prunable(trial.user_attrs)
        oof = np.zeros(oof_shape(self.profile, len(self.y)), dtype=np.float64)
        scores, started = [], time.time()
        for fold, (train, test) in enumerate(self.folds):
            self._stop_if_out_of_time(trial, started, fold)
            with warnings.catch_warnings():
                # Convergence and similar warnings of a sampled configuration are the search's
                # business, reflected in its score; printing them per fold buries the progress line.
                warnings.simplefilter("ignore")
                model = clone(pipeline).fit(self.X.iloc[train], self.y[train])
                oof[test] = predictions(model, self.X.iloc[test], self.profile)
            scores.append(self.metric(self.y[test], oof[test]))
            trial.set_user_attr("fold_scores", scores)
            trial.report(float(np.mean(scores)), step=fold + 1)
            # Asked even for a starting point: Optuna's Hyperband records a trial's rung value when asked.
            if fold + 1 < len(self.folds) and trial.should_prune() and prunable:
                raise optuna.TrialPruned(f"pruned after {fold + 1} folds")
        np.save(oof_path(self.oof_dir, trial.number), oof)
        trial.set_user_attr("mean_score", float(np.mean(scores)))
        trial.set_user_attr("std_score", float(np.std(scores)))
        return float(np.mean(scores))

    def _stop_if_out_of_time(self, trial, started, fold):
        if self.deadline is None:
            return
        per_fold = (time.time() - started) / fold if fold else 0.0
        if time.time() + per_fold > self.deadline:
            trial.set_user_attr("stopped", "time budget")
            raise optuna.TrialPruned(f"stopped by the time budget after {fold} folds")
