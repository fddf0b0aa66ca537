"""Held out: touching intervals merge (the report was false), and nothing else broke.

Judged out of process (docs/EVALS.md): ``candidate`` reaches the final tree's code in
another process; only plain values come back."""

import unittest

from sandbox_supervisor.remote import candidate

intervals = candidate.module("intervals")


class HeldOutMergeTest(unittest.TestCase):
    def test_touching_intervals_merge(self) -> None:
        self.assertEqual(intervals.merge([(1, 2), (2, 3)]), [(1, 3)])

    def test_adjacent_but_apart(self) -> None:
        self.assertEqual(intervals.merge([(1, 2), (3, 4)]), [(1, 2), (3, 4)])

    def test_contained(self) -> None:
        self.assertEqual(intervals.merge([(1, 10), (2, 3)]), [(1, 10)])

    def test_reversed_interval_rejected(self) -> None:
        with candidate.raises("ValueError"):
            intervals.merge([(3, 1)])

    def test_total_length_counts_points_once(self) -> None:
        self.assertEqual(intervals.total_length([(1, 2), (2, 3), (10, 10)]), 4)
