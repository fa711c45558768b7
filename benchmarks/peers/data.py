"""Datasets, the shared split and the scoring: the one protocol every system is held to.

Used by the harness (to know the task and the constant predictor's score of each split, even for a
run that crashes) and by every worker (to rebuild the very same split in its own venv). Needs only
numpy, pandas and scikit-learn, which every venv has.
"""

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, log_loss, roc_auc_score
from sklearn.model_selection import train_test_split

DATA_DIR = Path(__file__).resolve().parents[3] / "shared" / "data"
CLASSIFICATION = ("binary", "multiclass")
TEST_SIZE = 0.25


def manifest(data_dir=DATA_DIR):
    """Classification rows of MANIFEST.csv, indexed by dataset name."""
    table = pd.read_csv(Path(data_dir) / "MANIFEST.csv")
    return table[table["task"].isin(CLASSIFICATION)].set_index("name")


def load(name, data_dir=DATA_DIR):
    """Features, labels (as strings, so every library sees the same label type) and task."""
    row = manifest(data_dir).loc[name]
    frame = pd.read_csv(Path(data_dir) / row["file"])
    # kc1's labels load as bool, others as int or str: strings are the one type all peers accept.
    y = frame[row["target"]].astype(str).rename(row["target"])
    return frame.drop(columns=[row["target"]]), y, row["task"]


def split(X, y, seed):
    """The stratified 75/25 split of the protocol (train_test_split, random_state=seed)."""
    return train_test_split(X, y, test_size=TEST_SIZE, stratify=y, random_state=seed)


def split_hash(y_test):
    """Short digest of the test rows, so the summary can check all venvs drew the same split."""
    text = ",".join(map(str, sorted(y_test.index)))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def primary_metric(task):
    return "roc_auc" if task == "binary" else "log_loss"


def constant_score(y_train, y_test, task):
    """Score of the constant predictor: ROC AUC 0.5, or the log loss of the training class prior."""
    if task == "binary":
        return 0.5
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
