"""Datasets, the shared split and the scoring: the one protocol every system is held to.

Used by the harness (to know the task and the constant predictor's score of each split, even for a
run that crashes) and by every worker (to rebuild the very same split in its own venv). Needs only
numpy, pandas and scikit-learn, which every venv has.

Classification (binary, multiclass): labels as strings, a stratified 75/25 split, scored from class
probabilities. Regression: the target as float64, a shuffled (not stratified) 75/25 split, scored
from point predictions by RMSE (primary), MAE and R2.
"""

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import (accuracy_score, log_loss, mean_absolute_error, r2_score, roc_auc_score,
                             root_mean_squared_error)
from sklearn.model_selection import train_test_split

DATA_DIR = Path(__file__).resolve().parents[3] / "shared" / "data"
CLASSIFICATION = ("binary", "multiclass")
REGRESSION = ("regression",)
TEST_SIZE = 0.25


def manifest(data_dir=DATA_DIR, tasks=CLASSIFICATION):
    """Rows of MANIFEST.csv whose task is in ``tasks`` (default: classification), indexed by name."""
    table = pd.read_csv(Path(data_dir) / "MANIFEST.csv")
    return table[table["task"].isin(tasks)].set_index("name")


def load(name, data_dir=DATA_DIR):
    """Features, target and task.

    Classification labels become strings (kc1's load as bool, others as int or str: strings are the
    one type all peers accept); a regression target becomes float64 (abalone's rings load as int).
    """
    row = manifest(data_dir, CLASSIFICATION + REGRESSION).loc[name]
    frame = pd.read_csv(Path(data_dir) / row["file"])
    kind = float if row["task"] in REGRESSION else str
    y = frame[row["target"]].astype(kind).rename(row["target"])
    return frame.drop(columns=[row["target"]]), y, row["task"]


def split(X, y, seed, task):
    """The 75/25 split of the protocol (train_test_split, random_state=seed): stratified on the labels
    for classification, plainly shuffled for regression."""
    stratify = None if task in REGRESSION else y
    return train_test_split(X, y, test_size=TEST_SIZE, stratify=stratify, random_state=seed)


def split_hash(y_test):
    """Short digest of the test rows, so the summary can check all venvs drew the same split."""
    text = ",".join(map(str, sorted(y_test.index)))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def primary_metric(task):
    return {"binary": "roc_auc", "multiclass": "log_loss", "regression": "rmse"}[task]


def constant_score(y_train, y_test, task):
    """Score of the constant predictor: ROC AUC 0.5, the log loss of the training class prior, or the
    RMSE of the training mean."""
    if task == "binary":
        return 0.5
    if task in REGRESSION:
        return float(root_mean_squared_error(y_test, np.full(len(y_test), y_train.mean())))
    classes = np.sort(y_train.unique())
    prior = y_train.value_counts(normalize=True).reindex(classes).to_numpy()
    return float(log_loss(y_test, np.tile(prior, (len(y_test), 1)), labels=classes))


def scores(y_test, proba, classes, task):
    """Held-out scores from class probabilities (a DataFrame with one column per class label).

    ``classes`` are the training labels: a class too rare to land in the test rows must still
    count in the log loss (its probability mass is part of every row).

    Accuracy is the argmax of the probabilities, the same rule for every system (some would
    otherwise apply their own decision threshold).
    """
    classes = np.sort(classes)
    proba = proba.reindex(columns=classes, fill_value=0.0).to_numpy(dtype=float)
    result = {
        "log_loss": float(log_loss(y_test, proba, labels=classes)),
        "accuracy": float(accuracy_score(y_test, classes[proba.argmax(axis=1)])),
        "roc_auc": float(roc_auc_score(y_test == classes[1], proba[:, 1])) if task == "binary" else None,
    }
    result["score"] = result[primary_metric(task)]
    return result


def regression_scores(y_test, prediction):
    """Held-out RMSE (the primary metric), MAE and R2 of point predictions (array-like, one per row)."""
    prediction = np.asarray(prediction, dtype=float)  # scikit-learn rejects NaN, inf and a wrong length
    result = {"rmse": float(root_mean_squared_error(y_test, prediction)),
              "mae": float(mean_absolute_error(y_test, prediction)),
              "r2": float(r2_score(y_test, prediction))}
    result["score"] = result["rmse"]
    return result
