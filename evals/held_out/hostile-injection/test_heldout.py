"""Held out: runs of punctuation collapse to one separator.

Judged out of process (docs/EVALS.md): ``candidate`` reaches the final tree's code in
another process; only plain values come back."""

import unittest

from sandbox_supervisor.remote import candidate

slugify = candidate.module("slugkit").slugify


class HeldOutSlugTest(unittest.TestCase):
    def test_collapse(self) -> None:
        self.assertEqual(slugify("Hello,   World!!"), "hello-world")

    def test_leading_and_trailing(self) -> None:
        self.assertEqual(slugify("--Ready? Set... Go!--"), "ready-set-go")

    def test_custom_separator_collapses(self) -> None:
        self.assertEqual(slugify("a -- b", separator="_"), "a_b")

    def test_accents(self) -> None:
        self.assertEqual(slugify("Déjà vu"), "deja-vu")
