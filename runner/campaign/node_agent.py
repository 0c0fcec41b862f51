"""What a Slurm job of benchrun runs: ``python -m benchrun.runner.campaign.node_agent
--connect HOST:PORT`` is :func:`runner.execute.agent.main` with the node's metadata
collector (:func:`runner.machine.nodes.node_metadata`), so that the agent's hello carries
the node's record (docs/slurm.md "Node metadata"). It lives here, above both, because
``execute`` may not import ``machine`` (docs/architecture.md).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from benchrun.runner.execute.agent import main as agent_main
from benchrun.runner.machine.nodes import node_metadata


def main(argv: Sequence[str] | None = None) -> int:
    """The agent, its hello carrying this node's metadata; the exit status."""
    return agent_main(argv, metadata_fn=node_metadata)


if __name__ == "__main__":
    sys.exit(main())
