"""Operator commands: ``python -m ops.verify``, ``python -m ops.deployer_role``, ``python -m ops.role_assignments``,
and the fleet rollout the workflows run (``python3 -m ops.fleet``, ``python3 -m ops.stack_matrix``)."""
