"""Held out for a read-only review: behaviour the review must leave as it was.

Judged out of process (docs/EVALS.md): ``candidate`` reaches the final tree's code in
another process; only plain values come back."""

import unittest

from sandbox_supervisor.remote import candidate

paginator = candidate.module("paginator")


class UnchangedBehaviourTest(unittest.TestCase):
    def test_num_pages(self) -> None:
        self.assertEqual(paginator.Paginator(list(range(25)), per_page=10).num_pages, 3)
        self.assertEqual(paginator.Paginator([], per_page=10).num_pages, 1)

    def test_page_bounds(self) -> None:
        pages = paginator.Paginator(list(range(25)), per_page=10)
        for number in (0, 4):
            with candidate.raises("PageNotFound"):
                pages.page(number)

    def test_per_page_validated(self) -> None:
        with candidate.raises("ValueError"):
            paginator.Paginator([1], per_page=0)

    def test_first_page_has_no_previous(self) -> None:
        pages = paginator.Paginator(list(range(25)), per_page=10)
        self.assertIs(pages.page(1).has_previous, False)
