"""Tests of automl.search.scoring: each metric against sklearn.metrics, directions, signs, lookup errors."""

import numpy as np
import pytest
from sklearn import metrics as skm

from automl.search import CLASSIFICATION_METRICS, get_metric

# Binary: the rows are P(class 0), P(class 1); argmax predicts [0, 0, 1, 1, 1, 0].
Y_BINARY = np.array([0, 0, 1, 1, 0, 1])
P_BINARY = np.array([[0.9, 0.1], [0.6, 0.4], [0.35, 0.65], [0.2, 0.8], [0.45, 0.55], [0.7, 0.3]])

# Three classes; argmax predicts [0, 1, 1, 2, 0, 2].
Y_MULTI = np.array([0, 1, 2, 2, 1, 0])
P_MULTI = np.array([
    [0.7, 0.2, 0.1],
    [0.1, 0.8, 0.1],
    [0.2, 0.5, 0.3],
    [0.1, 0.1, 0.8],
    [0.5, 0.3, 0.2],
    [0.3, 0.3, 0.4],
])


def sklearn_reference(name, y, proba):
    """What sklearn.metrics says, computed independently of automl.search.scoring."""
    pred = proba.argmax(axis=1)
    binary = proba.shape[1] == 2
    if name == "roc_auc":
        return skm.roc_auc_score(y, proba[:, 1]) if binary else skm.roc_auc_score(y, proba, multi_class="ovr")
    if name == "log_loss":
        return skm.log_loss(y, proba)
    if name == "accuracy":
        return skm.accuracy_score(y, pred)
    if name == "balanced_accuracy":
        return skm.balanced_accuracy_score(y, pred)
    if name == "f1":
        return skm.f1_score(y, pred) if binary else skm.f1_score(y, pred, average="macro")
    raise AssertionError(name)


@pytest.mark.parametrize("name", sorted(CLASSIFICATION_METRICS))
@pytest.mark.parametrize("y, proba", [(Y_BINARY, P_BINARY), (Y_MULTI, P_MULTI)], ids=["binary", "multiclass"])
def test_metric_matches_sklearn(name, y, proba):
    metric = get_metric(name, n_classes=proba.shape[1])
    value = metric(y, proba)
    assert isinstance(value, float)
    assert value == pytest.approx(sklearn_reference(name, y, proba), abs=1e-12)


def test_known_answers_by_hand():
    # ROC AUC: positives score 0.65, 0.8, 0.3 and negatives 0.1, 0.4, 0.55; 7 of the 9 pairs are
    # ranked correctly (0.3 is below 0.4 and 0.55).
    assert get_metric("roc_auc", 2)(Y_BINARY, P_BINARY) == pytest.approx(7 / 9)
    # accuracy: predictions [0, 0, 1, 1, 1, 0] against [0, 0, 1, 1, 0, 1]: 4 of 6.
    assert get_metric("accuracy", 2)(Y_BINARY, P_BINARY) == pytest.approx(4 / 6)
    # binary F1 on class 1: tp=2, fp=1, fn=1 -> 2*2 / (2*2 + 1 + 1).
    assert get_metric("f1", 2)(Y_BINARY, P_BINARY) == pytest.approx(4 / 6)
    # log loss: mean of -log P(true class).
    expected = -np.mean(np.log([0.9, 0.6, 0.65, 0.8, 0.45, 0.3]))
    assert get_metric("log_loss", 2)(Y_BINARY, P_BINARY) == pytest.approx(expected)
    # multiclass: recalls 1/2, 1/2, 1/2 -> balanced accuracy 1/2; accuracy 3 of 6.
    assert get_metric("balanced_accuracy", 3)(Y_MULTI, P_MULTI) == pytest.approx(0.5)
    assert get_metric("accuracy", 3)(Y_MULTI, P_MULTI) == pytest.approx(0.5)


def test_roc_auc_binary_uses_the_positive_column_only():
    # Column 0 is ignored: overwriting it must not change the score.
    proba = P_BINARY.copy()
    proba[:, 0] = 0.5
    assert get_metric("roc_auc", 2)(Y_BINARY, proba) == pytest.approx(7 / 9)
    flipped = P_BINARY[:, ::-1]
    assert get_metric("roc_auc", 2)(Y_BINARY, flipped) == pytest.approx(2 / 9)


def test_log_loss_keeps_all_columns_when_a_class_is_absent_from_y():
    # A fold whose labels lack class 2 still scores against the 3 probability columns.
    y = np.array([0, 1, 1, 0])
    proba = np.array([[0.7, 0.2, 0.1], [0.2, 0.6, 0.2], [0.1, 0.5, 0.4], [0.5, 0.25, 0.25]])
    expected = -np.mean(np.log([0.7, 0.6, 0.5, 0.5]))
    assert get_metric("log_loss", 3)(y, proba) == pytest.approx(expected)
    assert expected == pytest.approx(skm.log_loss(y, proba, labels=[0, 1, 2]))


@pytest.mark.parametrize(
    "name, direction",
    [("roc_auc", "maximize"), ("log_loss", "minimize"), ("accuracy", "maximize"),
     ("balanced_accuracy", "maximize"), ("f1", "maximize")],
)
def test_direction(name, direction):
    metric = get_metric(name, n_classes=2)
    assert metric.direction == direction
    assert metric.greater_is_better == (direction == "maximize")


@pytest.mark.parametrize("name", sorted(CLASSIFICATION_METRICS))
def test_signed_is_greater_is_better(name):
    metric = get_metric(name, n_classes=3)
    value = metric(Y_MULTI, P_MULTI)
    expected = value if metric.greater_is_better else -value
    assert metric.signed(Y_MULTI, P_MULTI) == pytest.approx(expected)
    # A perfect prediction is never signed-worse than a poor one.
    perfect = np.eye(3)[Y_MULTI] * 0.98 + 0.02 / 3
    assert metric.signed(Y_MULTI, perfect) > metric.signed(Y_MULTI, P_MULTI)


def test_signed_log_loss_is_negative():
    metric = get_metric("log_loss", 2)
    assert metric.signed(Y_BINARY, P_BINARY) == pytest.approx(-metric(Y_BINARY, P_BINARY))
    assert metric.signed(Y_BINARY, P_BINARY) < 0


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError, match="Unknown classification metric 'auc'") as info:
        get_metric("auc", n_classes=2)
    for name in ("roc_auc", "log_loss", "accuracy", "balanced_accuracy", "f1"):
        assert name in str(info.value)


@pytest.mark.parametrize("n_classes, expected", [(2, "roc_auc"), (3, "log_loss"), (7, "log_loss")])
def test_default_metric(n_classes, expected):
    assert get_metric(None, n_classes=n_classes).name == expected


def test_explicit_name_overrides_default():
    assert get_metric("accuracy", n_classes=2).name == "accuracy"
    assert get_metric("roc_auc", n_classes=3).name == "roc_auc"


def test_accepts_lists():
    metric = get_metric("accuracy", 2)
    assert metric(Y_BINARY.tolist(), P_BINARY.tolist()) == pytest.approx(4 / 6)


@pytest.mark.parametrize("n_classes", [2, 3, 5])
@pytest.mark.parametrize("seed", range(5))
def test_fast_metrics_equal_sklearn_on_random_cases_with_ties(n_classes, seed):
    """Our numpy metrics are sklearn's formulas without the input checks: same values, ties included."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, 300)
    y[:n_classes] = np.arange(n_classes)
    # Rounded scores force many ties, the case rank-based AUC must average.
    proba = rng.dirichlet(np.ones(n_classes), 300).round(1) + 1e-3
    proba /= proba.sum(axis=1, keepdims=True)
    predicted = proba.argmax(axis=1)
    auc = (skm.roc_auc_score(y, proba[:, 1]) if n_classes == 2
           else skm.roc_auc_score(y, proba, multi_class="ovr"))
    expected = {
        "roc_auc": auc,
        "log_loss": skm.log_loss(y, proba, labels=np.arange(n_classes)),
        "accuracy": skm.accuracy_score(y, predicted),
        "balanced_accuracy": skm.balanced_accuracy_score(y, predicted),
        "f1": skm.f1_score(y, predicted, average="binary" if n_classes == 2 else "macro"),
    }
    for name, value in expected.items():
        assert get_metric(name, n_classes)(y, proba) == pytest.approx(value, rel=1e-9, abs=1e-12), name


def _sklearn_weighted(name, y, pred, w):
    """sklearn.metrics with sample_weight, the reference for every weighted metric."""
    if name in ("rmse", "mae", "r2"):
        return {"rmse": lambda: np.sqrt(skm.mean_squared_error(y, pred, sample_weight=w)),
                "mae": lambda: skm.mean_absolute_error(y, pred, sample_weight=w),
                "r2": lambda: skm.r2_score(y, pred, sample_weight=w)}[name]()
    label, binary = pred.argmax(axis=1), pred.shape[1] == 2
    if name == "roc_auc":
        if binary:
            return skm.roc_auc_score(y, pred[:, 1], sample_weight=w)
        return skm.roc_auc_score(y, pred, multi_class="ovr", sample_weight=w)
    if name == "log_loss":
        return skm.log_loss(y, pred, sample_weight=w)
    if name == "accuracy":
        return skm.accuracy_score(y, label, sample_weight=w)
    if name == "balanced_accuracy":
        return skm.balanced_accuracy_score(y, label, sample_weight=w)
    return skm.f1_score(y, label, sample_weight=w, average="binary" if binary else "macro")


@pytest.mark.parametrize("name", sorted(CLASSIFICATION_METRICS) + ["rmse", "mae", "r2"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_weighted_metrics_match_sklearn_and_weights_of_one_change_nothing(name, n_classes):
    rng = np.random.default_rng(n_classes)
    n = 500
    w = rng.gamma(0.7, 2.0, size=n)  # uneven weights, some near 0
    if name in ("rmse", "mae", "r2"):
        y = rng.normal(size=n)
        pred = y + rng.normal(size=n)
        pred[:50] = np.round(pred[:50])
        metric = get_metric(name, n_classes=0)
    else:
        y = rng.integers(0, n_classes, size=n)
        pred = rng.dirichlet(np.ones(n_classes), size=n)
        pred[:100] = np.round(pred[:100], 1)  # ties among the scores: ROC AUC counts them one half
        pred /= pred.sum(axis=1, keepdims=True)
        metric = get_metric(name, n_classes=n_classes)
    assert metric(y, pred, w) == pytest.approx(_sklearn_weighted(name, y, pred, w), abs=1e-10)
    assert metric(y, pred, np.ones(n)) == pytest.approx(metric(y, pred), abs=1e-12)
    assert metric(y, pred, w) != pytest.approx(metric(y, pred), abs=1e-6)  # the weights do count
    assert metric.signed(y, pred, w) == (1 if metric.greater_is_better else -1) * metric(y, pred, w)
