"""Object-storage plumbing: S3 clients and the claim-check store; imports no stage."""
