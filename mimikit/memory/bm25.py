"""Okapi BM25 over passages that come and go one by one, scored from postings with numpy.

The scores are those of ``rank_bm25.BM25Okapi`` (k1 = 1.5, b = 0.75, the same arithmetic
in the same order) on the same passages, except for the idf: Lucene's
log(1 + (N - n + 0.5) / (n + 0.5)), which stays positive. Okapi's own idf is 0 or
negative for a term in half the passages or more (on a two-passage corpus a real match
would score 0), so a match could rank below nothing.

``rank_bm25`` scores a query against every passage in Python; here a query touches only
the passages that contain one of its terms, and adding or removing a passage touches only
its own terms, so that a changed file is searchable at once without recounting the corpus.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

K1 = 1.5
B = 0.75
_INITIAL_CAPACITY = 1024
_NO_POSTINGS = (np.zeros(0, dtype=np.intp), np.zeros(0))


class Bm25Index:
    """Term statistics of a changing set of passages, and BM25 scores over them.

    Passages are known by integer ids that the caller chooses (small, reused after removal).
    """

    def __init__(self) -> None:
        self._postings: dict[str, dict[int, int]] = {}  # term -> passage id -> term frequency
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # postings as arrays, cached
        self._lengths = np.zeros(_INITIAL_CAPACITY)  # passage id -> number of terms
        self._total_length = 0
        self.size = 0  # passages held, including those without a single term

    def add(self, ids: list[int], terms: list[str]) -> None:
        """Count new passages: passage ``ids[i]`` is made of the terms ``terms[i]``.

        Args:
            ids: Passage ids not held yet.
            terms: Each passage's terms in text order, repeats included, joined by spaces.
        """
        self._grow(max(ids, default=0) + 1)
        postings, stale = self._postings, self._arrays
        for passage_id, passage_terms in zip(ids, terms, strict=True):
            words = passage_terms.split()
            self._lengths[passage_id] = len(words)
            self._total_length += len(words)
            self.size += 1
            for term, frequency in Counter(words).items():
                holders = postings.get(term)
                if holders is None:
                    postings[term] = {passage_id: frequency}
                else:
                    holders[passage_id] = frequency
                if stale:
                    stale.pop(term, None)

    def remove(self, ids: list[int], terms: list[str]) -> None:
        """Forget passages added with :meth:`add` (the same ids and terms)."""
        for passage_id, passage_terms in zip(ids, terms, strict=True):
            self._total_length -= int(self._lengths[passage_id])
            self._lengths[passage_id] = 0
            self.size -= 1
            for term in set(passage_terms.split()):
                holders = self._postings.get(term)
                if holders is None:
                    continue
                holders.pop(passage_id, None)
                if not holders:
                    del self._postings[term]
                self._arrays.pop(term, None)

    def idf(self, term: str) -> float:
        """Lucene's idf of ``term`` over the passages held; 0.0 for a term none contains."""
        holders = self._postings.get(term)
        if not holders:
            return 0.0
        count = len(holders)
        return math.log(1 + (self.size - count + 0.5) / (count + 0.5))

    def scores(self, terms: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """BM25 of every passage that contains one of ``terms`` (give each term once).

        Returns:
            (passage ids, scores), ids ascending, every score > 0.
        """
        average_length = (self._total_length / self.size if self.size else 0.0) or 1.0
        totals = np.zeros(len(self._lengths))
        for term in terms:
            ids, frequencies = self._postings_arrays(term)
            if not len(ids):
                continue
            # The expression and its order are rank_bm25's, so the floats come out the same.
            lengths = self._lengths[ids]
            totals[ids] += self.idf(term) * (
                frequencies * (K1 + 1)
                / (frequencies + K1 * (1 - B + B * lengths / average_length))
            )
        found = np.flatnonzero(totals > 0)
        return found, totals[found]

    def _grow(self, size: int) -> None:
        if size > len(self._lengths):
            grown = np.zeros(max(size, 2 * len(self._lengths)))
            grown[: len(self._lengths)] = self._lengths
            self._lengths = grown

    def _postings_arrays(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The ids of the passages containing ``term`` and its frequency in each, as arrays."""
        cached = self._arrays.get(term)
        if cached is not None:
            return cached
        holders = self._postings.get(term)
        if not holders:
            return _NO_POSTINGS
        arrays = (
            np.fromiter(holders.keys(), dtype=np.intp, count=len(holders)),
            np.fromiter(holders.values(), dtype=float, count=len(holders)),
        )
        self._arrays[term] = arrays
        return arrays
