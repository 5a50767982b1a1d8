"""The offline engine shared by the commands in ``tools/`` (plan, verify, hotspots) and by the tests.

SIMULATED here, each behaviour with its upstream source in docs/offline.md: the Pulumi engine under the real
SDK's mocks (:mod:`program`), Azure's answers (:mod:`canned`), stack files as the CLI reads them
(:mod:`stack_file`), the policy analyzer host (:mod:`policy_check`), the providers' replacement rules
(:mod:`replacement`) and the preview diff built on them (:mod:`diff`).
"""
