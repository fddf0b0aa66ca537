"""Developer tooling, outside the installed package: what ``make`` runs for the project's
own records, never what a user of ``sandbox-agent`` needs.

- ``devtools.assurance``: the guarantees and threat-model tables checked against the code
  and the tests, the review findings' regression evidence (``make regression-evidence``)
  and the adversarial report (``make adversarial-report``);
- ``devtools.eval_local``: ``make eval-local``, the real-model evaluation on the local
  model, and its report (``devtools.eval_local_report``).

Run from the checkout's root (``python -m devtools...``); tests import it through pytest's
``pythonpath``.
"""
