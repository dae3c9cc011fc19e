"""What the rules share, one module per kind of fact or edit: host and target facts, the device
model, names, nodes, calls, literals, imports, messages. Not rules: the registry skips this package."""
