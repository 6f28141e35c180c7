"""Randomness hygiene: OS entropy when no seed is given, no global RNG state, and the
package's position on floating-point attacks against continuous samplers (Mironov 2012)."""

import ast
import math
from pathlib import Path

import numpy as np
import pytest

import fastldp
from fastldp import oracles
from fastldp._random import as_generator, resolve_codebook_seed
from fastldp.histograms import ShiftedLogGaussian
from fastldp.oracles import Duchi, Laplace, Piecewise
from fastldp.relations import JPRS, PaddedRelationSampling
from fastldp.vectors import RPC

PKG = Path(fastldp.__file__).resolve().parent
SETS = [np.array([[0, 1]]), np.array([[1, 2], [2, 3]])] * 32


UNSEEDED = {
    "jprs": lambda: JPRS(shape=(4, 4), k=2, s=2, codebook_seed=1).privatize(SETS, epsilons=1.0),
    "p-rs-hr": lambda: PaddedRelationSampling(shape=(4, 4), k=2, s=2, codebook_seed=1)
    .privatize(SETS, epsilons=1.0),
    "rpc": lambda: RPC(d=6, m=2, epsilon=1.0, codebook_seed=1).privatize(np.eye(6)[np.arange(64) % 6]),
    "grr": lambda: oracles.GRR(domain_size=8, epsilon=1.0).privatize(np.arange(64) % 8),
    "oue": lambda: oracles.OUE(domain_size=8, epsilon=1.0).privatize(np.arange(64) % 8),
    "laplace": lambda: Laplace(epsilon=1.0).privatize(np.zeros(64)),
    "piecewise": lambda: Piecewise(epsilon=1.0).privatize(np.zeros(64)),
    "duchi": lambda: Duchi(epsilon=1.0).privatize(np.zeros(64)),
    "histogram": lambda: ShiftedLogGaussian(r=0.5).release(np.full(64, 5)),
}


@pytest.mark.parametrize("name", list(UNSEEDED))
def test_two_unseeded_privatize_calls_differ(name):
    a, b = UNSEEDED[name](), UNSEEDED[name]()
    assert not np.array_equal(a, b)   # 64 reports: a collision has probability < 2^-20


def test_rng_none_is_a_fresh_seed_sequence_from_os_entropy():
    gens = [as_generator(None) for _ in range(3)]
    seqs = [g.bit_generator.seed_seq for g in gens]
    assert all(isinstance(s, np.random.SeedSequence) for s in seqs)
    entropies = [s.entropy for s in seqs]
    assert len(set(entropies)) == 3 and all(e > 2**64 for e in entropies)  # 128-bit OS draws
    assert all(s.spawn_key == () for s in seqs)


def test_codebook_seed_none_draws_from_seed_sequence(monkeypatch):
    calls = []
    real = np.random.SeedSequence

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(np.random, "SeedSequence", spy)
    a, b = resolve_codebook_seed(None, "t"), resolve_codebook_seed(None, "t")
    assert calls == [(), ()] and a != b


_GLOBAL_STATE = {"seed", "rand", "randn", "randint", "random", "random_sample", "choice",
                 "shuffle", "permutation", "normal", "uniform", "laplace", "binomial",
                 "get_state", "set_state", "RandomState"}


def test_no_module_uses_global_random_state():
    """No np.random.<legacy function>, no stdlib random, no time-based seeds."""
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in _GLOBAL_STATE:
                base = node.value
                if (isinstance(base, ast.Attribute) and base.attr == "random"
                        and isinstance(base.value, ast.Name) and base.value.id in ("np", "numpy")):
                    offenders.append(f"{path.name}:{node.lineno} np.random.{node.attr}")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                if "random" in names:
                    offenders.append(f"{path.name}:{node.lineno} import random")
    assert offenders == []


# ---------------------------------------------------------------- floating-point attacks
def _laplace_support_contains(y: float, scale: float) -> bool:
    """Can ``Laplace.privatize(0.0)`` return exactly ``y``?

    numpy's Generator.laplace(0, scale) is ``scale * log(2U)`` for ``U < 1/2`` (and
    ``-scale * log(2 - 2U)`` above), ``U`` a multiple of 2^-53; ``0.0 + w`` is ``w``.
    Invert the log and try the neighbouring grid points.
    """
    if y < 0:
        j = round(math.exp(y / scale) / 2 * 2**53)
        return any(scale * math.log(2 * (t / 2**53)) == y for t in range(max(j - 4, 1), j + 5))
    j = round((1 - math.exp(-y / scale) / 2) * 2**53)
    return any(-scale * math.log(2.0 - t / 2**53 - t / 2**53) == y
               for t in range(j - 4, min(j + 5, 2**53)))


def test_float_laplace_leaks_through_its_low_order_bits():
    """Mironov (2012) on the package's Laplace: outputs that input 0 can never produce.

    This documents what the package does (audit/__init__.py, "Floating-point side
    channels"): the continuous randomizers carry the guarantee of the ideal real-valued
    mechanism only. The check is exact: every output of u = 0 is found in the support,
    while most negative outputs of u = 1 are not, so they reveal u != 0 with certainty.
    """
    mech = Laplace(epsilon=1.0)
    y0 = mech.privatize(np.zeros(400), rng=11)
    assert all(_laplace_support_contains(float(v), mech.scale) for v in y0)
    y1 = mech.privatize(np.ones(4000), rng=12)
    neg = y1[y1 < -0.5][:400]
    impossible = np.mean([not _laplace_support_contains(float(v), mech.scale) for v in neg])
    assert impossible > 0.5


@pytest.mark.parametrize("u", [-1.0, -0.3, 0.0, 1e-300, 0.7, 1.0])
def test_discrete_randomizers_release_only_fixed_values(u):
    """The position's other half: Duchi (RPC's default) has two outputs, whatever the input."""
    duchi = Duchi(epsilon=1.0)
    assert set(np.unique(duchi.privatize(np.full(2000, u), rng=3))) <= {-duchi.C, duchi.C}
    rpc = RPC(d=4, m=2, epsilon=1.0, codebook_seed=2)
    x = np.zeros((200, 4))
    x[:, 0] = np.sign(u) if u else 0
    y = rpc.privatize(x, rng=4)
    assert set(np.unique(y)) <= {-rpc.R * duchi.C, rpc.R * duchi.C}
