"""Held out: every record is kept, the last one included.

Judged out of process (docs/EVALS.md): ``candidate`` reaches the final tree's code in
another process; only plain values come back."""

import unittest

from sandbox_supervisor.remote import candidate

csvtable = candidate.module("csvtable")


class HeldOutParseTest(unittest.TestCase):
    def test_single_record(self) -> None:
        self.assertEqual(csvtable.parse("name,age\nada,36\n"), [{"name": "ada", "age": "36"}])

    def test_all_records_kept(self) -> None:
        text = "k,v\n" + "".join(f"k{n},{n}\n" for n in range(5))
        self.assertEqual([row["v"] for row in csvtable.parse(text)], ["0", "1", "2", "3", "4"])

    def test_quoted_last_record(self) -> None:
        self.assertEqual(csvtable.parse('a,b\n1,2\n"x, y",3')[-1], {"a": "x, y", "b": "3"})

    def test_header_only(self) -> None:
        self.assertEqual(csvtable.parse("a,b\n"), [])

    def test_ragged_last_record(self) -> None:
        with candidate.raises("TableError"):
            csvtable.parse("a,b\n1,2\n3")
