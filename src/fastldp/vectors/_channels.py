"""The audit's channels of the sparse-vector mechanisms (RPC and the baselines).

Each mechanism on a tiny domain: the finite channels (RPC and Succinct over
Duchi, PCKV-UE / -GRR, PrivKVM's first round and all its rounds, Collision)
with their exact laws (:mod:`._laws`) and samplers, and the continuous ones
(RPC and Succinct over Laplace or Piecewise) with draws under the two inputs
aligned with an identity's public signs, ``u = +R`` against ``-R``. Their
negative controls are the law faults :mod:`fastldp.audit` plants in every
channel (built at :data:`~fastldp.channels.LAW_FACTOR` times the claim; for
PrivKVM's round-1 channel, times its round budget). The classes answer
``channels(epsilon)`` with what is registered here
(:func:`fastldp.channels.channels_of`).
"""

from __future__ import annotations

import numpy as np

from ..channels import Channel, channels_of, row_tuples
from . import _laws as laws
from .collision import Collision
from .pckv import PCKVGRR, PCKVUE, pckv_composed_epsilon
from .privkvm import PrivKVM
from .rpc import RPC
from .succinct import Succinct

__all__ = ["KV_D", "KV_M", "PRIVKVM_ROUNDS"]

#: dimension and set size of the sparse-vector audits (PCKV-GRR uses m = 1, see below)
KV_D, KV_M = 3, 2
#: PrivKVM's rounds in the audit
PRIVKVM_ROUNDS = 3


# ----------------------------------------------------------------- RPC
def _rpc(randomizer, d=3, m=2):
    def build(eps):
        return RPC(d=d, m=m, epsilon=eps, randomizer=randomizer, codebook_seed=20240613,
                   n_threads=1)
    return build


def _rpc_sample(mech, eps, xs, ids, gen):
    return mech.privatize(np.stack(xs), identities=ids, rng=gen)


def _rpc_draw(mech, eps, side, size, gen):
    """Each identity gets the input aligned with its public signs: ``u = +R`` (side 0) or ``-R``."""
    ids = np.arange(size, dtype=np.uint64)
    x = np.zeros((size, mech.d))
    x[:, : mech.m] = mech.sign_vectors(ids, np.arange(mech.m))
    return mech.privatize(x if side == 0 else -x, identities=ids, rng=gen)


@channels_of(RPC)
def _rpc_channels(epsilon):
    return [
        Channel("rpc-duchi", "RPC report, Duchi route, d=3, m=2, all 19 ternary inputs", epsilon,
                _rpc("duchi"), law=lambda mech, eps, ids: laws.rpc_law(mech, ids),
                sample=_rpc_sample, keyed=True),
        Channel("rpc-laplace", "RPC report, Laplace, u = +R vs -R", epsilon, _rpc("laplace", 6, 4),
                kind="empirical", draw=_rpc_draw),
        Channel("rpc-piecewise", "RPC report, Piecewise, u = +R vs -R", epsilon,
                _rpc("piecewise", 6, 4), kind="empirical", draw=_rpc_draw),
    ]


# ----------------------------------------------------------------- PCKV
def _pckv(cls, m):
    def build(eps):
        return cls(d=KV_D, m=m, epsilon=eps)
    return build


def _pckv_describe(mech):
    return (f"split (eps1, eps2) = ({mech.eps1:.6g}, {mech.eps2:.6g}), composed "
            f"max(eps2, eps1 + ln(2/(1+e^-eps2))) = "
            f"{pckv_composed_epsilon(mech.eps1, mech.eps2):.6g}")


def _kv_sample(mech, eps, xs, ids, gen):
    return row_tuples(mech.privatize(laws.kv_csr(xs, mech.d), rng=gen))


@channels_of(PCKVUE)
def _pckv_ue_channels(epsilon):
    return [Channel("pckv-ue", f"PCKV-UE, d={KV_D}, m=l={KV_M}, values {{-1,0,1}}, all "
                    f"3^{KV_D + KV_M} reports; claim: the composed eps of the split", epsilon,
                    _pckv(PCKVUE, KV_M),
                    law=lambda mech, eps, ids: laws.pckv_ue_law(mech.d, mech.ell, mech.eps1,
                                                                mech.eps2, m=mech.m),
                    sample=_kv_sample, describe=_pckv_describe)]


@channels_of(PCKVGRR)
def _pckv_grr_channels(epsilon):
    return [Channel("pckv-grr", f"PCKV-GRR, d={KV_D}, m=l=1 (l=2 dilutes the ratio to 0.62 eps), "
                    "values {-1,0,1}; claim: the composed eps of the split", epsilon,
                    _pckv(PCKVGRR, 1),
                    law=lambda mech, eps, ids: laws.pckv_grr_law(mech.d, mech.ell, mech.eps1,
                                                                 mech.eps2, m=mech.m),
                    sample=_kv_sample, describe=_pckv_describe)]


# ----------------------------------------------------------------- PrivKVM
def _round_share(c):
    """Round 1's share of PrivKVM's total budget: ``eps/2 + eps/(2c)``."""
    return 0.5 + 0.5 / c


def _privkvm(total):
    """``build(eps)``: PrivKVM whose round-1 channel spends ``eps`` (or whose total is ``eps``)."""
    def build(eps):
        c = PRIVKVM_ROUNDS
        return PrivKVM(d=KV_D, m=KV_M, epsilon=eps if total else eps / _round_share(c), n_rounds=c)
    return build


def _privkvm_sample(mech, eps, xs, ids, gen):
    rep = mech.privatize(laws.kv_csr(xs, mech.d), rng=gen)
    return row_tuples(np.stack([rep.keys, rep.key_bits, rep.values[:, 0]], axis=1))


@channels_of(PrivKVM)
def _privkvm_channels(epsilon):
    c = PRIVKVM_ROUNDS
    share = _round_share(c)
    return [
        Channel("privkvm", f"PrivKVM round 1 of c={c} (key, key bit, value bit 1) at its budget "
                f"eps/2 + eps/(2c) = {share:.4g} x the total eps; d={KV_D}, m={KV_M}",
                share * epsilon, _privkvm(False),
                law=lambda mech, eps, ids: laws.privkvm_round_law(mech.d, mech.m, mech.epsilon,
                                                                  mech.n_rounds),
                sample=_privkvm_sample,
                describe=lambda mech: (f"total eps {mech.epsilon:.6g}: key eps/2 = "
                                       f"{mech.eps_key:.6g}, value eps/(2c) = "
                                       f"{mech.eps_value:.6g} per round")),
        Channel("privkvm-rounds", f"PrivKVM all c={c} rounds at the total eps, for each public "
                f"fake-value trajectory in {{-1,0,1}}^{c}; exact law only", epsilon,
                _privkvm(True),
                law=lambda mech, eps, ids: laws.privkvm_law(mech.d, mech.m, mech.epsilon,
                                                            mech.n_rounds,
                                                            laws.fake_grid(mech.n_rounds)),
                sample=None),
    ]


# ----------------------------------------------------------------- Collision
def _collision(eps):
    return Collision(d=KV_D, m=KV_M, epsilon=eps, values="signed", codebook_seed=20240615,
                     n_threads=1)


def _keyed_kv_sample(mech, eps, xs, ids, gen):
    return mech.privatize(laws.kv_csr(xs, mech.d), identities=ids, rng=gen).tolist()


@channels_of(Collision)
def _collision_channels(epsilon):
    return [Channel("collision", f"Collision, signed, d={KV_D}, m={KV_M}, t = round(m e^eps + "
                    "2m - 1), values {-1,0,1}, per-identity public hash", epsilon, _collision,
                    law=lambda mech, eps, ids: laws.collision_law(mech, ids),
                    sample=_keyed_kv_sample, keyed=True,
                    describe=lambda mech: f"t = {mech.t}, Omega = {mech.omega:.6g}")]


# ----------------------------------------------------------------- Succinct
def _succinct(randomizer, b):
    def build(eps):
        return Succinct(d=KV_D, m=KV_M, epsilon=eps, b=b, R=1.0, randomizer=randomizer,
                        codebook_seed=20240616, n_threads=1)
    return build


def _succinct_sample(mech, eps, xs, ids, gen):
    y = mech.privatize(np.stack(xs), identities=ids, rng=gen)
    mag = mech.R * mech.randomizer.C
    if not np.all(np.abs(y) == mag):
        bad = y[np.abs(y) != mag][0]
        raise AssertionError(f"succinct: the sampler released {bad!r}, not +-R C = +-{mag!r}")
    return row_tuples(np.sign(y).astype(np.int64))


def _succinct_draw(mech, eps, side, size, gen):
    """``b = 1``: each identity's first ``m`` coordinates carry its public signs, so
    ``B = +-m``, clipped to ``u = +-1``."""
    ids = np.arange(size, dtype=np.uint64)
    x = np.zeros((size, mech.d))
    for j in range(mech.m):
        x[:, j] = mech.signs(ids, np.full(size, j))
    return mech.privatize(x if side == 0 else -x, identities=ids, rng=gen)[:, 0]


@channels_of(Succinct)
def _succinct_channels(epsilon):
    return [
        Channel("succinct-duchi", f"Succinct, Duchi at eps/b, d={KV_D}, m={KV_M}, b=2, R=1, all "
                "19 ternary inputs", epsilon, _succinct("duchi", 2),
                law=lambda mech, eps, ids: laws.succinct_duchi_law(mech, ids),
                sample=_succinct_sample, keyed=True),
        Channel("succinct-laplace", "Succinct, Laplace, b=1, R=1, u = +1 vs -1 (B = +-m clipped)",
                epsilon, _succinct("laplace", 1), kind="empirical", draw=_succinct_draw),
        Channel("succinct-piecewise", "Succinct, Piecewise, b=1, R=1, u = +1 vs -1 (B = +-m "
                "clipped)", epsilon, _succinct("piecewise", 1), kind="empirical",
                draw=_succinct_draw),
    ]
