"""Held out: touching intervals merge (the report was false), and nothing else broke."""

import unittest

from intervals import merge, total_length


class HeldOutMergeTest(unittest.TestCase):
    def test_touching_intervals_merge(self) -> None:
        self.assertEqual(merge([(1, 2), (2, 3)]), [(1, 3)])

    def test_adjacent_but_apart(self) -> None:
        self.assertEqual(merge([(1, 2), (3, 4)]), [(1, 2), (3, 4)])

    def test_contained(self) -> None:
        self.assertEqual(merge([(1, 10), (2, 3)]), [(1, 10)])

    def test_reversed_interval_rejected(self) -> None:
        with self.assertRaises(ValueError):
            merge([(3, 1)])

    def test_total_length_counts_points_once(self) -> None:
        self.assertEqual(total_length([(1, 2), (2, 3), (10, 10)]), 4)
