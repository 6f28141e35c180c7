"""The compiled multi-attribute clients and servers (fastldp._kernels._multidim).

- naive twins: a plain-Python replay of ``src/multidim.h``'s draw order, fed
  the same words of each record's stream, makes the same reports as
  ``privatize`` (every protocol and report kind the kernel serves);
- the exact law of the whole report (the audit's ``ExactLaw`` of
  :mod:`fastldp.multidim._channels`) against the compiled client's report
  frequencies on the audit's tiny domain, by a chi-square test;
- one thread and two threads give identical reports and estimates;
- the one-pass servers count what the general path counts, and send a batch
  with an illegal report down the general path (repaired and counted as
  before).
"""

import numpy as np
import pytest
from scipy import stats

from fastldp._kernels import _multidim as kernel
from fastldp._random import as_generator
from fastldp.multidim import SMP, SPL, RSpFD
from fastldp.multidim import _channels

SIZES = [2, 3, 5, 8, 12]
MASK64 = (1 << 64) - 1


# ----------------------------------------------------------------- the naive twin
class Words:
    """The words of one record's stream, consumed in order (as the C code does)."""

    def __init__(self, words):
        self.words = [int(w) for w in words]
        self.used = 0

    def next(self):
        assert self.used < len(self.words), "the twin ran out of words: raise COUNT"
        w = self.words[self.used]
        self.used += 1
        return w

    def coin(self, p):
        return ((self.next() >> 11) * 2.0**-53) < p

    def bounded(self, m):
        product = self.next() * m
        lo, hi = product & MASK64, product >> 64
        if lo < m:
            t = (2**64 - m) % m
            while lo < t:
                product = self.next() * m
                lo, hi = product & MASK64, product >> 64
        return hi

    def grr(self, x, k, p):
        keep = self.coin(p)
        o = self.bounded(k - 1)
        o += o >= x
        return x if keep else o

    def lanes(self, Q, need):
        """Bernoulli(Q / 2^64) bits at the set bits of ``need``: unary.h's
        fastldp_ue_bernoulli64, stopping once the lanes of ``need`` are decided."""
        if Q == 0:
            return 0
        low = (Q & -Q).bit_length() - 1
        undecided, ones = need, 0
        for bit in range(63, low - 1, -1):
            if not undecided:
                break
            r = self.next()
            if (Q >> bit) & 1:
                ones |= undecided & ~r & MASK64
                undecided &= r
            else:
                undecided &= ~r & MASK64
        return ones


COUNT = 400  # words per record the twin may use (a unary row uses about 7 per 64 bits)


def twin_words(key, n):
    return kernel.stream_words(key[0], key[1], np.arange(n, dtype=np.uint64), COUNT)


def drawn_key(seed):
    """The key privatize draws from ``rng=seed``: the first two words of its generator."""
    key = as_generator(seed).integers(0, 2**64, size=2, dtype=np.uint64)
    return int(key[0]), int(key[1])


def set_bit(row, pos, bit):
    if bit:
        row[pos >> 3] |= 1 << (pos & 7)
    else:
        row[pos >> 3] &= ~(1 << (pos & 7)) & 0xFF


def put_lanes(row, start_byte, n_bytes, n_bits, Q, s):
    """Write the lanes of ``ceil(n_bits / 64)`` words into ``n_bytes`` bytes from ``start_byte``."""
    for w in range((n_bits + 63) // 64):
        lanes = s.lanes(Q, (1 << min(64, n_bits - 64 * w)) - 1)
        for b in range(min(8, n_bytes - 8 * w)):
            row[start_byte + 8 * w + b] = (lanes >> (8 * b)) & 0xFF


def twin_reports(mech, x, key):
    """The reports ``mech.privatize`` makes from key ``key``, one record at a time."""
    A, n = mech.n_attributes, x.shape[0]
    words = twin_words(key, n)
    pq = [mech._oracle_pq(j) for j in range(A)]
    p = [a for a, _ in pq]
    Q = int(np.ldexp(pq[0][1], 64).astype(np.uint64))
    unary = mech.unary
    dtype, shape = mech._layout()
    out = np.zeros((n, *shape), dtype=dtype)
    byte0 = np.concatenate([[0], np.cumsum(mech.n_bytes)[:-1]])
    for r in range(n):
        s = Words(words[r])
        row = [int(v) for v in x[r]]
        if isinstance(mech, SPL) and not unary:
            out[r] = [s.grr(row[j], SIZES[j], p[j]) for j in range(A)]
        elif isinstance(mech, SMP) and not unary:
            j = s.bounded(A)
            out[r] = [j, s.grr(row[j], SIZES[j], p[j])]
        elif isinstance(mech, RSpFD) and not unary:
            j_s = s.bounded(A)
            out[r] = [s.grr(row[j], SIZES[j], p[j]) if j == j_s else s.bounded(SIZES[j])
                      for j in range(A)]
        elif isinstance(mech, SMP):
            j = s.bounded(A)
            k = SIZES[j]
            b = bytearray(shape[0])
            b[0], b[1] = j & 0xFF, j >> 8
            put_lanes(b, 2, mech.n_bytes[j], k, Q, s)
            set_bit(b, 16 + row[j], s.coin(p[j]))
            out[r] = list(b)
        else:
            b = bytearray(shape[0])
            j_s = s.bounded(A) if isinstance(mech, RSpFD) else -1
            # the lanes cover the row 64 bits a word, drawn at the bits of the attributes' values
            R = shape[0]
            valid = 0
            for j in range(A):
                valid |= ((1 << SIZES[j]) - 1) << (8 * int(byte0[j]))
            for w in range((R + 7) // 8):
                lanes = s.lanes(Q, (valid >> (64 * w)) & MASK64)
                for bb in range(min(8, R - 8 * w)):
                    b[8 * w + bb] = (lanes >> (8 * bb)) & 0xFF
            for j in range(A):
                if isinstance(mech, SPL) or j == j_s:
                    v = row[j]
                elif mech.fakes[j] == "random":
                    v = s.bounded(SIZES[j])
                else:
                    continue
                set_bit(b, 8 * int(byte0[j]) + v, s.coin(p[j]))
            out[r] = list(b)
    return out


def mechanisms(sizes=SIZES, eps=1.5):
    return [SPL(domain_sizes=sizes, epsilon=eps, oracle="GRR", codebook_seed=3),
            SPL(domain_sizes=sizes, epsilon=eps, oracle="OUE", codebook_seed=3),
            SPL(domain_sizes=sizes, epsilon=eps, oracle="SUE", codebook_seed=3),
            SMP(domain_sizes=sizes, epsilon=eps, oracle="GRR", codebook_seed=3),
            SMP(domain_sizes=sizes, epsilon=eps, oracle="OUE", codebook_seed=3),
            RSpFD(domain_sizes=sizes, epsilon=eps, variant="GRR", codebook_seed=3),
            RSpFD(domain_sizes=sizes, epsilon=eps, variant="OUE-zero", codebook_seed=3),
            RSpFD(domain_sizes=sizes, epsilon=eps, variant="OUE-random", codebook_seed=3),
            RSpFD(domain_sizes=sizes, epsilon=eps, variant="SUE-random", codebook_seed=3)]


def name(mech):
    return f"{type(mech).__name__}-{mech._choice}"


@pytest.mark.parametrize("mech", mechanisms(), ids=name)
def test_privatize_is_its_naive_twin_on_the_same_words(mech):
    x = mech.example_data(300, np.random.default_rng(5))
    got = mech.privatize(x, rng=11)
    assert mech._fast_client() is not None
    np.testing.assert_array_equal(got, twin_reports(mech, x, drawn_key(11)))


def test_lemire_rejection_matches_the_twin():
    """Lemire's rejection branch, rare at small domains, at a domain where a word is rejected
    with probability 1/4: m = 3 2^61 leaves t = 2^64 mod m = 2^62."""
    k = 3 * 2**61 + 1
    m = k - 1
    assert (2**64 - m) % m == 2**62
    n, key = 400, (5, 6)
    out, first = kernel.grr_reports(*key, kernel.SPL, np.zeros((n, 1), dtype=np.int64),
                                    np.array([k], dtype=np.int64), np.array([0.0]), 1)
    assert first == -1
    words = twin_words(key, n)
    rejected = 0
    for r in range(n):
        s = Words(words[r])
        assert s.grr(0, k, 0.0) == out[r, 0]
        rejected += s.used > 2  # the coin, then more than one word for the other value
    assert rejected > 50  # about 100 expected (sd 9)


# ----------------------------------------------------------------- threads
@pytest.mark.parametrize("mech", mechanisms(), ids=name)
def test_one_and_two_threads_give_identical_reports_and_estimates(mech):
    x = mech.example_data(5_000, np.random.default_rng(6))  # more than 2 x 1024 rows: 2 ranges
    mech.n_threads = 1
    one = mech.privatize(x, rng=12)
    est_one = mech.estimate(one)
    mech.n_threads = 2
    two = mech.privatize(x, rng=12)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(est_one.counts, mech.estimate(two).counts)


# ----------------------------------------------------------------- the exact law
@pytest.mark.parametrize("mech", mechanisms(sizes=list(_channels.MULTIDIM_DOMAIN), eps=1.0),
                         ids=name)
def test_the_compiled_reports_follow_the_exact_law_of_the_whole_report(mech):
    """Per record of the audit's domain, 6,000 reports against the exact law (chi-square).

    Outputs of expected count under 5 are pooled; with 6 records x 9 protocols the
    per-test level 1e-4 keeps the family's false alarm rate under 0.6% (fixed seed).
    """
    law = _channels._law(mech, mech.epsilon, np.zeros(1, dtype=np.uint64))
    key = _channels._key(mech)
    index = {y: i for i, y in enumerate(law.outputs)}
    n = 6_000
    for r, x in enumerate(law.inputs):
        records = np.tile(np.asarray(x, dtype=np.int64), (n, 1))
        reports = mech.privatize(records, rng=100 + r)
        counts = np.zeros(len(law.outputs))
        for y in reports:
            counts[index[key(y)]] += 1
        expected = n * np.asarray(law.probs[0, r], dtype=float)
        big = expected >= 5
        obs = np.append(counts[big], counts[~big].sum())
        exp = np.append(expected[big], expected[~big].sum())
        if exp[-1] == 0:
            assert obs[-1] == 0
            obs, exp = obs[:-1], exp[:-1]
        assert stats.chisquare(obs, exp).pvalue > 1e-4, (name(mech), x)


# ----------------------------------------------------------------- servers
@pytest.mark.parametrize("mech", mechanisms(), ids=name)
def test_the_one_pass_server_counts_what_the_general_path_counts(mech):
    x = mech.example_data(3_000, np.random.default_rng(7))
    reports = mech.privatize(x, rng=13)
    arr, wrong = mech._report_rows(reports, "test")
    fast = mech._fast_hits(arr, wrong, "test")
    assert fast is not None
    ids = np.arange(arr.shape[0], dtype=np.uint64)
    clean, report = mech.sanitize(arr, wrong, ids)
    hits, about = mech._hits(clean, ids, "test")
    np.testing.assert_array_equal(fast[0], hits)
    assert list(fast[1]) == list(about)
    assert report.n_valid == arr.shape[0]
    assert mech._all_legal_report(arr.shape[0]) == report


@pytest.mark.parametrize("mech", mechanisms(), ids=name)
def test_an_illegal_report_takes_the_general_path_and_is_repaired_and_counted(mech):
    x = mech.example_data(3_000, np.random.default_rng(8))
    reports = mech.privatize(x, rng=14)
    bad = reports.copy()
    if bad.dtype == np.uint8:  # the last byte: a padding bit (or a byte after SMP's part)
        bad[17, -1] = 0xFF
    else:
        bad[17, -1] = 10**6  # a symbol out of every domain
    arr, wrong = mech._report_rows(bad, "test")
    assert mech._fast_hits(arr, wrong, "test") is None
    est = mech.estimate(bad)
    assert est.sanitization.n_valid == 3_000 - 1
    assert est.sanitization.by_reason["out_of_range"] == 1
    assert est.n == 3_000


def test_records_out_of_range_raise_naming_the_first_bad_row_on_the_compiled_path():
    mech = SPL(domain_sizes=SIZES, epsilon=1.0, oracle="GRR", codebook_seed=1)
    x = mech.example_data(4_000, np.random.default_rng(9))
    x[2_500, 3] = 8  # attribute 3 has 8 values: 8 is out
    x[3_000, 0] = -1
    for m in mechanisms():
        m.n_threads = 2
        with pytest.raises(ValueError, match=r"8 at row 2500, attribute 3 \(domain size 8\)"):
            m.privatize(x, rng=1)


def test_check_records_kernel_finds_the_first_bad_row_over_threads():
    k = np.array([2, 3], dtype=np.int64)
    x = np.zeros((10_000, 2), dtype=np.int64)
    assert kernel.check_records(x, k, 2) == -1
    x[7_000, 1] = 3
    x[9_000, 0] = 2
    assert kernel.check_records(x, k, 1) == kernel.check_records(x, k, 2) == 7_000
    x[100, 0] = -5
    assert kernel.check_records(x, k, 2) == 100


# ----------------------------------------------------------------- longitudinal L-GRR
def spl_grr(words, row, sizes, keep):
    """One record's GRR of every attribute from one stream (the words in attribute order)."""
    return [words.grr(int(v), k, p) for v, k, p in zip(row, sizes, keep)]


def lgrr_twin(mech, x, key_perm, key_inst, sampled=None, perm=None):
    """LSPL's / LSMP's L-GRR reports from the two keys: permanent GRR (unless ``perm`` is given,
    as a memo returns it), then the instantaneous GRR of the permanent response."""
    from fastldp.longitudinal import LSMP
    keep_perm, keep_inst = mech._lgrr_keep()
    sizes = mech.domain_sizes
    n = x.shape[0]
    if perm is None:
        if isinstance(mech, LSMP):  # row r's permanent GRR of its sampled attribute's value
            words = twin_words(key_perm, n)
            perm = np.array([Words(words[r]).grr(int(x[r, sampled[r]]), sizes[sampled[r]],
                                                 keep_perm[sampled[r]]) for r in range(n)])
        else:
            words = twin_words(key_perm, n)
            perm = np.array([spl_grr(Words(words[r]), x[r], sizes, keep_perm) for r in range(n)])
    words = twin_words(key_inst, n)
    if isinstance(mech, LSMP):
        out = np.array([[sampled[r], Words(words[r]).grr(int(perm[r]), sizes[sampled[r]],
                                                         keep_inst[sampled[r]])]
                        for r in range(n)])
    else:
        out = np.array([spl_grr(Words(words[r]), perm[r], sizes, keep_inst) for r in range(n)])
    return out, perm


def keys_of(seed, count):
    gen = as_generator(seed)
    return [tuple(int(v) for v in gen.integers(0, 2**64, size=2, dtype=np.uint64))
            for _ in range(count)]


def test_lspl_lgrr_is_its_naive_twin_and_keeps_its_memo():
    from fastldp.longitudinal import LSPL, MemoryMemo
    mech = LSPL(domain_sizes=SIZES, epsilon_inf=4.0, epsilon_1=2.0, oracle="LGRR",
                codebook_seed=2)
    x = mech.example_data(200, np.random.default_rng(3))
    memo = MemoryMemo()
    first = mech.privatize(x, memo=memo, rng=21)
    k_perm, k_inst = keys_of(21, 2)
    want, perm = lgrr_twin(mech, x, k_perm, k_inst)
    np.testing.assert_array_equal(first, want)
    # the next round: the memo's permanent responses, a fresh instantaneous round (one key)
    second = mech.privatize(x, memo=memo, rng=22)
    np.testing.assert_array_equal(second, lgrr_twin(mech, x, None, keys_of(22, 1)[0],
                                                     perm=perm)[0])


def test_lsmp_lgrr_is_its_naive_twin_and_keeps_its_memo():
    from fastldp.longitudinal import LSMP, MemoryMemo
    mech = LSMP(domain_sizes=SIZES, epsilon_inf=4.0, epsilon_1=2.0, oracle="LGRR",
                codebook_seed=2)
    x = mech.example_data(300, np.random.default_rng(4))
    memo = MemoryMemo()
    first = mech.privatize(x, memo=memo, rng=23)
    # the generator's draws: the sampled attributes (numpy), the permanent round's key, then
    # the instantaneous round's key
    gen = as_generator(23)
    sampled = gen.integers(0, mech.n_attributes, size=x.shape[0])
    k_perm, k_inst = (tuple(int(v) for v in gen.integers(0, 2**64, size=2, dtype=np.uint64))
                      for _ in range(2))
    want, perm = lgrr_twin(mech, x, k_perm, k_inst, sampled=sampled)
    np.testing.assert_array_equal(first, want)
    second = mech.privatize(x, memo=memo, rng=24)
    np.testing.assert_array_equal(second, lgrr_twin(mech, x, None, keys_of(24, 1)[0],
                                                     sampled=sampled, perm=perm)[0])


@pytest.mark.parametrize("cls_name", ["LSPL", "LSMP"])
def test_longitudinal_lgrr_one_and_two_threads_agree(cls_name):
    from fastldp import longitudinal
    from fastldp.longitudinal import MemoryMemo
    cls = getattr(longitudinal, cls_name)
    mech = cls(domain_sizes=SIZES, epsilon_inf=4.0, epsilon_1=2.0, oracle="LGRR",
               codebook_seed=2)
    x = mech.example_data(5_000, np.random.default_rng(5))
    runs = []
    for threads in (1, 2):
        mech.n_threads = threads
        memo = MemoryMemo()
        runs.append([mech.privatize(x, memo=memo, rng=25 + r) for r in range(2)])
        runs[-1].append(mech.estimate(runs[-1][0]).counts)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("cls_name", ["LSPL", "LSMP"])
def test_longitudinal_unary_servers_count_in_one_pass_what_the_general_path_counts(cls_name):
    """L-OSUE reports: the compiled server (uint8 rows as sent) against the general path (the
    same reports as int64, which it reads part by part), and a set padding bit repaired."""
    from fastldp import longitudinal
    cls = getattr(longitudinal, cls_name)
    mech = cls(domain_sizes=SIZES, epsilon_inf=4.0, epsilon_1=2.0, oracle="LOSUE",
               codebook_seed=2)
    reports = mech.privatize(mech.example_data(3_000, np.random.default_rng(6)), rng=31)
    fast = mech.partial(reports)
    slow = mech.partial(reports.astype(np.int64))  # another dtype: the general path
    np.testing.assert_array_equal(fast.sums["hits"].value(), slow.sums["hits"].value())
    assert {k: v for k, v in fast.counts.items()} == {k: v for k, v in slow.counts.items()}
    bad = reports.copy()
    bad[5, -1] = 0xFF  # padding bits (LSPL: of the last attribute; LSMP: after the part)
    est = mech.estimate(bad)
    assert est.sanitization.n_valid == 3_000 - 1


def ue_row_words(b, R):
    """A row of R bytes as 64-bit little-endian words."""
    return [int.from_bytes(bytes(b[8 * w:8 * w + 8]), "little") for w in range((R + 7) // 8)]


@pytest.mark.parametrize("oracle", ["LOSUE", "LSUE"])
def test_lspl_unary_is_its_naive_twin_and_keeps_its_memo(oracle):
    """Both rounds of LSPL over a unary L-protocol replayed in Python from the same words:
    the permanent round as SPL's unary client at (p1, q1), then per 64-bit word the kept set
    bits (lanes at p2) and the raised clear bits (lanes at q2); a second round reuses the
    memo's permanent rows."""
    from fastldp.longitudinal import LSPL, MemoryMemo
    mech = LSPL(domain_sizes=SIZES, epsilon_inf=4.0, epsilon_1=2.0, oracle=oracle,
                codebook_seed=2)
    p1, Q1, Qkeep, Qraise = mech._unary_kernel_params()
    x = mech.example_data(150, np.random.default_rng(7))
    n, A = x.shape
    R = int(sum(mech.n_bytes))
    byte0 = np.concatenate([[0], np.cumsum(mech.n_bytes)[:-1]])
    valid = 0
    for j in range(A):
        valid |= ((1 << SIZES[j]) - 1) << (8 * int(byte0[j]))
    W = (R + 7) // 8
    needs = [(valid >> (64 * w)) & MASK64 for w in range(W)]

    def second_round(perm, key):
        words = twin_words(key, n)
        out = np.zeros((n, R), dtype=np.uint8)
        for r in range(n):
            s = Words(words[r])
            row = bytearray()
            for w, bits in enumerate(ue_row_words(perm[r], R)):
                kept = s.lanes(Qkeep, bits & needs[w])
                raised = s.lanes(Qraise, ~bits & needs[w] & MASK64)
                row += (kept | raised).to_bytes(8, "little")
            out[r] = list(row[:R])
        return out

    memo = MemoryMemo()
    first = mech.privatize(x, memo=memo, rng=41)
    k_perm, k_inst = keys_of(41, 2)
    words = twin_words(k_perm, n)
    perm = np.zeros((n, R), dtype=np.uint8)
    for r in range(n):
        s = Words(words[r])
        row = bytearray()
        for w in range(W):
            row += s.lanes(Q1, needs[w]).to_bytes(8, "little")
        for j in range(A):
            set_bit(row, 8 * int(byte0[j]) + int(x[r, j]), s.coin(p1[j]))
        perm[r] = list(row[:R])
    np.testing.assert_array_equal(first, second_round(perm, k_inst))
    second = mech.privatize(x, memo=memo, rng=42)
    np.testing.assert_array_equal(second, second_round(perm, keys_of(42, 1)[0]))


def test_lspl_unary_one_and_two_threads_agree():
    from fastldp.longitudinal import LSPL, MemoryMemo
    mech = LSPL(domain_sizes=SIZES, epsilon_inf=4.0, epsilon_1=2.0, oracle="LOSUE",
                codebook_seed=2)
    x = mech.example_data(5_000, np.random.default_rng(8))
    runs = []
    for threads in (1, 2):
        mech.n_threads = threads
        memo = MemoryMemo()
        runs.append([mech.privatize(x, memo=memo, rng=43 + r) for r in range(2)])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def test_lsmp_unary_is_its_naive_twin_and_keeps_its_memo():
    """LSMP over L-OSUE replayed in Python: the sampled attributes (numpy), the permanent
    part of each row's attribute (lanes at its k_s bits, then its held bit at p1), then per
    word of the part the kept set bits (p2) and the raised clear bits (q2)."""
    from fastldp.longitudinal import LSMP, MemoryMemo
    mech = LSMP(domain_sizes=SIZES, epsilon_inf=4.0, epsilon_1=2.0, oracle="LOSUE",
                codebook_seed=2)
    p1, Q1, Qkeep, Qraise = mech._unary_kernel_params()
    x = mech.example_data(200, np.random.default_rng(9))
    n = x.shape[0]
    R = 2 + max(mech.n_bytes)

    def second_round(perm, sampled, key):
        words = twin_words(key, n)
        out = np.zeros((n, R), dtype=np.uint8)
        for r in range(n):
            s, j = Words(words[r]), int(sampled[r])
            k, nb = SIZES[j], mech.n_bytes[j]
            bits = int.from_bytes(bytes(perm[r, 2:2 + nb]), "little")
            need = (1 << k) - 1
            part = s.lanes(Qkeep, bits & need) | s.lanes(Qraise, ~bits & need & MASK64)
            out[r, 0], out[r, 1] = j & 0xFF, j >> 8
            out[r, 2:2 + nb] = list(part.to_bytes(8, "little")[:nb])
        return out

    memo = MemoryMemo()
    first = mech.privatize(x, memo=memo, rng=51)
    gen = as_generator(51)
    sampled = gen.integers(0, mech.n_attributes, size=n)
    k_perm, k_inst = (tuple(int(v) for v in gen.integers(0, 2**64, size=2, dtype=np.uint64))
                      for _ in range(2))
    words = twin_words(k_perm, n)
    perm = np.zeros((n, R), dtype=np.uint8)
    for r in range(n):
        s, j = Words(words[r]), int(sampled[r])
        b = bytearray(R)
        put_lanes(b, 2, mech.n_bytes[j], SIZES[j], Q1, s)
        set_bit(b, 16 + int(x[r, j]), s.coin(p1[j]))
        perm[r] = list(b)
    np.testing.assert_array_equal(first, second_round(perm, sampled, k_inst))
    second = mech.privatize(x, memo=memo, rng=52)
    np.testing.assert_array_equal(second, second_round(perm, sampled, keys_of(52, 1)[0]))


def test_lsmp_unary_one_and_two_threads_agree():
    from fastldp.longitudinal import LSMP, MemoryMemo
    mech = LSMP(domain_sizes=SIZES, epsilon_inf=4.0, epsilon_1=2.0, oracle="LOSUE",
                codebook_seed=2)
    x = mech.example_data(5_000, np.random.default_rng(10))
    runs = []
    for threads in (1, 2):
        mech.n_threads = threads
        memo = MemoryMemo()
        runs.append([mech.privatize(x, memo=memo, rng=53 + r) for r in range(2)])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
