"""4. What is kept: Caruana ensemble selection over the OOF predictions, and the fitted weighted ensemble.

:mod:`~automl.ensemble.selection` chooses weights on OOF arrays (numpy only),
:mod:`~automl.ensemble.voting` is the fitted soft-voting (or averaging) scikit-learn estimator, and
:mod:`~automl.ensemble.final_fit` is the stage of ``fit`` between them: select, trim to the time
left, refit; or the fallback model when no trial finished.
"""

from .final_fit import (
    beats_constant, build_ensemble, final_fit_costs, final_fit_seconds, fit_fallback, members_in_time, schedule_seconds,
    select_members, use_fallback,
)
from .selection import EnsembleSelection, weighted_average
from .voting import WeightedEnsembleClassifier, WeightedEnsembleRegressor

__all__ = [
    "EnsembleSelection", "WeightedEnsembleClassifier", "WeightedEnsembleRegressor", "beats_constant", "build_ensemble",
    "final_fit_costs", "final_fit_seconds", "fit_fallback", "members_in_time", "schedule_seconds",
    "select_members", "use_fallback", "weighted_average",
]
