"""One module per op family; each defines OPS, a list of OpInfo."""
