"""Every frequency oracle, client and server, beside pure-ldp and multi-freq-ldpy in one run.

For n items drawn from a Zipf law over D symbols (D = 1,024 and 4,096 by
default) at eps = 1, each library privatizes the SAME items with its own
client (hashes and coins differ, so reports cannot be shared) and estimates
every count with its own server. For every fastldp oracle (GRR, OLH, BLH,
FLH, Hadamard response, OUE, SUE, subset selection, SHE, THE, one-time
RAPPOR, Apple's CMS and HCMS, and the adaptive choice) the script times

* the client: privatizing all n items (fastldp: one ``privatize`` call;
  pure-ldp: ``privatise`` per item; multi-freq-ldpy: its ``*_Client`` per
  item), and
* the server: from the reports to all D count estimates (fastldp: one
  ``estimate`` call, sanitization included; pure-ldp: ``aggregate`` per
  report, then ``estimate`` per symbol; multi-freq-ldpy: its
  ``*_Aggregator_MI`` on the list of reports),

and prints the ratios peer / fastldp with the max absolute error of each
library's estimate against the true counts. The peers, where they have the
protocol: pure-ldp 1.2.0 (GRR as direct encoding, OLH and BLH as local
hashing, FLH, Hadamard response, OUE and SUE as unary encoding, SHE and THE
as histogram encoding, RAPPOR, Apple's CMS and HCMS) and multi-freq-ldpy
0.2.5 (GRR, OLH and BLH, OUE and SUE, subset selection, SHE and THE, and its
adaptive ADP, which picks GRR or OUE). multi-freq-ldpy's estimates are its
matrix-inversion estimator, clipped at zero and renormalized, times the
number of reports: a consistent estimate, so its errors are not those of an
unbiased one. Every library runs at the same parameters: FLH with a pool of
``--n-hashes`` functions, RAPPOR with ``--rappor-bits`` bits,
``--rappor-hashes`` hashes and ``--rappor-cohorts`` cohorts
(``f = 2 / (1 + e^(eps / (2 h)))``), CMS and HCMS with ``--cms-rows`` x
``--cms-columns`` sketches.

Where a peer is too slow to run on all n reports (the local-hashing servers
hash all D symbols for every report in Python; the vector clients draw D
coins per report and keep a D-vector per report), both peers are timed on
the first ``--peer-olh-n`` items (OLH, BLH) or ``--peer-n`` items (OUE, SUE,
SS, THE, ADP), and the per-report part is scaled linearly to n
(pure-ldp's per-symbol estimate loop and RAPPOR's regression are not
scaled); the note column says so, and the error cell compares all three
libraries at that smaller n (it says which). SHE's peers run on all n:
their clients are already one vectorized Laplace draw per report, and n
reports of D doubles (3.3 GB at D = 4,096) do not cost what a prefix that
fits in the caches does, so a scaled prefix would flatter them. pure-ldp's
FLH server builds its hash matrix (``k x D`` xxhash calls) in its
constructor: that one-time cost is reported in a note and NOT counted as
server time, while fastldp's FLH server recomputes its pool's hashes on
every call. No library's constructor is timed.

multi-freq-ldpy compiles its clients (and IBU, and THE's threshold search)
with numba on the first call. Each of its functions is therefore called
once on one item (or two reports) before it is timed; the extra time of
that first call over a second one is the JIT time, printed apart and not
counted.

fastldp uses its default thread count (OpenMP's, here the machine's cores)
unless ``--threads`` is given; results do not depend on it. fastldp's times
are the best of ``--repeats`` calls (fewer once the calls of one step have
taken ``--budget`` seconds), each call on a freshly built oracle (built
untimed) so that nothing cached by an earlier call counts (RAPPOR keeps the
factorizations of its Gram matrices in a module-level cache shared by all its
servers: it is cleared before each of those calls); the peers' steps run once
(they take seconds). On a machine whose cores are busy with other work, two
threads can be slower than one (each parallel region waits for both
threads to be scheduled); ``--threads 1`` then measures the single-core
kernels. The header and the end print the load average.

Beside every fastldp time it prints that step's floor, the work no
implementation can skip, timed in the same run, and the ratio time / floor
(a second table): the random words the step must draw (a client's coins as
their entropy, ``H(q)`` bits a coin; a hash lane half a word; timed as
Philox4x64-10 blocks by ``philox_floor``, SHE's and THE's Laplace words by
``she_floor``) and the report bytes it writes (a plain NumPy ``fill`` of as
many bytes into a new array, its pages' first touch included: a client
returns new reports) or reads (a ``bitwise_xor.reduce`` of as many bytes
already in memory); the floor
is the larger of the two, and RAPPOR's dense decode's is also at least its
Cholesky factorization. The RAPPOR-sparse row is the same oracle decoding
with ``all_variances=False`` (conjugate gradients on the sparse design, the
same counts, no D x D factorization; its peers' cells are RAPPOR's).
The first lines say the load average (``os.getloadavg()``) and whether the
machine was busy: a busy machine's times are noisy.

It then times IBU (``fastldp.oracles.postprocess.ibu``) on GRR's counts at
the largest D (4,096 by default), and ``--peer-ibu-iter`` updates of its EM
from the uniform start beside as many of multi-freq-ldpy's (its ``IBU`` on
the dense D x D channel ``GRR_Aggregator_IBU`` builds, with ``tol = 0`` so
that it runs them all), and checks the performance targets (every hash-based server at
least 100x pure-ldp, every client at least 50x pure-ldp, no oracle slower
than multi-freq-ldpy's version of it, IBU converged in under a second):
a "targets" block says PASS or MISS for each (nothing is asserted).

Install the peers with ``pip install '.[bench-peer]'`` (pure-ldp 1.2.0 and
multi-freq-ldpy 0.2.5 with ``xxhash<4``, scikit-learn and statsmodels,
which pure-ldp imports undeclared; numba comes with multi-freq-ldpy). A
peer that is not installed is reported and its columns stay empty; a
fastldp oracle that is not available is reported and left out. The default
run takes about 8 minutes on 2 cores, most of it in the peers.

It ends with README's oracle table and the sentences below it, in the
README's words, with this run's figures: the OLH server against its floor
(the ``n * D / 8`` Philox blocks it must generate, timed by
``philox_floor``), FLH's server against OLH's and against its own floor (its
pool's ``h * D / 8`` Philox blocks), GRR's ``bincount``, RAPPOR's decode
against the floor of an exact decode at every D (the Cholesky factorization
of its ``D x D`` Gram matrix alone: LAPACK's ``dpotrf`` on that matrix, in
place, with the BLAS's own threads; the most any exact decode could gain
over pure-ldp is pure-ldp's time over that floor), SHE's client against its floor
(``she_floor``: ``n * D`` Philox words and one logarithm each) and its exact
server against a plain ``np.sum(axis=0)`` of the same reports, IBU and the targets. It times the installed fastldp (see bench/README.md for timing
a working tree).

Usage: ``python bench/oracle_compare.py [--n 100000] [--d 1024 4096]``
"""

from __future__ import annotations

import argparse
import math
import os
import random
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from fastldp._kernels._hash import philox_floor

try:  # a fastldp without the SHE kernels: no SHE floor line
    from fastldp._kernels._encoding import she_floor
except ImportError:  # pragma: no cover
    she_floor = None
from fastldp._kernels._openmp import max_threads
import fastldp.oracles as fo

# The oracles in table order: README's name -> the class in fastldp.oracles.
ORACLES = {
    "GRR": "GRR", "OLH": "OLH", "BLH": "BLH", "FLH": "FLH", "HR": "HadamardResponse",
    "OUE": "OUE", "SUE": "SUE", "SS": "SubsetSelection", "SHE": "SHE", "THE": "THE",
    "RAPPOR": "RAPPOR", "RAPPOR-sparse": "RAPPOR", "CMS": "CMS", "HCMS": "HCMS",
    "ADP": "AdaptiveOracle",
}
# rows that time another decode of a row above: its peers' results are that row's
SAME_PEERS = {"RAPPOR-sparse": "RAPPOR"}
# servers that hash the domain (the first target); the peers' versions hash it per report
HASH_BASED = ("OLH", "BLH", "FLH", "RAPPOR", "RAPPOR-sparse", "CMS", "HCMS")
# peers timed on --peer-olh-n items (their servers hash D symbols per report in Python)
HASH_PREFIX = ("OLH", "BLH")
# peers timed on --peer-n items (a D-vector per report)
VECTOR_PREFIX = ("OUE", "SUE", "SS", "THE", "ADP")
# the performance targets, stated for a quiet machine
HASH_SERVER_TARGET = 100.0
CLIENT_TARGET = 50.0
PEER_TARGET = 1.0
IBU_TARGET = 1.0
PEERS = ("pure-ldp", "multi-freq-ldpy")


# ------------------------------------------------------------------ formatting
def short(seconds):
    """Two significant digits, as README writes times: ``57 ms``, ``0.14 ms``, ``0.49 s``."""
    value, unit = (seconds, "s") if seconds >= 0.1 else (seconds * 1e3, "ms")
    if value >= 100 or value <= 0:
        return f"{value:.0f} {unit}"
    digits = max(0, 1 - int(np.floor(np.log10(float(f"{value:.2g}")))))  # 0.0099.. -> 0.010
    return f"{value:.{digits}f} {unit}"


def times(ratio):
    """A speed-up as README writes it: ``389x``, ``2.4x``, ``0.62x``."""
    if ratio >= 9.95:
        return f"{ratio:,.0f}x"
    return f"{ratio:.1f}x" if ratio >= 0.995 else f"{ratio:.2f}x"


def load_average():
    try:
        return os.getloadavg()
    except OSError:  # pragma: no cover - no load average on this platform
        return (float("nan"),) * 3


# ------------------------------------------------------------------ fastldp side
def best_of(fn, repeats, budget=float("inf")):
    """Best wall time of ``fn()`` over ``repeats`` calls (fewer once ``budget`` s are spent)."""
    best, spent, out = float("inf"), 0.0, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        t = time.perf_counter() - t0
        best, spent = min(best, t), spent + t
        if spent > budget:
            break
    return best, out


def best_fresh(make, call, repeats, budget):
    """Best time of ``call(oracle)``, each call on a fresh ``make()`` built untimed."""
    best, spent, out = float("inf"), 0.0, None
    for _ in range(repeats):
        oracle = make()
        t0 = time.perf_counter()
        out = call(oracle)
        t = time.perf_counter() - t0
        best, spent = min(best, t), spent + t
        if spent > budget:
            break
    return best, out


def max_err(est, truth):
    return float(np.abs(np.asarray(est, dtype=np.float64) - truth).max())


@dataclass
class Ours:
    client: float
    server: float
    error: float  # at all n
    errors_at: dict  # m -> max abs error of the estimate from the first m reports
    sd: Optional[float]
    chose: str = ""
    again: Optional[float] = None  # a second decode on the same oracle, when much faster


def run_ours(make, items, truth, prefixes, repeats, budget, caches=False):
    """fastldp: client and server times on all items, errors at n and at each prefix m."""
    t_client, reports = best_fresh(
        make, lambda o: o.privatize(items, rng=np.random.default_rng(1)), repeats, budget)
    t_server, est = best_fresh(make, lambda o: o.estimate(reports), repeats, budget)
    oracle = make()
    oracle.estimate(reports)
    t_again, _ = best_of(lambda: oracle.estimate(reports), 3)  # what a server keeps between calls
    errors_at = {}
    for m in prefixes:
        if m < items.shape[0]:
            truth_m = np.bincount(items[:m], minlength=truth.shape[0])
            errors_at[m] = max_err(oracle.estimate(reports[:m]).counts, truth_m)
    sd = None if est.variances is None else float(np.sqrt(np.max(est.variances)))
    chose = getattr(oracle, "chosen", "") or ""
    # worth a note only for a server that keeps work between calls (RAPPOR's factorizations)
    # and when far below a fresh server's decode; elsewhere a gap is the machine's noise
    again = (t_again if caches and t_again < 0.25 * t_server and t_server - t_again > 0.005
             else None)
    return Ours(t_client, t_server, max_err(est.counts, truth), errors_at, sd,
                chose.upper(), again), reports


# ------------------------------------------------------------------ the peers
@dataclass
class Peer:
    """One peer's protocol: a client per item, an untimed server constructor, the
    per-report aggregation (scaled when run on a prefix) and the estimate of all D
    counts (not scaled)."""

    client: Callable[[int], Any]
    make_server: Callable[[], Any]
    aggregate: Callable[[Any, list], None]
    finish: Callable[[Any, int], np.ndarray]
    jit: tuple = ()  # names of the numba-compiled functions its first calls compile
    note: str = ""   # what it does differently (shown in the note column)
    setup_note: str = ""  # a constructor's cost worth saying (never counted)


@dataclass
class PeerResult:
    client: float
    server: float
    error: float
    m: int
    note: str = ""
    jit: dict = field(default_factory=dict)


def pure_ldp_peers(d, eps, args):
    """pure-ldp 1.2.0's version of each oracle (items are 1-based there)."""
    from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
    from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
    from pure_ldp.frequency_oracles.hadamard_response import (
        HadamardResponseClient, HadamardResponseServer,
    )
    from pure_ldp.frequency_oracles.histogram_encoding import HEClient, HEServer
    from pure_ldp.frequency_oracles.local_hashing import (
        FastLHClient, FastLHServer, LHClient, LHServer,
    )
    from pure_ldp.frequency_oracles.rappor import RAPPORClient, RAPPORServer
    from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

    def aggregate(server, reports):
        for r in reports:
            server.aggregate(r)

    def finish(server, m):
        return np.array([server.estimate(x + 1, suppress_warnings=True) for x in range(d)])

    def peer(client, make_server, **kw):
        return Peer(lambda x: client.privatise(x + 1), make_server, aggregate, finish, **kw)

    def flh():
        t0 = time.perf_counter()
        server = FastLHServer(eps, d, args.n_hashes, use_olh=True)
        built = time.perf_counter() - t0
        return peer(FastLHClient(eps, d, args.n_hashes, use_olh=True), lambda: server,
                    setup_note=f"pure-ldp's hash matrix ({short(built)}) not counted")

    def hr():
        server = HadamardResponseServer(eps, d)
        return peer(HadamardResponseClient(eps, d, server.get_hash_funcs()), lambda: server)

    def rappor():
        h = args.rappor_hashes
        f = 2.0 / (1.0 + math.exp(eps / (2 * h)))  # eps = 2 h ln((1 - f/2) / (f/2))
        server = RAPPORServer(f, args.rappor_bits, h, d, num_of_cohorts=args.rappor_cohorts)
        client = RAPPORClient(f, args.rappor_bits, server.get_hash_funcs(),
                              num_of_cohorts=args.rappor_cohorts)
        return peer(client, lambda: server,
                    note="pure-ldp: Lasso, then ridge" if d > 1000 else "")

    class CMSServerNumpy2(CMSServer):
        # pure-ldp's CMSServer gives its base class d = None, whose np.zeros(None) numpy 2
        # refuses; a sketch never reads d, so it sees 0 instead
        @property
        def d(self):
            return getattr(self, "_d", None) or 0

        @d.setter
        def d(self, value):
            self._d = value

    def cms(hadamard):
        server = CMSServerNumpy2(eps, args.cms_rows, args.cms_columns, is_hadamard=hadamard)
        client = CMSClient(eps, server.get_hash_funcs(), args.cms_columns, is_hadamard=hadamard)
        return peer(client, lambda: server)

    return {
        "GRR": lambda: peer(DEClient(eps, d), lambda: DEServer(eps, d)),
        "OLH": lambda: peer(LHClient(eps, d, use_olh=True),
                            lambda: LHServer(eps, d, use_olh=True)),
        "BLH": lambda: peer(LHClient(eps, d, g=2, use_olh=False),
                            lambda: LHServer(eps, d, g=2, use_olh=False)),
        "FLH": flh,
        "HR": hr,
        "OUE": lambda: peer(UEClient(eps, d, use_oue=True), lambda: UEServer(eps, d, use_oue=True)),
        "SUE": lambda: peer(UEClient(eps, d, use_oue=False),
                            lambda: UEServer(eps, d, use_oue=False)),
        "SHE": lambda: peer(HEClient(eps, d), lambda: HEServer(eps, d, use_the=False)),
        "THE": lambda: peer(HEClient(eps, d), lambda: HEServer(eps, d, use_the=True)),
        "RAPPOR": rappor,
        "CMS": lambda: cms(False),
        "HCMS": lambda: cms(True),
    }


def multi_freq_ldpy_peers(d, eps, args):
    """multi-freq-ldpy 0.2.5's version of each oracle (0-based items; MI estimator)."""
    from multi_freq_ldpy.pure_frequency_oracles.ADP import ADP_Aggregator_MI, ADP_Client
    from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI, GRR_Client
    from multi_freq_ldpy.pure_frequency_oracles.HE import HE_Aggregator_MI, HE_Client
    from multi_freq_ldpy.pure_frequency_oracles.LH import LH_Aggregator_MI, LH_Client
    from multi_freq_ldpy.pure_frequency_oracles.SS import SS_Aggregator_MI, SS_Client
    from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_MI, UE_Client

    k = int(d)  # its functions insist on a Python int

    def peer(client, aggregator, jit, note=""):
        def aggregate(server, reports):
            server["frequencies"] = aggregator(reports)

        return Peer(client, dict, aggregate, lambda server, m: server["frequencies"] * m,
                    jit=jit, note=note)

    def adp_choice():
        # ADP's own rule (Variance_PURE on GRR's and OUE's p, q): the smaller variance
        p_grr = math.exp(eps) / (math.exp(eps) + k - 1)
        q_grr = (1 - p_grr) / (k - 1)
        q_ue = 1 / (math.exp(eps) + 1)
        var = lambda p, q: q * (1 - q) / (p - q) ** 2
        return "GRR" if var(p_grr, q_grr) <= var(0.5, q_ue) else "OUE"

    return {
        "GRR": lambda: peer(lambda x: GRR_Client(x, k, eps),
                            lambda r: GRR_Aggregator_MI(r, k, eps), ("GRR_Client",)),
        "OLH": lambda: peer(lambda x: LH_Client(x, k, eps, True),
                            lambda r: LH_Aggregator_MI(r, k, eps, True), ("GRR_Client",)),
        "BLH": lambda: peer(lambda x: LH_Client(x, k, eps, False),
                            lambda r: LH_Aggregator_MI(r, k, eps, False), ("GRR_Client",)),
        "OUE": lambda: peer(lambda x: UE_Client(x, k, eps, True),
                            lambda r: UE_Aggregator_MI(r, eps, True), ("UE_Client",)),
        "SUE": lambda: peer(lambda x: UE_Client(x, k, eps, False),
                            lambda r: UE_Aggregator_MI(r, eps, False), ("UE_Client",)),
        "SS": lambda: peer(lambda x: SS_Client(x, k, eps),
                           lambda r: SS_Aggregator_MI(r, k, eps), ("SS_Client",)),
        "SHE": lambda: peer(lambda x: HE_Client(x, k, eps),
                            lambda r: HE_Aggregator_MI(r, k, eps, use_thresh=False),
                            ("HE_Client",)),
        "THE": lambda: peer(lambda x: HE_Client(x, k, eps),
                            lambda r: HE_Aggregator_MI(r, k, eps, use_thresh=True),
                            ("HE_Client", "find_tresh")),
        "ADP": lambda: peer(lambda x: ADP_Client(x, k, eps),
                            lambda r: ADP_Aggregator_MI(r, k, eps), ("GRR_Client", "UE_Client"),
                            note=f"multi-freq-ldpy chose {adp_choice()}"),
    }


def first_call(fn, *args):
    """The extra time of a first call over a second one (numba compiles on the first)."""
    t0 = time.perf_counter()
    fn(*args)
    t1 = time.perf_counter()
    fn(*args)
    t2 = time.perf_counter()
    return max(0.0, (t1 - t0) - (t2 - t1))


def run_peer(spec, items, n_total, warm):
    """A peer on ``items`` (maybe a prefix of the n): client, server times scaled to n."""
    m = items.shape[0]
    values = [int(x) for x in items]
    jit = {}
    if warm:  # numba: compile outside the timings
        jit["client"] = first_call(spec.client, values[0])
        few = [spec.client(v) for v in values[:2]]
        jit["server"] = first_call(lambda: spec.aggregate(spec.make_server(), list(few)))
    t0 = time.perf_counter()
    reports = [spec.client(v) for v in values]
    t_client = time.perf_counter() - t0
    server = spec.make_server()
    t0 = time.perf_counter()
    spec.aggregate(server, reports)
    t_agg = time.perf_counter() - t0
    t0 = time.perf_counter()
    est = spec.finish(server, m)
    t_fin = time.perf_counter() - t0
    truth_m = np.bincount(items, minlength=est.shape[0])
    scale = n_total / m
    return PeerResult(t_client * scale, t_agg * scale + t_fin, max_err(est, truth_m), m,
                      spec.setup_note, jit)


# ------------------------------------------------------------------ the run
def zipf_items(n, d, rng):
    w = 1.0 / np.arange(1, d + 1) ** 1.1
    return rng.choice(d, size=n, p=w / w.sum())


def peer_size(name, n, args):
    if name in HASH_PREFIX:
        return min(args.peer_olh_n, n)
    if name in VECTOR_PREFIX:
        return min(args.peer_n, n)
    return n


def floors(d, n, threads, repeats, ours, grr_reports):
    """README's sentences on the servers' floors at D = d: OLH's Philox blocks, GRR's bincount."""
    lines = []
    if "OLH" in ours:
        ids = np.arange(n, dtype=np.uint64)
        # philox_floor generates n * ceil(p / 256) blocks: p = 32 D gives OLH's n D / 8
        t_floor, _ = best_of(lambda: philox_floor(2026, ids, 32 * d, threads), repeats, 3.0)
        t_olh = ours["OLH"].server
        lines.append(f"its floor is n * D / 8 Philox blocks, {short(t_floor)} on {threads} "
                     f"threads, and it runs at about {t_olh / t_floor:.1f}x that floor")
        if "FLH" in ours:
            t_flh = ours["FLH"].server
            lines.append(f"FLH's server is {t_olh / t_flh:.0f}x our own OLH server "
                         f"({short(t_olh)} / {short(t_flh)})")

    if grr_reports is not None:
        t_count, _ = best_of(lambda: np.bincount(grr_reports, minlength=d), repeats)
        lines.append(f"A GRR server is one `bincount` ({short(t_count)}) plus the inversion")
    return lines


def she_floor_times(n, d, threads, reports, repeats):
    """SHE's floors at D = d: the client's n * D Philox words and one logarithm each
    (``she_floor``, on the benchmark's threads), and a plain ``np.sum(axis=0)`` of the
    same reports (NumPy, one thread; not exact)."""
    t_client = None
    if she_floor is not None:
        t_client, _ = best_of(lambda: she_floor(2026, 1, n, d, threads), repeats, 3.0)
    t_sum, _ = best_of(lambda: reports.sum(axis=0), repeats, 3.0)
    return t_client, t_sum


def she_line(ds, table, she_floors, threads):
    """README's sentence on SHE against its floors, per D."""
    parts = []
    for d in ds:
        if d not in she_floors or ("SHE", d) not in table:
            continue
        mine = table[("SHE", d)][0]
        t_client, t_sum = she_floors[d]
        part = f"at D = {d:,} "
        if t_client is not None:
            part += (f"the floor takes {short(t_client)} and the client {short(mine.client)} "
                     f"({mine.client / t_client:.1f}x that floor); ")
        part += (f"its exact server takes {short(mine.server)}, a plain `np.sum(axis=0)` of the "
                 f"reports {short(t_sum)} ({mine.server / t_sum:.1f}x)")
        parts.append(part)
    if not parts:
        return None
    return (f"SHE's client must draw n * D Laplace variates: its floor is n * D Philox words and "
            f"one logarithm each on {threads} threads (she_floor); " + "; ".join(parts))


# ------------------------------------------------------------------ the floors
# What no implementation of an oracle's step can skip, per report (client) or in all (server):
# the 64-bit random words (or hash lanes) its sampler or decoder draws, and the bytes of the
# reports it writes (client) or reads (server). Each is timed in this run: the words as
# Philox4x64-10 blocks (4 words, or 8 32-bit hash lanes, a block: ``philox_floor``) on the
# benchmark's threads, the bytes as a plain NumPy ``fill`` (client) or ``bitwise_xor.reduce``
# (server) of that many bytes, one thread. The floor of a step is the larger of the two (they
# could overlap, so neither sum is a lower bound); RAPPOR's dense decode adds its Cholesky
# factorization (``rappor_floor_time``).
def coin_words(coins, q):
    """The random words ``coins`` Bernoulli(q) coins need at least: their entropy, ``coins *
    H(q)`` bits (fastldp's bit-sliced comparator draws about 8 words per 64 coins)."""
    entropy = -(q * math.log2(q) + (1 - q) * math.log2(1 - q))
    return coins * entropy / 64


def client_words(k, d, eps, args, oracle):
    """The client's random words per report, and what they are."""
    if k == "ADP":
        k = {"grr": "GRR", "oue": "OUE", "ss": "SS"}.get(getattr(oracle, "chosen", ""), "GRR")
    if k in ("GRR", "HR"):
        return 1.0, "1 word"
    if k in ("OLH", "BLH"):
        return 1.5, "1 word + 1 hash lane"
    if k == "FLH":
        return 2.5, "2 words + 1 hash lane"
    if k == "OUE":
        return coin_words(d, 1 / (math.exp(eps) + 1)), "entropy of D coins"
    if k == "SUE":
        return coin_words(d, 1 / (math.exp(eps / 2) + 1)), "entropy of D coins"
    if k == "SS":
        from fastldp.oracles.subset import optimal_subset_size

        w = int(np.asarray(optimal_subset_size(d, np.array([eps])))[0])
        return float(w), f"{w} words (the subset)"
    if k == "SHE":
        return float(d), "D Laplace words (she_floor: a log each)"
    if k == "THE":  # its client draws the thresholded bits directly: coins, not Laplace words
        from fastldp.oracles.histogram_encoding import optimal_threshold, the_probabilities

        _, q = the_probabilities(eps, optimal_threshold(eps))
        return coin_words(d, float(np.asarray(q))), "entropy of D coins"
    if k.startswith("RAPPOR"):
        q = 1 / (1 + math.exp(eps / (2 * args.rappor_hashes)))
        return (coin_words(args.rappor_bits, q) + args.rappor_hashes / 2,
                "entropy of k coins + h hash lanes")
    if k == "CMS":
        return (coin_words(args.cms_columns, 1 / (math.exp(eps / 2) + 1)) + 1.5,
                "entropy of m coins + 1 word + 1 hash lane")
    if k == "HCMS":
        return 2.5, "2 words + 1 hash lane"
    return 0.0, "-"


def server_words(k, d, n, args):
    """The server's random words (hash lanes count half a word) in all, and what they are."""
    if k in ("OLH", "BLH"):
        return n * d / 2, "n D hash lanes"
    if k == "FLH":
        return args.n_hashes * d / 2, "h D hash lanes (its pool)"
    if k.startswith("RAPPOR"):
        return (args.rappor_cohorts * args.rappor_hashes * d / 2,
                "C h D hash lanes (the design)")
    if k in ("CMS", "HCMS"):
        return args.cms_rows * d / 2, "k D hash lanes"
    return 0.0, "-"


def words_time(words, threads, repeats):
    """Philox blocks for ``words`` 64-bit words (``words / 4`` blocks), best of ``repeats``."""
    blocks = int(math.ceil(words / 4))
    if blocks == 0:
        return 0.0
    per = max(1, -(-blocks // 1_000_000))  # at most 10^6 identities, whole blocks each
    ids = np.arange(-(-blocks // per), dtype=np.uint64)
    # a few blocks take less than waking a second thread: those are timed on one
    use = threads if blocks >= 2**18 else 1
    t, _ = best_of(lambda: philox_floor(2027, ids, 256 * per, use), repeats, 3.0)
    return t


def bytes_times(nbytes, repeats):
    """A plain fill of a new array (the client's writes: a client returns new reports, so the
    first touch of their pages is part of the floor) and a read (the server's) of ``nbytes``."""
    if nbytes <= 0:
        return 0.0, 0.0
    t_write, _ = best_of(lambda: np.empty(nbytes, dtype=np.uint8).fill(2), repeats, 3.0)
    buf = np.empty(nbytes, dtype=np.uint8)
    buf.fill(1)  # the reports the server reads are in memory already
    words = buf[: nbytes - nbytes % 8].view(np.uint64)
    t_read, _ = best_of(lambda: np.bitwise_xor.reduce(words), repeats, 3.0)
    del words, buf
    return t_write, t_read


@dataclass
class Floor:
    client: float
    client_what: str
    server: float
    server_what: str


def oracle_floor(k, d, n, eps, args, threads, oracle, reports, she_client=None,
                 factorization=None):
    """The client's and server's floors of oracle ``k`` at D = ``d`` (see above)."""
    nbytes = int(np.asarray(reports).nbytes)
    t_write, t_read = bytes_times(nbytes, args.repeats)
    wc, what_c = client_words(k, d, eps, args, oracle)
    t_wc = (she_client if k == "SHE" and she_client is not None
            else words_time(n * wc, threads, args.repeats))
    ws, what_s = server_words(k, d, n, args)
    t_ws = words_time(ws, threads, args.repeats)
    size = f"{nbytes / 2**20:,.1f} MiB" if nbytes >= 2**20 else f"{nbytes / 2**10:,.0f} KiB"
    client = max((t_wc, what_c), (t_write, f"write {size}"))
    server_parts = [(t_ws, what_s), (t_read, f"read {size}")]
    if factorization is not None:
        server_parts.append((factorization, "dpotrf of G"))
    server = max(server_parts)
    return Floor(client[0], client[1], server[0], server[1])


def clear_rappor_cache():
    """Forget RAPPOR's cached designs and factorizations (a fastldp without the cache: no-op)."""
    from fastldp.oracles import rappor

    getattr(rappor, "clear_factor_cache", lambda: None)()


def rappor_floor_time(oracle, n, repeats):
    """The floor of an exact RAPPOR decode: Cholesky of its D x D Gram matrix alone.

    LAPACK's ``dpotrf`` in place on ``G`` (symmetric: its Fortran-ordered
    transpose is itself, so nothing is copied), at the cohort sizes of the
    identities ``0 .. n-1``; each call on a fresh copy made untimed.
    """
    from scipy.linalg import lapack

    sizes = np.bincount(np.arange(n) % oracle.n_cohorts, minlength=oracle.n_cohorts)
    G = oracle.gram(sizes)
    best = float("inf")
    for _ in range(max(1, min(repeats, 3))):
        work = G.copy()
        t0 = time.perf_counter()
        lapack.dpotrf(work.T, lower=1, clean=0, overwrite_a=1)
        best = min(best, time.perf_counter() - t0)
    return best


def flh_line(ds, table, flh_floor, threads):
    """README's sentence on FLH's server against its floor (its pool's Philox blocks), per D."""
    parts = [f"at D = {d:,} {short(flh_floor[d])}, its server "
             f"{times(table[('FLH', d)][0].server / flh_floor[d])} that"
             for d in ds if d in flh_floor and ("FLH", d) in table]
    if not parts:
        return None
    return (f"FLH's server must hash the D items through its pool: h * D / 8 Philox blocks on "
            f"{threads} threads, " + "; ".join(parts))


def rappor_lines(ds, table, rappor_floor):
    """README's sentence on RAPPOR's decode against the floor of an exact decode, per D."""
    parts = []
    for d in ds:
        if d not in rappor_floor or ("RAPPOR", d) not in table:
            continue
        mine, results = table[("RAPPOR", d)]
        t_floor = rappor_floor[d]
        part = (f"at D = {d:,} the factorization alone takes {short(t_floor)} and a fresh "
                f"server's decode {short(mine.server)} ({times(mine.server / t_floor)} that floor")
        if mine.again is not None:
            part += f"; {short(mine.again)} once its factorization is cached"
        part += ")"
        if "pure-ldp" in results:
            part += (f", so an exact decode can be at most {times(results['pure-ldp'].server / t_floor)} "
                     f"faster than pure-ldp's server")
        sparse = table.get(("RAPPOR-sparse", d))
        if sparse is not None:
            vs_peer = (f", {times(results['pure-ldp'].server / sparse[0].server)} pure-ldp"
                       if "pure-ldp" in results else "")
            part += (f"; the sparse decode (all_variances=False: conjugate gradients, no "
                     f"factorization, the same counts to 1e-9) takes {short(sparse[0].server)} on "
                     f"a fresh server ({times(t_floor / sparse[0].server)} faster than the "
                     f"factorization alone{vs_peer})")
        parts.append(part)
    if not parts:
        return None
    return ("RAPPOR's exact decode with every variance needs the Cholesky factorization of its "
            "D x D Gram matrix (LAPACK dpotrf, in place): " + "; ".join(parts))


def _has_ibu():
    try:
        from fastldp.oracles.postprocess import ibu  # noqa: F401
    except ImportError:
        return False
    return True


def ibu_lines(d, n, eps, threads, grr_reports, args, mfl_ok):
    """IBU on GRR's counts at D = d: fastldp's time and updates, multi-freq-ldpy's per update."""
    from fastldp.oracles.postprocess import ibu

    oracle = fo.GRR(domain_size=d, epsilon=eps, codebook_seed=2026, n_threads=threads)
    est = oracle.estimate(grr_reports)
    t_ibu, out = best_of(lambda: ibu(est, oracle=oracle), args.repeats, 3.0)
    info = out.postprocessing_info
    converged = "converged" if info["converged"] else "did not converge"
    tol = f"{info['tol']:g}"  # 1e-08: a field of its own, no number for README's figure rule
    lines = [f"IBU on GRR's counts at D = {d:,} (n = {n:,}, eps = {eps:g}) took "
             f"{short(t_ibu)} and {info['iterations']:,} EM updates ({converged}, "
             f"tol = {tol})"]
    # the same EM from the textbook uniform start, for its cost per update
    k_iter = args.peer_ibu_iter
    t_uniform, _ = best_of(lambda: ibu(est, oracle=oracle, start="uniform", tol=1e-300,
                                       max_iter=k_iter, accelerate=False), args.repeats, 3.0)
    lines.append(f"from the uniform start its EM takes {short(t_uniform / k_iter)} per update "
                 f"({k_iter:,} updates timed)")
    # the default (accelerated: projected Newton ascent) IBU from the uniform start, to its
    # certificate (issue 32: converged means within tol of the maximizer in L1)
    t_fast, fast = best_of(lambda: ibu(est, oracle=oracle, start="uniform"), args.repeats, 3.0)
    fast_info = fast.postprocessing_info
    fast_state = "converged" if fast_info["converged"] else "did not converge"
    lines.append(f"from the uniform start the accelerated IBU (projected Newton ascent, the "
                 f"default) took {short(t_fast)} and {fast_info['iterations']:,} evaluations "
                 f"({fast_state})")
    peer_line = None
    if mfl_ok:
        from multi_freq_ldpy.estimators.Histogram_estimator import IBU

        # GRR_Aggregator_IBU's own channel and statistic, then its IBU with tol = 0 so that
        # it runs exactly --peer-ibu-iter updates (its default stops on a change below 1e-12)
        p = math.exp(eps) / (math.exp(eps) + d - 1)
        q = (1 - p) / (d - 1)
        channel = np.full((d, d), q)
        np.fill_diagonal(channel, p)
        observed = np.bincount(grr_reports, minlength=d) / grr_reports.shape[0]
        small = np.full((4, 4), 0.2) + 0.2 * np.eye(4)
        jit = first_call(lambda: IBU(4, small, np.full(4, 0.25), 2, 0.0, "max_abs"))
        t0 = time.perf_counter()
        IBU(d, channel, observed, k_iter, 0.0, "max_abs")
        t_peer = time.perf_counter() - t0
        peer_line = (f"multi-freq-ldpy's IBU (GRR_Aggregator_IBU: a dense D x D channel, uniform "
                     f"start) takes {short(t_peer / k_iter)} per update ({k_iter:,} updates "
                     f"timed; it stops after up to 10,000 by default); its numba JIT "
                     f"{short(jit)}, not counted")
    return lines, peer_line, t_ibu, info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, nargs="+", default=[1024, 4096], help="domain sizes")
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--n-hashes", type=int, default=1024, help="FLH pool size (both libraries)")
    ap.add_argument("--rappor-bits", type=int, default=128, help="RAPPOR Bloom filter bits")
    ap.add_argument("--rappor-hashes", type=int, default=2, help="RAPPOR hashes per cohort")
    ap.add_argument("--rappor-cohorts", type=int, default=64, help="RAPPOR cohorts")
    ap.add_argument("--cms-rows", type=int, default=256, help="CMS/HCMS hash functions k")
    ap.add_argument("--cms-columns", type=int, default=1024, help="CMS/HCMS columns m")
    ap.add_argument("--peer-n", type=int, default=5000,
                    help="items on which the peers' OUE/SUE/SS/THE/ADP are timed (then "
                         "scaled to n)")
    ap.add_argument("--peer-olh-n", type=int, default=1000,
                    help="items on which the peers' OLH and BLH are timed (then scaled to n)")
    ap.add_argument("--peer-ibu-iter", type=int, default=100,
                    help="updates of multi-freq-ldpy's IBU that are timed")
    ap.add_argument("--repeats", type=int, default=7, help="fastldp timings: best of this many")
    ap.add_argument("--budget", type=float, default=3.0,
                    help="stop repeating a fastldp step once its calls took this many seconds")
    ap.add_argument("--only", nargs="*", default=None, help="oracle names to run (default all)")
    ap.add_argument("--threads", type=int, default=None,
                    help="fastldp threads (default: OpenMP's default, here all cores)")
    args = ap.parse_args(argv)
    n, ds, eps = args.n, sorted(set(args.d)), args.eps
    threads = max_threads() if args.threads is None else args.threads
    load_start = load_average()
    print(f"cores: {os.cpu_count()}, fastldp threads: {threads}, n = {n:,}, "
          f"D = {', '.join(f'{d:,}' for d in ds)}, eps = {eps}, FLH pool h = {args.n_hashes}, "
          f"RAPPOR {args.rappor_bits} bits x {args.rappor_hashes} hashes x "
          f"{args.rappor_cohorts} cohorts, CMS {args.cms_rows} x {args.cms_columns}")
    busy = load_start[0] > 0.5 * (os.cpu_count() or 1)
    print("load average at the start: " + " ".join(f"{x:.2f}" for x in load_start)
          + f" (os.getloadavg(), {os.cpu_count()} cores: "
          + ("BUSY, other work shares the cores and the times are noisy; rerun on a quiet "
             "machine for a final table)" if busy else "quiet)"))
    warnings.filterwarnings("ignore")  # the peers warn on small n and on every estimate

    names = [k for k in ORACLES if args.only is None or k in args.only]
    missing = [k for k in names if getattr(fo, ORACLES[k], None) is None]
    for k in missing:
        print(f"{k} ({ORACLES[k]}): not available in this fastldp")
    names = [k for k in names if k not in missing]

    peers_ok = {}
    try:
        pure_ldp_peers(64, eps, args)
        peers_ok["pure-ldp"] = True
    except ImportError as exc:  # pragma: no cover - optional peer
        print(f"pure-ldp not installed ({exc}); its columns stay empty")
        peers_ok["pure-ldp"] = False
    try:
        multi_freq_ldpy_peers(64, eps, args)
        from numba import njit

        @njit(cache=False)
        def seed_numba(s):  # numba's np.random is its own generator
            np.random.seed(s)

        seed_numba(3)
        peers_ok["multi-freq-ldpy"] = True
    except ImportError as exc:  # pragma: no cover - optional peer
        print(f"multi-freq-ldpy not installed ({exc}); its columns stay empty")
        peers_ok["multi-freq-ldpy"] = False
    random.seed(3)
    np.random.seed(3)  # pure-ldp draws from the global generators

    rows, table = [], {}  # table[(name, d)] = (Ours, {peer: PeerResult})
    floor_rows = []  # (name, D, step, fastldp, floor, what binds, ratio)
    jit_seen = {}  # numba function -> its compile time (the first call anywhere)
    floor_lines, ibu_out = [], None
    rappor_floor = {}  # D -> the Cholesky factorization of RAPPOR's Gram matrix alone
    flh_floor = {}  # D -> the Philox blocks of FLH's pool
    she_floors = {}  # D -> SHE's client floor and a plain sum of its reports
    floor_at = {}  # (name, D) -> Floor: the client's and server's floors
    for d in ds:
        rng = np.random.default_rng(d)
        items = zipf_items(n, d, rng)
        truth = np.bincount(items, minlength=d).astype(float)
        common = dict(domain_size=d, epsilon=eps, codebook_seed=2026, n_threads=threads)
        extras = {"FLH": dict(n_hashes=args.n_hashes),
                  "RAPPOR": dict(n_bits=args.rappor_bits, n_hashes=args.rappor_hashes,
                                 n_cohorts=args.rappor_cohorts),
                  "RAPPOR-sparse": dict(n_bits=args.rappor_bits, n_hashes=args.rappor_hashes,
                                        n_cohorts=args.rappor_cohorts, all_variances=False),
                  "CMS": dict(n_rows=args.cms_rows, n_columns=args.cms_columns),
                  "HCMS": dict(n_rows=args.cms_rows, n_columns=args.cms_columns)}
        peer_specs = {}
        if peers_ok["pure-ldp"]:
            peer_specs["pure-ldp"] = pure_ldp_peers(d, eps, args)
        if peers_ok["multi-freq-ldpy"]:
            peer_specs["multi-freq-ldpy"] = multi_freq_ldpy_peers(d, eps, args)
        ours_at, grr_reports = {}, None
        for k in names:
            cls = getattr(fo, ORACLES[k])
            make = lambda cls=cls, k=k: cls(**common, **extras.get(k, {}))
            if k.startswith("RAPPOR"):  # a fresh server: nothing factorized by an earlier call
                make = lambda make=make: (clear_rappor_cache(), make())[1]
            try:
                make()
            except TypeError as exc:  # its constructor changed: say so, run the others
                print(f"{k} ({ORACLES[k]}): not available with these parameters ({exc})")
                continue
            m = peer_size(k, n, args)
            mine, reports = run_ours(make, items, truth, [m], args.repeats, args.budget,
                                     caches=k.startswith("RAPPOR"))
            if k == "GRR":
                grr_reports = reports
            if k == "SHE":
                she_floors[d] = she_floor_times(n, d, threads, reports, args.repeats)
            if k == "RAPPOR":
                rappor_floor[d] = rappor_floor_time(make(), n, args.repeats)
            oracle = make()
            if k == "ADP":
                oracle.estimate(reports[:1])  # its choice
            she_client = she_floors.get(d, (None, None))[0]
            floor_at[(k, d)] = oracle_floor(
                k, d, n, eps, args, threads, oracle, reports, she_client,
                rappor_floor.get(d) if k == "RAPPOR" else None)
            del reports, oracle  # SHE's are 8 n D bytes
            ours_at[k] = mine
            results = {}
            if k in SAME_PEERS and (SAME_PEERS[k], d) in table:  # the peers ran on that row
                results = dict(table[(SAME_PEERS[k], d)][1])
            for lib in PEERS if not results else ():
                factory = peer_specs.get(lib, {}).get(SAME_PEERS.get(k, k))
                if factory is None:
                    continue
                spec = factory()
                res = run_peer(spec, items[:m], n, warm=lib == "multi-freq-ldpy")
                res.note = "; ".join(s for s in (spec.note, res.note) if s)
                for fn in spec.jit:  # a numba function compiles once in the whole run
                    if fn not in jit_seen:
                        jit_seen[fn] = res.jit.get("client" if "Client" in fn else "server", 0.0)
                results[lib] = res
            table[(k, d)] = (mine, results)
            if k == "FLH":  # its pool's hashes: h * D / 8 Philox blocks
                pool = np.arange(args.n_hashes, dtype=np.uint64)
                flh_floor[d], _ = best_of(lambda: philox_floor(2026, pool, 32 * d, threads),
                                          args.repeats, 3.0)
            fl = floor_at[(k, d)]
            print(f"  D = {d:,} {k}: fastldp client {short(mine.client)} (floor "
                  f"{short(fl.client)}, {fl.client_what}), server {short(mine.server)} (floor "
                  f"{short(fl.server)}, {fl.server_what}); " + "; ".join(
                      f"{lib} {short(r.client)} / {short(r.server)}" for lib, r in results.items()),
                  flush=True)
        if d == ds[-1]:
            floor_lines = floors(d, n, threads, args.repeats, ours_at, grr_reports)
            if grr_reports is not None and _has_ibu():
                ibu_out = ibu_lines(d, n, eps, threads, grr_reports, args,
                                    peers_ok["multi-freq-ldpy"])

    # ---------------------------------------------------------- the table rows
    def cell(res, ours_t, step):
        if res is None:
            return "-", "-"
        t = getattr(res, step)
        return short(t), times(t / ours_t)

    for k in names:
        for d in ds:
            if (k, d) not in table:  # its constructor refused this run's parameters
                continue
            mine, results = table[(k, d)]
            pure, mfl = results.get("pure-ldp"), results.get("multi-freq-ldpy")
            m = min([r.m for r in results.values()], default=n)
            scaled = f"peers at n = {m:,}, x{n / m:.0f}" if m < n else ""
            extra = [r.note for r in results.values() if r.note]
            if mine.chose:
                extra.insert(0, f"fastldp chose {mine.chose}")
            if mine.again is not None:
                extra.insert(0, f"fastldp: {short(mine.again)} on a second decode (cached)")
            errors = " / ".join(
                "-" if r is None else f"{r.error:,.0f}" for r in (pure, mfl)) + " / " + (
                f"{mine.errors_at[m]:,.0f} at n = {m:,}" if m < n else f"{mine.error:,.0f}")
            fl = floor_at[(k, d)]
            for step in ("client", "server"):
                tp, rp = cell(pure, getattr(mine, step), step)
                tm, rm = cell(mfl, getattr(mine, step), step)
                note = scaled
                if step == "server":
                    note = "; ".join(([scaled] if scaled else []) + extra)
                rows.append((k, d, step, tp, tm, short(getattr(mine, step)), rp, rm,
                             errors if step == "server" else "", note))
                t_floor, what = getattr(fl, step), getattr(fl, f"{step}_what")
                floor_rows.append((k, d, step, short(getattr(mine, step)), short(t_floor), what,
                                   times(getattr(mine, step) / t_floor) if t_floor > 0 else "-"))

    # ---------------------------------------------------------- targets
    def ratios(lib, step, which):
        out = []
        for (k, d), (mine, results) in table.items():
            if k in which and lib in results:
                out.append((getattr(results[lib], step) / getattr(mine, step), k, d, step))
        return out

    targets = []  # (label, verdict, lowest, misses, checked)

    def target(label, found, threshold):
        if not found:
            targets.append((label, "n/a", "no peer ran", [], 0))
            return
        misses = sorted(r for r in found if r[0] < threshold)
        worst = min(found)
        targets.append((label, "MISS" if misses else "PASS",
                        f"{times(worst[0])} ({worst[1]} {worst[3]}, D = {worst[2]:,})",
                        misses, len(found)))

    target(f"every hash-based server (OLH, BLH, RAPPOR, CMS, HCMS, FLH) >= "
           f"{HASH_SERVER_TARGET:.0f}x pure-ldp", ratios("pure-ldp", "server", HASH_BASED),
           HASH_SERVER_TARGET)
    target(f"every client >= {CLIENT_TARGET:.0f}x pure-ldp",
           ratios("pure-ldp", "client", names), CLIENT_TARGET)
    target("no client or server slower than multi-freq-ldpy's",
           ratios("multi-freq-ldpy", "client", names)
           + ratios("multi-freq-ldpy", "server", names), PEER_TARGET)
    ibu_label = f"IBU at D = {ds[-1]:,} converges in under {IBU_TARGET:g} s"
    if ibu_out is not None:
        _, _, t_ibu, info = ibu_out
        ok = t_ibu < IBU_TARGET and info["converged"]
        targets.append((ibu_label, "PASS" if ok else "MISS",
                        f"{short(t_ibu)}, {info['iterations']:,} EM updates"
                        + ("" if info["converged"] else ", not converged"),
                        [] if ok else [(t_ibu, "IBU", ds[-1], "")], 1))
    else:
        targets.append((ibu_label, "n/a", "fastldp.oracles.postprocess.ibu not available",
                        [], 0))

    load_end = load_average()
    print()
    print("targets (for a quiet machine; nothing is asserted):")
    for label, verdict, lowest, misses, checked in targets:
        print(f"  {verdict:<4}  {label}  (lowest: {lowest}; missed {len(misses)} of {checked})")
        for r, k, d, step in misses:
            if k != "IBU":
                print(f"          miss: {k} {step} at D = {d:,}: {times(r)}")
    if jit_seen:
        print("multi-freq-ldpy numba JIT, first calls, not counted: "
              + ", ".join(f"{fn} {short(t)}" for fn, t in jit_seen.items()))
    sds = [(k, d, table[(k, d)][0].sd) for k in names for d in ds
           if (k, d) in table and table[(k, d)][0].sd is not None]
    print("largest sd of one fastldp count at n: "
          + ", ".join(f"{k} (D = {d:,}) {v:,.0f}" for k, d, v in sds))
    print("load average at the end: " + " ".join(f"{x:.2f}" for x in load_end))

    # ---------------------------------------------------------- README lines
    print()
    print("README lines (Performance), in the README's words, from this run:")
    print(f"the one-minute load average was {load_start[0]:.1f} when the run started and "
          f"{load_end[0]:.1f} when it ended ({os.cpu_count()} cores)")
    print("| oracle | D | step | pure-ldp | multi-freq-ldpy | fastldp | vs pure-ldp "
          "| vs multi-freq-ldpy | max abs error pure-ldp / multi-freq-ldpy / fastldp | note |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k, d, step, tp, tm, tf, rp, rm, errors, note in rows:
        print(f"| {k} | {d:,} | {step} | {tp} | {tm} | {tf} | {rp} | {rm} | {errors} "
              f"| {note} |")
    print()
    print("| oracle | D | step | fastldp | floor | what binds the floor | fastldp / floor |")
    print("|---|---|---|---|---|---|---|")
    for k, d, step, tf, t_floor, what, ratio in floor_rows:
        print(f"| {k} | {d:,} | {step} | {tf} | {t_floor} | {what} | {ratio} |")
    if floor_lines:
        print(f"At D = {ds[-1]:,}: " + "; ".join(floor_lines))
    for line in (flh_line(ds, table, flh_floor, threads), rappor_lines(ds, table, rappor_floor)):
        if line:
            print(line)
    she_out = she_line(ds, table, she_floors, threads)
    if she_out:
        print(she_out)
    if ibu_out is not None:
        print("; ".join(ibu_out[0]))
        if ibu_out[1]:
            print(ibu_out[1])
    if jit_seen:
        print(f"multi-freq-ldpy's numba compilation took {short(sum(jit_seen.values()))} in all "
              f"(first calls, not counted)")
    print("| target (on a quiet machine) | this run | lowest | missed |")
    print("|---|---|---|---|")
    for label, verdict, lowest, misses, checked in targets:
        print(f"| {label} | {verdict} | {lowest} | {len(misses)} of {checked} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
