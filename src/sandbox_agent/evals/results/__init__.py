"""What an evaluation's runs leave and how it is checked: each run's record and score,
the signed journal (written as runs finish, read back by ``--resume`` and ``verify``),
the report, and ``verify RESULTS_DIR``'s audit."""
