"""Evaluations and service runs on a Ray cluster (issue 19).

Each module does one job:

- ``node``: a node proves itself (preflight on the runtimes asked for) before it
  advertises sandbox slots, then becomes ``ray start``;
- ``local``: a head and two workers on loopback addresses of this machine
  (``make cluster-up`` / ``make cluster-down``), stopped by process group;
- ``connect``: finding and joining a cluster (``--ray auto`` / ``ray://``), and
  what each node said about itself;
- ``payload``: what crosses the network: folders as bounded tar bytes, run folders back;
- ``remote``: the Ray tasks that run one eval case or one service run on a node;
- ``evals``: ``eval --ray``: scheduling, lost nodes, retries, cancellation, head loss;
- ``service``: ``serve --ray``: the service's run function on the cluster;
- ``ledger``: one spend ledger for the cluster (an actor on the head owning the file).

Ray is imported lazily everywhere: nothing here costs a local run anything.
"""
