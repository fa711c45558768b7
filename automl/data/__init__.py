"""1. The data that comes in: ``X`` checked and converted, ``y`` encoded, both described by a DatasetProfile.

``check_training_data`` is the first stage of every fit and of every joining worker;
``check_prediction_data`` holds new rows to the training schema. The target's own checks (labels,
rare classes, numbers) are in :mod:`automl.data.target`; the rows' groups in :mod:`automl.data.groups`; their weights in :mod:`automl.data.weights`;
the columns that name the row, which the
leak check also looks for, in :mod:`automl.data.identifiers`; the frame held once by the fit and its
worker processes, in :mod:`automl.data.memory`.
"""

from .groups import check_groups, groups_across
from .identifiers import IDENTIFIER_DISTINCT_RATIO, IDENTIFIER_MIN_DISTINCT, identifier_distinct_count
from .memory import memory_mapped
from .target import (MAX_CLASSES, MAX_DROPPED_SHARE, class_counts_of, encode_target, infer_task, regression_target,
                     training_classes, widen_proba)
from .validation import DatasetProfile, check_prediction_data, check_training_data, target_stats
from .weights import check_sample_weight, kept_weights

__all__ = [
    "DatasetProfile", "IDENTIFIER_DISTINCT_RATIO", "IDENTIFIER_MIN_DISTINCT", "MAX_CLASSES", "MAX_DROPPED_SHARE",
    "check_groups", "check_prediction_data", "check_sample_weight", "check_training_data", "class_counts_of", "encode_target",
    "groups_across", "infer_task", "regression_target",
    "identifier_distinct_count", "kept_weights", "memory_mapped", "target_stats", "training_classes", "widen_proba",
]
