"""BM25 scoring for memory search: rank_bm25's Okapi model with an idf that stays positive.

The model is assembled from per-passage term counts that the index caches, instead of
recounting the whole corpus: that relies on the attribute layout of ``rank_bm25`` 0.2
(``doc_freqs``, ``doc_len``, ``avgdl``, ``corpus_size``, ``idf``), which ``get_batch_scores``
reads.
"""

from __future__ import annotations

import math

import numpy as np
from rank_bm25 import BM25Okapi


class PositiveBM25(BM25Okapi):
    """BM25Okapi with Lucene's idf, log(1 + (N - n + 0.5) / (n + 0.5)), which is always > 0.

    Okapi's own idf is 0 or negative for a term in half the passages or more (on a
    two-passage corpus a real match would score 0), so a match could rank below nothing.
    Built from cached term counts so that changing one file does not recount the corpus.
    """

    @classmethod
    def from_counts(
        cls, doc_freqs: list[dict[str, int]], doc_len: list[int], nd: dict[str, int]
    ) -> PositiveBM25:
        model = cls.__new__(cls)
        model.k1, model.b, model.epsilon, model.tokenizer = 1.5, 0.75, 0.25, None
        # An array, so get_batch_scores does not convert the whole list on every query.
        model.doc_freqs, model.doc_len = doc_freqs, np.asarray(doc_len, dtype=float)
        model.corpus_size = len(doc_freqs)
        # Passages without a single term (e.g. only punctuation) must not zero the divisor.
        model.avgdl = (float(model.doc_len.mean()) if doc_len else 0.0) or 1.0
        model._calc_idf(nd)
        return model

    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = LazyIdf(nd, self.corpus_size)


class LazyIdf:
    """Idf of a term computed when scoring asks for it: a full table would cost
    O(vocabulary) on every file update, while a query needs only a few terms."""

    def __init__(self, nd: dict[str, int], corpus_size: int) -> None:
        self._nd, self._n = nd, corpus_size

    def get(self, term: str, default: float | None = None) -> float | None:
        f = self._nd.get(term)
        if not f:
            return default
        return math.log(1 + (self._n - f + 0.5) / (f + 0.5))
