"""The run viewer: one page that reads what a model did, served by ``serve`` and ``view``.

- ``sandbox_agent.viewer.page``: the page and its assets (``STATIC_DIR``, ``INDEX_FILE``),
  the seam through which ``sandbox-agent serve`` shows the same page; it imports nothing.
- ``sandbox_agent.viewer.verdict``: ``verify``'s verdict on a run folder, for both.
- ``sandbox_agent.viewer.app``: ``create_view_app(ViewSettings(root=...))``, the read-only
  app of ``sandbox-agent view`` over a folder of runs and evaluation results.

Nothing here imports ``sandbox_agent.service``: the service depends on the viewer, never
the other way round.
"""
