"""evaluate: measure the context that reaches the LLM against relevance judgements
(SPEC sections 4 and 5), for every query at once, as Polars plans.

Where each part of SPEC sections 4 and 5 lives:

===========================  ============================================================
judgement and run files:     :mod:`._files` (a file, glob, folder or ``-``; tables,
tables, TREC, BEIR           TREC and BEIR files, told apart and read one way)
ids as written, how they     :mod:`._ids`
meet
qrels, grades to gains,      :mod:`._qrels` (:func:`read_qrels`)
repeated judgements
runs: document ranking       :mod:`._runs` (:func:`document_ranking`)
(ties)
run files in and out         :mod:`._runfiles` (:func:`read_run`, :func:`write_run`)
list metrics                 :mod:`._lists` (nDCG@k, recall@k, P@k, hit@k, MAP, MRR)
each metric's direction      :mod:`._metrics`
context metrics              :mod:`._context` (recall, nDCG, characters, shares,
                             duplicates, first relevant block)
every query accounted for,   :mod:`._evaluate` (:func:`evaluate`, :func:`summarize`)
means over judged queries
sweep: shared steps          :mod:`._sweep` (:func:`sweep`; which step reads which
                             parameter), :mod:`._result` (:class:`SweepResult`),
                             :mod:`._columns` (its summary's columns, what the finding
                             and the tables read of it)
experiment: chunk, retrieve, :mod:`._experiment` (:func:`experiment`), :mod:`._grid`
post-process, evaluate       (which stage reads which grid parameter)
intervals, paired tests,     :mod:`._stats` (bootstrap, randomization, t, Holm, Pareto)
Holm, the Pareto front
plots                        :mod:`._plots` (the ``ragframe[plot]`` extra, matplotlib;
                             also public names of :mod:`ragframe` itself, since
                             ``ragframe.evaluate`` is the function), :mod:`._labels`
the HTML report: the         :mod:`._report`, :mod:`._finding` (the finding in words,
finding in words, rounding   rounding), :mod:`._effects` (which stage moves the metric),
                             :mod:`._tables` (the tables)
a notebook's view            :mod:`._tables` (``SweepResult._repr_html_``: the finding
                             and the ranking's first rows)
===========================  ============================================================
"""

from __future__ import annotations

from ragframe.evaluate._evaluate import evaluate, summarize
from ragframe.evaluate._experiment import ExperimentResult, experiment
from ragframe.evaluate._plots import plot_budget, plot_distribution, plot_effects, plot_pareto
from ragframe.evaluate._qrels import read_qrels
from ragframe.evaluate._report import write_report
from ragframe.evaluate._result import SweepResult
from ragframe.evaluate._runfiles import read_run, write_run
from ragframe.evaluate._runs import document_ranking
from ragframe.evaluate._sweep import sweep

__all__ = [
    "ExperimentResult",
    "SweepResult",
    "document_ranking",
    "evaluate",
    "experiment",
    "plot_budget",
    "plot_distribution",
    "plot_effects",
    "plot_pareto",
    "read_qrels",
    "read_run",
    "summarize",
    "sweep",
    "write_report",
    "write_run",
]
