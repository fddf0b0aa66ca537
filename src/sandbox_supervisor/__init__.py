"""The trusted supervisor that runs as PID 1 inside the runner container.

Standard library only, baked read-only into the image. It attests the container's
isolation from inside, then forks the workload, relays its output within an exact
byte budget, enforces its own deadline, and ends with a nonce-tagged exit report.
Everything it writes to its stdout is a frame (see ``protocol``), so the workload,
whose bytes only ever travel inside data frames, cannot forge a control record.

The host imports ``sandbox_supervisor.protocol`` too: one definition of the wire format.
"""

SUPERVISOR_VERSION = "1"
