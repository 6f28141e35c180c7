"""The sparse-vector baselines paper 001 compares RPC with, under one API.

Each class has a client (``privatize``) and a server (``estimate``, which
returns a :class:`~fastldp.mechanisms.kv_common.SparseMeanEstimate` and never
raises on malformed report contents). They live in one module each:

================  ===========================  =====================================
class             module                       paper
================  ===========================  =====================================
PCKVUE, PCKVGRR   :mod:`.kv_pckv`              Gu et al., USENIX Security 2020
PrivKVM           :mod:`.kv_privkvm`           Ye et al., IEEE S&P 2019 / TDSC 2021
Succinct          :mod:`.kv_succinct`          Zhou et al., IEEE S&P 2022
Collision         :mod:`.kv_collision`         Wang et al., 2023
================  ===========================  =====================================

Each module's docstring states the estimator as paper 001 describes it and
every place where the published description is ambiguous, with the choice
made.
"""

from .kv_collision import Collision
from .kv_common import SparseMeanEstimate, SparseVectors, as_sparse_vectors
from .kv_pckv import PCKVGRR, PCKVUE, pckv_composed_epsilon
from .kv_privkvm import PrivKVM, PrivKVMReports
from .kv_succinct import Succinct

__all__ = [
    "PCKVUE", "PCKVGRR", "PrivKVM", "PrivKVMReports", "Succinct", "Collision",
    "SparseMeanEstimate", "SparseVectors", "as_sparse_vectors", "pckv_composed_epsilon",
]
