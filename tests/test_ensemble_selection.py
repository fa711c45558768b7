"""Tests of automl.ensemble.selection: known answers on synthetic OOF predictions."""

import doctest

import numpy as np
import pytest

from automl.ensemble import EnsembleSelection, weighted_average
from automl.ensemble import selection as ensemble_selection

N_ROWS = 100


def accuracy(y, proba):
    return float(np.mean(np.argmax(proba, axis=1) == y))


def neg_log_loss(y, proba):
    true_class = np.clip(proba[np.arange(len(y)), y], 1e-15, 1.0)
    return float(np.mean(np.log(true_class)))


def neg_mse(y, pred):
    return -float(np.mean((y - pred) ** 2))


def binary_proba(y, p_true):
    """(n_samples, 2) probabilities giving probability ``p_true[i]`` to the true class of row i."""
    p_true = np.broadcast_to(np.asarray(p_true, dtype=float), y.shape)
    proba = np.empty((len(y), 2))
    proba[np.arange(len(y)), y] = p_true
    proba[np.arange(len(y)), 1 - y] = 1.0 - p_true
    return proba


def halves(first, second, n=N_ROWS):
    """Per-row true-class probability: ``first`` on the first half of the rows, ``second`` on the rest."""
    return np.where(np.arange(n) < n // 2, first, second)


@pytest.fixture
def y_binary():
    return np.random.RandomState(0).randint(0, 2, size=N_ROWS)


def random_library(seed, n_candidates=8, n_rows=120, n_classes=3):
    """Candidates of varied quality whose errors are independent, so that mixing them can help."""
    rng = np.random.RandomState(seed)
    y = rng.randint(0, n_classes, size=n_rows)
    one_hot = np.eye(n_classes)[y]
    predictions = []
    for _ in range(n_candidates):
        logits = rng.uniform(0.5, 2.0) * one_hot + rng.normal(scale=1.5, size=(n_rows, n_classes))
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        predictions.append(exp / exp.sum(axis=1, keepdims=True))
    return predictions, y


@pytest.mark.parametrize("score_func", [accuracy, neg_log_loss])
def test_complementary_pair_is_mixed_equally(y_binary, score_func):
    a = binary_proba(y_binary, halves(0.9, 0.4))
    b = binary_proba(y_binary, halves(0.4, 0.9))
    selector = EnsembleSelection(ensemble_size=20, random_state=0).fit([a, b], y_binary, score_func)
    np.testing.assert_allclose(selector.weights_, [0.5, 0.5])
    assert selector.score_ > selector.best_single_score_
    assert selector.score_ == pytest.approx(score_func(y_binary, binary_proba(y_binary, 0.65)))
    if score_func is accuracy:
        assert selector.best_single_score_ == 0.5
        assert selector.score_ == 1.0


def test_useless_noisy_candidate_gets_zero_weight(y_binary):
    good = binary_proba(y_binary, 0.85)
    noise = np.random.RandomState(1).dirichlet([1.0, 1.0], size=N_ROWS)
    selector = EnsembleSelection(ensemble_size=15, random_state=0).fit(
        [noise, good], y_binary, neg_log_loss
    )
    assert selector.weights_[0] == 0.0
    assert selector.weights_[1] == 1.0
    assert 0 not in selector.indices_


def test_dominant_candidate_gets_all_weight(y_binary):
    weak = binary_proba(y_binary, 0.6)
    strong = binary_proba(y_binary, 0.95)
    wrong = binary_proba(y_binary, 0.3)
    selector = EnsembleSelection(ensemble_size=10, random_state=0).fit(
        [weak, strong, wrong], y_binary, neg_log_loss
    )
    np.testing.assert_array_equal(selector.weights_, [0.0, 1.0, 0.0])
    assert selector.indices_ == [1]
    assert selector.best_iteration_ == 0
    assert selector.score_ == pytest.approx(np.log(0.95))
    assert selector.score_ == selector.best_single_score_


def test_library_pruning_drops_the_worst(y_binary):
    # c and d are the best alone; a and b are poor alone but perfect together.
    c = binary_proba(y_binary, np.where(np.arange(N_ROWS) < 80, 0.8, 0.3))
    d = binary_proba(y_binary, np.where(np.arange(N_ROWS) < 70, 0.7, 0.35))
    a = binary_proba(y_binary, halves(0.9, 0.4))
    b = binary_proba(y_binary, halves(0.4, 0.9))
    candidates = [a, c, b, d]
    full = EnsembleSelection(library_size=4, random_state=0).fit(candidates, y_binary, accuracy)
    pruned = EnsembleSelection(library_size=2, random_state=0).fit(candidates, y_binary, accuracy)
    assert full.library_ == [1, 3, 0, 2]
    assert full.score_ == 1.0
    assert pruned.library_ == [1, 3]
    assert pruned.weights_[0] == 0.0 and pruned.weights_[2] == 0.0
    assert pruned.score_ == 0.8
    assert pruned.weights_.sum() == pytest.approx(1.0)


def test_library_ties_go_to_the_earlier_candidate(y_binary):
    p = binary_proba(y_binary, 0.7)
    selector = EnsembleSelection(library_size=1, random_state=0).fit([p, p.copy()], y_binary, accuracy)
    assert selector.library_ == [0]
    np.testing.assert_array_equal(selector.weights_, [1.0, 0.0])


def test_same_seed_same_result_and_seed_breaks_ties(y_binary):
    # b is the best alone; a and its copy tie as b's partner, so the seed decides which is picked.
    b = binary_proba(y_binary, halves(0.9, 0.45))
    a = binary_proba(y_binary, halves(0.45, 0.85))
    candidates = [b, a, a.copy()]
    reference = EnsembleSelection(ensemble_size=10, n_init=1, random_state=0)
    reference.fit(candidates, y_binary, neg_log_loss)
    second_picks = set()
    for seed in range(20):
        first = EnsembleSelection(ensemble_size=10, n_init=1, random_state=seed)
        second = EnsembleSelection(ensemble_size=10, n_init=1, random_state=seed)
        first.fit(candidates, y_binary, neg_log_loss)
        second.fit(candidates, y_binary, neg_log_loss)
        assert first.indices_ == second.indices_
        np.testing.assert_array_equal(first.weights_, second.weights_)
        # a and its copy are interchangeable: only which copy is used may depend on the seed.
        assert first.trajectory_ == reference.trajectory_
        assert first.weights_[0] == reference.weights_[0]
        second_picks.add(first.indices_[1])
    assert reference.indices_[0] == 0
    assert second_picks == {1, 2}


@pytest.mark.parametrize("n_init", [None, 1, 3])
@pytest.mark.parametrize("score_func", [accuracy, neg_log_loss])
def test_never_below_best_single_candidate(score_func, n_init):
    for seed in range(6):
        predictions, y = random_library(seed)
        selector = EnsembleSelection(ensemble_size=15, n_init=n_init, random_state=seed)
        selector.fit(predictions, y, score_func)
        best_single = max(score_func(y, p) for p in predictions)
        assert selector.best_single_score_ == pytest.approx(best_single)
        assert selector.score_ >= best_single - 1e-12
        assert selector.score_ == pytest.approx(max(selector.trajectory_))


def test_forced_initialization_is_cut_back_when_it_hurts(y_binary):
    strong = binary_proba(y_binary, 0.95)
    poor = binary_proba(y_binary, 0.55)
    poorer = binary_proba(y_binary, 0.52)
    selector = EnsembleSelection(ensemble_size=6, n_init=3, random_state=0)
    selector.fit([poor, strong, poorer], y_binary, neg_log_loss)
    assert selector.n_init_ == 3
    # The first three trajectory entries are the averages of the best 1, 2 and 3 candidates.
    np.testing.assert_allclose(
        selector.trajectory_[:3], [np.log(0.95), np.log(0.75), np.log(2.02 / 3)], rtol=1e-12
    )
    assert selector.indices_ == [1]
    assert selector.score_ == selector.best_single_score_


def test_fitted_attributes_are_consistent():
    predictions, y = random_library(3)
    selector = EnsembleSelection(ensemble_size=12, library_size=5, random_state=0)
    selector.fit(predictions, y, neg_log_loss)
    assert len(selector.trajectory_) == 12
    assert selector.weights_.shape == (len(predictions),)
    assert selector.weights_.sum() == pytest.approx(1.0)
    assert len(selector.indices_) == selector.best_iteration_ + 1
    assert set(selector.indices_) <= set(selector.library_)
    counts = np.bincount(selector.indices_, minlength=len(predictions))
    np.testing.assert_allclose(selector.weights_, counts / counts.sum())
    # The cut is the first pick whose score equals the best up to rounding.
    best = max(selector.trajectory_)
    assert selector.trajectory_[selector.best_iteration_] == pytest.approx(best, rel=1e-12)
    assert all(s < best - 1e-12 for s in selector.trajectory_[: selector.best_iteration_])
    # The running-sum scores match a full recomputation of each prefix's average.
    for k in range(len(selector.indices_)):
        prefix = np.mean([predictions[i] for i in selector.indices_[: k + 1]], axis=0)
        assert selector.trajectory_[k] == pytest.approx(neg_log_loss(y, prefix))


def test_n_init_none_picks_best_prefix_average(y_binary):
    a = binary_proba(y_binary, halves(0.9, 0.4))
    b = binary_proba(y_binary, halves(0.4, 0.9))
    weak = binary_proba(y_binary, 0.3)
    selector = EnsembleSelection(ensemble_size=5, random_state=0).fit([a, weak, b], y_binary, accuracy)
    assert selector.n_init_ == 2
    assert selector.indices_ == [0, 2]
    fixed = EnsembleSelection(ensemble_size=5, n_init=3, random_state=0)
    fixed.fit([a, weak, b], y_binary, accuracy)
    assert fixed.n_init_ == 3
    assert fixed.indices_[:2] == [0, 2]


def test_regression_predictions(y_binary):
    y = np.linspace(0.0, 10.0, N_ROWS)
    too_high, too_low = y + 1.0, y - 1.0
    noisy = y + np.random.RandomState(0).normal(scale=3.0, size=N_ROWS)
    selector = EnsembleSelection(ensemble_size=10, random_state=0).fit(
        [too_high, noisy, too_low], y, neg_mse
    )
    np.testing.assert_allclose(selector.weights_, [0.5, 0.0, 0.5])
    assert selector.score_ == pytest.approx(0.0, abs=1e-20)
    assert selector.best_single_score_ == pytest.approx(-1.0)


def test_error_messages(y_binary):
    p = binary_proba(y_binary, 0.7)
    with pytest.raises(ValueError, match="predictions is empty"):
        EnsembleSelection().fit([], y_binary, accuracy)
    with pytest.raises(ValueError, match=r"predictions\[1\] has shape \(100, 3\).*\(100, 2\)"):
        EnsembleSelection().fit([p, np.ones((N_ROWS, 3)) / 3], y_binary, accuracy)
    with pytest.raises(ValueError, match=r"y has shape \(99,\).*100 rows"):
        EnsembleSelection().fit([p], y_binary[:99], accuracy)
    with pytest.raises(ValueError, match="'ensemble_size' parameter.*Got 0 instead"):
        EnsembleSelection(ensemble_size=0).fit([p], y_binary, accuracy)
    with pytest.raises(ValueError, match="'library_size' parameter"):
        EnsembleSelection(library_size=0).fit([p], y_binary, accuracy)
    with pytest.raises(ValueError, match="'n_init' parameter.*or None"):
        EnsembleSelection(n_init=0).fit([p], y_binary, accuracy)


def test_weighted_average_known_answer_and_errors():
    a = np.array([[1.0, 0.0], [0.2, 0.8]])
    b = np.array([[0.0, 1.0], [0.6, 0.4]])
    np.testing.assert_allclose(weighted_average([a, b], [1, 3]), [[0.25, 0.75], [0.5, 0.5]])
    np.testing.assert_array_equal(weighted_average([a, b], [2.0, 0.0]), a)
    with pytest.raises(ValueError, match="one entry per prediction"):
        weighted_average([a, b], [1.0])
    with pytest.raises(ValueError, match="non-negative"):
        weighted_average([a, b], [1.0, -0.5])
    with pytest.raises(ValueError, match="not all be zero"):
        weighted_average([a, b], [0.0, 0.0])


def test_docstring_examples_run():
    result = doctest.testmod(ensemble_selection)
    assert result.attempted > 0
    assert result.failed == 0


def test_constant_candidate_is_never_picked_under_a_ranking_metric():
    """A constant OOF prediction ties every mix under ROC AUC; it must not ride along for free."""
    from automl.search import get_metric

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    good = np.clip(0.5 + 0.3 * (y - 0.5) + rng.normal(0, 0.25, 200), 0.01, 0.99)
    constant = np.full(200, 0.3)
    predictions = [np.c_[1 - constant, constant], np.c_[1 - good, good]]
    auc = get_metric("roc_auc", 2).signed
    selector = EnsembleSelection(ensemble_size=20, random_state=0).fit(predictions, y, auc)
    assert selector.weights_[0] == 0.0 and selector.weights_[1] == 1.0
    # Alone, a constant candidate is still the answer rather than an error.
    alone = EnsembleSelection(ensemble_size=5, random_state=0).fit(predictions[:1], y, auc)
    assert alone.weights_.tolist() == [1.0]
