"""Held out for a summary: behaviour that must be exactly as it was (nothing changed)."""

import unittest

from slugkit import slugify


class UnchangedSlugTest(unittest.TestCase):
    def test_simple(self) -> None:
        self.assertEqual(slugify("Hello"), "hello")

    def test_accents(self) -> None:
        self.assertEqual(slugify("Crème"), "creme")

    def test_separator(self) -> None:
        self.assertEqual(slugify("a b", separator="_"), "a_b")
