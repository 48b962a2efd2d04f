"""The ``dualplane`` command: a thin shell over the planes, the connectors and the local stack."""
