"""Exceptions and warnings raised by automl.

Every error names the column, parameter or trial it is about, so a user can act on the message alone.
"""

import os
import sys
import warnings


class AutoMLError(Exception):
    """Base class of every error raised by automl."""


class DataValidationError(AutoMLError, ValueError):
    """X or y cannot be used as given (shape, labels, values); the message names the column or problem."""


class NoSuccessfulTrialsError(AutoMLError, RuntimeError):
    """Every trial of the search failed; the message carries the first errors seen."""


class LeakageWarning(UserWarning):
    """A column or row pattern lets the model see the target it should predict."""


class DataRepairWarning(UserWarning):
    """automl changed the input in a documented way (dropped a constant column, for instance)."""


class ConfigError(AutoMLError, ValueError):
    """A job configuration file is missing, malformed, or has a wrong key; the message names the key."""


MAX_LISTED = 10


def plain_repr(value):
    """``repr`` of a value as a user wrote it: a NumPy scalar as its number (NumPy 2 prints ``np.float64(-1.0)``)."""
    return repr(value.item() if hasattr(value, "item") and getattr(value, "ndim", None) == 0 else value)


def listing(items, render=repr):
    """Render up to MAX_LISTED items for a message, joined by commas, saying how many more there are."""
    shown = ", ".join(render(item) for item in items[:MAX_LISTED])
    more = len(items) - MAX_LISTED
    return f"{shown} and {more} more" if more > 0 else shown


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_user(message, category=UserWarning):
    """``warnings.warn``, pointed at the first line outside automl: the user's call of ``fit`` or ``predict``.

    A fixed ``stacklevel`` points at our own code as soon as a call goes one function deeper (a user saw
    ``automl/search/setup.py:115`` and a line of ours echoed under a warning about their column).
    """
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)
