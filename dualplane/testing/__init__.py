"""What only tests and benchmarks use: harnesses built on the product, never imported by it."""
