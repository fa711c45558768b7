"""2. What is searched: the CASH tree of preprocessing and model families, for both tasks.

:mod:`~automl.space.components` and :mod:`~automl.space.regressors` register the model families
(:class:`ComponentSpec`), :mod:`~automl.space.registry` chooses those a search may use, and
:mod:`~automl.space.pipeline` turns an Optuna trial into an unfitted scikit-learn pipeline
(define-by-run), or rebuilds one from its parameters.
"""

from .components import DEFAULT_COMPONENTS, ComponentSpec
from .pipeline import (
    MAX_NATIVE_CARDINALITY, ROW_COUNT_PARAMS, SCALERS, as_categories, at_rows, default_pipeline, fit_quietly,
    portfolio, rebuild, set_threads, suggest_pipeline, weight_params,
)
from .registry import resolve_components
from .regressors import REGRESSION_COMPONENTS

__all__ = [
    "DEFAULT_COMPONENTS", "MAX_NATIVE_CARDINALITY", "REGRESSION_COMPONENTS", "ROW_COUNT_PARAMS", "SCALERS",
    "ComponentSpec", "as_categories", "at_rows", "default_pipeline", "fit_quietly", "portfolio", "rebuild",
    "resolve_components", "set_threads", "suggest_pipeline", "weight_params",
]
