"""How an evaluation's runs happen: each case's options and one run (agent, held-out
check, score), many runs in parallel on this machine, or on a Ray cluster (the
scheduling here, the transport in ``sandbox_agent.cluster``); and the one-shot baselines."""
