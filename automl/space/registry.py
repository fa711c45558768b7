"""The families a search may use: the registry of the task, the user's own specs, ``include=`` and the data's size."""

import logging

from ..exceptions import warn_user
from .components import DEFAULT_COMPONENTS
from .regressors import REGRESSION_COMPONENTS

logger = logging.getLogger(__name__)


def resolve_components(include=None, extra=(), profile=None, task="classification", weighted=False):
    """The ordered list of model families a search may use.

    Parameters
    ----------
    include : list of str or None, default=None
        Keys to keep (in registry order); None keeps every available family.
    extra : sequence of ComponentSpec, default=()
        User families appended to the registry.
    profile : DatasetProfile or None, default=None
        When given, families whose ``max_rows`` the data exceeds are dropped, and a regression
        profile selects the regression registry.
    task : {"classification", "regression"}, default="classification"
        The registry when no profile is given: :data:`DEFAULT_COMPONENTS` or
        :data:`automl.space.regressors.REGRESSION_COMPONENTS`.
    weighted : bool, default=False
        For a fit with ``sample_weight``: families whose model takes none (``takes_sample_weight``
        False: k-nearest neighbours) are left out, and refused when ``include`` names them.

    Returns
    -------
    specs : list of ComponentSpec

    Raises
    ------
    ValueError
        If two specs share a key (both are named), if ``include`` names an unknown key (the valid
        keys are listed), if an included family's package is not installed or takes no weights in a
        weighted fit, or if nothing is left
        (an included family the data is too large for is named with its row limit).

    Warns
    -----
    UserWarning
        When ``include`` names a family whose ``max_rows`` the data exceeds, and others remain.
    """
    regression = profile is not None and profile.task == "regression" or task == "regression"
    defaults = REGRESSION_COMPONENTS if regression else DEFAULT_COMPONENTS
    registry = {}
    for spec in (*defaults, *extra):
        if spec.key in registry:
            raise ValueError(
                f"Duplicate component key {spec.key!r}: {registry[spec.key].name!r} and {spec.name!r}."
            )
        registry[spec.key] = spec
    if include is None:
        specs = [s for s in registry.values() if s.is_available()]
    else:
        unknown = [k for k in include if k not in registry]
        if unknown:
            raise ValueError(f"Unknown component key(s) {unknown}. Valid keys are: {sorted(registry)}.")
        specs = [registry[k] for k in registry if k in include]
        missing = [s for s in specs if not s.is_available()]
        if missing:
            packages = ",".join(s.requires for s in missing)
            raise ValueError(
                f"Component(s) {[s.key for s in missing]} need a package that is not installed; "
                f"install it with: pip install 'automl[{packages}]'."
            )
    specs = _weighable(specs, include, weighted)
    too_big = [] if profile is None else [s for s in specs if not s.fits(profile)]
    if too_big and include is not None:
        # Asked for by name: say why it is not searched (left out silently when include is None).
        limits = ", ".join(f"{s.key!r} up to {s.max_rows:,} rows" for s in too_big)
        message = f"Not searched on {profile.n_samples:,} rows: {limits}."
        if len(too_big) == len(specs):
            raise ValueError(f"No model family is left to search. {message} Include other families.")
        warn_user(message, UserWarning)
    specs = [s for s in specs if s not in too_big]
    if not specs:
        raise ValueError("No model family is left to search: check include= and the data size.")
    return specs


def _weighable(specs, include, weighted):
    """``specs`` without the families that cannot take weights, in a weighted fit (logged; refused by name)."""
    unweighted = [s.key for s in specs if weighted and not s.takes_sample_weight]
    if unweighted and include is not None:
        raise ValueError(f"Component(s) {unweighted} take no sample_weight: their models would ignore the weights. "
                         "Leave them out of include= for a weighted fit.")
    if unweighted:
        logger.info("A weighted fit: %s left out (their models take no sample_weight).", ", ".join(unweighted))
    return [s for s in specs if s.key not in unweighted]
