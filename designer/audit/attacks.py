"""Learned attacks: classifiers whose scores become threshold events (DP-Sniper's construction).

DP-Sniper (Bichsel et al., IEEE S&P 2021) trains a classifier to tell the
outputs of x from those of x' and tests the event "the classifier's score is
above a threshold". With equal numbers of reports per input, a classifier's
estimate of ``log P(x | y) - log P(x' | y)`` estimates the likelihood ratio
``log P(y | x) / P(y | x')``, the Neyman–Pearson statistic, so its upper
level sets are the most telling events.

Here one multiclass classifier per model is fitted on the *first half* of every
input's training reports (features from :class:`~designer.audit.features.FeatureMap`):

* ``logistic`` — multinomial logistic regression (scikit-learn), on
  standardised features;
* ``boosted`` — gradient-boosted trees (scikit-learn's
  ``HistGradientBoostingClassifier``), which learn thresholds and
  interactions a linear model cannot.

For a pair ``(x, x')`` the score of a report is the difference of its two class
scores (``decision_function``). On the *second half* of the training reports
the scores are cut into :data:`SCORE_BINS` quantile bins and
:func:`~designer.audit.events.best_cell_set` keeps the bins from the highest
score down — the event ``score >= t`` — with the threshold ``t`` that
maximises the predicted bound, predicted honestly on a part the choice did not
see. The event is then tested
on the fresh split like any other (:mod:`designer.audit.verdict`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from designer.audit.events import CellMap, Event, EventSpace, best_cell_set
from designer.audit.features import FeatureMap
from designer.defaults import AUDIT_BOOSTED_LIMIT

#: Score bins of a pair's learned score (quantiles of the pair's selection reports).
SCORE_BINS = 32
#: Reports per input the classifiers are fitted on, at most (the first half of training, subsampled).
FIT_PER_INPUT = {"logistic": 3000, "boosted": 600}
#: The boosted attack is in the default set when the audit has at most this many reports in all
#: (scoring every report through its trees is the slowest step of an audit).
BOOSTED_LIMIT = AUDIT_BOOSTED_LIMIT
#: Reports scored at a time (features are built per chunk and dropped).
SCORE_CHUNK = 65_536
#: Fewer training reports per input than this: no learned attack.
MIN_TRAINING = 40
MODELS = ("logistic", "boosted")


def make_model(name: str, seed: int):
    """The scikit-learn classifier of attack ``name``."""
    if name == "logistic":
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=300))
    if name == "boosted":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(max_iter=20, max_leaf_nodes=8, max_bins=16, learning_rate=0.3,
                                              early_stopping=False, random_state=seed)
    raise ValueError(f"unknown learned attack {name!r}; choose one of {', '.join(MODELS)}")


class LearnedReports:
    """Reports of one input and split; every model's class scores computed once, in chunks, on demand."""

    def __init__(self, reports: np.ndarray, space: "LearnedSpace"):
        self.reports = reports
        self.space = space
        self._scores: np.ndarray | None = None
        self._half: LearnedReports | None = None

    def __len__(self) -> int:
        return len(self.reports)

    def scores(self) -> np.ndarray:
        """``(models, n, classes)`` class scores (float32)."""
        if self._scores is None:
            self._scores = self.space.class_scores(self.reports)
        return self._scores

    def second_half(self) -> "LearnedReports":
        """The reports the classifiers were not fitted on."""
        if self._half is None:
            self._half = LearnedReports(self.reports[len(self.reports) // 2:], self.space)
        return self._half


class LearnedSpace(EventSpace):
    """Threshold events on the scores of classifiers fitted on half of the training split."""

    kind = "learned"

    def __init__(self, train: dict[int, np.ndarray], features: FeatureMap, models: tuple[str, ...] = MODELS,
                 seed: int = 0):
        self.features = features
        self.names = models
        rng = np.random.default_rng(seed)
        self.models = []
        began = time.perf_counter()
        made = [make_model(name, seed) for name in models]  # their imports load the libraries they run on
        self._threads = thread_pools()
        for name, model in zip(models, made):
            rows, labels = [], []
            for x, reports in train.items():
                first = reports[: len(reports) // 2]
                keep = np.sort(rng.permutation(len(first))[: FIT_PER_INPUT[name]])
                rows.append(features.transform(first[keep]))
                labels.append(np.full(len(keep), x))
            with single_thread(self._threads):
                model.fit(np.concatenate(rows), np.concatenate(labels))
            self.models.append(model)
        self.column = {int(label): index for index, label in enumerate(self.models[0].classes_)}
        #: Seconds spent fitting, and scoring (with the reports scored): what a time budget measures
        #: (:mod:`designer.audit.timing`).
        self.fit_seconds, self.score_seconds, self.scored = time.perf_counter() - began, 0.0, 0

    def encode(self, reports: np.ndarray) -> LearnedReports:
        return LearnedReports(reports, self)

    def class_scores(self, reports: np.ndarray) -> np.ndarray:
        """Every model's ``decision_function`` on the reports, :data:`SCORE_CHUNK` at a time."""
        began = time.perf_counter()
        scores = np.empty((len(self.models), len(reports), len(self.column)), dtype=np.float32)
        with single_thread(self._threads):
            self._score_into(scores, reports)
        self.score_seconds += time.perf_counter() - began
        self.scored += len(reports)
        return scores

    def _score_into(self, scores: np.ndarray, reports: np.ndarray) -> None:
        """Each model scores each distinct feature row of a chunk once (LDP reports repeat a few values)."""
        for start in range(0, len(reports), SCORE_CHUNK):
            distinct, inverse = distinct_rows(reports[start:start + SCORE_CHUNK])
            features = self.features.transform(distinct)
            for index, model in enumerate(self.models):
                values = model.decision_function(features)
                if values.ndim == 1:  # two classes: the score of the second
                    values = np.stack([-values / 2, values / 2], axis=1)
                scores[index, start:start + SCORE_CHUNK] = values[inverse]

    def pair_score(self, encoded: LearnedReports, model: int, x: int, x_prime: int) -> np.ndarray:
        """``score_x - score_x'``: the model's estimate of ``log P(y|x) / P(y|x')``."""
        scores = encoded.scores()[model]
        return scores[:, self.column[x]] - scores[:, self.column[x_prime]]

    def select(self, x, x_prime, train_x, train_other, error, test_x=None, test_other=None) -> Event:
        best = None
        for model in range(len(self.models)):
            event = self._select(model, x, x_prime, train_x.second_half(), train_other.second_half(), error,
                                 test_x, test_other)
            if best is None or event.dominates(best):
                best = event
        return best

    def _select(self, model, x, x_prime, chosen_x, chosen_other, error, test_x, test_other) -> Event:
        score_x = self.pair_score(chosen_x, model, x, x_prime)
        score_other = self.pair_score(chosen_other, model, x, x_prime)
        quantiles = np.linspace(0, 1, SCORE_BINS + 1)[1:-1]
        edges = np.unique(np.quantile(np.concatenate([score_x, score_other]), quantiles))
        name = self.names[model]

        def cells(encoded: LearnedReports) -> np.ndarray:
            return np.searchsorted(edges, self.pair_score(encoded, model, x, x_prime), side="right")

        n_cells = edges.size + 1
        chosen, predicted, held_out = best_cell_set(np.searchsorted(edges, score_x, side="right"),
                                          np.searchsorted(edges, score_other, side="right"), n_cells, error,
                                          test_x, test_other, order=np.arange(n_cells)[::-1])
        lowest = int(chosen.min()) if chosen.size else n_cells
        threshold = "-inf" if lowest == 0 else f"{edges[lowest - 1]:.4g}"
        summary = f"{name} score log P({x}|y)/P({x_prime}|y) >= {threshold}"
        return Event(CellMap(cells, n_cells, lambda cell: summary), chosen, predicted, held_out, attack=name,
                     summary=summary)


def distinct_rows(reports: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct reports (rows of a 2-D array) and, per report, the index of its distinct row.

    Rows are compared by their bytes (a void view sorts far faster than ``np.unique(axis=0)``);
    object arrays (text reports) are returned as they are, with the identity index.
    """
    if reports.dtype == object or reports.ndim > 2 or len(reports) == 0:
        return reports, np.arange(len(reports))
    rows = np.ascontiguousarray(reports).reshape(len(reports), -1)
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return reports[first], inverse.ravel()


def default_attacks(total_reports: int) -> tuple[str, ...]:
    """Both models, or only the logistic one beyond :data:`BOOSTED_LIMIT` reports."""
    return MODELS if total_reports <= BOOSTED_LIMIT else ("logistic",)


def thread_pools():
    """A :class:`threadpoolctl.ThreadpoolController` of the BLAS and OpenMP libraries loaded now.

    Making one lists the process's loaded libraries (on Linux it reads ``/proc/self/maps``: 2.5 to 5 ms in a
    process that has loaded scikit-learn, scipy and more); a learned space makes one, after its models'
    imports, and limits through it at each fit and scoring (``threadpool_limits`` made one per call: 10 to
    35 calls an audit, 6.5 CPU s over the audit tests)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def single_thread(pools=None):
    """Run scikit-learn's BLAS and OpenMP on one thread (on a shared machine, many threads are far slower).

    ``pools``: the :func:`thread_pools` to limit (those loaded now when None)."""
    return (pools if pools is not None else thread_pools()).limit(limits=1)


def learned_space(train: dict[int, np.ndarray], models: tuple[str, ...] = MODELS, user: Callable | None = None,
                  user_arguments: dict | None = None, seed: int = 0) -> LearnedSpace | None:
    """The learned attacks for these training reports (None when an input has too few reports)."""
    if not models or len(train) < 2 or min(len(reports) for reports in train.values()) < MIN_TRAINING:
        return None
    return LearnedSpace(train, FeatureMap(list(train.values()), user, user_arguments), models, seed)
