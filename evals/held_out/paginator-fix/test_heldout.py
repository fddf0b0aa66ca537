"""Held out: pages numbered from 1, on sizes the public tests do not use."""

import unittest

from paginator import PageNotFound, Paginator


class HeldOutPaginatorTest(unittest.TestCase):
    def setUp(self) -> None:
        self.paginator = Paginator(list(range(1, 26)), per_page=10)

    def test_first_page_starts_at_first_item(self) -> None:
        self.assertEqual(list(self.paginator.page(1).items), list(range(1, 11)))

    def test_last_page_is_partial(self) -> None:
        page = self.paginator.page(3)
        self.assertEqual(list(page.items), [21, 22, 23, 24, 25])
        self.assertFalse(page.has_next)
        self.assertTrue(page.has_previous)

    def test_every_item_once(self) -> None:
        seen = [item for n in range(1, 4) for item in self.paginator.page(n).items]
        self.assertEqual(seen, list(range(1, 26)))

    def test_one_per_page(self) -> None:
        self.assertEqual(list(Paginator("abc", per_page=1).page(2).items), ["b"])

    def test_out_of_range(self) -> None:
        with self.assertRaises(PageNotFound):
            self.paginator.page(4)
