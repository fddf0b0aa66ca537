"""The Docker backend, by job (as inspect_ai splits ``_sandbox/docker/``).

``docker_backend`` is the backend (``sandbox.base.SandboxBackend``); the rest serve it:

    spec, seccomp       the one container spec: create body and inspect check; the profile
    attach, stream      PID 1's stdin and output; Docker's multiplexing, the frames
    records             PID 1's attestation and exit report, checked on the host
    waiting, classify   the wait phase (deadline, cancellation); the run's status
    prestart            sandboxes created, verified, started and attested ahead
    cleanup, stuck      removal, every failure reported; unsticking runsc leftovers
    owner, reaper       who owns a container; removing those of dead controllers
    preflight           is this host ready (daemon, image, runtime, profile, a probe)
    diagnostics         bounded detail, phase timings

Nothing is re-exported here: import from the module that defines a name.
"""
