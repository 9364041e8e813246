"""`evaluate`: the three studies together, with the headline table and the caveats."""
