"""The plain BM25 every ranking figure is reported beside: one document per session (all its
messages' text), words as lower-case \\w+ runs, no stemming, no stopword list, k1 1.2, b 0.75
(Robertson's, with Lucene's idf that never goes below zero). Forty lines on purpose: it is the
baseline a reader can check by eye, not a second search engine.
"""
from __future__ import annotations

import math
import re
from collections import Counter

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class BM25:
    def __init__(self, docs: dict[str, str], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.tf = {name: Counter(words(text)) for name, text in docs.items()}
        self.len = {name: sum(c.values()) for name, c in self.tf.items()}
        self.avg = sum(self.len.values()) / max(1, len(self.len))
        df: Counter = Counter()
        for c in self.tf.values():
            df.update(c.keys())
        n = len(self.tf)
        self.idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}

    def rank(self, query: str, limit: int = 10) -> list[tuple[float, str]]:
        """(score, name) of the best `limit` documents holding a query word, best first."""
        q = set(words(query))
        scored = []
        for name, c in self.tf.items():
            norm = self.k1 * (1 - self.b + self.b * self.len[name] / self.avg)
            s = sum(self.idf[w] * c[w] * (self.k1 + 1) / (c[w] + norm) for w in q if w in c)
            if s > 0:
                scored.append((s, name))
        scored.sort(key=lambda x: (-x[0], x[1]))
        return scored[:limit]
