"""The aks-gpu-observability policy pack: `pulumi preview --policy-pack policy`.

The rules live in rules.py so tests and `python -m offline.plan --policy` import them without starting the
analyzer server (the PolicyPack constructor serves and blocks).
"""

from pulumi_policy import EnforcementLevel, PolicyPack
from rules import PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=POLICIES)
