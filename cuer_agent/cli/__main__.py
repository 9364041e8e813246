"""`python -m cuer_agent.cli`: the same as the `cuer-agent` command."""

from cuer_agent.cli import main

if __name__ == "__main__":  # not when imported (tools that import every module)
    main()
