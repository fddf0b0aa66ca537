"""Held out: pages numbered from 1, on sizes the public tests do not use.

Judged out of process (docs/EVALS.md): ``candidate`` reaches the final tree's code in
another process; only plain values come back."""

import unittest

from sandbox_supervisor.remote import candidate

paginator = candidate.module("paginator")


class HeldOutPaginatorTest(unittest.TestCase):
    def setUp(self) -> None:
        self.paginator = paginator.Paginator(list(range(1, 26)), per_page=10)

    def test_first_page_starts_at_first_item(self) -> None:
        self.assertEqual(candidate.list(self.paginator.page(1).items), list(range(1, 11)))

    def test_last_page_is_partial(self) -> None:
        page = self.paginator.page(3)
        self.assertEqual(candidate.list(page.items), [21, 22, 23, 24, 25])
        self.assertIs(page.has_next, False)
        self.assertIs(page.has_previous, True)

    def test_every_item_once(self) -> None:
        seen = [item for n in range(1, 4) for item in candidate.list(self.paginator.page(n).items)]
        self.assertEqual(seen, list(range(1, 26)))

    def test_one_per_page(self) -> None:
        pages = paginator.Paginator("abc", per_page=1)
        self.assertEqual(candidate.list(pages.page(2).items), ["b"])

    def test_out_of_range(self) -> None:
        with candidate.raises("PageNotFound"):
            self.paginator.page(4)
