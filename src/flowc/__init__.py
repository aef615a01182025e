"""flowc: a declarative workflow DSL. The code is in flowc.compiler, flowc.runtime, flowc.hosts and
flowc.grammar (symlinks in src/flowc/ to the folders at the top of the repository)."""
