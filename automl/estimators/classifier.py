"""AutoClassifier: the shared fit (:mod:`automl.estimators.base`) for class labels, with their probabilities."""

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ..data import class_counts_of, training_classes, widen_proba
from ._docs import ATTRIBUTES_DOC, PARAMETERS_DOC
from .base import _AutoMLBase, tabular_tags


class AutoClassifier(ClassifierMixin, _AutoMLBase):
    """Full-pipeline AutoML classifier: CASH search with TPE and Hyperband, then ensemble selection.

    Searches imputer -> scaler -> categorical encoder -> model family -> hyperparameters with
    Optuna's TPE sampler (Bergstra et al., 2011) and Hyperband pruning over CV folds (Li et al.,
    2018), keeps every finished trial's out-of-fold (OOF) predictions, builds an ensemble by
    Caruana et al.'s (ICML 2004) greedy forward selection with replacement over them, and refits
    the chosen pipelines as a weighted soft vote. Every trial is logged to MLflow.

{parameters}
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The original class labels, sorted.
    class_counts_ : ndarray of int of shape (n_classes,)
        Training rows of each class. A class seen once (count 1) is left out of the search and
        predicted at its training base rate.
{attributes}
    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    >>> model = AutoClassifier(time_budget=None, n_trials=3, include=["logreg"], cv=3,
    ...                        tracking=False, verbose=0, random_state=0).fit(X, y)
    >>> model.predict_proba(X.iloc[:2]).shape
    (2, 2)
    """

    def _set_target(self, y):
        self.classes_, self.class_counts_ = training_classes(y)

    def predict_proba(self, X):
        """Class probabilities of the ensemble's weighted soft vote.

        Parameters
        ----------
        X : {DataFrame, array-like} of shape (n_samples, n_features)
            Columns are matched by name (order may differ; extra columns are ignored with a warning).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``; rows sum to 1. A class seen once in training gets
            its base rate (:func:`automl.data.widen_proba`).

        Raises
        ------
        DataValidationError
            If a training column is missing (named in the message) or a value cannot be converted.
        """
        X_clean = self._predict_data(X)  # checks that the model is fitted first
        proba = self.ensemble_.predict_proba(X_clean)
        return widen_proba(proba, class_counts_of(self))

    def predict(self, X):
        """Most probable class of each row.

        Parameters
        ----------
        X : {DataFrame, array-like} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Original labels (from ``classes_``).
        """
        check_is_fitted(self, "ensemble_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def __sklearn_tags__(self):
        return tabular_tags(super().__sklearn_tags__(), self.random_state)


AutoClassifier.__doc__ = AutoClassifier.__doc__.format(parameters=PARAMETERS_DOC, attributes=ATTRIBUTES_DOC)
