"""Held out for a read-only review: behaviour the review must leave as it was."""

import unittest

from paginator import PageNotFound, Paginator


class UnchangedBehaviourTest(unittest.TestCase):
    def test_num_pages(self) -> None:
        self.assertEqual(Paginator(list(range(25)), per_page=10).num_pages, 3)
        self.assertEqual(Paginator([], per_page=10).num_pages, 1)

    def test_page_bounds(self) -> None:
        paginator = Paginator(list(range(25)), per_page=10)
        for number in (0, 4):
            with self.assertRaises(PageNotFound):
                paginator.page(number)

    def test_per_page_validated(self) -> None:
        with self.assertRaises(ValueError):
            Paginator([1], per_page=0)

    def test_first_page_has_no_previous(self) -> None:
        self.assertFalse(Paginator(list(range(25)), per_page=10).page(1).has_previous)
