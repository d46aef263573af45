"""Audit mechanisms that arrive as code, not as a matrix.

* :mod:`designer.audit.sources` — reports from a Python sampler, a command line or a file;
* :mod:`designer.audit.lines` — lines of text read as their bytes, or by a declared parser;
* :mod:`designer.audit.reports` — report arrays (kinds kept apart) and how batches and inputs are joined;
* :mod:`designer.audit.usercode` — user code named ``module:function``, called with one-line errors;
* :mod:`designer.audit.worker` — a Python sampler run in a child process, stopped at its time limit;
* :mod:`designer.audit.collect` — drawing them within a budget (checked up front);
* :mod:`designer.audit.run` — one audit of a drawing source: the state probe, then the main tests;
* :mod:`designer.audit.probe` — the state probe (pairs of calls on random inputs, tests of independence);
* :mod:`designer.audit.timing` — a time budget for the whole audit (the analysis time measured);
* :mod:`designer.audit.adaptive` — a pilot on every input, a narrowing round, the rest on the suspicious pairs;
* :mod:`designer.audit.sequential` — early stopping at pre-registered looks (alpha spending);
* :mod:`designer.audit.events` — distinguishing events chosen on a training split;
* :mod:`designer.audit.features` and :mod:`designer.audit.attacks` — learned attacks (classifiers
  over features of any report shape, thresholded as in DP-Sniper);
* :mod:`designer.audit.statistics` — Clopper–Pearson bounds, p-values, Holm/Bonferroni;
* :mod:`designer.audit.verdict` — ``violated`` / ``no violation found`` against a declared E, and the
  empirical E matrix (simultaneous lower bounds on every pair's privacy loss);
* :mod:`designer.audit.power` — the smallest excess over E the budget detects, per pair;
* :mod:`designer.audit.plot` — the empirical E matrix beside the declared one;
* :mod:`designer.audit.loop` — channel estimate, fit to a declared matrix, exact certificate;
* :mod:`designer.audit.libraries` — samplers for pure-ldp and multi-freq-ldpy clients.
"""

from designer.audit.collect import Budget, collect_reports
from designer.audit.loop import close_loop, estimate_channel, goodness_of_fit, output_counts
from designer.audit.sources import CommandSampler, PythonSampler, ReportFile
from designer.audit.usercode import parse_arguments
from designer.audit.verdict import AuditResult, PairResult, audit_reports

__all__ = [
    "AuditResult",
    "Budget",
    "CommandSampler",
    "PairResult",
    "PythonSampler",
    "ReportFile",
    "audit_reports",
    "close_loop",
    "collect_reports",
    "estimate_channel",
    "goodness_of_fit",
    "output_counts",
    "parse_arguments",
]
