"""Held out for a summary: behaviour that must be exactly as it was (nothing changed).

Judged out of process (docs/EVALS.md): ``candidate`` reaches the final tree's code in
another process; only plain values come back."""

import unittest

from sandbox_supervisor.remote import candidate

slugify = candidate.module("slugkit").slugify


class UnchangedSlugTest(unittest.TestCase):
    def test_simple(self) -> None:
        self.assertEqual(slugify("Hello"), "hello")

    def test_accents(self) -> None:
        self.assertEqual(slugify("Crème"), "creme")

    def test_separator(self) -> None:
        self.assertEqual(slugify("a b", separator="_"), "a_b")
