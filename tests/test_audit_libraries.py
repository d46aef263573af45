"""Audits of real LDP library clients (pure-ldp, multi-freq-ldpy) at eps = 1 (k = 8 for the full audits of
every protocol, 13 for SUE and 16 for OUE; k = 16 elsewhere), and of the pre-1.2.0 pure-ldp OUE bug rebuilt
as a fixture."""

import hashlib
import random
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from designer.audit import Budget, PythonSampler, audit_reports, collect_reports, verdict
from designer.audit.libraries import local_hashing_support
from designer.spec import PrivacyMatrix

K = 16
#: The domain of the full audit of each protocol (honest at eps, violated at 0.8 eps): 8 inputs test the same
#: per-pair power as 16 at half the reports (benchmarks/bench_audit_clients.py audits every client at k = 16).
#: Unary encodings need more: at k = 8 a bit vector has only 256 values and the audit adds the output space.
#: SUE takes 13 (8,192 vectors, about 7,000 distinct in the 32,768 reports the event space probes, above its
#: 4,096: coordinates, as at 16; passes on seeds 0-5 for both libraries). OUE keeps 16: at 13 one of nine seeds
#: of multi-freq-ldpy's client overestimated the witness's log-ratio (1.27), none did at 16.
AUDITED_K = {"OUE": 16, "SUE": 13}
FIXTURE = Path(__file__).parent / "fixtures" / "audit" / "pre_fix_oue.py"
#: Reports per input: enough for the power statement of the best-powered pair to be below 0.3.
BUDGETS = {"DE": 25000, "GRR": 25000, "HE": 20000, "HR": 20000, "OUE": 12000, "SUE": 10000, "OLH": 10000}


@pytest.fixture(scope="module", autouse=True)
def warm_libraries():
    """Import both libraries and compile multi-freq-ldpy's numba clients once, in this process: every
    sampler's worker is forked from it (:mod:`designer.audit.worker`) and inherits them, instead of
    importing (0.8 s) and compiling (about 1.7 s a client) again in each worker. The clients are
    called, not built and kept (pure-ldp's are built in the worker as before), and the global
    generators they draw from are put back, so every test draws the same reports as without it."""
    import pure_ldp.frequency_oracles  # noqa: F401

    from designer.audit.libraries import MULTI_FREQ_LDPY_PROTOCOLS, multi_freq_ldpy

    python_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        for protocol in MULTI_FREQ_LDPY_PROTOCOLS:
            multi_freq_ldpy(0, 1, np.random.default_rng(0), protocol, 1.0, 8)
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)


@contextmanager
def one_event_space():
    """Audits of the same reports with the same seed build one event space, fitted once, encode each
    split once and choose each pair's event once.

    The event space (the fixed events and the learned attacks, about half of an audit's CPU) depends on the
    training split and the seed, not on E: an audit of the same reports with the same ``rng`` against
    another E would fit the very same classifiers again, encode (score) the same splits again and choose
    the same event for every pair again (from the same encoded training reports and error; a quarter of
    the CPU of a unary encoding's audit). The first audit builds the space; each later one is given it,
    after checking that its training split is the one the space was built on, the encoding the space made
    of equal reports before and the event it chose before from the same arguments."""
    build, built = verdict.event_space, {}

    def shared(train, *arguments, **options):
        if not built:
            built["train"], built["space"] = train, build(train, *arguments, **options)
            built["space"].encode = remembered(built["space"].encode)
            built["space"].select = remembered_events(built["space"].select)
        assert train.keys() == built["train"].keys()
        assert all(np.array_equal(train[x], built["train"][x]) for x in train)
        return built["space"]

    with mock.patch.object(verdict, "event_space", shared):
        yield


def remembered(encode: Callable[[np.ndarray], object]) -> Callable[[np.ndarray], object]:
    """``encode``, answered once per content of a numeric report array (another array of the same reports
    gets the same encoding)."""
    encodings = {}

    def once(reports: np.ndarray) -> object:
        assert reports.dtype.kind in "iuf"  # numbers: their bytes are the reports
        key = (reports.dtype.str, reports.shape, hashlib.blake2b(np.ascontiguousarray(reports)).digest())
        if key not in encodings:
            encodings[key] = encode(reports)
        return encodings[key]

    return once


def remembered_events(select: Callable[..., object]) -> Callable[..., object]:
    """``select``, answered once per pair and arguments. The encoded training reports it is given are
    :func:`remembered`'s, one object per content (kept alive there), so they are told apart by identity."""
    events = {}

    def once(x, x_prime, train_x, train_other, *rest):
        key = (x, x_prime, id(train_x), id(train_other), *rest)
        if key not in events:
            events[key] = select(x, x_prime, train_x, train_other, *rest)
        return events[key]

    return once


def audit_both(library: str, protocol: str, seed: int = 0):
    """Draw once, audit against eps = 1 (honest) and eps = 0.8 (too strict), on one event space."""
    k = AUDITED_K.get(protocol, 8)
    arguments = {"protocol": protocol, "eps": 1, "k": k}
    with PythonSampler(f"designer.audit.libraries:{library}", arguments) as source:
        reports = collect_reports(source, k, Budget(BUDGETS[protocol]), np.random.default_rng(seed))
    support = local_hashing_support if protocol == "OLH" else None
    with one_event_space():
        return [
            audit_reports(reports, PrivacyMatrix.classic(k, eps), max_pairs=2, rng=seed + 1, support=support,
                          support_arguments=arguments)
            for eps in (1.0, 0.8)
        ]


def check(honest, strict, space: str):
    assert honest.verdict == "no violation found"
    assert 0.75 < honest.best.lower_bound <= 1.0  # tight at eps: the witness gets close to E
    assert strict.verdict == "violated"
    # the power statement, per pair: the best-powered tested pair detects 0.3 over E at this budget
    assert min(pair.detectable_excess for pair in honest.pairs) < 0.3
    assert honest.event_space == strict.event_space == space + "+learned"
    witness = strict.violations[0]
    assert witness.log_ratio == pytest.approx(1.0, abs=0.12)  # every one of these protocols is exactly 1-LDP


PURE_LDP = [("DE", "outputs"), ("OUE", "coordinates"), ("SUE", "coordinates"), ("HE", "coordinates"),
            ("HR", "outputs"), ("OLH", "support")]
MULTI_FREQ_LDPY = [("GRR", "outputs"), ("OUE", "coordinates"), ("SUE", "coordinates"), ("HE", "coordinates"),
                   ("OLH", "support")]


@pytest.mark.slow
@pytest.mark.parametrize("protocol,space", PURE_LDP)
def test_pure_ldp_clients(protocol, space):
    check(*audit_both("pure_ldp", protocol), space)


@pytest.mark.slow
@pytest.mark.parametrize("protocol,space", MULTI_FREQ_LDPY)
def test_multi_freq_ldpy_clients(protocol, space):
    check(*audit_both("multi_freq_ldpy", protocol), space)


def test_unary_encoding_witness_is_the_two_bits():
    """OUE's witness among the fixed events: bit x set and bit x' clear, ratio (1 - q) / q = e^eps exactly."""
    with PythonSampler("designer.audit.libraries:multi_freq_ldpy", {"protocol": "OUE", "eps": 1, "k": 6}) as source:
        reports = collect_reports(source, 6, Budget(6000), np.random.default_rng(1))
    result = audit_reports(reports, PrivacyMatrix.classic(6, 0.7), rng=2, attacks=())
    assert result.violated
    pair = result.violations[0]
    assert pair.event == f"(report[{min(pair.x, pair.x_prime)}] = {int(pair.x < pair.x_prime)} and " \
        f"report[{max(pair.x, pair.x_prime)}] = {int(pair.x > pair.x_prime)})"


def test_pre_fix_pure_ldp_oue_is_caught_and_the_fix_passes():
    """pure-ldp issue #11: before 1.2.0 OUE kept bit x at 1 with probability p + (1 - p) q; log-ratio 1.55 > 1."""
    q = 1 / (np.e + 1)
    high = 0.5 + 0.5 * q
    expected = np.log(high * (1 - q) / (q * (1 - high) * (1 - q)) * (1 - q))
    assert expected == pytest.approx(1.552, abs=1e-3)
    privacy = PrivacyMatrix.classic(K, 1.0)
    results = {}
    for name, expected_verdict in (("sampler", "violated"), ("fixed_sampler", "no violation found")):
        with PythonSampler(f"{FIXTURE}:{name}", {"eps": 1.0, "k": K}) as source:
            reports = collect_reports(source, K, Budget(4000), np.random.default_rng(7))
        results[name] = audit_reports(reports, privacy, rng=8, attacks=("logistic",))
        assert results[name].verdict == expected_verdict
    assert results["fixed_sampler"].best.log_ratio < 1.15
    buggy = results["sampler"]  # the buggy client's audit (drawn and audited with the same seeds as before)
    assert buggy.violations[0].log_ratio == pytest.approx(expected, abs=0.15)
    assert buggy.violations[0].lower_bound > 1.0


@pytest.mark.slow
def test_multi_freq_ldpy_subset_selection_leaks_through_the_order():
    """A finding: multi-freq-ldpy's SS client puts the true value first when it keeps it, so the
    report's first entry is x with probability p_v against (1 - p_v)/(k - 1) under x' (log 2.6 at eps = 1, k = 16),
    and "x' in a later position" is impossible under x' but not under x: the loss is unbounded, and the audit's
    bound grows with the reports (2.6-3.0 at 1,500 per input, 3.97 at 3,000)."""
    with PythonSampler("designer.audit.libraries:multi_freq_ldpy", {"protocol": "SS", "eps": 1, "k": K}) as source:
        reports = collect_reports(source, K, Budget(1500), np.random.default_rng(3))  # bound 2.6-3.0 on 10 seeds
    result = audit_reports(reports, PrivacyMatrix.classic(K, 1.0), rng=4)
    sub_k = int(max(1, np.rint(K / (np.e + 1))))
    keep = sub_k * np.e / (sub_k * np.e + K - sub_k)
    assert np.log(keep * (K - 1) / (1 - keep)) == pytest.approx(2.61, abs=0.01)
    assert result.violated and result.best.lower_bound > 1.5  # far above E = 1


def test_pre_fix_sue_is_caught_at_small_eps():
    """The same bug in SUE at eps = 0.1 (where the audits of Arcolezi & Gambs show it): bit x is 1 with
    probability p + (1 - p) q = 0.750 instead of p = 0.5125, a log-ratio of 1.149 on "bit x set, bit x' clear"
    against a claimed 0.1."""
    eps, p = 0.1, np.exp(0.05) / (np.exp(0.05) + 1)
    kept = p + (1 - p) ** 2
    loss = np.log(kept * p / ((1 - p) * (1 - kept)))
    assert loss == pytest.approx(1.1494, abs=1e-4)
    with PythonSampler(f"{FIXTURE}:sampler", {"eps": eps, "k": K, "optimal": False}) as source:
        reports = collect_reports(source, K, Budget(3000), np.random.default_rng(11))
    result = audit_reports(reports, PrivacyMatrix.classic(K, eps), rng=12, attacks=())
    assert result.violated
    assert eps < result.violations[0].lower_bound < loss


def test_library_reports_are_compact_arrays():
    """Bit vectors come back one byte a coordinate, hashed pairs as int64 rows, values unchanged."""
    rng = np.random.default_rng(5)
    with PythonSampler("designer.audit.libraries:pure_ldp", {"protocol": "OUE", "eps": 1, "k": K}) as source:
        bits = source.draw(3, 500, rng)
    assert bits.dtype == np.int8 and bits.shape == (500, K) and set(np.unique(bits)) <= {0, 1}
    # OUE at eps = 1: bit 3 is set with p = 1/2, every other bit with q = 1/(e + 1) = 0.269
    assert abs(bits[:, 3].mean() - 0.5) < 4 * np.sqrt(0.25 / 500)
    assert abs(np.delete(bits, 3, axis=1).mean() - 1 / (np.e + 1)) < 4 * np.sqrt(0.2 / 7500)
    with PythonSampler("designer.audit.libraries:pure_ldp", {"protocol": "OLH", "eps": 1, "k": K}) as source:
        hashed = source.draw(3, 200, rng)
    assert hashed.dtype == np.int64 and hashed.shape == (200, 2)


def test_compact_integers_keeps_the_values():
    from designer.audit.reports import compact_integers

    for values, kind in (([0, 1, 1], np.int8), ([-129, 5], np.int16), ([2**31, 0], np.int64), ([40000, 1], np.int32)):
        array = compact_integers(np.array(values, dtype=np.int64))
        assert array.dtype == kind and array.tolist() == values
    floats = np.array([0.5, 1.0])
    assert compact_integers(floats) is floats
    bits = compact_integers(np.array([[0.0, 1.0], [1.0, -0.0]]))  # multi-freq-ldpy's unary encodings
    assert bits.dtype == np.float16 and bits.tolist() == [[0, 1], [1, 0]] and np.signbit(bits[1, 1])
    for kept in (np.array([[0.5, 1.0]]), np.array([[1.0, 3000.0]]), np.array([0.0, 1.0])):  # fractions; large; scalars
        assert compact_integers(kept) is kept


def test_vectorised_xxh32_equals_the_xxhash_package():
    """xxh32_short against the xxhash C library, for the texts local hashing hashes (and longer ones)."""
    from xxhash import xxh32_intdigest

    from designer.audit.libraries import xxh32_short

    seeds = np.random.default_rng(6).integers(0, 2**63, size=3000)
    for text in (b"0", b"7", b"15", b"123", b"abcd", b"abcdefg", b"0123456789abcde"):
        expected = np.array([xxh32_intdigest(text, int(seed)) for seed in seeds])
        np.testing.assert_array_equal(xxh32_short(text, seeds), expected)
    with pytest.raises(ValueError, match="fewer than 16 bytes"):
        xxh32_short(b"0123456789abcdef", seeds)


@pytest.mark.parametrize("library,protocol", [("pure_ldp", "OLH"), ("multi_freq_ldpy", "OLH"),
                                              ("multi_freq_ldpy", "BLH")])
def test_local_hashing_support_array_and_tuples_agree(library, protocol):
    """The vectorised support on an int64 array equals the report-by-report one on tuples; the report
    supports its own input with probability p = e/(e + g - 1) (OLH, g = 4) or e/(e + 1) (BLH)."""
    arguments = {"protocol": protocol, "eps": 1, "k": K}
    with PythonSampler(f"designer.audit.libraries:{library}", arguments) as source:
        reports = source.draw(5, 4000, np.random.default_rng(8))
    as_tuples = [tuple(report) for report in reports.tolist()]
    for z in (0, 5, 15):
        np.testing.assert_array_equal(local_hashing_support(reports, z, **arguments),
                                      local_hashing_support(as_tuples, z, **arguments))
    g = 2 if protocol == "BLH" else 4
    p = np.e / (np.e + g - 1)
    assert abs(local_hashing_support(reports, 5, **arguments).mean() - p) < 4 * np.sqrt(p * (1 - p) / 4000)


def test_hadamard_response_support_is_the_high_half_of_the_channel():
    """pure-ldp's HR at eps = 1, k = 16: the channel enumerated from its client's rule (y1 uniform over
    2^b outputs, y2 = y1 with the leftmost 1-bit of z+1 flipped, y1 sent w.p. 1 - pri_para when
    parity(y1 & (z+1)) is even) is 2(1-q)/2^b on the supported outputs and 2q/2^b elsewhere; and the
    client's reports land on the supported half with probability 1 - q = e/(e + 1)."""
    from pure_ldp.frequency_oracles import HadamardResponseClient, HadamardResponseServer

    from designer.audit.libraries import hadamard_response_support

    hr = HadamardResponseClient(1.0, K, HadamardResponseServer(1.0, K).get_hash_funcs()).hr
    q, outputs = hr.pri_para, 2**hr.outbit
    assert q == pytest.approx(1 / (np.e + 1))
    y = np.arange(outputs)
    for z in range(K):
        flip = 2 ** ((z + 1).bit_length() - 1)
        even = np.array([bin(v & (z + 1)).count("1") % 2 == 0 for v in y])
        channel = np.zeros(outputs)
        np.add.at(channel, y, np.where(even, 1 - q, q) / outputs)
        np.add.at(channel, y ^ flip, np.where(even, q, 1 - q) / outputs)
        supported = hadamard_response_support(y, z, eps=1.0)
        np.testing.assert_allclose(channel[supported], 2 * (1 - q) / outputs)
        np.testing.assert_allclose(channel[~supported], 2 * q / outputs)
    with PythonSampler("designer.audit.libraries:pure_ldp", {"protocol": "HR", "eps": 1, "k": K}) as source:
        reports = source.draw(9, 4000, np.random.default_rng(10))
    share = hadamard_response_support(reports, 9).mean()
    assert abs(share - (1 - q)) < 4 * np.sqrt(q * (1 - q) / 4000)
    with pytest.raises(ValueError, match="eps <= 1 only"):
        hadamard_response_support(reports, 9, eps=2.0)
