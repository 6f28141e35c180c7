"""Data of paper 002's evaluation: the synthetic sparse model and the Kelmarsh SCADA loader.

:func:`make_sparse_regression` draws the synthetic data of section C.1
(``n`` users with ``m`` samples each, ``d`` features, a ``k``-sparse
parameter, Gaussian noise of s.d. ``sigma``, and fresh test observations).
:func:`load_kelmarsh` reads the Kelmarsh wind-farm SCADA CSV files from a
folder the user gives (nothing is downloaded or shipped) and prepares the
nacelle-temperature regression of section C.1.
"""

from __future__ import annotations

import csv
import math
import re
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import numpy as np

from .._random import RngLike, as_generator, standard_normal
from .._validation import check_float, check_int, param_error

__all__ = ["RegressionData", "make_sparse_regression", "KelmarshData", "load_kelmarsh",
           "KELMARSH_TARGET"]


@dataclass(frozen=True, repr=False)
class RegressionData:
    """One synthetic draw.

    Attributes
    ----------
    X : ndarray (n m, d)
        Rows sorted by user, ``m`` consecutive rows per user.
    y : ndarray (n m,)
    users : ndarray (n m,)
        Each row's user id (``0 .. n-1``).
    theta : ndarray (d,)
        The true parameter, ``k``-sparse with ``||theta||_2 = theta_norm``.
    X_test, y_test : ndarray
        Fresh observations for the test MSE.
    sigma : float
    beta_min : float
        ``min_{j in S} |theta_j|``.

    Examples
    --------
    >>> from fastldp.regression import make_sparse_regression
    >>> data = make_sparse_regression(n=20, m=5, d=10, k=2, n_test=8, rng=0)
    >>> data.X.shape, data.support.shape, data.X_test.shape
    ((100, 10), (2,), (8, 10))
    >>> data
    RegressionData(n=20 users, m=5 rows each, d=10, k=2, sigma=0.25, n_test=8)
    """

    X: np.ndarray
    y: np.ndarray
    users: np.ndarray
    theta: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    sigma: float
    beta_min: float

    @property
    def support(self) -> np.ndarray:
        """The indices of the nonzero entries of ``theta``."""
        return np.flatnonzero(self.theta)

    def __repr__(self) -> str:  # the shapes, not the arrays
        n = int(np.unique(self.users).shape[0])
        m = self.X.shape[0] // max(n, 1)
        return (f"RegressionData(n={n} users, m={m} rows each, d={self.X.shape[1]}, "
                f"k={self.support.shape[0]}, sigma={self.sigma:g}, n_test={self.X_test.shape[0]})")


def make_sparse_regression(*, n: int = 15_000, m: int = 50, d: int = 256, k: int = 8,
                           sigma: float = 0.25, theta_norm: float = 1.0, n_test: int = 4000,
                           rng: RngLike = None, out: Optional[np.ndarray] = None,
                           nested: bool = False, sampler: str = "numpy") -> RegressionData:
    """Draw the synthetic data of paper 002, section C.1.

    ``x ~ N(0, I_d)``, ``y = x^T theta + sigma e`` with ``e ~ N(0, 1)``;
    ``theta`` has ``k`` nonzero entries at uniformly random positions, each
    ``+-theta_norm / sqrt(k)`` with a random sign (so ``beta_min = theta_norm / sqrt(k)``).
    The summary does not give the paper's ``theta``; this flat choice is ours.

    Parameters
    ----------
    n, m, d, k : int
        Users, samples per user, features, sparsity (``k <= d``).
    sigma : float
        Noise standard deviation (>= 0).
    theta_norm : float
    n_test : int
        Fresh test observations.
    rng : None, int, SeedSequence or Generator
    out : ndarray, optional
        A C-contiguous float64 array of shape ``(n m, d)`` to draw ``X``
        into (it becomes ``X``): the values are those of a draw without
        it, bit for bit, and a caller that draws many data sets of one size
        (an experiment's repetitions) saves the allocation of a fresh
        ``X``, whose first touch of each page costs as much as drawing
        half its normals.
    nested : bool
        Draw so that the data of ``n`` users are exactly the first ``n``
        users of any larger draw with the same ``rng`` and other arguments
        (``theta`` and the test set first, then two seeds from ``rng`` for
        two generators, one filling ``x`` row by row and one the noise;
        ``x^T theta`` summed over the support in increasing order). These
        are nested samples: a sweep over ``n`` draws its largest data set
        once and takes prefixes, and its cells share common random numbers. The values differ from the
        default order (``x`` of all users, then the noises, then the test
        set), which stays the default so that earlier results are reproduced.
    sampler : {"numpy", "fastldp"}
        Which sampler draws the standard normals (``x``, the noise, the test
        set), from the same generators in the same order. ``"numpy"``
        (default, the values of earlier releases) is
        ``Generator.standard_normal``; ``"fastldp"`` is
        :func:`fastldp._random.standard_normal`, a ziggurat on the
        generator's own 64-bit words, the same law with other values, about
        2.5 times as fast on some machines (the draw of the experiments'
        192 million normals: 1.5 s against 3.7 s on a 2-core Intel Xeon VM).
        The experiments' regression sweeps use ``"fastldp"``.

    Examples
    --------
    >>> from fastldp.regression import make_sparse_regression
    >>> big = make_sparse_regression(n=30, m=4, d=5, k=2, n_test=6, rng=1, nested=True)
    >>> small = make_sparse_regression(n=10, m=4, d=5, k=2, n_test=6, rng=1, nested=True)
    >>> bool((big.X[:40] == small.X).all() and (big.y[:40] == small.y).all())
    True
    """
    owner = "make_sparse_regression"
    n = check_int(n, "n", owner, low=1)
    m = check_int(m, "m", owner, low=1)
    d = check_int(d, "d", owner, low=1)
    k = check_int(k, "k", owner, low=1, high=d)
    sigma = check_float(sigma, "sigma", owner, low=0, low_open=False)
    theta_norm = check_float(theta_norm, "theta_norm", owner, low=0)
    n_test = check_int(n_test, "n_test", owner, low=1)
    if not isinstance(nested, (bool, np.bool_)):
        raise param_error("nested", owner, "a bool", nested, TypeError)
    if sampler == "numpy":
        def normal(g, size=None, out=None):
            return g.standard_normal(size, out=out)
    elif sampler == "fastldp":
        normal = standard_normal
    else:
        raise param_error("sampler", owner, "'numpy' or 'fastldp'", sampler,
                          ValueError if isinstance(sampler, str) else TypeError)
    gen = as_generator(rng, owner, purpose="data")
    theta = np.zeros(d)
    support = np.sort(gen.choice(d, size=k, replace=False))
    theta[support] = gen.choice([-1.0, 1.0], size=k) * theta_norm / math.sqrt(k)
    if out is None:
        X = np.empty((n * m, d))  # standard_normal(out=X) gives the values of a fresh draw
    else:
        if not (isinstance(out, np.ndarray) and out.dtype == np.float64
                and out.shape == (n * m, d) and out.flags.c_contiguous and out.flags.writeable):
            shown = (f"array of shape {out.shape} and dtype {out.dtype}"
                     if isinstance(out, np.ndarray) else type(out).__name__)
            raise param_error("out", owner, f"a writeable C-contiguous float64 array of shape "
                              f"({n * m}, {d})", shown, TypeError)
        X = out
    if nested:
        X_test = normal(gen, (n_test, d))
        y_test = X_test @ theta + sigma * normal(gen, n_test)
        # x and the noise from two generators seeded from gen (fixed draws, whatever n): each
        # fills its array in row order, so a prefix is the smaller draw
        x_gen, e_gen = (np.random.default_rng(int(s)) for s in gen.integers(0, 2 ** 63, 2))
        normal(x_gen, out=X)
        y = sigma * normal(e_gen, n * m)
        # x theta over the support, column by column, elementwise: a row's value never depends
        # on the other rows (a BLAS product's blocking might)
        fitted = np.zeros(n * m)
        for j in support:
            fitted += X[:, j] * theta[j]
        y += fitted
    else:
        normal(gen, out=X)
        y = X @ theta + sigma * normal(gen, n * m)
        X_test = normal(gen, (n_test, d))
        y_test = X_test @ theta + sigma * normal(gen, n_test)
    users = np.repeat(np.arange(n), m)
    return RegressionData(X, y, users, theta, X_test, y_test, sigma, theta_norm / math.sqrt(k))


# ---------------------------------------------------------------- Kelmarsh
#: The response column of the Kelmarsh SCADA files.
KELMARSH_TARGET = "Nacelle temperature (°C)"
_DATE = "Date and time"


@dataclass(frozen=True, repr=False)
class KelmarshData:
    """The prepared Kelmarsh regression (section C.1).

    ``X_*`` are standardized with the public split's medians and scales
    (missing predictors imputed by the public median); ``y_*`` are centered
    by the public median of the response, ``y_offset``. ``columns`` names
    the predictors.

    Examples
    --------
    The data are not shipped (:func:`load_kelmarsh` reads them); the
    object holds arrays and its repr gives their sizes:

    >>> import numpy as np
    >>> from fastldp.regression import KelmarshData
    >>> z = np.zeros((4, 2))
    >>> KelmarshData(z, z[:, 0], z[:2], z[:2, 0], z[:1], z[:1, 0], ("a", "b"), 40.5, ("t.csv",))
    KelmarshData(train=4, test=2, public=1 rows, 2 predictors, y_offset=40.5, files=1)
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    X_public: np.ndarray
    y_public: np.ndarray
    columns: tuple
    y_offset: float
    files: tuple

    def __repr__(self) -> str:  # the sizes, not the arrays
        return (f"KelmarshData(train={self.X_train.shape[0]}, test={self.X_test.shape[0]}, "
                f"public={self.X_public.shape[0]} rows, {len(self.columns)} predictors, "
                f"y_offset={self.y_offset:g}, files={len(self.files)})")


def _read_scada(path: Path):
    """Header and rows of one SCADA CSV (comment lines start with ``#``, except the header)."""
    with open(path, encoding="utf-8-sig", newline="") as fh:
        header = None
        for line in fh:
            text = line.strip()
            if text.startswith("# Date and time") or text.startswith("Date and time"):
                header = next(csv.reader([text.lstrip("# ")]))
                break
        if header is None:
            raise ValueError(f"{str(path)!r} has no 'Date and time' header line; is it a "
                             f"Kelmarsh SCADA file?")
        rows = [r for r in csv.reader(fh) if r]
    return header, rows


def _number(text: str) -> float:
    try:
        return float(text) if text else math.nan
    except ValueError:
        return math.nan


def load_kelmarsh(path: Union[str, os.PathLike[str]], *,
                  pattern: str = "Turbine_Data_Kelmarsh_*.csv", public_fraction: float = 0.1,
                  test_fraction: float = 0.125, max_missing: float = 0.5,
                  seed: int = 0) -> KelmarshData:
    """Read the Kelmarsh SCADA CSV files under ``path`` and prepare the regression.

    Parameters
    ----------
    path : str or Path
        A folder holding the turbine CSV files (or one file).
    pattern : str
        Glob of the turbine files inside the folder.
    public_fraction, test_fraction : float
        Fractions of the UTC dates put in the public split and the test split
        (whole dates, chosen by a seeded permutation; the rest is training).
    max_missing : float
        Predictors missing in more than this fraction of the public rows are dropped.
    seed : int
        Seed of the date permutation.

    Raises
    ------
    FileNotFoundError
        When ``path`` holds no matching file.
    ValueError
        When the files lack the date or the nacelle temperature column.
    """
    owner = "load_kelmarsh"
    public_fraction = check_float(public_fraction, "public_fraction", owner, low=0, high=1)
    test_fraction = check_float(test_fraction, "test_fraction", owner, low=0, high=1)
    root = Path(path).expanduser()
    files = [root] if root.is_file() else sorted(root.glob(pattern)) if root.is_dir() else []
    if not files:
        raise FileNotFoundError(f"No Kelmarsh SCADA files matching {pattern!r} under "
                                f"{str(root)!r}; download the Kelmarsh wind farm data "
                                f"(Zenodo, CC BY 4.0) and pass its folder.")
    header = None
    dates, data = [], []
    for f in files:
        h, rows = _read_scada(f)
        if header is None:
            header = h
            if _DATE not in header or KELMARSH_TARGET not in header:
                raise ValueError(f"{str(f)!r} lacks the {_DATE!r} or {KELMARSH_TARGET!r} column.")
        elif h != header:
            raise ValueError(f"{str(f)!r} has other columns than {str(files[0])!r}.")
        di = header.index(_DATE)
        for r in rows:
            if len(r) != len(header):
                continue
            dates.append(r[di][:10])
            data.append([_number(v) for i, v in enumerate(r) if i != di])
    assert header is not None  # files is not empty: the first file's header was read
    names = [c for c in header if c != _DATE]
    A = np.asarray(data, dtype=np.float64).reshape(len(data), len(names))
    ti = names.index(KELMARSH_TARGET)
    y = A[:, ti]
    keep_rows = np.isfinite(y)
    A, y = A[keep_rows], y[keep_rows]
    day = np.asarray(dates)[keep_rows]
    predictors = [i for i, c in enumerate(names) if i != ti and not re.search(
        r"nacelle temperature", c, re.I)]
    A = A[:, predictors]
    cols = [names[i] for i in predictors]

    unique = np.unique(day)
    perm = np.random.default_rng(seed).permutation(unique.shape[0])
    n_pub = max(1, int(round(public_fraction * unique.shape[0])))
    n_test = max(1, int(round(test_fraction * unique.shape[0])))
    split = np.empty(unique.shape[0], dtype=np.int8)
    split[perm[:n_pub]] = 0
    split[perm[n_pub:n_pub + n_test]] = 2
    split[perm[n_pub + n_test:]] = 1
    which = split[np.searchsorted(unique, day)]
    pub = which == 0
    if not pub.any() or not (which == 1).any() or not (which == 2).any():
        raise ValueError(f"{owner}: the files span too few dates ({unique.shape[0]}) for "
                         f"public, training and test splits.")
    P = A[pub]
    missing = np.mean(~np.isfinite(P), axis=0)
    # P has rows (pub.any()); with no predictor columns the median is an empty array
    med = np.nanmedian(np.where(np.isfinite(P), P, np.nan), axis=0)
    ok = (missing <= max_missing) & np.isfinite(med)
    P = np.where(np.isfinite(P), P, med)
    scale = P.std(axis=0)
    ok &= scale > 0
    A = A[:, ok]
    med, scale = med[ok], scale[ok]
    cols = [c for c, k in zip(cols, ok) if k]
    A = np.where(np.isfinite(A), A, med)
    A = (A - med) / scale
    offset = float(np.median(y[pub]))
    y = y - offset
    return KelmarshData(A[which == 1], y[which == 1], A[which == 2], y[which == 2], A[pub],
                        y[pub], tuple(cols), offset, tuple(str(f) for f in files))
