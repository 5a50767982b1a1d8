"""The offline plan, diff and import file: ``python -m offline.plan`` and what it runs on.

Two different things are both "engines" elsewhere; here they are named apart. :mod:`offline.program` is the program
runner: it runs the real ``__main__.py`` under the Python SDK's mocks and records every registration (a plan).
:mod:`offline.engine` is our port of the Pulumi deployment engine: it turns a program and a state into steps (used
by the diff and the tests' lifecycle harness). SIMULATED here, each rule with its upstream source in
docs/offline-rules.yaml (index: docs/offline.md): Azure's answers (:mod:`canned`), stack files as the CLI reads them
(:mod:`stack_file`), the policy analyzer host (:mod:`policy_check`), the providers' replacement rules
(:mod:`replacement`) and the preview diff built on them (:mod:`diff`); the CLI is :mod:`plan`, the import file
:mod:`adopt`, the rules' index page :mod:`rules_index`.
"""
