"""Robust sparse-vector mean estimation under LDP (paper 001).

Every concept of the paper, by name:

=====================  ==========================================================
module                 what it holds
=====================  ==========================================================
:mod:`.rpc`            :class:`RPC`: randomized projection with clipping and the
                       exact clipping-bias correction (Eq. (21), (87))
:mod:`.base`           :class:`SparseVectors` (key-value users in CSR form),
                       :class:`SparseMeanEstimate`, the shared report helpers
:mod:`.pckv`           PCKV-UE and PCKV-GRR (Gu et al., USENIX Security 2020)
:mod:`.privkvm`        PrivKVM (Ye et al., IEEE S&P 2019 / TDSC 2021)
:mod:`.succinct`       Succinct (Zhou et al., IEEE S&P 2022)
:mod:`.collision`      Collision (Wang et al., 2023)
:mod:`.attacks`        targeted and untargeted attacks, additive and strong models
:mod:`.datasets`       section 8.1 generators and the real-data loaders
=====================  ==========================================================

The scalar randomizers (Laplace, Piecewise, Duchi) are shared building
blocks in :mod:`fastldp.oracles`.
"""

from .attacks import (
    SparseAttackResult,
    attack_objective,
    random_legal_reports,
    replace_reports,
    sparse_targeted_attack,
    sparse_untargeted_attack,
)
from .base import SparseMeanEstimate, SparseVectors, as_sparse_vectors, round_to_signs
from .collision import Collision
from .datasets import (
    SparseVectorDataset,
    cap_items,
    frequency_vectors,
    load_amazon_ratings,
    load_clothing_fit,
    load_commerce,
    load_movielens_ratings,
    signed_vectors,
    truncated_normal_vectors,
    value_means,
)
from .pckv import PCKVGRR, PCKVUE, pckv_composed_epsilon
from .privkvm import PrivKVM, PrivKVMReports
from .rpc import RPC, RPCEstimate, clipping_alpha, min_variance_threshold
from .succinct import Succinct
from . import _channels  # noqa: F401  (registers the audit's channels of the classes above)

__all__ = [
    "RPC", "RPCEstimate", "clipping_alpha", "min_variance_threshold", "SparseVectors", "SparseMeanEstimate",
    "as_sparse_vectors", "round_to_signs", "PCKVUE", "PCKVGRR", "pckv_composed_epsilon",
    "PrivKVM", "PrivKVMReports", "Succinct", "Collision",
    "SparseAttackResult", "sparse_targeted_attack", "sparse_untargeted_attack",
    "random_legal_reports", "replace_reports", "attack_objective",
    "SparseVectorDataset", "frequency_vectors", "signed_vectors", "truncated_normal_vectors",
    "value_means", "cap_items", "load_commerce", "load_clothing_fit", "load_amazon_ratings",
    "load_movielens_ratings",
]
