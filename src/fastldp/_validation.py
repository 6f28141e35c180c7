"""One message format for every parameter check in fastldp.

Every check names the parameter, the owner (class or function), the allowed
range and the value given, in the form

    The 'epsilon' parameter of JPRS must be a float in (0, inf). Got -1 instead.

Checks are written as ``not (low < x)`` so that NaN always fails.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import numbers
import operator

import numpy as np

__all__ = [
    "param_error",
    "check_int",
    "check_float",
    "check_positive_array",
    "check_choice",
    "check_csr_structure",
    "resolve_alias",
    "KeywordOnly",
    "keyword_only",
]


def _interval(low, high, low_open: bool, high_open: bool) -> str:
    lo = "-inf" if low is None else repr(low)
    hi = "inf" if high is None else repr(high)
    left = "(" if (low_open or low is None) else "["
    right = ")" if (high_open or high is None) else "]"
    return f"{left}{lo}, {hi}{right}"


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def param_error(name: str, owner: str, expected: str, value, exc=ValueError):
    """Build the exception for parameter ``name`` of ``owner``."""
    return exc(
        f"The {name!r} parameter of {owner} must be {expected}. "
        f"Got {_shown(value)} instead."
    )


def check_int(value, name: str, owner: str, *, low=None, high=None) -> int:
    """Return ``value`` as a Python int in ``[low, high]`` or raise.

    Bools are rejected (``True`` is not a count). NumPy integers are accepted.
    """
    expected = f"an int in {_interval(low, high, False, False)}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise param_error(name, owner, expected, value, TypeError)
    value = operator.index(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise param_error(name, owner, expected, value)
    return value


def check_float(
    value,
    name: str,
    owner: str,
    *,
    low=None,
    high=None,
    low_open: bool = True,
    high_open: bool = True,
) -> float:
    """Return ``value`` as a float inside the interval or raise (NaN fails)."""
    expected = f"a float in {_interval(low, high, low_open, high_open)}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise param_error(name, owner, expected, value, TypeError)
    x = float(value)
    ok = x == x
    if low is not None:
        ok = ok and ((x > low) if low_open else (x >= low))
    if high is not None:
        ok = ok and ((x < high) if high_open else (x <= high))
    if not ok:
        raise param_error(name, owner, expected, value)
    return x


def check_positive_array(values, name: str, owner: str, *, size=None) -> np.ndarray:
    """Return a float64 1-d array whose entries are all finite and > 0.

    A scalar is broadcast to ``size`` when ``size`` is given. The error names
    the first offending index.
    """
    expected = "finite floats in (0, inf)"
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error(name, owner, f"an array of {expected}", values, TypeError) from None
    if arr.ndim == 0 and size is not None:
        arr = np.full(size, float(arr), dtype=np.float64)
    arr = np.atleast_1d(arr)
    if arr.ndim != 1:
        raise param_error(name, owner, "a 1-d array", f"array of shape {arr.shape}")
    if size is not None and arr.shape[0] != size:
        raise param_error(
            name, owner, f"a scalar or an array of length {size}", f"array of length {arr.shape[0]}"
        )
    for start in range(0, arr.shape[0], 1 << 16):  # blocks: no length-n temporaries
        block = arr[start:start + (1 << 16)]
        bad = ~(np.isfinite(block) & (block > 0))
        if bad.any():
            break
    else:
        return arr
    if bad.any():
        i = start + int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"The {name!r} parameter of {owner} must contain only {expected}. "
            f"Got {float(arr[i])!r} at index {i} instead."
        )
    return arr


def check_choice(value, name: str, owner: str, choices) -> str:
    """Return ``value`` if it is one of ``choices`` or raise."""
    if value not in choices:
        raise param_error(name, owner, "one of " + ", ".join(map(repr, choices)), value)
    return value


def check_csr_structure(csr, width: int, name: str, owner: str) -> None:
    """Raise a ``ValueError`` unless ``csr``'s index arrays are consistent and in range.

    scipy does not check a CSR built from raw ``(data, indices, indptr)``
    arrays, so a column index outside ``[0, width)`` (or a negative one)
    would otherwise flow into the mechanisms as a pair that does not exist.
    """
    indptr, indices = np.asarray(csr.indptr), np.asarray(csr.indices)
    n = csr.shape[0]
    if (indptr.shape[0] != n + 1 or indptr[0] != 0 or indptr[-1] != indices.shape[0]
            or (n and np.any(np.diff(indptr) < 0))):
        raise ValueError(
            f"The {name!r} parameter of {owner} must be a well-formed sparse matrix. "
            f"Got a CSR whose indptr is not a non-decreasing array from 0 to "
            f"{indices.shape[0]} of length {n + 1} instead."
        )
    if indices.size:
        low, high = int(indices.min()), int(indices.max())
        if low < 0 or high >= width:
            bad = low if low < 0 else high
            raise ValueError(
                f"The {name!r} parameter of {owner} must have column indices in [0, {width}). "
                f"Got column index {bad} instead."
            )


def resolve_alias(owner: str, name: str, value, alias: str, alias_value):
    """The value of a parameter that has a paper name and a contract name.

    ``name`` is the paper's letter (``k``, ``s``, ``m``) and ``alias`` the
    name every family shares (``items_per_user``, ``sparsity``; the API
    contract's names table). Either may be given, not both (a
    ``ValueError``); neither is a ``TypeError``, as for any missing required
    argument.
    """
    if value is not None and alias_value is not None:
        raise ValueError(
            f"The {alias!r} parameter of {owner} is another name for {name!r}: pass one of "
            f"them. Got {name}={value!r} and {alias}={alias_value!r} instead.")
    if value is None and alias_value is None:
        raise TypeError(f"{owner}() missing the required keyword argument {alias!r} "
                        f"(or its paper name {name!r})")
    return value if value is not None else alias_value


# ------------------------------------------------------------------ keyword-only constructors
def _nearest_keyword(name: str, known: list) -> str | None:
    """The parameter a mistyped keyword most likely meant (``eps`` -> ``epsilon``)."""
    if name.startswith("eps") and not name.startswith("epsilon"):
        name = "epsilon" + name[3:]  # eps -> epsilon, eps_inf -> epsilon_inf, eps1 -> epsilon1
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return close[0] if close else None


def _call_error(cls: type, init, args: tuple, kwargs: dict) -> TypeError | None:
    """A message naming ``cls``, the keyword-only rule and the nearest keyword, or ``None``.

    ``None`` when ``args`` and ``kwargs`` bind to ``init`` (a TypeError raised
    inside the constructor is its own, and is kept).
    """
    sig = inspect.signature(init)
    try:
        sig.bind(None, *args, **kwargs)
        return None
    except TypeError:
        pass
    params = list(sig.parameters.values())[1:]
    known = [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p.name for p in params if p.default is p.empty
                and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    name = cls.__name__
    shown = ", ".join(f"{k}=..." for k in (required or known[:2]))
    if args:
        return TypeError(
            f"{name} takes keyword arguments only (every fastldp constructor does): "
            f"{name}({shown}). Got {len(args)} positional argument"
            f"{'' if len(args) == 1 else 's'} ({', '.join(_shown(a) for a in args)}) instead.")
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    unknown = [k for k in kwargs if k not in known]
    if unknown:
        near = _nearest_keyword(unknown[0], known)
        hint = f" (did you mean {near!r}?)" if near else ""
        return TypeError(f"{name} has no parameter {unknown[0]!r}{hint}. Its keyword "
                         f"arguments: {', '.join(known)}.")
    missing = [k for k in required if k not in kwargs]
    if missing:
        return TypeError(f"{name}() missing the required keyword argument"
                         f"{'' if len(missing) == 1 else 's'} "
                         f"{', '.join(repr(k) for k in missing)}: {name}({shown}).")
    return None


def keyword_only(init):
    """Wrap a constructor so that a call that does not bind says so in fastldp's words.

    Python's own messages name the function that was defined
    (``FrequencyOracle.__init__() takes 1 positional argument but 3 were
    given``); this one names the class that was called, the keyword-only
    rule and the nearest keyword (``eps=`` -> ``epsilon``). A call that
    binds costs nothing more than before: the signature is read only after
    the constructor raised a ``TypeError``.
    """
    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        try:
            init(self, *args, **kwargs)
        except TypeError:
            better = _call_error(type(self), init, args, kwargs)
            if better is None:
                raise
            raise better from None

    __init__.__fastldp_keyword_only__ = True  # type: ignore[attr-defined]
    return __init__


class KeywordOnly:
    """A base whose subclasses' constructors get :func:`keyword_only`'s messages.

    Each subclass that defines ``__init__`` has it wrapped once, when the
    class is created; a family's shared base derives from this, and every
    estimator of the family then answers ``LGRR(16, 1.0)`` and
    ``LGRR(eps=1.0)`` with a message naming ``LGRR``.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and not getattr(init, "__fastldp_keyword_only__", False):
            cls.__init__ = keyword_only(init)  # type: ignore[method-assign]
