"""Real datasets shipped with the package, for the demo, the docs and the tests.

========  =====  ========  =======  =====================================================================
name      rows   features  target   source
========  =====  ========  =======  =====================================================================
kc1       2109   21        Class    NASA MDP / PROMISE software defects (OpenML 1067), public
credit-g  1000   20        class    Statlog German credit (OpenML 31), UCI ML Repository, CC BY 4.0
========  =====  ========  =======  =====================================================================
"""

from pathlib import Path

_TARGETS = {"kc1": "Class", "credit-g": "class"}


def load_dataset(name):
    """Load a bundled dataset as ``(X, y)``.

    Parameters
    ----------
    name : {"kc1", "credit-g"}

    Returns
    -------
    X : DataFrame of shape (n_samples, n_features)
    y : Series of shape (n_samples,)

    Raises
    ------
    ValueError
        If ``name`` is not a bundled dataset; the message lists them.

    Examples
    --------
    >>> X, y = load_dataset("credit-g")
    >>> X.shape, sorted(y.unique())
    ((1000, 20), ['bad', 'good'])
    """
    import pandas as pd

    if name not in _TARGETS:
        raise ValueError(f"Unknown dataset {name!r}. Bundled datasets are: {sorted(_TARGETS)}.")
    frame = pd.read_csv(Path(__file__).with_name(f"{name}.csv"))
    target = _TARGETS[name]
    return frame.drop(columns=[target]), frame[target]
