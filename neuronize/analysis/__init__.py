"""Analysis: one parse and one walk per file, the facts every rule may ask about it, and the rules' reports."""
