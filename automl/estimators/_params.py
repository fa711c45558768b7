"""Parameter validation for the estimators: a constraints table and one message shape.

Each constraint is a ``(description, predicate)`` pair; the message reads
"The 'cv' parameter of AutoClassifier must be an int in [2, inf) or a CV splitter. Got 1 instead."
"""

import numbers


def interval(kind, low, high, closed="both"):
    """A constraint for a number of ``kind`` (int or float) in [low, high] (None = unbounded)."""
    name = "an int" if kind is int else "a float"
    left = "[" if closed in ("both", "left") and low is not None else "("
    right = "]" if closed in ("both", "right") and high is not None else ")"
    text = f"{name} in {left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"
    types = numbers.Integral if kind is int else numbers.Real

    def check(value):
        if not isinstance(value, types) or isinstance(value, bool):
            return False
        above = low is None or (value >= low if left == "[" else value > low)
        below = high is None or (value <= high if right == "]" else value < high)
        return above and below

    return text, check


def options(*values):
    """A constraint for one of the listed values."""
    return f"one of {list(values)}", lambda value: value in values


def is_none():
    return "None", lambda value: value is None


def instance_of(kind, text, exclude=()):
    """A constraint for instances of ``kind`` that are not instances of ``exclude``."""
    return text, lambda value: isinstance(value, kind) and not isinstance(value, exclude)


def has_method(name, text):
    """A constraint for objects (not classes, not strings) with a method ``name``."""
    return text, lambda value: hasattr(value, name) and not isinstance(value, (type, str))


def validate_params(estimator, constraints):
    """Check every parameter of ``estimator`` against ``constraints``.

    Parameters
    ----------
    estimator : BaseEstimator
    constraints : dict of str -> list of (str, callable)
        Allowed forms of each parameter; a parameter is valid when one predicate accepts it.

    Raises
    ------
    ValueError
        Naming the parameter, the estimator, the allowed forms and the value given.
    """
    cls = type(estimator).__name__
    for name, value in estimator.get_params(deep=False).items():
        allowed = constraints.get(name)
        if allowed is None or any(check(value) for _, check in allowed):
            continue
        texts = [text for text, _ in allowed]
        expected = texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " or " + texts[-1]
        raise ValueError(f"The {name!r} parameter of {cls} must be {expected}. Got {value!r} instead.")
