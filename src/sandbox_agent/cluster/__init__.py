"""A Ray cluster as a transport: it runs a run on a node and brings back its result.

Each module does one job:

- ``node``: a node proves itself (preflight on the runtimes asked for) before it
  advertises sandbox slots, then becomes ``ray start``;
- ``local``: a head and two workers on loopback addresses of this machine
  (``make cluster-up`` / ``make cluster-down``), stopped by process group;
- ``connect``: finding and joining a cluster (``--ray auto`` / ``ray://``);
- ``nodes``: what each node said about itself, and reaping what dead runs left;
- ``payload``: what crosses the network: folders as bounded tar bytes, run folders back;
- ``remote``: a run task's messages (started, events, finished) and the run in a thread
  of the task, cancellable.

What runs, and what is made of the results, is the caller's: ``eval --ray``'s scheduling
is ``sandbox_agent.evals.running`` (``cluster``, ``scheduler``, ``on_node``), ``serve
--ray``'s run function is ``sandbox_agent.service.cluster``, and the cluster's spend
ledger is ``sandbox_agent.ledger.actor``.

Ray is imported lazily everywhere: nothing here costs a local run anything.
"""
