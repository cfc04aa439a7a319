"""Ranking metrics at cut-off k, with the trec_eval / ranx definitions.

Every function takes `gains` (the retrieved items' gains in rank order), `ideal` (the gains of
every relevant item of the collection, in any order) and `k`. An item is relevant when its gain
is > 0; R is the number of relevant items. With binary gain every relevant item has gain 1; with
graded gain only nDCG uses the grades. No relevant item, or nothing retrieved, gives 0.0.

    hit_rate  = 1 if a relevant item is in the top k, else 0
    recall    = relevant items in the top k / R
    precision = relevant items in the top k / k            (k, even if fewer were retrieved)
    mrr       = 1 / rank of the first relevant item in the top k
    ndcg      = DCG@k / IDCG@k, DCG = sum_i gain_i / log2(i + 1) over ranks i = 1..k (Järvelin &
                Kekäläinen 2002, as ranx and trec_eval), IDCG from the ideal gains sorted descending
    map       = sum over relevant ranks r <= k of precision@r, divided by R (trec_eval map_cut)
"""

from __future__ import annotations

import numpy as np


def hit_rate(gains: np.ndarray, ideal: np.ndarray, k: int) -> float:
    return float((gains[:k] > 0).any())


def recall(gains: np.ndarray, ideal: np.ndarray, k: int) -> float:
    n_relevant = int((ideal > 0).sum())
    return float((gains[:k] > 0).sum() / n_relevant) if n_relevant else 0.0


def precision(gains: np.ndarray, ideal: np.ndarray, k: int) -> float:
    return float((gains[:k] > 0).sum() / k)


def reciprocal_rank(gains: np.ndarray, ideal: np.ndarray, k: int) -> float:
    hits = np.flatnonzero(gains[:k] > 0)
    return 1.0 / (hits[0] + 1) if hits.size else 0.0


def ndcg(gains: np.ndarray, ideal: np.ndarray, k: int) -> float:
    best = np.sort(ideal)[::-1][:k]
    ideal_dcg = float((best / np.log2(np.arange(2, best.size + 2))).sum())
    top = gains[:k]
    dcg = float((top / np.log2(np.arange(2, top.size + 2))).sum())
    return dcg / ideal_dcg if ideal_dcg > 0 else 0.0


def average_precision(gains: np.ndarray, ideal: np.ndarray, k: int) -> float:
    n_relevant = int((ideal > 0).sum())
    hits = gains[:k] > 0
    if not n_relevant or not hits.any():
        return 0.0
    precision_at_hits = np.cumsum(hits)[hits] / (np.flatnonzero(hits) + 1)
    return float(precision_at_hits.sum() / n_relevant)


RANKING_METRICS = {
    "hit_rate": hit_rate,
    "recall": recall,
    "precision": precision,
    "mrr": reciprocal_rank,
    "ndcg": ndcg,
    "map": average_precision,
}
