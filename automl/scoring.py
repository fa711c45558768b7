"""Metrics: a name maps to a scorer on class probabilities, its direction, and its worst value.

Every metric takes the encoded labels and the probability matrix a pipeline returns from
``predict_proba``, so one function serves CV folds, out-of-fold arrays and ensemble selection.
"""

from dataclasses import dataclass
from typing import Callable

import numpy as np
from sklearn import metrics as skm


@dataclass(frozen=True)
class Metric:
    """A scoring rule on predicted class probabilities.

    Parameters
    ----------
    name : str
        The name users pass as ``metric=``.
    func : callable
        ``func(y, proba) -> float`` with ``y`` the encoded labels, ndarray of shape (n_samples,),
        and ``proba`` an ndarray of shape (n_samples, n_classes).
    greater_is_better : bool
        The study's direction: maximize when True, minimize when False.
    """

    name: str
    func: Callable[[np.ndarray, np.ndarray], float]
    greater_is_better: bool

    @property
    def direction(self):
        """Optuna direction, ``"maximize"`` or ``"minimize"``."""
        return "maximize" if self.greater_is_better else "minimize"

    def __call__(self, y, proba):
        """Score ``proba`` of shape (n_samples, n_classes) against ``y`` of shape (n_samples,)."""
        return float(self.func(np.asarray(y), np.asarray(proba)))

    def signed(self, y, proba):
        """The score turned so that greater is always better (losses negated), for hillclimbing."""
        value = self(y, proba)
        return value if self.greater_is_better else -value


def _roc_auc(y, proba):
    if proba.shape[1] == 2:
        return skm.roc_auc_score(y, proba[:, 1])
    return skm.roc_auc_score(y, proba, multi_class="ovr", labels=np.arange(proba.shape[1]))


def _log_loss(y, proba):
    return skm.log_loss(y, proba, labels=np.arange(proba.shape[1]))


def _f1(y, proba):
    average = "binary" if proba.shape[1] == 2 else "macro"
    return skm.f1_score(y, proba.argmax(axis=1), average=average)


CLASSIFICATION_METRICS = {
    m.name: m
    for m in (
        Metric("roc_auc", _roc_auc, True),
        Metric("log_loss", _log_loss, False),
        Metric("accuracy", lambda y, p: skm.accuracy_score(y, p.argmax(axis=1)), True),
        Metric("balanced_accuracy", lambda y, p: skm.balanced_accuracy_score(y, p.argmax(axis=1)), True),
        Metric("f1", _f1, True),
    )
}


def get_metric(name, n_classes):
    """Look up a classification metric by name.

    Parameters
    ----------
    name : str or None
        One of ``roc_auc``, ``log_loss``, ``accuracy``, ``balanced_accuracy``, ``f1`` (binary F1, or
        macro F1 for more than two classes). None picks the default: ROC AUC for two classes, log
        loss otherwise (the defaults of the AutoML Benchmark, Gijsbers et al. 2024).
    n_classes : int
        Number of classes of the encoded target.

    Returns
    -------
    metric : Metric

    Raises
    ------
    ValueError
        If ``name`` is not a known metric; the message lists the valid names.

    Examples
    --------
    >>> get_metric(None, n_classes=2).name
    'roc_auc'
    >>> get_metric("log_loss", n_classes=3).direction
    'minimize'
    """
    if name is None:
        name = "roc_auc" if n_classes == 2 else "log_loss"
    if name not in CLASSIFICATION_METRICS:
        valid = ", ".join(sorted(CLASSIFICATION_METRICS))
        raise ValueError(f"Unknown metric {name!r}. Valid metrics are: {valid}.")
    return CLASSIFICATION_METRICS[name]
