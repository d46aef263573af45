"""Samplers for the real clients of two LDP libraries, ready to audit.

Each function has the sampler signature ``(x, n, rng, **arguments)`` of
:class:`~designer.audit.sources.PythonSampler`, so on the command line::

    ldp-designer audit --E E.csv --sampler designer.audit.libraries:pure_ldp \\
        --arg protocol=OUE --arg eps=1 --arg k=16 --reports-per-input 10000

* :func:`pure_ldp` — pure-ldp (Maddock): ``DE`` (GRR), ``OUE``, ``SUE``
  (``UEClient``), ``HE`` (``HEClient``, Laplace histogram), ``HR``
  (``HadamardResponseClient``), ``OLH`` (``LHClient(use_olh=True)``).
* :func:`multi_freq_ldpy` — multi-freq-ldpy (Arcolezi): ``GRR``, ``OUE``,
  ``SUE``, ``HE``, ``OLH``, ``BLH``, ``SS``.

The clients are called one user at a time, exactly as deployed; the libraries
draw from their global generators (``random``, ``numpy.random`` and numba's),
which every call seeds from ``rng`` so an audit is reproducible. Local-hashing
reports are ``(value, seed)`` pairs whose meaning needs the hash:
:func:`local_hashing_support` is their support function (``--support``);
:func:`hadamard_response_support` is that of pure-ldp's Hadamard response.
Inputs are ``0..k-1`` (pure-ldp's default index mapper subtracts 1, so its
clients receive ``x + 1``).
"""

from __future__ import annotations

import functools
import math
import random
import warnings

import numpy as np

PURE_LDP_PROTOCOLS = ("DE", "OUE", "SUE", "HE", "HR", "OLH")
MULTI_FREQ_LDPY_PROTOCOLS = ("GRR", "OUE", "SUE", "HE", "OLH", "BLH", "SS")


def pure_ldp(x: int, n: int, rng: np.random.Generator, protocol: str, eps: float, k: int) -> list:
    """``n`` reports of input ``x`` from pure-ldp's client for ``protocol`` at ``eps`` on ``k`` symbols."""
    client = _pure_ldp_client(str(protocol).upper(), float(eps), int(k))
    _seed_python_and_numpy(rng)
    with warnings.catch_warnings():  # its HR calls random.randint with a float bound (deprecated), once per user
        warnings.simplefilter("ignore", DeprecationWarning)
        return _as_array([client.privatise(x + 1) for _ in range(n)])


def multi_freq_ldpy(x: int, n: int, rng: np.random.Generator, protocol: str, eps: float, k: int) -> list:
    """``n`` reports of input ``x`` from multi-freq-ldpy's client for ``protocol``."""
    client = _multi_freq_ldpy_client(str(protocol).upper())
    _seed_python_and_numpy(rng)
    _seed_numba(int(rng.integers(2**32)))
    return _as_array([client(x, int(k), float(eps)) for _ in range(n)])


def _as_array(reports: list):
    """The reports as one numeric array (a bit vector: a row; a ``(value, seed)`` pair: a row of two), made
    in one step instead of report by report; the list itself when numpy cannot hold them as numbers."""
    try:
        array = np.asarray(reports)
    except (ValueError, OverflowError):
        return reports
    return array if array.dtype.kind in "iuf" else reports


def local_hashing_support(reports, z: int, protocol: str, eps: float, k: int) -> np.ndarray:
    """Which ``(value, seed)`` reports support input ``z``: ``xxh32(str(z), seed) mod g == value``.

    ``g = round(e^eps) + 1`` for OLH, 2 for BLH (both libraries hash ``str`` of the
    0-based index with xxHash32, Wang et al. 2017).
    """
    g = 2 if str(protocol).upper() == "BLH" else int(round(math.exp(float(eps)))) + 1
    array = np.asarray(reports)
    if array.dtype.kind in "iu":  # seeds in one array: hashed all at once
        pairs = array.reshape(len(array), 2)
        return xxh32_short(str(int(z)).encode(), pairs[:, 1]) % g == pairs[:, 0]
    from xxhash import xxh32_intdigest  # equals xxh32(text, seed=seed).intdigest(), without the object

    text = str(int(z))
    pairs = np.asarray(reports, dtype=object).reshape(len(reports), 2).tolist()
    return np.fromiter((xxh32_intdigest(text, int(seed)) % g == int(value) for value, seed in pairs), dtype=bool,
                       count=len(pairs))


def hadamard_response_support(reports, z: int, protocol: str = "HR", eps: float = 1.0, k: int = 0) -> np.ndarray:
    """Which outputs of pure-ldp's Hadamard response (eps <= 1) support input ``z``: ``popcount(y & (z+1))`` even.

    Its client (``Hadamard_Rand_high_priv``) draws ``y1`` uniformly, flips the
    leftmost 1-bit of ``z + 1`` to get ``y2`` and sends ``y1`` with probability
    ``1 - q`` (``q = 1/(e^eps + 1)``) when the Hadamard entry ``H[z+1, y1]`` is +1
    (``y1 & (z+1)`` has even parity), else ``y2``. An output with even parity is
    therefore sent with probability ``2(1 - q)/2^b``, an odd one with ``2q/2^b``:
    the supported half. The event "supports x, not x'" has ratio ``(1-q)/q = e^eps``,
    the pair's whole privacy loss.
    """
    if float(eps) > 1:
        raise ValueError("pure-ldp's Hadamard response uses another scheme above eps = 1 (a permuted general "
                         "response); this support holds for eps <= 1 only")
    masked = np.asarray(reports).astype(np.int64).reshape(-1) & (int(z) + 1)
    parity = np.zeros(masked.shape, dtype=np.int64)
    while np.any(masked):
        parity ^= masked & 1
        masked >>= 1
    return parity == 0


#: xxHash32's primes (Collet, xxHash specification, section "XXH32 algorithm description").
_PRIME32 = tuple(np.uint32(prime) for prime in (2654435761, 2246822519, 3266489917, 668265263, 374761393))


def xxh32_short(data: bytes, seeds: np.ndarray) -> np.ndarray:
    """xxHash32 of ``data`` (fewer than 16 bytes) under every seed, vectorised over the seeds.

    Equals ``xxhash.xxh32_intdigest(data, seed)`` (the seed taken modulo 2^32, as
    the xxhash package does): accumulator ``seed + PRIME5 + len``, the 4-byte
    words then the single bytes mixed in, and the final avalanche (xxHash
    specification, steps 1, 4, 5 and 6 of XXH32 for inputs under 16 bytes).
    """
    if len(data) >= 16:
        raise ValueError("xxh32_short hashes fewer than 16 bytes")
    prime1, prime2, prime3, prime4, prime5 = _PRIME32
    with np.errstate(over="ignore"):
        hashed = (np.asarray(seeds).astype(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        hashed = hashed + prime5 + np.uint32(len(data))
        words = len(data) // 4
        for i in range(words):
            hashed = hashed + np.uint32(int.from_bytes(data[4 * i:4 * i + 4], "little")) * prime3
            hashed = _rotate_left(hashed, 17) * prime4
        for byte in data[4 * words:]:
            hashed = hashed + np.uint32(byte) * prime5
            hashed = _rotate_left(hashed, 11) * prime1
        hashed ^= hashed >> np.uint32(15)
        hashed = hashed * prime2
        hashed ^= hashed >> np.uint32(13)
        hashed = hashed * prime3
        hashed ^= hashed >> np.uint32(16)
    return hashed.astype(np.int64)


def _rotate_left(values: np.ndarray, bits: int) -> np.ndarray:
    return (values << np.uint32(bits)) | (values >> np.uint32(32 - bits))


@functools.lru_cache(maxsize=32)
def _pure_ldp_client(protocol: str, eps: float, k: int):
    from pure_ldp.frequency_oracles import (
        DEClient,
        HadamardResponseClient,
        HadamardResponseServer,
        HEClient,
        LHClient,
        UEClient,
    )

    if protocol == "DE":
        return DEClient(epsilon=eps, d=k)
    if protocol in ("OUE", "SUE"):
        return UEClient(epsilon=eps, d=k, use_oue=protocol == "OUE")
    if protocol == "HE":
        return HEClient(epsilon=eps, d=k)
    if protocol == "HR":
        server = HadamardResponseServer(eps, k)
        return HadamardResponseClient(eps, k, server.get_hash_funcs())
    if protocol == "OLH":
        return LHClient(epsilon=eps, d=k, use_olh=True)
    raise ValueError(f"pure-ldp protocol {protocol!r} unknown; choose one of {', '.join(PURE_LDP_PROTOCOLS)}")


def _multi_freq_ldpy_client(protocol: str):
    from multi_freq_ldpy.pure_frequency_oracles import GRR, HE, LH, SS, UE

    clients = {
        "GRR": GRR.GRR_Client,
        "OUE": functools.partial(UE.UE_Client, optimal=True),
        "SUE": functools.partial(UE.UE_Client, optimal=False),
        "HE": HE.HE_Client,
        "OLH": functools.partial(LH.LH_Client, optimal=True),
        "BLH": functools.partial(LH.LH_Client, optimal=False),
        "SS": SS.SS_Client,
    }
    if protocol not in clients:
        raise ValueError(
            f"multi-freq-ldpy protocol {protocol!r} unknown; choose one of {', '.join(MULTI_FREQ_LDPY_PROTOCOLS)}"
        )
    return clients[protocol]


def _seed_python_and_numpy(rng: np.random.Generator) -> None:
    random.seed(int(rng.integers(2**63)))
    np.random.seed(int(rng.integers(2**32)))


@functools.cache
def _numba_seeder():
    import numba

    @numba.njit(cache=False)
    def seed(value):
        np.random.seed(value)

    return seed


def _seed_numba(value: int) -> None:
    _numba_seeder()(value)
