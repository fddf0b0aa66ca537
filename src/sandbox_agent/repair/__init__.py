"""The repair strategy's pure parts (issue 29): no Docker, no model, no workspace writes.

The controller-led ``repair`` strategy (``controller.repair_loop``) runs the visible
tests, localises the failure, asks the model for whole functions, splices them in and
checks each candidate in a verified sandbox. What it needs to *think* lives here, as
functions of text and syntax trees, each testable on its own:

    failures   test output -> failing tests, traceback frames, the failure's own text
    localise   frames + the repository's files -> the functions to edit, the tests to show
    imports    a test module's imports -> where each name is defined (re-exports followed)
    members    an imported class + what the failing test reads -> the methods to show
    replies    a model's reply -> its code blocks, split at headers, dedented, parsed
    splice     those blocks -> the module with its functions replaced
    edits      the smallest unique edit that makes that change (for ``apply_patch``)
"""
