"""Greedy ensemble selection over out-of-fold predictions.

Implements the method of Caruana, Niculescu-Mizil, Crew and Ksikes, "Ensemble Selection from Libraries of
Models", ICML 2004: starting from the best few models, repeatedly add (with replacement) the model whose
inclusion most improves the score of the averaged prediction on a hillclimb set. Here the hillclimb set is
the out-of-fold (OOF) predictions every finished trial made on the shared folds, so no rows are held back
from training.

Pure numpy: no estimator is fit, nothing is read from or written to disk.
"""

import numbers

import numpy as np

__all__ = ["EnsembleSelection", "weighted_average"]

# Scores closer than this (relative to the best, or absolute below 1) count as ties when cutting.
_TIE_RTOL = 1e-12


def weighted_average(predictions, weights):
    """Average predictions with non-negative weights.

    Parameters
    ----------
    predictions : list of ndarray, each of shape (n_samples, n_classes) or (n_samples,)
        Predictions of the candidates, all of the same shape.
    weights : array-like of shape (n_candidates,)
        Non-negative weights, one per prediction, with a positive sum. They need not sum to 1: the result
        is divided by their sum.

    Returns
    -------
    average : ndarray of shape (n_samples, n_classes) or (n_samples,)
        ``sum_i weights[i] * predictions[i] / sum(weights)``, as floats.

    Raises
    ------
    ValueError
        If the number of weights differs from the number of predictions, a weight is negative or not
        finite, or all weights are zero.

    Examples
    --------
    >>> import numpy as np
    >>> from automl.ensemble.selection import weighted_average
    >>> a = np.array([[1.0, 0.0], [0.5, 0.5]])
    >>> b = np.array([[0.0, 1.0], [0.5, 0.5]])
    >>> weighted_average([a, b], [3, 1])
    array([[0.75, 0.25],
           [0.5 , 0.5 ]])
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 1 or weights.shape[0] != len(predictions):
        raise ValueError(
            f"weights must have one entry per prediction ({len(predictions)}); got shape {weights.shape}."
        )
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError(f"weights must be finite and non-negative; got {weights.tolist()}.")
    total = weights.sum()
    if total <= 0:
        raise ValueError("weights must not all be zero.")
    average = np.zeros(np.shape(predictions[0]), dtype=float)
    for prediction, weight in zip(predictions, weights):
        # Skipping zero weights avoids touching (and converting) arrays that do not contribute.
        if weight > 0:
            average += weight * np.asarray(prediction, dtype=float)
    return average / total


class EnsembleSelection:
    """Caruana ensemble selection: greedy forward selection with replacement over OOF predictions.

    The candidates are first pruned to the ``library_size`` best by their own score. The ensemble starts
    from the ``n_init`` best of that library (sorted initialization, Caruana et al. 2004, section 2.1), then
    adds one library model at a time, with replacement, always the one giving the best score of the
    running average. After ``ensemble_size`` picks in total, the ensemble is cut back to the pick with the
    best hillclimb score, so it is never worse on the hillclimb set than the best single candidate.

    Parameters
    ----------
    ensemble_size : int, default=50
        Total number of picks, counting the initial ones. The weight of a candidate is the number of
        times it was picked (up to the cut) divided by the number of picks kept.
    library_size : int, default=30
        Number of candidates kept for selection, the best by their own score; ties go to the lower
        index (the earlier trial).
    n_init : int or None, default=None
        Number of best library models the ensemble starts from. ``None`` tries 1 to
        ``min(5, len(library))`` and keeps the count whose plain average scores best (the smallest on
        ties). Values larger than the library or than ``ensemble_size`` are reduced to them. The cut
        may fall inside the initial picks, if they score worse than fewer of them.
    random_state : int, RandomState instance or None, default=None
        Seed of the ``numpy.random.RandomState`` that breaks ties between equally good candidates at a
        step. The same seed gives the same ensemble.

    Attributes
    ----------
    weights_ : ndarray of shape (n_candidates,)
        Weight of every input prediction, indexed like the input list; sums to 1. Pruned or unselected
        candidates have weight 0.
    indices_ : list of int
        Original indices of the picks, in pick order, up to and including ``best_iteration_``.
    trajectory_ : list of float
        Hillclimb score of the running ensemble after each of the ``ensemble_size`` picks, before the
        cut. The first ``n_init_`` entries are the averages of the best 1, 2, ... library models, so
        entry 0 is the best single candidate.
    best_iteration_ : int
        0-based position in ``trajectory_`` where the ensemble was cut: the first one with the best score
        (scores within a relative 1e-12 of each other count as ties, so rounding noise does not decide).
    score_ : float
        Hillclimb score of the final weighted ensemble, ``score_func(y, weighted_average(predictions,
        weights_))``.
    best_single_score_ : float
        Best score of a single candidate.
    library_ : list of int
        Original indices of the candidates kept after pruning, best first.
    n_init_ : int
        Number of models the ensemble started from.

    See Also
    --------
    weighted_average : Combine predictions with the fitted ``weights_``.

    Notes
    -----
    Each candidate evaluation adds the candidate to a running sum of the picked predictions, so it costs
    O(n_samples * n_classes) plus one call to ``score_func``; a fit makes about
    ``library_size * ensemble_size`` such calls. A score of NaN is ranked as the worst possible score.

    All predictions must have been made out of fold on the same fold assignment; otherwise their scores
    are not comparable and the selected weights are meaningless.

    References
    ----------
    .. [1] R. Caruana, A. Niculescu-Mizil, G. Crew and A. Ksikes, "Ensemble Selection from Libraries of
       Models", Proceedings of the 21st International Conference on Machine Learning (ICML), 2004.

    Examples
    --------
    Two candidates, each right on a different half of the rows; their equal mix is right everywhere.

    >>> import numpy as np
    >>> from automl.ensemble.selection import EnsembleSelection
    >>> y = np.array([0, 0, 1, 1])
    >>> a = np.array([[0.9, 0.1], [0.9, 0.1], [0.6, 0.4], [0.6, 0.4]])
    >>> b = np.array([[0.4, 0.6], [0.4, 0.6], [0.1, 0.9], [0.1, 0.9]])
    >>> def accuracy(y, proba):
    ...     return float(np.mean(proba.argmax(axis=1) == y))
    >>> selector = EnsembleSelection(ensemble_size=10, random_state=0).fit([a, b], y, accuracy)
    >>> selector.weights_
    array([0.5, 0.5])
    >>> selector.best_single_score_, selector.score_
    (0.5, 1.0)
    """

    def __init__(self, *, ensemble_size=50, library_size=30, n_init=None, random_state=None):
        self.ensemble_size = ensemble_size
        self.library_size = library_size
        self.n_init = n_init
        self.random_state = random_state

    def fit(self, predictions, y, score_func):
        """Select the ensemble weights on the hillclimb set.

        Parameters
        ----------
        predictions : list of ndarray, each of shape (n_samples, n_classes) or (n_samples,)
            Out-of-fold predictions of the candidates, all made on the same folds: class probabilities
            for classification, values for regression.
        y : ndarray of shape (n_samples,)
            True targets of the hillclimb rows (integer-encoded labels for classification).
        score_func : callable
            ``score_func(y, pred) -> float``, greater is better; ``pred`` has the shape of one
            prediction.

        Returns
        -------
        self : EnsembleSelection
            The fitted selector.

        Raises
        ------
        ValueError
            If a parameter is out of range, ``predictions`` is empty, the predictions differ in shape, or
            ``y`` does not have one entry per row.
        """
        self._validate_params()
        predictions, y = _check_inputs(predictions, y)
        if not callable(score_func):
            raise TypeError(f"score_func must be callable; got {type(score_func).__name__}.")
        rng = _as_random_state(self.random_state)
        single_scores = _rank_values([score_func(y, p) for p in predictions])
        library = _prune_library(single_scores, self.library_size, _constant(predictions))
        n_init, init_trajectory = self._initial_picks(predictions, y, score_func, library)
        picks, trajectory = _forward_select(
            predictions, y, score_func, library, n_init, self.ensemble_size, rng
        )
        trajectory = init_trajectory[:n_init] + trajectory
        best = _first_best(trajectory)
        counts = np.bincount(picks[: best + 1], minlength=len(predictions)).astype(float)
        self.weights_ = counts / counts.sum()
        self.indices_ = [int(i) for i in picks[: best + 1]]
        self.trajectory_ = [float(s) for s in trajectory]
        self.best_iteration_ = best
        self.score_ = float(score_func(y, weighted_average(predictions, self.weights_)))
        self.best_single_score_ = float(single_scores.max())
        self.library_ = [int(i) for i in library]
        self.n_init_ = n_init
        return self

    def _validate_params(self):
        """Check the constructor parameters; raise ValueError naming the first bad one."""
        _check_int(self.ensemble_size, "ensemble_size")
        _check_int(self.library_size, "library_size")
        if self.n_init is not None:
            _check_int(self.n_init, "n_init", allow_none=True)

    def _initial_picks(self, predictions, y, score_func, library):
        """Choose how many of the best library models to start from.

        Returns
        -------
        n_init : int
            Number of initial picks (the first ``n_init`` entries of ``library``).
        trajectory : list of float of length >= n_init
            Score of the plain average of the best 1, 2, ... library models.
        """
        limit = min(len(library), self.ensemble_size)
        if self.n_init is None:
            # Caruana et al. fix the count by hand; trying the first few is cheap (a handful of scores).
            n_tried = min(5, limit)
        else:
            n_tried = min(self.n_init, limit)
        running_sum = np.zeros_like(predictions[0])
        trajectory = []
        for k, index in enumerate(library[:n_tried], start=1):
            running_sum += predictions[index]
            trajectory.append(float(score_func(y, running_sum / k)))
        n_init = _first_best(trajectory) + 1 if self.n_init is None else n_tried
        return n_init, trajectory


def _forward_select(predictions, y, score_func, library, n_init, ensemble_size, rng):
    """Add library models greedily, with replacement, after the first ``n_init`` of ``library``.

    Returns
    -------
    picks : ndarray of shape (ensemble_size,)
        Original indices of all picks, the initial ones first.
    trajectory : list of float of length ensemble_size - n_init
        Score of the running average after each greedy pick.
    """
    picks = list(library[:n_init])
    running_sum = np.zeros_like(predictions[0])
    for index in picks:
        running_sum += predictions[index]
    buffer = np.empty_like(running_sum)
    trajectory = []
    for n_picked in range(n_init, ensemble_size):
        scores = np.empty(len(library))
        for position, index in enumerate(library):
            # Running-sum update: only the candidate is added, the average is never recomputed.
            np.add(running_sum, predictions[index], out=buffer)
            buffer /= n_picked + 1
            scores[position] = score_func(y, buffer)
        scores = _rank_values(scores)
        tied = np.flatnonzero(scores == scores.max())
        chosen = library[tied[0] if len(tied) == 1 else rng.choice(tied)]
        running_sum += predictions[chosen]
        picks.append(chosen)
        trajectory.append(float(scores.max()))
    return np.asarray(picks, dtype=int), trajectory


def _prune_library(single_scores, library_size, constant):
    """Original indices of the ``library_size`` best candidates, best first, ties to the lower index.

    Parameters
    ----------
    single_scores : ndarray of shape (n_candidates,)
        Score of each candidate alone (NaN already mapped to -inf).
    library_size : int
        Number of candidates to keep.
    constant : ndarray of bool of shape (n_candidates,)
        Candidates that predict the same for every row; they are left out unless all are.

    Returns
    -------
    library : ndarray of shape (min(library_size, n_kept),)
    """
    # A stable sort of the negated scores keeps equal scores in input order, so the earlier trial wins.
    order = np.argsort(-single_scores, kind="stable")
    # A constant prediction never changes a ranking, so under ROC AUC it ties with every mix it
    # joins and could be picked for free, though it is no validated model: its refit on all rows
    # (an early-stopped booster, say) need not be constant at all.
    if not constant.all():
        order = order[~constant[order]]
    return order[:library_size]


def _constant(predictions):
    """Whether each candidate predicts the same value (row) for every sample."""
    return np.array([bool(np.all(np.ptp(p, axis=0) == 0)) for p in predictions])


def _first_best(trajectory):
    """0-based index of the first score that equals the best one up to floating-point rounding.

    The average of k copies of the same mixture differs from the mixture by rounding only; without the
    tolerance such noise would decide the cut and grow the ensemble for no real gain.
    """
    scores = _rank_values(trajectory)
    best = scores.max()
    tolerance = _TIE_RTOL * max(1.0, abs(best)) if np.isfinite(best) else 0.0
    return int(np.flatnonzero(scores >= best - tolerance)[0])


def _rank_values(scores):
    """Scores as a float array in which NaN (a failed or undefined score) ranks below everything."""
    scores = np.asarray(scores, dtype=float)
    return np.where(np.isnan(scores), -np.inf, scores)


def _check_inputs(predictions, y):
    """Convert the inputs to float arrays and check they describe the same rows.

    Returns
    -------
    predictions : list of ndarray, each of shape (n_samples, n_classes) or (n_samples,)
    y : ndarray of shape (n_samples,)
    """
    if len(predictions) == 0:
        raise ValueError("predictions is empty: ensemble selection needs at least one candidate.")
    predictions = [np.asarray(p, dtype=float) for p in predictions]
    reference = predictions[0].shape
    if len(reference) not in (1, 2):
        raise ValueError(
            f"predictions[0] has shape {reference}; expected (n_samples, n_classes) or (n_samples,)."
        )
    for index, prediction in enumerate(predictions):
        if prediction.shape != reference:
            raise ValueError(
                f"predictions[{index}] has shape {prediction.shape} but predictions[0] has shape "
                f"{reference}; all candidates must be OOF predictions of the same rows and classes."
            )
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != reference[0]:
        raise ValueError(
            f"y has shape {y.shape} but the predictions have {reference[0]} rows; "
            f"y must have shape ({reference[0]},)."
        )
    return predictions, y


def _check_int(value, name, allow_none=False):
    """Raise ValueError unless ``value`` is an int >= 1 (bool excluded)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1:
        return
    expected = "an int in [1, inf)" + (" or None" if allow_none else "")
    raise ValueError(
        f"The '{name}' parameter of EnsembleSelection must be {expected}. Got {value!r} instead."
    )


def _as_random_state(seed):
    """A ``numpy.random.RandomState`` from None, an int or an existing instance."""
    if isinstance(seed, np.random.RandomState):
        return seed
    return np.random.RandomState(seed)
